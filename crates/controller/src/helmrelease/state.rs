//! helm-controller's release state machine, as pure functions over the HelmRelease and what the
//! release storage says: which state the release is in (`determine`, Flux's
//! `DetermineReleaseState`), which action that state calls for (`action_for_state`), the failure
//! counters and remediation rules (`Remediation`), and the messages of the conditions each
//! outcome writes. The reconciler runs the actions; nothing here talks to a cluster.

use ferroflux_api::HelmRelease;
use ferroflux_api::helmrelease::{
    ChartNameChangeStrategy, ReleaseAction, RemediationStrategy, Snapshot, StrategyName,
};

/// What storage holds about the newest revision of a release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The release's name in storage (`spec.releaseName` or Flux's default).
    pub name: String,
    /// The namespace the release's storage Secret lives in.
    pub namespace: String,
    /// Helm's revision number, counting from 1.
    pub version: i64,
    /// Helm's status: `deployed`, `failed`, `pending-install`, `superseded`, `uninstalled`...
    pub status: String,
    /// The name in the deployed chart's Chart.yaml.
    pub chart_name: String,
    /// The deployed chart's version, compared with the spec's to tell an upgrade is due.
    pub chart_version: String,
    /// The chart's `appVersion`; empty when the chart has none.
    pub app_version: String,
    /// [`super::values::digest`] of the release's config (its user-supplied values).
    pub config_digest: String,
    /// Digest of the stored release (Flux's snapshot `digest`).
    pub digest: String,
    /// When the release's first revision was deployed, as Helm stores it.
    pub first_deployed: String,
    /// When this revision was deployed.
    pub last_deployed: String,
    /// When this revision was uninstalled; `None` while it exists.
    pub deleted: Option<String>,
}

impl Observed {
    /// The snapshot Flux records in `status.history` for this revision.
    pub fn snapshot(&self, action: Option<ReleaseAction>) -> Snapshot {
        Snapshot {
            action: action.map(|a| action_name(a).to_string()),
            api_version: None,
            app_version: Some(self.app_version.clone()).filter(|v| !v.is_empty()),
            chart_name: self.chart_name.clone(),
            chart_version: self.chart_version.clone(),
            config_digest: self.config_digest.clone(),
            deleted: self.deleted.clone(),
            digest: self.digest.clone(),
            first_deployed: self.first_deployed.clone(),
            last_deployed: self.last_deployed.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            oci_digest: None,
            status: self.status.clone(),
            test_hooks: None,
            version: self.version,
        }
    }

    fn is_pending(&self) -> bool {
        self.status.starts_with("pending-")
    }
}

/// `install` or `upgrade`, as the status spells an action.
pub fn action_name(action: ReleaseAction) -> &'static str {
    match action {
        ReleaseAction::Install => "install",
        ReleaseAction::Upgrade => "upgrade",
    }
}

/// `<namespace>/<name>.v<version>`, as Flux names a release revision in messages.
pub fn full_release_name(s: &Snapshot) -> String {
    format!("{}/{}.v{}", s.namespace, s.name, s.version)
}

/// `<chart>@<version>`.
pub fn versioned_chart_name(s: &Snapshot) -> String {
    format!("{}@{}", s.chart_name, s.chart_version)
}

/// The state of a release (Flux's `ReleaseStatus`), with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Nothing (or only an uninstalled release) in storage.
    Absent(String),
    /// The newest revision is `pending-*`: an operation died half-way.
    Locked(String),
    /// Storage holds a release this object did not make (or no longer recognises).
    Unmanaged(String),
    /// The deployed release is not what the spec asks for.
    OutOfSync(String),
    /// The newest revision failed.
    Failed,
    /// Tests are enabled and the release has not been tested.
    Untested,
    /// The release is what the spec asks for.
    InSync,
}

/// What the spec asks for at this reconcile.
pub struct Desired<'a> {
    /// The chart the HelmChart serves, by its Chart.yaml name.
    pub chart_name: &'a str,
    /// That chart's version.
    pub chart_version: &'a str,
    /// [`super::values::digest`] of the composed values, compared with the release's config.
    pub config_digest: &'a str,
    /// Digest of `spec.postRenderers`, when it has any: a change to them calls for an upgrade.
    pub post_renderers_digest: Option<String>,
    /// Digest of `spec.commonMetadata`, when set: a change to it calls for an upgrade too.
    pub common_metadata_digest: Option<String>,
}

/// Where the release last made for a HelmRelease lives: its name, its namespace and the
/// namespace of its storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedRelease {
    /// The release's name.
    pub name: String,
    /// The namespace of its objects.
    pub namespace: String,
    /// The namespace of its storage Secrets.
    pub storage_namespace: String,
}

/// Flux's `ReleaseTargetChanged`: the release last made for `hr` (the latest of its history,
/// in `status.storageNamespace`) is not where the spec now puts a release (storage namespace,
/// release namespace or name changed), or the chart changed its name from `chart_name` and
/// `upgrade.chartNameChangeStrategy` is `Reinstall` (the default). That release is uninstalled
/// before the new one is installed; `None` when there is none or it has not moved.
pub fn moved_release(hr: &HelmRelease, chart_name: &str) -> Option<MovedRelease> {
    let status = hr.status.as_ref()?;
    let storage_namespace = status.storage_namespace.clone().filter(|s| !s.is_empty())?;
    let cur = status.history.as_ref()?.first()?;
    let reinstall = hr
        .spec
        .upgrade
        .as_ref()
        .and_then(|u| u.chart_name_change_strategy)
        .unwrap_or(ChartNameChangeStrategy::Reinstall)
        == ChartNameChangeStrategy::Reinstall;
    let moved = hr.storage_namespace() != storage_namespace
        || hr.target_namespace() != cur.namespace
        || hr.release_name() != cur.name
        || (reinstall && chart_name != cur.chart_name);
    moved.then(|| MovedRelease {
        name: cur.name.clone(),
        namespace: cur.namespace.clone(),
        storage_namespace,
    })
}

/// Flux's `DetermineReleaseState` (without drift detection, which the reconciler adds).
pub fn determine(hr: &HelmRelease, last: Option<&Observed>, desired: &Desired<'_>) -> State {
    let Some(rls) = last else {
        return State::Absent("no release in storage for object".into());
    };
    if rls.is_pending() {
        return State::Locked(format!("release with status '{}'", rls.status));
    }
    let status = hr.status.clone().unwrap_or_default();
    let history = status.history.clone().unwrap_or_default();
    let Some(cur) = history.first() else {
        if rls.status == "uninstalled" {
            return State::Absent("found uninstalled release in storage".into());
        }
        return State::Unmanaged("found existing release in storage".into());
    };
    if cur.name != rls.name || cur.namespace != rls.namespace || cur.version != rls.version {
        return State::Unmanaged("release not observed to be made for object".into());
    }
    if cur.digest != rls.digest {
        return State::Unmanaged("release digest verification error".into());
    }
    match rls.status.as_str() {
        "failed" => State::Failed,
        "uninstalled" => State::Absent("found uninstalled release in storage".into()),
        "deployed" => {
            if rls.chart_name != desired.chart_name || rls.chart_version != desired.chart_version {
                return State::OutOfSync("release chart changed".into());
            }
            if rls.config_digest != desired.config_digest {
                return State::OutOfSync("release config values changed".into());
            }
            if hr.metadata.generation != status.observed_generation {
                if desired.post_renderers_digest != status.observed_post_renderers_digest {
                    return State::OutOfSync("postrenderers digest has changed".into());
                }
                if desired.common_metadata_digest != status.observed_common_metadata_digest {
                    return State::OutOfSync("common metadata digest has changed".into());
                }
            }
            let test = hr.spec.test.clone().unwrap_or_default();
            if test.enable == Some(true) {
                if cur.test_hooks.is_none() {
                    return State::Untested;
                }
                let ignore = Remediation::active(hr)
                    .map(|r| r.ignore_test_failures(test.ignore_failures.unwrap_or(false)))
                    .unwrap_or(true);
                let failed = cur
                    .test_hooks
                    .iter()
                    .flatten()
                    .any(|(_, h)| h.phase.as_deref() == Some("Failed"));
                if !ignore && failed {
                    return State::Failed;
                }
            }
            State::InSync
        }
        other => State::OutOfSync(format!(
            "unable to determine state for release with status '{other}'"
        )),
    }
}

/// The remediation settings of the action last attempted (Flux's `GetActiveRemediation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remediation {
    /// The action these settings belong to (install or upgrade).
    pub action: ReleaseAction,
    /// How many retries the spec allows; negative means without limit, as in Flux.
    pub retries: i64,
    /// Whether the last failure, once retries are spent, is still remediated.
    pub remediate_last_failure: bool,
    /// The spec's `ignoreTestFailures`, when it sets one (else the test section's decides).
    pub ignore_test_failures: Option<bool>,
    /// Roll back or uninstall: how a failed release is remediated.
    pub strategy: RemediationStrategy,
}

impl Remediation {
    /// The remediation of `status.lastAttemptedReleaseAction`; `None` before any attempt.
    pub fn active(hr: &HelmRelease) -> Option<Remediation> {
        let action = hr.status.as_ref()?.last_attempted_release_action?;
        Some(Remediation::of(hr, action))
    }

    /// The remediation settings of `action`.
    pub fn of(hr: &HelmRelease, action: ReleaseAction) -> Remediation {
        match action {
            ReleaseAction::Install => {
                let r = hr
                    .spec
                    .install
                    .as_ref()
                    .and_then(|i| i.remediation.clone())
                    .unwrap_or_default();
                Remediation {
                    action,
                    retries: r.retries.unwrap_or(0),
                    remediate_last_failure: r.remediate_last_failure.unwrap_or(false),
                    ignore_test_failures: r.ignore_test_failures,
                    // A failed install is remediated by uninstalling it.
                    strategy: RemediationStrategy::Uninstall,
                }
            }
            ReleaseAction::Upgrade => {
                let r = hr
                    .spec
                    .upgrade
                    .as_ref()
                    .and_then(|u| u.remediation.clone())
                    .unwrap_or_default();
                let retries = r.retries.unwrap_or(0);
                Remediation {
                    action,
                    retries,
                    remediate_last_failure: r.remediate_last_failure.unwrap_or(retries > 0),
                    ignore_test_failures: r.ignore_test_failures,
                    strategy: r.strategy.unwrap_or_default(),
                }
            }
        }
    }

    /// The failures counted against this action.
    pub fn failure_count(&self, hr: &HelmRelease) -> i64 {
        let status = hr.status.clone().unwrap_or_default();
        match self.action {
            ReleaseAction::Install => status.install_failures.unwrap_or(0),
            ReleaseAction::Upgrade => status.upgrade_failures.unwrap_or(0),
        }
    }

    /// No retry is left (a negative `retries` never runs out).
    pub fn retries_exhausted(&self, hr: &HelmRelease) -> bool {
        self.retries >= 0 && self.failure_count(hr) > self.retries
    }

    /// Whether a test failure counts as a failed release.
    pub fn ignore_test_failures(&self, test_ignore: bool) -> bool {
        self.ignore_test_failures.unwrap_or(test_ignore)
    }
}

/// Whether the action retries without remediating (`strategy.name: RetryOnFailure`).
pub fn retry_on_failure(hr: &HelmRelease, action: ReleaseAction) -> Option<String> {
    let strategy = match action {
        ReleaseAction::Install => hr.spec.install.as_ref().and_then(|i| i.strategy.clone()),
        ReleaseAction::Upgrade => hr.spec.upgrade.as_ref().and_then(|u| u.strategy.clone()),
    }?;
    (strategy.name == StrategyName::RetryOnFailure)
        .then(|| strategy.retry_interval.unwrap_or_else(|| "5m0s".into()))
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Install the release: storage holds none.
    Install,
    /// Upgrade the release to what the spec asks.
    Upgrade,
    /// Mark a revision stuck in `pending-*` failed so that the next action may run.
    Unlock,
    /// Run the chart's test hooks.
    Test,
    /// Remediate the failed release: roll back to the previous deployed revision.
    Rollback,
    /// Remediate the failed release by uninstalling it.
    Uninstall,
    /// Nothing to do: the release is as the spec asks.
    Done,
    /// Out of retries: Stalled with Flux's reason and message.
    Stall(String),
}

/// Flux's `actionForState`: the next action for `state`, `force` being a handled
/// `reconcile.fluxcd.io/forceAt` request.
pub fn action_for_state(hr: &HelmRelease, state: &State, force: bool) -> Next {
    let exhausted = |action: ReleaseAction| {
        let r = Remediation::of(hr, action);
        r.retries_exhausted(hr)
    };
    match state {
        State::InSync => {
            if force {
                Next::Upgrade
            } else {
                Next::Done
            }
        }
        State::Locked(_) => Next::Unlock,
        State::Absent(_) => {
            if exhausted(ReleaseAction::Install) && !force {
                Next::Stall(stall_message(hr))
            } else {
                Next::Install
            }
        }
        State::Unmanaged(_) => Next::Upgrade,
        State::OutOfSync(_) => {
            if exhausted(ReleaseAction::Upgrade) && !force {
                Next::Stall(stall_message(hr))
            } else {
                Next::Upgrade
            }
        }
        State::Untested => Next::Test,
        State::Failed => {
            let action = hr
                .status
                .as_ref()
                .and_then(|s| s.last_attempted_release_action);
            if action.is_some_and(|a| retry_on_failure(hr, a).is_some()) {
                return Next::Upgrade;
            }
            let Some(remediation) = Remediation::active(hr) else {
                return Next::Upgrade;
            };
            if remediation.failure_count(hr) <= 0 || force {
                return Next::Upgrade;
            }
            if remediation.retries_exhausted(hr) && !remediation.remediate_last_failure {
                return Next::Stall(stall_message(hr));
            }
            match remediation.strategy {
                RemediationStrategy::Rollback => Next::Rollback,
                RemediationStrategy::Uninstall => Next::Uninstall,
            }
        }
    }
}

/// Flux's Stalled message when retries are exhausted: `Failed to install after 3 attempt(s)`.
pub fn stall_message(hr: &HelmRelease) -> String {
    let remediation = Remediation::active(hr);
    let action = remediation
        .as_ref()
        .map(|r| action_name(r.action))
        .unwrap_or("install");
    let count = remediation.map(|r| r.failure_count(hr)).unwrap_or(0);
    format!("Failed to {action} after {count} attempt(s)")
}

/// Why the failure counters are reset before this attempt (Flux's `MustResetFailures`), if
/// they are.
pub fn must_reset_failures(
    hr: &HelmRelease,
    chart_version: &str,
    config_digest: &str,
    reset_requested: bool,
) -> Option<&'static str> {
    let status = hr.status.clone().unwrap_or_default();
    if status.last_attempted_generation != hr.metadata.generation {
        return Some("generation differs from last attempt");
    }
    if status
        .last_attempted_revision
        .as_deref()
        .unwrap_or_default()
        != chart_version
    {
        return Some("chart version differs from last attempt");
    }
    if let Some(d) = status.last_attempted_config_digest.as_deref()
        && !d.is_empty()
        && d != config_digest
    {
        return Some("values differ from last attempt");
    }
    reset_requested.then_some("reset requested through annotation")
}

#[cfg(test)]
mod tests;
