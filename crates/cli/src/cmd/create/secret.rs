//! `ferroflux create secret git|helm|oci|tls|githubapp|proxy|receiver|notation NAME`: the
//! Secrets Flux's sources, providers and receivers read, made from flags as `flux create secret`
//! makes them. `--export` prints the Secret (flux's YAML byte for byte: keys sorted, values in
//! `stringData`); otherwise it is created, or its data replaced and labels merged when it exists.
//!
//! Git over SSH needs the server's host key and a key pair: the host key is read with OpenSSH's
//! `ssh-keyscan` (flux dials the server itself; both keep one key, the first of Go's order of
//! preference), and a missing `--private-key-file` is made with `ssh-keygen`, the same tools the
//! bootstrap's Git already relies on. The public half of an OpenSSH-format key is read from the
//! key file's unencrypted header, so a passphrase is stored as given without being tried here; the
//! source controller reports a wrong one.

use crate::cluster::{Cluster, KubeArgs};
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};
use std::path::Path;
use std::process::{Command, ExitCode};

/// `create secret <kind>`.
#[derive(Subcommand, Debug)]
pub enum SecretTarget {
    /// A Secret with Git credentials: SSH keys and known_hosts, basic auth or a bearer token.
    Git(GitArgs),
    /// A Secret for a Helm repository: basic auth, client certificate and CA.
    Helm(HelmArgs),
    /// A docker config Secret for an OCI registry.
    Oci(OciArgs),
    /// A Secret with a TLS client certificate pair and/or a CA certificate.
    Tls(TlsArgs),
    /// A Secret with a GitHub App's credentials.
    Githubapp(GitHubAppArgs),
    /// A Secret with a proxy's address and credentials.
    Proxy(ProxyArgs),
    /// A Secret with a Receiver's token and its webhook URL.
    Receiver(ReceiverArgs),
    /// A Secret with Notation's trust policy and CA certificates.
    Notation(NotationArgs),
}

/// The flags every `create secret` command has.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// The Secret's name.
    name: Option<String>,
    /// Print the Secret as YAML instead of applying it.
    #[arg(long)]
    export: bool,
    /// Labels of the Secret, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
}

/// `create secret git`'s flags.
#[derive(Args, Debug)]
pub struct GitArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The Git address, e.g. ssh://git@host/org/repository.
    #[arg(long)]
    url: Option<String>,
    /// Basic authentication username.
    #[arg(short, long)]
    username: Option<String>,
    /// Basic authentication password, or the private key's passphrase over SSH.
    #[arg(short, long)]
    password: Option<String>,
    /// Bearer authentication token.
    #[arg(long)]
    bearer_token: Option<String>,
    /// The SSH key pair's algorithm when one is generated: rsa, ecdsa or ed25519.
    #[arg(long, default_value = "ecdsa")]
    ssh_key_algorithm: String,
    /// The RSA key's size when one is generated.
    #[arg(long, default_value = "2048")]
    ssh_rsa_bits: String,
    /// The ECDSA key's curve when one is generated: p256, p384 or p521.
    #[arg(long, default_value = "p384")]
    ssh_ecdsa_curve: String,
    /// A TLS CA certificate file for a self-signed HTTPS server.
    #[arg(long)]
    ca_crt_file: Option<String>,
    /// A private key file for the SSH server (generated when absent).
    #[arg(long)]
    private_key_file: Option<String>,
}

/// `create secret helm`'s flags.
#[derive(Args, Debug)]
pub struct HelmArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Basic authentication username.
    #[arg(short, long)]
    username: Option<String>,
    /// Basic authentication password.
    #[arg(short, long)]
    password: Option<String>,
    #[command(flatten)]
    tls: TlsFiles,
}

/// Certificate files, as `create secret tls` and `create secret helm` take them.
#[derive(Args, Debug)]
pub struct TlsFiles {
    /// TLS client certificate file.
    #[arg(long)]
    tls_crt_file: Option<String>,
    /// TLS client key file.
    #[arg(long)]
    tls_key_file: Option<String>,
    /// TLS CA certificate file.
    #[arg(long)]
    ca_crt_file: Option<String>,
}

/// `create secret tls`'s flags.
#[derive(Args, Debug)]
pub struct TlsArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    tls: TlsFiles,
}

/// `create secret oci`'s flags.
#[derive(Args, Debug)]
pub struct OciArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The registry's address, e.g. ghcr.io/stefanprodan/charts.
    #[arg(long)]
    url: Option<String>,
    /// Basic authentication username.
    #[arg(short, long)]
    username: Option<String>,
    /// Basic authentication password.
    #[arg(short, long)]
    password: Option<String>,
}

/// `create secret githubapp`'s flags.
#[derive(Args, Debug)]
pub struct GitHubAppArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The GitHub App's ID.
    #[arg(long)]
    app_id: Option<String>,
    /// The installation's owner (user or organization).
    #[arg(long)]
    app_installation_owner: Option<String>,
    /// The installation's ID.
    #[arg(long)]
    app_installation_id: Option<String>,
    /// The App's private key file.
    #[arg(long)]
    app_private_key: Option<String>,
    /// The GitHub API's base URL (GitHub Enterprise).
    #[arg(long)]
    app_base_url: Option<String>,
}

/// `create secret proxy`'s flags.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The proxy's address.
    #[arg(long)]
    address: Option<String>,
    /// Basic authentication username.
    #[arg(short, long)]
    username: Option<String>,
    /// Basic authentication password.
    #[arg(short, long)]
    password: Option<String>,
}

/// `create secret receiver`'s flags.
#[derive(Args, Debug)]
pub struct ReceiverArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The Receiver's type (generic, github, gitlab, ...).
    #[arg(long = "type")]
    receiver_type: Option<String>,
    /// The token that validates payloads and names the webhook path (generated when absent).
    #[arg(long)]
    token: Option<String>,
    /// The host name of the webhook URL, e.g. flux.example.com.
    #[arg(long)]
    hostname: Option<String>,
    /// The IAM service account email (type gcr).
    #[arg(long)]
    email_claim: Option<String>,
    /// The OIDC token audience (type gcr; the webhook URL by default).
    #[arg(long)]
    audience_claim: Option<String>,
}

/// `create secret notation`'s flags.
#[derive(Args, Debug)]
pub struct NotationArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Notation's trust policy file.
    #[arg(long)]
    trust_policy_file: Option<String>,
    /// Root CA certificate files (.crt or .pem; repeatable, or comma-separated).
    #[arg(long, value_delimiter = ',')]
    ca_cert_file: Vec<String>,
}

/// The receiver types of notification-controller, in flux's order.
pub const RECEIVER_TYPES: &[&str] = &[
    "generic",
    "generic-hmac",
    "github",
    "gitlab",
    "bitbucket",
    "harbor",
    "dockerhub",
    "quay",
    "gcr",
    "nexus",
    "acr",
    "cdevents",
];

/// A Secret to write, with what flux calls it in its success line.
struct Made {
    secret: Value,
    what: &'static str,
    /// flux prints most exports with `Println`, so they end with an empty line; `tls` does not.
    blank_line_after: bool,
    /// A generated or derived SSH public key, printed as the deploy key when applying.
    deploy_key: Option<String>,
}

/// Runs `create secret <kind>`.
pub async fn run(kube: &KubeArgs, what: &SecretTarget) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let (common, made) = match what {
        SecretTarget::Git(a) => (&a.common, git(a, ns)?),
        SecretTarget::Helm(a) => (&a.common, helm(a, ns)?),
        SecretTarget::Oci(a) => (&a.common, oci(a, ns)?),
        SecretTarget::Tls(a) => (&a.common, tls(a, ns)?),
        SecretTarget::Githubapp(a) => (&a.common, github_app(a, ns)?),
        SecretTarget::Proxy(a) => (&a.common, proxy(a, ns)?),
        SecretTarget::Receiver(a) => (&a.common, receiver(a, ns)?),
        SecretTarget::Notation(a) => (&a.common, notation(a, ns)?),
    };
    if common.export {
        print!("{}", export_text(&made));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(key) = &made.deploy_key {
        progress::generate(format_args!("deploy key: {key}"));
    }
    let cluster = Cluster::connect(kube).await?;
    let name = name_of(common)?;
    upsert(&cluster, ns, made.secret.clone()).await?;
    progress::action(format_args!(
        "{} secret '{name}' created in '{ns}' namespace",
        made.what
    ));
    Ok(ExitCode::SUCCESS)
}

/// `--export`'s text.
fn export_text(made: &Made) -> String {
    let mut text = document(&made.secret);
    if made.blank_line_after {
        text.push('\n');
    }
    text
}

/// Creates the Secret, or replaces the data of the one that exists and merges its labels and
/// annotations into it, as flux's `upsertSecret` does.
pub(crate) async fn upsert(cluster: &Cluster, ns: &str, secret: Value) -> anyhow::Result<()> {
    let wanted: Secret =
        serde_json::from_value(secret).context("the flags make an invalid Secret")?;
    let name = wanted.metadata.name.clone().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), ns);
    let existing = cluster
        .call(&format!("reading Secret {ns}/{name}"), api.get_opt(&name))
        .await?;
    match existing {
        None => {
            cluster
                .call(
                    &format!("creating Secret {ns}/{name}"),
                    api.create(&PostParams::default(), &wanted),
                )
                .await?;
        }
        Some(mut current) => {
            // stringData replaces data key by key on the server; flux sends only stringData.
            current.string_data = wanted.string_data;
            for (field, add) in [
                (&mut current.metadata.labels, wanted.metadata.labels),
                (
                    &mut current.metadata.annotations,
                    wanted.metadata.annotations,
                ),
            ] {
                if let Some(add) = add {
                    field.get_or_insert_with(Default::default).extend(add);
                }
            }
            cluster
                .call(
                    &format!("updating Secret {ns}/{name}"),
                    api.replace(&name, &PostParams::default(), &current),
                )
                .await?;
        }
    }
    Ok(())
}

fn name_of(common: &CommonArgs) -> anyhow::Result<&str> {
    common
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow!("name is required"))
}

/// `--label key=value` flags as a map, with flux's message for a malformed one.
pub(crate) fn parse_labels(labels: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut out = Map::new();
    for label in labels {
        let (k, v) = label
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid label format '{label}', must be key=value"))?;
        out.insert(k.to_string(), json!(v));
    }
    Ok(out)
}

/// A Secret object with keys sorted as flux's YAML prints them (`type` only when set).
fn secret(
    common: &CommonArgs,
    ns: &str,
    secret_type: Option<&str>,
    data: Map<String, Value>,
    annotations: Option<Map<String, Value>>,
) -> anyhow::Result<Value> {
    let labels = parse_labels(&common.labels)?;
    Ok(secret_object(
        name_of(common)?,
        ns,
        labels,
        secret_type,
        data,
        annotations,
    ))
}

/// [`secret`] from its parts.
pub(crate) fn secret_object(
    name: &str,
    ns: &str,
    labels: Map<String, Value>,
    secret_type: Option<&str>,
    data: Map<String, Value>,
    annotations: Option<Map<String, Value>>,
) -> Value {
    let mut metadata = Map::new();
    if let Some(a) = annotations {
        metadata.insert("annotations".into(), Value::Object(a));
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(ns));
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!("v1"));
    object.insert("kind".into(), json!("Secret"));
    object.insert("metadata".into(), Value::Object(metadata));
    object.insert("stringData".into(), Value::Object(data));
    if let Some(t) = secret_type {
        object.insert("type".into(), json!(t));
    }
    sorted(Value::Object(object))
}

fn read_text(path: &str, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| anyhow!("{what}: open {path}: {}", io_text(&e)))
}

/// Go's wording of the usual file errors, which flux's messages carry.
fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// The flag's value, unless absent or empty (flux treats both as not given).
pub(crate) fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

fn git(a: &GitArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let url = non_empty(&a.url).ok_or_else(|| anyhow!("url is required"))?;
    let credentials = GitCredentials {
        url,
        username: non_empty(&a.username),
        password: non_empty(&a.password),
        bearer_token: non_empty(&a.bearer_token),
        ca_file: non_empty(&a.ca_crt_file),
        private_key_file: non_empty(&a.private_key_file),
        key_algorithm: &a.ssh_key_algorithm,
        rsa_bits: &a.ssh_rsa_bits,
        ecdsa_curve: &a.ssh_ecdsa_curve,
    };
    if matches!(credentials.scheme(), "http" | "https") {
        let user_and_password = credentials.username.is_some() && credentials.password.is_some();
        if !user_and_password && credentials.bearer_token.is_none() {
            bail!("for Git over HTTP/S the username and password, or a bearer token is required");
        }
        if user_and_password && credentials.bearer_token.is_some() {
            bail!("user credentials and bearer token cannot be used together");
        }
    }
    let made = credentials.secret_data()?;
    Ok(Made {
        secret: secret(&a.common, ns, None, made.data, None)?,
        what: "git",
        blank_line_after: true,
        deploy_key: made.public_key,
    })
}

/// What a Git Secret is made from: `create secret git`'s flags, or `create source git`'s.
pub(crate) struct GitCredentials<'a> {
    pub url: &'a str,
    pub username: Option<&'a str>,
    pub password: Option<&'a str>,
    pub bearer_token: Option<&'a str>,
    pub ca_file: Option<&'a str>,
    pub private_key_file: Option<&'a str>,
    pub key_algorithm: &'a str,
    pub rsa_bits: &'a str,
    pub ecdsa_curve: &'a str,
}

/// A Git Secret's data, with the SSH public key and host key it holds (SSH only).
pub(crate) struct GitSecretData {
    pub data: Map<String, Value>,
    pub public_key: Option<String>,
    pub known_hosts: Option<String>,
}

impl GitCredentials<'_> {
    pub fn scheme(&self) -> &str {
        self.url.split_once("://").map(|(s, _)| s).unwrap_or("")
    }

    /// The data as flux's `sourcesecret.GenerateGit` writes it: SSH keys and the server's host
    /// key for `ssh://` (a key pair made when no key file is given), basic auth, a bearer token
    /// and a CA for HTTP(S).
    pub fn secret_data(&self) -> anyhow::Result<GitSecretData> {
        let mut data = Map::new();
        let mut public_key = None;
        let mut known_hosts = None;
        match self.scheme() {
            "ssh" => {
                let host = ssh_host(self.url)?;
                let (private, public) = match self.private_key_file {
                    Some(path) => {
                        let private = std::fs::read_to_string(path).map_err(|e| {
                            anyhow!(
                                "failed to open private key file: open {path}: {}",
                                io_text(&e)
                            )
                        })?;
                        let public = public_key_of(&private, Path::new(path))?;
                        (private, public)
                    }
                    None => generate_key_pair(self.key_algorithm, self.rsa_bits, self.ecdsa_curve)?,
                };
                let host_key = scan_host_key(&host)?;
                data.insert("identity".into(), json!(private));
                data.insert("identity.pub".into(), json!(public));
                data.insert("known_hosts".into(), json!(host_key));
                if let Some(p) = self.password {
                    data.insert("password".into(), json!(p));
                }
                public_key = Some(public);
                known_hosts = Some(host_key);
            }
            "http" | "https" => {
                if let (Some(u), Some(p)) = (self.username, self.password) {
                    data.insert("username".into(), json!(u));
                    data.insert("password".into(), json!(p));
                }
                if let Some(t) = self.bearer_token {
                    data.insert("bearerToken".into(), json!(t));
                }
                if let Some(path) = self.ca_file {
                    data.insert(
                        "ca.crt".into(),
                        json!(read_text(path, "unable to read TLS CA file")?),
                    );
                }
            }
            other => {
                bail!("git URL scheme '{other}' not supported, can be: ssh, http and https")
            }
        }
        Ok(GitSecretData {
            data,
            public_key,
            known_hosts,
        })
    }
}

/// `host[:port]` of an `ssh://[user@]host[:port]/path` URL.
fn ssh_host(url: &str) -> anyhow::Result<String> {
    let rest = url.trim_start_matches("ssh://");
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        bail!("git URL parse failed: no host in '{url}'");
    }
    Ok(host.to_string())
}

/// The `<type> <base64>` line of a private key's public half.
fn public_key_of(private: &str, path: &Path) -> anyhow::Result<String> {
    if let Some(blob) = openssh_public_blob(private) {
        let key_type = ssh_string(&blob, 0)
            .and_then(|(t, _)| String::from_utf8(t.to_vec()).ok())
            .ok_or_else(|| anyhow!("ssh: malformed OpenSSH key in {}", path.display()))?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&blob);
        return Ok(format!("{key_type} {b64}\n"));
    }
    // PEM keys (PKCS#1, SEC 1, PKCS#8) hold no public key in the clear: ssh-keygen derives it.
    let out = Command::new("ssh-keygen")
        .args(["-y", "-P", "", "-f"])
        .arg(path)
        .output()
        .context("running ssh-keygen to read the private key's public half")?;
    if !out.status.success() {
        bail!(
            "ssh: cannot read the private key {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(authorized_key_line(&String::from_utf8_lossy(&out.stdout)))
}

/// `<type> <base64>\n`, without the comment ssh-keygen appends, as Go's MarshalAuthorizedKey.
fn authorized_key_line(text: &str) -> String {
    let mut fields = text.split_whitespace();
    match (fields.next(), fields.next()) {
        (Some(t), Some(k)) => format!("{t} {k}\n"),
        _ => format!("{}\n", text.trim()),
    }
}

/// The public key blob of an `openssh-key-v1` private key: it is stored unencrypted even when
/// the private part is.
fn openssh_public_blob(private: &str) -> Option<Vec<u8>> {
    let body: String = private
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .ok()?;
    let magic = b"openssh-key-v1\0";
    let mut at = raw.strip_prefix(magic.as_slice()).map(|_| magic.len())?;
    for _ in 0..3 {
        // cipher name, KDF name, KDF options
        at = ssh_string(&raw, at)?.1;
    }
    let keys = u32::from_be_bytes(raw.get(at..at + 4)?.try_into().ok()?);
    if keys != 1 {
        return None;
    }
    ssh_string(&raw, at + 4).map(|(blob, _)| blob.to_vec())
}

/// An SSH wire-format string at `at`, and the offset after it.
fn ssh_string(raw: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let len = u32::from_be_bytes(raw.get(at..at + 4)?.try_into().ok()?) as usize;
    let start = at + 4;
    Some((raw.get(start..start.checked_add(len)?)?, start + len))
}

/// A new key pair made by ssh-keygen with the `--ssh-*` flags.
fn generate_key_pair(
    algorithm: &str,
    rsa_bits: &str,
    ecdsa_curve: &str,
) -> anyhow::Result<(String, String)> {
    let (kind, bits) = match algorithm {
        "rsa" => {
            let bits: u32 = rsa_bits.parse::<u32>().ok().filter(|b| (1024..=8192).contains(b) && *b % 8 == 0).ok_or_else(|| {
                anyhow!(
                    "invalid argument \"{}\" for \"--ssh-rsa-bits\" flag: RSA key bit size must be a multiple of 8",
                    rsa_bits
                )
            })?;
            ("rsa", Some(bits.to_string()))
        }
        "ecdsa" => {
            let bits = match ecdsa_curve {
                "p256" => "256",
                "p384" => "384",
                "p521" => "521",
                other => bail!(
                    "invalid argument \"{other}\" for \"--ssh-ecdsa-curve\" flag: unsupported curve '{other}', must be one of: p256, p384, p521"
                ),
            };
            ("ecdsa", Some(bits.to_string()))
        }
        "ed25519" => ("ed25519", None),
        other => bail!(
            "invalid argument \"{other}\" for \"--ssh-key-algorithm\" flag: unsupported public key algorithm '{other}', must be one of: rsa, ecdsa, ed25519"
        ),
    };
    let dir = tempfile::tempdir().context("creating a temporary directory for the key pair")?;
    let file = dir.path().join("identity");
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", kind, "-N", "", "-C", ""]);
    if let Some(b) = &bits {
        cmd.args(["-b", b]);
    }
    let out = cmd
        .arg("-f")
        .arg(&file)
        .output()
        .context("running ssh-keygen to generate the key pair")?;
    if !out.status.success() {
        bail!(
            "key pair generation failed, error: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let private = std::fs::read_to_string(&file).context("reading the generated private key")?;
    let public = std::fs::read_to_string(file.with_extension("pub"))
        .context("reading the generated public key")?;
    Ok((private, authorized_key_line(&public)))
}

/// The server's host key as one known_hosts line, the first of Go's SSH client's order of
/// preference among what the server offers.
fn scan_host_key(host: &str) -> anyhow::Result<String> {
    let (name, port) = match host.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') && p.chars().all(|c| c.is_ascii_digit()) => {
            (h.trim_matches(|c| c == '[' || c == ']'), p)
        }
        _ => (host.trim_matches(|c| c == '[' || c == ']'), "22"),
    };
    let out = Command::new("ssh-keyscan")
        .args(["-T", "30", "-p", port, name])
        .output()
        .context("running ssh-keyscan to read the server's host key")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    const PREFERENCE: &[&str] = &[
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "ssh-rsa",
        "ssh-ed25519",
    ];
    PREFERENCE
        .iter()
        .find_map(|t| {
            lines
                .iter()
                .find(|l| l.split_whitespace().nth(1) == Some(t))
        })
        .map(|l| l.trim().to_string())
        .ok_or_else(|| {
            anyhow!(
                "SSH key scan for host {name}:{port} failed, error: {}",
                match String::from_utf8_lossy(&out.stderr).trim() {
                    "" => "no host key received".to_string(),
                    e => e.to_string(),
                }
            )
        })
}

/// Reads the certificate files; `Ok(None)` for each file not given.
fn tls_files(t: &TlsFiles) -> anyhow::Result<(Option<String>, Option<String>, Option<String>)> {
    let ca = non_empty(&t.ca_crt_file)
        .map(|p| read_text(p, "unable to read TLS CA file"))
        .transpose()?;
    let crt = non_empty(&t.tls_crt_file)
        .map(|p| read_text(p, "failed to read cert file"))
        .transpose()?;
    let key = non_empty(&t.tls_key_file)
        .map(|p| read_text(p, "failed to read key file"))
        .transpose()?;
    Ok((ca, crt, key))
}

/// A TLS Secret's data and type, with flux's checks.
fn tls_data(
    ca: Option<String>,
    crt: Option<String>,
    key: Option<String>,
) -> anyhow::Result<(Map<String, Value>, &'static str)> {
    let mut data = Map::new();
    let kind = match (crt, key) {
        (Some(crt), Some(key)) => {
            check_pem(&crt, "CERTIFICATE", "certificate")?;
            check_pem(&key, "PRIVATE KEY", "key")?;
            data.insert("tls.crt".into(), json!(crt));
            data.insert("tls.key".into(), json!(key));
            "kubernetes.io/tls"
        }
        (Some(_), None) => bail!("found certificate but missing private key"),
        (None, Some(_)) => bail!("found private key but missing certificate"),
        (None, None) => {
            if ca.is_none() {
                bail!("no CA certificate or client certificate pair found");
            }
            "Opaque"
        }
    };
    if let Some(ca) = ca {
        data.insert("ca.crt".into(), json!(ca));
    }
    Ok((data, kind))
}

/// A PEM block whose label ends with `label` must be in `text` (Go's wording when it is not).
/// Unlike flux, whether the certificate and key belong together is not checked here: a wrong
/// pair is reported by the controller that uses it.
fn check_pem(text: &str, label: &str, what: &str) -> anyhow::Result<()> {
    let found = text
        .lines()
        .any(|l| l.starts_with("-----BEGIN ") && l.trim_end().ends_with(&format!("{label}-----")));
    if !found {
        bail!(
            "invalid TLS certificate and key pair: tls: failed to find any PEM data in {what} input"
        );
    }
    Ok(())
}

fn tls(a: &TlsArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let (ca, crt, key) = tls_files(&a.tls)?;
    let (data, kind) = tls_data(ca, crt, key)?;
    Ok(Made {
        secret: secret(&a.common, ns, Some(kind), data, None)?,
        what: "tls",
        blank_line_after: false,
        deploy_key: None,
    })
}

fn helm(a: &HelmArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let (ca, crt, key) = tls_files(&a.tls)?;
    let user = non_empty(&a.username);
    let password = non_empty(&a.password);
    let (data, kind) = if crt.is_some() || key.is_some() {
        let (data, kind) = tls_data(ca, crt, key)?;
        (data, Some(kind))
    } else if user.is_some() || password.is_some() {
        let mut data = Map::new();
        data.insert(
            "username".into(),
            json!(user.ok_or_else(|| anyhow!("username is required"))?),
        );
        data.insert(
            "password".into(),
            json!(password.ok_or_else(|| anyhow!("password is required"))?),
        );
        if let Some(ca) = ca {
            data.insert("ca.crt".into(), json!(ca));
        }
        (data, Some("kubernetes.io/basic-auth"))
    } else if ca.is_some() {
        let (data, kind) = tls_data(ca, None, None)?;
        (data, Some(kind))
    } else {
        (Map::new(), None)
    };
    Ok(Made {
        secret: secret(&a.common, ns, kind, data, None)?,
        what: "helm",
        blank_line_after: true,
        deploy_key: None,
    })
}

fn oci(a: &OciArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let url = non_empty(&a.url).ok_or_else(|| anyhow!("--url is required"))?;
    let user = non_empty(&a.username).ok_or_else(|| anyhow!("--username is required"))?;
    let password = non_empty(&a.password).ok_or_else(|| anyhow!("--password is required"))?;
    if url.contains("://") || url.chars().any(char::is_whitespace) {
        bail!("error parsing url: 'could not parse reference: {url}'");
    }
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut entry = Map::new();
    entry.insert("username".into(), json!(user));
    entry.insert("password".into(), json!(password));
    entry.insert("auth".into(), json!(auth));
    let mut auths = Map::new();
    auths.insert(url.to_string(), Value::Object(entry));
    let config = serde_json::to_string_pretty(&json!({ "auths": auths }))?;
    let mut data = Map::new();
    data.insert(".dockerconfigjson".into(), json!(config));
    Ok(Made {
        secret: secret(
            &a.common,
            ns,
            Some("kubernetes.io/dockerconfigjson"),
            data,
            None,
        )?,
        what: "oci",
        blank_line_after: true,
        deploy_key: None,
    })
}

fn github_app(a: &GitHubAppArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let key_path = a.app_private_key.as_deref().unwrap_or("");
    let key = read_text(key_path, "unable to read private key file")?;
    let app_id = non_empty(&a.app_id).ok_or_else(|| anyhow!("githubAppID is required"))?;
    let mut data = Map::new();
    data.insert("githubAppID".into(), json!(app_id));
    data.insert("githubAppPrivateKey".into(), json!(key));
    let owner = non_empty(&a.app_installation_owner);
    let id = non_empty(&a.app_installation_id);
    if owner.is_some() == id.is_some() {
        bail!(
            "exactly one of githubAppInstallationOwner or githubAppInstallationID must be provided"
        );
    }
    if let Some(o) = owner {
        data.insert("githubAppInstallationOwner".into(), json!(o));
    }
    if let Some(i) = id {
        data.insert("githubAppInstallationID".into(), json!(i));
    }
    if let Some(u) = non_empty(&a.app_base_url) {
        data.insert("githubAppBaseURL".into(), json!(u));
    }
    Ok(Made {
        secret: secret(&a.common, ns, Some("Opaque"), data, None)?,
        what: "githubapp",
        blank_line_after: true,
        deploy_key: None,
    })
}

fn proxy(a: &ProxyArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    let address = non_empty(&a.address).ok_or_else(|| anyhow!("address is required"))?;
    let mut data = Map::new();
    data.insert("address".into(), json!(address));
    if let Some(u) = non_empty(&a.username) {
        data.insert("username".into(), json!(u));
    }
    if let Some(p) = non_empty(&a.password) {
        data.insert("password".into(), json!(p));
    }
    Ok(Made {
        secret: secret(&a.common, ns, Some("Opaque"), data, None)?,
        what: "proxy",
        blank_line_after: true,
        deploy_key: None,
    })
}

/// notification-controller's webhook path for a Receiver: `/hook/` and the hex SHA-256 of its
/// token, name and namespace.
pub fn webhook_path(token: &str, name: &str, namespace: &str) -> String {
    let digest = Sha256::digest(format!("{token}{name}{namespace}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("/hook/{hex}")
}

fn receiver(a: &ReceiverArgs, ns: &str) -> anyhow::Result<Made> {
    let name = name_of(&a.common)?;
    let kind = non_empty(&a.receiver_type).ok_or_else(|| anyhow!("--type is required"))?;
    if !RECEIVER_TYPES.contains(&kind) {
        bail!(
            "invalid argument \"{kind}\" for \"--type\" flag: receiver type '{kind}' is not supported, must be one of: {}",
            RECEIVER_TYPES.join(", ")
        );
    }
    let hostname = non_empty(&a.hostname).ok_or_else(|| anyhow!("--hostname is required"))?;
    if kind == "gcr" && non_empty(&a.email_claim).is_none() {
        bail!("--email-claim is required for gcr receiver type");
    }
    let token = match non_empty(&a.token) {
        Some(t) => t.to_string(),
        None => random_token()?,
    };
    let url = format!("https://{hostname}{}", webhook_path(&token, name, ns));
    let mut data = Map::new();
    data.insert("token".into(), json!(token));
    if kind == "gcr" {
        data.insert("email".into(), json!(non_empty(&a.email_claim)));
        data.insert(
            "audience".into(),
            json!(non_empty(&a.audience_claim).unwrap_or(&url)),
        );
    }
    let mut annotations = Map::new();
    annotations.insert("notification.toolkit.fluxcd.io/webhook".into(), json!(url));
    Ok(Made {
        secret: secret(&a.common, ns, None, data, Some(annotations))?,
        what: "receiver",
        blank_line_after: true,
        deploy_key: None,
    })
}

/// 32 random bytes from the kernel, hex-encoded, as flux makes a receiver token.
fn random_token() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("failed to generate random token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn notation(a: &NotationArgs, ns: &str) -> anyhow::Result<Made> {
    name_of(&a.common)?;
    if a.ca_cert_file.is_empty() {
        bail!("--ca-cert-file is required");
    }
    let policy_path = non_empty(&a.trust_policy_file)
        .ok_or_else(|| anyhow!("--trust-policy-file is required"))?;
    let policy = read_text(policy_path, "unable to read trust policy file")?;
    check_trust_policy(&policy, policy_path)?;
    let mut data = Map::new();
    let mut errors = Vec::new();
    for path in &a.ca_cert_file {
        let file_name = Path::new(path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !file_name.ends_with(".crt") && !file_name.ends_with(".pem") {
            errors.push(format!("{file_name} must end with either .crt or .pem"));
            continue;
        }
        match read_text(path, "unable to read TLS CA file") {
            Ok(text) => {
                data.insert(file_name, json!(text));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    data.insert("trustpolicy.json".into(), json!(policy));
    Ok(Made {
        secret: secret(&a.common, ns, None, data, None)?,
        what: "notation configuration",
        blank_line_after: true,
        deploy_key: None,
    })
}

/// The checks of Notation's trust policy document flux runs before writing it (the fields every
/// statement must have); the full policy semantics are the verifier's.
fn check_trust_policy(text: &str, path: &str) -> anyhow::Result<()> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| anyhow!("failed to unmarshal trust policy {path}: {e}"))?;
    let go_type = match &doc {
        Value::Object(_) => None,
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("bool"),
        Value::Array(_) => Some("array"),
        Value::Null => None,
    };
    if let Some(t) = go_type {
        bail!(
            "failed to unmarshal trust policy {path}: json: cannot unmarshal {t} into Go value of type trustpolicy.Document"
        );
    }
    let invalid = |m: &str| anyhow!("invalid trust policy: trust policy: {m}");
    match doc.get("version").and_then(Value::as_str) {
        Some("1.0") => {}
        Some(v) => return Err(invalid(&format!("version {v:?} is not supported"))),
        None => {
            return Err(invalid(
                "version is missing, trust policy version is required",
            ));
        }
    }
    let statements = doc
        .get("trustPolicies")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            invalid("trust policy document can not have zero trust policy statements")
        })?;
    let mut names = std::collections::BTreeSet::new();
    for s in statements {
        let name = s
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| {
                invalid(
                    "a trust policy statement is missing a name, every statement requires a name",
                )
            })?;
        if !names.insert(name) {
            return Err(invalid(&format!(
                "multiple trust policy statements use the same name {name:?}, statement names must be unique"
            )));
        }
        let scopes_empty = s
            .get("registryScopes")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty());
        if scopes_empty {
            return Err(invalid(&format!(
                "trust policy statement {name:?} has zero registry scopes, it must specify registry scopes with at least one value"
            )));
        }
    }
    Ok(())
}
