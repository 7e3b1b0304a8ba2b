//! Fields Kubernetes refuses to change after creation (the cases Flux's `force` recreates on).

use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::objects::target;
use crate::resources::Resource;

fn at<'a>(v: &'a Value, p: &str) -> Option<&'a Value> {
    v.pointer(p)
}

fn forbidden(field: &str, message: &str) -> Cause {
    Cause {
        field: field.into(),
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {message}"),
    }
}

fn immutable(field: &str, value: Option<&Value>) -> Cause {
    Cause {
        field: field.into(),
        reason: "FieldValueInvalid",
        message: format!(
            "Invalid value: {}: field is immutable",
            value.map(Value::to_string).unwrap_or_else(|| "null".into())
        ),
    }
}

/// Fills server-set values an update may leave out (a Service's clusterIP, a bound claim's
/// volume) from the stored object, as the API server's defaulting does.
pub fn carry_over(res: &Resource, old: &Value, next: &mut Value) {
    let keep = |next: &mut Value, ptr: &str, field: &str| {
        if at(next, ptr).is_none_or(|v| v.as_str() == Some(""))
            && let Some(v) = at(old, ptr).cloned()
            && let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert(field.into(), v);
        }
    };
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "services") => {
            keep(next, "/spec/clusterIP", "clusterIP");
            if at(next, "/spec/clusterIPs").is_none()
                && let Some(ip) = at(next, "/spec/clusterIP").cloned()
                && let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut)
            {
                spec.insert("clusterIPs".into(), json!([ip]));
            }
        }
        ("", "persistentvolumeclaims") => keep(next, "/spec/volumeName", "volumeName"),
        _ => {}
    }
}

/// Refuses an update that changes an immutable field (422 Invalid, "field is immutable").
pub fn check(res: &Resource, old: &Value, next: &Value) -> Result<(), ApiError> {
    let name = next
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut causes = Vec::new();
    let changed = |p: &str| at(old, p) != at(next, p);
    match (res.group.as_str(), res.plural.as_str()) {
        ("apps", "deployments" | "daemonsets" | "replicasets") if changed("/spec/selector") => {
            causes.push(immutable("spec.selector", at(next, "/spec/selector")));
        }
        ("apps", "statefulsets") => {
            if changed("/spec/selector") {
                causes.push(immutable("spec.selector", at(next, "/spec/selector")));
            }
            let strip = |v: &Value| {
                let mut s = v.pointer("/spec").cloned().unwrap_or(json!({}));
                if let Some(m) = s.as_object_mut() {
                    for f in [
                        "replicas",
                        "ordinals",
                        "template",
                        "updateStrategy",
                        "revisionHistoryLimit",
                        "persistentVolumeClaimRetentionPolicy",
                        "minReadySeconds",
                        "selector",
                    ] {
                        m.remove(f);
                    }
                }
                s
            };
            if strip(old) != strip(next) {
                causes.push(forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ));
            }
        }
        ("batch", "jobs") => {
            if changed("/spec/selector") {
                causes.push(immutable("spec.selector", at(next, "/spec/selector")));
            }
            if changed("/spec/template") {
                causes.push(immutable("spec.template", at(next, "/spec/template")));
            }
        }
        ("", "services") => {
            let old_ip = at(old, "/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !old_ip.is_empty() && changed("/spec/clusterIP") {
                causes.push(immutable("spec.clusterIP", at(next, "/spec/clusterIP")));
            }
        }
        ("", "persistentvolumeclaims") => {
            let strip = |v: &Value| {
                let mut s = v.pointer("/spec").cloned().unwrap_or(json!({}));
                if let Some(m) = s.as_object_mut() {
                    m.remove("volumeAttributesClassName");
                    if let Some(r) = m.get_mut("resources").and_then(Value::as_object_mut) {
                        r.remove("requests");
                    }
                }
                s
            };
            if strip(old) != strip(next) {
                causes.push(forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                ));
            }
        }
        ("", "configmaps" | "secrets") if at(old, "/immutable") == Some(&json!(true)) => {
            for f in ["data", "binaryData", "stringData"] {
                if changed(&format!("/{f}")) {
                    causes.push(forbidden(f, "field is immutable when `immutable` is set"));
                }
            }
            if changed("/immutable") {
                causes.push(forbidden(
                    "immutable",
                    "field is immutable when `immutable` is set",
                ));
            }
        }
        _ => {}
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&target(res, name), causes))
    }
}
