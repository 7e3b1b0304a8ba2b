//! What the install and bootstrap tests share: repositories made with the `git` program, an
//! https git server (`git http-backend` behind a small server with basic auth and a test CA, as
//! in crates/source's tests), local clusters with a kubeconfig, and running the binary.

#![allow(dead_code)] // each test binary uses its own subset

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// Runs git with a fixed identity and no user configuration; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare repository `<root>/fleet.git` and a work tree `<root>/work` pushing to it.
pub struct Repo {
    pub root: tempfile::TempDir,
}

impl Repo {
    /// An empty bare repository (no commit, no branch).
    pub fn empty() -> Self {
        let root = tempfile::tempdir().unwrap();
        git(root.path(), &["init", "-q", "--bare", "fleet.git"]);
        Repo { root }
    }

    /// A repository whose `main` has one commit with `files`.
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let repo = Repo::empty();
        git(repo.root.path(), &["clone", "-q", "fleet.git", "work"]);
        for (path, text) in files {
            repo.write(path, text);
        }
        repo.commit_and_push("initial");
        repo
    }

    pub fn bare(&self) -> PathBuf {
        self.root.path().join("fleet.git")
    }
    pub fn url(&self) -> String {
        format!("file://{}", self.bare().display())
    }
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn commit_and_push(&self, msg: &str) -> String {
        git(&self.work(), &["add", "-A"]);
        git(&self.work(), &["commit", "-q", "-m", msg]);
        git(
            &self.work(),
            &["push", "-q", "origin", "HEAD:refs/heads/main"],
        );
        git(&self.work(), &["rev-parse", "HEAD"])
    }
    /// The commit `main` points at in the bare repository, `None` when there is none.
    pub fn head(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["rev-parse", "-q", "--verify", "refs/heads/main"])
            .current_dir(self.bare())
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
    /// Number of commits on `main`.
    pub fn count(&self) -> usize {
        if self.head().is_none() {
            return 0;
        }
        git(&self.bare(), &["rev-list", "--count", "refs/heads/main"])
            .parse()
            .unwrap()
    }
    /// A file of `main`'s tip.
    pub fn show(&self, path: &str) -> String {
        git(&self.bare(), &["show", &format!("refs/heads/main:{path}")])
    }
    pub fn files(&self) -> Vec<String> {
        git(
            &self.bare(),
            &["ls-tree", "-r", "--name-only", "refs/heads/main"],
        )
        .lines()
        .map(String::from)
        .collect()
    }
}

/// A local cluster and a kubeconfig file naming it.
pub struct Cluster {
    pub cluster: ferroflux_devcluster::RunningCluster,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    pub async fn start(name: &str) -> Self {
        let cluster =
            ferroflux_devcluster::DevCluster::start(ferroflux_devcluster::Config::memory(name))
                .await
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], Some(name)).unwrap();
        Cluster {
            cluster,
            kubeconfig,
            _dir: dir,
        }
    }
    pub async fn client(&self) -> kube::Client {
        self.cluster.client().await.unwrap()
    }
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.kubeconfig.with_file_name("kubectl-cache"))
            .args(args)
            .output()
            .unwrap()
    }
}

/// Runs the binary (off the async runtime, so the test's servers keep answering).
pub async fn ferroflux(args: Vec<String>, env: Vec<(String, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(&args)
            .envs(env)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

// --- an https git server with basic auth ---

pub struct Tls {
    pub ca_pem: String,
    server_config: Arc<rustls::ServerConfig>,
}

/// A CA and a certificate for `localhost` signed by it.
pub fn make_tls() -> Tls {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ferroflux cli test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
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
    user: String,
    password: String,
}

async fn cgi(State(state): State<CgiState>, req: Request) -> Response {
    use base64::Engine;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", state.user, state.password))
    );
    let got = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if got != expected {
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
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
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
        .env("REMOTE_USER", &state.user)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("git http-backend starts");
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
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).await.ok();
    child.wait().await.ok();
    builder.status(status).body(Body::from(rest)).unwrap()
}

/// An https git server on 127.0.0.1 serving the repositories under `project_root`, asking for
/// `user`/`password`. It runs on the test's runtime (run the binary with `ferroflux`, which
/// keeps the runtime free).
pub struct GitHttpsServer {
    pub addr: SocketAddr,
    pub ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl GitHttpsServer {
    pub async fn start(project_root: &Path, user: &str, password: &str) -> Self {
        let tls = make_tls();
        let state = CgiState {
            project_root: project_root.to_path_buf(),
            user: user.into(),
            password: password.into(),
        };
        let app = axum::Router::new().fallback(cgi).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config.clone());
        let task = tokio::spawn(async move {
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
        GitHttpsServer {
            addr,
            ca_pem: tls.ca_pem,
            task,
        }
    }

    pub fn url(&self, repo: &str) -> String {
        format!("https://localhost:{}/{repo}", self.addr.port())
    }
}

impl Drop for GitHttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// --- OpenSSH's sshd on a loopback port ---

/// An ed25519 key pair at `path` (and `path.pub`); returns the public key line.
pub fn keygen(path: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(path.with_extension("pub")).unwrap()
}

/// sshd accepting `authorized` for the current user; stopped when dropped.
pub struct Sshd {
    pub port: u16,
    pub host_pub: String,
    pub user: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Sshd {
    pub fn start(authorized: &str) -> Self {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let host_key = dir.path().join("host_key");
        let host_pub = keygen(&host_key);
        let auth_keys = dir.path().join("authorized_keys");
        std::fs::write(&auth_keys, authorized).unwrap();
        std::fs::create_dir_all("/run/sshd").ok();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let config = dir.path().join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                     AuthorizedKeysFile {ak}\nStrictModes no\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\n\
                     PermitRootLogin prohibit-password\nAllowUsers {user}\n\
                     SetEnv PATH={path}\n",
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
            let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
            let ready = loop {
                match lines.next() {
                    Some(Ok(l)) if l.contains("Server listening on") => break true,
                    Some(Ok(_)) => {}
                    _ => break false,
                }
            };
            if ready {
                std::thread::spawn(move || for _ in lines {});
                return Sshd {
                    port,
                    host_pub,
                    user,
                    child,
                    _dir: dir,
                };
            }
            child.wait().ok();
        }
        panic!("sshd did not start");
    }

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
