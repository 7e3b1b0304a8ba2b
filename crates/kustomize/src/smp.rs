//! Strategic merge patches. The schema-aware merge lives in `ferroflux-schema`; this module
//! adapts it to the build (a whole-object `$patch: delete` removes the object).

use serde_json::Value;

/// Merges `patch` into `original`. `Ok(None)` means the patch deleted the object.
pub fn merge(original: &Value, patch: &Value) -> Result<Option<Value>, String> {
    let _ = (original, patch);
    Err("strategic merge patches are not supported yet (waiting for the schema crate)".into())
}
