//! What a Pod answers beyond its object: `binding` (and the `bindings` collection a scheduler
//! posts to), `eviction` (policy/v1 Eviction, held back by PodDisruptionBudgets with the 429
//! kube-apiserver gives), and `exec`, `attach` and `portforward`, which say plainly that this
//! cluster runs no containers.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Value, json};

use super::route::Req;
use super::{App, content_type, json_resp, parse_body, read_body};
use crate::dataplane::PODS_KEY;
use crate::error::{ApiError, Cause, Target};
use crate::objects::{Propagation, target};
use crate::selector::LabelSelector;
use crate::store::{State, meta_str};

const PDB_KEY: &str = "policy/poddisruptionbudgets";

/// The subresources of a Pod this module answers.
pub const ACTIONS: &[&str] = &["attach", "binding", "eviction", "exec", "portforward"];

/// The Status kube-apiserver answers a binding or an eviction with.
fn created() -> Value {
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201 })
}

pub(super) async fn action(
    app: &Arc<App>,
    method: &Method,
    r: &Req,
    sub: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let name = r.name.clone().unwrap_or_default();
    let ns = r.ns.clone().unwrap_or_default();
    let allowed = match sub {
        "binding" | "eviction" => *method == Method::POST,
        _ => *method == Method::POST || *method == Method::GET,
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    if matches!(sub, "exec" | "attach" | "portforward") {
        if app.store.lock().get(PODS_KEY, &ns, &name).is_none() {
            return Err(ApiError::not_found(&target(&r.res, &name)));
        }
        return Err(ApiError::bad_request(format!(
            "pod {ns}/{name}: {sub} is not available: this cluster runs no containers (a ferroflux devcluster simulates Pods; exec, attach and port-forward have nothing to connect to)"
        )));
    }
    let bytes = read_body(body).await?;
    let obj = parse_body(&bytes, &content_type(headers))?;
    let answer = app
        .store
        .write(|st| match sub {
            "binding" => bind(st, &ns, Some(&name), &obj),
            _ => evict(st, &ns, &name, &obj),
        })
        .await?;
    Ok(json_resp(201, &answer))
}

/// `POST namespaces/NS/bindings`: a Binding whose name is the Pod's.
pub(super) async fn bindings(
    app: &Arc<App>,
    method: &Method,
    r: &Req,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if *method != Method::POST || r.name.is_some() {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        )));
    }
    let ns = r.ns.clone().unwrap_or_default();
    let bytes = read_body(body).await?;
    let obj = parse_body(&bytes, &content_type(headers))?;
    let answer = app.store.write(|st| bind(st, &ns, None, &obj)).await?;
    Ok(json_resp(201, &answer))
}

fn pod_target(name: &str) -> Target<'_> {
    Target {
        group: "",
        plural: "pods",
        kind: "Pod",
        name,
    }
}

fn check_kind(obj: &Value, api_versions: &[&str], kind: &str) -> Result<(), ApiError> {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let k = obj.get("kind").and_then(Value::as_str).unwrap_or(kind);
    if k != kind || !(av.is_empty() || api_versions.contains(&av)) {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({av} {k}) does not match the expected kind ({kind})"
        )));
    }
    Ok(())
}

/// Assigns a Pod to a Node, as the scheduler does (`BindingREST`): the Pod must exist, have no
/// Node yet and not be going away. Its simulated kubelet starts it there.
fn bind(st: &mut State, ns: &str, url_name: Option<&str>, b: &Value) -> Result<Value, ApiError> {
    check_kind(b, &["v1"], "Binding")?;
    let name = meta_str(b, "name").to_string();
    if let Some(u) = url_name
        && name != u
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let binding = Target {
        group: "",
        plural: "bindings",
        kind: "Binding",
        name: &name,
    };
    let kind = b
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let node = b
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut causes = Vec::new();
    if !kind.is_empty() && kind != "Node" {
        causes.push(Cause::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    if node.is_empty() {
        causes.push(Cause::required("target.name", ""));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&binding, causes));
    }
    let Some(pod) = st.get(PODS_KEY, ns, &name).cloned() else {
        return Err(ApiError::not_found(&pod_target(&name)));
    };
    let conflict = |why: String| ApiError::conflict(&pod_target(&name), &why);
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(conflict(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    if let Some(n) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Err(conflict(format!(
            "pod {name} is already assigned to node {n:?}"
        )));
    }
    let mut next = (*pod).clone();
    crate::util::set_path(&mut next, &["spec", "nodeName"], json!(node));
    if let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    st.put(PODS_KEY, next);
    crate::dataplane::run_pod(st, ns, &name);
    Ok(created())
}

/// Evicts a Pod (`EvictionREST`): a Pod that is not running (or already going) goes at once;
/// one a PodDisruptionBudget covers goes only while the budget allows a disruption, which the
/// eviction then uses up.
fn evict(st: &mut State, ns: &str, name: &str, e: &Value) -> Result<Value, ApiError> {
    check_kind(e, &["policy/v1", "policy/v1beta1"], "Eviction")?;
    let sent = meta_str(e, "name");
    if !sent.is_empty() && sent != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let Some(pod) = st.get(PODS_KEY, ns, name).cloned() else {
        return Err(ApiError::not_found(&pod_target(name)));
    };
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    let ignores_budget = pod.pointer("/metadata/deletionTimestamp").is_some()
        || matches!(phase, "Succeeded" | "Failed" | "Pending");
    if !ignores_budget {
        let budgets: Vec<Arc<Value>> = st
            .list(PDB_KEY, Some(ns), None)
            .filter(|pdb| selects(pdb, &pod))
            .cloned()
            .collect();
        if budgets.len() > 1 {
            return Err(ApiError::internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
        if let Some(pdb) = budgets.first() {
            let mut next = (**pdb).clone();
            let status = budget_status(st, &next);
            let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
            if allowed <= 0 {
                next["status"] = status.clone();
                store_status(st, next);
                return Err(ApiError::too_many_requests(
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    json!({ "causes": [{
                        "reason": "DisruptionBudget",
                        "message": format!(
                            "The disruption budget {} needs {} healthy pods and has {} currently",
                            meta_str(pdb, "name"),
                            status["desiredHealthy"],
                            status["currentHealthy"],
                        ),
                    }] }),
                ));
            }
            let mut status = status;
            status["disruptionsAllowed"] = json!(allowed - 1);
            status["disruptedPods"][name] = json!(crate::util::now_rfc3339());
            next["status"] = status;
            store_status(st, next);
        }
    }
    let grace = e
        .pointer("/deleteOptions/gracePeriodSeconds")
        .and_then(Value::as_i64);
    crate::objects::delete_with_grace(st, PODS_KEY, ns, name, Propagation::Background, Some(grace));
    if st.get(PODS_KEY, ns, name).is_none() {
        crate::dataplane::after_pod_removed(st, &pod);
    }
    Ok(created())
}

fn store_status(st: &mut State, mut pdb: Value) {
    if let Some(m) = pdb.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    st.put(PDB_KEY, pdb);
}

/// Whether a PodDisruptionBudget's selector picks the Pod (an empty selector picks every Pod of
/// the namespace in policy/v1; none picks none).
fn selects(pdb: &Value, pod: &Value) -> bool {
    let Some(sel) = pdb.pointer("/spec/selector") else {
        return false;
    };
    LabelSelector::parse(&super::scale::selector_string(Some(sel))).is_ok_and(|s| s.matches(pod))
}

fn ready(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Ready")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
}

/// An int-or-percent of `total`, rounded up as the disruption controller rounds.
fn scaled(v: &Value, total: i64) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let p: i64 = s.strip_suffix('%')?.parse().ok()?;
            Some((p * total + 99) / 100)
        }
        _ => None,
    }
}

/// What the disruption controller would report for the budget now: the Pods it covers, how many
/// are healthy (ready) and how many must stay so.
fn budget_status(st: &State, pdb: &Value) -> Value {
    let ns = meta_str(pdb, "namespace");
    let pods: Vec<&Arc<Value>> = st
        .list(PODS_KEY, Some(ns), None)
        .filter(|p| selects(pdb, p))
        .filter(|p| {
            !matches!(
                p.pointer("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            )
        })
        .collect();
    let expected = pods.len() as i64;
    let healthy = pods.iter().filter(|p| ready(p)).count() as i64;
    let desired = match (
        pdb.pointer("/spec/minAvailable"),
        pdb.pointer("/spec/maxUnavailable"),
    ) {
        (Some(min), _) => scaled(min, expected).unwrap_or(expected),
        (None, Some(max)) => expected - scaled(max, expected).unwrap_or(0),
        (None, None) => expected,
    }
    .max(0);
    let mut status = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    status["observedGeneration"] = pdb
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    status["expectedPods"] = json!(expected);
    status["currentHealthy"] = json!(healthy);
    status["desiredHealthy"] = json!(desired);
    status["disruptionsAllowed"] = json!((healthy - desired).max(0));
    if !status.get("disruptedPods").is_some_and(Value::is_object) {
        status["disruptedPods"] = json!({});
    }
    status
}

/// `ComponentStatus`es as kube-apiserver answers them (deprecated, read-only, not stored): the
/// scheduler, the controller manager and etcd, all healthy, with the deprecation warning.
pub(super) fn component_statuses(r: &Req, headers: &HeaderMap) -> Result<Response, ApiError> {
    let item = |name: &str| {
        json!({
            "kind": "ComponentStatus",
            "apiVersion": "v1",
            "metadata": { "name": name },
            "conditions": [{ "type": "Healthy", "status": "True", "message": "ok" }],
        })
    };
    let names = ["scheduler", "controller-manager", "etcd-0"];
    let items: Vec<Value> = match &r.name {
        Some(n) if names.contains(&n.as_str()) => vec![item(n)],
        Some(n) => return Err(ApiError::not_found(&target(&r.res, n))),
        None => names.iter().map(|n| item(n)).collect(),
    };
    let body = if super::wants_table(headers) {
        let refs: Vec<&Value> = items.iter().collect();
        crate::table::table(&r.res, &r.version, &refs, None)
    } else if r.name.is_some() {
        items.into_iter().next().unwrap_or_default()
    } else {
        json!({ "kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items })
    };
    let mut resp = json_resp(200, &body);
    resp.headers_mut().insert(
        axum::http::header::WARNING,
        axum::http::HeaderValue::from_static(
            "299 - \"v1 ComponentStatus is deprecated in v1.19+\"",
        ),
    );
    Ok(resp)
}
