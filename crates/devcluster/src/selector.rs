//! Label selectors (equality- and set-based) and the field selectors every kind supports.

use serde_json::Value;

use crate::resources::Resource;

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Req>);

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(format!(
                    "unable to parse requirement: empty requirement in {s:?}"
                ));
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                Req::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Req::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once("==") {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once('=') {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, set)) = set_op(p, " notin ") {
                Req::NotIn(k, set?)
            } else if let Some((k, set)) = set_op(p, " in ") {
                Req::In(k, set?)
            } else {
                Req::Exists(p.to_string())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                Req::Eq(k, v) | Req::Ne(k, v) => (k, vec![v.as_str()]),
                Req::In(k, vs) | Req::NotIn(k, vs) => (k, vs.iter().map(String::as_str).collect()),
                Req::Exists(k) | Req::NotExists(k) => (k, vec![]),
            };
            if !valid_key(key) {
                return Err(format!(
                    "unable to parse requirement: invalid label key {key:?}"
                ));
            }
            if let Some(v) = values.iter().find(|v| !valid_value(v)) {
                return Err(format!(
                    "unable to parse requirement: invalid label value: {v:?}"
                ));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::Ne(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

fn set_op(p: &str, op: &str) -> Option<(String, Result<Vec<String>, String>)> {
    let (k, rest) = p.split_once(op)?;
    let rest = rest.trim();
    let set = match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => Ok(inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()),
        None => Err(format!(
            "unable to parse requirement: found '{rest}', expected: '('"
        )),
    };
    Some((k.trim().to_string(), set))
}

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
    fn label_selectors() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (web,api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("env notin (prod)", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
    }

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
