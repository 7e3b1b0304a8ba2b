//! `git http-backend` behind a small HTTP(S) server on 127.0.0.1: a test CA made with rcgen,
//! basic or bearer auth, every repository under one folder served as Git's smart HTTP protocol.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// How the HTTP server checks requests.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Anyone may fetch and push.
    None,
    /// HTTP basic auth with this user and password.
    Basic(String, String),
    /// `Authorization: Bearer <token>`.
    Bearer(String),
}

/// A test CA (`ca_pem`, for clients to trust) and the server certificate it signed.
pub struct Tls {
    /// The CA's certificate in PEM, for clients to trust.
    pub ca_pem: String,
    server_config: Arc<rustls::ServerConfig>,
}

/// A CA and a certificate for `localhost`/127.0.0.1 signed by it.
pub fn make_tls() -> Tls {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ferroflux test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    Tls {
        ca_pem: ca_cert.pem(),
        server_config: Arc::new(server_config),
    }
}

impl Tls {
    /// The server side, for other servers of this crate (the S3 server's TLS front).
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    pub(crate) fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.server_config.clone()
    }
}

#[derive(Clone)]
struct CgiState {
    project_root: PathBuf,
    auth: Auth,
}

fn authorized(auth: &Auth, headers: &HeaderMap) -> bool {
    use base64::Engine;
    let got = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match auth {
        Auth::None => true,
        Auth::Basic(u, p) => {
            got == format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        }
        Auth::Bearer(t) => got == format!("Bearer {t}"),
    }
}

/// Runs `git http-backend` as a CGI program for one request.
async fn cgi(State(state): State<CgiState>, req: Request) -> Response {
    if !authorized(&state.auth, req.headers()) {
        return (
            StatusCode::UNAUTHORIZED,
            [("WWW-Authenticate", "Basic realm=\"git\"")],
            "authentication required\n",
        )
            .into_response();
    }
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024).await.unwrap();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &state.project_root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or(""))
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REMOTE_USER", "test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("git http-backend starts");
    let mut stdin = child.stdin.take().unwrap();
    tokio::spawn(async move {
        stdin.write_all(&body).await.ok();
    });
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut status = StatusCode::OK;
    let mut builder = Response::builder();
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).await.unwrap() == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("status") {
                status = StatusCode::from_u16(v[..3].parse().unwrap()).unwrap();
            } else {
                builder = builder.header(k, v);
            }
        }
    }
    // Keep the child alive (and reaped) while its output streams.
    let stream = async_stream(stdout, child);
    builder
        .status(status)
        .body(Body::from_stream(stream))
        .unwrap()
}

fn async_stream(
    out: tokio::io::BufReader<tokio::process::ChildStdout>,
    child: tokio::process::Child,
) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> {
    futures_util::stream::unfold(Some((out, child)), |state| async move {
        let (mut out, mut child) = state?;
        let mut buf = vec![0u8; 64 * 1024];
        match out.read(&mut buf).await {
            Ok(0) => {
                child.wait().await.ok();
                None
            }
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(buf), Some((out, child))))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// An HTTP(S) git server on 127.0.0.1, serving every repository under `project_root`. It runs on
/// a runtime of its own, so it keeps answering while the test blocks (on the binary it runs, or
/// on a blocking Git client), and it can be started from sync and async tests alike.
/// [`GitHttpServer::stop`] and [`GitHttpServer::restart`] take it away and bring it back at the
/// same address with the same certificate (a Git server that goes down).
pub struct GitHttpServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Whether it speaks HTTPS.
    pub tls: bool,
    app: axum::Router,
    server_config: Option<Arc<rustls::ServerConfig>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl GitHttpServer {
    /// Serves the repositories under `project_root` with `auth`, over HTTPS when `tls` is given.
    pub fn start(project_root: &Path, auth: Auth, tls: Option<&Tls>) -> Self {
        let state = CgiState {
            project_root: project_root.to_path_buf(),
            auth,
        };
        Self::with_app(axum::Router::new().fallback(cgi).with_state(state), tls)
    }

    /// Serves any router the same way (own runtime, optional TLS): the static file server
    /// shares this.
    fn with_app(app: axum::Router, tls: Option<&Tls>) -> Self {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut server = GitHttpServer {
            addr: std_listener.local_addr().unwrap(),
            tls: tls.is_some(),
            app,
            server_config: tls.map(|t| t.server_config.clone()),
            runtime: None,
        };
        server.serve(std_listener);
        server
    }

    fn serve(&mut self, std_listener: std::net::TcpListener) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // Bound with std (no `block_on`, which panics inside an async test), handed to tokio
        // inside the server's runtime.
        std_listener.set_nonblocking(true).unwrap();
        let listener = {
            let _enter = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener).unwrap()
        };
        let app = self.app.clone();
        match &self.server_config {
            None => {
                runtime.spawn(async move { axum::serve(listener, app).await });
            }
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
                runtime.spawn(async move {
                    loop {
                        let Ok((tcp, _)) = listener.accept().await else {
                            return;
                        };
                        let acceptor = acceptor.clone();
                        let app = app.clone();
                        tokio::spawn(async move {
                            let Ok(stream) = acceptor.accept(tcp).await else {
                                return;
                            };
                            let io = hyper_util::rt::TokioIo::new(stream);
                            let svc = hyper_util::service::TowerToHyperService::new(app);
                            hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, svc)
                                .await
                                .ok();
                        });
                    }
                });
            }
        }
        self.runtime = Some(runtime);
    }

    /// Stops listening and drops every open connection: the server is gone.
    pub fn stop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }

    /// Serves again at the same address with the same certificate, after [`Self::stop`].
    pub fn restart(&mut self) {
        if self.runtime.is_none() {
            let listener = std::net::TcpListener::bind(self.addr).unwrap();
            self.serve(listener);
        }
    }

    /// The URL of `<project_root>/<repo>.git`.
    pub fn url(&self, repo: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let host = if self.tls { "localhost" } else { "127.0.0.1" };
        format!("{scheme}://{host}:{}/{repo}.git", self.addr.port())
    }
}

impl Drop for GitHttpServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A static file server on 127.0.0.1 (a Helm chart repository in tests): `GET /<path>` answers
/// the file under its root, with optional basic or bearer auth and TLS. It records every
/// request's path and whether it carried an `Authorization` header, so tests can check where
/// credentials went.
pub struct StaticServer {
    server: GitHttpServer,
    requests: Arc<std::sync::Mutex<Vec<(String, bool)>>>,
}

#[derive(Clone)]
struct StaticState {
    root: PathBuf,
    auth: Auth,
    requests: Arc<std::sync::Mutex<Vec<(String, bool)>>>,
}

async fn static_file(State(state): State<StaticState>, req: Request) -> Response {
    let path = req.uri().path().trim_start_matches('/').to_string();
    let has_auth = req.headers().contains_key("authorization");
    if let Ok(mut r) = state.requests.lock() {
        r.push((format!("/{path}"), has_auth));
    }
    if !authorized(&state.auth, req.headers()) {
        return (
            StatusCode::UNAUTHORIZED,
            [("WWW-Authenticate", "Basic realm=\"charts\"")],
            "authentication required\n",
        )
            .into_response();
    }
    let rel = Path::new(&path);
    if rel
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    }
    match tokio::fs::read(state.root.join(rel)).await {
        Ok(data) => (StatusCode::OK, data).into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

impl StaticServer {
    /// Serves the files under `root` (read at each request, so tests may change them).
    pub fn start(root: &Path, auth: Auth, tls: Option<&Tls>) -> Self {
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let state = StaticState {
            root: root.to_path_buf(),
            auth,
            requests: requests.clone(),
        };
        let app = axum::Router::new().fallback(static_file).with_state(state);
        StaticServer {
            server: GitHttpServer::with_app(app, tls),
            requests,
        }
    }

    /// `http(s)://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        let scheme = if self.server.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.server.addr)
    }

    /// The requests so far: path and whether it carried credentials.
    pub fn requests(&self) -> Vec<(String, bool)> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Stops serving (the repository goes down).
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Serves again at the same address, after [`Self::stop`].
    pub fn restart(&mut self) {
        self.server.restart();
    }
}
