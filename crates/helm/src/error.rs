//! The crate's error type. Every variant prints the message Helm prints for the same fault
//! (what follows `Error: ` on `helm template`'s stderr).

/// Why loading, values, validation or rendering failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read (`context` names the operation and path).
    #[error("{context}: {}", crate::values::go_io_error(source))]
    Io {
        /// The operation and path (`open values.yaml`).
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The chart could not be loaded (malformed archive, Chart.yaml, values.yaml...).
    #[error("{0}")]
    Load(String),
    /// Chart.yaml breaks one of Helm's metadata rules.
    #[error("validation: {0}")]
    Validation(String),
    /// User-supplied values could not be read or parsed.
    #[error("{0}")]
    Values(String),
    /// The values do not satisfy a chart's `values.schema.json`.
    #[error("{0}")]
    Schema(String),
    /// The release name, the chart type, a dependency or a constraint refuses the install.
    #[error("{0}")]
    Install(String),
    /// A template failed to parse or execute.
    #[error("{0}")]
    Render(String),
}
