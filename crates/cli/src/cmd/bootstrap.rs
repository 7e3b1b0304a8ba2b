//! `ferroflux bootstrap git`: put the engine's manifests in a cluster's folder of a repository,
//! install the engine from them and make the cluster follow that folder, as `flux bootstrap git`
//! does. Running it again is the upgrade path: it commits only what changed, and nothing when
//! nothing did.
//!
//! Steps, in Flux's order: refuse a cluster whose `flux-system` Kustomization follows another
//! path; clone the branch; write `<path>/flux-system/{gotk-components.yaml, gotk-sync.yaml}` and
//! `kustomization.yaml` (only when absent, so users' patches survive); commit and push what
//! changed, re-fetching and trying again when the remote moved on; install the components unless
//! the cluster's Kustomization already manages them; create the `flux-system` Secret from the
//! credentials; apply the folder; wait until the GitRepository and the Kustomization report the
//! pushed revision and the controller is ready.
//!
//! Where we differ from Flux, on purpose: the three files go in one commit (Flux makes two, so an
//! interruption between them left a folder without its sync manifests); the path check runs
//! before anything is written (Flux pushes the components first); ssh host keys come from a
//! known_hosts file, never from scanning the server (no trust on first use); ferroflux does not
//! generate SSH deploy keys, so https remotes give the cluster the same username and password.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_apply::applier::Applier;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::bootstrap::git::{Auth, Checkout, GitError, Signature};
use crate::bootstrap::manifests::{
    self, COMPONENTS_FILE, KUSTOMIZATION_FILE, SYNC_FILE, SyncOptions,
};
use crate::cluster::{Cluster, KubeArgs};
use crate::cmd::install::{self, EngineArgs, FIELD_MANAGER};
use crate::exit;
use crate::output::progress;

#[derive(Args, Debug)]
pub struct BootstrapArgs {
    #[command(subcommand)]
    command: BootstrapCommand,
}

#[derive(Subcommand, Debug)]
enum BootstrapCommand {
    /// Deploy ferroflux on a cluster connected to a Git repository (file://, https://, ssh://).
    Git(Box<GitArgs>),
}

#[derive(Args, Debug)]
struct GitArgs {
    /// Git repository URL.
    #[arg(long)]
    url: String,
    /// Git branch.
    #[arg(long, default_value = "main")]
    branch: String,
    /// Path relative to the repository root; the cluster syncs this folder.
    #[arg(long, default_value = "")]
    path: String,
    /// Sync interval of the GitRepository.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Path to a private key file used for authenticating to the Git SSH server.
    #[arg(long)]
    private_key_file: Option<PathBuf>,
    /// known_hosts file holding the SSH server's host key (default: ~/.ssh/known_hosts). The
    /// host key is never accepted unseen.
    #[arg(long)]
    known_hosts_file: Option<PathBuf>,
    /// Basic authentication username.
    #[arg(short = 'u', long, default_value = "git")]
    username: String,
    /// Basic authentication password or token; the passphrase of --private-key-file for ssh.
    #[arg(short = 'p', long, env = "GIT_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Give the cluster the username and password (token) instead of an SSH deploy key.
    #[arg(long)]
    token_auth: bool,
    /// Allow http:// remotes (credentials travel in clear text).
    #[arg(long)]
    allow_insecure_http: bool,
    /// Path to a TLS CA file used for validating the https server's certificate.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Assume the deploy key is set up; skip confirmation prompts.
    #[arg(short = 's', long)]
    silent: bool,
    /// Author name for Git commits.
    #[arg(long, default_value = "Flux")]
    author_name: String,
    /// Author email for Git commits.
    #[arg(long, default_value = "")]
    author_email: String,
    /// Text added to the commit message, e.g. '[ci skip]'.
    #[arg(long)]
    commit_message_appendix: Option<String>,
    /// Name of the Secret the sync credentials are stored in (default: the namespace).
    #[arg(long)]
    secret_name: Option<String>,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    kube: KubeArgs,
}

pub async fn run(args: BootstrapArgs) -> Result<ExitCode> {
    let BootstrapCommand::Git(git) = args.command;
    // Listening before any work starts: from here Ctrl-C drops the bootstrap future, which
    // kills a running git (kill_on_drop) and removes the temporary clone. A push is one ref
    // update on the remote, so Git holds either the whole commit or none of it.
    let outcome = tokio::select! {
        r = bootstrap_git(git) => Some(r),
        r = tokio::signal::ctrl_c() => match r {
            Ok(()) => None,
            Err(e) => Some(Err(anyhow!(e).context("cannot listen for Ctrl-C"))),
        },
    };
    // The bootstrap future is gone here, and with it the clone and any git child.
    match outcome {
        Some(result) => result.map(|()| ExitCode::SUCCESS),
        None => {
            progress::failure(format_args!(
                "interrupted: what was pushed stays in Git and on the cluster; running \
                 bootstrap again resumes"
            ));
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
    }
}

/// The validated plan of one run: how to reach Git, what the cluster will use.
struct Plan {
    auth: Auth,
    sync: SyncOptions,
    secret: std::collections::BTreeMap<String, String>,
    ca_file: Option<PathBuf>,
}

fn plan(args: &GitArgs) -> Result<Plan> {
    let namespace = args.kube.namespace.clone();
    let target_path = manifests::clean_target_path(&args.path)?;
    let interval = args.interval;
    if interval.is_zero() {
        bail!("--interval must be more than zero");
    }
    if args.branch.is_empty() || args.branch.starts_with('-') || args.branch.contains("..") {
        bail!("invalid --branch {:?}", args.branch);
    }
    let (scheme, rest) = args.url.split_once("://").ok_or_else(|| {
        anyhow!(
            "--url {:?} is not a URL: use file://, https:// or ssh://",
            args.url
        )
    })?;
    let ca_pem = match &args.ca_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("unable to read TLS CA file {}", p.display()))?,
        ),
        None => None,
    };
    let password = args.password.clone().filter(|p| !p.is_empty());
    let mut secret = std::collections::BTreeMap::new();
    let (auth, sync_url) = match scheme {
        "file" => {
            if args.private_key_file.is_some() || password.is_some() {
                bail!("file:// URLs take no credentials: drop --private-key-file and --password");
            }
            (Auth::None, args.url.clone())
        }
        "http" | "https" => {
            if scheme == "http" && !args.allow_insecure_http {
                bail!("scheme http is insecure, pass --allow-insecure-http=true to allow it");
            }
            if args.private_key_file.is_some() {
                bail!(
                    "--private-key-file is for ssh:// URLs; use --username and --password with {scheme}://"
                );
            }
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    if userinfo.contains(':') {
                        bail!(
                            "--url must not hold a password: pass it with --password or the \
                             GIT_PASSWORD variable"
                        );
                    }
                    host
                }
                None => authority,
            };
            let url = format!("{scheme}://{host}/{path}");
            let auth = match &password {
                Some(p) => {
                    if !args.token_auth {
                        progress::warning(format_args!(
                            "ferroflux does not generate SSH deploy keys: the cluster will use \
                             the same username and password (as with --token-auth)"
                        ));
                    }
                    secret.insert("username".to_string(), args.username.clone());
                    secret.insert("password".to_string(), p.clone());
                    Auth::Basic {
                        username: args.username.clone(),
                        password: p.clone(),
                    }
                }
                None if args.token_auth => {
                    bail!("--token-auth needs --password (or the GIT_PASSWORD variable)")
                }
                None => Auth::None,
            };
            if let Some(ca) = &ca_pem {
                secret.insert("ca.crt".to_string(), ca.clone());
            }
            (auth, url)
        }
        "ssh" => {
            if args.token_auth {
                bail!("--token-auth is for https:// URLs; ssh:// needs --private-key-file");
            }
            let key_file = args.private_key_file.clone().ok_or_else(|| {
                anyhow!(
                    "ssh:// URLs need --private-key-file: ferroflux does not use an ssh agent \
                     or generate deploy keys"
                )
            })?;
            let identity = std::fs::read_to_string(&key_file).with_context(|| {
                format!("cannot read the private key file {}", key_file.display())
            })?;
            if !identity.contains("PRIVATE KEY") {
                bail!(
                    "{} is not a private key in OpenSSH or PEM format",
                    key_file.display()
                );
            }
            let known_hosts = match &args.known_hosts_file {
                Some(p) => p.clone(),
                None => std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".ssh/known_hosts"))
                    .ok_or_else(|| anyhow!("HOME is not set: pass --known-hosts-file"))?,
            };
            let (authority, _) = rest.split_once('/').unwrap_or((rest, ""));
            let (user, hostport) = match authority.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, authority),
            };
            if user.is_some_and(|u| u.contains(':')) {
                bail!("--url must not hold a password");
            }
            let host_entry = known_hosts_name(hostport);
            let lines = known_host_lines(&known_hosts, &host_entry)?;
            // Flux sets the URL's user from --username unless the URL names one and the flag
            // was left at its default.
            let user = match user {
                Some(u) if args.username == "git" => u.to_string(),
                _ => args.username.clone(),
            };
            let path = &rest[authority.len()..];
            let url = format!("ssh://{user}@{hostport}{path}");
            secret.insert("identity".to_string(), identity);
            let public = key_file.with_extension("pub");
            if let Ok(pub_key) = std::fs::read_to_string(&public) {
                secret.insert("identity.pub".to_string(), pub_key);
            }
            secret.insert("known_hosts".to_string(), lines);
            if let Some(p) = &password {
                secret.insert("password".to_string(), p.clone());
            }
            (
                Auth::Ssh {
                    key_file,
                    passphrase: password.clone(),
                    known_hosts,
                },
                url,
            )
        }
        other => bail!("scheme {other:?} is not supported: use file://, https:// or ssh://"),
    };
    let secret_name = args
        .secret_name
        .clone()
        .unwrap_or_else(|| namespace.clone());
    Ok(Plan {
        auth,
        sync: SyncOptions {
            name: namespace.clone(),
            namespace,
            url: sync_url,
            branch: args.branch.clone(),
            secret_name,
            interval,
            target_path,
        },
        secret,
        ca_file: args.ca_file.clone(),
    })
}

/// `host` or `[host]:port`, as known_hosts names a server.
fn known_hosts_name(hostport: &str) -> String {
    match hostport.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') && port != "22" && !port.is_empty() => {
            format!(
                "[{}]:{port}",
                host.trim_start_matches('[').trim_end_matches(']')
            )
        }
        Some((host, "22")) => host.to_string(),
        _ => hostport.to_string(),
    }
}

/// The known_hosts lines for `host` (hashed entries too, through `ssh-keygen -F`).
fn known_host_lines(file: &Path, host: &str) -> Result<String> {
    if !file.exists() {
        bail!(
            "known_hosts file {} does not exist: add the SSH server's host key there (after \
             checking its fingerprint) or pass --known-hosts-file",
            file.display()
        );
    }
    let out = std::process::Command::new("ssh-keygen")
        .arg("-F")
        .arg(host)
        .arg("-f")
        .arg(file)
        .output()
        .context("cannot run ssh-keygen to read the known_hosts file")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        bail!(
            "no host key for {host} in {}: add the SSH server's host key (after checking its \
             fingerprint) or pass --known-hosts-file",
            file.display()
        );
    }
    Ok(lines.join("\n") + "\n")
}

async fn bootstrap_git(args: Box<GitArgs>) -> Result<()> {
    let plan = plan(&args)?;
    let install_opts = args.engine.options(&args.kube.namespace)?;
    let timeout = args.kube.timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let client = Cluster::connect(&args.kube).await?.client;
    let ns = plan.sync.namespace.clone();

    // Before anything is written: a cluster already following another folder is refused.
    if let Some(current) = kustomization_path_differs(&client, &plan.sync).await? {
        bail!(
            "sync path configuration ({:?}) would overwrite path ({current:?}) of existing \
             Kustomization",
            manifests::sync_path(&plan.sync.target_path)
        );
    }

    progress::action(format_args!(
        "cloning branch {:?} from Git repository {:?}",
        plan.sync.branch, args.url
    ));
    let checkout = Checkout::clone(
        &args.url,
        &plan.sync.branch,
        &plan.auth,
        plan.ca_file.as_deref(),
    )
    .await
    .context("failed to clone repository")?;
    progress::success(format_args!("cloned repository"));

    progress::generate(format_args!("generating component manifests"));
    let components = manifests::components_yaml(&install_opts)?;
    progress::success(format_args!("generated component manifests"));
    progress::action(format_args!("generating sync manifests"));
    let sync = manifests::sync_yaml(&plan.sync);
    progress::success(format_args!("generated sync manifests"));

    let author = Signature {
        name: args.author_name.clone(),
        email: args.author_email.clone(),
    };
    let mut message = format!(
        "Add Flux {} component and sync manifests",
        manifests::VERSION
    );
    if let Some(extra) = &args.commit_message_appendix {
        message = format!("{message}\n\n{extra}");
    }
    let dir = if plan.sync.target_path.is_empty() {
        ns.clone()
    } else {
        format!("{}/{ns}", plan.sync.target_path)
    };
    let mut attempts = 0;
    loop {
        attempts += 1;
        let written = write_files(&checkout.path(), &dir, &components, &sync)?;
        match checkout.commit(&written, &message, &author).await? {
            None => {
                progress::success(format_args!("component manifests are up to date"));
                progress::success(format_args!("sync manifests are up to date"));
                break;
            }
            Some(commit) => {
                progress::success(format_args!(
                    "committed component and sync manifests to {:?} ({commit:?})",
                    plan.sync.branch
                ));
                progress::action(format_args!("pushing manifests to {:?}", args.url));
                match checkout.push().await {
                    Ok(()) => break,
                    Err(GitError::NonFastForward { .. }) if attempts < 3 => {
                        progress::waiting(format_args!(
                            "git conflict detected, retrying with a fresh fetch"
                        ));
                        checkout.fetch_and_reset().await?;
                    }
                    Err(e) => return Err(anyhow!(e).context("failed to push manifests")),
                }
            }
        }
    }
    let head = checkout
        .head()
        .await?
        .ok_or_else(|| anyhow!("the branch has no commit after the push"))?;
    let revision = format!("{}@sha1:{head}", plan.sync.branch);

    // What the folder builds to: components, the sync objects and any user patches.
    let built = ferroflux_kustomize::Build::new(&checkout.path())
        .and_then(|b| b.build(Path::new(&dir)))
        .with_context(|| format!("cannot build {dir}/{KUSTOMIZATION_FILE}"))?;
    let (sync_objects, component_objects): (Vec<Value>, Vec<Value>) = built
        .into_iter()
        .partition(|o| is_sync_object(o, &plan.sync));

    let applier = Applier::new(client.clone(), FIELD_MANAGER);
    if must_install(&client, &plan.sync).await? {
        progress::action(format_args!("installing components in {ns:?} namespace"));
        install::apply(
            &applier,
            component_objects.clone(),
            install::remaining(deadline),
        )
        .await
        .context("failed to install components")?;
        progress::success(format_args!("installed components"));
    }
    progress::success(format_args!("reconciled components"));

    reconcile_secret(&client, &plan).await?;

    progress::action(format_args!("applying sync manifests"));
    let mut all = component_objects.clone();
    all.extend(sync_objects);
    install::apply(&applier, all, install::remaining(deadline))
        .await
        .context("failed to apply sync manifests")?;
    progress::success(format_args!("reconciled sync configuration"));

    let name = plan.sync.name.clone();
    let mut failures = Vec::new();
    progress::waiting(format_args!(
        "waiting for GitRepository \"{ns}/{name}\" to be reconciled"
    ));
    match wait_reconciled::<GitRepository>(&client, &ns, &name, &revision, deadline).await {
        Ok(()) => progress::success(format_args!("GitRepository reconciled successfully")),
        Err(e) => {
            progress::failure(format_args!("{e}"));
            failures.push(format!(
                "error while waiting for GitRepository to be ready: '{e}'"
            ));
        }
    }
    progress::waiting(format_args!(
        "waiting for Kustomization \"{ns}/{name}\" to be reconciled"
    ));
    match wait_reconciled::<Kustomization>(&client, &ns, &name, &revision, deadline).await {
        Ok(()) => progress::success(format_args!("Kustomization reconciled successfully")),
        Err(e) => {
            progress::failure(format_args!("{e}"));
            failures.push(format!(
                "error while waiting for Kustomization to be ready: '{e}'"
            ));
        }
    }
    progress::action(format_args!("confirming components are healthy"));
    match install::wait_controller(&applier, &component_objects, install::remaining(deadline)).await
    {
        Ok(()) => progress::success(format_args!("all components are healthy")),
        Err(e) => failures.push(e.to_string()),
    }
    if !failures.is_empty() {
        bail!(
            "bootstrap failed with {} health check failure(s): [{}]",
            failures.len(),
            failures.join(", ")
        );
    }
    Ok(())
}

/// Writes the three files (kustomization.yaml only when the folder has none) and returns the
/// paths to stage, relative to the work tree.
fn write_files(work: &Path, dir: &str, components: &str, sync: &str) -> Result<Vec<String>> {
    let folder = work.join(dir);
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create {dir} in the clone"))?;
    std::fs::write(folder.join(COMPONENTS_FILE), components)
        .with_context(|| format!("cannot write {dir}/{COMPONENTS_FILE}"))?;
    std::fs::write(folder.join(SYNC_FILE), sync)
        .with_context(|| format!("cannot write {dir}/{SYNC_FILE}"))?;
    let mut paths = vec![
        format!("{dir}/{COMPONENTS_FILE}"),
        format!("{dir}/{SYNC_FILE}"),
    ];
    let existing = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .any(|f| folder.join(f).exists());
    if !existing {
        let resources = scan_resources(&folder)?;
        std::fs::write(
            folder.join(KUSTOMIZATION_FILE),
            manifests::kustomization_yaml(&resources),
        )
        .with_context(|| format!("cannot write {dir}/{KUSTOMIZATION_FILE}"))?;
        paths.push(format!("{dir}/{KUSTOMIZATION_FILE}"));
    }
    Ok(paths)
}

/// The files under `folder` holding Kubernetes objects, and the sub-folders holding a
/// kustomization, as Flux lists them in a generated kustomization.yaml (walk order).
fn scan_resources(folder: &Path) -> Result<Vec<String>> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path
                .strip_prefix(base)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() {
                let has_kustomization =
                    ["kustomization.yaml", "kustomization.yml", "Kustomization"]
                        .iter()
                        .any(|f| path.join(f).exists());
                if has_kustomization {
                    out.push(rel);
                } else {
                    walk(base, &path, out)?;
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(docs) = ferroflux_kustomize::yaml::parse::parse_documents(&text) else {
                continue;
            };
            let objects: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
            if !objects.is_empty()
                && objects
                    .iter()
                    .all(|d| d.get("kind").is_some() && d.get("apiVersion").is_some())
            {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(folder, folder, &mut out)?;
    Ok(out)
}

fn is_sync_object(obj: &Value, sync: &SyncOptions) -> bool {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let api = obj["apiVersion"].as_str().unwrap_or_default();
    ((kind == "GitRepository" && api.starts_with("source.toolkit.fluxcd.io/"))
        || (kind == "Kustomization" && api.starts_with("kustomize.toolkit.fluxcd.io/")))
        && obj["metadata"]["name"] == sync.name.as_str()
        && obj["metadata"]["namespace"] == sync.namespace.as_str()
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// The path of the cluster's Kustomization when it differs from ours (after Flux's
/// normalisation: `./` prefix, no trailing `/`).
async fn kustomization_path_differs(
    client: &kube::Client,
    sync: &SyncOptions,
) -> Result<Option<String>> {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), &sync.namespace);
    let ks = match api.get(&sync.name).await {
        Ok(ks) => ks,
        Err(e) if not_found(&e) => return Ok(None),
        Err(e) => {
            return Err(anyhow!(e).context(
                "failed to determine if sync configuration would overwrite existing Kustomization",
            ));
        }
    };
    let current = ks.spec.path.clone().unwrap_or_default();
    let normalize = |p: &str| {
        let p = if p.len() > 2 {
            p.trim_end_matches('/')
        } else {
            p
        };
        format!("./{}", p.trim_start_matches("./"))
    };
    if normalize(&current) == normalize(&sync.target_path) {
        Ok(None)
    } else {
        Ok(Some(current))
    }
}

/// Components are applied by the CLI until the cluster's Kustomization has applied them.
async fn must_install(client: &kube::Client, sync: &SyncOptions) -> Result<bool> {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), &sync.namespace);
    match api.get(&sync.name).await {
        Ok(ks) => Ok(ks
            .status
            .and_then(|s| s.last_applied_revision)
            .is_none_or(|r| r.is_empty())),
        Err(_) => Ok(true),
    }
}

/// Creates or updates the Secret the GitRepository reads. An existing Secret is kept as it is
/// when the run brings no credentials (Flux does the same).
async fn reconcile_secret(client: &kube::Client, plan: &Plan) -> Result<()> {
    let ns = &plan.sync.namespace;
    let name = &plan.sync.secret_name;
    progress::action(format_args!(
        "determining if source secret \"{ns}/{name}\" exists"
    ));
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let exists = api
        .get_opt(name)
        .await
        .context("failed to determine if deploy key secret exists")?
        .is_some();
    if exists && plan.secret.is_empty() {
        progress::success(format_args!("source secret up to date"));
        return Ok(());
    }
    progress::action(format_args!("generating source secret"));
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": "Opaque",
        "stringData": plan.secret,
    });
    progress::action(format_args!("applying source secret \"{ns}/{name}\""));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // The error of a failed apply names the object, never its data.
    api.patch(name, &params, &Patch::Apply(&secret))
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) => anyhow!("applying Secret {ns}/{name} failed: {}", s.message),
            _ => anyhow!("applying Secret {ns}/{name} failed: cannot reach the cluster"),
        })?;
    progress::success(format_args!("reconciled source secret"));
    Ok(())
}

/// Polls until the object is ready at `revision` (the artifact's for a GitRepository,
/// `lastAttemptedRevision` for a Kustomization), printing its Ready message when it changes.
async fn wait_reconciled<K>(
    client: &kube::Client,
    ns: &str,
    name: &str,
    revision: &str,
    deadline: tokio::time::Instant,
) -> Result<()>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let kind = K::kind(&Default::default()).to_string();
    let revision_field = if kind == "GitRepository" {
        "/status/artifact/revision"
    } else {
        "/status/lastAttemptedRevision"
    };
    let mut last_message = String::new();
    loop {
        let obj = match api.get(name).await {
            Ok(o) => serde_json::to_value(&o).unwrap_or(Value::Null),
            Err(e) if not_found(&e) => Value::Null,
            Err(e) => return Err(anyhow!(e)),
        };
        if obj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
            bail!("{kind} '{ns}/{name}' is suspended");
        }
        let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
        let observed = obj
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64);
        let current = observed.is_some() && observed == generation;
        let ready = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .cloned();
        let at_revision = obj.pointer(revision_field).and_then(Value::as_str) == Some(revision);
        if let Some(ready) = &ready {
            let message = ready["message"].as_str().unwrap_or_default().to_string();
            if current && message != last_message && !message.is_empty() {
                eprintln!(
                    "  {}: {message}",
                    ready["reason"].as_str().unwrap_or("Unknown")
                );
                last_message = message.clone();
            }
            match ready["status"].as_str() {
                Some("True") if current && at_revision => return Ok(()),
                // A failure of the pushed revision ends the wait; an older one is being
                // replaced (Flux gives up on any failure, which a stale status can trip).
                Some("False") if current && (at_revision || kind == "GitRepository") => {
                    bail!("{message}")
                }
                _ => {}
            }
        }
        if tokio::time::Instant::now() >= deadline {
            let why = ready
                .and_then(|r| r["message"].as_str().map(String::from))
                .unwrap_or_else(|| "no Ready condition yet".into());
            bail!(
                "timed out waiting for {} '{ns}/{name}' to report revision {revision}: {why}",
                kind.to_lowercase()
            );
        }
        tokio::time::sleep(Duration::from_millis(500).min(install::remaining(deadline))).await;
    }
}
