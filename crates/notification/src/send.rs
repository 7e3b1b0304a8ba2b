//! Performs a provider's [`Plan`]: blocking HTTP (ureq) with the provider's timeout, proxy,
//! CA and client certificate, retried as Flux's go-retryablehttp client does (on connection errors, 429 and 5xx but
//! 501; exponential backoff from 2 s to 30 s, 4 retries). The caller runs it off the async
//! executor. Errors name the service by scheme and host only: a hook's path is its secret.

use crate::payload::{DEFAULT_TIMEOUT, Plan, ProviderConfig, Request};
use std::sync::Arc;
use std::time::Duration;
use ureq::tls::{ClientCert, PemItem, RootCerts, TlsConfig};

/// How often and how patiently a failed request is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Tries in all (the first included).
    pub attempts: u32,
    /// The wait after the first failure; doubled after each further one.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Retry {
    /// Flux's: 1 try + 4 retries, 2 s doubling to at most 30 s.
    fn default() -> Self {
        Retry {
            attempts: 5,
            first: Duration::from_secs(2),
            max: Duration::from_secs(30),
        }
    }
}

impl Retry {
    /// The wait before try `n + 1` (after `n` failures, `n >= 1`).
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.max)
    }
}

/// Why a notification was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The provider's settings cannot make a client (bad proxy, CA or client certificate).
    #[error("{0}")]
    Config(String),
    /// The service could not be reached, after every retry.
    #[error("failed to execute request to {service} after {attempts} attempt(s): {detail}")]
    Transport {
        /// `https://hooks.slack.com`.
        service: String,
        /// Tries made.
        attempts: u32,
        /// The last error.
        detail: String,
    },
    /// The service answered with an error, after every retry of a retryable one.
    #[error(
        "request to {service} failed with status code {status} after {attempts} attempt(s): {body}"
    )]
    Status {
        /// `https://hooks.slack.com`.
        service: String,
        /// The HTTP status.
        status: u16,
        /// Tries made.
        attempts: u32,
        /// The start of the answer's body.
        body: String,
    },
}

/// The TLS settings of `certSecretRef`: its CA as the only roots, its pair as the client
/// certificate; without a CA the system's roots stay.
fn tls_config(provider: &ProviderConfig) -> Result<TlsConfig, SendError> {
    let mut tls = TlsConfig::builder();
    if let Some(pem) = &provider.ca_pem {
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem) {
            match item {
                Ok(PemItem::Certificate(c)) => certs.push(c),
                Ok(_) => {}
                Err(e) => return Err(SendError::Config(format!("invalid ca.crt: {e}"))),
            }
        }
        if certs.is_empty() {
            return Err(SendError::Config(
                "failed to parse CA certificate: no PEM certificate found in ca.crt".into(),
            ));
        }
        tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
    }
    if let Some((cert_pem, key_pem)) = &provider.client_pem {
        let bad = |detail: String| {
            SendError::Config(format!("failed to parse TLS certificate and key: {detail}"))
        };
        let mut chain = Vec::new();
        for item in ureq::tls::parse_pem(cert_pem) {
            match item {
                Ok(PemItem::Certificate(c)) => chain.push(c),
                Ok(_) => {}
                Err(e) => return Err(bad(format!("tls.crt: {e}"))),
            }
        }
        if chain.is_empty() {
            return Err(bad("no PEM certificate found in tls.crt".into()));
        }
        let key =
            ureq::tls::PrivateKey::from_pem(key_pem).map_err(|e| bad(format!("tls.key: {e}")))?;
        tls = tls.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(tls.build())
}

/// What happened to a plan that did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// Sent.
    Sent,
    /// Nothing needed sending (skipped event, or a commit status already set).
    Unchanged,
}

/// Sends to one provider.
pub struct Sender {
    agent: ureq::Agent,
    retry: Retry,
}

/// `scheme://host[:port]` of a URL: how errors name a service.
pub fn service_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let host = rest[..end]
                .rsplit_once('@')
                .map_or(&rest[..end], |(_, h)| h);
            format!("{scheme}://{host}")
        }
        None => "the provider".into(),
    }
}

impl Sender {
    /// A client with the provider's timeout, proxy, CA and client certificate.
    pub fn new(provider: &ProviderConfig, retry: Retry) -> Result<Sender, SendError> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(provider.timeout.unwrap_or(DEFAULT_TIMEOUT)))
            .user_agent("ferroflux-notification-controller");
        if let Some(proxy) = provider.proxy.as_deref().filter(|p| !p.is_empty()) {
            let proxy = ureq::Proxy::new(proxy)
                .map_err(|e| SendError::Config(format!("invalid proxy address: {e}")))?;
            config = config.proxy(Some(proxy));
        }
        if provider.ca_pem.is_some() || provider.client_pem.is_some() {
            config = config.tls_config(tls_config(provider)?);
        }
        Ok(Sender {
            agent: config.build().new_agent(),
            retry,
        })
    }

    /// Performs the plan.
    pub fn send(&self, plan: &Plan) -> Result<Delivered, SendError> {
        match plan {
            Plan::Skip(_) => Ok(Delivered::Unchanged),
            Plan::Post(request) => self.perform(request).map(|_| Delivered::Sent),
            Plan::Sequence(requests) => {
                for request in requests {
                    self.perform(request)?;
                }
                Ok(Delivered::Sent)
            }
            Plan::Comment(comment) => {
                let json = |body: Vec<u8>| {
                    serde_json::from_slice::<serde_json::Value>(&body)
                        .unwrap_or(serde_json::Value::Null)
                };
                let user = json(self.perform(&comment.user)?);
                let login = user.pointer(comment.login).and_then(|l| l.as_str());
                let listed = json(self.perform(&comment.list)?);
                let existing = listed.as_array().into_iter().flatten().find(|c| {
                    login.is_some()
                        && c.pointer(comment.author).and_then(|a| a.as_str()) == login
                        && c.get("body")
                            .and_then(|b| b.as_str())
                            .is_some_and(|b| b.contains(&comment.marker))
                });
                let id = existing.and_then(|c| c.get("id")).and_then(|i| i.as_u64());
                match id {
                    Some(id) => {
                        let mut edit = comment.edit.clone();
                        edit.url.push_str(&id.to_string());
                        self.perform(&edit)?;
                    }
                    None => {
                        self.perform(&comment.create)?;
                    }
                }
                Ok(Delivered::Sent)
            }
            Plan::CommitStatus {
                list,
                post,
                duplicate,
            } => {
                let listed = match self.perform(list) {
                    Ok(body) => serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
                    // No status of this key yet.
                    Err(SendError::Status { status: 404, .. }) if duplicate.missing_is_none => {
                        serde_json::Value::Null
                    }
                    Err(e) => return Err(e),
                };
                if duplicate.is_duplicate(&listed) {
                    return Ok(Delivered::Unchanged);
                }
                self.perform(post).map(|_| Delivered::Sent)
            }
        }
    }

    /// One request with retries; the body of a 2xx answer.
    pub fn perform(&self, request: &Request) -> Result<Vec<u8>, SendError> {
        let service = service_of(&request.url);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self.once(request);
            let retryable = match &result {
                Ok((status, _)) => *status == 429 || (*status >= 500 && *status != 501),
                Err(_) => true,
            };
            if !retryable || attempt >= self.retry.attempts {
                return match result {
                    Ok((status, body)) if (200..300).contains(&status) => Ok(body),
                    Ok((status, body)) => Err(SendError::Status {
                        service,
                        status,
                        attempts: attempt,
                        body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
                    }),
                    Err(detail) => Err(SendError::Transport {
                        service,
                        attempts: attempt,
                        detail,
                    }),
                };
            }
            tracing::debug!(%service, attempt, "notification failed, retrying");
            std::thread::sleep(self.retry.backoff(attempt));
        }
    }

    fn once(&self, request: &Request) -> Result<(u16, Vec<u8>), String> {
        let response = match request.method {
            "GET" => {
                let mut r = self.agent.get(&request.url);
                for (k, v) in &request.headers {
                    r = r.header(k.as_str(), v.as_str());
                }
                r.call()
            }
            method => {
                let mut r = match method {
                    "PUT" => self.agent.put(&request.url),
                    "PATCH" => self.agent.patch(&request.url),
                    _ => self.agent.post(&request.url),
                };
                r = r.header("Content-Type", request.content_type.as_str());
                for (k, v) in &request.headers {
                    r = r.header(k.as_str(), v.as_str());
                }
                r.send(&request.body[..])
            }
        };
        let mut response = response.map_err(|e| match e {
            ureq::Error::Timeout(t) => format!("timed out ({t:?})"),
            ureq::Error::Io(io) => io.to_string(),
            other => other.to_string(),
        })?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(1024 * 1024)
            .read_to_vec()
            .unwrap_or_default();
        Ok((status, body))
    }
}
