//! `ferroflux demo`: the main job end to end on two local clusters. The example fleet repository
//! (`examples/fleet-infra`, compiled into the binary) becomes a Git repository; two local
//! clusters start with their controllers; each is bootstrapped onto its own folder and its own
//! branch (`staging`, `production`) with the same commands a user types; then one commit on
//! main is promoted by `fleet promote` through the repository's plan (`fleet-promotion.yaml`):
//! staging's branch first, production's only once staging is Ready at it and soaked.
//! podinfo is a HelmRelease whose chart lives in the fleet repository itself (a HelmChart built
//! from the GitRepository's artifact), so the demo needs no network; the promoted commit moves
//! both environments' overlays from chart version 6.7.1 to 6.8.0.
//!
//! Each cluster's alerts (the example's `clusters/<name>/notifications.yaml`) go to a chat
//! endpoint the demo serves on a loopback port; it ends with the messages about the promotion,
//! each stamped with its cluster's name.
//!
//! The user-facing steps run this very binary as a child process (`bootstrap git`,
//! `get kustomizations`, `get helmreleases`, `fleet status`, `fleet promote`), so the demo shows
//! exactly what those commands print.

use crate::cluster::Cluster;
use crate::cmd::controller::ShutdownSignals;
use crate::cmd::dev::start_controllers;
use crate::fluxobj::request_reconcile;
use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use ferroflux_api::conditions::{READY, find_condition};
use ferroflux_api::{GitRepository, HelmRelease, Kustomization};
use ferroflux_bootstrap::Git;
use ferroflux_controller::manager::Manager;
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct DemoArgs {
    /// Keep the temporary directory (repository, kubeconfig, artifacts) and print its path.
    #[arg(long)]
    keep: bool,
    /// How long to wait for each step before giving up (Go duration).
    #[arg(long, default_value = "2m", value_parser = crate::flags::duration)]
    step_timeout: Duration,
    /// After the demo, keep both clusters and their controllers running (look at them with
    /// kubectl and the kubeconfig it prints) until Ctrl-C or SIGTERM.
    #[arg(long)]
    hold: bool,
}

/// The team chat of the fleet example's alerts (`clusters/<name>/notifications.yaml`, a Slack
/// Provider whose webhook URL is the Secret `chat-webhook` made on each cluster): a loopback
/// endpoint taking Slack's payload on `/<cluster>`, so the demo shows the messages each cluster
/// sent, stamped with its name, without a Slack workspace.
struct Chat {
    url: String,
    /// `(author_name, text)` of each message, in arrival order.
    messages: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Chat {
    async fn start() -> Result<Chat> {
        use axum::extract::State;
        type Messages = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;
        async fn post(State(messages): State<Messages>, body: axum::body::Bytes) {
            let Ok(payload) = serde_json::from_slice::<serde_json::Value>(&body) else {
                return;
            };
            let attachment = &payload["attachments"][0];
            let text = |k: &str| attachment[k].as_str().unwrap_or_default().to_string();
            if let Ok(mut m) = messages.lock() {
                m.push((text("author_name"), text("text")));
            }
        }
        let messages: Messages = Default::default();
        let app = axum::Router::new()
            .fallback(axum::routing::post(post))
            .with_state(messages.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen for the demo's chat")?;
        let url = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Chat {
            url,
            messages,
            server,
        })
    }

    /// The Secret the example's Provider reads, pointing at `/<cluster>`.
    async fn connect(&self, client: &kube::Client, cluster: &str) -> Result<()> {
        use k8s_openapi::api::core::v1::Secret;
        use kube::api::{Patch, PatchParams};
        let secret = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "chat-webhook", "namespace": "flux-system"},
            "stringData": {"address": format!("{}/{cluster}", self.url)},
        });
        Api::<Secret>::namespaced(client.clone(), "flux-system")
            .patch(
                "chat-webhook",
                &PatchParams::apply("ferroflux-demo").force(),
                &Patch::Apply(&secret),
            )
            .await
            .with_context(|| format!("cannot create the chat-webhook Secret on {cluster}"))?;
        Ok(())
    }

    /// The messages so far.
    fn messages(&self) -> Vec<(String, String)> {
        self.messages.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

impl Drop for Chat {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The chat's messages: each cluster's count, then those naming `version` (the promotion's),
/// once every cluster has sent one (the dispatcher sends as the releases upgrade).
async fn show_chat(chat: &Chat, version: &str, timeout: Duration) -> Result<()> {
    heading("6. What the clusters told the team chat (clusters/<name>/notifications.yaml)");
    let about = |messages: &[(String, String)], name: &str| {
        let prefix = format!("[{name}] ");
        messages
            .iter()
            .any(|(a, t)| a.starts_with(&prefix) && t.contains(version))
    };
    let deadline = Instant::now() + timeout;
    let mut messages = chat.messages();
    while !CLUSTERS.iter().all(|name| about(&messages, name)) {
        if Instant::now() > deadline {
            bail!("no alert about {version} from every cluster in the chat within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        messages = chat.messages();
    }
    for name in CLUSTERS {
        let prefix = format!("[{name}] ");
        let count = messages
            .iter()
            .filter(|(a, _)| a.starts_with(&prefix))
            .count();
        println!("{name:<11} {count} messages to the chat");
    }
    let mut shown = std::collections::BTreeSet::new();
    for (author, text) in &messages {
        if text.contains(version) && shown.insert((author.clone(), text.clone())) {
            println!("{author}: {text}");
        }
    }
    Ok(())
}

/// The example repository, file by file, as committed under `examples/fleet-infra`.
pub const FLEET_INFRA: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../../examples/fleet-infra/README.md"),
    ),
    (
        "fleet-promotion.yaml",
        include_str!("../../../../examples/fleet-infra/fleet-promotion.yaml"),
    ),
    (
        "apps/base/certificate.yaml",
        include_str!("../../../../examples/fleet-infra/apps/base/certificate.yaml"),
    ),
    (
        "apps/base/kustomization.yaml",
        include_str!("../../../../examples/fleet-infra/apps/base/kustomization.yaml"),
    ),
    (
        "apps/base/namespace.yaml",
        include_str!("../../../../examples/fleet-infra/apps/base/namespace.yaml"),
    ),
    (
        "apps/base/podinfo.yaml",
        include_str!("../../../../examples/fleet-infra/apps/base/podinfo.yaml"),
    ),
    (
        "apps/production/kustomization.yaml",
        include_str!("../../../../examples/fleet-infra/apps/production/kustomization.yaml"),
    ),
    (
        "apps/staging/kustomization.yaml",
        include_str!("../../../../examples/fleet-infra/apps/staging/kustomization.yaml"),
    ),
    (
        "charts/podinfo/6.7.1/Chart.yaml",
        include_str!("../../../../examples/fleet-infra/charts/podinfo/6.7.1/Chart.yaml"),
    ),
    (
        "charts/podinfo/6.7.1/templates/deployment.yaml",
        include_str!(
            "../../../../examples/fleet-infra/charts/podinfo/6.7.1/templates/deployment.yaml"
        ),
    ),
    (
        "charts/podinfo/6.7.1/templates/service.yaml",
        include_str!(
            "../../../../examples/fleet-infra/charts/podinfo/6.7.1/templates/service.yaml"
        ),
    ),
    (
        "charts/podinfo/6.7.1/values.yaml",
        include_str!("../../../../examples/fleet-infra/charts/podinfo/6.7.1/values.yaml"),
    ),
    (
        "charts/podinfo/6.8.0/Chart.yaml",
        include_str!("../../../../examples/fleet-infra/charts/podinfo/6.8.0/Chart.yaml"),
    ),
    (
        "charts/podinfo/6.8.0/templates/deployment.yaml",
        include_str!(
            "../../../../examples/fleet-infra/charts/podinfo/6.8.0/templates/deployment.yaml"
        ),
    ),
    (
        "charts/podinfo/6.8.0/templates/service.yaml",
        include_str!(
            "../../../../examples/fleet-infra/charts/podinfo/6.8.0/templates/service.yaml"
        ),
    ),
    (
        "charts/podinfo/6.8.0/values.yaml",
        include_str!("../../../../examples/fleet-infra/charts/podinfo/6.8.0/values.yaml"),
    ),
    (
        "clusters/production/apps.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/production/apps.yaml"),
    ),
    (
        "clusters/production/infrastructure.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/production/infrastructure.yaml"),
    ),
    (
        "clusters/staging/apps.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/staging/apps.yaml"),
    ),
    (
        "clusters/staging/infrastructure.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/staging/infrastructure.yaml"),
    ),
    (
        "clusters/production/notifications.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/production/notifications.yaml"),
    ),
    (
        "clusters/staging/notifications.yaml",
        include_str!("../../../../examples/fleet-infra/clusters/staging/notifications.yaml"),
    ),
    (
        "infrastructure/base/certificate-crd.yaml",
        include_str!("../../../../examples/fleet-infra/infrastructure/base/certificate-crd.yaml"),
    ),
    (
        "infrastructure/base/ingress-nginx.yaml",
        include_str!("../../../../examples/fleet-infra/infrastructure/base/ingress-nginx.yaml"),
    ),
    (
        "infrastructure/base/kustomization.yaml",
        include_str!("../../../../examples/fleet-infra/infrastructure/base/kustomization.yaml"),
    ),
    (
        "infrastructure/production/kustomization.yaml",
        include_str!(
            "../../../../examples/fleet-infra/infrastructure/production/kustomization.yaml"
        ),
    ),
    (
        "infrastructure/staging/kustomization.yaml",
        include_str!("../../../../examples/fleet-infra/infrastructure/staging/kustomization.yaml"),
    ),
];

const CLUSTERS: [&str; 2] = ["staging", "production"];
const PODINFO_IMAGE: &str = "ghcr.io/stefanprodan/podinfo";
const OLD_TAG: &str = "6.7.1";
const NEW_TAG: &str = "6.8.0";

pub async fn run(args: DemoArgs) -> Result<ExitCode> {
    let work = tempfile::Builder::new()
        .prefix("ferroflux-demo-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    // Listening from the start: a Ctrl-C while holding must end the demo, not the process.
    let signals = if args.hold {
        Some(ShutdownSignals::install()?)
    } else {
        None
    };
    let result = demo(work.path(), args.step_timeout, signals).await;
    if args.keep {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

struct Fleet {
    clusters: Vec<RunningCluster>,
    managers: Vec<Manager>,
    /// One per cluster, as the CLI's commands see them.
    clients: Vec<Cluster>,
}

async fn demo(work: &Path, step_timeout: Duration, hold: Option<ShutdownSignals>) -> Result<()> {
    let started = Instant::now();
    let exe = std::env::current_exe().context("cannot find the ferroflux binary")?;

    heading("1. The fleet repository");
    let remote = work.join("fleet-infra.git");
    let checkout = work.join("fleet-infra");
    create_repository(&remote, &checkout).await?;
    println!(
        "{} files from examples/fleet-infra committed to {}",
        FLEET_INFRA.len(),
        remote.display()
    );

    heading("2. Two local clusters, each with its own controllers");
    let chat = Chat::start().await?;
    let mut fleet = Fleet {
        clusters: Vec::new(),
        managers: Vec::new(),
        clients: Vec::new(),
    };
    for name in CLUSTERS {
        let cluster = DevCluster::start(Config::memory(name))
            .await
            .with_context(|| format!("cannot start cluster {name}"))?;
        let manager = start_controllers(&cluster, &work.join("artifacts").join(name)).await?;
        // The webhook URL the example's Provider reads, made on the cluster as a user makes it.
        chat.connect(&cluster.client().await?, name).await?;
        fleet.clients.push(Cluster {
            client: cluster.client().await?,
            context: name.to_string(),
            url: cluster.url().to_string(),
            timeout: step_timeout,
        });
        println!(
            "{name:<11} {}  (artifacts {})",
            cluster.url(),
            manager.storage_url()
        );
        fleet.clusters.push(cluster);
        fleet.managers.push(manager);
    }
    let kubeconfig = work.join("kubeconfig");
    let refs: Vec<&RunningCluster> = fleet.clusters.iter().collect();
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &refs, None)?;
    println!("kubeconfig: {}", kubeconfig.display());
    println!(
        "chat:       {} (the Secret chat-webhook on each cluster)",
        chat.url
    );

    let outcome = run_steps(&exe, &kubeconfig, &remote, &checkout, &fleet, step_timeout).await;
    let outcome = match outcome {
        Ok(()) => show_chat(&chat, NEW_TAG, step_timeout).await,
        failed => failed,
    };
    if let (Ok(()), Some(mut signals)) = (&outcome, hold) {
        println!(
            "\nholding: both clusters and their controllers run until Ctrl-C; for example\n  \
             kubectl --kubeconfig {} --context staging get pods -A",
            kubeconfig.display()
        );
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        signals.wait().await;
    }
    for m in fleet.managers.drain(..) {
        let _ = m.shutdown().await;
    }
    for c in fleet.clusters.drain(..) {
        c.shutdown().await;
    }
    outcome?;
    println!(
        "\ndemo finished in {:.1}s: both clusters follow their folder and branch of one \
         repository, and fleet promote moved a commit to staging, then to production",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn run_steps(
    exe: &Path,
    kubeconfig: &Path,
    remote: &Path,
    checkout: &Path,
    fleet: &Fleet,
    step_timeout: Duration,
) -> Result<()> {
    let url = format!("file://{}", remote.display());
    let kc = kubeconfig.display().to_string();
    heading("3. Bootstrap each cluster onto its folder and its branch");
    // Each cluster follows a branch of its own, which the promotion plan moves. A bootstrap
    // commits the cluster's flux-system folder to that branch; the other branches are then
    // fast-forwarded to it, so that main, staging and production stay one line of history and
    // every later promotion is a fast-forward.
    for (i, name) in CLUSTERS.iter().enumerate() {
        let path = format!("clusters/{name}");
        ferroflux(
            exe,
            None,
            &[
                "bootstrap",
                "git",
                "--kubeconfig",
                &kc,
                "--context",
                name,
                "--url",
                &url,
                "--branch",
                name,
                "--path",
                &path,
                "--interval",
                "1m",
                "--silent",
            ],
        )?;
        let others: Vec<&str> = if i + 1 < CLUSTERS.len() {
            vec![CLUSTERS[i + 1]]
        } else {
            std::iter::once("main")
                .chain(CLUSTERS.iter().copied().filter(|c| c != name))
                .collect()
        };
        git(checkout, &["fetch", "-q", "origin"]).await?;
        for other in others {
            let spec = format!("origin/{name}:refs/heads/{other}");
            // A plain push: git refuses anything but a fast-forward.
            git(checkout, &["push", "-q", "origin", &spec]).await?;
            println!("$ git push origin {spec}");
        }
    }

    heading("4. Wait for infrastructure, then apps, on every cluster");
    // The bootstraps pushed commits: fetch the last one now instead of waiting an interval.
    let head = git(remote, &["rev-parse", "main"]).await?;
    for cluster in &fleet.clients {
        request_reconcile::<GitRepository>(cluster, "flux-system", "flux-system").await?;
    }
    for (i, name) in CLUSTERS.iter().enumerate() {
        wait_ready(
            name,
            &fleet.clients[i].client,
            &["flux-system", "infrastructure", "apps"],
            &head,
            step_timeout,
        )
        .await?;
    }
    for name in CLUSTERS {
        ferroflux(
            exe,
            None,
            &[
                "get",
                "kustomizations",
                "--kubeconfig",
                &kc,
                "--context",
                name,
            ],
        )?;
        ferroflux(
            exe,
            None,
            &[
                "get",
                "helmreleases",
                "--all-namespaces",
                "--kubeconfig",
                &kc,
                "--context",
                name,
            ],
        )?;
    }
    ferroflux(exe, None, &["fleet", "status", "--kubeconfig", &kc])?;
    for (i, name) in CLUSTERS.iter().enumerate() {
        show_podinfo(name, &fleet.clients[i].client, OLD_TAG).await?;
    }

    heading(&format!(
        "5. Promotion: podinfo's chart {OLD_TAG} -> {NEW_TAG} committed to main, then `fleet promote` moves staging, then production"
    ));
    // The bootstraps pushed their flux-system folders: start from the remote's history.
    git(checkout, &["pull", "-q", "--ff-only", "origin", "main"]).await?;
    for env in CLUSTERS {
        bump_tag(checkout, &format!("apps/{env}/kustomization.yaml"))?;
    }
    git(
        checkout,
        &["commit", "-qam", &format!("apps: podinfo chart {NEW_TAG}")],
    )
    .await?;
    git(checkout, &["push", "-q", "origin", "main"]).await?;
    let promoted = git(checkout, &["rev-parse", "HEAD"]).await?;
    println!(
        "committed {} to main (apps/staging and apps/production); the clusters follow their own branches, still at {}",
        short(&promoted),
        short(&head)
    );
    // Run in the checkout, as a user runs it: the plan is read from the repository and its
    // remote is where the branches are pushed.
    ferroflux(
        exe,
        Some(checkout),
        &["fleet", "promote", "--kubeconfig", &kc],
    )?;
    for (i, name) in CLUSTERS.iter().enumerate() {
        show_podinfo(name, &fleet.clients[i].client, NEW_TAG).await?;
    }
    println!("$ git ls-remote origin");
    let refs = git(checkout, &["ls-remote", "origin"]).await?;
    println!("{refs}");
    ferroflux(exe, None, &["fleet", "status", "--kubeconfig", &kc])?;
    Ok(())
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

/// Prints the cluster's podinfo release and image; an error unless both are at `version`.
async fn show_podinfo(name: &str, client: &kube::Client, version: &str) -> Result<()> {
    let chart = podinfo_chart(client).await?;
    let image = podinfo_image(client).await?;
    println!("{name:<11} podinfo chart {chart} runs {image}");
    if chart != format!("podinfo@{version}") || !image.ends_with(&format!(":{version}")) {
        bail!("{name} has chart {chart} running {image}, expected version {version}");
    }
    Ok(())
}

fn heading(text: &str) {
    println!("\n== {text}");
}

/// Runs `ferroflux ARGS`, showing the command and its output as a user would see them.
fn ferroflux(exe: &Path, dir: Option<&Path>, args: &[&str]) -> Result<()> {
    let shown: Vec<&str> = args
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, a)| {
            // The kubeconfig path is a temporary file: keep the line readable.
            *a != "--kubeconfig" && (*i == 0 || args[*i - 1] != "--kubeconfig")
        })
        .map(|(_, a)| a)
        .collect();
    println!("$ ferroflux {}", shown.join(" "));
    let mut command = Command::new(exe);
    command.args(args);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let status = command
        .status()
        .with_context(|| format!("cannot run ferroflux {}", args.join(" ")))?;
    if !status.success() {
        bail!("`ferroflux {}` failed ({status})", shown.join(" "));
    }
    Ok(())
}

/// Runs git for the demo's own commits (bootstrap's go through the same runner).
async fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let mut full = vec![
        "-c",
        "user.name=ferroflux demo",
        "-c",
        "user.email=demo@ferroflux.invalid",
    ];
    full.extend_from_slice(args);
    let op = args.first().copied().unwrap_or("git");
    let out = Git::default().run(dir, op, &full).await?;
    Ok(out.trim().to_string())
}

/// A bare repository (the "remote" the clusters follow) and a checkout of it holding the example.
async fn create_repository(remote: &Path, checkout: &Path) -> Result<()> {
    std::fs::create_dir_all(remote)?;
    git(remote, &["init", "-q", "--bare", "-b", "main"]).await?;
    for (path, content) in FLEET_INFRA {
        let file: PathBuf = checkout.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, content)?;
    }
    git(checkout, &["init", "-q", "-b", "main"]).await?;
    git(checkout, &["add", "-A"]).await?;
    git(
        checkout,
        &[
            "commit",
            "-qm",
            "fleet-infra: two clusters, shared bases, overlays",
        ],
    )
    .await?;
    let remote_url = remote.display().to_string();
    git(checkout, &["remote", "add", "origin", &remote_url]).await?;
    // The branches the clusters follow start where main is.
    git(
        checkout,
        &[
            "push",
            "-q",
            "origin",
            "main",
            "main:staging",
            "main:production",
        ],
    )
    .await?;
    Ok(())
}

/// Moves an overlay's HelmRelease from the chart of version `OLD_TAG` to `NEW_TAG` (both are
/// in the repository, under `charts/podinfo/<version>`).
fn bump_tag(checkout: &Path, file: &str) -> Result<()> {
    let path = checkout.join(file);
    let text = std::fs::read_to_string(&path)?;
    let old = format!("./charts/podinfo/{OLD_TAG}");
    if !text.contains(&old) {
        bail!("{file} does not pin podinfo's chart {OLD_TAG}");
    }
    std::fs::write(
        &path,
        text.replace(&old, &format!("./charts/podinfo/{NEW_TAG}")),
    )?;
    Ok(())
}

/// Waits until each named Kustomization is Ready at `commit`, printing each as it gets there.
async fn wait_ready(
    cluster: &str,
    client: &kube::Client,
    names: &[&str],
    commit: &str,
    timeout: Duration,
) -> Result<()> {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let deadline = Instant::now() + timeout;
    let mut done: Vec<&str> = Vec::new();
    let started = Instant::now();
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .with_context(|| format!("listing Kustomizations on {cluster}"))?;
        let mut last_message = String::new();
        for name in names {
            if done.contains(name) {
                continue;
            }
            let Some(ks) = list.items.iter().find(|k| k.name_any() == *name) else {
                last_message = format!("{name}: not created yet");
                continue;
            };
            let status = ks.status.clone().unwrap_or_default();
            let ready = status
                .conditions
                .as_deref()
                .and_then(|c| find_condition(c, READY))
                .cloned();
            let at_commit = status
                .last_applied_revision
                .as_deref()
                .is_some_and(|r| r.ends_with(commit));
            match ready {
                Some(c) if c.status == "True" && at_commit => {
                    println!(
                        "✔ {cluster:<11} {name:<15} ready after {:.1}s  {}",
                        started.elapsed().as_secs_f64(),
                        c.message
                    );
                    done.push(name);
                }
                Some(c) => last_message = format!("{name}: {}", c.message),
                None => last_message = format!("{name}: waiting to be reconciled"),
            }
        }
        if done.len() == names.len() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{cluster}: not ready after {timeout:?}: {last_message}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `chart@version` of the HelmRelease podinfo/podinfo's current release, from its status
/// history, once it is Ready for its generation.
async fn podinfo_chart(client: &kube::Client) -> Result<String> {
    let releases: Api<HelmRelease> = Api::namespaced(client.clone(), "podinfo");
    let hr = releases
        .get("podinfo")
        .await
        .context("reading HelmRelease podinfo/podinfo")?;
    let status = hr.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .as_deref()
        .and_then(|c| find_condition(c, READY))
        .is_some_and(|c| c.status == "True");
    if !ready || status.observed_generation != hr.metadata.generation {
        bail!("HelmRelease podinfo/podinfo is not Ready for its generation");
    }
    status
        .history
        .and_then(|h| h.into_iter().next())
        .map(|s| format!("{}@{}", s.chart_name, s.chart_version))
        .ok_or_else(|| anyhow!("HelmRelease podinfo/podinfo has no release in its history"))
}

async fn podinfo_image(client: &kube::Client) -> Result<String> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "podinfo");
    let d = deployments
        .get("podinfo")
        .await
        .context("reading Deployment podinfo/podinfo")?;
    d.spec
        .template
        .spec
        .and_then(|s| s.containers.into_iter().next())
        .and_then(|c| c.image)
        .filter(|i| i.starts_with(PODINFO_IMAGE))
        .ok_or_else(|| anyhow!("Deployment podinfo/podinfo has no podinfo container"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of examples/fleet-infra is compiled in, and nothing else.
    #[test]
    fn embedded_example_matches_the_directory() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet-infra");
        let mut on_disk = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(&root).unwrap();
                    on_disk.push(rel.to_string_lossy().to_string());
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = FLEET_INFRA.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        for (path, content) in FLEET_INFRA {
            assert_eq!(
                std::fs::read_to_string(root.join(path)).unwrap(),
                *content,
                "{path}"
            );
        }
    }
}
