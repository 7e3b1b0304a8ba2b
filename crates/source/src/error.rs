//! Errors of the Git source, classified the way a `GitRepository`'s `FetchFailed` condition is.

use std::path::PathBuf;

/// Every failure of resolving, fetching, packing or storing. Messages never contain a
/// credential: URLs are shown without user info and [`crate::Credentials::redact`] scrubs
/// every text that came from Git or the network before it is put in an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The URL cannot be used at all; retrying will not help (Flux: `URLInvalid`, stalled).
    #[error("invalid URL '{url}': {reason}")]
    InvalidUrl {
        /// The URL as written, without a password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `spec.ref` cannot be used as written (a short commit id, a bad semver range, …).
    #[error("invalid reference: {0}")]
    InvalidRef(String),
    /// The secret is missing a key or holds something unusable (Flux: `AuthenticationFailed`).
    #[error("invalid credentials: {0}")]
    InvalidSecret(String),
    /// The server refused the credentials, or none were given and it wanted some.
    #[error("authentication failed for '{url}': {detail}")]
    Authentication {
        /// The URL, without user info.
        url: String,
        /// What the server or the transport said, credentials scrubbed.
        detail: String,
    },
    /// Anything else Git: network, protocol, a missing ref, a host key that does not match.
    #[error("failed to checkout and determine revision: unable to fetch '{url}': {detail}")]
    Git {
        /// The URL, without user info.
        url: String,
        /// What Git said, credentials scrubbed.
        detail: String,
    },
    /// `spec.verify` refused the fetched commit or tag; `reason` is Flux's (for the Ready and
    /// `SourceVerified` conditions).
    #[error("{message}")]
    Verification {
        /// `InvalidCommitSignature`, `InvalidTagSignature`, `InvalidGitObject`,
        /// `InvalidVerificationMode` or `VerificationError`.
        reason: &'static str,
        /// What failed, in source-controller's words.
        message: String,
        /// Whether only a spec change can fix it.
        stalling: bool,
    },
    /// An included artifact could not be copied in (Flux's `CopyFailure`).
    #[error("{0}")]
    Include(String),
    /// A `spec.sparseCheckout` directory is not in the commit.
    #[error("failed to sparse checkout directories : {0}")]
    SparseCheckout(String),
    /// Writing a commit on top of the fetched one failed (image automation).
    #[error("failed to commit: {0}")]
    Commit(String),
    /// The remote refused a push, or the push could not be sent (image automation).
    #[error("failed to push to '{url}': {detail}")]
    Push {
        /// The URL, without user info.
        url: String,
        /// What went wrong, credentials scrubbed.
        detail: String,
    },
    /// The remote has no commits at all.
    #[error("git repository is empty: '{url}' has no branches or tags")]
    EmptyRepository {
        /// The URL, without user info.
        url: String,
    },
    /// A file of the commit is larger than the per-file limit.
    #[error(
        "file '{path}' is {size} bytes, over the limit of {limit} bytes per file \
         (max_file_size); the artifact was not written"
    )]
    FileTooLarge {
        /// The file, relative to the repository root.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The artifact would be larger than the limit for a whole artifact.
    #[error(
        "the files of the commit add up to more than {limit} bytes (max_artifact_size); \
         the artifact was not written"
    )]
    ArtifactTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Reading the fetched objects to build the artifact failed.
    #[error("failed to build the artifact: {0}")]
    Archive(String),
    /// Writing, renaming or deleting in the storage directory failed.
    #[error("storage operation on '{path}' failed: {source}")]
    Storage {
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The condition reasons Flux uses for these failures.
pub mod reason {
    /// The Secret is unusable or the server refused its credentials.
    pub const AUTHENTICATION_FAILED: &str = "AuthenticationFailed";
    /// Resolving or fetching the ref failed.
    pub const GIT_OPERATION_FAILED: &str = "GitOperationFailed";
    /// `spec.url` cannot be used.
    pub const URL_INVALID: &str = "URLInvalid";
    /// The repository has no commit at all.
    pub const EMPTY_GIT_REPOSITORY: &str = "EmptyGitRepository";
    /// Packing the fetched tree into a tar.gz failed (sizes, unreadable objects).
    pub const ARCHIVE_OPERATION_FAILED: &str = "ArchiveOperationFailed";
    /// Writing or collecting artifacts in the storage directory failed.
    pub const STORAGE_OPERATION_FAILED: &str = "StorageOperationFailed";
    /// An included artifact could not be copied into this one.
    pub const COPY_FAILURE: &str = "CopyFailure";
}

impl Error {
    /// The reason for the `FetchFailed` (or storage) condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidUrl { .. } => reason::URL_INVALID,
            Error::InvalidSecret(_) | Error::Authentication { .. } => reason::AUTHENTICATION_FAILED,
            Error::Git { .. }
            | Error::InvalidRef(_)
            | Error::Commit(_)
            | Error::Push { .. }
            | Error::SparseCheckout(_) => reason::GIT_OPERATION_FAILED,
            Error::EmptyRepository { .. } => reason::EMPTY_GIT_REPOSITORY,
            Error::FileTooLarge { .. } | Error::ArtifactTooLarge { .. } | Error::Archive(_) => {
                reason::ARCHIVE_OPERATION_FAILED
            }
            Error::Storage { .. } => reason::STORAGE_OPERATION_FAILED,
            Error::Include(_) => reason::COPY_FAILURE,
            Error::Verification { reason, .. } => reason,
        }
    }

    /// True when retrying without a spec change cannot succeed (Flux marks these `Stalled`).
    pub fn is_stalling(&self) -> bool {
        matches!(
            self,
            Error::InvalidUrl { .. }
                | Error::InvalidRef(_)
                | Error::Verification { stalling: true, .. }
        )
    }

    pub(crate) fn storage(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Storage {
            path: path.into(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
