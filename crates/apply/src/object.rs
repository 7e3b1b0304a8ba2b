//! Reading identity and metadata out of dynamic objects (`serde_json::Value`).

use ferroflux_api::ObjectId;
use serde_json::Value;

/// An object without the identity every Kubernetes object needs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("object {index} has no {field}")]
pub struct MissingField {
    /// The object's position in the list given.
    pub index: usize,
    /// `apiVersion`, `kind` or `metadata.name`.
    pub field: &'static str,
}

/// `apiVersion` split into group and version (`apps/v1` → (`apps`, `v1`), `v1` → (``, `v1`)).
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

/// The string at `path` (object keys) in `obj`; `None` when absent or not a string.
pub fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = obj;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_str()
}

/// The integer at `path` (object keys) in `obj`; `None` when absent or not an integer.
pub fn int_at(obj: &Value, path: &[&str]) -> Option<i64> {
    let mut cur = obj;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_i64()
}

/// The inventory id of an object; `index` only names it in the error.
pub fn object_id(obj: &Value, index: usize) -> Result<ObjectId, MissingField> {
    let missing = |field| MissingField { index, field };
    let api_version = str_at(obj, &["apiVersion"]).ok_or(missing("apiVersion"))?;
    let kind = str_at(obj, &["kind"]).ok_or(missing("kind"))?;
    let name = str_at(obj, &["metadata", "name"]).ok_or(missing("metadata.name"))?;
    let namespace = str_at(obj, &["metadata", "namespace"]).unwrap_or("");
    Ok(ObjectId::new(
        namespace,
        name,
        group_version(api_version).0,
        kind,
    ))
}

/// The value of a label or an annotation.
pub fn meta_value<'a>(obj: &'a Value, map: &str, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(map)?.get(key)?.as_str()
}
