//! Kubernetes type knowledge shared by ferroflux, and the strategic merge patch built on it.
//!
//! Owns: which built-in kinds are namespaced, how each field of a built-in kind merges (list-map
//! keys, sets, atomic lists, granular/atomic maps, both as strategic merge and as server-side
//! apply see them), the strategic merge patch algorithm, and label selectors (`labels`, as
//! apimachinery parses them). The data is generated from the
//! Kubernetes API types carried by k8s-openapi (`data/k8s-merge.json`, see `gen/generator.rs`),
//! embedded at build time and parsed once.
//!
//! Must not touch: files, the network, Kubernetes clients, YAML. Callers parse and render; this
//! crate only sees `serde_json::Value`s.

pub mod labels;
mod schema;
mod smp;
mod smp_server;

pub use labels::LabelSelector;
pub use schema::{
    Field, KindInfo, ListType, MapType, Scope, builtin_kinds, is_namespaced, is_namespaced_kind,
    kind_info, list_type, lookup_path, scope,
};

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
/// `$patch: delete` returns `Value::Null` (the resource is removed); a top-level
/// `$patch: replace` leaves it unchanged, as kustomize does. Protecting the name, kind
/// and namespace from the patch (kustomize's `allowNameChange`/`allowKindChange`) is the
/// caller's job.
pub fn strategic_merge(
    original: &serde_json::Value,
    patch: &serde_json::Value,
) -> Result<serde_json::Value, MergeError> {
    strategic_merge_with(original, patch, Flavor::Kustomize)
}

/// How deep an object or patch may nest. Kubernetes objects stay far below it (a CRD's schema
/// is the deepest common case); the merge recurses per level, so the bound keeps untrusted input
/// from exhausting the stack.
pub const MAX_DEPTH: usize = 512;

fn check_depth(v: &serde_json::Value, which: &'static str) -> Result<(), MergeError> {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(MergeError::TooDeep {
                which,
                limit: MAX_DEPTH,
            });
        }
        match v {
            serde_json::Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            serde_json::Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// Applies a strategic merge patch with the semantics of `flavor`.
pub fn strategic_merge_with(
    original: &serde_json::Value,
    patch: &serde_json::Value,
    flavor: Flavor,
) -> Result<serde_json::Value, MergeError> {
    check_depth(original, "the object to patch")?;
    check_depth(patch, "the patch")?;
    match flavor {
        Flavor::Kustomize => smp::strategic_merge(original, patch),
        Flavor::ApiServer => smp_server::strategic_merge_api_server(original, patch),
    }
}

/// Why a strategic merge patch could not be applied. Messages name the field path.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The patch is a list, a string or another non-object.
    #[error("strategic merge patch must be an object, got {found}")]
    PatchNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// The object patched is not an object.
    #[error("object to patch must be an object, got {found}")]
    OriginalNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// The patch and the object disagree on a field's type (a map into a list, …).
    #[error("{path}: cannot merge a {found} into a {expected}")]
    KindMismatch {
        /// Where in the object, as a dotted path.
        path: String,
        /// The type in the object.
        expected: String,
        /// The type in the patch.
        found: String,
    },
    /// A `$patch` value other than merge, replace or delete.
    #[error("{path}: unknown $patch directive {value:?} (expected merge, replace or delete)")]
    UnknownDirective {
        /// Where in the object, as a dotted path.
        path: String,
        /// The value written.
        value: String,
    },
    /// An element of a list merged by key lacks the key.
    #[error("{path}: list element {element} has no merge key {key:?}")]
    MissingMergeKey {
        /// Where in the object, as a dotted path.
        path: String,
        /// The merge key of the list.
        key: String,
        /// The element, as JSON.
        element: String,
    },
    /// A patch directive (`$setElementOrder`, `$retainKeys`, …) written wrong.
    #[error("{path}: invalid {directive}: {reason}")]
    InvalidDirective {
        /// Where in the object, as a dotted path.
        path: String,
        /// The directive.
        directive: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A list the merge cannot handle: an irregular one too long for kustomize's
    /// element-by-element path, or one mixing element types the API server refuses.
    #[error("{path}: {reason}")]
    UnsupportedList {
        /// Where in the object, as a dotted path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A field the built-in type does not have (refused by the API server's flavour).
    #[error("{path}: {owner} has no field {field:?}")]
    UnknownField {
        /// Where in the object, as a dotted path.
        path: String,
        /// The type, e.g. `io.k8s.api.core.v1.PodSpec`.
        owner: String,
        /// The unknown field.
        field: String,
    },
    /// Nesting past the limit that keeps the recursion off the stack's end.
    #[error("{which} is nested deeper than {limit} levels")]
    TooDeep {
        /// The patch or the object to patch.
        which: &'static str,
        /// The limit.
        limit: usize,
    },
    /// The API server's flavour met a kind the embedded schema does not know (a custom
    /// resource): it has no patch strategy to follow.
    #[error(
        "strategic merge patch is not supported for {kind:?} ({api_version:?}): the schema does not know this kind; use a JSON merge patch"
    )]
    UnsupportedKind {
        /// The object's `apiVersion`.
        api_version: String,
        /// The object's `kind`.
        kind: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn nested(depth: usize) -> Value {
        // Built by hand: `json!` would serialize the inner value recursively.
        let mut v = Value::String("leaf".into());
        for _ in 0..depth {
            let mut m = serde_json::Map::new();
            m.insert("a".into(), v);
            v = Value::Object(m);
        }
        v
    }

    #[test]
    fn deep_input_is_refused_without_overflowing() {
        let original = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let mut patch = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        patch["data"] = nested(10_000);
        for flavor in [Flavor::Kustomize, Flavor::ApiServer] {
            let err = strategic_merge_with(&original, &patch, flavor).unwrap_err();
            assert_eq!(
                err.to_string(),
                "the patch is nested deeper than 512 levels"
            );
        }
        // serde_json drops deep values recursively; leak the test input instead of overflowing.
        std::mem::forget(patch);
    }

    #[test]
    fn depth_at_the_limit_merges() {
        let original = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let mut patch = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        patch["data"] = nested(MAX_DEPTH - 2);
        for flavor in [Flavor::Kustomize, Flavor::ApiServer] {
            let merged = strategic_merge_with(&original, &patch, flavor).unwrap();
            assert_eq!(merged["metadata"]["name"], "c");
            std::mem::forget(merged);
        }
        std::mem::forget(patch);
    }

    fn pod_with_env(env: Vec<Value>) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "app", "image": "x", "env": env}]}})
    }

    #[test]
    fn large_lists_merge_in_linear_time_or_are_refused_when_irregular() {
        let patch = pod_with_env(vec![json!({"name": "E1", "value": "changed"})]);
        let regular: Vec<Value> = (0..20_000)
            .map(|i| json!({"name": format!("E{i}"), "value": "v"}))
            .collect();
        let merged = strategic_merge(&pod_with_env(regular), &patch).unwrap();
        let env = merged["spec"]["containers"][0]["env"].as_array().unwrap();
        assert_eq!(env.len(), 20_000);
        assert_eq!(env[0], json!({"name": "E1", "value": "changed"}));

        // Duplicate names force kustomize's element-by-element path, which is quadratic.
        let irregular: Vec<Value> = (0..6000).map(|_| json!({"name": "A"})).collect();
        let err = strategic_merge(&pod_with_env(irregular), &patch).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.containers[name=app].env: 6001 elements with duplicate, missing or empty merge keys: more than the 5000 such a list may hold"
        );
    }

    #[test]
    fn api_server_scalar_lists_are_bounded_when_deduplicating() {
        let cm = |f: Vec<String>| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": f}});
        let many: Vec<String> = (0..6000).map(|i| format!("f{i}")).collect();
        let others: Vec<String> = (6000..12000).map(|i| format!("f{i}")).collect();
        let merged =
            strategic_merge_with(&cm(many.clone()), &cm(others), Flavor::ApiServer).unwrap();
        assert_eq!(
            merged["metadata"]["finalizers"].as_array().unwrap().len(),
            12000
        );
        let err =
            strategic_merge_with(&cm(many.clone()), &cm(many), Flavor::ApiServer).unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata.finalizers: 12000 values with duplicates: more than the 10000 a merged list of scalars may hold"
        );
    }

    #[test]
    fn non_object_inputs_are_refused() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let err = strategic_merge(&obj, &json!([1])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "strategic merge patch must be an object, got a list"
        );
        let err = strategic_merge(&json!("x"), &obj).unwrap_err();
        assert_eq!(
            err.to_string(),
            "object to patch must be an object, got a string"
        );
    }
}
