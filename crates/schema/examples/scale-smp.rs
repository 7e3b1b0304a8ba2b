//! Times merges of large objects (many map keys, long merged lists), to catch quadratic paths.
//!
//! Run: `cargo run --release -p ferroflux-schema --example scale-smp`

use ferroflux_schema::{Flavor, strategic_merge_with};
use serde_json::{Value, json};
use std::time::Instant;

fn main() {
    // Parse the embedded schema before timing anything.
    let _ = ferroflux_schema::is_namespaced("v1", "Pod");
    for n in [100usize, 1000, 4000] {
        let mut data = serde_json::Map::new();
        for i in 0..n {
            data.insert(format!("key-{i}"), Value::String(format!("v{i}")));
        }
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
        let cm_patch = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"key-1": "x", "new": "y"}});
        let env: Vec<Value> = (0..n)
            .map(|i| json!({"name": format!("E{i}"), "value": "v"}))
            .collect();
        let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "x", "env": env}]}}}});
        let dep_patch = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "E1", "value": "changed"}, {"name": "NEW", "value": "n"}]}]}}}});
        for flavor in [Flavor::Kustomize, Flavor::ApiServer] {
            for (what, o, p) in [
                ("configmap keys", &cm, &cm_patch),
                ("env list", &dep, &dep_patch),
            ] {
                let start = Instant::now();
                let r = strategic_merge_with(o, p, flavor);
                println!(
                    "{flavor:?} {what} n={n}: {:.2} ms ({})",
                    start.elapsed().as_secs_f64() * 1e3,
                    if r.is_ok() { "ok" } else { "error" }
                );
            }
        }
    }
}
