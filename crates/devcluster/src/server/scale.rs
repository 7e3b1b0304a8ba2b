//! The `scale` subresource of Deployments, StatefulSets, ReplicaSets, ReplicationControllers
//! and custom resources whose CRD declares one (an `autoscaling/v1` Scale: GET, PUT and PATCH, as `kubectl scale` and autoscalers use it),
//! and the `log` subresource of Pods (an attached log, see `podlogs`, or a line saying the logs
//! are simulated).

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

/// `GET pods/NAME/log`: the pod must exist (and the container, when named). A Pod with a log
/// attached (see `podlogs`) serves it with the kubelet's `tailLines`, `sinceSeconds`,
/// `sinceTime`, `timestamps` and `follow`; any other Pod's log is one line saying nothing runs.
pub(super) fn log(
    app: &Arc<App>,
    method: &Method,
    r: &Req,
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    if *method != Method::GET {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    let name = r.name.clone().unwrap_or_default();
    let ns = r.ns.clone().unwrap_or_default();
    let found = app.store.lock().get(&r.res.key(), &ns, &name).cloned();
    let Some(pod) = found else {
        return Err(ApiError::not_found(&target(&r.res, &name)));
    };
    if let Some(container) = q.get("container").filter(|c| !c.is_empty()) {
        let known = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == container.as_str()));
        if !known {
            return Err(ApiError::bad_request(format!(
                "container {container} is not valid for pod {name}"
            )));
        }
    }
    let Some(log) = app.logs.of(&pod) else {
        return Ok(text_owned(200, SIMULATED_LOGS.to_string()));
    };
    let number = |key: &str| -> Result<Option<i64>, ApiError> {
        q.get(key)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid {key}: {v:?}")))
            })
            .transpose()
    };
    let mut selection = crate::podlogs::Selection {
        tail_lines: number("tailLines")?.map(|n| n.max(0) as u64),
        since: None,
        timestamps: super::query_bool(q, "timestamps"),
    };
    if let Some(s) = number("sinceSeconds")? {
        selection.since = Some(jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s.max(0)));
    }
    if let Some(t) = q.get("sinceTime") {
        selection.since = Some(
            t.parse::<jiff::Timestamp>()
                .map_err(|_| ApiError::bad_request(format!("invalid sinceTime: {t:?}")))?,
        );
    }
    let (backlog, mut next) = log.read(&selection);
    if !super::query_bool(q, "follow") {
        return Ok(text_owned(200, backlog));
    }
    // Followed: what is there, then every line as it is written, until the client goes away
    // or the cluster stops.
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let mut shutdown = app.shutdown.clone();
    let timestamps = selection.timestamps;
    tokio::spawn(async move {
        if !backlog.is_empty() && tx.send(bytes::Bytes::from(backlog)).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                _ = log.written_after(next) => {}
                _ = tx.closed() => return,
                _ = shutdown.changed() => return,
            }
            let (text, after) = log.read_from(next, timestamps);
            next = after;
            if !text.is_empty() && tx.send(bytes::Bytes::from(text)).await.is_err() {
                return;
            }
        }
    });
    let mut resp = Response::new(super::stream_body(rx));
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/plain"),
    );
    Ok(resp)
}
