//! A release's manifest text and the objects in it: the `---\n# Source:` framing Helm stores,
//! reading documents back as the Kubernetes client reads them (sigs.k8s.io/yaml, YAML 1.1), the
//! ownership metadata Helm puts on every object it applies, and object identity for Helm's
//! three-way upgrade (group, kind, namespace, name: a new apiVersion of the same kind is the
//! same object).

use serde_json::{Map, Value};

/// `app.kubernetes.io/managed-by`.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// `meta.helm.sh/release-name`.
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
/// `meta.helm.sh/release-namespace`.
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// `helm.sh/resource-policy` (`keep` leaves the object behind on upgrade and uninstall).
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";

/// The manifest Helm stores for a release: each document framed `---\n# Source: <path>\n` in
/// the order given (install order).
pub fn release_manifest(manifests: &[ferroflux_helm::Manifest]) -> String {
    let mut out = String::new();
    for m in manifests {
        out.push_str("---\n# Source: ");
        out.push_str(&m.path);
        out.push('\n');
        out.push_str(&m.content);
        out.push('\n');
    }
    out
}

/// The objects of a manifest text, in order; documents that hold no object (comments only)
/// are skipped. An unreadable document fails with its position in the stream.
pub fn objects_of_manifest(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (i, doc) in ferroflux_helm::split_manifests(text).iter().enumerate() {
        let values = ferroflux_kustomize::yaml::parse::parse_documents_yaml11(doc)
            .map_err(|e| format!("document {} of the manifest: {e}", i + 1))?;
        for v in values {
            match v {
                Value::Null => {}
                Value::Object(_) => out.push(v),
                _ => {
                    return Err(format!(
                        "document {} of the manifest is not an object",
                        i + 1
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = obj;
    for p in path {
        match cur.get(p) {
            Some(v) => cur = v,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// `group/Kind/namespace/name` (the API version's version left out).
pub fn object_key(obj: &Value) -> String {
    let api_version = str_at(obj, &["apiVersion"]);
    let group = match api_version.rsplit_once('/') {
        Some((g, _)) => g,
        None => "",
    };
    format!(
        "{group}/{}/{}/{}",
        str_at(obj, &["kind"]),
        str_at(obj, &["metadata", "namespace"]),
        str_at(obj, &["metadata", "name"])
    )
}

/// `Kind "name" in namespace "ns"` (Helm's `resourceString`).
pub fn resource_string(obj: &Value) -> String {
    format!(
        "{} {:?} in namespace {:?}",
        str_at(obj, &["kind"]),
        str_at(obj, &["metadata", "name"]),
        str_at(obj, &["metadata", "namespace"])
    )
}

fn meta_map<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let meta = obj
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let m = meta.as_object_mut()?;
    let entry = m.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// Helm's `setMetadataVisitor`: the managed-by label and the release annotations.
pub fn set_ownership(obj: &mut Value, release: &str, namespace: &str) {
    if let Some(l) = meta_map(obj, "labels") {
        l.insert(MANAGED_BY_LABEL.into(), Value::String("Helm".into()));
    }
    if let Some(a) = meta_map(obj, "annotations") {
        a.insert(
            RELEASE_NAME_ANNOTATION.into(),
            Value::String(release.into()),
        );
        a.insert(
            RELEASE_NAMESPACE_ANNOTATION.into(),
            Value::String(namespace.into()),
        );
    }
}

fn require_value(meta: Option<&Value>, key: &str, want: &str) -> Option<String> {
    match meta.and_then(|m| m.get(key)) {
        None => Some(format!("missing key {key:?}: must be set to {want:?}")),
        Some(v) if v.as_str() == Some(want) => None,
        Some(v) => Some(format!(
            "key {key:?} must equal {want:?}: current value is {:?}",
            v.as_str().unwrap_or("")
        )),
    }
}

/// Helm's `checkOwnership` of a live object: `None` when this release owns it.
pub fn ownership_error(live: &Value, release: &str, namespace: &str) -> Option<String> {
    let labels = live.pointer("/metadata/labels");
    let annotations = live.pointer("/metadata/annotations");
    let mut errs = Vec::new();
    if let Some(e) = require_value(labels, MANAGED_BY_LABEL, "Helm") {
        errs.push(format!("label validation error: {e}"));
    }
    if let Some(e) = require_value(annotations, RELEASE_NAME_ANNOTATION, release) {
        errs.push(format!("annotation validation error: {e}"));
    }
    if let Some(e) = require_value(annotations, RELEASE_NAMESPACE_ANNOTATION, namespace) {
        errs.push(format!("annotation validation error: {e}"));
    }
    if errs.is_empty() {
        None
    } else {
        Some(format!("invalid ownership metadata; {}", errs.join("; ")))
    }
}

/// Whether a live object asks to be kept (`helm.sh/resource-policy: keep`).
pub fn keeps(live: &Value) -> bool {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("keep"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_and_keys() {
        let text = "---\n# Source: c/templates/a.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: x\n---\n# Source: c/templates/empty.yaml\n# nothing\n";
        let objs = objects_of_manifest(text).unwrap();
        assert_eq!(objs.len(), 1);
        assert_eq!(object_key(&objs[0]), "apps/Deployment/x/d");
        assert_eq!(
            object_key(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}})),
            "/Service//s"
        );
    }

    #[test]
    fn ownership_messages_are_helms() {
        let live = json!({"metadata": {"labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "other"}}});
        assert_eq!(
            ownership_error(&live, "web", "apps").unwrap(),
            "invalid ownership metadata; annotation validation error: key \"meta.helm.sh/release-name\" must equal \"web\": current value is \"other\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"apps\""
        );
        let mut obj = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
        set_ownership(&mut obj, "web", "apps");
        assert!(ownership_error(&obj, "web", "apps").is_none());
    }
}
