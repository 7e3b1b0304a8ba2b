//! `ferroflux suspend` and `ferroflux resume`: set or clear `spec.suspend` on Kustomizations,
//! HelmReleases, sources, Alerts, Providers, Receivers and the image kinds with flux's messages; resume then waits for the controller to report the
//! object ready, as flux does.
//!
//! One deliberate difference: flux prints `✗ ... not found` and still exits 0; ferroflux prints
//! the same line and exits 1, so a script notices a mistyped name.

use crate::cluster::Cluster;
use crate::cluster::KubeArgs;
use crate::fluxobj::{self, FluxObject};
use crate::output::progress;
use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::{
    Alert, GitRepository, HelmChart, HelmRelease, HelmRepository, ImagePolicy, ImageRepository,
    ImageUpdateAutomation, Kustomization, OCIRepository, Provider, Receiver,
};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SuspendArgs {
    #[command(subcommand)]
    what: Target,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum Target {
    /// Kustomizations.
    #[command(visible_alias = "ks")]
    Kustomization(Names),
    /// HelmReleases.
    #[command(visible_alias = "hr")]
    Helmrelease(Names),
    /// Sources.
    #[command(subcommand)]
    Source(SourceTarget),
    /// Alerts.
    Alert(Names),
    /// Alert Providers.
    #[command(name = "alert-provider", alias = "alert-providers")]
    AlertProvider(Names),
    /// Receivers.
    Receiver(Names),
    /// Image automation objects.
    #[command(subcommand)]
    Image(ImageTarget),
}

#[derive(Subcommand, Debug)]
enum ImageTarget {
    /// ImageRepositories.
    Repository(Names),
    /// ImagePolicies.
    Policy(Names),
    /// ImageUpdateAutomations (suspend only: no controller here reconciles them).
    Update(Names),
}

#[derive(Subcommand, Debug)]
enum SourceTarget {
    /// GitRepository sources.
    Git(Names),
    /// HelmRepository sources.
    Helm(Names),
    /// HelmChart sources.
    Chart(Names),
    /// OCIRepository sources.
    Oci(Names),
    /// Bucket sources.
    Bucket(Names),
}

#[derive(Args, Debug)]
struct Names {
    /// The objects' names.
    names: Vec<String>,
    /// Every object of the kind in the namespace.
    #[arg(long)]
    all: bool,
    /// (resume) Wait for each object to be reconciled; the default waits when exactly one
    /// name is given, as flux does.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    wait: Option<bool>,
}

/// Which of the two commands runs.
#[derive(Clone, Copy, PartialEq)]
pub enum Mode {
    Suspend,
    Resume,
}

pub async fn run(args: SuspendArgs, mode: Mode) -> anyhow::Result<ExitCode> {
    let result = match &args.what {
        Target::Kustomization(names) => act::<Kustomization>(&args.kube, names, mode).await,
        Target::Helmrelease(names) => act::<HelmRelease>(&args.kube, names, mode).await,
        Target::Source(SourceTarget::Git(names)) => {
            act::<GitRepository>(&args.kube, names, mode).await
        }
        Target::Source(SourceTarget::Helm(names)) => {
            act::<HelmRepository>(&args.kube, names, mode).await
        }
        Target::Source(SourceTarget::Chart(names)) => {
            act::<HelmChart>(&args.kube, names, mode).await
        }
        Target::Source(SourceTarget::Oci(names)) => {
            act::<OCIRepository>(&args.kube, names, mode).await
        }
        Target::Source(SourceTarget::Bucket(names)) => {
            act::<ferroflux_api::Bucket>(&args.kube, names, mode).await
        }
        Target::Alert(names) => act::<Alert>(&args.kube, names, mode).await,
        Target::AlertProvider(names) => act::<Provider>(&args.kube, names, mode).await,
        Target::Receiver(names) => act::<Receiver>(&args.kube, names, mode).await,
        Target::Image(ImageTarget::Repository(names)) => {
            act::<ImageRepository>(&args.kube, names, mode).await
        }
        Target::Image(ImageTarget::Policy(names)) => {
            act::<ImagePolicy>(&args.kube, names, mode).await
        }
        Target::Image(ImageTarget::Update(names)) => {
            act::<ImageUpdateAutomation>(&args.kube, names, mode).await
        }
    };
    fluxobj::exit_code(result, "the objects stay resumed")
}

async fn act<K: FluxObject>(kube: &KubeArgs, names: &Names, mode: Mode) -> anyhow::Result<()> {
    if names.names.is_empty() && !names.all {
        bail!("{} name is required", K::HUMAN_KIND);
    }
    if !names.names.is_empty() && names.all {
        bail!("pass either names or --all, not both");
    }
    if mode == Mode::Suspend && names.wait.is_some() {
        bail!("--wait applies to resume only");
    }
    let cluster = Cluster::connect(kube).await?;
    let deadline = tokio::time::Instant::now() + cluster.timeout;
    let ns = kube.namespace.as_str();
    let api: Api<K> = Api::namespaced(cluster.client.clone(), ns);
    let (verb, done) = match mode {
        Mode::Suspend => ("suspending", "suspended"),
        Mode::Resume => ("resuming", "resumed"),
    };

    // Found objects, or the name of one that is not there, in the order given: flux reports
    // each name in turn.
    let mut targets: Vec<Result<K, String>> = Vec::new();
    let mut missing = 0usize;
    if names.all {
        let list = cluster
            .call(
                &format!("listing {} objects", K::KIND),
                api.list(&ListParams::default()),
            )
            .await?;
        if list.items.is_empty() {
            progress::failure(format!("no {} objects found in {ns} namespace", K::KIND));
            bail!("no {} objects found in \"{ns}\" namespace", K::KIND);
        }
        let mut items = list.items;
        items.sort_by_key(|o| o.name_any());
        targets = items.into_iter().map(Ok).collect();
    } else {
        let mut seen = std::collections::BTreeSet::new();
        for name in &names.names {
            if !seen.insert(name.as_str()) {
                continue;
            }
            let found = cluster
                .call(&format!("getting {} {name}", K::KIND), api.get_opt(name))
                .await?;
            targets.push(found.ok_or_else(|| name.clone()));
        }
    }

    let mut patched: Vec<K> = Vec::new();
    for target in targets {
        let obj = match target {
            Ok(obj) => obj,
            Err(name) => {
                missing += 1;
                progress::failure(match mode {
                    Mode::Suspend => format!("{} {name} not found in {ns} namespace", K::KIND),
                    Mode::Resume => {
                        format!("{} object '{name}' not found in {ns} namespace", K::KIND)
                    }
                });
                continue;
            }
        };
        progress::action(format!(
            "{verb} {} {} in {ns} namespace",
            K::HUMAN_KIND,
            obj.name_any()
        ));
        fluxobj::set_suspended(&cluster, ns, &obj, mode == Mode::Suspend).await?;
        progress::success(format!("{} {done}", K::HUMAN_KIND));
        patched.push(obj);
    }

    let mut failed = 0usize;
    let should_wait = names.wait.unwrap_or(names.names.len() == 1);
    if mode == Mode::Resume && should_wait && !patched.is_empty() {
        // Waited on together, reported in name order, as flux does.
        let waits = patched.iter().map(|obj| {
            let cluster = cluster.clone();
            let name = obj.name_any();
            async move {
                progress::waiting(format!("waiting for {} reconciliation", K::KIND));
                let r = fluxobj::wait_ready::<K>(&cluster, ns, &name, deadline).await;
                (name, r)
            }
        });
        // Listening before the waits print their lines.
        let interrupt = fluxobj::listen_for_interrupt();
        let spinner = progress::Spinner::start_quiet();
        let results = fluxobj::interruptible(interrupt, async {
            Ok(futures::future::join_all(waits).await)
        })
        .await;
        spinner.finish().await;
        let mut results = results?;
        results.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, result) in results {
            match result {
                Ok(obj) => {
                    progress::success(format!("{} {name} reconciliation completed", K::KIND));
                    progress::success(obj.success_message());
                }
                Err(e) => {
                    failed += 1;
                    progress::failure(format!("{} {name} reconciliation failed: {e:#}", K::KIND));
                }
            }
        }
    }
    if failed > 0 {
        return Err(anyhow!("reconciliation failed for {failed} {}(s)", K::KIND));
    }
    if missing > 0 {
        return Err(anyhow!(
            "{missing} of the named {} objects were not found in \"{ns}\" namespace",
            K::KIND
        ));
    }
    Ok(())
}
