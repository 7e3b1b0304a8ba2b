//! Real servers and real repositories for the tests: `git http-backend` behind a small HTTPS
//! server (rcgen CA, basic or bearer auth), OpenSSH's `sshd` on a loopback port, and
//! repositories made with the `git` program.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare repository served by the test servers, and a work tree that pushes to it.
pub struct Repo {
    pub root: tempfile::TempDir,
    pub name: String,
}

impl Repo {
    /// `<root>/<name>.git` (bare) and `<root>/work` (clone).
    pub fn new(name: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        git(
            root.path(),
            &["init", "--bare", "-q", &format!("{name}.git")],
        );
        git(root.path(), &["init", "-q", "work"]);
        let r = Repo {
            root,
            name: name.to_string(),
        };
        git(
            &r.work(),
            &["remote", "add", "origin", r.bare().to_str().unwrap()],
        );
        r
    }
    pub fn bare(&self) -> PathBuf {
        self.root.path().join(format!("{}.git", self.name))
    }
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }
    pub fn write(&self, rel: &str, content: &[u8]) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    pub fn symlink(&self, rel: &str, target: &str) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }
    /// Commits everything on the current branch; returns the commit id.
    pub fn commit(&self, msg: &str) -> String {
        git(&self.work(), &["add", "-A"]);
        git(&self.work(), &["commit", "-q", "--allow-empty", "-m", msg]);
        git(&self.work(), &["rev-parse", "HEAD"])
    }
    pub fn push(&self, args: &[&str]) {
        let mut a = vec!["push", "-q", "origin"];
        a.extend_from_slice(args);
        git(&self.work(), &a);
    }
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.work(), args)
    }
}

/// How the HTTP server checks requests.
#[derive(Clone, Debug)]
pub enum Auth {
    None,
    Basic(String, String),
    Bearer(String),
}

pub struct Tls {
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

/// An HTTP(S) git server on 127.0.0.1, serving every repository under `project_root`.
pub struct GitHttpServer {
    pub addr: SocketAddr,
    pub tls: bool,
    runtime: Option<tokio::runtime::Runtime>,
}

impl GitHttpServer {
    pub fn start(project_root: &Path, auth: Auth, tls: Option<&Tls>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let state = CgiState {
            project_root: project_root.to_path_buf(),
            auth,
        };
        let app = axum::Router::new().fallback(cgi).with_state(state);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        match tls {
            None => {
                runtime.spawn(async move { axum::serve(listener, app).await });
            }
            Some(tls) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config.clone());
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
        GitHttpServer {
            addr,
            tls: tls.is_some(),
            runtime: Some(runtime),
        }
    }

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

/// A port nobody listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

pub fn keygen(path: &Path, passphrase: &str) -> (String, String) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", passphrase, "-C", "test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        std::fs::read_to_string(path).unwrap(),
        std::fs::read_to_string(path.with_extension("pub")).unwrap(),
    )
}

/// OpenSSH's sshd on a loopback port, accepting the given public keys for the current user.
pub struct Sshd {
    pub port: u16,
    pub host_pub: String,
    pub user: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Sshd {
    pub fn start(authorized: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let host_key = dir.path().join("host_key");
        let (_, host_pub) = keygen(&host_key, "");
        let auth_keys = dir.path().join("authorized_keys");
        std::fs::write(&auth_keys, authorized.join("")).unwrap();
        std::fs::create_dir_all("/run/sshd").ok();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        // The port is picked by binding and releasing it; if another process takes it in
        // between, sshd exits and we try another.
        let mut attempt = 0;
        let (port, child, lines) = loop {
            attempt += 1;
            let port = closed_port();
            let config = dir.path().join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                     AuthorizedKeysFile {ak}\nStrictModes no\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\n\
                     PermitRootLogin prohibit-password\nAllowUsers {user}\nLogLevel INFO\n\
                     SetEnv PATH={path}\nAcceptEnv GIT_PROTOCOL\n",
                    hk = host_key.display(),
                    pid = dir.path().join("sshd.pid").display(),
                    ak = auth_keys.display(),
                    path = std::env::var("PATH").unwrap_or_default(),
                ),
            )
            .unwrap();
            let mut child = Command::new("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sshd starts (./test.sh installs openssh-server)");
            // Readiness: sshd says so on stderr once it listens.
            let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
            let mut log = Vec::new();
            let ready = loop {
                match lines.next() {
                    Some(Ok(line)) if line.contains("Server listening on") => break true,
                    Some(Ok(line)) => log.push(line),
                    _ => break false,
                }
            };
            if ready {
                break (port, child, lines);
            }
            child.wait().ok();
            assert!(attempt < 5, "sshd did not start: {log:?}");
        };
        // Keep draining sshd's log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Sshd {
            port,
            host_pub,
            user,
            child,
            _dir: dir,
        }
    }

    /// A known_hosts line for this server.
    pub fn known_hosts(&self) -> String {
        format!("[127.0.0.1]:{} {}", self.port, self.host_pub)
    }

    pub fn url(&self, bare: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            bare.display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
