//! Links the `ferroflux` binary as a position-dependent (non-PIE) executable on Linux with glibc.
//!
//! Why: a PIE image is relocated by the dynamic loader at every start (about 15,000 relative
//! relocations for this binary, and the copy-on-write pages they dirty). `ferroflux helm template`
//! and the other short commands pay that on each process; the non-PIE link takes ~10% of CPU
//! off such a process (BENCHMARKS.md, "Where a `helm template` process spends its time"). The
//! code itself stays position-independent: only the image is no longer placed at a random
//! address. Left alone elsewhere: other systems' linkers, musl, and static (`crt-static`) builds,
//! which link as static-pie and must not get a conflicting `-no-pie`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_crt = features.split(',').any(|f| f == "crt-static");
    if os == "linux" && env == "gnu" && !static_crt {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
