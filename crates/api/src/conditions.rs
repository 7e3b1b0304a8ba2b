//! Condition types, reasons and the helpers that keep a status's conditions in Flux's shape.
//!
//! Types and reasons are part of the API: `flux`, `kubectl wait` and dashboards match on them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
pub const HEALTHY: &str = "Healthy";
pub const ARTIFACT_IN_STORAGE: &str = "ArtifactInStorage";
pub const FETCH_FAILED: &str = "FetchFailed";
pub const STORAGE_OPERATION_FAILED: &str = "StorageOperationFailed";

/// Reasons shared by every Flux controller.
pub mod reason {
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
    pub const PROGRESSING: &str = "Progressing";
    pub const PROGRESSING_WITH_RETRY: &str = "ProgressingWithRetry";
    pub const SUSPENDED: &str = "Suspended";
    pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
    pub const RECONCILIATION_SUCCEEDED: &str = "ReconciliationSucceeded";
    pub const RECONCILIATION_FAILED: &str = "ReconciliationFailed";
    pub const ARTIFACT_FAILED: &str = "ArtifactFailed";
    pub const BUILD_FAILED: &str = "BuildFailed";
    pub const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";
    pub const PRUNE_FAILED: &str = "PruneFailed";
    pub const ACCESS_DENIED: &str = "AccessDenied";
    pub const INVALID_URL: &str = "URLInvalid";
    pub const AUTHENTICATION_FAILED: &str = "AuthenticationFailed";
    pub const GIT_OPERATION_FAILED: &str = "GitOperationFailed";
    pub const NEW_ARTIFACT: &str = "NewArtifact";
    pub const ARTIFACT_UP_TO_DATE: &str = "ArtifactUpToDate";
}

/// `True`, `False` or `Unknown`, as condition statuses are spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
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
}
