//! `ferroflux controller`: the GitRepository and Kustomization controllers of one cluster in one
//! process, with Flux's controller flags.

use crate::cluster::KubeArgs;
use crate::logging::{LogFormat, Logging};
use anyhow::{Context as _, Result, anyhow};
use clap::Args;
use ferroflux_controller::kustomization::build::Strictness;
use ferroflux_controller::leader::LeaderElection;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct ControllerArgs {
    #[command(flatten)]
    kube: KubeArgs,
    /// Where artifacts are stored.
    #[arg(long, default_value = "/data")]
    storage_path: PathBuf,
    /// Where the artifact server listens (`:9090` means every interface).
    #[arg(long, default_value = ":9090", value_parser = crate::flags::addr)]
    storage_addr: SocketAddr,
    /// The `host:port` written into artifact URLs (in a cluster: the Service's name); default:
    /// the address the artifact server bound.
    #[arg(long)]
    storage_adv_addr: Option<String>,
    /// Accept `file://` Git URLs. Only for local clusters: in a real cluster they would expose
    /// the controller's own disk.
    #[arg(long)]
    allow_file_urls: bool,
    /// Where `/metrics` is served.
    #[arg(long, default_value = ":8080", value_parser = crate::flags::addr)]
    metrics_addr: SocketAddr,
    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, default_value = ":9440", value_parser = crate::flags::addr)]
    health_addr: SocketAddr,
    /// Elect a leader on a Lease, so that of several replicas only one reconciles.
    #[arg(long)]
    enable_leader_election: bool,
    /// The namespace of the leader Lease (default: $RUNTIME_NAMESPACE, else flux-system).
    #[arg(long)]
    leader_election_namespace: Option<String>,
    /// How many Kustomizations reconcile at once, and how many HelmReleases.
    #[arg(long, default_value_t = 4)]
    concurrent: u16,
    /// How often a Kustomization or HelmRelease waiting on its dependencies, or a HelmRelease
    /// waiting on its chart's artifact, is retried (their watches wake them sooner).
    #[arg(long, default_value = "30s", value_parser = crate::flags::duration)]
    requeue_dependency: Duration,
    /// Flux's feature gates, `Name=true|false` separated by commas. Known:
    /// StrictPostBuildSubstitutions (default true: an unset variable without a default fails
    /// the build; false makes it empty).
    #[arg(long, default_value = "")]
    feature_gates: String,
    /// The cluster's name: on every event's metadata, alert message (`[NAME] kustomization/..`),
    /// commit status context and metric (`cluster` label). `bootstrap` sets it from
    /// `clusters/<name>`.
    #[arg(long)]
    cluster_name: Option<String>,
    /// Where Flux's event JSON is accepted over HTTP (notification-controller's
    /// `--events-addr`), e.g. `:9690`; off when unset (the controllers here post in-process).
    #[arg(long, value_parser = crate::flags::addr)]
    events_addr: Option<SocketAddr>,
    /// Where Receivers' webhooks (`/hook/<digest>`) are served (notification-controller's
    /// `--receiverAddr`), e.g. `:9292`; off when unset.
    #[arg(long, value_parser = crate::flags::addr)]
    receiver_addr: Option<SocketAddr>,
    /// How long an identical event for the same object is not sent again.
    #[arg(long, default_value = "5m", value_parser = crate::flags::duration)]
    rate_limit_interval: Duration,
    /// Log level: error, warn, info, debug or trace.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// The substitution mode `--feature-gates` asks for; unknown gates and values are refused, as
/// Flux refuses them.
fn substitution_strictness(gates: &str) -> Result<Strictness> {
    let mut strictness = Strictness::Strict;
    for gate in gates.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        let (name, value) = gate
            .split_once('=')
            .ok_or_else(|| anyhow!("--feature-gates: {gate:?} is not Name=true|false"))?;
        let enabled: bool = value.trim().parse().map_err(|_| {
            anyhow!("--feature-gates: {name}={value}: the value must be true or false")
        })?;
        match name.trim() {
            "StrictPostBuildSubstitutions" => {
                strictness = if enabled {
                    Strictness::Strict
                } else {
                    Strictness::Lenient
                };
            }
            other => return Err(anyhow!("--feature-gates: unknown feature gate {other:?}")),
        }
    }
    Ok(strictness)
}

impl ControllerArgs {
    /// `--log-level` and `--log-format` (`main` installs the logging).
    pub fn logging(&self) -> Logging {
        Logging::flags(&self.log_level, self.log_format)
    }
}

pub async fn run(args: ControllerArgs) -> Result<ExitCode> {
    let mut signals = ShutdownSignals::install()?;
    let requeue_dependency = args.requeue_dependency;
    let explicit = args.kube.kubeconfig.is_some()
        || args.kube.context.is_some()
        || std::env::var_os("KUBECONFIG").is_some();
    // Inside a cluster there is no kubeconfig: the service account's token is used.
    let (config, cluster) = if explicit {
        args.kube.config().await?
    } else {
        let config = kube::Config::infer()
            .await
            .context("no kubeconfig and not running in a cluster: pass --kubeconfig")?;
        let name = config.cluster_url.to_string();
        (config, name)
    };
    let client = ferroflux_kubeclient::client(config.clone())
        .with_context(|| format!("connecting to {cluster}"))?;
    let leader_election = args.enable_leader_election.then(|| {
        let namespace = args
            .leader_election_namespace
            .clone()
            .or_else(|| std::env::var("RUNTIME_NAMESPACE").ok())
            .unwrap_or_else(|| "flux-system".into());
        LeaderElection::new(namespace, identity())
    });
    let mut settings = ManagerConfig::local(&args.storage_path);
    settings.storage_addr = args.storage_addr;
    settings.storage_adv_addr = args.storage_adv_addr.clone();
    settings.allow_file_urls = args.allow_file_urls;
    settings.metrics_addr = Some(args.metrics_addr);
    settings.health_addr = Some(args.health_addr);
    settings.leader_election = leader_election;
    settings.kustomization.concurrency = args.concurrent;
    settings.helmrelease.concurrency = args.concurrent;
    settings.kustomization.requeue_dependency = requeue_dependency;
    settings.helmrelease.requeue_dependency = requeue_dependency;
    settings.kustomization.substitution = substitution_strictness(&args.feature_gates)?;
    settings.kustomization.health_poll = Duration::from_secs(2);
    settings.cluster_name = args.cluster_name.clone();
    settings.events_addr = args.events_addr;
    settings.receiver_addr = args.receiver_addr;
    settings.notification.rate_limit = args.rate_limit_interval;

    let mut manager = Manager::start(client, config, settings)
        .await
        .context("cannot start the controllers")?;
    tracing::info!(
        cluster = %cluster,
        artifacts = %manager.storage_url(),
        metrics = %manager.metrics_url().unwrap_or_default(),
        "controllers started"
    );
    let stopped = tokio::select! {
        r = manager.wait() => Some(r),
        _ = signals.wait() => None,
    };
    match stopped {
        Some(result) => result.context("the controllers stopped")?,
        None => {
            tracing::info!("shutting down");
            manager.shutdown().await.context("shutting down")?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A replica's Lease identity: the host name (the Pod name in a cluster) and the process id.
fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "ferroflux".into());
    format!("{host}_{}", std::process::id())
}

/// SIGINT and SIGTERM, listened to from the moment this is created: a signal that arrives
/// while the controllers are still starting is not lost (nor fatal).
pub struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    pub fn install() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(ShutdownSignals {
            interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
        })
    }

    pub async fn wait(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

#[cfg(test)]
mod feature_gate_tests {
    use super::*;

    #[test]
    fn strict_substitution_is_a_feature_gate() {
        assert_eq!(substitution_strictness("").unwrap(), Strictness::Strict);
        assert_eq!(
            substitution_strictness("StrictPostBuildSubstitutions=true").unwrap(),
            Strictness::Strict
        );
        assert_eq!(
            substitution_strictness("StrictPostBuildSubstitutions=false").unwrap(),
            Strictness::Lenient
        );
        assert_eq!(
            substitution_strictness("Nope=true")
                .unwrap_err()
                .to_string(),
            "--feature-gates: unknown feature gate \"Nope\""
        );
        assert_eq!(
            substitution_strictness("StrictPostBuildSubstitutions=yes")
                .unwrap_err()
                .to_string(),
            "--feature-gates: StrictPostBuildSubstitutions=yes: the value must be true or false"
        );
    }
}
