//! Why a Helm source could not be fetched or a chart not built, with the condition reason Flux's
//! source-controller gives each case. Messages never carry a credential.

/// Condition reasons of Helm sources, as source-controller spells them.
pub mod reason {
    /// A failure with no more specific reason (index download failures).
    pub const FAILED: &str = "Failed";
    /// The index could not be parsed or validated.
    pub const INDEXATION_FAILED: &str = "IndexationFailed";
    /// A secret is missing or holds unusable data.
    pub const AUTHENTICATION_FAILED: &str = "AuthenticationFailed";
    /// The repository URL is not usable.
    pub const URL_INVALID: &str = "URLInvalid";
    /// The chart or version is not in the index, or the chart path is not in the source.
    pub const INVALID_CHART_REFERENCE: &str = "InvalidChartReference";
    /// Downloading the chart failed.
    pub const CHART_PULL_ERROR: &str = "ChartPullError";
    /// Setting the version's build metadata failed.
    pub const METADATA_PATCH_ERROR: &str = "MetadataPatchError";
    /// A values file is missing or invalid.
    pub const VALUES_FILES_ERROR: &str = "ValuesFilesError";
    /// A dependency could not be resolved or downloaded.
    pub const DEPENDENCY_BUILD_ERROR: &str = "DependencyBuildError";
    /// Packaging the chart failed.
    pub const CHART_PACKAGE_ERROR: &str = "ChartPackageError";
    /// Writing to the artifact storage failed.
    pub const STORAGE_OPERATION_FAILED: &str = "StorageOperationFailed";
}

/// Why fetching an index or building a chart failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The repository URL does not parse or has an unsupported scheme.
    #[error("invalid Helm repository URL '{url}': {detail}")]
    InvalidUrl {
        /// The URL as written in the spec.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A secret's data cannot be used (missing keys, bad PEM).
    #[error("{0}")]
    InvalidSecret(String),
    /// The index could not be downloaded (network, HTTP status, size limit).
    #[error("failed to fetch Helm repository index: {0}")]
    IndexFetch(String),
    /// The index downloaded but does not parse or validate.
    #[error("failed to load Helm repository from index YAML: {0}")]
    IndexLoad(String),
    /// A chart build failed; `reason` is one of [`reason`]'s chart build reasons and the
    /// message starts with Flux's summary of it (`invalid chart reference: ...`).
    #[error("{summary}: {detail}")]
    Build {
        /// The condition reason (Flux's word for the failure).
        reason: &'static str,
        /// Flux's summary of the failure, which the message starts with.
        summary: &'static str,
        /// What went wrong, for the user.
        detail: String,
    },
    /// Writing or reading the artifact storage failed.
    #[error("storage operation failed: {0}")]
    Storage(String),
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The condition reason for this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidUrl { .. } => reason::URL_INVALID,
            Error::InvalidSecret(_) => reason::AUTHENTICATION_FAILED,
            Error::IndexFetch(_) => reason::FAILED,
            Error::IndexLoad(_) => reason::INDEXATION_FAILED,
            Error::Build { reason, .. } => reason,
            Error::Storage(_) => reason::STORAGE_OPERATION_FAILED,
        }
    }

    /// Whether retrying cannot help until the object (or its source) changes: Flux's
    /// persistent build errors (an invalid chart reference) and unusable URLs.
    pub fn is_stalling(&self) -> bool {
        match self {
            Error::InvalidUrl { .. } => true,
            Error::Build { reason, .. } => *reason == reason::INVALID_CHART_REFERENCE,
            _ => false,
        }
    }

    pub(crate) fn chart_reference(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::INVALID_CHART_REFERENCE,
            summary: "invalid chart reference",
            detail: detail.into(),
        }
    }

    pub(crate) fn chart_pull(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::CHART_PULL_ERROR,
            summary: "chart pull error",
            detail: detail.into(),
        }
    }

    pub(crate) fn authentication(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::AUTHENTICATION_FAILED,
            summary: "failed to authenticate with the Helm repository",
            detail: detail.into(),
        }
    }

    pub(crate) fn metadata_patch(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::METADATA_PATCH_ERROR,
            summary: "chart metadata patch error",
            detail: detail.into(),
        }
    }

    pub(crate) fn values_files(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::VALUES_FILES_ERROR,
            summary: "values files merge error",
            detail: detail.into(),
        }
    }

    pub(crate) fn dependency(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::DEPENDENCY_BUILD_ERROR,
            summary: "dependency build error",
            detail: detail.into(),
        }
    }

    pub(crate) fn package(detail: impl Into<String>) -> Self {
        Error::Build {
            reason: reason::CHART_PACKAGE_ERROR,
            summary: "chart package error",
            detail: detail.into(),
        }
    }

    pub(crate) fn storage(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        Error::Storage(format!("{}: {e}", path.display()))
    }
}
