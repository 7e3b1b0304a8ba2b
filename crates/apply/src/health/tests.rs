//! Unit tests of the health rules (kstatus) against live objects' status.

use super::*;
use serde_json::json;

fn deploy(spec_replicas: i64, status: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "generation": 2},
        "spec": {"replicas": spec_replicas, "progressDeadlineSeconds": 600},
        "status": status,
    })
}

#[test]
fn deployment_becomes_current_when_available() {
    let ready = deploy(
        2,
        json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
               "availableReplicas": 2, "conditions": [
                 {"type": "Available", "status": "True"},
                 {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}),
    );
    assert_eq!(assess(&ready).status, Status::Current);

    let old_generation = deploy(2, json!({"observedGeneration": 1}));
    let h = assess(&old_generation);
    assert_eq!(h.status, Status::InProgress);
    assert_eq!(
        h.message,
        "Deployment generation is 2, but latest observed generation is 1"
    );

    let scaling = deploy(3, json!({"observedGeneration": 2, "replicas": 2}));
    assert_eq!(assess(&scaling).message, "Replicas: 2/3");

    let deadline = deploy(
        1,
        json!({"observedGeneration": 2, "replicas": 1, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
    );
    assert_eq!(assess(&deadline).status, Status::Failed);
}

#[test]
fn generic_conditions_decide_for_custom_resources() {
    let stalled = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "generation": 1},
        "status": {"observedGeneration": 1, "conditions": [
            {"type": "Stalled", "status": "True", "message": "bad config"}]}});
    assert_eq!(
        assess(&stalled),
        Health {
            status: Status::Failed,
            message: "bad config".into()
        }
    );

    let not_ready = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "message": "waiting"}]}});
    assert_eq!(assess(&not_ready).status, Status::InProgress);

    let plain =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(assess(&plain).status, Status::Current);

    // A Flux object its controller has not reconciled yet: on an API server its CRD's default
    // status (observedGeneration -1) makes it in progress; without that default, the same.
    let fresh = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "h", "generation": 1}});
    assert_eq!(
        assess(&fresh),
        Health {
            status: Status::InProgress,
            message: "HelmRelease generation is 1, but latest observed generation is -1".into()
        }
    );
    let defaulted = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "h", "generation": 1}, "status": {"observedGeneration": -1}});
    assert_eq!(assess(&defaulted), assess(&fresh));

    let deleting = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
    assert_eq!(assess(&deleting).status, Status::Terminating);
}

#[test]
fn kind_specific_rules() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
    assert_eq!(assess(&job).message, "Job Completed. succeeded: 1/1");
    let failed_job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "status": {"failed": 3, "conditions": [{"type": "Failed", "status": "True"}]}});
    assert_eq!(assess(&failed_job).status, Status::Failed);

    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
        "status": {"phase": "Pending"}});
    assert_eq!(assess(&pvc).message, "PVC is not Bound. phase: Pending");

    let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"type": "LoadBalancer"}});
    assert_eq!(assess(&lb).status, Status::InProgress);

    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "status": {"conditions": [{"type": "Established", "status": "True"}]}});
    assert_eq!(assess(&crd).status, Status::Current);

    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "d", "generation": 1}, "status": {"observedGeneration": 1,
        "desiredNumberScheduled": 2, "currentNumberScheduled": 2, "updatedNumberScheduled": 2,
        "numberAvailable": 1, "numberReady": 1}});
    assert_eq!(assess(&ds).message, "Available: 1/2");

    let crashing = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    assert_eq!(
        assess(&crashing).message,
        "Containers in CrashLoop state: app"
    );

    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1,
        "currentReplicas": 1, "currentRevision": "a", "updateRevision": "a"}});
    assert_eq!(assess(&sts).status, Status::Current);
}
