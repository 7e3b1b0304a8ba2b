//! What a source's failed fetch means for its status, shared by the source kinds: the error a
//! fetch ends with (Flux's reason, a message and whether retrying can help), the conditions it
//! sets, and the failure it is logged as.

use std::time::Duration;

use crate::step::Failure;
use ferroflux_api::conditions::{self, Conditions};

/// Why a fetch failed, in source-controller's terms.
#[derive(Debug)]
pub struct FetchError {
    /// Ready reason.
    pub reason: &'static str,
    /// Message for the operator (never a credential).
    pub message: String,
    /// Only a change of the object can fix it.
    pub stalled: bool,
}

impl FetchError {
    /// A failure that the next interval may not see again.
    pub(crate) fn retry(reason: &'static str, message: impl Into<String>) -> Self {
        FetchError {
            reason,
            message: message.into(),
            stalled: false,
        }
    }

    /// A failure that only a change of the object can fix.
    pub(crate) fn stalled(reason: &'static str, message: impl Into<String>) -> Self {
        FetchError {
            reason,
            message: message.into(),
            stalled: true,
        }
    }

    /// The failure as a pass logs it, retried at `interval` unless stalled.
    pub(crate) fn failure(&self, interval: Duration) -> Failure {
        if self.stalled {
            Failure::stalled(self.reason, self.message.clone(), interval)
        } else {
            Failure::retry(self.reason, self.message.clone(), interval)
        }
    }

    /// Marks the failure on `conds` ([`mark_fetch_failure`]); returns the Warning event.
    pub(crate) fn mark(&self, conds: &mut Conditions) -> (String, String, String) {
        mark_fetch_failure(conds, self.reason, &self.message, self.stalled)
    }
}

/// Marks a failed fetch as source-controller does for every source kind: `StorageOperationFailed`
/// (or `FetchFailed`) True, Ready False, Stalled when trying again cannot help, Reconciling
/// removed; the last good artifact stays in status and storage, so consumers keep using it.
/// Returns the Warning event to emit.
pub(crate) fn mark_fetch_failure(
    conds: &mut Conditions,
    reason: &str,
    message: &str,
    stalled: bool,
) -> (String, String, String) {
    let failed_type = if reason == ferroflux_source::reason::STORAGE_OPERATION_FAILED {
        conditions::STORAGE_OPERATION_FAILED
    } else {
        conditions::FETCH_FAILED
    };
    conds
        .mark_true(failed_type, reason, message)
        .mark_false(conditions::READY, reason, message);
    if stalled {
        conds.mark_stalled(reason, message);
    } else {
        conds.delete(conditions::STALLED);
    }
    conds.delete(conditions::RECONCILING);
    (
        "Warning".to_string(),
        reason.to_string(),
        message.to_string(),
    )
}
