//! One Event store seen through two APIs. Kubernetes keeps core `v1` Events and
//! `events.k8s.io/v1` Events as the same objects (stored in the core form), so an event written
//! through either API is listed, watched, patched and deleted through both. The two versions
//! differ only in field names, which this module maps both ways.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause, Target};
use crate::resources::Resource;

/// `(events.k8s.io/v1 field, core v1 field)` for every field whose name differs; `reason`,
/// `type`, `action`, `related`, `eventTime`, `series` and `metadata` are shared as they are.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `res` is `events.k8s.io` Events (served from the core Event store).
pub fn is_events_api(res: &Resource) -> bool {
    res.group == "events.k8s.io" && res.plural == "events"
}

/// The storage key shared by both Event APIs.
pub const KEY: &str = "/events";

fn rename(obj: &mut Value, api_version: &str, from_new: bool) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let old = std::mem::take(m);
    let mut out = Map::with_capacity(old.len());
    for (k, v) in old {
        let k = match k.as_str() {
            "apiVersion" => {
                out.insert(k, json!(api_version));
                continue;
            }
            key => RENAMED
                .iter()
                .find(|(new, core)| if from_new { *new == key } else { *core == key })
                .map(|(new, core)| if from_new { *core } else { *new })
                .map(String::from)
                .unwrap_or(k),
        };
        out.insert(k, v);
    }
    *m = out;
}

/// An `events.k8s.io/v1` Event in the stored core `v1` form.
pub fn to_core(mut obj: Value) -> Value {
    rename(&mut obj, "v1", true);
    obj
}

/// A stored core `v1` Event as `events.k8s.io/v1` shows it.
pub fn from_core(obj: &Value) -> Value {
    let mut obj = obj.clone();
    rename(&mut obj, "events.k8s.io/v1", false);
    obj
}

/// The checks the API server makes on an Event created through `events.k8s.io/v1` (core `v1`
/// keeps the lenient legacy rules). Fields are named as the server names them.
pub fn validate_create(obj: &Value, t: &Target) -> Result<(), ApiError> {
    let s = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or_default();
    let mut causes = Vec::new();
    if s("eventTime").is_empty() {
        causes.push(Cause::required("eventTime", ""));
    }
    match s("type") {
        "Normal" | "Warning" => {}
        other => causes.push(Cause::invalid(
            "type",
            "",
            &format!("has invalid value: {other}"),
        )),
    }
    for field in [
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
    ] {
        if s(field).is_empty() {
            causes.push(Cause::required(field, ""));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(t, causes))
    }
}

/// Field selectors the API server accepts on Events, as paths into the stored (core) object.
pub fn field_path(field: &str) -> Option<&'static str> {
    Some(match field {
        "involvedObject.kind" | "regarding.kind" => "/involvedObject/kind",
        "involvedObject.namespace" | "regarding.namespace" => "/involvedObject/namespace",
        "involvedObject.name" | "regarding.name" => "/involvedObject/name",
        "involvedObject.uid" | "regarding.uid" => "/involvedObject/uid",
        "involvedObject.apiVersion" | "regarding.apiVersion" => "/involvedObject/apiVersion",
        "involvedObject.resourceVersion" | "regarding.resourceVersion" => {
            "/involvedObject/resourceVersion"
        }
        "involvedObject.fieldPath" | "regarding.fieldPath" => "/involvedObject/fieldPath",
        "reason" => "/reason",
        "reportingComponent" | "reportingController" => "/reportingComponent",
        "source" | "deprecatedSource" => "/source/component",
        "type" => "/type",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_field() {
        let new = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": { "name": "e", "namespace": "default" },
            "eventTime": "2026-01-01T00:00:00.000000Z", "action": "Pulling", "reason": "Pulled",
            "regarding": { "kind": "Pod", "name": "p" }, "note": "done", "type": "Normal",
            "reportingController": "kubelet", "reportingInstance": "node-1",
            "series": { "count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z" },
            "deprecatedCount": 3,
        });
        let core = to_core(new.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "done");
        assert_eq!(core["reportingComponent"], "kubelet");
        assert_eq!(core["count"], 3);
        assert_eq!(from_core(&core), new);
    }
}
