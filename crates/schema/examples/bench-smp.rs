//! Measures strategic merge throughput on the recorded oracle cases, and the peer doing the same
//! merges (`kubectl kustomize` / `kubectl patch --local`, one process per case) in the same run.
//!
//! Run: `cargo run --release -p ferroflux-schema --example bench-smp`
//! (numbers go to BENCHMARKS.md with this command; nothing here asserts a time).

use ferroflux_schema::{Flavor, strategic_merge_with};
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

/// Mean wall time of the peer on each case directory (process start included: that is what a
/// user of kubectl pays per merge).
fn peer(dirs: &[std::path::PathBuf], flavor: Flavor) -> Option<f64> {
    let tmp = std::env::temp_dir().join(format!("ferroflux-bench-smp-{}", std::process::id()));
    let start = Instant::now();
    for d in dirs {
        let status = match flavor {
            Flavor::Kustomize => {
                std::fs::create_dir_all(&tmp).ok()?;
                std::fs::copy(d.join("original.yaml"), tmp.join("original.yaml")).ok()?;
                std::fs::copy(d.join("patch.yaml"), tmp.join("patch.yaml")).ok()?;
                std::fs::write(
                    tmp.join("kustomization.yaml"),
                    "resources:\n- original.yaml\npatches:\n- path: patch.yaml\n",
                )
                .ok()?;
                std::process::Command::new("kubectl")
                    .arg("kustomize")
                    .arg(&tmp)
                    .output()
                    .ok()?
            }
            Flavor::ApiServer => {
                let text = std::fs::read_to_string(d.join("patch.yaml")).ok()?;
                let patch: Value = serde_saphyr::from_str(&text).ok()?;
                std::process::Command::new("kubectl")
                    .args([
                        "patch",
                        "--local",
                        "--type",
                        "strategic",
                        "-o",
                        "json",
                        "-f",
                    ])
                    .arg(d.join("original.yaml"))
                    .arg("-p")
                    .arg(patch.to_string())
                    .output()
                    .ok()?
            }
        };
        if !status.status.success() {
            return None;
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Some(start.elapsed().as_secs_f64() / dirs.len() as f64)
}

fn case_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.retain(|d: &std::path::PathBuf| d.is_dir() && !d.join("error.txt").exists());
    dirs.sort();
    dirs
}

fn load(dir: &Path) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut dirs: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    for d in dirs {
        if d.join("error.txt").exists() {
            continue;
        }
        let read = |f: &str| -> Option<Value> {
            let text = std::fs::read_to_string(d.join(f)).ok()?;
            serde_saphyr::from_str(&text).ok()
        };
        if let (Some(o), Some(p)) = (read("original.yaml"), read("patch.yaml")) {
            out.push((o, p));
        }
    }
    out
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for (name, dir, flavor) in [
        ("kustomize", root.join("cases"), Flavor::Kustomize),
        ("api-server", root.join("server-cases"), Flavor::ApiServer),
    ] {
        let cases = load(&dir);
        // Warm up (parses the embedded schema once).
        for (o, p) in &cases {
            let _ = strategic_merge_with(o, p, flavor);
        }
        let rounds = 2000;
        let start = Instant::now();
        for _ in 0..rounds {
            for (o, p) in &cases {
                std::hint::black_box(strategic_merge_with(o, p, flavor).ok());
            }
        }
        let n = rounds * cases.len();
        let per = start.elapsed().as_secs_f64() / n as f64;
        println!(
            "{name}: {} cases x {rounds} rounds = {n} merges, {:.1} µs per merge, {:.0} merges/s",
            cases.len(),
            per * 1e6,
            1.0 / per
        );
        match peer(&case_dirs(&dir), flavor) {
            Some(p) => println!(
                "  peer (kubectl, one process per case): {:.1} ms per merge, ratio {:.0}x",
                p * 1e3,
                p / per
            ),
            None => println!("  peer: kubectl not available"),
        }
    }
}
