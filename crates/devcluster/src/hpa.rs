//! HorizontalPodAutoscalers served at `autoscaling/v1` from the stored `autoscaling/v2` form, as
//! kube-apiserver converts them: the CPU utilization target and status are v1's own fields;
//! every other metric, the current metrics, the conditions and the behavior travel in the
//! `autoscaling.alpha.kubernetes.io/*` annotations (in v1's metric shapes), so a v1 client that
//! writes the object back loses nothing.

use serde_json::{Map, Value, json};

use crate::resources::Resource;

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Whether `res` at `version` is the v1 view of HorizontalPodAutoscalers.
pub fn is_v1(res: &Resource, version: &str) -> bool {
    res.crd.is_none()
        && res.group == "autoscaling"
        && res.plural == "horizontalpodautoscalers"
        && version == "v1"
}

fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/averageUtilization").is_some()
}

fn is_cpu_current(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/current/averageUtilization").is_some()
}

/// Copies the fields named `(from, to)` of `src` that are set into a new map.
fn pick(src: Option<&Value>, fields: &[(&str, &str)]) -> Map<String, Value> {
    let mut out = Map::new();
    for (from, to) in fields {
        if let Some(v) = src.and_then(|s| s.pointer(from)).filter(|v| !v.is_null()) {
            out.insert((*to).to_string(), v.clone());
        }
    }
    out
}

/// The two sides of every metric source field that differs between v2 and v1, per metric type
/// (`target` and `current` alike: `targetX`/`currentX` in v1).
fn metric_fields(kind: &str, spec: bool) -> Vec<(&'static str, &'static str)> {
    match (kind, spec) {
        ("Resource" | "ContainerResource", true) => vec![
            ("/name", "name"),
            ("/container", "container"),
            ("/target/averageUtilization", "targetAverageUtilization"),
            ("/target/averageValue", "targetAverageValue"),
        ],
        ("Resource" | "ContainerResource", false) => vec![
            ("/name", "name"),
            ("/container", "container"),
            ("/current/averageUtilization", "currentAverageUtilization"),
            ("/current/averageValue", "currentAverageValue"),
        ],
        ("Pods", true) => vec![
            ("/metric/name", "metricName"),
            ("/metric/selector", "selector"),
            ("/target/averageValue", "targetAverageValue"),
        ],
        ("Pods", false) => vec![
            ("/metric/name", "metricName"),
            ("/metric/selector", "selector"),
            ("/current/averageValue", "currentAverageValue"),
        ],
        ("Object", true) => vec![
            ("/describedObject", "target"),
            ("/metric/name", "metricName"),
            ("/metric/selector", "selector"),
            ("/target/value", "targetValue"),
            ("/target/averageValue", "averageValue"),
        ],
        ("Object", false) => vec![
            ("/describedObject", "target"),
            ("/metric/name", "metricName"),
            ("/metric/selector", "selector"),
            ("/current/value", "currentValue"),
            ("/current/averageValue", "averageValue"),
        ],
        ("External", true) => vec![
            ("/metric/name", "metricName"),
            ("/metric/selector", "metricSelector"),
            ("/target/value", "targetValue"),
            ("/target/averageValue", "targetAverageValue"),
        ],
        ("External", false) => vec![
            ("/metric/name", "metricName"),
            ("/metric/selector", "metricSelector"),
            ("/current/value", "currentValue"),
            ("/current/averageValue", "currentAverageValue"),
        ],
        _ => Vec::new(),
    }
}

/// The JSON key of a metric type's source (`Resource` → `resource`).
fn source_key(kind: &str) -> String {
    let mut c = kind.chars();
    match c.next() {
        Some(f) => f.to_ascii_lowercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

fn metric_to_v1(m: &Value, spec: bool) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
    let key = source_key(kind);
    let fields = pick(m.get(&key), &metric_fields(kind, spec));
    json!({ "type": kind, key: fields })
}

fn metric_from_v1(m: &Value, spec: bool) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
    let key = source_key(kind);
    let mut src = Value::Object(Map::new());
    for (v2, v1) in metric_fields(kind, spec) {
        if let Some(v) = m.get(&key).and_then(|s| s.get(v1)).filter(|v| !v.is_null()) {
            let path: Vec<&str> = v2.trim_start_matches('/').split('/').collect();
            crate::util::set_path(&mut src, &path, v.clone());
        }
    }
    // The target's type follows from which value v1 sets.
    let slot = if spec { "target" } else { "current" };
    if spec && let Some(t) = src.get_mut(slot).and_then(Value::as_object_mut) {
        let ty = if t.contains_key("averageUtilization") {
            "Utilization"
        } else if t.contains_key("value") {
            "Value"
        } else {
            "AverageValue"
        };
        t.insert("type".into(), json!(ty));
    }
    json!({ "type": kind, key: src })
}

fn annotate(meta: &mut Map<String, Value>, key: &str, v: &Value) {
    let text = serde_json::to_string(v).unwrap_or_default();
    let a = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = a.as_object_mut() {
        a.insert(key.into(), json!(text));
    }
}

/// The stored v2 object as an `autoscaling/v1` client sees it.
pub fn to_v1(obj: &Value) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!("autoscaling/v1");
    let metrics: Vec<Value> = obj
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current: Vec<Value> = obj
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut meta = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(|m| metric_to_v1(m, true))
        .collect();
    if !others.is_empty() {
        annotate(&mut meta, METRICS, &json!(others));
    }
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(|m| metric_to_v1(m, false)).collect();
        annotate(&mut meta, CURRENT_METRICS, &json!(v1));
    }
    if let Some(b) = obj.pointer("/spec/behavior").filter(|b| !b.is_null()) {
        annotate(&mut meta, BEHAVIOR, b);
    }
    if let Some(c) = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        annotate(&mut meta, CONDITIONS, &json!(c));
    }
    out["metadata"] = Value::Object(meta);
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("metrics");
        spec.remove("behavior");
        if let Some(t) = metrics
            .iter()
            .find(|m| is_cpu_utilization(m))
            .and_then(|m| m.pointer("/resource/target/averageUtilization"))
        {
            spec.insert("targetCPUUtilizationPercentage".into(), t.clone());
        }
    }
    if let Some(status) = out.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(c) = current
            .iter()
            .find(|m| is_cpu_current(m))
            .and_then(|m| m.pointer("/resource/current/averageUtilization"))
        {
            status.insert("currentCPUUtilizationPercentage".into(), c.clone());
        }
    }
    out
}

fn take_annotation(meta: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let a = meta.get_mut("annotations")?.as_object_mut()?;
    let text = a.remove(key)?;
    if a.is_empty() {
        meta.remove("annotations");
    }
    serde_json::from_str(text.as_str()?).ok()
}

/// The metric an HPA without any targets (v2 defaulting, v1's implicit one): 80% CPU.
pub fn default_metric() -> Value {
    json!({ "type": "Resource", "resource": {
        "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } })
}

/// An `autoscaling/v1` object in the stored v2 form.
pub fn from_v1(obj: &Value) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!("autoscaling/v2");
    let mut meta = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let others = take_annotation(&mut meta, METRICS);
    let current = take_annotation(&mut meta, CURRENT_METRICS);
    let behavior = take_annotation(&mut meta, BEHAVIOR);
    let conditions = take_annotation(&mut meta, CONDITIONS);
    if out.get("metadata").is_some() {
        out["metadata"] = Value::Object(meta);
    }
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        if let Some(t) = spec.remove("targetCPUUtilizationPercentage") {
            metrics.push(json!({ "type": "Resource", "resource": {
                "name": "cpu", "target": { "type": "Utilization", "averageUtilization": t } } }));
        }
        for m in others.iter().filter_map(Value::as_array).flatten() {
            metrics.push(metric_from_v1(m, true));
        }
        // v1's implicit target, made explicit by the conversion as kube-apiserver does.
        if metrics.is_empty() {
            metrics.push(default_metric());
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        if let Some(b) = behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = out.get_mut("status").and_then(Value::as_object_mut) {
        let cpu = status.remove("currentCPUUtilizationPercentage");
        // The annotation, when there, has every current metric with more detail.
        let metrics: Vec<Value> = match current.as_ref().and_then(Value::as_array) {
            Some(all) => all.iter().map(|m| metric_from_v1(m, false)).collect(),
            None => cpu
                .map(|c| {
                    json!({ "type": "Resource", "resource": {
                    "name": "cpu", "current": { "averageUtilization": c } } })
                })
                .into_iter()
                .collect(),
        };
        if !metrics.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(metrics));
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_metric() {
        let v2 = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": { "name": "web", "namespace": "default" },
            "spec": {
                "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    { "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 70 } } },
                    { "type": "Pods", "pods": { "metric": { "name": "rps" }, "target": { "type": "AverageValue", "averageValue": "10" } } }
                ],
                "behavior": { "scaleDown": { "stabilizationWindowSeconds": 60 } }
            },
            "status": { "currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{ "type": "Resource", "resource": { "name": "cpu", "current": { "averageUtilization": 40 } } }] }
        });
        let v1 = to_v1(&v2);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        let others: Value =
            serde_json::from_str(v1["metadata"]["annotations"][METRICS].as_str().unwrap()).unwrap();
        assert_eq!(
            others,
            json!([{ "type": "Pods", "pods": { "metricName": "rps", "targetAverageValue": "10" } }])
        );
        assert_eq!(from_v1(&v1), v2);
    }
}
