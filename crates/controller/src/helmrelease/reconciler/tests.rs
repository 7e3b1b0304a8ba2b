use super::*;

fn release(status: Value) -> HelmRelease {
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps", "generation": 3},
        "spec": {"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"}},
        "status": status,
    }))
    .unwrap()
}

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "observedGeneration": 3, "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

#[test]
fn ready_follows_remediated_then_released() {
    let mut hr = release(json!({"conditions": [
        cond("Released", "False", "UpgradeFailed", "Helm upgrade failed for release apps/podinfo with chart podinfo@6.4.0: boom"),
        cond("Remediated", "True", "RollbackSucceeded", "Helm rollback to previous release apps/podinfo.v1 with chart podinfo@6.3.5 succeeded"),
    ]}));
    summarize(&mut hr);
    let ready = find_condition(c_conditions(&hr), READY).unwrap().clone();
    // A remediation is never Ready, whatever its own status.
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "RollbackSucceeded");

    let mut hr = release(json!({"conditions": [
        cond("Released", "True", "InstallSucceeded", "Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.3.5"),
        cond("Stalled", "True", "RetriesExceeded", "Failed to install after 1 attempt(s)"),
        cond("TestSuccess", "True", "TestSucceeded", "x"),
    ]}));
    summarize(&mut hr);
    let conditions = c_conditions(&hr);
    let ready = find_condition(conditions, READY).unwrap();
    assert_eq!(ready.status, "True");
    assert_eq!(
        ready.message,
        "Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.3.5"
    );
    assert!(find_condition(conditions, STALLED).is_none());
    // Tests are not enabled: their condition goes.
    assert!(find_condition(conditions, TEST_SUCCESS).is_none());
}

#[test]
fn requests_count_only_when_they_match_requested_at_and_are_new() {
    let mut hr = release(json!({}));
    hr.metadata.annotations = Some(
        [
            (RECONCILE_REQUESTED_AT.to_string(), "t1".to_string()),
            (FORCE_REQUESTED_AT.to_string(), "t1".to_string()),
            (RESET_REQUESTED_AT.to_string(), "t0".to_string()),
        ]
        .into_iter()
        .collect(),
    );
    let mut status = HelmReleaseStatus::default();
    let r = requests(&hr, &mut status);
    assert!(r.force);
    assert!(!r.reset);
    assert_eq!(status.last_handled_force_at.as_deref(), Some("t1"));
    // Handled once: the same token does not force again.
    let r = requests(&hr, &mut status);
    assert!(!r.force);
}

#[test]
fn crd_policies_default_as_flux() {
    assert_eq!(crd_policy(None, None, CrdPolicy::Create), CrdPolicy::Create);
    assert_eq!(
        crd_policy(None, Some(true), CrdPolicy::Create),
        CrdPolicy::Skip
    );
    assert_eq!(
        crd_policy(Some(CrdsPolicy::CreateReplace), None, CrdPolicy::Skip),
        CrdPolicy::CreateReplace
    );
}

#[test]
fn failures_back_off_as_flux_s_rate_limiter() {
    let delays: Vec<u64> = (0..6).map(|n| backoff(n).as_millis() as u64).collect();
    assert_eq!(delays, [750, 1500, 3000, 6000, 12000, 24000]);
    assert_eq!(backoff(11), Duration::from_secs(15 * 60), "capped at 15m");
    assert_eq!(backoff(u32::MAX), Duration::from_secs(15 * 60));
}
