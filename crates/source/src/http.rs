//! gix's smart-HTTP transport on our own HTTP client (ureq on rustls + ring).
//!
//! gix's bundled HTTP backends bring either curl or reqwest 0.13, whose rustls uses aws-lc;
//! DESIGN.md keeps TLS on rustls with ring. gix lets a caller plug any client in through its
//! `Http` trait, which is what this module does. Credentials are added here as headers, so they
//! never pass through gix's credential helpers (which could prompt on a terminal).

use std::io::{BufRead, BufReader, Cursor, Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use gix_transport::client::blocking_io::http::{GetResponse, Http, PostBodyDataKind, PostResponse};
use ureq::tls::{Certificate, RootCerts, TlsConfig};

use crate::credentials::Credentials;
use crate::error::{Error, Result};

/// What the last refused request told us, for classifying the failure afterwards.
#[derive(Debug, Default, Clone)]
pub(crate) struct HttpOutcome {
    /// HTTP status of the first non-success response.
    pub status: Option<u16>,
}

pub(crate) struct Client {
    agent: ureq::Agent,
    auth_header: Option<String>,
    outcome: Arc<Mutex<HttpOutcome>>,
}

impl Client {
    pub(crate) fn new(
        creds: &Credentials,
        url_user: Option<&str>,
        url_password: Option<&str>,
        timeout: Duration,
        https: bool,
    ) -> Result<(Self, Arc<Mutex<HttpOutcome>>)> {
        let mut tls = TlsConfig::builder();
        if let Some(pem) = &creds.ca_cert {
            let certs = parse_pem_certificates(pem)?;
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.build())
            .timeout_global(Some(timeout))
            .user_agent("ferroflux-source")
            .max_redirects(5);
        if let Some(proxy) = &creds.proxy {
            let proxy = ureq::Proxy::new(&proxy.url()).map_err(|e| {
                Error::InvalidSecret(creds.redact(&format!("invalid proxy address: {e}")))
            })?;
            config = config.proxy(Some(proxy));
        }
        let config = config.build();
        let basic = creds.basic.clone().or_else(|| {
            url_user.map(|u| (u.to_string(), url_password.unwrap_or_default().to_string()))
        });
        let auth_header = if let Some(token) = &creds.bearer_token {
            Some(format!("Bearer {token}"))
        } else {
            basic.map(|(u, p)| {
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
                )
            })
        };
        if auth_header.is_some() && !https {
            tracing::warn!("sending credentials over plain http");
        }
        let outcome = Arc::new(Mutex::new(HttpOutcome::default()));
        Ok((
            Client {
                agent: config.new_agent(),
                auth_header,
                outcome: outcome.clone(),
            },
            outcome,
        ))
    }
}

fn parse_pem_certificates(pem: &[u8]) -> Result<Vec<Certificate<'static>>> {
    let text = std::str::from_utf8(pem)
        .map_err(|_| Error::InvalidSecret("key 'ca.crt' is not PEM text".into()))?;
    let mut certs = Vec::new();
    let mut rest = text;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let end = after.find(END).ok_or_else(|| {
            Error::InvalidSecret("key 'ca.crt' has an unterminated certificate".into())
        })?;
        let b64: String = after[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| {
                Error::InvalidSecret("key 'ca.crt' holds a certificate that is not base64".into())
            })?;
        certs.push(Certificate::from_der(&der).to_owned());
        rest = &after[end + END.len()..];
    }
    if certs.is_empty() {
        return Err(Error::InvalidSecret(
            "key 'ca.crt' holds no PEM certificate".into(),
        ));
    }
    Ok(certs)
}

fn header_pairs(headers: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<(String, String)> {
    headers
        .into_iter()
        .filter_map(|h| {
            let (k, v) = h.as_ref().split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn render_headers(resp: &ureq::http::Response<ureq::Body>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in resp.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Turns a non-success status into the io errors gix expects (401 → PermissionDenied).
fn status_error(status: u16, outcome: &Mutex<HttpOutcome>) -> std::io::Error {
    if let Ok(mut o) = outcome.lock() {
        o.status.get_or_insert(status);
    }
    match status {
        401 => std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            gix_transport::client::AuthenticationRequired {
                www_authenticate: Vec::new(),
            },
        ),
        403 => std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("the server refused access (HTTP {status})"),
        ),
        _ => std::io::Error::other(format!("the server answered HTTP {status}")),
    }
}

fn send(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    auth: Option<&str>,
    body: Option<Vec<u8>>,
) -> std::io::Result<ureq::http::Response<ureq::Body>> {
    let result = match method {
        "GET" => {
            let mut req = agent.get(url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            req.call()
        }
        _ => {
            let mut req = agent.post(url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            req.send(&body.unwrap_or_default()[..])
        }
    };
    result.map_err(|e| match e {
        ureq::Error::Io(io) => io,
        ureq::Error::Timeout(t) => {
            std::io::Error::new(std::io::ErrorKind::TimedOut, format!("timed out ({t})"))
        }
        other => std::io::Error::other(other.to_string()),
    })
}

fn to_gix(e: std::io::Error) -> gix_error::Error {
    gix_error::Error::from_error(e)
}

/// Headers of a POST response, available once the request body was sent.
pub(crate) struct PendingHeaders {
    rx: Option<mpsc::Receiver<std::io::Result<Vec<u8>>>>,
    buf: Cursor<Vec<u8>>,
}

impl PendingHeaders {
    fn wait(&mut self) -> std::io::Result<()> {
        if let Some(rx) = self.rx.take() {
            let headers = rx.recv().map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the HTTP request was abandoned",
                )
            })??;
            self.buf = Cursor::new(headers);
        }
        Ok(())
    }
}

impl Read for PendingHeaders {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.wait()?;
        self.buf.read(out)
    }
}

impl BufRead for PendingHeaders {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.wait()?;
        self.buf.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.buf.consume(amt)
    }
}

/// A response body streamed from the worker thread in chunks.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    chunk: Cursor<Vec<u8>>,
    done: bool,
}

impl Read for ChannelBody {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ChannelBody {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while !self.done && self.chunk.position() as usize >= self.chunk.get_ref().len() {
            match self.rx.recv() {
                Ok(Ok(bytes)) => self.chunk = Cursor::new(bytes),
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        self.chunk.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.chunk.consume(amt)
    }
}

/// The request body gix writes; dropping it sends the request.
pub(crate) struct ChannelWriter {
    tx: Option<mpsc::Sender<Vec<u8>>>,
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &self.tx {
            Some(tx) => tx.send(buf.to_vec()).map(|_| buf.len()).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the HTTP request was abandoned",
                )
            }),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Http for Client {
    type Headers = Box<dyn BufRead + Unpin + Send>;
    type ResponseBody = Box<dyn BufRead + Send>;
    type PostBody = ChannelWriter;

    fn get(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> gix_error::Result<GetResponse<Self::Headers, Self::ResponseBody>> {
        let headers = header_pairs(headers);
        let resp = send(
            &self.agent,
            "GET",
            url,
            &headers,
            self.auth_header.as_deref(),
            None,
        )
        .map_err(to_gix)?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(to_gix(status_error(status, &self.outcome)));
        }
        let head = render_headers(&resp);
        let body = BufReader::new(resp.into_body().into_reader());
        Ok(GetResponse {
            headers: Box::new(Cursor::new(head)),
            body: Box::new(body),
        })
    }

    fn post(
        &mut self,
        url: &str,
        _base_url: &str,
        headers: impl IntoIterator<Item = impl AsRef<str>>,
        _body: PostBodyDataKind,
    ) -> gix_error::Result<PostResponse<Self::Headers, Self::ResponseBody, Self::PostBody>> {
        let headers = header_pairs(headers);
        let (body_tx, body_rx) = mpsc::channel::<Vec<u8>>();
        let (head_tx, head_rx) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(1);
        // A small bound keeps a large pack from piling up in memory ahead of gix.
        let (chunk_tx, chunk_rx) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(16);
        let agent = self.agent.clone();
        let auth = self.auth_header.clone();
        let outcome = self.outcome.clone();
        let url = url.to_string();
        std::thread::Builder::new()
            .name("ferroflux-http-post".into())
            .spawn(move || {
                // git's request bodies (wants and haves) are small: collect, then send with a
                // Content-Length, which every server accepts.
                let body: Vec<u8> = body_rx.iter().flatten().collect();
                let resp = match send(&agent, "POST", &url, &headers, auth.as_deref(), Some(body)) {
                    Ok(r) => r,
                    Err(e) => {
                        head_tx.send(Err(e)).ok();
                        return;
                    }
                };
                let status = resp.status().as_u16();
                if !(200..300).contains(&status) {
                    head_tx.send(Err(status_error(status, &outcome))).ok();
                    return;
                }
                if head_tx.send(Ok(render_headers(&resp))).is_err() {
                    return;
                }
                let mut reader = resp.into_body().into_reader();
                loop {
                    let mut buf = vec![0u8; 64 * 1024];
                    match reader.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            buf.truncate(n);
                            if chunk_tx.send(Ok(buf)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            chunk_tx.send(Err(e)).ok();
                            return;
                        }
                    }
                }
            })
            .map_err(to_gix)?;
        Ok(PostResponse {
            post_body: ChannelWriter { tx: Some(body_tx) },
            headers: Box::new(PendingHeaders {
                rx: Some(head_rx),
                buf: Cursor::new(Vec::new()),
            }),
            body: Box::new(ChannelBody {
                rx: chunk_rx,
                chunk: Cursor::new(Vec::new()),
                done: false,
            }),
        })
    }

    fn configure(&mut self, _config: &dyn std::any::Any) -> gix_error::Result<()> {
        // Everything is configured from the GitRepository at construction.
        Ok(())
    }
}
