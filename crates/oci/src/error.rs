//! The one error type of the OCI client, with messages written for the operator: each names the
//! registry, repository or path involved and never a credential (the client never formats one).

/// What went wrong talking to a registry or handling an artifact.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The reference text is not `oci://HOST/REPO[:TAG][@DIGEST]`.
    #[error("invalid OCI reference {reference:?}: {why}")]
    InvalidReference {
        /// The text as given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// A docker config JSON, CA bundle or client certificate could not be used.
    #[error("invalid credentials: {0}")]
    InvalidCredentials(String),
    /// The registry could not be reached (connection refused, DNS, TLS, timeout).
    #[error("cannot reach registry {registry}: {detail}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// What the transport said.
        detail: String,
    },
    /// 401 (or 403) after authenticating: the credentials are wrong or missing.
    #[error(
        "401 Unauthorized: registry {registry} refused the credentials for {repository}{detail}"
    )]
    Unauthorized {
        /// `host[:port]`.
        registry: String,
        /// The repository asked for.
        repository: String,
        /// The registry's own error text, prefixed with ": ", or empty.
        detail: String,
    },
    /// The manifest (tag or digest) does not exist.
    #[error("{reference}: not found in {registry}{closest}")]
    ManifestUnknown {
        /// `host[:port]`.
        registry: String,
        /// `repo:tag` or `repo@digest`.
        reference: String,
        /// ", closest tags: a, b, c" or empty.
        closest: String,
    },
    /// No tag matches the semver range.
    #[error("no tag of {repository} matches {range:?}{closest}")]
    NoMatchingTag {
        /// `host/repo`.
        repository: String,
        /// The range as written.
        range: String,
        /// ", closest tags: a, b, c" or ", the repository has no semver tags".
        closest: String,
    },
    /// The manifest's media type is not one this operation can use.
    #[error("{reference}: unsupported manifest media type {media_type:?} (expected {expected})")]
    WrongMediaType {
        /// What was asked for.
        reference: String,
        /// What the registry answered.
        media_type: String,
        /// What would have been accepted.
        expected: String,
    },
    /// No layer of the manifest has the selected media type.
    #[error("{reference}: no layer with media type {media_type:?} (layers: {found})")]
    LayerNotFound {
        /// What was asked for.
        reference: String,
        /// The selector.
        media_type: String,
        /// The media types present.
        found: String,
    },
    /// Content whose sha256 is not the digest it was fetched by.
    #[error("digest mismatch for {what}: expected {expected}, got {actual}")]
    DigestMismatch {
        /// Which blob or manifest.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// A blob, manifest or extracted artifact larger than allowed.
    #[error("{what} exceeds the size limit of {limit} bytes")]
    TooLarge {
        /// Which blob, layer or tree.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// A tarball entry that would land outside the output directory.
    #[error("refusing to extract {entry:?}: {why}")]
    UnsafeEntry {
        /// The entry's path in the tarball.
        entry: String,
        /// Why it is refused.
        why: String,
    },
    /// The registry answered with an unexpected status.
    #[error("{method} {url}: HTTP {status}{detail}")]
    Registry {
        /// HTTP method.
        method: String,
        /// The URL (never carries credentials).
        url: String,
        /// HTTP status code.
        status: u16,
        /// The registry's error codes and messages, prefixed with ": ", or empty.
        detail: String,
    },
    /// The registry answered something that is not what the protocol promises.
    #[error("invalid response from {registry}: {detail}")]
    Protocol {
        /// `host[:port]`.
        registry: String,
        /// What was wrong.
        detail: String,
    },
    /// A local file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }

    /// True when the registry could not be reached at all (the last artifact stays served).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Error::Unreachable { .. })
    }

    /// Flux's condition reason for this failure on an `OCIRepository`.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidReference { .. } => "URLInvalid",
            Error::InvalidCredentials(_) | Error::Unauthorized { .. } => "AuthenticationFailed",
            Error::Io { .. } => "StorageOperationFailed",
            _ => "OCIArtifactPullFailed",
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
