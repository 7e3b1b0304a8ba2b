//! Condition types, reasons and the helpers that keep a status's conditions in Flux's shape.
//!
//! Types and reasons are part of the API: `flux`, `kubectl wait` and dashboards match on them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The object is reconciled and its last reconcile succeeded (`kstatus`'s summary condition).
pub const READY: &str = "Ready";
/// The controller is working on the object, or will retry it.
pub const RECONCILING: &str = "Reconciling";
/// The controller gave up until the object changes: retrying cannot help.
pub const STALLED: &str = "Stalled";
/// A Kustomization's health checks (`wait`, `healthChecks`) passed.
pub const HEALTHY: &str = "Healthy";
/// A source has an artifact in storage (possibly an older one than its spec asks for).
pub const ARTIFACT_IN_STORAGE: &str = "ArtifactInStorage";
/// A source could not fetch what its spec asks for.
pub const FETCH_FAILED: &str = "FetchFailed";
/// A source could not write or serve its artifact.
pub const STORAGE_OPERATION_FAILED: &str = "StorageOperationFailed";

/// The reasons of Flux's `meta` package and of kustomize-controller, each spelled once. The
/// reasons of a source's fetch and storage failures (`URLInvalid`, `GitOperationFailed`,
/// `AuthenticationFailed`...) belong to the errors they describe: `ferroflux_source::reason`.
pub mod reason {
    /// The step or the whole reconcile succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
    /// A failure with no more specific reason.
    pub const FAILED: &str = "Failed";
    /// A reconcile is in progress.
    pub const PROGRESSING: &str = "Progressing";
    /// A reconcile failed and will be retried (the `Reconciling` reason after a failure).
    pub const PROGRESSING_WITH_RETRY: &str = "ProgressingWithRetry";
    /// `spec.suspend` is set.
    pub const SUSPENDED: &str = "Suspended";
    /// A `dependsOn` entry is not Ready yet (or the dependencies form a cycle).
    pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
    /// A CEL expression (`healthCheckExprs`, `dependsOn[].readyExpr`) does not parse.
    pub const INVALID_CEL_EXPRESSION: &str = "InvalidCELExpression";
    /// A Kustomization was applied.
    pub const RECONCILIATION_SUCCEEDED: &str = "ReconciliationSucceeded";
    /// Applying failed (or the target cluster could not be reached).
    pub const RECONCILIATION_FAILED: &str = "ReconciliationFailed";
    /// The source's artifact is missing, unreachable or corrupt, or `spec.path` is not in it.
    pub const ARTIFACT_FAILED: &str = "ArtifactFailed";
    /// kustomize build, decryption or substitution failed.
    pub const BUILD_FAILED: &str = "BuildFailed";
    /// The health checks did not pass within the timeout.
    pub const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";
    /// Deleting stale objects failed.
    pub const PRUNE_FAILED: &str = "PruneFailed";
    /// A cross-namespace reference that the controller refuses.
    pub const ACCESS_DENIED: &str = "AccessDenied";
    /// A source stored a new artifact (the reason of its event).
    pub const NEW_ARTIFACT: &str = "NewArtifact";
    /// A source's artifact is already the one its spec asks for.
    pub const ARTIFACT_UP_TO_DATE: &str = "ArtifactUpToDate";
}

/// `True`, `False` or `Unknown`, as condition statuses are spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl Status {
    /// The status as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

/// Sets a condition, keeping `lastTransitionTime` when the status did not change, as
/// apimachinery's `meta.SetStatusCondition` does. Returns true when anything changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: Status,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> bool {
    let message = truncate_message(message);
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) {
        let mut changed = false;
        if existing.status != status.as_str() {
            existing.status = status.as_str().to_string();
            existing.last_transition_time = Time(now);
            changed = true;
        }
        if existing.reason != reason {
            existing.reason = reason.to_string();
            changed = true;
        }
        if existing.message != message {
            existing.message = message;
            changed = true;
        }
        if existing.observed_generation != observed_generation {
            existing.observed_generation = observed_generation;
            changed = true;
        }
        return changed;
    }
    conditions.push(Condition {
        type_: type_.to_string(),
        status: status.as_str().to_string(),
        reason: reason.to_string(),
        message,
        observed_generation,
        last_transition_time: Time(now),
    });
    sort_conditions(conditions);
    true
}

/// The conditions of one object for one reconcile: every condition set through it carries the
/// object's generation and the same time, as fluxcd/pkg's `runtime/conditions` setter does, so
/// a step says what happened (`mark_false(READY, reason, message)`) and nothing else.
pub struct Conditions<'a> {
    conditions: &'a mut Vec<Condition>,
    generation: Option<i64>,
    now: Timestamp,
}

impl<'a> Conditions<'a> {
    /// The conditions in `slot` (created when the status has none yet), stamped with
    /// `generation` and `now`.
    pub fn of(
        slot: &'a mut Option<Vec<Condition>>,
        generation: Option<i64>,
        now: Timestamp,
    ) -> Self {
        Conditions {
            conditions: slot.get_or_insert_with(Vec::new),
            generation,
            now,
        }
    }

    /// Sets `type_` to `True`.
    pub fn mark_true(&mut self, type_: &str, reason: &str, message: &str) -> &mut Self {
        self.set(type_, Status::True, reason, message)
    }

    /// Sets `type_` to `False`.
    pub fn mark_false(&mut self, type_: &str, reason: &str, message: &str) -> &mut Self {
        self.set(type_, Status::False, reason, message)
    }

    /// Sets `type_` to `Unknown`.
    pub fn mark_unknown(&mut self, type_: &str, reason: &str, message: &str) -> &mut Self {
        self.set(type_, Status::Unknown, reason, message)
    }

    /// `Reconciling=True`: the controller is still working (or will retry); an object cannot
    /// be both, so `Stalled` goes.
    pub fn mark_reconciling(&mut self, reason: &str, message: &str) -> &mut Self {
        self.delete(STALLED);
        self.mark_true(RECONCILING, reason, message)
    }

    /// `Stalled=True`: retrying cannot help until the object changes; `Reconciling` goes.
    pub fn mark_stalled(&mut self, reason: &str, message: &str) -> &mut Self {
        self.delete(RECONCILING);
        self.mark_true(STALLED, reason, message)
    }

    /// Removes `type_`, if present.
    pub fn delete(&mut self, type_: &str) -> &mut Self {
        remove_condition(self.conditions, type_);
        self
    }

    fn set(&mut self, type_: &str, status: Status, reason: &str, message: &str) -> &mut Self {
        set_condition(
            self.conditions,
            type_,
            status,
            reason,
            message,
            self.generation,
            self.now,
        );
        self
    }
}

/// Removes a condition; returns true when one was there.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// Finds a condition by type.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// True when the condition exists with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Flux keeps `Ready` first, then `Reconciling` and `Stalled`, then the rest by type, so
/// `kubectl get -o yaml` reads the same on every object.
fn sort_conditions(conditions: &mut [Condition]) {
    fn rank(t: &str) -> u8 {
        match t {
            READY => 0,
            RECONCILING => 1,
            STALLED => 2,
            _ => 3,
        }
    }
    conditions.sort_by(|a, b| {
        rank(&a.type_)
            .cmp(&rank(&b.type_))
            .then_with(|| a.type_.cmp(&b.type_))
    });
}

/// The CRD caps messages at 32768 bytes; a longer one would make the status write fail.
fn truncate_message(message: &str) -> String {
    const MAX: usize = 32768;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut end = MAX - 3;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_transition_time_when_status_is_unchanged() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let t1 = Timestamp::from_second(2_000).unwrap();
        let mut c = Vec::new();
        assert!(set_condition(
            &mut c,
            READY,
            Status::False,
            "Progressing",
            "a",
            Some(1),
            t0
        ));
        assert!(set_condition(
            &mut c,
            READY,
            Status::False,
            "BuildFailed",
            "b",
            Some(1),
            t1
        ));
        assert_eq!(c[0].last_transition_time, Time(t0));
        assert_eq!(c[0].reason, "BuildFailed");
        assert!(set_condition(
            &mut c,
            READY,
            Status::True,
            "ReconciliationSucceeded",
            "b",
            Some(1),
            t1
        ));
        assert_eq!(c[0].last_transition_time, Time(t1));
        assert!(!set_condition(
            &mut c,
            READY,
            Status::True,
            "ReconciliationSucceeded",
            "b",
            Some(1),
            t1
        ));
    }

    #[test]
    fn orders_ready_first_and_truncates() {
        let t = Timestamp::from_second(1).unwrap();
        let mut c = Vec::new();
        set_condition(&mut c, HEALTHY, Status::True, "Succeeded", "", None, t);
        set_condition(
            &mut c,
            RECONCILING,
            Status::True,
            "Progressing",
            "",
            None,
            t,
        );
        set_condition(
            &mut c,
            READY,
            Status::Unknown,
            "Progressing",
            &"x".repeat(40000),
            None,
            t,
        );
        let types: Vec<_> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, RECONCILING, HEALTHY]);
        assert_eq!(c[0].message.len(), 32768);
        assert!(remove_condition(&mut c, RECONCILING));
        assert!(!remove_condition(&mut c, RECONCILING));
        assert!(!is_true(&c, READY));
    }

    #[test]
    fn marks_carry_generation_and_time_and_keep_reconciling_and_stalled_apart() {
        let t = Timestamp::from_second(7).unwrap();
        let mut slot = None;
        let mut c = Conditions::of(&mut slot, Some(4), t);
        c.mark_false(READY, "BuildFailed", "no")
            .mark_reconciling("ProgressingWithRetry", "no");
        c.mark_stalled("BuildFailed", "no");
        let conds = slot.unwrap();
        let types: Vec<_> = conds.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, STALLED]);
        assert!(conds.iter().all(|c| c.observed_generation == Some(4)));
        assert!(conds.iter().all(|c| c.last_transition_time == Time(t)));
        let mut slot = Some(conds);
        Conditions::of(&mut slot, Some(5), t).mark_reconciling("Progressing", "again");
        let types: Vec<_> = slot.iter().flatten().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, RECONCILING]);
    }
}
