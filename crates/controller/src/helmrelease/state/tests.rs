use super::*;
use serde_json::{Value, json};

fn release(spec: Value, status: Value) -> HelmRelease {
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps", "generation": 2},
        "spec": spec,
        "status": status,
    }))
    .unwrap()
}

fn spec() -> Value {
    json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"}})
}

fn observed(version: i64, status: &str) -> Observed {
    Observed {
        name: "podinfo".into(),
        namespace: "apps".into(),
        version,
        status: status.into(),
        chart_name: "podinfo".into(),
        chart_version: "6.3.5".into(),
        config_digest: "sha256:aa".into(),
        digest: format!("sha256:r{version}"),
        first_deployed: "2026-01-01T00:00:00Z".into(),
        last_deployed: "2026-01-01T00:00:00Z".into(),
        ..Default::default()
    }
}

fn desired() -> Desired<'static> {
    Desired {
        chart_name: "podinfo",
        chart_version: "6.3.5",
        config_digest: "sha256:aa",
        post_renderers_digest: None,
        common_metadata_digest: None,
    }
}

fn history(o: &Observed) -> Value {
    json!([serde_json::to_value(o.snapshot(Some(ReleaseAction::Install))).unwrap()])
}

#[test]
fn states_follow_storage_and_the_history() {
    let hr = release(spec(), json!({}));
    assert!(matches!(determine(&hr, None, &desired()), State::Absent(_)));
    let pending = observed(1, "pending-install");
    assert_eq!(
        determine(&hr, Some(&pending), &desired()),
        State::Locked("release with status 'pending-install'".into())
    );
    // Helm installed it, this object never did: taken over by an upgrade.
    let theirs = observed(1, "deployed");
    assert_eq!(
        determine(&hr, Some(&theirs), &desired()),
        State::Unmanaged("found existing release in storage".into())
    );
    assert_eq!(
        action_for_state(&hr, &State::Unmanaged(String::new()), false),
        Next::Upgrade
    );

    let ours = observed(1, "deployed");
    let hr = release(
        spec(),
        json!({"observedGeneration": 2, "history": history(&ours)}),
    );
    assert_eq!(determine(&hr, Some(&ours), &desired()), State::InSync);
    let newer = Desired {
        chart_version: "6.4.0",
        ..desired()
    };
    assert_eq!(
        determine(&hr, Some(&ours), &newer),
        State::OutOfSync("release chart changed".into())
    );
    let values = Desired {
        config_digest: "sha256:bb",
        ..desired()
    };
    assert_eq!(
        determine(&hr, Some(&ours), &values),
        State::OutOfSync("release config values changed".into())
    );
    // Someone (helm itself) made revision 2 meanwhile.
    assert_eq!(
        determine(&hr, Some(&observed(2, "deployed")), &desired()),
        State::Unmanaged("release not observed to be made for object".into())
    );
}

#[test]
fn install_failures_are_remediated_until_retries_run_out_then_stall() {
    let failed = observed(1, "failed");
    let spec = json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"},
        "install": {"remediation": {"retries": 2}}});
    let status = |failures: i64| {
        json!({"history": history(&failed), "lastAttemptedReleaseAction": "install",
            "installFailures": failures, "failures": failures})
    };
    let hr = release(spec.clone(), status(1));
    assert_eq!(determine(&hr, Some(&failed), &desired()), State::Failed);
    assert_eq!(
        action_for_state(&hr, &State::Failed, false),
        Next::Uninstall
    );
    // After the uninstall the release is absent: install again while retries remain.
    let absent = State::Absent("found uninstalled release in storage".into());
    assert_eq!(action_for_state(&hr, &absent, false), Next::Install);
    let hr = release(spec.clone(), status(3));
    assert_eq!(
        action_for_state(&hr, &State::Failed, false),
        Next::Stall("Failed to install after 3 attempt(s)".into())
    );
    assert_eq!(
        action_for_state(&hr, &absent, false),
        Next::Stall("Failed to install after 3 attempt(s)".into())
    );
    // forceAt gets one more attempt.
    assert_eq!(action_for_state(&hr, &absent, true), Next::Install);
}

#[test]
fn upgrade_failures_roll_back_by_default_and_remediate_the_last_one_when_retrying() {
    let failed = observed(2, "failed");
    let spec = json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"},
        "upgrade": {"remediation": {"retries": 1}}});
    let status = |failures: i64| {
        json!({"history": history(&failed), "lastAttemptedReleaseAction": "upgrade",
            "upgradeFailures": failures})
    };
    let hr = release(spec.clone(), status(1));
    assert_eq!(action_for_state(&hr, &State::Failed, false), Next::Rollback);
    // retries > 0: the last failure is remediated too (Flux's default), then it stalls.
    let hr = release(spec, status(2));
    assert_eq!(action_for_state(&hr, &State::Failed, false), Next::Rollback);
    assert_eq!(
        action_for_state(&hr, &State::OutOfSync(String::new()), false),
        Next::Stall("Failed to upgrade after 2 attempt(s)".into())
    );
    // No retries configured: the failed release stays, and the next attempt stalls.
    let hr = release(
        json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"}}),
        status(1),
    );
    assert_eq!(
        action_for_state(&hr, &State::Failed, false),
        Next::Stall("Failed to upgrade after 1 attempt(s)".into())
    );
    let uninstall = json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"},
        "upgrade": {"remediation": {"retries": 3, "strategy": "uninstall"}}});
    let hr = release(uninstall, status(1));
    assert_eq!(
        action_for_state(&hr, &State::Failed, false),
        Next::Uninstall
    );
}

#[test]
fn failures_reset_when_the_spec_chart_or_values_change() {
    let hr = release(
        spec(),
        json!({"lastAttemptedGeneration": 2, "lastAttemptedRevision": "6.3.5",
            "lastAttemptedConfigDigest": "sha256:aa"}),
    );
    assert_eq!(must_reset_failures(&hr, "6.3.5", "sha256:aa", false), None);
    assert_eq!(
        must_reset_failures(&hr, "6.4.0", "sha256:aa", false),
        Some("chart version differs from last attempt")
    );
    assert_eq!(
        must_reset_failures(&hr, "6.3.5", "sha256:bb", false),
        Some("values differ from last attempt")
    );
    assert_eq!(
        must_reset_failures(&hr, "6.3.5", "sha256:aa", true),
        Some("reset requested through annotation")
    );
    let older = release(spec(), json!({"lastAttemptedGeneration": 1}));
    assert_eq!(
        must_reset_failures(&older, "6.3.5", "sha256:aa", false),
        Some("generation differs from last attempt")
    );
}

#[test]
fn a_release_moved_or_renamed_is_uninstalled_first() {
    let made = observed(3, "deployed");
    let status = json!({"storageNamespace": "apps", "history": history(&made)});
    let old = MovedRelease {
        name: "podinfo".into(),
        namespace: "apps".into(),
        storage_namespace: "apps".into(),
    };
    // Nothing moved.
    assert_eq!(
        moved_release(&release(spec(), status.clone()), "podinfo"),
        None
    );
    // Never released, or no storage namespace recorded: nothing to uninstall.
    assert_eq!(moved_release(&release(spec(), json!({})), "other"), None);
    let mut no_ns = status.clone();
    no_ns["storageNamespace"] = json!("");
    assert_eq!(moved_release(&release(spec(), no_ns), "other"), None);
    // The release name, its namespace or its storage moved.
    for (field, value) in [
        ("releaseName", "web"),
        ("targetNamespace", "web"),
        ("storageNamespace", "web"),
    ] {
        let mut moved = spec();
        moved[field] = json!(value);
        assert_eq!(
            moved_release(&release(moved, status.clone()), "podinfo"),
            Some(old.clone()),
            "{field}"
        );
    }
    // The chart's name changed: reinstalled by default, upgraded in place on request.
    assert_eq!(
        moved_release(&release(spec(), status.clone()), "podinfo2"),
        Some(old.clone())
    );
    let mut in_place = spec();
    in_place["upgrade"] = json!({"chartNameChangeStrategy": "InPlaceUpdate"});
    assert_eq!(moved_release(&release(in_place, status), "podinfo2"), None);
}
