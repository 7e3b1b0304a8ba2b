//! Regenerates `data/k8s-merge.json` from the k8s-openapi source Cargo.lock pins.
//!
//! Run: `cargo run -p ferroflux-schema --example generate-merge-data`

#[path = "../gen/generator.rs"]
mod generator;

use std::path::Path;

fn main() -> Result<(), String> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let k8s = generator::locate_k8s_openapi(manifest_dir)?;
    let text = generator::generate(&k8s)?;
    let out = manifest_dir.join("data").join("k8s-merge.json");
    std::fs::write(&out, text).map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!("wrote {} from {}", out.display(), k8s.display());
    Ok(())
}
