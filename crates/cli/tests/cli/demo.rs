//! README command 1 as a newcomer runs it: `ferroflux demo` bootstraps two local clusters from
//! the example fleet repository, shows them Ready, promotes a change from staging to production,
//! cleans up and exits 0.

use std::process::Command;

#[test]
fn the_demo_bootstraps_two_clusters_and_promotes_by_commit() {
    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .arg("demo")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "demo failed:\n{out}\n{err}");
    for cluster in ["staging", "production"] {
        for ks in ["flux-system", "infrastructure", "apps"] {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&format!("✔ {cluster:<11} {ks:<15} ready"))),
                "{cluster}/{ks} never reported ready:\n{out}"
            );
        }
    }
    // After the staging commit staging runs the new tag and production the old one; after the
    // production commit both run the new tag.
    let images: Vec<&str> = out.lines().filter(|l| l.contains("podinfo runs")).collect();
    assert_eq!(
        images,
        [
            "staging     podinfo runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo runs ghcr.io/stefanprodan/podinfo:6.7.1",
            "staging     podinfo runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo runs ghcr.io/stefanprodan/podinfo:6.8.0",
        ],
        "{out}"
    );
    assert!(out.contains("$ ferroflux fleet status"), "{out}");
    assert!(out.contains("demo finished in"), "{out}");
}
