//! A real S3 server for tests: `s3s-fs` (crates.io; the S3 protocol over a folder, checking
//! SigV4 signatures) on a free loopback port, with fresh keys and a temporary folder. A bucket
//! is a directory of that folder and an object a file below it, so tests write objects with
//! plain file writes. `./test.sh` installs the binary into `crates/testkit/s3s` when missing.
//! With feature `git-server` too, [`S3Server::tls_front`] puts HTTPS (a certificate of
//! [`crate::make_tls`]'s CA) in front of it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `s3s-fs`; killed on drop.
pub struct S3Server {
    child: Child,
    root: tempfile::TempDir,
    port: u16,
    /// The access key the server accepts.
    pub access_key: String,
    /// Its secret key.
    pub secret_key: String,
}

/// The `s3s-fs` binary: `$S3S_FS`, else the project-local install of `./test.sh`, else `PATH`.
pub fn s3s_fs_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("S3S_FS") {
        return PathBuf::from(p);
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("s3s/bin/s3s-fs");
    if local.exists() {
        return local;
    }
    PathBuf::from("s3s-fs")
}

impl S3Server {
    /// Starts the server on a port of its own choosing and waits until it says it listens.
    pub fn start() -> S3Server {
        let root = tempfile::tempdir().expect("a temporary folder for s3s-fs");
        let suffix = root
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().replace(['.', '_', '-'], ""))
            .unwrap_or_default()
            .to_uppercase();
        let access_key = format!("AKFERRO{suffix}");
        let secret_key = format!("sk-ferroflux-{suffix}-secret");
        let binary = s3s_fs_binary();
        let mut child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(["--access-key", &access_key, "--secret-key", &secret_key])
            .arg(root.path())
            .env("RUST_LOG", "s3s_fs=info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}): run ./test.sh, which installs s3s-fs",
                    binary.display()
                )
            });
        // The server logs its bound address once it listens: that line is the readiness signal.
        let (tx, rx) = mpsc::channel();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(port) = listening_port(&line) {
                        let _ = tx.send(Ok(port));
                    }
                    // Keep draining so the server never blocks on a full pipe.
                }
                let _ = tx.send(Err(()));
            });
        }
        drop(tx);
        let port = loop {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(Ok(port)) => break port,
                Ok(Err(())) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("s3s-fs exited before listening: {status}");
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("s3s-fs did not report a listening address");
                }
            }
        };
        S3Server {
            child,
            root,
            port,
            access_key,
            secret_key,
        }
    }

    /// `127.0.0.1:PORT`: what a Bucket's `spec.endpoint` names (with `insecure: true`).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The folder the server serves: one directory per bucket.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Creates bucket `name` (a directory).
    pub fn create_bucket(&self, name: &str) {
        std::fs::create_dir_all(self.root.path().join(name)).expect("create the bucket folder");
    }

    /// Writes object `key` of `bucket` (a file; its directories are created).
    pub fn put(&self, bucket: &str, key: &str, content: impl AsRef<[u8]>) {
        let path = self.root.path().join(bucket).join(key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the object's folder");
        }
        std::fs::write(path, content).expect("write the object");
    }

    /// Removes object `key` of `bucket`.
    pub fn delete(&self, bucket: &str, key: &str) {
        std::fs::remove_file(self.root.path().join(bucket).join(key)).expect("remove the object");
    }
}

/// HTTPS in front of an [`S3Server`]: TLS ends here and the bytes go on to the server
/// unchanged (so signatures made for this address verify there). Stopped on drop.
#[cfg(feature = "git-server")]
pub struct TlsFront {
    port: u16,
    _stop: tokio::sync::oneshot::Sender<()>,
}

#[cfg(feature = "git-server")]
impl TlsFront {
    /// `127.0.0.1:PORT`: a Bucket's `spec.endpoint` for HTTPS (no `insecure`).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

#[cfg(feature = "git-server")]
impl S3Server {
    /// Serves this server over HTTPS with `tls`'s certificate on a port of its own; the port is
    /// bound before this returns, so it accepts connections at once.
    pub fn tls_front(&self, tls: &crate::Tls) -> TlsFront {
        let config = tls.server_config();
        let backend = self.endpoint();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the TLS front");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("the front's address").port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the TLS front");
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                let serve = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else {
                            continue;
                        };
                        let acceptor = acceptor.clone();
                        let backend = backend.clone();
                        tokio::spawn(async move {
                            let Ok(mut tls) = acceptor.accept(socket).await else {
                                return;
                            };
                            let Ok(mut upstream) = tokio::net::TcpStream::connect(&backend).await
                            else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        TlsFront { port, _stop: stop }
    }
}

/// The port of the line `server is running at http://127.0.0.1:PORT`, if `line` is it.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("server is running at http://").nth(1)?;
    let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
    addr.rsplit_once(':')?.1.trim_end_matches('/').parse().ok()
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
