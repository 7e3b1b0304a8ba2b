//! Measures strategic merge throughput on the recorded oracle cases.
//!
//! Run: `cargo run --release -p ferroflux-schema --example bench-smp`
//! (numbers go to BENCHMARKS.md with this command; nothing here asserts a time).

use ferroflux_schema::{Flavor, strategic_merge_with};
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

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
    }
}
