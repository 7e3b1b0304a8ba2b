//! The field selectors every kind supports; label selectors are `ferroflux-schema`'s, shared with
//! kustomize.

pub use ferroflux_schema::LabelSelector;
use serde_json::Value;

use crate::resources::Resource;

/// A parsed `fieldSelector`: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`.
#[derive(Debug, Clone, Default)]
/// `(JSON pointer into the stored object, equal?, value)` terms, all of which must hold.
pub struct FieldSelector(Vec<(&'static str, bool, String)>);

/// The stored-object path of a field selector label `res` supports (every kind supports
/// `metadata.name` and `metadata.namespace`; some kinds add their own, as in Kubernetes).
fn field_pointer(res: &Resource, field: &str) -> Option<&'static str> {
    match field {
        "metadata.name" => return Some("/metadata/name"),
        "metadata.namespace" => return Some("/metadata/namespace"),
        _ => {}
    }
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "events") | ("events.k8s.io", "events") => crate::events::field_path(field),
        ("", "pods") => match field {
            "spec.nodeName" => Some("/spec/nodeName"),
            "spec.restartPolicy" => Some("/spec/restartPolicy"),
            "spec.schedulerName" => Some("/spec/schedulerName"),
            "spec.serviceAccountName" => Some("/spec/serviceAccountName"),
            "status.phase" => Some("/status/phase"),
            "status.podIP" => Some("/status/podIP"),
            "status.nominatedNodeName" => Some("/status/nominatedNodeName"),
            _ => None,
        },
        ("", "secrets") if field == "type" => Some("/type"),
        ("", "namespaces") if field == "status.phase" => Some("/status/phase"),
        _ => None,
    }
}

impl FieldSelector {
    pub fn parse(s: &str, res: &Resource) -> Result<FieldSelector, String> {
        let mut out = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(out));
        }
        for part in s.split(',') {
            let p = part.trim();
            let (field, eq, value) = if let Some((f, v)) = p.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = p.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = p.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{p}'"));
            };
            let field = field.trim();
            let Some(pointer) = field_pointer(res, field) else {
                return Err(format!("field label not supported: {field}"));
            };
            out.push((pointer, eq, value.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(pointer, eq, value)| {
            let actual = match obj.pointer(pointer) {
                Some(Value::String(s)) => std::borrow::Cow::Borrowed(s.as_str()),
                Some(Value::Null) | None => std::borrow::Cow::Borrowed(""),
                Some(other) => std::borrow::Cow::Owned(other.to_string()),
            };
            (actual == value.as_str()) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let reg = crate::resources::Registry::new();
        let cm = reg.lookup("", "v1", "configmaps").unwrap();
        let ev = reg.lookup("", "v1", "events").unwrap();
        let o = json!({"metadata": {"name": "a", "namespace": "ns"},
                       "involvedObject": {"kind": "Pod", "name": "p"}});
        assert!(
            FieldSelector::parse("metadata.name=a", &cm)
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns", &cm)
                .unwrap()
                .matches(&o)
        );
        assert!(FieldSelector::parse("spec.x=1", &cm).is_err());
        assert!(FieldSelector::parse("involvedObject.kind=Pod", &cm).is_err());
        assert!(
            FieldSelector::parse("involvedObject.kind=Pod,involvedObject.name=p", &ev)
                .unwrap()
                .matches(&o)
        );
    }
}
