//! A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution 2.8) on a
//! loopback port, plain HTTP, HTTPS with a fresh CA, and/or htpasswd basic auth; and `skopeo`,
//! the second client. `./test.sh` installs both (and `htpasswd`) when missing.

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start the registry.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Serve HTTPS with a certificate for localhost/127.0.0.1 signed by a fresh CA.
    pub tls: bool,
    /// Require this user and password (htpasswd, bcrypt).
    pub basic_auth: Option<(String, String)>,
    /// Require bearer tokens from a token service (started beside the registry) that issues
    /// them to this user and password: the flow of Docker Hub, ghcr.io and most registries.
    pub token_auth: Option<(String, String)>,
    /// With `tls`: require client certificates signed by a fresh client CA (mutual TLS); the
    /// registry's [`Registry::client_cert`] is one such certificate.
    pub client_certs: bool,
}

/// A client certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct ClientCert {
    /// `tls.crt`.
    pub cert_pem: String,
    /// `tls.key`.
    pub key_pem: String,
}

/// A running registry; killed on drop.
pub struct Registry {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
    opts: RegistryOptions,
    /// The CA's PEM when serving TLS.
    pub ca_pem: Option<String>,
    /// A client certificate the registry accepts, when it requires them.
    pub client_cert: Option<ClientCert>,
    token: Option<TokenService>,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Registry {
    /// Starts `docker-registry` and waits until it accepts connections.
    pub fn start(opts: RegistryOptions) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let ca_pem = opts.tls.then(|| write_tls(dir.path()));
        let client_cert = (opts.tls && opts.client_certs).then(|| {
            let (ca, cert) = client_ca_and_cert("ferroflux registry client CA");
            std::fs::write(dir.path().join("client-ca.pem"), ca).unwrap();
            cert
        });
        if let Some((user, pass)) = &opts.basic_auth {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, pass])
                .output()
                .expect("htpasswd (apache2-utils) must be installed: run ./test.sh");
            assert!(out.status.success(), "htpasswd failed");
            std::fs::write(dir.path().join("htpasswd"), out.stdout).unwrap();
        }
        let token = opts
            .token_auth
            .clone()
            .map(|creds| TokenService::start(dir.path(), creds));
        let port = free_port();
        let mut reg = Registry {
            child: None,
            dir,
            port,
            opts,
            ca_pem,
            client_cert,
            token,
        };
        reg.spawn();
        reg
    }

    fn spawn(&mut self) {
        let d = self.dir.path();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{}\n",
            d.join("data").display(),
            self.port
        );
        if self.opts.tls {
            config += &format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                d.join("cert.pem").display(),
                d.join("key.pem").display()
            );
            if self.client_cert.is_some() {
                config += &format!(
                    "    clientcas:\n      - {}\n",
                    d.join("client-ca.pem").display()
                );
            }
        }
        if self.opts.basic_auth.is_some() {
            config += &format!(
                "auth:\n  htpasswd:\n    realm: ferroflux-test\n    path: {}\n",
                d.join("htpasswd").display()
            );
        }
        if let Some(t) = &self.token {
            config += &format!(
                "auth:\n  token:\n    realm: http://127.0.0.1:{}/token\n    service: {TOKEN_SERVICE}\n    issuer: {TOKEN_ISSUER}\n    rootcertbundle: {}\n",
                t.port,
                d.join("token-ca.pem").display()
            );
        }
        std::fs::write(d.join("config.yml"), config).unwrap();
        let log = std::fs::File::create(d.join("registry.log")).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(d.join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("docker-registry must be installed: run ./test.sh");
        self.child = Some(child);
        self.wait_listening();
    }

    /// Waits until the registry says it listens (its log's `listening on` line, written once
    /// the socket is bound). A connect alone is not proof: while tests run in parallel another
    /// test's short-lived listener may hold the port the registry failed to bind. A registry
    /// that could not bind its port is started again on a new one; the bound only stops a broken
    /// test from hanging.
    fn wait_listening(&mut self) {
        let start = Instant::now();
        let log_path = self.dir.path().join("registry.log");
        loop {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            match exited {
                None if log.contains("listening on") => return,
                None => {}
                Some(_) if log.contains("address already in use") => {
                    self.port = free_port();
                    return self.spawn();
                }
                Some(status) => panic!("docker-registry exited ({status}): {log}"),
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "docker-registry did not listen: {log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the registry (its data stays), as a registry outage.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port with the same data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// How many tokens the token service issued (bearer registries only).
    pub fn tokens_issued(&self) -> usize {
        self.token
            .as_ref()
            .map_or(0, |t| t.issued.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where the registry keeps its blobs (to corrupt one in a test).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Writes the CA to a file (for skopeo's `--cert-dir`, which wants `*.crt` files) and
    /// returns its directory.
    pub fn cert_dir(&self) -> Option<PathBuf> {
        let pem = self.ca_pem.as_ref()?;
        let d = self.dir.path().join("certs.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("ca.crt"), pem).unwrap();
        Some(d)
    }

    /// Runs `skopeo ARGS`; returns (success, stdout, stderr).
    pub fn skopeo(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("skopeo")
            .args(args)
            .output()
            .expect("skopeo must be installed: run ./test.sh");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes `cert.pem` and `key.pem` (localhost, 127.0.0.1) signed by a fresh CA; returns the CA.
fn write_tls(dir: &Path) -> String {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ferroflux registry test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &issuer).unwrap();
    let mut f = std::fs::File::create(dir.join("cert.pem")).unwrap();
    f.write_all(cert.pem().as_bytes()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    ca_cert.pem()
}

/// A fresh CA (PEM) and a client certificate it signed (for mutual TLS tests; another call
/// gives a certificate the first CA does not trust).
pub fn client_ca_and_cert(ca_name: &str) -> (String, ClientCert) {
    use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, ca_name);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ferroflux source controller");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    (
        ca_cert.pem(),
        ClientCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        },
    )
}

const TOKEN_SERVICE: &str = "ferroflux-registry";
const TOKEN_ISSUER: &str = "ferroflux-token-issuer";

/// A token service as distribution's token auth expects one: ES256 JWTs whose `x5c` header
/// carries a certificate the registry trusts (`rootcertbundle`), granting the scopes asked for
/// to the one user it knows (Basic auth on the token request).
struct TokenService {
    port: u16,
    issued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl TokenService {
    fn start(dir: &Path, creds: (String, String)) -> TokenService {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["token-issuer".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("token-ca.pem"), cert.pem()).unwrap();
        let rng = ring::rand::SystemRandom::new();
        let signer = std::sync::Arc::new(
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &key.serialize_der(), &rng)
                .unwrap(),
        );
        let x5c = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, cert.der());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let issued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = issued.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (signer, x5c, creds, counter) =
                    (signer.clone(), x5c.clone(), creds.clone(), counter.clone());
                std::thread::spawn(move || {
                    let _ = serve_token(conn, &signer, &x5c, &creds, &counter);
                });
            }
        });
        TokenService { port, issued }
    }
}

fn b64url(bytes: &[u8]) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn serve_token(
    mut conn: TcpStream,
    signer: &ring::signature::EcdsaKeyPair,
    x5c: &str,
    creds: &(String, String),
    issued: &std::sync::atomic::AtomicUsize,
) -> std::io::Result<()> {
    use std::io::Read;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/");
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:{}", creds.0, creds.1)
        )
    );
    let authorized = head.lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(k, v)| k.eq_ignore_ascii_case("authorization") && v.trim() == expected)
    });
    if !authorized {
        let body = r#"{"errors":[{"code":"UNAUTHORIZED","message":"invalid credentials"}]}"#;
        write!(
            conn,
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return Ok(());
    }
    let mut access = Vec::new();
    for pair in query.split('&') {
        let Some(("scope", v)) = pair.split_once('=') else {
            continue;
        };
        let scope = percent_decode(v);
        let mut parts = scope.splitn(3, ':');
        let (Some(kind), Some(name), Some(actions)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let actions: Vec<&str> = actions.split(',').collect();
        access.push(access_entry(kind, name, &actions));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let n = issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let header = format!(r#"{{"typ":"JWT","alg":"ES256","x5c":["{x5c}"]}}"#);
    let claims = format!(
        r#"{{"iss":"{TOKEN_ISSUER}","sub":"{}","aud":"{TOKEN_SERVICE}","exp":{},"nbf":{},"iat":{now},"jti":"token-{n}","access":[{}]}}"#,
        creds.0,
        now + 300,
        now - 10,
        access.join(",")
    );
    let signing_input = format!(
        "{}.{}",
        b64url(header.as_bytes()),
        b64url(claims.as_bytes())
    );
    let rng = ring::rand::SystemRandom::new();
    let sig = signer
        .sign(&rng, signing_input.as_bytes())
        .map_err(|_| std::io::Error::other("signing failed"))?;
    let token = format!("{signing_input}.{}", b64url(sig.as_ref()));
    let body = format!(r#"{{"token":"{token}","expires_in":300}}"#);
    write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    Ok(())
}

/// One `access` entry of the token's claims.
fn access_entry(kind: &str, name: &str, actions: &[&str]) -> String {
    let actions: Vec<String> = actions.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        r#"{{"type":"{kind}","name":"{name}","actions":[{}]}}"#,
        actions.join(",")
    )
}
