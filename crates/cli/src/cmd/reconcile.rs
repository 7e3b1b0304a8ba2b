//! `ferroflux reconcile kustomization NAME [--with-source]`, `reconcile helmrelease NAME
//! [--with-source] [--force] [--reset]`, `reconcile source git|helm|chart|oci|bucket NAME`,
//! `reconcile receiver NAME` and `reconcile image repository|policy|update NAME` (`alert` and
//! `alert-provider` answer that they have no reconciler):
//! ask the controller for an immediate reconciliation (`reconcile.fluxcd.io/requestedAt`), wait
//! with a spinner until the controller has handled a request (`status.lastHandledReconcileAt`
//! changed from its value before ours, as flux decides it) and the object is ready, then print
//! the revision, in flux's words. A HelmRelease's source, as flux reconciles it with
//! `--with-source`, is its HelmChart (the template's `<namespace>-<name>` in the source's
//! namespace, or `chartRef`'s), itself reconciled with its own source first.
//!
//! One deliberate difference: a settled `Ready=False` (no `Reconciling` condition) ends the
//! wait at once with the controller's message, where flux's kstatus reads it as "in progress"
//! and waits until `--timeout`. Both controllers mark a failure that will be retried
//! `Reconciling=True`, so with them the two CLIs wait alike.

use crate::cluster::Cluster;
use crate::cluster::KubeArgs;
use crate::fluxobj::{self, FluxObject};
use crate::output::progress;
use anyhow::bail;
use clap::{Args, Subcommand};
use ferroflux_api::helmrelease::{FORCE_REQUESTED_AT, RESET_REQUESTED_AT};
use ferroflux_api::kustomization::SourceKind;
use ferroflux_api::{
    Alert, GitRepository, HelmChart, HelmRelease, HelmRepository, ImagePolicy, ImageRepository,
    Kustomization, OCIRepository, Provider, Receiver,
};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReconcileArgs {
    #[command(subcommand)]
    what: Target,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum Target {
    /// Reconcile a Kustomization and wait for it to apply.
    #[command(visible_alias = "ks")]
    Kustomization {
        name: String,
        /// Reconcile the Kustomization's source first.
        #[arg(long)]
        with_source: bool,
    },
    /// Reconcile a source.
    #[command(subcommand)]
    Source(SourceTarget),
    /// Reconcile a HelmRelease and wait for its release.
    #[command(visible_alias = "hr")]
    Helmrelease {
        name: String,
        /// Upgrade the release even when nothing changed, and retry when out of retries.
        #[arg(long)]
        force: bool,
        /// Reset the failure counters, so an exhausted remediation tries again.
        #[arg(long)]
        reset: bool,
        /// Reconcile the HelmRelease's chart source (and its source) first.
        #[arg(long)]
        with_source: bool,
    },
    /// Reconcile a Receiver (read its token again) and wait for it.
    Receiver { name: String },
    /// Alerts have no reconciler (notification v1beta3): says so, as flux does for its static
    /// objects.
    Alert { name: String },
    /// Providers have no reconciler either.
    #[command(name = "alert-provider")]
    AlertProvider { name: String },
    /// Reconcile an image automation object.
    #[command(subcommand)]
    Image(ImageTarget),
}

#[derive(Subcommand, Debug)]
enum ImageTarget {
    /// Scan an ImageRepository now and wait for it.
    Repository { name: String },
    /// Select an ImagePolicy's latest image now and wait for it.
    Policy { name: String },
    /// Run an ImageUpdateAutomation now and wait for it.
    Update { name: String },
}

#[derive(Subcommand, Debug)]
enum SourceTarget {
    /// Fetch a GitRepository now and wait for its artifact.
    Git { name: String },
    /// Fetch a HelmRepository's index now and wait for its artifact.
    Helm { name: String },
    /// Build a HelmChart now and wait for its artifact.
    Chart {
        name: String,
        /// Reconcile the HelmChart's source first.
        #[arg(long)]
        with_source: bool,
    },
    /// Pull an OCIRepository now and wait for its artifact.
    Oci { name: String },
    /// Fetch a Bucket now and wait for its artifact.
    Bucket { name: String },
}

pub async fn run(args: ReconcileArgs) -> anyhow::Result<ExitCode> {
    let result = async {
        let cluster = Cluster::connect(&args.kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        let ns = args.kube.namespace.as_str();
        match &args.what {
            Target::Source(SourceTarget::Git { name }) => {
                let repo: GitRepository = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &repo, deadline).await
            }
            Target::Helmrelease {
                name,
                force,
                reset,
                with_source,
            } => {
                let hr: HelmRelease = fluxobj::get_object(&cluster, ns, name).await?;
                if hr.suspended() {
                    bail!("resource is suspended");
                }
                if *with_source {
                    reconcile_release_source(&cluster, ns, &hr, deadline).await?;
                }
                let mut also = Vec::new();
                if *force {
                    also.push(FORCE_REQUESTED_AT);
                }
                if *reset {
                    also.push(RESET_REQUESTED_AT);
                }
                reconcile_one_with(&cluster, ns, &hr, &also, deadline).await
            }
            Target::Receiver { name } => {
                let receiver: Receiver = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &receiver, deadline).await
            }
            Target::Alert { name } => {
                fluxobj::get_object::<Alert>(&cluster, ns, name).await?;
                progress::success("reconciliation not supported by the object");
                Ok(())
            }
            Target::AlertProvider { name } => {
                fluxobj::get_object::<Provider>(&cluster, ns, name).await?;
                progress::success("reconciliation not supported by the object");
                Ok(())
            }
            Target::Image(ImageTarget::Repository { name }) => {
                let repo: ImageRepository = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &repo, deadline).await
            }
            Target::Image(ImageTarget::Policy { name }) => {
                let policy: ImagePolicy = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &policy, deadline).await
            }
            Target::Image(ImageTarget::Update { name }) => {
                let update: ferroflux_api::ImageUpdateAutomation =
                    fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &update, deadline).await
            }
            Target::Source(SourceTarget::Oci { name }) => {
                let repo: OCIRepository = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &repo, deadline).await
            }
            Target::Source(SourceTarget::Bucket { name }) => {
                let bucket: ferroflux_api::Bucket = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &bucket, deadline).await
            }
            Target::Source(SourceTarget::Helm { name }) => {
                let repo: HelmRepository = fluxobj::get_object(&cluster, ns, name).await?;
                reconcile_one(&cluster, ns, &repo, deadline).await
            }
            Target::Source(SourceTarget::Chart { name, with_source }) => {
                reconcile_chart(&cluster, ns, name, *with_source, deadline).await
            }
            Target::Kustomization { name, with_source } => {
                let ks: Kustomization = fluxobj::get_object(&cluster, ns, name).await?;
                if ks.suspended() {
                    bail!("resource is suspended");
                }
                if *with_source {
                    let source = &ks.spec.source_ref;
                    let source_ns = source.namespace.as_deref().unwrap_or(ns);
                    match source.kind {
                        SourceKind::GitRepository => {
                            let repo: GitRepository =
                                fluxobj::get_object(&cluster, source_ns, &source.name).await?;
                            reconcile_one(&cluster, source_ns, &repo, deadline).await?;
                        }
                        SourceKind::OCIRepository => {
                            let repo: OCIRepository =
                                fluxobj::get_object(&cluster, source_ns, &source.name).await?;
                            reconcile_one(&cluster, source_ns, &repo, deadline).await?;
                        }
                        SourceKind::Bucket => {
                            let bucket: ferroflux_api::Bucket =
                                fluxobj::get_object(&cluster, source_ns, &source.name).await?;
                            reconcile_one(&cluster, source_ns, &bucket, deadline).await?;
                        }
                        other => bail!("cannot reconcile source of kind {}", other.as_str()),
                    }
                }
                reconcile_one(&cluster, ns, &ks, deadline).await
            }
        }
    }
    .await;
    fluxobj::exit_code(
        result,
        "the reconcile request stays on the object and the controller still handles it",
    )
}

/// A HelmChart, after its source when `with_source`.
async fn reconcile_chart(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    with_source: bool,
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    use ferroflux_api::helmchart::HelmChartSourceKind;
    let chart: HelmChart = fluxobj::get_object(cluster, ns, name).await?;
    if chart.suspended() {
        bail!("resource is suspended");
    }
    if with_source {
        let source = &chart.spec.source_ref;
        match source.kind {
            HelmChartSourceKind::HelmRepository => {
                let repo: HelmRepository = fluxobj::get_object(cluster, ns, &source.name).await?;
                reconcile_one(cluster, ns, &repo, deadline).await?;
            }
            HelmChartSourceKind::GitRepository => {
                let repo: GitRepository = fluxobj::get_object(cluster, ns, &source.name).await?;
                reconcile_one(cluster, ns, &repo, deadline).await?;
            }
            HelmChartSourceKind::Bucket => {
                let bucket: ferroflux_api::Bucket =
                    fluxobj::get_object(cluster, ns, &source.name).await?;
                reconcile_one(cluster, ns, &bucket, deadline).await?;
            }
        }
    }
    reconcile_one(cluster, ns, &chart, deadline).await
}

/// flux's source of a HelmRelease: the HelmChart its template owns (reconciled with its own
/// source), or what `chartRef` names — a HelmChart (with its source) or an OCIRepository.
async fn reconcile_release_source(
    cluster: &Cluster,
    ns: &str,
    hr: &HelmRelease,
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    use ferroflux_api::helmrelease::ChartRefKind;
    if let Some(chart_ref) = &hr.spec.chart_ref {
        let ref_ns = chart_ref
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(ns);
        return match chart_ref.kind {
            ChartRefKind::HelmChart => {
                reconcile_chart(cluster, ref_ns, &chart_ref.name, true, deadline).await
            }
            ChartRefKind::OCIRepository => {
                let repo: OCIRepository =
                    fluxobj::get_object(cluster, ref_ns, &chart_ref.name).await?;
                reconcile_one(cluster, ref_ns, &repo, deadline).await
            }
            other => bail!("cannot reconcile source of kind {}", other.as_str()),
        };
    }
    let Some(template) = &hr.spec.chart else {
        bail!("HelmRelease has neither chart nor chartRef");
    };
    let chart_ns = template
        .spec
        .source_ref
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(ns);
    reconcile_chart(cluster, chart_ns, &hr.helm_chart_name(), true, deadline).await
}

async fn reconcile_one<K: FluxObject>(
    cluster: &Cluster,
    ns: &str,
    obj: &K,
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    reconcile_one_with(cluster, ns, obj, &[], deadline).await
}

async fn reconcile_one_with<K: FluxObject>(
    cluster: &Cluster,
    ns: &str,
    obj: &K,
    also: &[&str],
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    use kube::ResourceExt;
    let name = obj.name_any();
    if obj.suspended() {
        bail!("resource is suspended");
    }
    // Read before the request is written: the wait is for this value to change.
    let previous = obj.last_handled_reconcile_at();
    progress::action(format!("annotating {} {name} in {ns} namespace", K::KIND));
    fluxobj::request_reconcile_with::<K>(cluster, ns, &name, also).await?;
    progress::success(format!("{} annotated", K::KIND));
    let done: K = fluxobj::with_spinner(
        &format!("waiting for {} reconciliation", K::KIND),
        fluxobj::wait_handled::<K>(cluster, ns, &name, previous, deadline),
    )
    .await?;
    progress::success(done.success_message());
    Ok(())
}
