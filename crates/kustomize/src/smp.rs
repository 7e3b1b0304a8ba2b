//! Strategic merge patches. The schema-aware merge lives in `ferroflux-schema` (merge keys and
//! strategies from the Kubernetes OpenAPI data, kustomize's flavor); this module adapts it to
//! the build: a whole-object `$patch: delete` removes the object.

use serde_json::Value;

/// Merges `patch` into `original`. `Ok(None)` means the patch deleted the object.
pub fn merge(original: &Value, patch: &Value) -> Result<Option<Value>, String> {
    match ferroflux_schema::strategic_merge(original, patch) {
        Ok(Value::Null) => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(e) => Err(e.to_string()),
    }
}
