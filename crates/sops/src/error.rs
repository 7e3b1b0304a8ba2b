//! Errors of the crate. Every error names the file or object it is about (`subject`) and the
//! reason; no error ever carries a decrypted value.

use std::fmt;

/// An error about one file or object.
#[derive(Debug)]
pub struct Error {
    /// The file path or object name the error is about, as the caller named it.
    pub subject: String,
    /// Why it failed.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(subject: impl Into<String>, kind: ErrorKind) -> Self {
        Error {
            subject: subject.into(),
            kind,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subject.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}: {}", self.subject, self.kind)
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.kind.source()
    }
}

/// The reason of an [`Error`].
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// A key type or option sops knows but this crate does not implement.
    #[error("not supported yet: {0}")]
    NotSupported(String),
    /// None of the given age identities opens any of the file's age recipients.
    #[error(
        "no age identity can decrypt the data key: the file is encrypted for {}; the {identities} identit{} given match{} none of them{}",
        list_or_none(recipients),
        if *identities == 1 { "y" } else { "ies" },
        if *identities == 1 { "es" } else { "" },
        unsupported_suffix(unsupported)
    )]
    NoMatchingKey {
        /// The age recipients written in the file.
        recipients: Vec<String>,
        /// How many identities were tried.
        identities: usize,
        /// Key types present in the file that this crate cannot use (pgp, kms, ...).
        unsupported: Vec<String>,
    },
    /// Decryption was asked for without any age identity.
    #[error("no age identity was given (the file is encrypted for {})", list_or_none(.0))]
    NoIdentities(Vec<String>),
    /// The recipient's age envelope of the data key is damaged (armor, header or payload).
    #[error("the age-encrypted data key for recipient {recipient} is damaged: {reason}")]
    BadEnvelope {
        /// The age recipient whose envelope is damaged.
        recipient: String,
        /// What age said about it.
        reason: String,
    },
    /// Key groups could not be combined (Shamir secret sharing).
    #[error("{0}")]
    KeyGroups(String),
    /// The input is larger than the configured limit.
    #[error("file is {size} bytes, above the limit of {limit} bytes for sops-encrypted files")]
    TooLarge {
        /// The input's size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The `sops` metadata names a version this crate does not read.
    #[error("sops metadata version {0:?} is not supported (this decryptor reads sops 3.x files)")]
    UnsupportedVersion(String),
    /// The input has no `sops` metadata.
    #[error("no sops metadata found: the file is not sops-encrypted")]
    MetadataNotFound,
    /// The `sops` metadata is malformed.
    #[error("invalid sops metadata: {0}")]
    InvalidMetadata(String),
    /// The document itself could not be parsed or written in its format.
    #[error("{format}: {reason}")]
    Format {
        /// `yaml`, `json`, `dotenv` or `binary`.
        format: &'static str,
        /// What the parser or writer said, with the position when there is one.
        reason: String,
    },
    /// One encrypted value could not be decrypted (bad syntax, wrong tag, wrong type).
    #[error("value at {path}: {reason}")]
    Value {
        /// Where the value is in the document (`data.password`, `items[2]`).
        path: String,
        /// Why it could not be decrypted.
        reason: String,
    },
    /// The MAC stored in the file does not match the decrypted content.
    #[error("MAC mismatch: the file's content was changed after it was encrypted")]
    MacMismatch,
    /// The stored MAC itself could not be decrypted.
    #[error("the stored MAC could not be decrypted: {0}")]
    BadMac(String),
    /// A recipient or identity string is not a valid age key.
    #[error("{0}")]
    Key(String),
    /// Encryption failed.
    #[error("encryption failed: {0}")]
    Encrypt(String),
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "no age recipient".to_string()
    } else {
        items.join(", ")
    }
}

fn unsupported_suffix(unsupported: &[String]) -> String {
    if unsupported.is_empty() {
        String::new()
    } else {
        format!(
            " (the file also has {} keys, which are not supported yet)",
            unsupported.join(", ")
        )
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
