//! OpenSSH's `sshd` on a loopback port, with keys made by `ssh-keygen`: the real server that
//! ssh Git URLs are tested against (`./test.sh` installs openssh-server where it is missing).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A port nobody listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// An ed25519 key pair at `path` and `path.pub`, encrypted with `passphrase` unless it is
/// empty; returns (private key, public key line).
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
    /// The loopback port it listens on.
    pub port: u16,
    /// Its host public key, as a known_hosts line wants it.
    pub host_pub: String,
    /// The user it accepts (the one running the tests).
    pub user: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Sshd {
    /// Starts sshd with a fresh host key, accepting `authorized` (authorized_keys lines).
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

    /// The `ssh://` URL of the repository at `bare` on this server.
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
