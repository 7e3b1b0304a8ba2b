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
mod smp_server;

pub use schema::{Field, ListType, MapType, Scope, is_namespaced, list_type, lookup_path, scope};

/// Whose strategic merge patch semantics to reproduce. They differ in list order, in the merge
/// keys of a few lists and in the directives they understand (see the crate README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `kubectl kustomize` (kustomize v5.5.0): `patches` / `patchesStrategicMerge`. Kinds the
    /// schema does not know merge maps recursively and replace lists.
    Kustomize,
    /// The Kubernetes API server (`application/strategic-merge-patch+json`, and `kubectl patch`):
    /// understands `$setElementOrder`, `$deleteFromPrimitiveList` and `$retainKeys`; refuses
    /// kinds the schema does not know, as the API server refuses custom resources.
    ApiServer,
}

/// Applies a Kubernetes strategic merge patch the way `kubectl kustomize` does.
///
/// Merge keys and strategies come from the original's `apiVersion`/`kind` and the field path.
/// The result has every map's keys sorted, as kustomize emits them. A top-level
/// `$patch: delete` returns `Value::Null` (the resource is removed). Protecting the name, kind
/// and namespace from the patch (kustomize's `allowNameChange`/`allowKindChange`) is the
/// caller's job.
pub fn strategic_merge(
    original: &serde_json::Value,
    patch: &serde_json::Value,
) -> Result<serde_json::Value, MergeError> {
    smp::strategic_merge(original, patch)
}

/// Applies a strategic merge patch with the semantics of `flavor`.
pub fn strategic_merge_with(
    original: &serde_json::Value,
    patch: &serde_json::Value,
    flavor: Flavor,
) -> Result<serde_json::Value, MergeError> {
    match flavor {
        Flavor::Kustomize => smp::strategic_merge(original, patch),
        Flavor::ApiServer => smp_server::strategic_merge_api_server(original, patch),
    }
}

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
    #[error("{path}: invalid {directive}: {reason}")]
    InvalidDirective {
        path: String,
        directive: String,
        reason: String,
    },
    #[error("{path}: {reason}")]
    UnsupportedList { path: String, reason: String },
    #[error(
        "strategic merge patch is not supported for {kind:?} ({api_version:?}): the schema does not know this kind; use a JSON merge patch"
    )]
    UnsupportedKind { api_version: String, kind: String },
}
