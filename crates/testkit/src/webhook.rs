//! A loopback HTTP endpoint that stands in for Slack, Teams, GitHub and the other services
//! alerts are sent to: it records every request (method, path, headers, body) and answers with
//! the status the test sets, so a test checks the exact payload a provider type sends and how
//! the sender reacts to a failing service. Plain threads and std sockets: usable from
//! synchronous and async tests alike. [`WebhookSink::start_mtls`] serves the same over HTTPS
//! and refuses every client without a certificate signed by its test CA (mutual TLS).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One request the sink received.
#[derive(Clone, Debug)]
pub struct Received {
    /// `POST`, `GET`.
    pub method: String,
    /// The request target, e.g. `/hooks/abc?x=1`.
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl Received {
    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

struct Shared {
    received: Mutex<Vec<Received>>,
    arrived: Condvar,
    status: AtomicU16,
    /// Answer with this body (e.g. a GitHub statuses list) to GETs.
    get_body: Mutex<String>,
    /// Answers for particular requests: method, path prefix, status, body.
    routes: Mutex<Vec<(String, String, u16, String)>>,
    stop: AtomicBool,
}

/// A recording HTTP endpoint on a free loopback port.
pub struct WebhookSink {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    tls: bool,
}

/// The PEM files of a mutual-TLS sink: its CA, a client certificate it accepts, and one it
/// refuses (signed by another CA).
pub struct MtlsFiles {
    /// The CA that signed the server's and the accepted client's certificate.
    pub ca_pem: String,
    /// A client certificate signed by `ca_pem`.
    pub client_cert_pem: String,
    /// Its private key (PKCS#8).
    pub client_key_pem: String,
    /// A client certificate signed by an unrelated CA.
    pub stranger_cert_pem: String,
    /// Its private key.
    pub stranger_key_pem: String,
}

/// A CA: its certificate and the issuer that signs with it.
fn test_ca(name: &str) -> (rcgen::Certificate, rcgen::Issuer<'static, rcgen::KeyPair>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let key = KeyPair::generate().expect("generate a CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("self-sign the CA");
    (cert, rcgen::Issuer::new(params, key))
}

/// A certificate for `names` (and 127.0.0.1) signed by `issuer`, with its key.
fn leaf(
    names: &[&str],
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    use rcgen::{CertificateParams, KeyPair, SanType};
    let key = KeyPair::generate().expect("generate a key");
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).expect("certificate parameters");
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = params
        .signed_by(&key, issuer)
        .expect("sign the certificate");
    (cert, key)
}

impl WebhookSink {
    /// Starts the sink; it answers `200` until [`WebhookSink::set_status`] says otherwise.
    pub fn start() -> WebhookSink {
        Self::listen(None)
    }

    /// Starts the sink over HTTPS requiring a client certificate signed by its CA: a client
    /// without one, or with another CA's, fails the handshake and nothing is recorded.
    pub fn start_mtls() -> (WebhookSink, MtlsFiles) {
        let (ca, issuer) = test_ca("ferroflux webhook test CA");
        let (server_cert, server_key) = leaf(&["localhost"], &issuer);
        let (client_cert, client_key) = leaf(&["flux-notifications"], &issuer);
        let (_, stranger_issuer) = test_ca("an unrelated CA");
        let (stranger_cert, stranger_key) = leaf(&["stranger"], &stranger_issuer);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).expect("trust the test CA");
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots.into(),
            provider.clone(),
        )
        .build()
        .expect("a client verifier");
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![server_cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
            )
            .expect("the server certificate");
        let files = MtlsFiles {
            ca_pem: ca.pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
            stranger_cert_pem: stranger_cert.pem(),
            stranger_key_pem: stranger_key.serialize_pem(),
        };
        (Self::listen(Some(Arc::new(config))), files)
    }

    fn listen(tls: Option<Arc<rustls::ServerConfig>>) -> WebhookSink {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let is_tls = tls.is_some();
        let shared = Arc::new(Shared {
            received: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            status: AtomicU16::new(200),
            get_body: Mutex::new("[]".into()),
            routes: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let accept = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let shared = accept.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => serve(stream, &shared),
                    Some(config) => {
                        // The handshake runs on the first read: a client the verifier refuses
                        // ends the connection there, before any request is recorded.
                        let Ok(connection) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(connection, stream), &shared);
                    }
                });
            }
        });
        WebhookSink {
            shared,
            addr,
            tls: is_tls,
        }
    }

    /// `http://127.0.0.1:PORT` (`https://` for [`WebhookSink::start_mtls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The status every later request is answered with.
    pub fn set_status(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    /// The body GET requests are answered with.
    pub fn set_get_body(&self, body: &str) {
        if let Ok(mut b) = self.shared.get_body.lock() {
            *b = body.to_string();
        }
    }

    /// Answers requests of `method` whose path starts with `path` with `status` and `body`
    /// (e.g. a 404 for a commit status not set yet), before the defaults apply.
    pub fn route(&self, method: &str, path: &str, status: u16, body: &str) {
        if let Ok(mut routes) = self.shared.routes.lock() {
            routes.push((method.into(), path.into(), status, body.into()));
        }
    }

    /// Every request so far, taken out of the sink (which then holds none): a long run reads
    /// its requests in batches without the sink's memory growing with the run.
    pub fn drain(&self) -> Vec<Received> {
        match self.shared.received.lock() {
            Ok(mut r) => std::mem::take(&mut *r),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared
            .received
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Waits until at least `n` requests arrived (readiness, not timing: the bound only turns
    /// a hang into a failure) and returns them all.
    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        let mut received = match self.shared.received.lock() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        while received.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the sink received {} requests, expected {n}: {:#?}",
                received.len(),
                *received
            );
            received = match self.shared.arrived.wait_timeout(received, left) {
                Ok((r, _)) => r,
                Err(p) => p.into_inner().0,
            };
        }
        received.clone()
    }
}

impl Drop for WebhookSink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve<S: Read + Write>(stream: S, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    // Keep-alive: one connection may carry many requests.
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let routed = shared.routes.lock().ok().and_then(|routes| {
            routes
                .iter()
                .find(|(m, p, _, _)| *m == method && path.starts_with(p.as_str()))
                .map(|(_, _, status, body)| (*status, body.clone()))
        });
        let status = shared.status.load(Ordering::SeqCst);
        let (status, answer) = if let Some(routed) = routed {
            routed
        } else if method == "GET" {
            (
                status,
                shared
                    .get_body
                    .lock()
                    .map(|b| b.clone())
                    .unwrap_or_default(),
            )
        } else {
            (status, "{\"ok\":true}".to_string())
        };
        let close = headers
            .get("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        if let Ok(mut received) = shared.received.lock() {
            received.push(Received {
                method,
                path,
                headers,
                body,
            });
            shared.arrived.notify_all();
        }
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        // Written through the reader's stream: one TLS session carries both directions.
        let write = reader.get_mut();
        if write.write_all(response.as_bytes()).is_err() || write.flush().is_err() || close {
            return;
        }
    }
}
