//! The TLS material of a Provider's `certSecretRef` as Flux reads it: `tls.crt` and `tls.key`
//! (a client certificate for mutual TLS) and `ca.crt` (the only CAs trusted, instead of the
//! system's), each falling back to its deprecated name (`certFile`, `keyFile`, `caFile`). A
//! Secret with half a pair, or with neither a pair nor a CA, is refused naming the keys.

use std::collections::BTreeMap;

/// PEM files a sender uses; each is present only when the Secret had it (non-empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// `ca.crt` (or `caFile`).
    pub ca_pem: Option<Vec<u8>>,
    /// `tls.crt` (or `certFile`): the client certificate chain.
    pub cert_pem: Option<Vec<u8>>,
    /// `tls.key` (or `keyFile`): its private key.
    pub key_pem: Option<Vec<u8>>,
}

/// Why a Secret's TLS keys cannot be used, in Flux's words.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TlsKeyError {
    /// A certificate without its key.
    #[error("secret '{0}' contains 'tls.crt' but missing 'tls.key'")]
    MissingKey(String),
    /// A key without its certificate.
    #[error("secret '{0}' contains 'tls.key' but missing 'tls.crt'")]
    MissingCertificate(String),
    /// Nothing TLS at all.
    #[error("secret '{0}' must contain either 'ca.crt' or both 'tls.crt' and 'tls.key'")]
    Nothing(String),
}

/// Whether the Secret holds any TLS key (standard or deprecated name): commit-status Providers
/// read TLS from their `secretRef` only then.
pub fn has_tls_keys(data: &BTreeMap<String, Vec<u8>>) -> bool {
    [
        "tls.crt", "tls.key", "ca.crt", "certFile", "keyFile", "caFile",
    ]
    .iter()
    .any(|k| data.get(*k).is_some_and(|v| !v.is_empty()))
}

/// The TLS files of Secret `secret` (`namespace/name`, for messages) with keys `data`.
pub fn from_secret(
    secret: &str,
    data: &BTreeMap<String, Vec<u8>>,
) -> Result<TlsFiles, TlsKeyError> {
    // The standard name wins; an empty value counts as absent, as in Flux.
    let pick = |key: &str, legacy: &str| {
        [key, legacy]
            .iter()
            .find_map(|k| data.get(*k).filter(|v| !v.is_empty()))
            .cloned()
    };
    let files = TlsFiles {
        ca_pem: pick("ca.crt", "caFile"),
        cert_pem: pick("tls.crt", "certFile"),
        key_pem: pick("tls.key", "keyFile"),
    };
    match (&files.cert_pem, &files.key_pem, &files.ca_pem) {
        (Some(_), None, _) => Err(TlsKeyError::MissingKey(secret.into())),
        (None, Some(_), _) => Err(TlsKeyError::MissingCertificate(secret.into())),
        (None, None, None) => Err(TlsKeyError::Nothing(secret.into())),
        _ => Ok(files),
    }
}
