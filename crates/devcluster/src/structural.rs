//! What kube-apiserver does to a custom resource with its CRD's structural schema on the way in:
//! pruning the fields the schema does not declare (unless `x-kubernetes-preserve-unknown-fields`
//! keeps them), dropping `null`s a non-nullable field without a default may not hold, and filling
//! `default:` values (also inside arrays and maps, never inside an object that is absent).
//!
//! The order and rules are apiextensions-apiserver's: prune, then the nulls, then the defaults;
//! `apiVersion`, `kind` and `metadata` are never pruned at the root or in an
//! `x-kubernetes-embedded-resource`. The schema is read as the CRD stores it (JSON), without a
//! compiled form: only CRD writes pay for it. Value validation (types, `required`, patterns,
//! CEL) is not done here.

use serde_json::{Map, Value};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn flag(s: &Value, name: &str) -> bool {
    s.get(name).and_then(Value::as_bool) == Some(true)
}

fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

fn property<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    properties(s).and_then(|p| p.get(name))
}

/// `additionalProperties`: `None` when absent, `Some(None)` when a boolean (no schema: what it
/// holds is treated as undeclared), `Some(Some(schema))` otherwise.
fn additional(s: &Value) -> Option<Option<&Value>> {
    match s.get("additionalProperties") {
        Some(v @ Value::Object(_)) => Some(Some(v)),
        Some(Value::Bool(_)) => Some(None),
        _ => None,
    }
}

fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

/// A `default` of JSON `null` is no default, as for the API server.
fn default_of(s: &Value) -> Option<&Value> {
    s.get("default").filter(|d| !d.is_null())
}

fn nullable(s: &Value) -> bool {
    flag(s, "nullable")
}

/// Prunes, drops the forbidden nulls and defaults `obj` (a whole custom resource) with the
/// `openAPIV3Schema` of the version it is written in.
pub fn admit(obj: &mut Value, schema: &Value, prune_unknown: bool) {
    if prune_unknown {
        prune(obj, Some(schema), true);
    }
    prune_nulls(obj, Some(schema));
    default(obj, schema);
}

/// The defaulting the API server does when it reads an object back from storage.
pub fn default_stored(obj: &mut Value, schema: &Value) {
    prune_nulls(obj, Some(schema));
    default(obj, schema);
}

/// Removes what the schema does not declare. `embedded`: the value is a resource of its own (the
/// root, or `x-kubernetes-embedded-resource`), whose type and object meta always stay.
fn prune(x: &mut Value, s: Option<&Value>, embedded: bool) {
    if let Some(s) = s
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        keep_unknown(x, s, embedded);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                m.clear();
                return;
            };
            m.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                if let Some(p) = property(s, k) {
                    prune(v, Some(p), flag(p, "x-kubernetes-embedded-resource"));
                    true
                } else if let Some(ap) = additional(s) {
                    let embedded = ap.is_some_and(|a| flag(a, "x-kubernetes-embedded-resource"));
                    prune(v, ap, embedded);
                    true
                } else {
                    false
                }
            });
        }
        Value::Array(a) => {
            let item = s.and_then(items);
            let embedded = item.is_some_and(|i| flag(i, "x-kubernetes-embedded-resource"));
            for v in a {
                prune(v, item, embedded);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: undeclared fields stay, declared ones are
/// pruned by their own schema.
fn keep_unknown(x: &mut Value, s: &Value, embedded: bool) {
    match x {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = property(s, k) {
                    prune(v, Some(p), flag(p, "x-kubernetes-embedded-resource"));
                } else if let Some(ap) = additional(s) {
                    let embedded = ap.is_some_and(|a| flag(a, "x-kubernetes-embedded-resource"));
                    prune(v, ap, embedded);
                }
            }
        }
        Value::Array(a) => {
            if let Some(item) = items(s) {
                let embedded = flag(item, "x-kubernetes-embedded-resource");
                for v in a {
                    keep_unknown(v, item, embedded);
                }
            }
        }
        _ => {}
    }
}

fn field_schema<'a>(s: Option<&'a Value>, k: &str) -> Option<&'a Value> {
    let s = s?;
    property(s, k).or_else(|| additional(s).flatten())
}

/// Removes `null`s of fields that are neither nullable nor defaulted (a defaulted one gets its
/// default next).
fn prune_nulls(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let fs = field_schema(s, k);
            if v.is_null() && fs.is_some_and(|f| !nullable(f) && default_of(f).is_none()) {
                return false;
            }
            prune_nulls(v, fs);
            true
        }),
        Value::Array(a) => {
            let item = s.and_then(items);
            for v in a {
                prune_nulls(v, item);
            }
        }
        _ => {}
    }
}

/// Fills absent (or non-nullable `null`) fields with their schema's default, then recurses into
/// what is there: an object that is absent gets no defaults inside it.
fn default(x: &mut Value, s: &Value) {
    match x {
        Value::Object(m) => {
            if let Some(props) = properties(s) {
                for (k, p) in props {
                    let Some(d) = default_of(p) else { continue };
                    let missing = match m.get(k) {
                        None => true,
                        Some(v) => v.is_null() && !nullable(p),
                    };
                    if missing {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            let ap = additional(s).flatten();
            for (k, v) in m.iter_mut() {
                if let Some(p) = property(s, k) {
                    default(v, p);
                } else if let Some(ap) = ap {
                    if v.is_null() && !nullable(ap) {
                        *v = default_of(ap).cloned().unwrap_or(Value::Null);
                    }
                    default(v, ap);
                }
            }
        }
        Value::Array(a) => {
            let Some(item) = items(s) else { return };
            for v in a {
                if v.is_null() && !nullable(item) {
                    *v = default_of(item).cloned().unwrap_or(Value::Null);
                }
                default(v, item);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": { "type": "integer", "default": 1 },
                        "mode": { "type": "string", "default": "HEAD" },
                        "note": { "type": "string", "nullable": true, "default": "n" },
                        "plain": { "type": "string" },
                        "verify": {
                            "type": "object",
                            "properties": { "mode": { "type": "string", "default": "HEAD" } }
                        },
                        "refs": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": { "type": "string" },
                                    "optional": { "type": "boolean", "default": false }
                                }
                            }
                        },
                        "labels": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "properties": { "weight": { "type": "integer", "default": 5 } }
                            }
                        },
                        "values": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "template": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "properties": { "spec": { "type": "object" } }
                        }
                    }
                },
                "status": { "type": "object", "default": { "observedGeneration": -1 } }
            }
        })
    }

    #[test]
    fn prunes_what_the_schema_does_not_declare() {
        let mut obj = json!({
            "apiVersion": "x.io/v1", "kind": "K", "metadata": { "name": "a", "whatever": 1 },
            "unknown": true,
            "spec": {
                "plain": "p", "extra": "gone",
                "refs": [{ "name": "r", "stray": 1 }],
                "labels": { "a": { "weight": 2, "stray": 1 } },
                "values": { "free": { "deep": [1, 2] } },
                "template": { "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" }, "stray": 1, "spec": { "x": 1 } }
            }
        });
        admit(&mut obj, &schema(), true);
        assert!(obj.get("unknown").is_none());
        assert_eq!(
            obj["metadata"]["whatever"], 1,
            "metadata is not the schema's to prune"
        );
        assert!(obj["spec"].get("extra").is_none());
        assert_eq!(
            obj["spec"]["refs"][0],
            json!({ "name": "r", "optional": false })
        );
        assert_eq!(obj["spec"]["labels"]["a"], json!({ "weight": 2 }));
        assert_eq!(obj["spec"]["values"], json!({ "free": { "deep": [1, 2] } }));
        let t = &obj["spec"]["template"];
        assert_eq!(t["kind"], "Pod");
        assert_eq!(t["metadata"]["name"], "p");
        assert!(t.get("stray").is_none());
        assert_eq!(
            t["spec"],
            json!({}),
            "an object without properties keeps nothing"
        );
    }

    #[test]
    fn defaults_where_the_parent_exists() {
        let mut obj = json!({ "apiVersion": "x.io/v1", "kind": "K", "metadata": {}, "spec": {
            "mode": null, "note": null, "plain": null,
            "refs": [{ "name": "a" }, { "name": "b", "optional": true }],
            "labels": { "x": {}, "y": { "weight": 9 } }
        } });
        admit(&mut obj, &schema(), true);
        let spec = &obj["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["mode"], "HEAD",
            "a non-nullable null takes the default"
        );
        assert_eq!(spec["note"], Value::Null, "a nullable null stays null");
        assert!(
            spec.get("plain").is_none(),
            "a non-nullable null without default goes"
        );
        assert!(
            spec.get("verify").is_none(),
            "no defaults inside an absent object"
        );
        assert_eq!(spec["refs"][0]["optional"], false);
        assert_eq!(spec["refs"][1]["optional"], true);
        assert_eq!(spec["labels"]["x"]["weight"], 5);
        assert_eq!(spec["labels"]["y"]["weight"], 9);
        assert_eq!(obj["status"], json!({ "observedGeneration": -1 }));
    }

    #[test]
    fn preserve_at_the_root_keeps_everything_undeclared() {
        let s = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": { "spec": { "type": "object", "properties": { "a": { "type": "string", "default": "d" } } } } });
        let mut obj = json!({ "kind": "K", "free": 1, "spec": { "b": 2 } });
        admit(&mut obj, &s, true);
        assert_eq!(obj["free"], 1);
        assert_eq!(
            obj["spec"],
            json!({ "a": "d" }),
            "declared fields are pruned by their schema"
        );
        let mut obj = json!({ "kind": "K", "free": 1, "spec": { "b": 2 } });
        admit(&mut obj, &s, false);
        assert_eq!(
            obj["spec"],
            json!({ "b": 2, "a": "d" }),
            "no pruning when the CRD keeps unknown fields"
        );
    }
}
