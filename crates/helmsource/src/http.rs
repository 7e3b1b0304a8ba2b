//! The HTTP(S) client of a Helm repository: Helm's getter rules on ureq (rustls + ring, as
//! crates/source). Basic auth goes only to the repository's own scheme, host and port unless
//! `passCredentials` says otherwise; TLS trusts `ca.crt` (else the system roots) and presents
//! `tls.crt`/`tls.key` when given; every body is read under a size limit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};

use crate::error::{Error, Result};

/// Flux's default timeout of index and chart downloads.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach one Helm repository: what a HelmRepository and its secrets say.
#[derive(Clone, Default)]
pub struct RepositoryAccess {
    /// The repository URL (`http://` or `https://`), without a trailing slash.
    pub url: String,
    /// `username` and `password` of `secretRef`.
    pub basic: Option<(String, String)>,
    /// PEM certificates trusted instead of the system roots (`ca.crt`).
    pub ca_cert: Option<Vec<u8>>,
    /// PEM client certificate chain and key (`tls.crt`, `tls.key`).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// `spec.passCredentials`: send basic auth to chart URLs on other hosts too.
    pub pass_credentials: bool,
    /// `spec.timeout` of every request.
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for RepositoryAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password never reaches a log line.
        f.debug_struct("RepositoryAccess")
            .field("url", &self.url)
            .field(
                "basic",
                &self.basic.as_ref().map(|(u, _)| (u, "<redacted>")),
            )
            .field("ca_cert", &self.ca_cert.is_some())
            .field("client_cert", &self.client_cert.is_some())
            .field("pass_credentials", &self.pass_credentials)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RepositoryAccess {
    /// An anonymous access to `url`.
    pub fn anonymous(url: &str) -> Self {
        RepositoryAccess {
            url: normalize_url(url),
            ..Default::default()
        }
    }

    /// Reads the data of `secretRef` (`username`/`password`; legacy `caFile`/`certFile`/
    /// `keyFile` when there is no `certSecretRef`) and of `certSecretRef` (`ca.crt`,
    /// `tls.crt`, `tls.key`). `name` is `<ns>/<name>` of each secret, for messages.
    pub fn with_secrets(
        mut self,
        auth: Option<(&str, &BTreeMap<String, Vec<u8>>)>,
        certs: Option<(&str, &BTreeMap<String, Vec<u8>>)>,
    ) -> Result<Self> {
        if let Some((name, data)) = auth {
            let text = |k: &str| {
                data.get(k)
                    .map(|v| {
                        String::from_utf8_lossy(v)
                            .trim_end_matches('\n')
                            .to_string()
                    })
                    .filter(|v| !v.is_empty())
            };
            match (text("username"), text("password")) {
                (Some(u), Some(p)) => self.basic = Some((u, p)),
                (None, None) => {}
                _ => {
                    return Err(Error::InvalidSecret(format!(
                        "invalid '{name}' secret data: required fields 'username' and 'password'"
                    )));
                }
            }
            if certs.is_none() {
                self.read_tls(name, data, "caFile", "certFile", "keyFile")?;
            }
        }
        if let Some((name, data)) = certs {
            self.read_tls(name, data, "ca.crt", "tls.crt", "tls.key")?;
        }
        Ok(self)
    }

    fn read_tls(
        &mut self,
        name: &str,
        data: &BTreeMap<String, Vec<u8>>,
        ca: &str,
        crt: &str,
        key: &str,
    ) -> Result<()> {
        if let Some(pem) = data.get(ca) {
            // Parsed now so a bad certificate is named with its secret, not at first use.
            parse_certificates(pem)
                .map_err(|e| Error::InvalidSecret(format!("secret '{name}' key '{ca}': {e}")))?;
            self.ca_cert = Some(pem.clone());
        }
        match (data.get(crt), data.get(key)) {
            (Some(c), Some(k)) => {
                parse_certificates(c).map_err(|e| {
                    Error::InvalidSecret(format!("secret '{name}' key '{crt}': {e}"))
                })?;
                PrivateKey::from_pem(k).map_err(|e| {
                    Error::InvalidSecret(format!("secret '{name}' key '{key}': {e}"))
                })?;
                self.client_cert = Some((c.clone(), k.clone()));
            }
            (None, None) => {}
            _ => {
                return Err(Error::InvalidSecret(format!(
                    "invalid '{name}' secret data: '{crt}' and '{key}' must be given together"
                )));
            }
        }
        Ok(())
    }
}

fn parse_certificates(pem: &[u8]) -> std::result::Result<Vec<Certificate<'static>>, String> {
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item.map_err(|e| e.to_string())? {
            PemItem::Certificate(c) => certs.push(c),
            _ => continue,
        }
    }
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

/// Flux's `NormalizeURL`: no trailing slash.
pub fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// `scheme`, `host[:port]` (without user info) and the rest of an absolute URL.
fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then_some((scheme, host, &rest[end..]))
}

/// The URL with any user info removed, for messages.
pub fn redact(url: &str) -> String {
    match split_url(url) {
        Some((scheme, host, rest)) => format!("{scheme}://{host}{rest}"),
        None => url.to_string(),
    }
}

/// Helm's `ResolveReferenceURL`: a chart URL of the index, absolute or relative to the
/// repository URL.
pub fn resolve_reference(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    let base = normalize_url(base);
    if let Some(rest) = reference.strip_prefix('/')
        && let Some((scheme, host, _)) = split_url(&base)
    {
        return format!("{scheme}://{host}/{rest}");
    }
    let reference = reference.strip_prefix("./").unwrap_or(reference);
    format!("{base}/{reference}")
}

/// A client for one repository's index and charts.
pub struct Client {
    agent: ureq::Agent,
    access: RepositoryAccess,
}

impl Client {
    /// A client with the repository's TLS settings and timeout.
    pub fn new(access: RepositoryAccess) -> Result<Self> {
        let Some((scheme, _, _)) = split_url(&access.url) else {
            return Err(Error::InvalidUrl {
                url: redact(&access.url),
                detail: "expected an absolute http:// or https:// URL".into(),
            });
        };
        if scheme != "http" && scheme != "https" {
            return Err(Error::InvalidUrl {
                url: redact(&access.url),
                detail: format!("scheme '{scheme}' is not supported, use http or https"),
            });
        }
        let mut tls = TlsConfig::builder();
        if let Some(pem) = &access.ca_cert {
            let certs = parse_certificates(pem).map_err(Error::InvalidSecret)?;
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        if let Some((crt, key)) = &access.client_cert {
            let chain = parse_certificates(crt).map_err(Error::InvalidSecret)?;
            let key = PrivateKey::from_pem(key).map_err(|e| Error::InvalidSecret(e.to_string()))?;
            tls = tls.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.build())
            .timeout_global(Some(access.timeout.unwrap_or(DEFAULT_TIMEOUT)))
            .user_agent("ferroflux-source-controller")
            .max_redirects(10)
            .build();
        Ok(Client {
            agent: config.new_agent(),
            access,
        })
    }

    /// The repository URL, without credentials.
    pub fn url(&self) -> String {
        redact(&self.access.url)
    }

    /// The repository URL as configured (user info included, as Helm sends it).
    pub fn configured_url(&self) -> &str {
        &self.access.url
    }

    /// Whether the credentials go to `url`: same scheme and host (with port) as the
    /// repository's, or `passCredentials`.
    fn sends_credentials_to(&self, url: &str) -> bool {
        if self.access.pass_credentials {
            return true;
        }
        match (split_url(&self.access.url), split_url(url)) {
            (Some((s1, h1, _)), Some((s2, h2, _))) => s1 == s2 && h1 == h2,
            _ => false,
        }
    }

    /// GETs `url`, refusing a body above `limit` bytes. The error reads like Helm's getter's
    /// (`failed to fetch <url> : 401 Unauthorized`), without credentials.
    pub fn get(&self, url: &str, limit: u64) -> std::result::Result<Vec<u8>, String> {
        let shown = redact(url);
        let mut request = self.agent.get(url);
        if let Some((user, password)) = &self.access.basic
            && self.sends_credentials_to(url)
        {
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            request = request.header("Authorization", format!("Basic {token}"));
        }
        let mut response = request
            .call()
            .map_err(|e| format!("failed to fetch {shown} : {}", describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "failed to fetch {shown} : {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_string());
        }
        response
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => {
                    format!("{shown} is larger than the maximum size of {limit} bytes")
                }
                e => format!("failed to read {shown}: {}", describe(&e)),
            })
    }
}

/// ureq's errors, without the request's URL (which the caller names without credentials).
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(t) => format!("timed out ({t:?})"),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_like_helm() {
        let base = "https://charts.example.com/stable/";
        assert_eq!(
            resolve_reference(base, "podinfo-1.0.0.tgz"),
            "https://charts.example.com/stable/podinfo-1.0.0.tgz"
        );
        assert_eq!(
            resolve_reference(base, "/other/podinfo-1.0.0.tgz"),
            "https://charts.example.com/other/podinfo-1.0.0.tgz"
        );
        assert_eq!(
            resolve_reference(base, "https://cdn.example.com/p.tgz"),
            "https://cdn.example.com/p.tgz"
        );
        assert_eq!(
            redact("https://user:pw@h.example.com:8443/x"),
            "https://h.example.com:8443/x"
        );
    }

    #[test]
    fn credentials_stay_on_the_repository_host() {
        let access = RepositoryAccess {
            url: "https://h.example.com:8443/charts".into(),
            basic: Some(("u".into(), "p".into())),
            ..Default::default()
        };
        let c = Client::new(access.clone()).unwrap();
        assert!(c.sends_credentials_to("https://h.example.com:8443/charts/a.tgz"));
        assert!(!c.sends_credentials_to("https://h.example.com/charts/a.tgz"));
        assert!(!c.sends_credentials_to("https://cdn.example.com:8443/a.tgz"));
        let c = Client::new(RepositoryAccess {
            pass_credentials: true,
            ..access
        })
        .unwrap();
        assert!(c.sends_credentials_to("https://cdn.example.com/a.tgz"));
        assert!(!format!("{:?}", c.access).contains("\"p\""));
    }
}
