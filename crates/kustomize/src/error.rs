//! Errors of a build. Every error names the file (relative to the repository root) it came
//! from when there is one.

use std::path::PathBuf;

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: malformed YAML: {error}")]
    Yaml {
        path: PathBuf,
        error: crate::yaml::parse::YamlError,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path}: {field} is not supported: {why}")]
    Unsupported {
        path: PathBuf,
        field: String,
        why: String,
    },
    #[error("{path}: refused: {message}")]
    Refused { path: PathBuf, message: String },
    #[error("resource cycle: {chain}")]
    Cycle { chain: String },
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
