//! Simulated controllers, the way kwok does it: workloads report the status their controllers
//! would write (every new generation becomes ready), Jobs complete, claims bind, Services get
//! addresses. Two annotations steer it so health checks can be tested:
//! `devcluster.ferroflux.io/ready-after: 5s` delays readiness, `devcluster.ferroflux.io/fail:
//! "true"` keeps the object progressing forever with a failing condition.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::resources::Resource;
use crate::store::{State, Store, meta_str};
use crate::util;

pub const READY_AFTER: &str = "devcluster.ferroflux.io/ready-after";
pub const FAIL: &str = "devcluster.ferroflux.io/fail";

/// A readiness that comes later (the object, and the generation it is for), or, with `remove`,
/// a Pod a simulated kubelet removes once its graceful deletion began.
#[derive(Debug, Clone)]
pub struct Pending {
    pub remove: bool,
    pub after: Duration,
    pub key: String,
    pub ns: String,
    pub name: String,
    pub generation: i64,
}

fn annotation<'a>(o: &'a Value, k: &str) -> Option<&'a str> {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(k))
        .and_then(Value::as_str)
}

fn replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn cond(t: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": t, "status": status, "reason": reason, "message": message,
        "lastUpdateTime": now, "lastTransitionTime": now,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Ready,
    Progressing,
    Failed,
}

fn workload_status(res: &Resource, o: &Value, phase: Phase) -> Option<Value> {
    let now = util::now_rfc3339();
    let generation = o
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let name = meta_str(o, "name");
    let n = replicas(o);
    let ready = if phase == Phase::Ready { n } else { 0 };
    let status = match (res.group.as_str(), res.plural.as_str()) {
        ("apps", "deployments") => {
            let (avail, progressing) = match phase {
                Phase::Ready => (
                    cond(
                        "Available",
                        "True",
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability.",
                        &now,
                    ),
                    cond(
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet \"{name}\" has successfully progressed."),
                        &now,
                    ),
                ),
                Phase::Progressing => (
                    cond(
                        "Available",
                        "False",
                        "MinimumReplicasUnavailable",
                        "Deployment does not have minimum availability.",
                        &now,
                    ),
                    cond(
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        &format!("ReplicaSet \"{name}\" is progressing."),
                        &now,
                    ),
                ),
                Phase::Failed => (
                    cond(
                        "Available",
                        "False",
                        "MinimumReplicasUnavailable",
                        "Deployment does not have minimum availability.",
                        &now,
                    ),
                    cond(
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        &format!("ReplicaSet \"{name}\" has timed out progressing."),
                        &now,
                    ),
                ),
            };
            let mut s = json!({
                "observedGeneration": generation,
                "replicas": n,
                "updatedReplicas": n,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "conditions": [avail, progressing],
            });
            if n - ready > 0 {
                s["unavailableReplicas"] = json!(n - ready);
            }
            s
        }
        ("apps", "statefulsets") => json!({
            "observedGeneration": generation,
            "replicas": n,
            "readyReplicas": ready,
            "currentReplicas": n,
            "updatedReplicas": n,
            "availableReplicas": ready,
            "currentRevision": format!("{name}-{generation}"),
            "updateRevision": format!("{name}-{generation}"),
            "collisionCount": 0,
        }),
        ("apps", "replicasets") => json!({
            "observedGeneration": generation,
            "replicas": n,
            "fullyLabeledReplicas": n,
            "readyReplicas": ready,
            "availableReplicas": ready,
        }),
        ("apps", "daemonsets") => {
            // One simulated node.
            let r = if phase == Phase::Ready { 1 } else { 0 };
            json!({
                "observedGeneration": generation,
                "desiredNumberScheduled": 1,
                "currentNumberScheduled": 1,
                "updatedNumberScheduled": 1,
                "numberMisscheduled": 0,
                "numberReady": r,
                "numberAvailable": r,
            })
        }
        ("batch", "jobs") => {
            let completions = o
                .pointer("/spec/completions")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            match phase {
                Phase::Ready => json!({
                    "startTime": now, "completionTime": now, "succeeded": completions, "active": 0, "ready": 0,
                    "conditions": [
                        cond("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", &now),
                        cond("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", &now),
                    ],
                }),
                Phase::Progressing => json!({ "startTime": now, "active": 1, "ready": 0 }),
                Phase::Failed => json!({
                    "startTime": now, "failed": 1, "active": 0,
                    "conditions": [
                        cond("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", &now),
                        cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", &now),
                    ],
                }),
            }
        }
        _ => return None,
    };
    Some(status)
}

/// Sets the status the kind's controller would write for a new object or generation. Returns
/// a pending readiness when the ready-after annotation delays it.
pub fn simulate(
    st: &State,
    res: &Resource,
    old: Option<&Value>,
    obj: &mut Value,
) -> Option<Pending> {
    let _ = st;
    match (res.group.as_str(), res.plural.as_str()) {
        // Pods are scheduled and started by the data plane once stored.
        ("", "pods") => return None,
        ("", "services") => {
            service(obj);
            return None;
        }
        ("", "persistentvolumeclaims") => {
            claim(obj);
            return None;
        }
        _ => {}
    }
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let old_generation = old
        .and_then(|o| o.pointer("/metadata/generation"))
        .and_then(Value::as_i64);
    let fail_now = annotation(obj, FAIL) == Some("true");
    let fail_before = old.and_then(|o| annotation(o, FAIL)) == Some("true");
    // Only a new generation (or a change of the steering annotations) is observed again.
    if old_generation == Some(generation) && fail_now == fail_before {
        return None;
    }
    let delay = annotation(obj, READY_AFTER)
        .and_then(util::parse_duration_ms)
        .filter(|ms| *ms > 0);
    let phase = if fail_now {
        Phase::Failed
    } else if delay.is_some() {
        Phase::Progressing
    } else {
        Phase::Ready
    };
    let status = workload_status(res, obj, phase)?;
    obj["status"] = status;
    match (phase, delay) {
        (Phase::Progressing, Some(ms)) => Some(Pending {
            remove: false,
            after: Duration::from_millis(ms),
            key: res.key(),
            ns: meta_str(obj, "namespace").to_string(),
            name: meta_str(obj, "name").to_string(),
            generation,
        }),
        _ => None,
    }
}

fn service(obj: &mut Value) {
    let ty = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if ty != "ExternalName"
        && spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        let b = util::random_bytes::<2>();
        let ip = format!("10.96.{}.{}", b[0], b[1].max(1));
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    if ty == "LoadBalancer" {
        let b = util::random_bytes::<1>();
        obj["status"] = json!({ "loadBalancer": { "ingress": [{ "ip": format!("172.18.255.{}", b[0].max(1)), "ipMode": "VIP" }] } });
    }
}

fn claim(obj: &mut Value) {
    if obj.pointer("/status/phase").and_then(Value::as_str) == Some("Bound") {
        return;
    }
    let uid = meta_str(obj, "uid").to_string();
    let storage = obj
        .pointer("/spec/resources/requests/storage")
        .cloned()
        .unwrap_or(json!("1Gi"));
    let modes = obj
        .pointer("/spec/accessModes")
        .cloned()
        .unwrap_or(json!(["ReadWriteOnce"]));
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && spec
            .get("volumeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        spec.insert("volumeName".into(), json!(format!("pvc-{uid}")));
    }
    obj["status"] =
        json!({ "phase": "Bound", "accessModes": modes, "capacity": { "storage": storage } });
}

/// Makes delayed objects ready once their delay has passed, if no newer generation came since,
/// and removes Pods whose graceful deletion began (what their kubelet would do). What these
/// writes owe in turn is scheduled the same way.
pub fn schedule(store: &Arc<Store>, pending: Vec<Pending>) {
    for p in pending {
        let store = store.clone();
        tokio::spawn(async move {
            if !p.after.is_zero() {
                tokio::time::sleep(p.after).await;
            }
            let _ = store
                .write(|st| {
                    if p.remove {
                        remove_terminated(st, &p);
                    } else {
                        become_ready(st, &p);
                    }
                    Ok(())
                })
                .await;
            let more = std::mem::take(&mut store.lock().pending_ready);
            if !more.is_empty() {
                schedule(&store, more);
            }
        });
    }
}

fn remove_terminated(st: &mut State, p: &Pending) {
    let Some(obj) = st.get(&p.key, &p.ns, &p.name).cloned() else {
        return;
    };
    let finalizers = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if obj.pointer("/metadata/deletionTimestamp").is_none() || finalizers {
        return;
    }
    if let Some(gone) = crate::objects::remove_now(st, &p.key, &p.ns, &p.name) {
        crate::dataplane::after_pod_removed(st, &gone);
    }
}

fn become_ready(st: &mut State, p: &Pending) {
    if p.key == crate::dataplane::PODS_KEY {
        crate::dataplane::mark_pod_ready(st, &p.ns, &p.name);
        return;
    }
    let Some(obj) = st.get(&p.key, &p.ns, &p.name).cloned() else {
        return;
    };
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if generation != p.generation || annotation(&obj, FAIL) == Some("true") {
        return;
    }
    let Some(res) = st.registry.by_key(&p.key) else {
        return;
    };
    let mut next = (*obj).clone();
    if let Some(status) = workload_status(&res, &next, Phase::Ready) {
        next["status"] = status;
        st.put(&p.key, next);
        if p.key == "apps/daemonsets" {
            // Its status counts the Nodes.
            crate::dataplane::after_write(st, &p.key, &p.ns, &p.name);
        }
    }
}
