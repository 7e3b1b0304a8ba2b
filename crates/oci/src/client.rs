//! The registry v2 client for one registry: scheme discovery, the auth flow, manifests, blobs,
//! uploads and tag lists.
//!
//! Scheme: as go-containerregistry, HTTPS is tried first; plain HTTP is the fallback only for
//! `localhost`, loopback and private (RFC 1918) addresses, or when the caller allows it
//! (`--insecure-registry`, `spec.insecure`). Auth: the registry's `GET /v2/` answer names the
//! scheme. `Basic` gets the credentials on every request; `Bearer` sends us to the token service
//! (`realm`, `service`, `scope=repository:<repo>:pull[,push]`) with the credentials as Basic auth
//! (anonymous when there are none) and the token it returns is cached per scope and fetched
//! again once when a request is refused.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::Digest;
use ureq::http;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};

use crate::auth::{Auth, Challenge, parse_challenge};
use crate::error::{Error, Result};
use crate::manifest::{Descriptor, MANIFEST_ACCEPT, hex_digest};
use crate::reference::{Reference, host_of};

/// The transport's error, with what a TLS alert from a registry that requires client
/// certificates (mutual TLS) means for the operator: rustls only names the alert.
fn explain_tls_alert(detail: &str, client_cert_given: bool) -> String {
    let hint = if detail.contains("CertificateRequired")
        || (!client_cert_given && detail.contains("HandshakeFailure"))
    {
        "the registry requires a client certificate and none was given (tls.crt and tls.key in the certSecretRef Secret)"
    } else if detail.contains("BadCertificate")
        || detail.contains("UnknownCA")
        || detail.contains("CertificateUnknown")
        || (client_cert_given && detail.contains("HandshakeFailure"))
    {
        "the registry refused the client certificate (tls.crt is not signed by a CA it trusts, or not for client authentication)"
    } else {
        return detail.to_string();
    };
    format!("{detail}: {hint}")
}

/// The largest manifest accepted (distribution's own limit is 4 MiB).
pub const MAX_MANIFEST_SIZE: u64 = 4 * 1024 * 1024;

/// How to connect to a registry.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Credentials for this registry.
    pub auth: Auth,
    /// Allow plain HTTP to a registry that is not local (`--insecure-registry`, `spec.insecure`).
    pub insecure: bool,
    /// PEM CA bundle to trust instead of the public roots (`ca.crt`).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate and key for mutual TLS (`tls.crt`, `tls.key`).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// Bound on each HTTP exchange, body included.
    pub timeout: Duration,
    /// An HTTP(S) proxy every request goes through (`proxySecretRef`), credentials in its user
    /// info.
    pub proxy: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            auth: Auth::Anonymous,
            insecure: false,
            ca_pem: None,
            client_cert: None,
            timeout: Duration::from_secs(60),
            proxy: None,
        }
    }
}

/// What a HEAD of a manifest tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestHead {
    /// `Docker-Content-Digest`.
    pub digest: String,
    /// `Content-Type`.
    pub media_type: String,
    /// `Content-Length`.
    pub size: u64,
}

/// A manifest as the registry served it, digest-checked.
#[derive(Debug, Clone)]
pub struct RawManifest {
    /// The exact bytes (what the digest covers).
    pub bytes: Vec<u8>,
    /// `Content-Type`, or the document's own `mediaType`.
    pub media_type: String,
    /// sha256 of `bytes`.
    pub digest: String,
}

/// A request body that can be sent again after a refused token.
#[derive(Clone, Copy)]
pub(crate) enum Body<'a> {
    Empty,
    Bytes(&'a [u8]),
    File(&'a Path),
}

#[derive(Default)]
struct State {
    /// `https` or `http`, once `GET /v2/` answered.
    scheme: Option<&'static str>,
    challenge: Option<Challenge>,
    tokens: HashMap<String, String>,
}

/// A client of one registry (`host[:port]`). Cheap to clone; clones share the token cache.
#[derive(Clone)]
pub struct Client {
    registry: String,
    auth: Auth,
    insecure: bool,
    /// Whether a client certificate is configured (to explain a TLS alert).
    client_cert_given: bool,
    agent: ureq::Agent,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("registry", &self.registry)
            .field("auth", &self.auth)
            .field("insecure", &self.insecure)
            .finish()
    }
}

fn pem_items(pem: &[u8], what: &str) -> Result<Vec<PemItem<'static>>> {
    ureq::tls::parse_pem(pem)
        .map(|i| i.map_err(|e| Error::InvalidCredentials(format!("{what} is not PEM: {e}"))))
        .collect()
}

/// True for hosts go-containerregistry speaks plain HTTP to without being told.
fn local_host(registry: &str) -> bool {
    let host = host_of(registry);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback(),
        Err(_) => false,
    }
}

impl Client {
    /// A client of `registry` (`host[:port]`).
    pub fn new(registry: &str, opts: ClientOptions) -> Result<Self> {
        let mut tls = TlsConfig::builder();
        if let Some(pem) = &opts.ca_pem {
            let certs: Vec<Certificate<'static>> = pem_items(pem, "the CA bundle")?
                .into_iter()
                .filter_map(|i| match i {
                    PemItem::Certificate(c) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(Error::InvalidCredentials(
                    "the CA bundle holds no certificate".into(),
                ));
            }
            tls = tls.root_certs(RootCerts::from(certs));
        }
        if let Some((cert_pem, key_pem)) = &opts.client_cert {
            let chain: Vec<Certificate<'static>> = pem_items(cert_pem, "the client certificate")?
                .into_iter()
                .filter_map(|i| match i {
                    PemItem::Certificate(c) => Some(c),
                    _ => None,
                })
                .collect();
            let key = PrivateKey::from_pem(key_pem).map_err(|_| {
                Error::InvalidCredentials("the client key is not a PEM private key".into())
            })?;
            tls = tls.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.build())
            .timeout_global(Some(opts.timeout))
            .user_agent(concat!("ferroflux/", env!("CARGO_PKG_VERSION")))
            .max_redirects(5);
        if let Some(proxy) = &opts.proxy {
            let proxy = ureq::Proxy::new(proxy).map_err(|_| {
                Error::InvalidCredentials("the proxy address is not a valid URL".into())
            })?;
            config = config.proxy(Some(proxy));
        }
        let config = config.build();
        Ok(Client {
            registry: registry.to_string(),
            auth: opts.auth,
            insecure: opts.insecure,
            client_cert_given: opts.client_cert.is_some(),
            agent: config.new_agent(),
            state: Arc::new(Mutex::new(State::default())),
        })
    }

    /// A client of `reference`'s registry.
    pub fn for_reference(reference: &Reference, opts: ClientOptions) -> Result<Self> {
        Client::new(&reference.registry, opts)
    }

    /// `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the cache inconsistent (plain inserts).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn unreachable(&self, e: impl std::fmt::Display) -> Error {
        Error::Unreachable {
            registry: self.registry.clone(),
            detail: explain_tls_alert(&e.to_string(), self.client_cert_given),
        }
    }

    /// Finds the scheme and the auth challenge with `GET /v2/` (once per client).
    fn ping(&self) -> Result<&'static str> {
        if let Some(s) = self.state().scheme {
            return Ok(s);
        }
        let plain_ok = self.insecure || local_host(&self.registry);
        let mut errors = Vec::new();
        for scheme in ["https", "http"] {
            if scheme == "http" && !plain_ok {
                break;
            }
            let url = format!("{scheme}://{}/v2/", self.registry);
            match self.agent.get(&url).call() {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    // A TLS port spoken to in plain HTTP answers 400: not this scheme.
                    if scheme == "http" && status == 400 {
                        errors.push(format!("{url}: HTTP 400 (a TLS port?)"));
                        continue;
                    }
                    let challenge = resp
                        .headers()
                        .get("www-authenticate")
                        .and_then(|v| v.to_str().ok())
                        .and_then(parse_challenge);
                    if status != 200 && status != 401 {
                        return Err(Error::Registry {
                            method: "GET".into(),
                            url,
                            status,
                            detail: String::new(),
                        });
                    }
                    let mut st = self.state();
                    st.scheme = Some(scheme);
                    st.challenge = challenge;
                    return Ok(scheme);
                }
                Err(e) => errors.push(format!("{url}: {e}")),
            }
        }
        Err(self.unreachable(errors.join("; ")))
    }

    fn scope(repo: &str, push: bool) -> String {
        format!(
            "repository:{repo}:{}",
            if push { "pull,push" } else { "pull" }
        )
    }

    /// The `Authorization` header for a request on `repo`, fetching a token when needed.
    fn authorization(&self, repo: &str, push: bool, refresh: bool) -> Result<Option<String>> {
        let challenge = self.state().challenge.clone();
        match challenge {
            None => Ok(None),
            Some(Challenge::Basic) => Ok(self.auth.basic_header()),
            Some(Challenge::Bearer { realm, service }) => {
                if let Auth::Bearer(t) = &self.auth {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let scope = Self::scope(repo, push);
                if !refresh && let Some(t) = self.state().tokens.get(&scope) {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let token = self.fetch_token(&realm, service.as_deref(), &scope, repo)?;
                self.state().tokens.insert(scope, token.clone());
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        repo: &str,
    ) -> Result<String> {
        let mut req = self.agent.get(realm).query("scope", scope);
        if let Some(s) = service {
            req = req.query("service", s);
        }
        if let Some(h) = self.auth.basic_header() {
            req = req.header("Authorization", h);
        }
        let mut resp = req.call().map_err(|e| self.unreachable(e))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            return Err(Error::Unauthorized {
                registry: self.registry.clone(),
                repository: repo.to_string(),
                detail: ": the token service refused the credentials".into(),
            });
        }
        if status != 200 {
            return Err(Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("token service {realm} answered HTTP {status}"),
            });
        }
        #[derive(serde::Deserialize)]
        struct TokenResponse {
            token: Option<String>,
            access_token: Option<String>,
        }
        let body: TokenResponse = resp
            .body_mut()
            .with_config()
            .limit(1024 * 1024)
            .read_to_vec()
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("token service {realm} answered something that is not a token"),
            })?;
        body.token
            .or(body.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("token service {realm} answered no token"),
            })
    }

    fn url(&self, scheme: &str, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{scheme}://{}{path}", self.registry)
        }
    }

    /// One request with auth; a refused bearer token is fetched again once, and a challenge
    /// first seen here (a registry answering `/v2/` anonymously) is adopted once.
    pub(crate) fn send(
        &self,
        method: &str,
        repo: &str,
        push: bool,
        path: &str,
        headers: &[(&str, &str)],
        body: Body<'_>,
    ) -> Result<http::Response<ureq::Body>> {
        let scheme = self.ping()?;
        let url = self.url(scheme, path);
        let mut retried = false;
        loop {
            let auth = self.authorization(repo, push, retried)?;
            let mut builder = http::Request::builder().method(method).uri(&url);
            for (k, v) in headers {
                builder = builder.header(*k, *v);
            }
            if let Some(a) = &auth {
                builder = builder.header("Authorization", a);
            }
            let invalid = |e: http::Error| Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("cannot build a request for {url}: {e}"),
            };
            let resp = match body {
                Body::Empty => self.agent.run(builder.body(()).map_err(invalid)?),
                Body::Bytes(b) => self.agent.run(builder.body(b).map_err(invalid)?),
                Body::File(p) => {
                    let f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
                    self.agent.run(builder.body(f).map_err(invalid)?)
                }
            }
            .map_err(|e| self.unreachable(e))?;
            let status = resp.status().as_u16();
            if (status == 401 || status == 403) && !retried {
                let fresh = resp
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_challenge);
                let mut st = self.state();
                let changed = fresh.is_some() && fresh != st.challenge;
                let bearer = matches!(st.challenge, Some(Challenge::Bearer { .. }));
                if changed {
                    st.challenge = fresh;
                }
                drop(st);
                if changed || bearer {
                    retried = true;
                    continue;
                }
            }
            if status == 401 || status == 403 {
                let detail = error_detail(resp);
                return Err(Error::Unauthorized {
                    registry: self.registry.clone(),
                    repository: repo.to_string(),
                    detail,
                });
            }
            return Ok(resp);
        }
    }

    fn status_error(&self, method: &str, url: &str, resp: http::Response<ureq::Body>) -> Error {
        let status = resp.status().as_u16();
        Error::Registry {
            method: method.into(),
            url: url.into(),
            status,
            detail: error_detail(resp),
        }
    }

    fn not_found(&self, r: &Reference) -> Error {
        let what = match (&r.tag, &r.digest) {
            (_, Some(d)) => format!("{}@{d}", r.repository),
            (Some(t), None) => format!("{}:{t}", r.repository),
            (None, None) => format!("{}:latest", r.repository),
        };
        let closest = match (&r.digest, &r.tag) {
            (None, Some(t)) => self
                .list_tags(&r.repository)
                .map(|tags| closest_tags(t, &tags))
                .unwrap_or_default(),
            _ => String::new(),
        };
        Error::ManifestUnknown {
            registry: self.registry.clone(),
            reference: what,
            closest,
        }
    }

    /// `HEAD /v2/<repo>/manifests/<ref>`: the digest without downloading (the no-op poll).
    pub fn head_manifest(&self, r: &Reference) -> Result<ManifestHead> {
        let path = format!("/v2/{}/manifests/{}", r.repository, r.manifest_ref());
        let resp = self.send(
            "HEAD",
            &r.repository,
            false,
            &path,
            &[("Accept", MANIFEST_ACCEPT)],
            Body::Empty,
        )?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Err(self.not_found(r)),
            _ => return Err(self.status_error("HEAD", &path, resp)),
        }
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let media_type = header("content-type").unwrap_or_default();
        let size = header("content-length")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        match header("docker-content-digest") {
            Some(digest) => Ok(ManifestHead {
                digest,
                media_type,
                size,
            }),
            // Some registries omit the digest on HEAD: fall back to reading the manifest.
            None => {
                let m = self.get_manifest(r)?;
                Ok(ManifestHead {
                    digest: m.digest,
                    media_type: m.media_type,
                    size: m.bytes.len() as u64,
                })
            }
        }
    }

    /// `GET /v2/<repo>/manifests/<ref>`, checked against the digest asked for (or the one the
    /// registry announced).
    pub fn get_manifest(&self, r: &Reference) -> Result<RawManifest> {
        let path = format!("/v2/{}/manifests/{}", r.repository, r.manifest_ref());
        let mut resp = self.send(
            "GET",
            &r.repository,
            false,
            &path,
            &[("Accept", MANIFEST_ACCEPT)],
            Body::Empty,
        )?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Err(self.not_found(r)),
            _ => return Err(self.status_error("GET", &path, resp)),
        }
        let announced = resp
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(';').next().unwrap_or(s).trim().to_string());
        let bytes = read_limited(resp.body_mut(), MAX_MANIFEST_SIZE, &format!("manifest {r}"))
            .map_err(|e| match e {
                Error::Io { source, .. } => self.unreachable(source),
                e => e,
            })?;
        let digest = crate::manifest::digest_of(&bytes);
        if let Some(expected) = r.digest.as_ref().or(announced.as_ref())
            && *expected != digest
        {
            return Err(Error::DigestMismatch {
                what: format!("manifest {r}"),
                expected: expected.clone(),
                actual: digest,
            });
        }
        let media_type = content_type
            .filter(|t| !t.is_empty() && t != "application/json")
            .or_else(|| {
                serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("mediaType")?.as_str().map(str::to_string))
            })
            .unwrap_or_default();
        Ok(RawManifest {
            bytes,
            media_type,
            digest,
        })
    }

    /// `PUT /v2/<repo>/manifests/<tag>`; returns the manifest's digest.
    pub fn put_manifest(&self, r: &Reference, media_type: &str, bytes: &[u8]) -> Result<String> {
        let path = format!("/v2/{}/manifests/{}", r.repository, r.manifest_ref());
        let resp = self.send(
            "PUT",
            &r.repository,
            true,
            &path,
            &[("Content-Type", media_type)],
            Body::Bytes(bytes),
        )?;
        if !(200..=202).contains(&resp.status().as_u16()) {
            return Err(self.status_error("PUT", &path, resp));
        }
        Ok(crate::manifest::digest_of(bytes))
    }

    /// Whether the repository already holds the blob (`HEAD /v2/<repo>/blobs/<digest>`).
    pub fn blob_exists(&self, repo: &str, digest: &str) -> Result<bool> {
        let path = format!("/v2/{repo}/blobs/{digest}");
        let resp = self.send("HEAD", repo, true, &path, &[], Body::Empty)?;
        match resp.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(self.status_error("HEAD", &path, resp)),
        }
    }

    /// Streams the blob of `desc` into `out`, refusing more than `limit` bytes and checking its
    /// size and sha256 against the descriptor.
    pub fn get_blob(
        &self,
        repo: &str,
        desc: &Descriptor,
        limit: u64,
        out: &mut dyn Write,
    ) -> Result<()> {
        let mut blob = self.open_blob(repo, desc, limit)?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match blob.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(blob.take_error().unwrap_or_else(|| self.unreachable(e))),
            };
            out.write_all(&buf[..n])
                .map_err(|e| Error::io(format!("blob {}", desc.digest), e))?;
        }
        blob.finish()
    }

    /// Starts downloading the blob of `desc`: the [`BlobReader`] hashes and counts the bytes as
    /// they are read, so a caller can unpack the stream while it arrives and learn from
    /// [`BlobReader::finish`] whether what it used was the content the digest names.
    pub fn open_blob(&self, repo: &str, desc: &Descriptor, limit: u64) -> Result<BlobReader> {
        let what = format!("blob {}", desc.digest);
        if desc.size > limit {
            return Err(Error::TooLarge { what, limit });
        }
        let path = format!("/v2/{repo}/blobs/{}", desc.digest);
        let resp = self.send("GET", repo, false, &path, &[], Body::Empty)?;
        if resp.status().as_u16() != 200 {
            return Err(self.status_error("GET", &path, resp));
        }
        Ok(BlobReader {
            inner: resp
                .into_body()
                .into_with_config()
                .limit(limit.saturating_add(1))
                .reader(),
            hasher: sha2::Sha256::new(),
            total: 0,
            limit,
            desc: desc.clone(),
            registry: self.registry.clone(),
            error: None,
        })
    }

    /// Uploads a blob (monolithic: `POST` an upload, then one `PUT` with the content), unless
    /// the repository already has it.
    pub(crate) fn push_blob(&self, repo: &str, digest: &str, body: Body<'_>) -> Result<()> {
        if self.blob_exists(repo, digest)? {
            return Ok(());
        }
        let path = format!("/v2/{repo}/blobs/uploads/");
        let resp = self.send("POST", repo, true, &path, &[], Body::Bytes(&[]))?;
        if resp.status().as_u16() != 202 {
            return Err(self.status_error("POST", &path, resp));
        }
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("POST {path}: no Location for the upload"),
            })?
            .to_string();
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{sep}digest={digest}");
        let resp = self.send(
            "PUT",
            repo,
            true,
            &put,
            &[("Content-Type", "application/octet-stream")],
            body,
        )?;
        if resp.status().as_u16() != 201 {
            return Err(self.status_error("PUT", &format!("/v2/{repo}/blobs/uploads/…"), resp));
        }
        Ok(())
    }

    /// Uploads `bytes` as a blob; returns its descriptor.
    pub fn push_blob_bytes(
        &self,
        repo: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<Descriptor> {
        let digest = crate::manifest::digest_of(bytes);
        self.push_blob(repo, &digest, Body::Bytes(bytes))?;
        Ok(Descriptor {
            media_type: media_type.to_string(),
            digest,
            size: bytes.len() as u64,
            annotations: Default::default(),
            platform: None,
        })
    }

    /// Uploads the file at `path` as a blob whose digest is `digest`; returns its descriptor.
    pub fn push_blob_file(
        &self,
        repo: &str,
        media_type: &str,
        path: &Path,
        digest: &str,
        size: u64,
    ) -> Result<Descriptor> {
        self.push_blob(repo, digest, Body::File(path))?;
        Ok(Descriptor {
            media_type: media_type.to_string(),
            digest: digest.to_string(),
            size,
            annotations: Default::default(),
            platform: None,
        })
    }

    /// Every tag of `repo` (`GET /v2/<repo>/tags/list`, following `Link` pages).
    pub fn list_tags(&self, repo: &str) -> Result<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct Tags {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let mut out = Vec::new();
        let mut path = format!("/v2/{repo}/tags/list?n=1000");
        for _ in 0..10_000 {
            let mut resp = self.send("GET", repo, false, &path, &[], Body::Empty)?;
            match resp.status().as_u16() {
                200 => {}
                // distribution answers NAME_UNKNOWN for a repository never pushed to.
                404 => return Ok(out),
                _ => return Err(self.status_error("GET", &path, resp)),
            }
            let next = resp
                .headers()
                .get("link")
                .and_then(|v| v.to_str().ok())
                .and_then(next_link);
            let bytes = resp
                .body_mut()
                .with_config()
                .limit(64 * 1024 * 1024)
                .read_to_vec()
                .map_err(|e| self.unreachable(e))?;
            let page: Tags = serde_json::from_slice(&bytes).map_err(|e| Error::Protocol {
                registry: self.registry.clone(),
                detail: format!("tag list of {repo}: {e}"),
            })?;
            out.extend(page.tags.unwrap_or_default());
            match next {
                Some(n) => path = n,
                None => return Ok(out),
            }
        }
        Ok(out)
    }

    /// Points `tag` at the manifest `from` designates (the same bytes, so the same digest).
    pub fn tag(&self, from: &Reference, tag: &str) -> Result<String> {
        let m = self.get_manifest(from)?;
        self.put_manifest(&from.with_tag(tag), &m.media_type, &m.bytes)
    }
}

/// `<url>; rel="next"` → url.
/// A blob as it downloads (see [`Client::open_blob`]): what is read through it is hashed and
/// counted; reading more than the limit, or a transport failure, is an I/O error whose cause
/// [`BlobReader::finish`] (or [`BlobReader::take_error`]) names.
pub struct BlobReader {
    inner: ureq::BodyReader<'static>,
    hasher: sha2::Sha256,
    total: u64,
    limit: u64,
    desc: Descriptor,
    registry: String,
    /// Why reading stopped, kept for `finish`: the reader's caller only sees an `io::Error`.
    error: Option<Error>,
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.error.is_some() {
            return Err(std::io::Error::other(self.failure()));
        }
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                // ureq's own limit (one byte over ours) ends the body with an error.
                self.error = Some(if self.total >= self.limit {
                    self.too_large()
                } else {
                    Error::Unreachable {
                        registry: self.registry.clone(),
                        detail: e.to_string(),
                    }
                });
                return Err(std::io::Error::other(self.failure()));
            }
        };
        self.total += n as u64;
        if self.total > self.limit {
            self.error = Some(self.too_large());
            return Err(std::io::Error::other(self.failure()));
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl BlobReader {
    fn too_large(&self) -> Error {
        Error::TooLarge {
            what: format!("blob {}", self.desc.digest),
            limit: self.limit,
        }
    }

    fn failure(&self) -> String {
        self.error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// Why reading failed, when it did (the size limit, the transport).
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Reads what the caller left unread (a tarball's padding, gzip's trailer) and checks the
    /// sha256 and the size of the whole blob against its descriptor.
    pub fn finish(mut self) -> Result<()> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match self.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(self.error.take().unwrap_or_else(|| Error::Unreachable {
                        registry: self.registry.clone(),
                        detail: e.to_string(),
                    }));
                }
            }
        }
        let actual = hex_digest(self.hasher.finalize().as_slice());
        if actual != self.desc.digest {
            return Err(Error::DigestMismatch {
                what: format!("blob {}", self.desc.digest),
                expected: self.desc.digest,
                actual,
            });
        }
        if self.total != self.desc.size {
            return Err(Error::Protocol {
                registry: self.registry,
                detail: format!(
                    "blob {}: {} bytes received, the manifest says {}",
                    self.desc.digest, self.total, self.desc.size
                ),
            });
        }
        Ok(())
    }
}

fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

/// The registry's `{"errors":[{"code","message"}]}` as ": CODE: message; …" (empty if none).
fn error_detail(mut resp: http::Response<ureq::Body>) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let Ok(body) = resp.body_mut().with_config().limit(64 * 1024).read_to_vec() else {
        return String::new();
    };
    match serde_json::from_slice::<Errors>(&body) {
        Ok(e) if !e.errors.is_empty() => {
            let items: Vec<String> = e
                .errors
                .iter()
                .map(|i| format!("{}: {}", i.code, i.message))
                .collect();
            format!(": {}", items.join("; "))
        }
        _ => String::new(),
    }
}

fn read_limited(body: &mut ureq::Body, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    body.as_reader()
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(what, e))?;
    if out.len() as u64 > limit {
        return Err(Error::TooLarge {
            what: what.to_string(),
            limit,
        });
    }
    Ok(out)
}

/// ", closest tags: a, b, c": the tags sharing the longest prefix with `wanted`, at most five.
pub(crate) fn closest_tags(wanted: &str, tags: &[String]) -> String {
    if tags.is_empty() {
        return ", the repository has no tags".into();
    }
    let common = |t: &str| {
        t.chars()
            .zip(wanted.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut scored: Vec<&String> = tags.iter().collect();
    scored.sort_by(|a, b| common(b).cmp(&common(a)).then_with(|| b.cmp(a)));
    let list: Vec<&str> = scored.iter().take(5).map(|s| s.as_str()).collect();
    format!(", closest tags: {}", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_hosts() {
        assert!(local_host("localhost:5000"));
        assert!(local_host("127.0.0.1:5000"));
        assert!(local_host("[::1]:5000"));
        assert!(local_host("192.168.1.4"));
        assert!(!local_host("ghcr.io"));
        assert!(!local_host("8.8.8.8:5000"));
    }

    #[test]
    fn links_and_closest() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        let tags: Vec<String> = ["v1.0.0", "v1.1.0", "latest", "v2.0.0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            closest_tags("v1.2.0", &tags),
            ", closest tags: v1.1.0, v1.0.0, v2.0.0, latest"
        );
    }
}
