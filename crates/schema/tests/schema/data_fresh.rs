//! The committed merge data must equal a fresh generation from the k8s-openapi source, so it can
//! never drift from the Kubernetes types the workspace compiles against.

#[path = "../../gen/generator.rs"]
mod generator;

use std::path::Path;

#[test]
fn committed_data_matches_k8s_openapi_source() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let k8s = generator::locate_k8s_openapi(manifest_dir).unwrap();
    let fresh = generator::generate(&k8s).unwrap();
    let committed = std::fs::read_to_string(manifest_dir.join("data/k8s-merge.json")).unwrap();
    assert!(
        fresh == committed,
        "data/k8s-merge.json is stale: run `cargo run -p ferroflux-schema --example generate-merge-data`"
    );
}
