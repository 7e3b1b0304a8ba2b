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

#[test]
fn only_a_new_artifact_wakes_the_releases_of_a_source() {
    let mut seen = BTreeMap::new();
    let rev = |r: &str| Some(r.to_string());
    assert!(
        !new_artifact(&mut seen, "flux-system/c", None),
        "a HelmChart just created, without an artifact"
    );
    assert!(
        !new_artifact(&mut seen, "flux-system/c", None),
        "a status write"
    );
    assert!(new_artifact(&mut seen, "flux-system/c", rev("1.0.0")));
    assert!(!new_artifact(&mut seen, "flux-system/c", rev("1.0.0")));
    assert!(new_artifact(&mut seen, "flux-system/c", rev("1.0.1")));
    assert!(!new_artifact(&mut seen, "flux-system/c", None), "withdrawn");
    assert!(
        new_artifact(&mut seen, "flux-system/c", rev("1.0.1")),
        "the same artifact back after it was withdrawn"
    );
    assert!(
        new_artifact(&mut seen, "flux-system/other", rev("1.0.1")),
        "first seen with an artifact (the watch's initial list)"
    );
}

#[test]
fn each_end_of_a_release_attempt_requeues_as_helm_controller_s_result() {
    let hour = Duration::from_secs(3600);
    let after = |e: Ended| requeue_after_release(&e, hour);
    assert_eq!(after(Ended::Ready(String::new())), Requeue::After(hour));
    assert_eq!(
        after(Ended::Retry {
            after: Duration::from_secs(300)
        }),
        Requeue::After(Duration::from_secs(300)),
        "RetryOnFailure: its retryInterval"
    );
    assert_eq!(after(Ended::MustRequeue), Requeue::RateLimited);
    assert_eq!(after(Ended::Failed), Requeue::RateLimited);
    assert_eq!(after(Ended::Stalled), Requeue::OnChange, "a terminal error");

    let dependency = Duration::from_secs(30);
    let wait = Failure::retry(hr_reason::SOURCE_NOT_READY, "not ready", dependency);
    assert_eq!(
        requeue_after_unmet(&Unmet::Wait(wait)),
        Requeue::After(dependency)
    );
    let error = Failure::retry(hr_reason::VALUES_ERROR, "no such ConfigMap", dependency);
    assert_eq!(
        requeue_after_unmet(&Unmet::Error(error)),
        Requeue::RateLimited
    );
    let stalled = Failure::stalled("InvalidDuration", "bad", Duration::from_secs(300));
    assert_eq!(
        requeue_after_unmet(&Unmet::Error(stalled)),
        Requeue::After(Duration::from_secs(300))
    );
}

/// The delays one release sees through a run of outcomes, as controller-runtime's queue with
/// Flux's `--min-retry-delay=750ms` / `--max-retry-delay=15m` gives them: each rate-limited
/// requeue doubles the last, any `RequeueAfter` (success, a wait, `retryInterval`) or terminal
/// end forgets the count, and other objects keep their own.
#[test]
fn the_failure_backoff_of_a_release_doubles_and_is_forgotten_on_success() {
    let queue = Queue::default();
    let key = "flux-system/podinfo";
    let ms = |d: Option<Duration>| d.map(|d| d.as_millis() as u64);
    let failing: Vec<_> = (0..4)
        .map(|_| ms(queue.next(key, Requeue::RateLimited)))
        .collect();
    assert_eq!(failing, [Some(750), Some(1500), Some(3000), Some(6000)]);
    assert_eq!(
        ms(queue.next("flux-system/other", Requeue::RateLimited)),
        Some(750),
        "counted per object"
    );
    let thirty = Duration::from_secs(30);
    assert_eq!(queue.next(key, Requeue::After(thirty)), Some(thirty));
    assert_eq!(ms(queue.next(key, Requeue::RateLimited)), Some(750));
    assert_eq!(ms(queue.next(key, Requeue::RateLimited)), Some(1500));
    assert_eq!(queue.next(key, Requeue::OnChange), None);
    assert_eq!(ms(queue.next(key, Requeue::RateLimited)), Some(750));
    for _ in 0..30 {
        queue.next(key, Requeue::RateLimited);
    }
    assert_eq!(
        queue.next(key, Requeue::RateLimited),
        Some(Duration::from_secs(15 * 60)),
        "capped at --max-retry-delay"
    );
}

#[test]
fn loaded_charts_are_shared_by_digest_and_the_oldest_is_dropped() {
    let charts = Charts::default();
    let chart = |version: &str| {
        let mut c = ferroflux_helm::Chart::default();
        c.metadata.version = version.to_string();
        Arc::new(c)
    };
    assert!(charts.get("sha256:a").is_none());
    let first = chart("1.0.0");
    charts.insert("sha256:a", first.clone());
    assert!(Arc::ptr_eq(&charts.get("sha256:a").unwrap(), &first));
    // A second load of the same digest (two releases raced) keeps the first.
    charts.insert("sha256:a", chart("1.0.0"));
    assert!(Arc::ptr_eq(&charts.get("sha256:a").unwrap(), &first));
    for i in 0..CHARTS_KEPT {
        charts.insert(&format!("sha256:{i}"), chart(&format!("1.0.{i}")));
    }
    assert!(charts.get("sha256:a").is_none(), "the oldest was dropped");
    assert_eq!(
        charts.get("sha256:0").unwrap().metadata.version,
        "1.0.0",
        "the others are kept"
    );
}
