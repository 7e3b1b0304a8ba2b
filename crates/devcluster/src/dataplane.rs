//! The simulated data plane, after kwok: a few Nodes that report Ready with capacity, and the
//! controllers that turn workloads into Pods on them. Deployments own ReplicaSets (one per pod
//! template, with revisions for `kubectl rollout`), ReplicaSets and ReplicationControllers own
//! Pods, StatefulSets own ordinal Pods (and their claims), DaemonSets own one Pod per Node, Jobs
//! own Pods that succeed. Pods are scheduled round-robin and go Pending → Running/Ready in two
//! writes, so watchers see both states. A rollout replaces the Pods of the old template; a Pod
//! deleted from under its owner is replaced.
//!
//! Everything happens in the write that changed the owner (no timers, no extra goroutine-like
//! loops): cheap, and a test can wait on the objects themselves. The steering annotations of
//! `workloads` (`ready-after`, `fail`) are handed down to the objects a workload owns, so its
//! Pods are not ready (or crash-loop) along with it. No container runs: Pod logs say so.

use serde_json::{Map, Value, json};

use crate::objects::{self, Mode, Propagation};
use crate::store::{NAMESPACE_KEY, State, meta_str};
use crate::util;
use crate::workloads::{FAIL, READY_AFTER};

pub const NODES_KEY: &str = "/nodes";
pub const PODS_KEY: &str = "/pods";
const DEPLOYMENTS: &str = "apps/deployments";
const REPLICASETS: &str = "apps/replicasets";
const STATEFULSETS: &str = "apps/statefulsets";
const DAEMONSETS: &str = "apps/daemonsets";
const JOBS: &str = "batch/jobs";
const RCS: &str = "/replicationcontrollers";
const CLAIMS: &str = "/persistentvolumeclaims";

/// How many Nodes a new cluster gets.
pub const NODE_COUNT: usize = 3;

/// Counters of the simulation (round-robin scheduling, Pod addresses).
#[derive(Debug, Default)]
pub struct Sim {
    next_node: usize,
    next_ip: u32,
}

/// How a Pod is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PodState {
    /// Scheduled, containers being created.
    Pending,
    /// Running and ready.
    Ready,
    /// Running, not ready yet (the `ready-after` delay).
    Starting,
    /// Running, containers crash-looping (the `fail` annotation on a workload's Pods).
    Crashing,
    /// Finished (a Job's Pods).
    Succeeded,
    /// Finished with an error (a bare Pod or a Job's Pod with the `fail` annotation).
    Failed,
}

fn annotation<'a>(o: &'a Value, k: &str) -> Option<&'a str> {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(k))
        .and_then(Value::as_str)
}

fn uid(o: &Value) -> &str {
    meta_str(o, "uid")
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some()
}

/// Node names of a cluster: `<cluster>-node-<n>` when that is a valid name, else `node-<n>`.
fn node_names(cluster: &str) -> Vec<String> {
    (1..=NODE_COUNT)
        .map(|i| {
            let n = format!("{cluster}-node-{i}");
            if util::validate_name(&n, util::NameRule::Subdomain).is_ok() {
                n
            } else {
                format!("node-{i}")
            }
        })
        .collect()
}

/// Creates the cluster's Nodes when it has none (a durable cluster keeps its own).
pub fn ensure_nodes(st: &mut State, cluster: &str) {
    if st.list(NODES_KEY, None, None).next().is_some() {
        return;
    }
    let Some(res) = st.registry.lookup("", "v1", "nodes") else {
        return;
    };
    let now = util::now_rfc3339();
    for (i, name) in node_names(cluster).into_iter().enumerate() {
        let ip = format!("172.18.0.{}", i + 2);
        let node = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "beta.kubernetes.io/arch": "amd64",
                    "node.kubernetes.io/instance-type": "devcluster-simulated",
                    "type": "simulated",
                },
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "devcluster.ferroflux.io/simulated": "true",
                },
            },
            "spec": {
                "podCIDR": format!("10.244.{i}.0/24"),
                "podCIDRs": [format!("10.244.{i}.0/24")],
            },
        });
        let Ok(mut node) = objects::admit(st, &res, "v1", None, None, node, Mode::Create) else {
            continue;
        };
        let resources = json!({
            "cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi",
            "hugepages-1Gi": "0", "hugepages-2Mi": "0",
        });
        let cond = |t: &str, s: &str, reason: &str, message: &str| {
            json!({ "type": t, "status": s, "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": now })
        };
        node["status"] = json!({
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated: no containers run)"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": ip },
                { "type": "Hostname", "address": name },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "simulated",
                "osImage": "ferroflux devcluster (simulated node)",
                "containerRuntimeVersion": "simulated://0",
                "kubeletVersion": crate::SERVER_VERSION,
                "kubeProxyVersion": crate::SERVER_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        });
        st.put(NODES_KEY, node);
    }
}

/// Ready, schedulable Nodes: (name, InternalIP).
fn ready_nodes(st: &State) -> Vec<(String, String)> {
    st.list(NODES_KEY, None, None)
        .filter(|n| {
            n.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true)
                && !deleting(n)
                && n.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c.get("type").and_then(Value::as_str) == Some("Ready")
                                && c.get("status").and_then(Value::as_str) == Some("True")
                        })
                    })
        })
        .map(|n| {
            let ip = n
                .pointer("/status/addresses")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                })
                .and_then(|x| x.get("address"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (meta_str(n, "name").to_string(), ip)
        })
        .collect()
}

fn node_ip(st: &State, node: &str) -> String {
    ready_nodes(st)
        .into_iter()
        .find(|(n, _)| n == node)
        .map(|(_, ip)| ip)
        .unwrap_or_default()
}

/// The status of a Pod in `state`, keeping the addresses it has.
pub fn pod_status(pod: &Value, state: PodState) -> Value {
    let now = util::now_rfc3339();
    let keep = |f: &str| pod.pointer(&format!("/status/{f}")).cloned();
    let start = keep("startTime").unwrap_or_else(|| json!(now));
    let host_ip = keep("hostIP").unwrap_or(json!(""));
    let pod_ip = keep("podIP").unwrap_or(json!(""));
    let ready = state == PodState::Ready;
    let running = matches!(
        state,
        PodState::Ready | PodState::Starting | PodState::Crashing
    );
    let finished = matches!(state, PodState::Succeeded | PodState::Failed);
    let uid_prefix: String = uid(pod).chars().take(12).collect();
    let containers: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let state_of = match state {
                PodState::Pending => json!({ "waiting": { "reason": "ContainerCreating" } }),
                PodState::Ready | PodState::Starting => json!({ "running": { "startedAt": start } }),
                PodState::Crashing => json!({ "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": "back-off restarting failed container (simulated by the devcluster.ferroflux.io/fail annotation)",
                } }),
                PodState::Succeeded => json!({ "terminated": {
                    "exitCode": 0, "reason": "Completed", "startedAt": start, "finishedAt": now,
                } }),
                PodState::Failed => json!({ "terminated": {
                    "exitCode": 1, "reason": "Error", "startedAt": start, "finishedAt": now,
                    "message": "simulated failure (devcluster.ferroflux.io/fail annotation)",
                } }),
            };
            let mut s = json!({
                "name": c.get("name").cloned().unwrap_or(json!("")),
                "image": c.get("image").cloned().unwrap_or(json!("")),
                "imageID": "",
                "ready": ready,
                "started": running,
                "restartCount": if state == PodState::Crashing { 1 } else { 0 },
                "state": state_of,
            });
            if state != PodState::Pending {
                s["containerID"] = json!(format!("simulated://{uid_prefix}"));
            }
            s
        })
        .collect();
    let t = |b: bool| if b { "True" } else { "False" };
    let cond = |ty: &str, status: &str| json!({ "type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": now });
    let mut conditions = vec![
        cond("PodReadyToStartContainers", t(state != PodState::Pending)),
        cond("Initialized", "True"),
        cond("Ready", t(ready)),
        cond("ContainersReady", t(ready)),
        cond("PodScheduled", "True"),
    ];
    if finished {
        for c in conditions.iter_mut().take(4).skip(2) {
            c["reason"] = json!("PodCompleted");
        }
    }
    let phase = match state {
        PodState::Pending => "Pending",
        PodState::Ready | PodState::Starting | PodState::Crashing => "Running",
        PodState::Succeeded => "Succeeded",
        PodState::Failed => "Failed",
    };
    let qos = if pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("resources")
                    .is_some_and(|r| r.as_object().is_some_and(|m| !m.is_empty()))
            })
        }) {
        "Burstable"
    } else {
        "BestEffort"
    };
    let mut s = json!({
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{ "ip": host_ip }],
        "startTime": start,
        "containerStatuses": containers,
        "qosClass": qos,
    });
    if state != PodState::Pending && !pod_ip.as_str().is_some_and(str::is_empty) {
        s["podIP"] = pod_ip.clone();
        s["podIPs"] = json!([{ "ip": pod_ip }]);
    }
    s
}

/// The state a Pod settles in, from the steering annotations it carries and who owns it. Pods
/// that are not restarted (a Job's, or `restartPolicy: Never`/`OnFailure`, as `helm test` and
/// `kubectl run --restart=Never` make them) complete, as if their command exited 0.
fn settled_state(pod: &Value, owner_kind: &str) -> PodState {
    let fail = annotation(pod, FAIL) == Some("true");
    let job = owner_kind == "Job"
        || matches!(
            pod.pointer("/spec/restartPolicy").and_then(Value::as_str),
            Some("Never" | "OnFailure")
        );
    match (fail, job, owner_kind.is_empty()) {
        (true, true, _) | (true, false, true) => PodState::Failed,
        (true, false, false) => PodState::Crashing,
        (false, true, _) => PodState::Succeeded,
        _ if annotation(pod, READY_AFTER)
            .and_then(util::parse_duration_ms)
            .is_some_and(|ms| ms > 0) =>
        {
            PodState::Starting
        }
        _ => PodState::Ready,
    }
}

fn controller_kind(pod: &Value) -> String {
    controller_of(pod)
        .and_then(|r| r.get("kind").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string()
}

fn controller_of(o: &Value) -> Option<&Value> {
    o.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// Schedules a Pod that has no Node yet and starts it: a Pending write, then the settled state
/// (two events for watchers, as a kubelet reports them). A Pod with a Node is left to its state.
pub fn run_pod(st: &mut State, ns: &str, name: &str) {
    let Some(pod) = st.get(PODS_KEY, ns, name).cloned() else {
        return;
    };
    if deleting(&pod)
        || pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .is_some_and(|p| p != "Pending")
    {
        return;
    }
    if pod.pointer("/status/containerStatuses").is_some()
        && pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    {
        // Already started once (a delayed Pod waiting for its readiness).
        return;
    }
    let mut next = (*pod).clone();
    let node = match pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(n) => Some((n.to_string(), node_ip(st, n))),
        // A Pod for another scheduler waits for it to post a Binding, as it would in a cluster
        // that does not run that scheduler.
        None if pod
            .pointer("/spec/schedulerName")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty() && s != "default-scheduler") =>
        {
            if pod.pointer("/status/phase").is_none() {
                next["status"] = json!({ "phase": "Pending", "qosClass": "BestEffort" });
                st.put(PODS_KEY, next);
            }
            return;
        }
        None => {
            let nodes = ready_nodes(st);
            if nodes.is_empty() {
                None
            } else {
                let i = st.sim.next_node % nodes.len();
                st.sim.next_node = st.sim.next_node.wrapping_add(1);
                Some(nodes[i].clone())
            }
        }
    };
    let Some((node, host_ip)) = node else {
        let now = util::now_rfc3339();
        next["status"] = json!({
            "phase": "Pending",
            "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/0 nodes are available: no Ready node in this devcluster.",
                "lastProbeTime": null, "lastTransitionTime": now,
            }],
            "qosClass": "BestEffort",
        });
        st.put(PODS_KEY, next);
        return;
    };
    let n = st.sim.next_ip;
    st.sim.next_ip = st.sim.next_ip.wrapping_add(1);
    let pod_ip = format!("10.244.{}.{}", (n / 250) % 250, n % 250 + 2);
    if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(node));
    }
    next["status"] = json!({ "hostIP": host_ip, "podIP": pod_ip });
    next["status"] = pod_status(&next, PodState::Pending);
    next["status"]["podIP"] = json!(pod_ip);
    let pending = st.put(PODS_KEY, next);
    let state = settled_state(&pending, &controller_kind(&pending));
    let mut running = (*pending).clone();
    running["status"] = pod_status(&pending, state);
    if let Some(m) = running.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    st.put(PODS_KEY, running);
    if state == PodState::Starting
        && let Some(ms) = annotation(&pending, READY_AFTER).and_then(util::parse_duration_ms)
    {
        st.pending_ready.push(crate::workloads::Pending {
            remove: false,
            after: std::time::Duration::from_millis(ms),
            key: PODS_KEY.to_string(),
            ns: ns.to_string(),
            name: name.to_string(),
            generation: pending
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1),
        });
    }
}

/// After `key/ns/name` was written: what its controller does (owned objects created, scaled,
/// replaced; a new Pod scheduled and started).
pub fn after_write(st: &mut State, key: &str, ns: &str, name: &str) {
    match key {
        DEPLOYMENTS => deployment(st, ns, name),
        REPLICASETS | RCS => replica_set(st, key, ns, name),
        STATEFULSETS => stateful_set(st, ns, name),
        DAEMONSETS => daemon_set(st, ns, name),
        JOBS => job(st, ns, name),
        PODS_KEY => run_pod(st, ns, name),
        _ => {}
    }
}

/// After a Pod went away: its controller replaces it (unless the controller is going too).
pub fn after_pod_removed(st: &mut State, pod: &Value) {
    let Some(owner) = controller_of(pod) else {
        return;
    };
    let Some(owner_uid) = owner.get("uid").and_then(Value::as_str) else {
        return;
    };
    let Some((key, ns, name)) = st.by_uid(owner_uid) else {
        return;
    };
    if st.get(&key, &ns, &name).is_some_and(|o| !deleting(o)) {
        after_write(st, &key, &ns, &name);
    }
}

fn owner_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta_str(owner, "name"),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The steering annotations of `owner`, handed down to what it owns.
fn steering(owner: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for k in [FAIL, READY_AFTER] {
        if let Some(v) = annotation(owner, k) {
            m.insert(k.into(), json!(v));
        }
    }
    m
}

/// Kubernetes' `SafeEncodeString` alphabet (no vowels, no look-alikes), for template hashes.
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A short hash of a pod template, as `pod-template-hash` labels carry (FNV-1a of its JSON).
fn template_hash(template: &Value) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in serde_json::to_vec(template).unwrap_or_default() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|d| SAFE[usize::from(d) % SAFE.len()] as char)
        .collect()
}

fn replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0)
}

/// Creates an object the simulated controllers own, through the same admission as a client's.
fn create_owned(st: &mut State, key: &str, obj: Value) -> Option<std::sync::Arc<Value>> {
    let res = st.registry.by_key(key)?;
    let ns = meta_str(&obj, "namespace").to_string();
    if st.get(NAMESPACE_KEY, "", &ns).is_none_or(|n| deleting(n)) {
        return None;
    }
    let mut obj = objects::admit(st, &res, "v1", Some(&ns), None, obj, Mode::Create).ok()?;
    if key != PODS_KEY
        && let Some(p) = crate::workloads::simulate(st, &res, None, &mut obj)
    {
        st.pending_ready.push(p);
    }
    Some(st.put(key, obj))
}

fn update_owned(st: &mut State, key: &str, mut obj: Value) -> Option<std::sync::Arc<Value>> {
    let res = st.registry.by_key(key)?;
    let old = st
        .get(key, meta_str(&obj, "namespace"), meta_str(&obj, "name"))?
        .clone();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    let mut next = objects::admit(
        st,
        &res,
        "v1",
        Some(meta_str(&old, "namespace")),
        Some(meta_str(&old, "name")),
        obj,
        Mode::Update(&old),
    )
    .ok()?;
    if let Some(p) = crate::workloads::simulate(st, &res, Some(&old), &mut next) {
        st.pending_ready.push(p);
    }
    util::set_path(
        &mut next,
        &["metadata", "resourceVersion"],
        json!(meta_str(&old, "resourceVersion")),
    );
    if next == *old {
        return Some(old);
    }
    Some(st.put(key, next))
}

/// Objects of `key` in `ns` whose controller is `owner_uid`.
fn owned(st: &State, key: &str, owner_uid: &str) -> Vec<std::sync::Arc<Value>> {
    st.dependents_of(owner_uid)
        .into_iter()
        .filter(|(k, _, _)| k == key)
        .filter_map(|(k, n, nm)| st.get(&k, &n, &nm).cloned())
        .filter(|o| {
            controller_of(o)
                .and_then(|r| r.get("uid"))
                .and_then(Value::as_str)
                == Some(owner_uid)
        })
        .collect()
}

fn deployment(st: &mut State, ns: &str, name: &str) {
    let Some(d) = st.get(DEPLOYMENTS, ns, name).cloned() else {
        return;
    };
    if deleting(&d) {
        return;
    }
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template);
    let rs_name = format!("{name}-{hash}");
    let sets = owned(st, REPLICASETS, uid(&d));
    let revision_of = |o: &Value| {
        annotation(o, "deployment.kubernetes.io/revision")
            .and_then(|r| r.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let max_revision = sets.iter().map(|s| revision_of(s)).max().unwrap_or(0);
    let n = replicas(&d);
    let current = sets
        .iter()
        .find(|s| meta_str(s, "name") == rs_name)
        .cloned();
    let revision = match &current {
        Some(c) if revision_of(c) == max_revision => max_revision,
        _ => max_revision + 1,
    };
    // The new ReplicaSet carries the whole scale; the old ones are scaled to zero (a rollout
    // that completes at once, replacing their Pods).
    let mut annotations = steering(&d);
    annotations.insert(
        "deployment.kubernetes.io/revision".into(),
        json!(revision.to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".into(),
        json!(n.to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".into(),
        json!((n + 1).to_string()),
    );
    if let Some(cause) = annotation(&d, "kubernetes.io/change-cause") {
        annotations.insert("kubernetes.io/change-cause".into(), json!(cause));
    }
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert("pod-template-hash".into(), json!(hash));
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    util::set_path(
        &mut selector,
        &["matchLabels", "pod-template-hash"],
        json!(hash),
    );
    let mut rs_template = template.clone();
    util::set_path(
        &mut rs_template,
        &["metadata", "labels"],
        Value::Object(labels.clone()),
    );
    let desired = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs_name,
            "namespace": ns,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(&d, "apps/v1", "Deployment")],
        },
        "spec": {
            "replicas": n,
            "minReadySeconds": d.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0)),
            "selector": selector,
            "template": rs_template,
        },
    });
    match current {
        None => {
            if let Some(rs) = create_owned(st, REPLICASETS, desired) {
                replica_set(st, REPLICASETS, ns, meta_str(&rs, "name"));
            }
        }
        Some(c) => {
            let mut next = (*c).clone();
            util::set_path(&mut next, &["spec", "replicas"], json!(n));
            util::set_path(
                &mut next,
                &["metadata", "annotations"],
                desired["metadata"]["annotations"].clone(),
            );
            if next != *c {
                update_owned(st, REPLICASETS, next);
            }
            replica_set(st, REPLICASETS, ns, &rs_name);
        }
    }
    let mut old: Vec<std::sync::Arc<Value>> = sets
        .into_iter()
        .filter(|s| meta_str(s, "name") != rs_name)
        .collect();
    for s in &old {
        if replicas(s) != 0 {
            let mut next = (**s).clone();
            util::set_path(&mut next, &["spec", "replicas"], json!(0));
            update_owned(st, REPLICASETS, next);
            replica_set(st, REPLICASETS, ns, meta_str(s, "name"));
        }
    }
    // revisionHistoryLimit: the oldest scaled-down ReplicaSets beyond it go.
    let limit = d
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10)
        .max(0) as usize;
    old.sort_by_key(|s| revision_of(s));
    if old.len() > limit {
        for s in &old[..old.len() - limit] {
            objects::delete_object(
                st,
                REPLICASETS,
                ns,
                meta_str(s, "name"),
                Propagation::Background,
            );
        }
    }
    // The revision annotation kube-controller-manager writes (`kubectl rollout undo` patches
    // it with `replace`, so it must be there). Not recorded in managedFields (the real one
    // records an Update by kube-controller-manager): appliers never own it either way.
    let mut next = (*d).clone();
    util::set_path(
        &mut next,
        &[
            "metadata",
            "annotations",
            "deployment.kubernetes.io/revision",
        ],
        json!(revision.to_string()),
    );
    if next != *d {
        st.put(DEPLOYMENTS, next);
    }
}

/// A free Pod name with a random 5-character suffix, as generateName makes them (the API
/// server retries a name that is taken; so does this).
fn pod_name(st: &State, ns: &str, prefix: &str) -> String {
    loop {
        let name = format!("{prefix}-{}", util::name_suffix());
        if st.get(PODS_KEY, ns, &name).is_none() {
            return name;
        }
    }
}

fn pod_from_template(
    owner: &Value,
    api_version: &str,
    kind: &str,
    name: String,
    ns: &str,
    extra_labels: Map<String, Value>,
    node: Option<&str>,
) -> Value {
    let template = owner
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.extend(extra_labels);
    let mut annotations = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.extend(steering(owner));
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    if let Some(s) = spec.as_object_mut() {
        for (k, v) in [
            (
                "restartPolicy",
                json!(if kind == "Job" { "Never" } else { "Always" }),
            ),
            ("terminationGracePeriodSeconds", json!(30)),
            ("dnsPolicy", json!("ClusterFirst")),
            ("schedulerName", json!("default-scheduler")),
            ("serviceAccountName", json!("default")),
            ("securityContext", json!({})),
        ] {
            s.entry(k).or_insert(v);
        }
        if let Some(n) = node {
            s.insert("nodeName".into(), json!(n));
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{}-", meta_str(owner, "name")),
            "namespace": ns,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(owner, api_version, kind)],
        },
        "spec": spec,
    })
}

fn start_pod(st: &mut State, pod: Value) {
    let ns = meta_str(&pod, "namespace").to_string();
    if let Some(p) = create_owned(st, PODS_KEY, pod) {
        let name = meta_str(&p, "name").to_string();
        run_pod(st, &ns, &name);
    }
}

/// Deletes Pods (gracefully, as the API server deletes scheduled Pods).
fn remove_pods(st: &mut State, pods: &[std::sync::Arc<Value>]) {
    for p in pods {
        objects::delete_object(
            st,
            PODS_KEY,
            meta_str(p, "namespace"),
            meta_str(p, "name"),
            Propagation::Background,
        );
    }
}

/// A ReplicaSet or ReplicationController: as many live Pods as replicas.
fn replica_set(st: &mut State, key: &str, ns: &str, name: &str) {
    let Some(rs) = st.get(key, ns, name).cloned() else {
        return;
    };
    if deleting(&rs) {
        return;
    }
    let (api_version, kind) = if key == RCS {
        ("v1", "ReplicationController")
    } else {
        ("apps/v1", "ReplicaSet")
    };
    let mut pods: Vec<_> = owned(st, PODS_KEY, uid(&rs))
        .into_iter()
        .filter(|p| !deleting(p))
        .collect();
    let want = replicas(&rs) as usize;
    if pods.len() > want {
        pods.sort_by(|a, b| {
            meta_str(b, "creationTimestamp")
                .cmp(meta_str(a, "creationTimestamp"))
                .then(meta_str(b, "name").cmp(meta_str(a, "name")))
        });
        let extra: Vec<_> = pods.drain(..pods.len() - want).collect();
        remove_pods(st, &extra);
    }
    for _ in pods.len()..want {
        let pod = pod_from_template(
            &rs,
            api_version,
            kind,
            pod_name(st, ns, name),
            ns,
            Map::new(),
            None,
        );
        start_pod(st, pod);
    }
}

fn stateful_set(st: &mut State, ns: &str, name: &str) {
    let Some(s) = st.get(STATEFULSETS, ns, name).cloned() else {
        return;
    };
    if deleting(&s) {
        return;
    }
    let template = s.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let revision = format!("{name}-{}", template_hash(&template));
    let want = replicas(&s) as usize;
    let pods = owned(st, PODS_KEY, uid(&s));
    for p in &pods {
        let ordinal = meta_str(p, "name")
            .strip_prefix(&format!("{name}-"))
            .and_then(|o| o.parse::<usize>().ok());
        let stale = p
            .pointer("/metadata/labels/controller-revision-hash")
            .and_then(Value::as_str)
            != Some(revision.as_str());
        if ordinal.is_none_or(|o| o >= want) {
            remove_pods(st, std::slice::from_ref(p));
        } else if stale && !deleting(p) {
            // A rolling update recreates the Pod with the new revision under the same name.
            objects::remove_now(st, PODS_KEY, ns, meta_str(p, "name"));
        }
    }
    let claims = s
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for i in 0..want {
        let pod_name = format!("{name}-{i}");
        for c in &claims {
            let claim_name = format!("{}-{pod_name}", meta_str(c, "name"));
            if st.get(CLAIMS, ns, &claim_name).is_none() {
                let mut claim = json!({
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": { "name": claim_name, "namespace": ns,
                                  "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})) },
                    "spec": c.get("spec").cloned().unwrap_or(json!({})),
                });
                if let Some(l) = claim
                    .pointer_mut("/metadata/labels")
                    .and_then(Value::as_object_mut)
                {
                    l.retain(|_, v| v.is_string());
                }
                create_owned(st, CLAIMS, claim);
            }
        }
        if st.get(PODS_KEY, ns, &pod_name).is_some() {
            continue;
        }
        let mut extra = Map::new();
        extra.insert("controller-revision-hash".into(), json!(revision));
        extra.insert("statefulset.kubernetes.io/pod-name".into(), json!(pod_name));
        extra.insert("apps.kubernetes.io/pod-index".into(), json!(i.to_string()));
        let mut pod = pod_from_template(
            &s,
            "apps/v1",
            "StatefulSet",
            pod_name.clone(),
            ns,
            extra,
            None,
        );
        util::set_path(&mut pod, &["spec", "hostname"], json!(pod_name));
        if let Some(svc) = s
            .pointer("/spec/serviceName")
            .and_then(Value::as_str)
            .filter(|x| !x.is_empty())
        {
            util::set_path(&mut pod, &["spec", "subdomain"], json!(svc));
        }
        start_pod(st, pod);
    }
}

fn daemon_set(st: &mut State, ns: &str, name: &str) {
    let Some(ds) = st.get(DAEMONSETS, ns, name).cloned() else {
        return;
    };
    if deleting(&ds) {
        return;
    }
    let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template);
    let nodes = ready_nodes(st);
    let pods: Vec<_> = owned(st, PODS_KEY, uid(&ds))
        .into_iter()
        .filter(|p| !deleting(p))
        .collect();
    let mut covered = Vec::new();
    for p in &pods {
        let node = p
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let stale = p
            .pointer("/metadata/labels/controller-revision-hash")
            .and_then(Value::as_str)
            != Some(hash.as_str());
        if stale || !nodes.iter().any(|(n, _)| n == node) || covered.contains(&node.to_string()) {
            objects::remove_now(st, PODS_KEY, ns, meta_str(p, "name"));
        } else {
            covered.push(node.to_string());
        }
    }
    for (node, _) in &nodes {
        if covered.contains(node) {
            continue;
        }
        let mut extra = Map::new();
        extra.insert("controller-revision-hash".into(), json!(hash));
        extra.insert(
            "pod-template-generation".into(),
            json!(
                ds.pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
                    .to_string()
            ),
        );
        let pod = pod_from_template(
            &ds,
            "apps/v1",
            "DaemonSet",
            pod_name(st, ns, name),
            ns,
            extra,
            Some(node),
        );
        start_pod(st, pod);
    }
    // The status counts Nodes (workloads computes it for one).
    let count = nodes.len();
    let Some(cur) = st.get(DAEMONSETS, ns, name).cloned() else {
        return;
    };
    let mut next = (*cur).clone();
    let ready = next
        .pointer("/status/numberReady")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        > 0;
    for f in [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "updatedNumberScheduled",
    ] {
        util::set_path(&mut next, &["status", f], json!(count));
    }
    for f in ["numberReady", "numberAvailable"] {
        util::set_path(
            &mut next,
            &["status", f],
            json!(if ready { count } else { 0 }),
        );
    }
    if next != *cur {
        if let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        st.put(DAEMONSETS, next);
    }
}

fn job(st: &mut State, ns: &str, name: &str) {
    let Some(j) = st.get(JOBS, ns, name).cloned() else {
        return;
    };
    if deleting(&j) || j.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let pods = owned(st, PODS_KEY, uid(&j));
    let completions = j
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    // A failing Job ran one Pod that failed; a completing one ran one Pod per completion.
    let want = if annotation(&j, FAIL) == Some("true") {
        1
    } else {
        completions
    };
    for _ in pods.len()..want {
        let mut extra = Map::new();
        extra.insert("batch.kubernetes.io/job-name".into(), json!(name));
        extra.insert("job-name".into(), json!(name));
        extra.insert("batch.kubernetes.io/controller-uid".into(), json!(uid(&j)));
        extra.insert("controller-uid".into(), json!(uid(&j)));
        let pod = pod_from_template(
            &j,
            "batch/v1",
            "Job",
            pod_name(st, ns, name),
            ns,
            extra,
            None,
        );
        start_pod(st, pod);
    }
}

/// After a delayed workload became ready: its Pods become ready too.
pub fn mark_pod_ready(st: &mut State, ns: &str, name: &str) {
    let Some(pod) = st.get(PODS_KEY, ns, name).cloned() else {
        return;
    };
    if deleting(&pod) || annotation(&pod, FAIL) == Some("true") {
        return;
    }
    let state = match settled_state(&pod, &controller_kind(&pod)) {
        PodState::Succeeded => PodState::Succeeded,
        _ => PodState::Ready,
    };
    let mut next = (*pod).clone();
    next["status"] = pod_status(&pod, state);
    if let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    st.put(PODS_KEY, next);
}

/// Whether deleting this Pod is graceful: a scheduled Pod that has not finished is marked and
/// removed by its (simulated) kubelet right after; others go at once, as the API server does.
pub fn graceful_pod(pod: &Value, grace: Option<i64>) -> bool {
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let grace = grace
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    scheduled && !finished && grace > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_hashes_use_the_safe_alphabet() {
        let h = template_hash(&json!({ "spec": { "containers": [{ "name": "a" }] } }));
        assert!(!h.is_empty() && h.bytes().all(|b| SAFE.contains(&b)), "{h}");
        assert_ne!(h, template_hash(&json!({ "spec": {} })));
    }

    #[test]
    fn settled_states() {
        let pod = |a: Value| json!({ "metadata": { "annotations": a } });
        assert_eq!(
            settled_state(&pod(json!({})), "ReplicaSet"),
            PodState::Ready
        );
        assert_eq!(
            settled_state(&pod(json!({ FAIL: "true" })), "ReplicaSet"),
            PodState::Crashing
        );
        assert_eq!(
            settled_state(&pod(json!({ FAIL: "true" })), ""),
            PodState::Failed
        );
        assert_eq!(settled_state(&pod(json!({})), "Job"), PodState::Succeeded);
        assert_eq!(
            settled_state(&pod(json!({ READY_AFTER: "5s" })), "ReplicaSet"),
            PodState::Starting
        );
    }
}
