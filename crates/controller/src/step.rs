//! What the steps of every reconciler share, so each reconciler reads as Flux's named steps
//! (source, dependencies, artifact, build, apply, health, prune, finalize) and the next one
//! (HelmRelease: source, dependencies, values, install/upgrade, test, remediate) is written the
//! same way.
//!
//! A step returns its typed result or a [`Failure`]: the Ready reason and message, when to try
//! again and whether trying again can help. Errors become failures through one extension,
//! `.or_fail(reason, retry)` ([`OrFail`]); a failure reaches the conditions through
//! [`Failure::mark`], and every outcome gets one log line ([`log_success`], [`log_failure`]).
//! Work that blocks (unpacking, building, decrypting, substituting) runs through [`blocking`],
//! off the async executor.

use ferroflux_api::conditions::{Conditions, READY, reason};
use ferroflux_apply::changeset::{Action as ChangeAction, ChangeSet};
use std::fmt::Display;
use std::time::Duration;

/// What Flux's controllers put before a configuration error no retry can fix (an invalid CEL
/// expression), in the Ready and Stalled messages.
pub const TERMINAL_ERROR: &str = "Reconciliation failed terminally due to configuration error";

/// A failed step: the Ready reason and message, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The Ready condition's reason (Flux's, e.g. `BuildFailed`).
    pub reason: &'static str,
    /// The Ready condition's message, written for the operator.
    pub message: String,
    /// When to reconcile again.
    pub requeue: Duration,
    /// A configuration error that retrying cannot fix: `Stalled` instead of `Reconciling`.
    pub stalled: bool,
}

impl Failure {
    /// A failure that may go away on its own: retried after `requeue`.
    pub fn retry(reason: &'static str, message: impl Into<String>, requeue: Duration) -> Self {
        Failure {
            reason,
            message: message.into(),
            requeue,
            stalled: false,
        }
    }

    /// A failure only a change of the object can fix; still looked at again after `requeue`.
    pub fn stalled(reason: &'static str, message: impl Into<String>, requeue: Duration) -> Self {
        Failure {
            stalled: true,
            ..Failure::retry(reason, message, requeue)
        }
    }

    /// The failure an error that knows its own reason describes (`BuildError`,
    /// `ferroflux_source::Error`).
    pub fn of(error: &impl Reasoned, requeue: Duration) -> Self {
        Failure {
            reason: error.reason(),
            message: error.to_string(),
            requeue,
            stalled: error.is_stalling(),
        }
    }

    /// Writes the failure as Flux's reconcilers do: `Ready=False` with its reason, then
    /// `Stalled` (nothing to retry) or `Reconciling` with `ProgressingWithRetry`.
    pub fn mark(&self, conditions: &mut Conditions<'_>) {
        conditions.mark_false(READY, self.reason, &self.message);
        if self.stalled {
            conditions.mark_stalled(self.reason, &self.message);
        } else {
            conditions.mark_reconciling(reason::PROGRESSING_WITH_RETRY, &self.message);
        }
    }
}

/// An error that knows the condition reason Flux gives it and whether retrying can help.
pub trait Reasoned: Display {
    /// The Ready reason.
    fn reason(&self) -> &'static str;
    /// True when only a change of the object can fix it.
    fn is_stalling(&self) -> bool;
}

impl Reasoned for ferroflux_source::Error {
    fn reason(&self) -> &'static str {
        ferroflux_source::Error::reason(self)
    }
    fn is_stalling(&self) -> bool {
        ferroflux_source::Error::is_stalling(self)
    }
}

/// `.or_fail(reason, retry)`: any error, as a retried [`Failure`] with its message.
pub trait OrFail<T> {
    /// The error becomes a [`Failure`] with `reason`, retried after `retry`.
    fn or_fail(self, reason: &'static str, retry: Duration) -> Result<T, Failure>;
}

impl<T, E: Display> OrFail<T> for Result<T, E> {
    fn or_fail(self, reason: &'static str, retry: Duration) -> Result<T, Failure> {
        self.map_err(|e| Failure::retry(reason, e.to_string(), retry))
    }
}

/// Runs blocking work (unpacking, kustomize, SOPS, substitution) on tokio's blocking pool, so
/// one large build does not hold up every other reconcile on the executor. A panic in the work
/// comes back as an error message, not as a crash of the controller.
pub async fn blocking<T, F>(what: &str, work: F) -> Result<T, String>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("{what} failed: {e}"))
}

/// What a change set did, in one line: `2 created, 1 configured, 3 unchanged`; `no changes` for
/// an empty set.
pub fn change_summary(changes: &ChangeSet) -> String {
    let order = [
        ChangeAction::Created,
        ChangeAction::Configured,
        ChangeAction::Unchanged,
        ChangeAction::Deleted,
        ChangeAction::Skipped,
    ];
    let parts: Vec<String> = order
        .iter()
        .filter_map(|action| {
            let n = changes
                .entries
                .iter()
                .filter(|c| c.action == *action)
                .count();
            (n > 0).then(|| format!("{n} {}", action.as_str()))
        })
        .collect();
    if parts.is_empty() {
        "no changes".into()
    } else {
        parts.join(", ")
    }
}

/// The log line of a successful reconcile: which object, which revision, what changed.
pub fn log_success(kind: &str, namespace: &str, name: &str, revision: &str, changes: &str) {
    tracing::info!(
        kind,
        namespace,
        name,
        revision,
        changes,
        "reconciliation succeeded"
    );
}

/// The log line of a failed reconcile: which object, Flux's reason and the message.
pub fn log_failure(kind: &str, namespace: &str, name: &str, failure: &Failure) {
    tracing::warn!(
        kind,
        namespace,
        name,
        reason = failure.reason,
        stalled = failure.stalled,
        error = %failure.message,
        "reconciliation failed"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::ObjectId;
    use ferroflux_api::conditions::{RECONCILING, STALLED, find_condition};
    use k8s_openapi::jiff::Timestamp;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// A subscriber's output, kept for the test to read.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut out) = self.0.lock() {
                out.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn captured(log: impl FnOnce()) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        let bytes = out.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn every_outcome_logs_one_line_with_revision_changes_or_reason() {
        let mut changes = ChangeSet::default();
        let id = |name: &str| ObjectId {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "apps".into(),
            name: name.into(),
        };
        changes.push(id("a"), ChangeAction::Created);
        changes.push(id("b"), ChangeAction::Created);
        changes.push(id("c"), ChangeAction::Unchanged);
        let summary = change_summary(&changes);
        assert_eq!(summary, "2 created, 1 unchanged");
        assert_eq!(change_summary(&ChangeSet::default()), "no changes");

        let out = captured(|| {
            log_success(
                "Kustomization",
                "flux-system",
                "apps",
                "main@sha1:abc",
                &summary,
            )
        });
        assert!(out.contains("INFO"), "{out}");
        assert!(out.contains("reconciliation succeeded"), "{out}");
        assert!(out.contains("revision=\"main@sha1:abc\""), "{out}");
        assert!(out.contains("changes=\"2 created, 1 unchanged\""), "{out}");
        assert!(out.contains("name=\"apps\""), "{out}");

        let failure = Failure::retry(
            reason::BUILD_FAILED,
            "kustomize build failed: no such file",
            Duration::from_secs(60),
        );
        let out = captured(|| log_failure("Kustomization", "flux-system", "apps", &failure));
        assert!(out.contains("WARN"), "{out}");
        assert!(out.contains("reconciliation failed"), "{out}");
        assert!(out.contains("reason=\"BuildFailed\""), "{out}");
        assert!(
            out.contains("kustomize build failed: no such file"),
            "{out}"
        );
    }

    #[test]
    fn or_fail_keeps_the_message_and_mark_chooses_stalled_or_reconciling() {
        let failed: Result<(), &str> = Err("boom");
        let failure = failed
            .or_fail(reason::ARTIFACT_FAILED, Duration::from_secs(5))
            .unwrap_err();
        assert_eq!(
            failure,
            Failure::retry(reason::ARTIFACT_FAILED, "boom", Duration::from_secs(5))
        );

        let mut slot = None;
        failure.mark(&mut Conditions::of(
            &mut slot,
            Some(2),
            Timestamp::UNIX_EPOCH,
        ));
        let conds = slot.clone().unwrap_or_default();
        assert_eq!(
            find_condition(&conds, READY).map(|c| c.status.as_str()),
            Some("False")
        );
        let reconciling = find_condition(&conds, RECONCILING).map(|c| c.reason.as_str());
        assert_eq!(reconciling, Some(reason::PROGRESSING_WITH_RETRY));

        let stalled = Failure::stalled(reason::ARTIFACT_FAILED, "bad", Duration::from_secs(5));
        stalled.mark(&mut Conditions::of(
            &mut slot,
            Some(2),
            Timestamp::UNIX_EPOCH,
        ));
        let conds = slot.unwrap_or_default();
        assert!(find_condition(&conds, RECONCILING).is_none());
        assert_eq!(
            find_condition(&conds, STALLED).map(|c| c.message.as_str()),
            Some("bad")
        );
    }
}
