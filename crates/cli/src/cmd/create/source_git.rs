//! `ferroflux create source git NAME --url URL (--branch|--tag|--tag-semver|--ref-name|--commit)
//! [--secret-ref | credentials] [--export]`: a GitRepository as `flux create source git` writes
//! it. `--export` prints it (flux's goldens, byte for byte). Otherwise, without `--secret-ref`,
//! the credentials flags become a Secret named after the source first (for `ssh://` a key pair
//! and the server's host key, the public key shown as the deploy key and confirmed unless
//! `--silent`), then the GitRepository is created or updated and the command waits until the
//! controller reports it ready with an artifact.

use super::secret::{GitCredentials, non_empty, parse_labels, secret_object, upsert};
use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj;
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_api::GitRepository;
use ferroflux_api::duration::format_duration;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// The Git providers a GitRepository accepts, in flux's order.
const PROVIDERS: &[&str] = &["generic", "github", "aws", "azure"];

/// `create source git`'s flags.
#[derive(Args, Debug)]
pub struct GitArgs {
    /// The source's name.
    name: Option<String>,
    /// The Git address, e.g. ssh://git@host/org/repository.
    #[arg(long)]
    url: Option<String>,
    /// Git branch.
    #[arg(long)]
    branch: Option<String>,
    /// Git tag.
    #[arg(long)]
    tag: Option<String>,
    /// Git tag semver range.
    #[arg(long = "tag-semver")]
    semver: Option<String>,
    /// Git reference name.
    #[arg(long)]
    ref_name: Option<String>,
    /// Git commit.
    #[arg(long)]
    commit: Option<String>,
    /// Basic authentication username.
    #[arg(short, long)]
    username: Option<String>,
    /// Basic authentication password, or the private key's passphrase over SSH.
    #[arg(short, long)]
    password: Option<String>,
    /// The SSH key pair's algorithm when one is generated: rsa, ecdsa or ed25519.
    #[arg(long, default_value = "ecdsa")]
    ssh_key_algorithm: String,
    /// The RSA key's size when one is generated.
    #[arg(long, default_value = "2048")]
    ssh_rsa_bits: String,
    /// The ECDSA key's curve when one is generated: p256, p384 or p521.
    #[arg(long, default_value = "p384")]
    ssh_ecdsa_curve: String,
    /// An existing Secret with SSH or basic credentials or a GitHub App's.
    #[arg(long)]
    secret_ref: Option<String>,
    /// An existing Secret with the proxy's address and credentials.
    #[arg(long)]
    proxy_secret_ref: Option<String>,
    /// The Git provider: generic, github, aws or azure.
    #[arg(long)]
    provider: Option<String>,
    /// A TLS CA file for a self-signed HTTPS server.
    #[arg(long)]
    ca_file: Option<String>,
    /// A private key file for the SSH server (generated when absent).
    #[arg(long)]
    private_key_file: Option<String>,
    /// Include the repository's Git submodules in the artifact.
    #[arg(long)]
    recurse_submodules: bool,
    /// Assume the deploy key is already set up: no confirmation.
    #[arg(short, long)]
    silent: bool,
    /// Paths left out of the artifact (.gitignore rules; comma-separated).
    #[arg(long, value_delimiter = ',')]
    ignore_paths: Vec<String>,
    /// Directories to check out sparsely (comma-separated).
    #[arg(long, value_delimiter = ',')]
    sparse_checkout_paths: Vec<String>,
    /// How often the repository is fetched.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Timeout of the Git operations.
    #[arg(long = "fetch-timeout", value_parser = crate::flags::duration)]
    fetch_timeout: Option<Duration>,
    /// Labels of the source, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Print the YAML instead of applying it.
    #[arg(long)]
    export: bool,
}

/// The GitRepository the flags describe, keys sorted as flux prints them.
fn git_repository(a: &GitArgs, ns: &str) -> anyhow::Result<Value> {
    let name = non_empty(&a.name).ok_or_else(|| anyhow!("name is required"))?;
    let url = non_empty(&a.url).ok_or_else(|| anyhow!("url is required"))?;
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or("");
    if !["ssh", "http", "https"].contains(&scheme) {
        bail!("git URL scheme '{scheme}' not supported, can be: ssh, http and https");
    }
    let (branch, tag, semver, ref_name, commit) = (
        non_empty(&a.branch),
        non_empty(&a.tag),
        non_empty(&a.semver),
        non_empty(&a.ref_name),
        non_empty(&a.commit),
    );
    if [branch, tag, semver, ref_name, commit]
        .iter()
        .all(Option::is_none)
    {
        bail!(
            "a Git ref is required, use one of the following: --branch, --tag, --commit, --ref-name or --tag-semver"
        );
    }
    if a.ca_file.is_some() && scheme == "ssh" {
        bail!("specifying a CA file is not supported for Git over SSH");
    }
    if let Some(p) = &a.provider {
        if p.is_empty() {
            bail!(
                "invalid argument \"\" for \"--provider\" flag: no source Git provider given, please specify the Git provider name"
            );
        }
        if !PROVIDERS.contains(&p.as_str()) {
            bail!(
                "invalid argument \"{p}\" for \"--provider\" flag: source Git provider '{p}' is not supported, must be one of: {}",
                PROVIDERS.join("|")
            );
        }
    }
    let labels = parse_labels(&a.labels)?;
    // The one reference flux keeps: a commit (with its branch), else a name, a semver range, a
    // tag, a branch.
    let mut reference = Map::new();
    if let Some(c) = commit {
        if let Some(b) = branch {
            reference.insert("branch".into(), json!(b));
        }
        reference.insert("commit".into(), json!(c));
    } else if let Some(n) = ref_name {
        reference.insert("name".into(), json!(n));
    } else if let Some(s) = semver {
        reference.insert("semver".into(), json!(s));
    } else if let Some(t) = tag {
        reference.insert("tag".into(), json!(t));
    } else if let Some(b) = branch {
        reference.insert("branch".into(), json!(b));
    }
    let mut spec = Map::new();
    if !a.ignore_paths.is_empty() {
        spec.insert("ignore".into(), json!(a.ignore_paths.join("\n")));
    }
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    if let Some(p) = non_empty(&a.provider) {
        spec.insert("provider".into(), json!(p));
    }
    if let Some(p) = non_empty(&a.proxy_secret_ref) {
        spec.insert("proxySecretRef".into(), json!({ "name": p }));
    }
    if a.recurse_submodules {
        spec.insert("recurseSubmodules".into(), json!(true));
    }
    spec.insert("ref".into(), Value::Object(reference));
    if let Some(s) = non_empty(&a.secret_ref) {
        spec.insert("secretRef".into(), json!({ "name": s }));
    }
    if !a.sparse_checkout_paths.is_empty() {
        spec.insert("sparseCheckout".into(), json!(a.sparse_checkout_paths));
    }
    if let Some(t) = a.fetch_timeout {
        spec.insert("timeout".into(), json!(format_duration(t)));
    }
    spec.insert("url".into(), json!(url));
    let mut metadata = Map::new();
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(ns));
    let object = json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": metadata,
        "spec": spec,
    });
    // The type checks what the CRD would: a wrong field is an error here, not in the cluster.
    let _: GitRepository = serde_json::from_value(object.clone())
        .context("the flags make an invalid GitRepository")?;
    Ok(sorted(object))
}

/// Runs `create source git`.
pub async fn run(kube: &KubeArgs, a: &GitArgs) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let mut object = git_repository(a, ns)?;
    if a.export {
        print!("{}", document(&object));
        return Ok(ExitCode::SUCCESS);
    }
    let name = non_empty(&a.name).unwrap_or_default().to_string();
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        progress::generate("generating GitRepository source");
        if non_empty(&a.secret_ref).is_none()
            && let Some(secret_name) = credentials_secret(&cluster, ns, &name, a).await?
        {
            object["spec"]["secretRef"] = json!({ "name": secret_name });
        }
        super::apply_saying(
            &cluster,
            ns,
            "GitRepository",
            &object,
            "GitRepository source",
            "GitRepository source",
        )
        .await?;
        let words = fluxobj::SourceWait {
            label: "GitRepository source",
            missing_artifact: Some(
                "GitRepository source reconciliation completed but no artifact was found",
            ),
        };
        fluxobj::wait_for_artifact::<GitRepository>(&cluster, ns, &name, deadline, words).await
    }
    .await;
    fluxobj::exit_code(result, "the GitRepository stays applied")
}

/// The Secret made from the credential flags, applied under the source's name; `None` when the
/// flags hold no credentials (a public HTTPS repository).
async fn credentials_secret(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    a: &GitArgs,
) -> anyhow::Result<Option<String>> {
    let url = non_empty(&a.url).unwrap_or_default();
    let credentials = GitCredentials {
        url,
        username: non_empty(&a.username),
        password: non_empty(&a.password),
        bearer_token: None,
        ca_file: non_empty(&a.ca_file),
        private_key_file: non_empty(&a.private_key_file),
        key_algorithm: &a.ssh_key_algorithm,
        rsa_bits: &a.ssh_rsa_bits,
        ecdsa_curve: &a.ssh_ecdsa_curve,
    };
    if credentials.scheme() == "http" && (a.username.is_some() || a.password.is_some()) {
        progress::warning("insecure configuration: credentials configured for an HTTP URL");
    }
    let made = credentials.secret_data()?;
    if made.data.is_empty() {
        return Ok(None);
    }
    if let Some(host_key) = &made.known_hosts {
        progress::success(format!("collected public key from SSH server:\n{host_key}"));
    }
    if let Some(key) = &made.public_key {
        progress::generate(format!("deploy key: {key}"));
        if !a.silent && !progress::confirm("Have you added the deploy key to your repository")? {
            bail!("aborting");
        }
    }
    progress::action("applying secret with repository credentials");
    // flux gives the credentials Secret no labels.
    upsert(
        cluster,
        ns,
        secret_object(name, ns, Map::new(), None, made.data, None),
    )
    .await?;
    progress::success("authentication configured");
    Ok(Some(name.to_string()))
}
