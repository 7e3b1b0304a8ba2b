//! The `scale` subresource of Deployments, StatefulSets, ReplicaSets, ReplicationControllers
//! and custom resources whose CRD declares one (an `autoscaling/v1` Scale: GET, PUT and PATCH, as `kubectl scale` and autoscalers use it),
//! and the `log` subresource of Pods, which says the logs are simulated.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Value, json};

use super::route::Req;
use super::{App, content_type, dry_run, json_resp, parse_body, read_body, text_owned};
use crate::error::{ApiError, Cause};
use crate::objects::target;
use crate::resources::Resource;
use crate::store::meta_str;

/// What `kubectl logs` prints for every container of this cluster.
pub const SIMULATED_LOGS: &str = "logs are simulated: this cluster runs no containers\n";

/// The label selector of a workload as the text form Scale's `status.selector` carries
/// (`metav1.FormatLabelSelector`: requirements sorted by key).
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(sel) = selector else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        values.sort();
        let text = match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

fn at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(k))
}

/// The Scale of a workload (a custom resource's from the paths its CRD names; an absent
/// replica count reads 0, as for the API server).
fn scale_of(res: &Resource, obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut m = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    if let Some(paths) = &res.scale {
        let count = |p: &[String]| at(obj, p).and_then(Value::as_i64).unwrap_or(0);
        let selector = paths
            .label_selector
            .as_deref()
            .and_then(|p| at(obj, p))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": m,
            "spec": { "replicas": count(&paths.spec_replicas) },
            "status": { "replicas": count(&paths.status_replicas), "selector": selector },
        });
    }
    let selector = match obj.pointer("/spec/selector") {
        // A ReplicationController's selector is a plain map.
        Some(Value::Object(s))
            if !s.contains_key("matchLabels") && !s.contains_key("matchExpressions") =>
        {
            selector_string(Some(&json!({ "matchLabels": s })))
        }
        other => selector_string(other),
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": m,
        "spec": { "replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1) },
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}

pub(super) async fn scale(
    app: &Arc<App>,
    method: &Method,
    r: &Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let name = r.name.clone().unwrap_or_default();
    let key = r.res.key();
    let ns = r.ns.clone().unwrap_or_default();
    let current = || -> Result<Arc<Value>, ApiError> {
        app.store
            .lock()
            .get(&key, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&target(&r.res, &name)))
    };
    let desired: Value = match *method {
        Method::GET => {
            let cur = current()?;
            return Ok(json_resp(200, &scale_of(&r.res, &cur)));
        }
        Method::PUT => {
            let bytes = read_body(body).await?;
            let ct = content_type(headers);
            if ct.contains("protobuf") {
                crate::protobuf::decode(&bytes)?
            } else {
                parse_body(&bytes, &ct)?
            }
        }
        Method::PATCH => {
            let bytes = read_body(body).await?;
            let patch: Value = serde_json::from_slice(&bytes)
                .map_err(|e| ApiError::bad_request(format!("json parse error: {e}")))?;
            let cur = current()?;
            let mut doc = scale_of(&r.res, &cur);
            match content_type(headers).as_str() {
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    json_patch::merge(&mut doc, &patch)
                }
                "application/json-patch+json" => {
                    let p: json_patch::Patch = serde_json::from_value(patch)
                        .map_err(|e| ApiError::bad_request(format!("json patch: {e}")))?;
                    json_patch::patch(&mut doc, &p).map_err(|e| {
                        ApiError::invalid(
                            &target(&r.res, &name),
                            vec![Cause {
                                field: "patch".into(),
                                reason: "FieldValueInvalid",
                                message: format!("the JSON patch could not be applied: {e}"),
                            }],
                        )
                    })?;
                }
                other => {
                    return Err(ApiError::unsupported_media_type(format!(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other:?}; this devcluster does not apply server-side apply patches to the scale subresource)"
                    )));
                }
            }
            doc
        }
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
    };
    let kind = desired
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Scale");
    if kind != "Scale" {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind (Scale)"
        )));
    }
    let t = target(&r.res, &name);
    let replicas = match desired.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .filter(|n| *n >= 0 && *n <= i64::from(i32::MAX))
            .ok_or_else(|| {
                ApiError::invalid(
                    &crate::error::Target {
                        group: "autoscaling",
                        plural: "scales",
                        kind: "Scale",
                        name: &name,
                    },
                    vec![Cause::invalid(
                        "spec.replicas",
                        &v.to_string(),
                        "must be greater than or equal to 0",
                    )],
                )
            })?,
    };
    let sent_rv = meta_str(&desired, "resourceVersion").to_string();
    let dry = dry_run(q)?;
    let manager = super::field_manager_of(q, headers);
    let stored = app
        .store
        .write(|st| {
            let Some(old) = st.get(&key, &ns, &name).cloned() else {
                return Err(ApiError::not_found(&t));
            };
            if !sent_rv.is_empty() && sent_rv != meta_str(&old, "resourceVersion") {
                return Err(ApiError::stale(&t));
            }
            let mut next = (*old).clone();
            let path: Vec<&str> = match &r.res.scale {
                Some(p) => p.spec_replicas.iter().map(String::as_str).collect(),
                None => vec!["spec", "replicas"],
            };
            crate::util::set_path(&mut next, &path, json!(replicas));
            if let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            super::write_existing(st, r, next, dry, Some(&manager))
        })
        .await?;
    Ok(json_resp(200, &scale_of(&r.res, &stored)))
}

/// `GET pods/NAME/log`: the pod must exist; its log is one line saying nothing runs.
pub(super) fn log(app: &Arc<App>, method: &Method, r: &Req) -> Result<Response, ApiError> {
    if *method != Method::GET {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    let name = r.name.clone().unwrap_or_default();
    let ns = r.ns.clone().unwrap_or_default();
    if app.store.lock().get(&r.res.key(), &ns, &name).is_none() {
        return Err(ApiError::not_found(&target(&r.res, &name)));
    }
    Ok(text_owned(200, SIMULATED_LOGS.to_string()))
}
