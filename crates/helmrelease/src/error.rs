//! Why an action failed, kept apart by what a controller does next: nothing was recorded
//! (bad chart or values, storage unreadable, release locked), or the action ran and its
//! revision is recorded with status `failed` ([`Error::Failed`], for remediation).

use crate::release::{Release, Status};
use crate::storage::StorageError;

/// Why an action failed. Messages read as Helm's where Helm has one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Release storage could not be read or written (a corrupted Secret among them).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The chart, the values (the chart's schema among them) or a template refused; nothing
    /// was recorded or applied.
    #[error(transparent)]
    Chart(#[from] ferroflux_helm::Error),
    /// The latest revision is `pending-*`: another operation holds the release (Helm's
    /// message). [`crate::Storage::unlock`] frees a stale one.
    #[error("another operation (install/upgrade/rollback) is in progress")]
    Pending {
        /// The pending status.
        status: Status,
    },
    /// The action cannot start (no release to upgrade, no such revision, name in use, an
    /// object owned by something else, a kind the cluster does not serve...); nothing was
    /// recorded.
    #[error("{0}")]
    Refused(String),
    /// The cluster could not be asked (discovery, version); nothing was recorded.
    #[error("{0}")]
    Cluster(String),
    /// The action ran and failed; `release` is the revision as recorded: status `failed` with
    /// Helm's description after an install, upgrade or rollback (the previous deployed
    /// revision is left as it was), or the tested revision with its test hooks' runs.
    #[error("{message}")]
    Failed {
        /// Helm's error text (e.g. `failed pre-install: ...`, a timeout waiting for objects).
        message: String,
        /// The failed revision as stored.
        release: Box<Release>,
    },
}

impl Error {
    /// The recorded failed revision, when the action got that far.
    pub fn release(&self) -> Option<&Release> {
        match self {
            Error::Failed { release, .. } => Some(release),
            _ => None,
        }
    }
}
