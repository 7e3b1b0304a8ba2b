//! What Flux does to an object before it dry-runs or applies it (fluxcd/pkg's `ssa/normalize`):
//! a Secret's `stringData` becomes `data`, so a key renamed in `stringData` does not leave its
//! old key behind in `data` (kubernetes/kubernetes#108008); ports without a protocol get
//! `TCP`, as the API server defaults them, so they are not reported as drift; `status` (kept
//! for CRDs, whose status kstatus reads) and `metadata.creationTimestamp` are dropped.

use base64::Engine as _;
use serde_json::{Map, Value};

/// Normalizes `obj` in place.
pub fn normalize(obj: &mut Value) {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let core = api_version == "v1";
    match kind.as_str() {
        "Secret" if core => secret_string_data(map),
        "Service" if core => {
            default_protocols(map.get_mut("spec").and_then(|s| s.get_mut("ports")))
        }
        "Pod" if core => pod_spec(map.get_mut("spec")),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job"
            if api_version == "apps/v1" || api_version == "batch/v1" =>
        {
            pod_spec(template_spec(map.get_mut("spec")));
        }
        "CronJob" if api_version == "batch/v1" => {
            let job = map
                .get_mut("spec")
                .and_then(|s| s.get_mut("jobTemplate"))
                .and_then(|j| j.get_mut("spec"));
            pod_spec(template_spec(job));
        }
        _ => {}
    }
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("creationTimestamp");
    }
    let crd =
        kind == "CustomResourceDefinition" && api_version.starts_with("apiextensions.k8s.io/");
    if !crd {
        map.remove("status");
    }
}

fn secret_string_data(map: &mut Map<String, Value>) {
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    if string_data.is_empty() {
        return;
    }
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in string_data {
            let text = match &v {
                Value::String(s) => s.clone(),
                // The API server would refuse a non-string; keep the value for it to say so.
                other => {
                    data.insert(k, other.clone());
                    continue;
                }
            };
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(k, Value::String(encoded));
        }
    }
}

fn template_spec(spec: Option<&mut Value>) -> Option<&mut Value> {
    spec.and_then(|s| s.get_mut("template"))
        .and_then(|t| t.get_mut("spec"))
}

fn pod_spec(spec: Option<&mut Value>) {
    let Some(containers) = spec
        .and_then(|s| s.get_mut("containers"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in containers {
        default_protocols(c.get_mut("ports"));
    }
}

fn default_protocols(ports: Option<&mut Value>) {
    for port in ports.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(p) = port.as_object_mut() {
            let missing = p
                .get("protocol")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if missing {
                p.insert("protocol".into(), Value::String("TCP".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_becomes_data() {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "creationTimestamp": null},
            "data": {"a": "YQ=="}, "stringData": {"b": "b", "a": "A"}});
        normalize(&mut s);
        assert_eq!(
            s,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "data": {"a": "QQ==", "b": "Yg=="}})
        );
    }

    #[test]
    fn ports_get_the_default_protocol_and_status_goes() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [
                {"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]}]}}},
            "status": {"replicas": 1}});
        normalize(&mut d);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}])
        );
        assert!(d.get("status").is_none());
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "status": {"acceptedNames": {}}});
        normalize(&mut crd);
        assert!(crd.get("status").is_some());
    }
}
