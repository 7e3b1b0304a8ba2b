//! `ferroflux dev up`: local Kubernetes-compatible clusters for trying ferroflux and for tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cmd::controller::ShutdownSignals;
use crate::logging::{LogFormat, Logging};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ferroflux_bootstrap::manifests;
use ferroflux_devcluster::{Config, DevCluster, FaultConfig, RunningCluster};

#[derive(Args)]
pub struct DevArgs {
    #[command(subcommand)]
    command: DevCommand,
}

#[derive(Subcommand)]
enum DevCommand {
    /// Start local clusters (one HTTPS API server each) and serve until SIGINT/SIGTERM.
    ///
    /// Each cluster keeps its objects in SQLite under the state directory, so restarting with the
    /// same directory keeps every object, and its address, token and CA (a new port only when its
    /// old one was taken meanwhile; the kubeconfig is rewritten either way). Each
    /// cluster gets Flux's CRDs, the `flux-system` namespace and its own GitRepository and
    /// Kustomization controllers (with `file://` URLs allowed), unless `--no-controllers`.
    Up(UpArgs),
}

#[derive(Args)]
struct UpArgs {
    /// Directory for the clusters' databases and the kubeconfig (created if missing).
    #[arg(long)]
    state_dir: PathBuf,
    /// Comma-separated cluster names; each becomes a kubeconfig context of the same name.
    #[arg(long, value_delimiter = ',', default_value = "staging,production")]
    clusters: Vec<String>,
    /// Serve the API only, without installing CRDs or running controllers.
    #[arg(long)]
    no_controllers: bool,
    /// Log level of the controllers (error, warn, info, debug, trace); logs go to stderr.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Log format of the controllers.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Fault injection for testing clients: answer this fraction (0 to 1) of API requests with
    /// --fault-code instead of serving them.
    #[arg(long, default_value_t = 0.0)]
    fault_rate: f64,
    /// The HTTP code of injected faults: 500, 503 or 429.
    #[arg(long, default_value_t = 503)]
    fault_code: u16,
    /// Delay every API response by this many milliseconds.
    #[arg(long, default_value_t = 0)]
    fault_delay_ms: u64,
}

impl DevArgs {
    /// `dev up`'s `--log-level` and `--log-format` (`main` installs the logging).
    pub fn logging(&self) -> Logging {
        match &self.command {
            DevCommand::Up(up) => Logging::flags(&up.log_level, up.log_format),
        }
    }
}

pub async fn run(args: DevArgs) -> Result<ExitCode> {
    match args.command {
        DevCommand::Up(up) => run_up(up).await?,
    }
    Ok(ExitCode::SUCCESS)
}

fn check_names(names: &[String]) -> Result<()> {
    if names.is_empty() {
        bail!("--clusters needs at least one name");
    }
    for (i, n) in names.iter().enumerate() {
        let ok = !n.is_empty()
            && n.len() <= 63
            && n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !n.starts_with('-')
            && !n.ends_with('-');
        if !ok {
            bail!(
                "invalid cluster name {n:?}: use lower-case letters, digits and '-' (a DNS label)"
            );
        }
        if names[..i].contains(n) {
            bail!("cluster {n:?} is named twice in --clusters");
        }
    }
    Ok(())
}

async fn run_up(up: UpArgs) -> Result<()> {
    let mut signals = ShutdownSignals::install()?;
    check_names(&up.clusters)?;
    std::fs::create_dir_all(&up.state_dir).with_context(|| {
        format!(
            "cannot create the state directory {}",
            up.state_dir.display()
        )
    })?;
    let mut clusters: Vec<RunningCluster> = Vec::new();
    for name in &up.clusters {
        let db = up.state_dir.join(format!("{name}.db"));
        let c = DevCluster::start(Config::file(name.clone(), db))
            .await
            .with_context(|| format!("cannot start cluster {name}"))?;
        c.set_faults(FaultConfig {
            error_rate: up.fault_rate,
            error_code: up.fault_code,
            delay: std::time::Duration::from_millis(up.fault_delay_ms),
        })
        .context("invalid fault injection flags")?;
        clusters.push(c);
    }
    let mut managers: Vec<Manager> = Vec::new();
    if !up.no_controllers {
        for c in &clusters {
            let storage = up.state_dir.join(c.name()).join("artifacts");
            let manager = start_controllers(c, &storage)
                .await
                .with_context(|| format!("cannot start the controllers of cluster {}", c.name()))?;
            show_controller(c)
                .await
                .with_context(|| format!("cannot show the controller of cluster {}", c.name()))?;
            managers.push(manager);
        }
    }
    let kubeconfig = up.state_dir.join("kubeconfig");
    let refs: Vec<&RunningCluster> = clusters.iter().collect();
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &refs, None)?;
    for (i, c) in clusters.iter().enumerate() {
        match managers.get(i) {
            Some(m) => println!(
                "cluster {} {} controllers running, metrics {} receiver={}",
                c.name(),
                c.url(),
                m.metrics_url().unwrap_or("-"),
                m.receiver_url().unwrap_or("-")
            ),
            None => println!("cluster {} {}", c.name(), c.url()),
        }
    }
    println!(
        "ready kubeconfig={} (kubectl --kubeconfig {} --context {} get ns)",
        kubeconfig.display(),
        kubeconfig.display(),
        clusters[0].name()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();

    signals.wait().await;
    for m in managers {
        if let Err(e) = m.shutdown().await {
            eprintln!("stopping controllers: {e}");
        }
    }
    for c in clusters {
        c.shutdown().await;
    }
    Ok(())
}

/// The labels of the Pods standing for `dev up`'s controllers.
fn controller_pod_labels() -> std::collections::BTreeMap<String, String> {
    [("app".to_string(), manifests::CONTROLLER.to_string())]
        .into_iter()
        .collect()
}

/// Makes the controllers running in this process visible in the cluster as an installed
/// engine is: the `ferroflux-controller` Deployment of `flux-system`, labelled part of Flux
/// (so `check`, `version` and `logs`, ferroflux's and flux's, find it), whose Pod's log is this
/// process's log as flux's JSON lines (`kubectl logs deploy/ferroflux-controller`). With
/// several clusters every one's Pod serves the same log: their controllers share the process.
async fn show_controller(cluster: &RunningCluster) -> Result<()> {
    let client = cluster.client().await?;
    let labels = serde_json::json!({
        manifests::PART_OF_LABEL: manifests::PART_OF_VALUE,
        manifests::INSTANCE_LABEL: "flux-system",
        manifests::VERSION_LABEL: manifests::VERSION,
    });
    let deployment = serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": manifests::CONTROLLER,
            "namespace": "flux-system",
            "labels": labels,
            "annotations": {"ferroflux.io/run-by": "ferroflux dev up (in its own process)"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": controller_pod_labels()},
            "template": {
                "metadata": {"labels": controller_pod_labels()},
                "spec": {"containers": [{
                    "name": "manager",
                    "image": manifests::DEFAULT_IMAGE,
                    "args": ["controller", "--log-encoding=json"],
                }]},
            },
        },
    });
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "flux-system");
    api.patch(
        manifests::CONTROLLER,
        &PatchParams::apply("ferroflux").force(),
        &Patch::Apply(&deployment),
    )
    .await
    .context("cannot apply the controller's Deployment")?;
    let log = cluster.attach_log("flux-system", controller_pod_labels());
    crate::logging::add_json_sink(Box::new(log));
    Ok(())
}

/// Installs the CRDs and the `flux-system` namespace, then runs the cluster's controllers with
/// artifacts stored in `storage`.
pub async fn start_controllers(cluster: &RunningCluster, storage: &Path) -> Result<Manager> {
    let client = cluster.client().await?;
    install_crds(&client)
        .await
        .context("cannot install the CRDs")?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "flux-system"},
    });
    namespaces
        .patch(
            "flux-system",
            &PatchParams::apply("ferroflux").force(),
            &Patch::Apply(&namespace),
        )
        .await
        .context("cannot create the flux-system namespace")?;
    let config = cluster
        .kube_config()
        .await
        .context("loading the cluster's own kubeconfig")?;
    let mut settings = ManagerConfig::local(storage);
    settings.metrics_addr = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    settings.health_addr = settings.metrics_addr;
    // Each cluster's alerts and metrics carry its name; its Receivers answer on a loopback port.
    settings.cluster_name = Some(cluster.name().to_string());
    settings.receiver_addr = settings.metrics_addr;
    Ok(Manager::start(client, config, settings).await?)
}
