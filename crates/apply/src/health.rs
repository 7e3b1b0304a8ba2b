//! Health of live objects, following the rules of kstatus (the library Flux's health checks use):
//! generic rules first (deletion, observed generation, `Reconciling` / `Stalled` conditions), then
//! the rules of each built-in kind, then a `Ready` condition, else the object is current.

use crate::object::{group_version, int_at, str_at};
use serde_json::Value;

mod custom;
pub use custom::CustomHealth;

/// The health of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Reconciled and healthy.
    Current,
    /// Still converging; may become Current.
    InProgress,
    /// Will not become healthy without a change.
    Failed,
    /// Being deleted.
    Terminating,
    /// Not in the cluster.
    NotFound,
    /// Cannot be told (a health expression that fails to evaluate).
    Unknown,
}

/// A status and the reason a person can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// Where the object stands.
    pub status: Status,
    /// Why, in words a person reads in the Kustomization's Ready message.
    pub message: String,
}

impl Health {
    fn new(status: Status, message: impl Into<String>) -> Self {
        Health {
            status,
            message: message.into(),
        }
    }
    fn current(message: impl Into<String>) -> Self {
        Health::new(Status::Current, message)
    }
    fn in_progress(message: impl Into<String>) -> Self {
        Health::new(Status::InProgress, message)
    }
    fn failed(message: impl Into<String>) -> Self {
        Health::new(Status::Failed, message)
    }
}

/// Computes the health of a live object.
pub fn assess(obj: &Value) -> Health {
    if let Some(h) = generic(obj) {
        return h;
    }
    let kind = str_at(obj, &["kind"]).unwrap_or("");
    let group = group_version(str_at(obj, &["apiVersion"]).unwrap_or("")).0;
    let specific = match (group, kind) {
        ("", "Service") => Some(service(obj)),
        ("", "Pod") => Some(pod(obj)),
        ("", "PersistentVolumeClaim") => Some(pvc(obj)),
        ("", "Secret" | "ConfigMap") | ("batch", "CronJob") => {
            Some(Health::current("Resource is always ready"))
        }
        ("apps", "StatefulSet") => Some(statefulset(obj)),
        ("apps" | "extensions", "DaemonSet") => Some(daemonset(obj)),
        ("apps" | "extensions", "Deployment") => Some(deployment(obj)),
        ("apps" | "extensions", "ReplicaSet") => Some(replicaset(obj)),
        ("policy", "PodDisruptionBudget") => {
            Some(Health::current("AllowedDisruptions has been computed."))
        }
        ("batch", "Job") => Some(job(obj)),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(crd(obj)),
        _ => None,
    };
    if let Some(h) = specific {
        return h;
    }
    if let Some(ready) = condition(obj, "Ready") {
        let message = ready.message.to_string();
        return match ready.status {
            "True" => Health::current(if message.is_empty() {
                "Resource is Ready".to_string()
            } else {
                message
            }),
            _ => Health::in_progress(message),
        };
    }
    Health::current("Resource is current")
}

struct Condition<'a> {
    status: &'a str,
    reason: &'a str,
    message: &'a str,
}

fn conditions(obj: &Value) -> impl Iterator<Item = (&str, Condition<'_>)> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("type")?.as_str()?,
                Condition {
                    status: c.get("status").and_then(Value::as_str).unwrap_or(""),
                    reason: c.get("reason").and_then(Value::as_str).unwrap_or(""),
                    message: c.get("message").and_then(Value::as_str).unwrap_or(""),
                },
            ))
        })
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<Condition<'a>> {
    conditions(obj).find(|(t, _)| *t == type_).map(|(_, c)| c)
}

fn generic(obj: &Value) -> Option<Health> {
    if str_at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|s| !s.is_empty()) {
        return Some(Health::new(
            Status::Terminating,
            "Resource scheduled for deletion",
        ));
    }
    let kind = str_at(obj, &["kind"]).unwrap_or("");
    // Flux's CRDs default `status` to `{observedGeneration: -1}`, so on an API server a Flux
    // object its controller has not reconciled yet reads as in progress. A cluster that applies
    // no schema defaults (the devcluster) leaves the status out: read it as that default.
    let group = group_version(str_at(obj, &["apiVersion"]).unwrap_or("")).0;
    if group.ends_with(".toolkit.fluxcd.io")
        && int_at(obj, &["status", "observedGeneration"]).is_none()
        && let Some(generation) = int_at(obj, &["metadata", "generation"])
    {
        return Some(Health::in_progress(format!(
            "{kind} generation is {generation}, but latest observed generation is -1"
        )));
    }
    if let (Some(generation), Some(observed)) = (
        int_at(obj, &["metadata", "generation"]),
        int_at(obj, &["status", "observedGeneration"]),
    ) && generation != observed
    {
        return Some(Health::in_progress(format!(
            "{kind} generation is {generation}, but latest observed generation is {observed}"
        )));
    }
    for (type_, c) in conditions(obj) {
        if c.status != "True" {
            continue;
        }
        match type_ {
            "Reconciling" => return Some(Health::in_progress(c.message)),
            "Stalled" => return Some(Health::failed(c.message)),
            _ => {}
        }
    }
    None
}

fn int_or(obj: &Value, path: &[&str], default: i64) -> i64 {
    int_at(obj, path).unwrap_or(default)
}

fn deployment(obj: &Value) -> Health {
    // Without progressDeadlineSeconds the controller never sets Progressing.
    let mut progressing = int_at(obj, &["spec", "progressDeadlineSeconds"]).is_none();
    let mut available = false;
    for (type_, c) in conditions(obj) {
        match type_ {
            "Progressing" => {
                if c.reason == "ProgressDeadlineExceeded" {
                    return Health::failed("Progress deadline exceeded");
                }
                if c.status == "True" && c.reason == "NewReplicaSetAvailable" {
                    progressing = true;
                }
            }
            "Available" if c.status == "True" => available = true,
            _ => {}
        }
    }
    let spec = int_or(obj, &["spec", "replicas"], 1);
    let replicas = int_or(obj, &["status", "replicas"], 0);
    let updated = int_or(obj, &["status", "updatedReplicas"], 0);
    let ready = int_or(obj, &["status", "readyReplicas"], 0);
    let avail = int_or(obj, &["status", "availableReplicas"], 0);
    if spec > replicas {
        return Health::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > updated {
        return Health::in_progress(format!("Updated: {updated}/{spec}"));
    }
    if replicas > spec {
        return Health::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if updated > avail {
        return Health::in_progress(format!("Available: {avail}/{updated}"));
    }
    if spec > ready {
        return Health::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if !progressing {
        return Health::in_progress("ReplicaSet not Available");
    }
    if !available {
        return Health::in_progress("Deployment not Available");
    }
    Health::current(format!("Deployment is available. Replicas: {replicas}"))
}

fn replicaset(obj: &Value) -> Health {
    if condition(obj, "ReplicaFailure").is_some_and(|c| c.status == "True") {
        return Health::in_progress("Replica Failure condition. Check Pods");
    }
    let spec = int_or(obj, &["spec", "replicas"], 1);
    let replicas = int_or(obj, &["status", "replicas"], 0);
    let ready = int_or(obj, &["status", "readyReplicas"], 0);
    let avail = int_or(obj, &["status", "availableReplicas"], 0);
    let labelled = int_or(obj, &["status", "fullyLabeledReplicas"], 0);
    if spec > labelled {
        return Health::in_progress(format!("Labelled: {labelled}/{spec}"));
    }
    if spec > avail {
        return Health::in_progress(format!("Available: {avail}/{spec}"));
    }
    if spec > ready {
        return Health::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if replicas > spec {
        return Health::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    Health::current(format!("ReplicaSet is available. Replicas: {replicas}"))
}

fn statefulset(obj: &Value) -> Health {
    if str_at(obj, &["spec", "updateStrategy", "type"]) == Some("OnDelete") {
        return Health::current("StatefulSet is using the ondelete update strategy");
    }
    let spec = int_or(obj, &["spec", "replicas"], 1);
    let ready = int_or(obj, &["status", "readyReplicas"], 0);
    let current = int_or(obj, &["status", "currentReplicas"], 0);
    let updated = int_or(obj, &["status", "updatedReplicas"], 0);
    let replicas = int_or(obj, &["status", "replicas"], 0);
    let partition = int_or(
        obj,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
        -1,
    );
    if spec > replicas {
        return Health::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > ready {
        return Health::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if replicas > spec {
        return Health::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if partition != -1 {
        if updated < spec - partition {
            return Health::in_progress(format!("updated: {updated}/{}", spec - partition));
        }
        return Health::current(format!("Partition rollout complete. updated: {updated}"));
    }
    if spec > current {
        return Health::in_progress(format!("current: {current}/{spec}"));
    }
    if str_at(obj, &["status", "currentRevision"]) != str_at(obj, &["status", "updateRevision"]) {
        return Health::in_progress("Waiting for updated revision to match current");
    }
    Health::current(format!(
        "All replicas scheduled as expected. Replicas: {replicas}"
    ))
}

fn daemonset(obj: &Value) -> Health {
    let kind = "DaemonSet";
    if int_at(obj, &["metadata", "generation"]).is_none() {
        return Health::in_progress(format!("{kind} metadata.generation not found"));
    }
    if int_at(obj, &["status", "observedGeneration"]).is_none() {
        return Health::in_progress(format!("{kind} status.observedGeneration not found"));
    }
    let desired = int_or(obj, &["status", "desiredNumberScheduled"], -1);
    let current = int_or(obj, &["status", "currentNumberScheduled"], 0);
    let updated = int_or(obj, &["status", "updatedNumberScheduled"], 0);
    let available = int_or(obj, &["status", "numberAvailable"], 0);
    let ready = int_or(obj, &["status", "numberReady"], 0);
    if desired == -1 {
        return Health::in_progress("Missing .status.desiredNumberScheduled");
    }
    if desired > current {
        return Health::in_progress(format!("Current: {current}/{desired}"));
    }
    if desired > updated {
        return Health::in_progress(format!("Updated: {updated}/{desired}"));
    }
    if desired > available {
        return Health::in_progress(format!("Available: {available}/{desired}"));
    }
    if desired > ready {
        return Health::in_progress(format!("Ready: {ready}/{desired}"));
    }
    Health::current(format!(
        "All replicas scheduled as expected. Replicas: {desired}"
    ))
}

fn pvc(obj: &Value) -> Health {
    match str_at(obj, &["status", "phase"]) {
        Some("Bound") => Health::current("PVC is Bound"),
        phase => Health::in_progress(format!(
            "PVC is not Bound. phase: {}",
            phase.unwrap_or("unknown")
        )),
    }
}

fn pod(obj: &Value) -> Health {
    match str_at(obj, &["status", "phase"]).unwrap_or("") {
        "Succeeded" => Health::current("Pod has completed successfully"),
        "Failed" => Health::current("Pod has completed, but not successfully"),
        "Running" => {
            if condition(obj, "Ready").is_some_and(|c| c.status == "True") {
                return Health::current("Pod is Ready");
            }
            let crashing: Vec<&str> = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|cs| {
                    cs.pointer("/state/waiting/reason").and_then(Value::as_str)
                        == Some("CrashLoopBackOff")
                })
                .filter_map(|cs| cs.get("name").and_then(Value::as_str))
                .collect();
            if !crashing.is_empty() {
                return Health::failed(format!(
                    "Containers in CrashLoop state: {}",
                    crashing.join(",")
                ));
            }
            Health::in_progress("Pod is running but is not Ready")
        }
        "Pending" => {
            // kstatus waits 15s before calling a pod unschedulable; we let the caller's
            // timeout decide instead of reading the wall clock here.
            Health::in_progress("Pod is in the Pending phase")
        }
        "" => Health::in_progress("Pod phase not available"),
        other => Health::failed(format!("unknown phase {other}")),
    }
}

fn job(obj: &Value) -> Health {
    let parallelism = int_or(obj, &["spec", "parallelism"], 1);
    let completions = int_or(obj, &["spec", "completions"], parallelism);
    let succeeded = int_or(obj, &["status", "succeeded"], 0);
    let active = int_or(obj, &["status", "active"], 0);
    let failed = int_or(obj, &["status", "failed"], 0);
    for (type_, c) in conditions(obj) {
        if c.status != "True" {
            continue;
        }
        match type_ {
            "Complete" => {
                return Health::current(format!(
                    "Job Completed. succeeded: {succeeded}/{completions}"
                ));
            }
            "Failed" => {
                return Health::failed(format!("Job Failed. failed: {failed}/{completions}"));
            }
            "Suspended" => return Health::current("Job is suspended"),
            _ => {}
        }
    }
    if str_at(obj, &["status", "startTime"])
        .unwrap_or("")
        .is_empty()
    {
        return Health::in_progress("Job not started");
    }
    Health::current(format!(
        "Job in progress. success:{succeeded}, active: {active}, failed: {failed}"
    ))
}

fn service(obj: &Value) -> Health {
    let type_ = str_at(obj, &["spec", "type"]).unwrap_or("ClusterIP");
    if type_ == "LoadBalancer" && str_at(obj, &["spec", "clusterIP"]).unwrap_or("").is_empty() {
        return Health::in_progress("ClusterIP not set. Service type: LoadBalancer");
    }
    Health::current("Service is ready")
}

fn crd(obj: &Value) -> Health {
    for (type_, c) in conditions(obj) {
        if type_ == "NamesAccepted" && c.status == "False" {
            return Health::failed(format!("{}: {}", c.reason, c.message));
        }
        if type_ == "Established" {
            if c.status == "False" && c.reason != "Installing" {
                return Health::failed(format!("{}: {}", c.reason, c.message));
            }
            if c.status == "True" {
                return Health::current("CRD is established");
            }
        }
    }
    Health::in_progress("Install in progress")
}

#[cfg(test)]
mod tests;
