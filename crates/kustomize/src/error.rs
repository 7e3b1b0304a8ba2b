//! Errors of a build. Every error names the file (relative to the repository root) it came
//! from when there is one.

use std::path::PathBuf;

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A file or folder could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The system's error, or what was missing.
        message: String,
    },
    /// A file is not YAML.
    #[error("{path}: malformed YAML: {error}")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// Where and why, with line and column.
        error: crate::yaml::parse::YamlError,
    },
    /// A kustomization or one of its files breaks a rule of kustomize's.
    #[error("{path}: {message}")]
    Invalid {
        /// The kustomization or file at fault.
        path: PathBuf,
        /// kustomize's words for it, where we know them.
        message: String,
    },
    /// A kustomization field or option kustomize has and this engine does not.
    #[error("{path}: {field} is not supported: {why}")]
    Unsupported {
        /// The kustomization.
        path: PathBuf,
        /// The field, e.g. `helmCharts`.
        field: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// A read outside what the load restrictions allow (a path leaving the root, a remote URL).
    #[error("{path}: refused: {message}")]
    Refused {
        /// The kustomization that asked.
        path: PathBuf,
        /// What was refused.
        message: String,
    },
    /// Kustomizations that include each other.
    #[error("resource cycle: {chain}")]
    Cycle {
        /// The folders of the cycle, `a -> b -> a`.
        chain: String,
    },
    /// Any other failure, in kustomize's words.
    #[error("{0}")]
    Other(String),
}

impl BuildError {
    pub(crate) fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        BuildError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, BuildError>;
