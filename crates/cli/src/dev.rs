//! `ferroflux dev up`: local Kubernetes-compatible clusters for trying ferroflux and for tests.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
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
    /// same directory keeps every object (ports may change; the kubeconfig is rewritten). The
    /// engine's controllers do not exist yet: only `--no-controllers` mode is available, and
    /// running without it is refused with an error.
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
    /// Serve the API only, without installing CRDs or running controllers (currently the only
    /// supported mode: the controllers are not built yet).
    #[arg(long)]
    no_controllers: bool,
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

pub fn run(args: DevArgs) -> Result<()> {
    match args.command {
        DevCommand::Up(up) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            rt.block_on(run_up(up))
        }
    }
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
    if !up.no_controllers {
        bail!(
            "the ferroflux controllers are not built yet, so `dev up` cannot run them; \
             pass --no-controllers to start the API servers only"
        );
    }
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
    let kubeconfig = up.state_dir.join("kubeconfig");
    let refs: Vec<&RunningCluster> = clusters.iter().collect();
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &refs, None)?;
    for c in &clusters {
        println!("cluster {} {}", c.name(), c.url());
    }
    println!(
        "ready kubeconfig={} (kubectl --kubeconfig {} --context {} get ns)",
        kubeconfig.display(),
        kubeconfig.display(),
        clusters[0].name()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();

    wait_for_signal().await?;
    for c in clusters {
        c.shutdown().await;
    }
    Ok(())
}

async fn wait_for_signal() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("cannot listen for SIGINT")?,
        _ = term.recv() => {}
    }
    Ok(())
}
