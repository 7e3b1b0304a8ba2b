//! What helm-controller puts in the metadata of its events about a release, under its group
//! (`helm.toolkit.fluxcd.io/revision` and so on), so that an alert names the chart version and a
//! commit status can be keyed by it: the chart version as `revision`, the values digest as
//! `token` (the rate limit's key, never sent), the chart's `app-version` and the OCI artifact's
//! `oci-digest`.
//!
//! Which release an event is about: the one the action just recorded (newest in the history)
//! for a success, a test, a remediation, drift correction and an unlock; for a failed install
//! or upgrade, the attempted chart (`status.lastAttempted*`, which the action's record may not
//! have reached yet). Other events (a source not ready, values that fail) carry none, as in
//! helm-controller.

use ferroflux_api::HelmRelease;
use ferroflux_api::helmrelease::conditions::reason as hr_reason;
use std::collections::BTreeMap;

const GROUP: &str = "helm.toolkit.fluxcd.io";

/// The metadata of an event of `reason` about `hr` as it is at the time of the event.
pub fn event_metadata(hr: &HelmRelease, reason: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(status) = hr.status.as_ref() else {
        return out;
    };
    let mut put = |key: &str, value: Option<&str>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            out.insert(format!("{GROUP}/{key}"), v.to_string());
        }
    };
    match reason {
        hr_reason::INSTALL_FAILED | hr_reason::UPGRADE_FAILED => {
            put("revision", status.last_attempted_revision.as_deref());
            put("token", status.last_attempted_config_digest.as_deref());
            put(
                "oci-digest",
                status.last_attempted_revision_digest.as_deref(),
            );
        }
        hr_reason::INSTALL_SUCCEEDED
        | hr_reason::UPGRADE_SUCCEEDED
        | hr_reason::TEST_SUCCEEDED
        | hr_reason::TEST_FAILED
        | hr_reason::ROLLBACK_SUCCEEDED
        | hr_reason::ROLLBACK_FAILED
        | hr_reason::UNINSTALL_SUCCEEDED
        | hr_reason::UNINSTALL_FAILED
        | "DriftCorrected"
        | "DriftCorrectionFailed"
        | "PendingRelease" => {
            let Some(latest) = status.history.as_ref().and_then(|h| h.first()) else {
                return out;
            };
            put("revision", Some(&latest.chart_version));
            put("token", Some(&latest.config_digest));
            put("app-version", latest.app_version.as_deref());
            put("oci-digest", latest.oci_digest.as_deref());
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hr(status: serde_json::Value) -> HelmRelease {
        serde_json::from_value(json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "apps"},
            "spec": {"interval": "5m", "chartRef": {"kind": "OCIRepository", "name": "podinfo"}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn success_names_the_recorded_release_failure_the_attempted_chart() {
        let obj = hr(json!({
            "lastAttemptedRevision": "6.8.0",
            "lastAttemptedRevisionDigest": "sha256:bbb",
            "lastAttemptedConfigDigest": "sha256:values2",
            "history": [{"chartName": "podinfo", "chartVersion": "6.7.1", "appVersion": "6.7.1",
                "configDigest": "sha256:values1", "digest": "sha256:rel", "firstDeployed": "2026-01-01T00:00:00Z",
                "lastDeployed": "2026-01-01T00:00:00Z", "name": "podinfo", "namespace": "apps",
                "ociDigest": "sha256:aaa", "status": "deployed", "version": 1}],
        }));
        let ok = event_metadata(&obj, "InstallSucceeded");
        assert_eq!(ok["helm.toolkit.fluxcd.io/revision"], "6.7.1");
        assert_eq!(ok["helm.toolkit.fluxcd.io/token"], "sha256:values1");
        assert_eq!(ok["helm.toolkit.fluxcd.io/app-version"], "6.7.1");
        assert_eq!(ok["helm.toolkit.fluxcd.io/oci-digest"], "sha256:aaa");
        let failed = event_metadata(&obj, "UpgradeFailed");
        assert_eq!(failed["helm.toolkit.fluxcd.io/revision"], "6.8.0");
        assert_eq!(failed["helm.toolkit.fluxcd.io/token"], "sha256:values2");
        assert_eq!(failed["helm.toolkit.fluxcd.io/oci-digest"], "sha256:bbb");
        assert!(event_metadata(&obj, "ArtifactFailed").is_empty());
        assert!(event_metadata(&obj, "DriftDetected").is_empty());
    }
}
