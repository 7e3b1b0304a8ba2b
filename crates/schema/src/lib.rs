//! Kubernetes type knowledge shared by ferroflux, and the strategic merge patch built on it.
//!
//! Owns: which built-in kinds are namespaced, how each field of a built-in kind merges (list-map
//! keys, sets, atomic lists, granular/atomic maps, both as strategic merge and as server-side
//! apply see them), and the strategic merge patch algorithm. The data is generated from the
//! Kubernetes API types carried by k8s-openapi (`data/k8s-merge.json`, see `gen/generator.rs`),
//! embedded at build time and parsed once.
//!
//! Must not touch: files, the network, Kubernetes clients, YAML. Callers parse and render; this
//! crate only sees `serde_json::Value`s.

mod schema;
mod smp;

pub use schema::{Field, ListType, MapType, Scope, is_namespaced, list_type, lookup_path, scope};
pub use smp::strategic_merge;

/// Why a strategic merge patch could not be applied. Messages name the field path.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("strategic merge patch must be an object, got {found}")]
    PatchNotObject { found: &'static str },
    #[error("object to patch must be an object, got {found}")]
    OriginalNotObject { found: &'static str },
    #[error("{path}: cannot merge a {found} into a {expected}")]
    KindMismatch {
        path: String,
        expected: String,
        found: String,
    },
    #[error("{path}: unknown $patch directive {value:?} (expected merge, replace or delete)")]
    UnknownDirective { path: String, value: String },
    #[error("{path}: list element {element} has no merge key {key:?}")]
    MissingMergeKey {
        path: String,
        key: String,
        element: String,
    },
}
