//! `ferroflux fleet status`: every cluster of the kubeconfig (or `--contexts a,b`) side by side,
//! which Flux has no command for. Clusters are queried concurrently, each bounded by --timeout;
//! one that does not answer is reported as unreachable and the others still print. The exit
//! code is 1 when any cluster is failing or unreachable, so the command can gate a promotion.
//!
//! It only reads: Kustomizations, HelmReleases and GitRepositories of every namespace, and their
//! status. HelmReleases get a table of their own (after the Kustomizations', only when a cluster
//! has any) and count towards a cluster's status: one failing makes the cluster failing.

use crate::cluster::{Cluster, KubeArgs, known_context};
use crate::fluxobj::FluxObject;
use crate::output::table::flux_table;
use anyhow::{Context as _, bail};
use clap::{Args, Subcommand, ValueEnum};
use ferroflux_api::conditions::{READY, find_condition};
use ferroflux_api::kustomization::SourceKind;
use ferroflux_api::{GitRepository, HelmRelease, Kustomization, short_revision};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct FleetArgs {
    #[command(subcommand)]
    what: FleetWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum FleetWhat {
    /// Kustomizations and HelmReleases of every cluster, and a summary per cluster.
    Status(StatusArgs),
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// Comma-separated contexts to query (default: every context of the kubeconfig, or
    /// --context alone when given).
    #[arg(long, value_delimiter = ',')]
    contexts: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
}

/// One Kustomization as the fleet view reports it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationReport {
    pub namespace: String,
    pub name: String,
    /// `status.lastAppliedRevision`.
    pub applied_revision: Option<String>,
    /// `Kind/namespace/name` of the source.
    pub source: String,
    /// The revision of the artifact the source controller fetched.
    pub source_revision: Option<String>,
    /// The source has a revision this Kustomization has not applied.
    pub behind: bool,
    /// `True`, `False` or `Unknown` (`False` when no Ready condition, as flux prints it).
    pub ready: String,
    pub suspended: bool,
    pub message: String,
}

/// One HelmRelease as the fleet view reports it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseReport {
    pub namespace: String,
    pub name: String,
    /// The chart version of the newest release (flux's REVISION).
    pub revision: Option<String>,
    /// `True`, `False` or `Unknown` (`False` when no Ready condition).
    pub ready: String,
    pub suspended: bool,
    pub message: String,
}

/// One cluster: reachable with its Kustomizations, or why not.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReport {
    pub context: String,
    pub server: String,
    /// `ready`, `progressing`, `behind`, `failing`, `unreachable` or `error`.
    pub status: String,
    pub error: Option<String>,
    pub ready: usize,
    pub failing: usize,
    pub progressing: usize,
    pub suspended: usize,
    pub behind: usize,
    pub source_revisions: Vec<String>,
    pub applied_revisions: Vec<String>,
    pub kustomizations: Vec<KustomizationReport>,
    /// Present when the cluster has HelmReleases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helm_releases: Vec<HelmReleaseReport>,
}

impl ClusterReport {
    fn unhealthy(&self) -> bool {
        matches!(self.status.as_str(), "failing" | "unreachable" | "error")
    }
}

pub async fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    let FleetWhat::Status(status) = &args.what;
    let reports = collect(&args.kube, status).await?;
    match status.output {
        Output::Json => {
            let healthy = !reports.iter().any(ClusterReport::unhealthy);
            let doc = serde_json::json!({"healthy": healthy, "clusters": reports});
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Output::Table => print!("{}", render(&reports)),
    }
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| r.unhealthy())
        .map(|r| format!("{} {}", r.context, r.status))
        .collect();
    if !bad.is_empty() {
        bail!("the fleet is not healthy: {}", bad.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

async fn collect(kube: &KubeArgs, args: &StatusArgs) -> anyhow::Result<Vec<ClusterReport>> {
    let kubeconfig = kube.kubeconfig()?;
    let available: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
    let contexts: Vec<String> = if !args.contexts.is_empty() {
        args.contexts.clone()
    } else if let Some(c) = &kube.context {
        vec![c.clone()]
    } else {
        available.clone()
    };
    if contexts.is_empty() {
        bail!("the kubeconfig has no contexts");
    }
    // Every name is checked before any cluster is asked anything.
    for name in &contexts {
        if name.is_empty() {
            bail!("--contexts has an empty name");
        }
        known_context(&kubeconfig, name)?;
    }
    let timeout = kube.timeout;
    let mut tasks = Vec::new();
    for name in contexts {
        let kube = kube.clone();
        let kubeconfig = kubeconfig.clone();
        tasks.push(tokio::spawn(async move {
            let cluster = match Cluster::connect_to(&kube, &kubeconfig, Some(&name)).await {
                Ok(c) => c,
                Err(e) => return unreachable(&name, "", "error", format!("{e:#}")),
            };
            // The bound covers the whole cluster, whatever number of requests it takes.
            match tokio::time::timeout(timeout, query(&cluster)).await {
                Ok(Ok(report)) => report,
                Ok(Err(e)) => {
                    let message = format!("{e:#}");
                    let status =
                        if message.contains("cannot reach") || message.contains("did not answer") {
                            "unreachable"
                        } else {
                            "error"
                        };
                    unreachable(&name, &cluster.url, status, message)
                }
                Err(_) => unreachable(
                    &name,
                    &cluster.url,
                    "unreachable",
                    format!(
                        "the cluster ({}) did not answer within {}",
                        cluster.url,
                        crate::cluster::humantime(timeout)
                    ),
                ),
            }
        }));
    }
    let mut reports = Vec::new();
    for task in tasks {
        reports.push(task.await.context("a cluster query panicked")?);
    }
    Ok(reports)
}

fn unreachable(context: &str, server: &str, status: &str, error: String) -> ClusterReport {
    ClusterReport {
        context: context.to_string(),
        server: server.to_string(),
        status: status.to_string(),
        error: Some(error),
        ready: 0,
        failing: 0,
        progressing: 0,
        suspended: 0,
        behind: 0,
        source_revisions: vec![],
        applied_revisions: vec![],
        kustomizations: vec![],
        helm_releases: vec![],
    }
}

async fn query(cluster: &Cluster) -> anyhow::Result<ClusterReport> {
    let ks_api: Api<Kustomization> = Api::all(cluster.client.clone());
    let git_api: Api<GitRepository> = Api::all(cluster.client.clone());
    let lp = ListParams::default();
    let hr_api: Api<HelmRelease> = Api::all(cluster.client.clone());
    let (ks, git, hr) = tokio::join!(
        cluster.call("listing Kustomization objects", ks_api.list(&lp)),
        cluster.call("listing GitRepository objects", git_api.list(&lp)),
        cluster.call("listing HelmRelease objects", hr_api.list(&lp)),
    );
    let ks = ks?.items;
    // A cluster without the GitRepository or HelmRelease API still has Kustomizations worth
    // showing.
    let git = git.map(|l| l.items).unwrap_or_default();
    let hr = hr.map(|l| l.items).unwrap_or_default();
    let mut report = summarise(cluster, &ks, &git);
    add_helm_releases(&mut report, &hr);
    Ok(report)
}

/// The HelmReleases of a reachable cluster: listed, and a failing or progressing one makes
/// the cluster's status so (after Kustomizations, which decide first).
fn add_helm_releases(report: &mut ClusterReport, releases: &[HelmRelease]) {
    let mut items: Vec<&HelmRelease> = releases.iter().collect();
    items.sort_by_key(|h| (h.namespace(), h.name_any()));
    let (mut failing, mut progressing) = (0, 0);
    for h in items {
        let ready = find_condition(h.conditions(), READY);
        let suspended = h.suspended();
        if !suspended {
            match ready.map(|c| c.status.as_str()) {
                Some("True") => {}
                Some("False") => failing += 1,
                _ => progressing += 1,
            }
        }
        let status = h.status.as_ref();
        report.helm_releases.push(HelmReleaseReport {
            namespace: h.namespace().unwrap_or_default(),
            name: h.name_any(),
            revision: status
                .and_then(|s| s.history.as_ref())
                .and_then(|history| history.first())
                .map(|s| s.chart_version.clone())
                .or_else(|| status.and_then(|s| s.last_attempted_revision.clone())),
            ready: ready.map_or("False".to_string(), |c| c.status.clone()),
            suspended,
            message: ready.map_or("waiting to be reconciled".to_string(), |c| {
                c.message.clone()
            }),
        });
    }
    report.failing += failing;
    if failing > 0 {
        report.status = "failing".into();
    } else if progressing > 0 && report.status != "failing" {
        report.status = "progressing".into();
    }
}

/// The report of one reachable cluster from its objects.
fn summarise(cluster: &Cluster, ks: &[Kustomization], git: &[GitRepository]) -> ClusterReport {
    let artifacts: BTreeMap<(String, String), String> = git
        .iter()
        .filter_map(|g| {
            let rev = g.status.as_ref()?.artifact.as_ref()?.revision.clone();
            Some(((g.namespace().unwrap_or_default(), g.name_any()), rev))
        })
        .collect();
    let mut report = ClusterReport {
        context: cluster.context.clone(),
        server: cluster.url.clone(),
        status: String::new(),
        error: None,
        ready: 0,
        failing: 0,
        progressing: 0,
        suspended: 0,
        behind: 0,
        source_revisions: vec![],
        applied_revisions: vec![],
        kustomizations: vec![],
        helm_releases: vec![],
    };
    let mut sources = BTreeSet::new();
    let mut applied = BTreeSet::new();
    let mut items: Vec<&Kustomization> = ks.iter().collect();
    items.sort_by_key(|k| (k.namespace(), k.name_any()));
    for k in items {
        let ns = k.namespace().unwrap_or_default();
        let src = &k.spec.source_ref;
        let src_ns = src.namespace.clone().unwrap_or_else(|| ns.clone());
        let source_revision = if src.kind == SourceKind::GitRepository {
            artifacts.get(&(src_ns.clone(), src.name.clone())).cloned()
        } else {
            None
        };
        let applied_revision = k
            .status
            .as_ref()
            .and_then(|s| s.last_applied_revision.clone());
        let behind = source_revision
            .as_ref()
            .is_some_and(|s| applied_revision.as_ref() != Some(s));
        let conditions = k.conditions();
        let ready = find_condition(conditions, READY);
        let ready_status = ready.map_or("False".to_string(), |c| c.status.clone());
        let message = ready.map_or("waiting to be reconciled".to_string(), |c| {
            c.message.clone()
        });
        let suspended = k.suspended();
        if suspended {
            report.suspended += 1;
        } else {
            match ready.map(|c| c.status.as_str()) {
                Some("True") => report.ready += 1,
                Some("False") => report.failing += 1,
                _ => report.progressing += 1,
            }
        }
        // A suspended Kustomization is frozen on purpose: reported, not counted.
        if behind && !suspended {
            report.behind += 1;
        }
        if let Some(s) = &source_revision {
            sources.insert(s.clone());
        }
        if let Some(a) = &applied_revision {
            applied.insert(a.clone());
        }
        report.kustomizations.push(KustomizationReport {
            namespace: ns,
            name: k.name_any(),
            applied_revision,
            source: format!("{}/{src_ns}/{}", src.kind.as_str(), src.name),
            source_revision,
            behind,
            ready: ready_status,
            suspended,
            message,
        });
    }
    report.source_revisions = sources.into_iter().collect();
    report.applied_revisions = applied.into_iter().collect();
    report.status = if report.failing > 0 {
        "failing"
    } else if report.progressing > 0 {
        "progressing"
    } else if report.behind > 0 {
        "behind"
    } else {
        "ready"
    }
    .to_string();
    report
}

/// The Kustomization table, a blank line, the summary table.
pub fn render(reports: &[ClusterReport]) -> String {
    let mut rows = Vec::new();
    for r in reports {
        if let Some(error) = &r.error {
            rows.push(vec![
                r.context.clone(),
                String::new(),
                String::new(),
                String::new(),
                "Unknown".into(),
                format!("{}: {error}", r.status),
            ]);
            continue;
        }
        if r.kustomizations.is_empty() {
            rows.push(vec![
                r.context.clone(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "no Kustomization objects found".into(),
            ]);
        }
        for k in &r.kustomizations {
            rows.push(vec![
                r.context.clone(),
                k.namespace.clone(),
                k.name.clone(),
                short_revision(k.applied_revision.as_deref().unwrap_or("")),
                k.ready.clone(),
                k.message.clone(),
            ]);
        }
    }
    let mut out = flux_table(
        &[
            "CLUSTER",
            "NAMESPACE",
            "NAME",
            "REVISION",
            "READY",
            "MESSAGE",
        ],
        &rows,
    );
    out.push('\n');
    let hr_rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| {
            r.helm_releases.iter().map(|h| {
                vec![
                    r.context.clone(),
                    h.namespace.clone(),
                    h.name.clone(),
                    h.revision.clone().unwrap_or_default(),
                    h.ready.clone(),
                    h.message.clone(),
                ]
            })
        })
        .collect();
    if !hr_rows.is_empty() {
        out.push_str(&flux_table(
            &[
                "CLUSTER",
                "NAMESPACE",
                "HELMRELEASE",
                "REVISION",
                "READY",
                "MESSAGE",
            ],
            &hr_rows,
        ));
        out.push('\n');
    }
    let revisions = |list: &[String]| {
        if list.is_empty() {
            "-".to_string()
        } else {
            list.iter()
                .map(|s| short_revision(s))
                .collect::<Vec<_>>()
                .join(",")
        }
    };
    let summary: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            if r.error.is_some() {
                let dash = || "-".to_string();
                return vec![
                    r.context.clone(),
                    r.status.clone(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                ];
            }
            vec![
                r.context.clone(),
                r.status.clone(),
                format!("{}/{}", r.ready, r.kustomizations.len()),
                r.failing.to_string(),
                r.suspended.to_string(),
                revisions(&r.source_revisions),
                revisions(&r.applied_revisions),
                if r.behind > 0 {
                    format!("behind ({})", r.behind)
                } else {
                    "in sync".to_string()
                },
            ]
        })
        .collect();
    out.push_str(&flux_table(
        &[
            "CLUSTER",
            "STATUS",
            "READY",
            "FAILING",
            "SUSPENDED",
            "FETCHED",
            "APPLIED",
            "SYNC",
        ],
        &summary,
    ));
    out
}
