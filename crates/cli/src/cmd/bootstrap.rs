//! `ferroflux bootstrap git`: put the engine's manifests in a cluster's folder of a repository,
//! install the engine from them and make the cluster follow that folder, as `flux bootstrap git`
//! does. Running it again is the upgrade path: it commits only what changed, and nothing when
//! nothing did.
//!
//! Steps, in Flux's order: refuse a cluster whose `flux-system` Kustomization follows another
//! path; clone the branch; write `<path>/flux-system/{gotk-components.yaml, gotk-sync.yaml}` and
//! `kustomization.yaml` (only when absent, so users' patches survive); commit and push what
//! changed (signed with `--gpg-key-ring` or `--ssh-signing-key-file` /
//! `--ssh-signing-reuse-private-key` when given, flux's flags and checks, without a `gpg`
//! program), re-fetching and trying again when the remote moved on; install the components unless
//! the cluster's Kustomization already manages them; create the `flux-system` Secret from the
//! credentials; apply the folder; wait until the GitRepository and the Kustomization report the
//! pushed revision and the controller is ready.
//!
//! Where we differ from Flux, on purpose: the three files go in one commit (Flux makes two, so an
//! interruption between them left a folder without its sync manifests); the path check runs
//! before anything is written (Flux pushes the components first); ssh host keys come from a
//! known_hosts file, never from scanning the server (no trust on first use); ferroflux does not
//! generate SSH deploy keys, so https remotes give the cluster the same username and password.
//!
//! The checks of the flags and the Git half (manifests, clone, commit, push, building the folder)
//! are `ferroflux-bootstrap`'s; this file turns flags into its [`Request`], prints its steps and
//! does the cluster half (the path check, install, Secret, apply, waits).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_apply::applier::Applier;
use ferroflux_bootstrap::manifests::{self, SyncOptions};
use ferroflux_bootstrap::{CommitOptions, Plan, Pushed, Request, Signature, SigningRequest, Step};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

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
    /// Path to GPG key ring for signing commits.
    #[arg(long)]
    gpg_key_ring: Option<PathBuf>,
    /// Passphrase for decrypting GPG private key.
    #[arg(long)]
    gpg_passphrase: Option<String>,
    /// Key id for selecting a particular key.
    #[arg(long)]
    gpg_key_id: Option<String>,
    /// Path to an SSH private key file used for signing commits.
    #[arg(long)]
    ssh_signing_key_file: Option<PathBuf>,
    /// Passphrase for decrypting SSH signing key.
    #[arg(long)]
    ssh_signing_password: Option<String>,
    /// Alias for --ssh-signing-password.
    #[arg(long, hide = true)]
    ssh_signing_passphrase: Option<String>,
    /// Use the SSH transport key (--private-key-file) to sign commits.
    #[arg(long)]
    ssh_signing_reuse_private_key: bool,
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

/// The run as ferroflux-bootstrap takes it.
fn request(args: &GitArgs) -> Request {
    Request {
        url: args.url.clone(),
        branch: args.branch.clone(),
        path: args.path.clone(),
        interval: args.interval,
        private_key_file: args.private_key_file.clone(),
        known_hosts_file: args.known_hosts_file.clone(),
        username: args.username.clone(),
        password: args.password.clone(),
        token_auth: args.token_auth,
        allow_insecure_http: args.allow_insecure_http,
        ca_file: args.ca_file.clone(),
        secret_name: args.secret_name.clone(),
        namespace: args.kube.namespace.clone(),
    }
}

/// The signing flags as ferroflux-bootstrap takes them.
fn signing_request(args: &GitArgs) -> SigningRequest {
    SigningRequest {
        gpg_key_ring: args.gpg_key_ring.clone(),
        gpg_passphrase: args.gpg_passphrase.clone().unwrap_or_default(),
        gpg_key_id: args.gpg_key_id.clone().unwrap_or_default(),
        ssh_signing_key_file: args.ssh_signing_key_file.clone(),
        ssh_signing_password: args.ssh_signing_password.clone().unwrap_or_default(),
        ssh_signing_passphrase: args.ssh_signing_passphrase.clone().unwrap_or_default(),
        ssh_signing_reuse_private_key: args.ssh_signing_reuse_private_key,
    }
}

/// Prints a step of the Git half as flux prints it.
fn print_step(step: Step<'_>) {
    match step {
        Step::Cloning { branch, url } => progress::action(format_args!(
            "cloning branch {branch:?} from Git repository {url:?}"
        )),
        Step::Cloned => progress::success(format_args!("cloned repository")),
        Step::GeneratingComponents => {
            progress::generate(format_args!("generating component manifests"))
        }
        Step::GeneratedComponents => {
            progress::success(format_args!("generated component manifests"))
        }
        Step::GeneratingSync => progress::action(format_args!("generating sync manifests")),
        Step::GeneratedSync => progress::success(format_args!("generated sync manifests")),
        Step::UpToDate => {
            progress::success(format_args!("component manifests are up to date"));
            progress::success(format_args!("sync manifests are up to date"));
        }
        Step::Committed { branch, commit } => progress::success(format_args!(
            "committed component and sync manifests to {branch:?} ({commit:?})"
        )),
        Step::Pushing { url } => progress::action(format_args!("pushing manifests to {url:?}")),
        Step::Retrying => progress::waiting(format_args!(
            "git conflict detected, retrying with a fresh fetch"
        )),
    }
}

async fn bootstrap_git(args: Box<GitArgs>) -> Result<()> {
    // The signing flags and key first, as flux's bootstrapValidate does: a key that cannot sign
    // stops the run before anything is cloned or pushed.
    let signer = signing_request(&args).signer(
        args.private_key_file.as_deref(),
        args.password.as_deref().filter(|p| !p.is_empty()),
    )?;
    let plan = Plan::new(&request(&args))?;
    for warning in &plan.warnings {
        progress::warning(warning);
    }
    let mut install_opts = args.engine.options(&args.kube.namespace)?;
    // `clusters/<name>` names the cluster on its alerts, commit statuses and metrics.
    install_opts.cluster_name = manifests::cluster_name_of(&plan.sync.target_path);
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

    let commit = CommitOptions {
        author: Signature {
            name: args.author_name.clone(),
            email: args.author_email.clone(),
        },
        appendix: args.commit_message_appendix.clone(),
        signer,
    };
    let Pushed {
        revision,
        components: component_objects,
        sync: sync_objects,
    } = ferroflux_bootstrap::push_manifests(
        &plan,
        &args.url,
        &install_opts,
        &commit,
        &mut print_step,
    )
    .await?;

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
