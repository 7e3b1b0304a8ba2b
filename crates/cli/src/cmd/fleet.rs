//! `ferroflux fleet status`: every cluster of the kubeconfig (or `--contexts a,b`) side by side,
//! which Flux has no command for. Clusters are queried concurrently, each bounded by --timeout;
//! one that does not answer is reported as unreachable and the others still print. The exit
//! code is 1 when any cluster is failing or unreachable, so the command can gate a promotion.
//!
//! It only reads: Kustomizations, HelmReleases and the sources of every namespace, and their
//! status. HelmReleases get a table of their own (after the Kustomizations', only when a cluster
//! has any) and count towards a cluster's status: one failing makes the cluster failing. After
//! the per-cluster summary comes the fleet's rollup (crates/fleet computes it): one line per
//! revision of each followed source ("3 of 4 clusters at main@sha1:bbbbbbbb (3 min)"), the
//! objects counted, and the laggards with the reason each lags. `--watch` keeps the whole view
//! current from watches: redrawn in place on a terminal; into a pipe each new view follows the
//! last after a form feed line.

use crate::cluster::{Cluster, KubeArgs, known_context};
use crate::output::table::flux_table;
use anyhow::{Context as _, bail};
use clap::{Args, Subcommand, ValueEnum};
use ferroflux_api::{
    GitRepository, HelmChart, HelmRelease, HelmRepository, Kustomization, OCIRepository,
    short_revision,
};
use ferroflux_fleet::{ClusterReport, Live, Objects, Rollup, Target, rollup};
use kube::api::{Api, ListParams};
use std::io::IsTerminal as _;
use std::path::PathBuf;
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
    /// Kustomizations and HelmReleases of every cluster, a summary per cluster and the fleet's
    /// rollup.
    Status(StatusArgs),
    /// What each cluster of a fleet repository would change: its `clusters/<name>/` tree built
    /// at a revision, compared with the live cluster (server-side dry-run) or another revision.
    Diff(DiffArgs),
    /// Move a commit through the waves of the repository's promotion plan
    /// (fleet-promotion.yaml), each wave Ready and soaked before the next.
    Promote(PromoteArgs),
    /// A live web page of the fleet (read-only; loopback unless --token is set).
    Serve(ServeArgs),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Where to listen (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:9393")]
    addr: std::net::SocketAddr,
    /// A bearer token every request must carry (header, or ?token= in the URL).
    #[arg(long, env = "FERROFLUX_FLEET_TOKEN")]
    token: Option<String>,
    /// Comma-separated contexts (default: every context of the kubeconfig, or --context).
    #[arg(long, value_delimiter = ',')]
    contexts: Vec<String>,
    /// The rows a page holds (whole clusters, at least one a page). The first page is what the
    /// browser paints first; with JavaScript the rest of the fleet follows once it is painted,
    /// without it each page links to the next (`?from=N`).
    #[arg(long, default_value_t = ferroflux_fleet::web::PAGE_ROWS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    page_rows: usize,
}

#[derive(Args, Debug)]
struct PromoteArgs {
    /// A checkout of the fleet repository, its remote the one the clusters fetch from
    /// (default: the current directory's work tree).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// The plan, relative to the repository's root.
    #[arg(long, default_value = "fleet-promotion.yaml")]
    plan: PathBuf,
    /// The remote to push to.
    #[arg(long, default_value = "origin")]
    remote: String,
    /// The revision to promote (default: the plan's source branch on the remote).
    #[arg(long)]
    to: Option<String>,
    /// Roll this wave back to its ref's value before its last promotion.
    #[arg(long, conflicts_with = "to")]
    rollback: Option<String>,
    /// Remove the lock of a promotion that did not end (killed), then stop.
    #[arg(long, conflicts_with_all = ["to", "rollback"])]
    unlock: bool,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// A checkout of the fleet repository (default: the current directory's work tree).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// The revision to build (default: the work tree as it is, uncommitted changes included).
    #[arg(long = "ref")]
    rev: Option<String>,
    /// `live` (each cluster's kubeconfig context of the same name, dry-run) or a revision.
    #[arg(long, default_value = "live")]
    against: String,
    /// Only these cluster folders (comma separated).
    #[arg(long, value_delimiter = ',')]
    cluster: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
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
    /// Keep the view current from watches until Ctrl-C.
    #[arg(short = 'w', long)]
    watch: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
}

pub async fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    let status = match &args.what {
        FleetWhat::Status(s) => s,
        FleetWhat::Diff(d) => return diff(&args.kube, d).await,
        FleetWhat::Promote(p) => return promote(&args.kube, p).await,
        FleetWhat::Serve(s) => return serve(&args.kube, s).await,
    };
    if status.watch {
        return watch(&args.kube, status).await;
    }
    let reports = collect(&args.kube, status).await?;
    let rolled = rollup(&reports, ferroflux_fleet::rollup::now());
    match status.output {
        Output::Json => println!("{}", json(&reports, &rolled)?),
        Output::Table => print!("{}", render_all(&reports, &rolled)),
    }
    verdict(&reports)
}

fn json(reports: &[ClusterReport], rolled: &Rollup) -> anyhow::Result<String> {
    let healthy = !reports.iter().any(ClusterReport::unhealthy);
    let doc = serde_json::json!({"healthy": healthy, "clusters": reports, "rollup": rolled});
    Ok(serde_json::to_string_pretty(&doc)?)
}

/// Exit 0 when every cluster is healthy; else the error naming the unhealthy ones.
fn verdict(reports: &[ClusterReport]) -> anyhow::Result<ExitCode> {
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

/// The contexts to ask: `--contexts`, else `--context`, else every context; each checked
/// before any cluster is asked anything.
fn selected(
    kube: &KubeArgs,
    args: &StatusArgs,
) -> anyhow::Result<(kube::config::Kubeconfig, Vec<String>)> {
    let kubeconfig = kube.kubeconfig()?;
    let contexts: Vec<String> = if !args.contexts.is_empty() {
        args.contexts.clone()
    } else if let Some(c) = &kube.context {
        vec![c.clone()]
    } else {
        kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
    };
    if contexts.is_empty() {
        bail!("the kubeconfig has no contexts");
    }
    for name in &contexts {
        if name.is_empty() {
            bail!("--contexts has an empty name");
        }
        known_context(&kubeconfig, name)?;
    }
    Ok((kubeconfig, contexts))
}

async fn collect(kube: &KubeArgs, args: &StatusArgs) -> anyhow::Result<Vec<ClusterReport>> {
    let (kubeconfig, contexts) = selected(kube, args)?;
    let timeout = kube.timeout;
    let mut tasks = Vec::new();
    for name in contexts {
        let kube = kube.clone();
        let kubeconfig = kubeconfig.clone();
        tasks.push(tokio::spawn(async move {
            let cluster = match Cluster::connect_to(&kube, &kubeconfig, Some(&name)).await {
                Ok(c) => c,
                Err(e) => return ClusterReport::unreachable(&name, "", "error", format!("{e:#}")),
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
                    ClusterReport::unreachable(&name, &cluster.url, status, message)
                }
                Err(_) => ClusterReport::unreachable(
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

async fn query(cluster: &Cluster) -> anyhow::Result<ClusterReport> {
    let lp = ListParams::default();
    let c = &cluster.client;
    let ks_api: Api<Kustomization> = Api::all(c.clone());
    let git_api: Api<GitRepository> = Api::all(c.clone());
    let hr_api: Api<HelmRelease> = Api::all(c.clone());
    let oci_api: Api<OCIRepository> = Api::all(c.clone());
    let hrepo_api: Api<HelmRepository> = Api::all(c.clone());
    let chart_api: Api<HelmChart> = Api::all(c.clone());
    let (ks, git, hr, oci, hrepo, chart) = tokio::join!(
        cluster.call("listing Kustomization objects", ks_api.list(&lp)),
        cluster.call("listing GitRepository objects", git_api.list(&lp)),
        cluster.call("listing HelmRelease objects", hr_api.list(&lp)),
        cluster.call("listing OCIRepository objects", oci_api.list(&lp)),
        cluster.call("listing HelmRepository objects", hrepo_api.list(&lp)),
        cluster.call("listing HelmChart objects", chart_api.list(&lp)),
    );
    // A cluster without the source or HelmRelease APIs still has Kustomizations worth
    // showing.
    let objects = Objects {
        kustomizations: ks?.items,
        git_repositories: git.map(|l| l.items).unwrap_or_default(),
        helm_releases: hr.map(|l| l.items).unwrap_or_default(),
        oci_repositories: oci.map(|l| l.items).unwrap_or_default(),
        helm_repositories: hrepo.map(|l| l.items).unwrap_or_default(),
        helm_charts: chart.map(|l| l.items).unwrap_or_default(),
    };
    Ok(ClusterReport::from_objects(
        &cluster.context,
        &cluster.url,
        &objects,
    ))
}

/// `--watch`: one watch per kind and cluster (crates/fleet's [`Live`]); the view is drawn
/// once every cluster has listed or failed (or at --timeout, whichever first), then again on
/// every change that alters it, until Ctrl-C. The exit code is the last view's.
async fn watch(kube: &KubeArgs, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let (kubeconfig, contexts) = selected(kube, args)?;
    let mut targets = Vec::new();
    for name in &contexts {
        let cluster = Cluster::connect_watching_to(kube, &kubeconfig, name).await?;
        targets.push(Target {
            context: cluster.context,
            server: cluster.url,
            client: cluster.client,
        });
    }
    let live = Live::start(targets);
    let mut changes = live.subscribe();
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")?;
    let first_by = tokio::time::Instant::now() + kube.timeout;
    let terminal = std::io::stdout().is_terminal();
    let mut last = String::new();
    let mut reports = Vec::new();
    loop {
        if live.settled() || tokio::time::Instant::now() >= first_by {
            reports = live.reports();
            let rolled = rollup(&reports, ferroflux_fleet::rollup::now());
            let view = match args.output {
                Output::Json => format!("{}\n", json(&reports, &rolled)?),
                Output::Table => render_all(&reports, &rolled),
            };
            if view != last {
                let frame = if terminal {
                    // Home, clear: the view replaces the last one in place.
                    format!("\x1b[H\x1b[2J{view}")
                } else if last.is_empty() {
                    view.clone()
                } else {
                    format!("\x0c\n{view}")
                };
                crate::output::watchloop::write_now(&frame)?;
                last = view;
            }
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { break },
            _ = tokio::time::sleep_until(first_by), if last.is_empty() => {}
            _ = interrupt.recv() => break,
        }
    }
    verdict(&reports)
}

/// The tables, the rollup's lines and the laggards.
fn render_all(reports: &[ClusterReport], rolled: &Rollup) -> String {
    let mut out = render(reports);
    out.push('\n');
    for line in rolled.lines() {
        out.push_str(&line);
        out.push('\n');
    }
    if !rolled.laggards.is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = rolled
            .laggards
            .iter()
            .flat_map(|l| {
                l.reasons
                    .iter()
                    .map(|r| vec![l.context.clone(), l.status.clone(), r.clone()])
            })
            .collect();
        out.push_str(&flux_table(&["LAGGARD", "STATUS", "REASON"], &rows));
    }
    out
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

/// `fleet diff`: every cluster folder (or --cluster's) built from the tree of --ref and
/// compared; the clusters are built and compared concurrently. Exit 1 when anything would
/// change or a cluster could not be compared (a folder without a context is named and skipped).
async fn diff(kube: &KubeArgs, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    use ferroflux_fleet::diff::{ClusterDiff, against_live, between};
    use ferroflux_fleet::helm::{Secrets, build_cluster_with_releases};
    use ferroflux_fleet::repo::{Tree, git};

    let top = git(&args.repo, &["rev-parse", "--show-toplevel"])
        .with_context(|| format!("{} is not a Git work tree", args.repo.display()))?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim());
    let tree = match &args.rev {
        Some(rev) => Tree::at(&top, rev)?,
        None => Tree::work_tree(&top)?,
    };
    let mut clusters = tree.clusters()?;
    if !args.cluster.is_empty() {
        for name in &args.cluster {
            if !clusters.contains(name) {
                bail!(
                    "no cluster folder clusters/{name}/ in {}; cluster folders: {}",
                    tree.label,
                    clusters.join(", ")
                );
            }
        }
        clusters.retain(|c| args.cluster.contains(c));
    }
    let live = args.against == "live";
    let old = if live {
        None
    } else {
        Some(Tree::at(&top, &args.against)?)
    };
    let kubeconfig = if live { Some(kube.kubeconfig()?) } else { None };
    // Against another revision, the kubeconfig only serves to read the Secrets of chart
    // sources needing credentials: without one, those charts get a note.
    let secrets_kubeconfig = if live {
        Err(String::new())
    } else {
        kube.kubeconfig().map_err(|e| format!("{e:#}"))
    };
    let against_label = old
        .as_ref()
        .map_or("the live cluster".to_string(), |t| t.label.clone());
    let work = clusters.iter().map(|name| {
        let (tree, old, kubeconfig, label) = (&tree, &old, &kubeconfig, &against_label);
        let secrets_kubeconfig = &secrets_kubeconfig;
        async move {
            let mut d = ClusterDiff {
                cluster: name.clone(),
                against: label.clone(),
                ..ClusterDiff::default()
            };
            match (old, kubeconfig) {
                (Some(old), _) => {
                    // The cluster's context, if any, is reached for Secrets alone.
                    let reader = match secrets_kubeconfig {
                        Ok(kc) if kc.contexts.iter().any(|c| &c.name == name) => {
                            Cluster::connect_to(kube, kc, Some(name))
                                .await
                                .map(|c| c.client)
                                .map_err(|e| format!("{e:#}"))
                        }
                        Ok(_) => Err(format!(
                            "there is no kubeconfig context \"{name}\" to read them from"
                        )),
                        Err(e) => Err(format!("there is no kubeconfig to read them from ({e})")),
                    };
                    let secrets = match &reader {
                        Ok(client) => Secrets::Cluster(client),
                        Err(why) => Secrets::Unavailable(why),
                    };
                    let (built, before) = tokio::join!(
                        build_cluster_with_releases(tree, name, None, secrets),
                        build_cluster_with_releases(old, name, None, secrets)
                    );
                    match (built, before) {
                        (Ok(new), Ok(before)) => {
                            d.changes = between(&new, &before);
                            d.notes = new.notes;
                        }
                        (Err(e), _) | (_, Err(e)) => d.error = Some(e.to_string()),
                    }
                }
                (None, Some(kc)) => {
                    if !kc.contexts.iter().any(|c| &c.name == name) {
                        d.error = Some(format!(
                            "no kubeconfig context \"{name}\" for clusters/{name}/: skipped"
                        ));
                        return d;
                    }
                    let cluster = match Cluster::connect_to(kube, kc, Some(name)).await {
                        Ok(c) => c,
                        Err(e) => {
                            d.error = Some(format!("{e:#}"));
                            return d;
                        }
                    };
                    let built = build_cluster_with_releases(
                        tree,
                        name,
                        Some(&cluster.client),
                        Secrets::Cluster(&cluster.client),
                    )
                    .await;
                    match built {
                        Ok(new) => {
                            let applier = ferroflux_apply::applier::Applier::new(
                                cluster.client.clone(),
                                ferroflux_controller::kustomization::reconciler::FIELD_MANAGER,
                            );
                            let (changes, errors) =
                                tokio::time::timeout(kube.timeout, against_live(&new, &applier))
                                    .await
                                    .unwrap_or_else(|_| {
                                        (
                                            vec![],
                                            vec![format!(
                                                "the cluster ({}) did not answer within {}",
                                                cluster.url,
                                                crate::cluster::humantime(kube.timeout)
                                            )],
                                        )
                                    });
                            d.changes = changes;
                            d.notes = new.notes;
                            if !errors.is_empty() {
                                d.error = Some(errors.join("; "));
                            }
                        }
                        Err(e) => d.error = Some(e.to_string()),
                    }
                }
                (None, None) => d.error = Some("nothing to compare with".into()),
            }
            d
        }
    });
    let diffs: Vec<ClusterDiff> = futures::future::join_all(work).await;
    let changed: Vec<&str> = diffs
        .iter()
        .filter(|d| d.changed())
        .map(|d| d.cluster.as_str())
        .collect();
    let failed: Vec<&ClusterDiff> = diffs.iter().filter(|d| d.error.is_some()).collect();
    match args.output {
        Output::Json => {
            let doc = serde_json::json!({
                "ref": tree.label, "against": against_label,
                "changed": changed, "clusters": diffs,
            });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Output::Table => {
            for d in &diffs {
                print!("{}", d.render());
            }
            println!(
                "{} of {} clusters would change{}{}",
                changed.len(),
                diffs.len(),
                if changed.is_empty() { "" } else { ": " },
                changed.join(", ")
            );
        }
    }
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|d| d.cluster.as_str()).collect();
        bail!("could not compare: {}", names.join(", "));
    }
    Ok(if changed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `fleet promote`: reads and checks the plan against the repository's cluster folders,
/// connects to each cluster of the plan (context = cluster name), then lets crates/fleet's
/// [`ferroflux_fleet::promote::Promotion`] move the refs and watch the waves.
async fn promote(kube: &KubeArgs, args: &PromoteArgs) -> anyhow::Result<ExitCode> {
    use ferroflux_fleet::plan::Plan;
    use ferroflux_fleet::promote::Promotion;
    use ferroflux_fleet::repo::git;

    let top = git(&args.repo, &["rev-parse", "--show-toplevel"])
        .with_context(|| format!("{} is not a Git work tree", args.repo.display()))?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim());
    let plan_path = top.join(&args.plan);
    let text = std::fs::read_to_string(&plan_path)
        .with_context(|| format!("reading the promotion plan {}", plan_path.display()))?;
    let mut clusters = Vec::new();
    if let Ok(entries) = std::fs::read_dir(top.join("clusters")) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                clusters.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    clusters.sort();
    if clusters.is_empty() {
        bail!(
            "{} has no clusters/<name>/ layout: expected one folder per cluster under clusters/",
            top.display()
        );
    }
    let plan = Plan::parse(&text, &args.plan.display().to_string(), &clusters)?;
    let mut targets = std::collections::BTreeMap::new();
    if !args.unlock {
        let kubeconfig = kube.kubeconfig()?;
        for wave in &plan.waves {
            for name in &wave.clusters {
                if !kubeconfig.contexts.iter().any(|c| &c.name == name) {
                    continue;
                }
                let cluster = Cluster::connect_watching_to(kube, &kubeconfig, name).await?;
                targets.insert(
                    name.clone(),
                    Target {
                        context: cluster.context,
                        server: cluster.url,
                        client: cluster.client,
                    },
                );
            }
        }
    }
    let mut say = |line: String| println!("► {line}");
    let mut promotion = Promotion {
        repo: top,
        remote: args.remote.clone(),
        plan,
        targets,
        say: &mut say,
    };
    if args.unlock {
        if promotion.unlock()? {
            println!("✔ removed {}", ferroflux_fleet::promote::LOCK);
        } else {
            println!("✔ no lock to remove");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(wave) = &args.rollback {
        let sha = promotion.rollback(wave).await?;
        println!("✔ wave {wave} rolled back to {}", &sha[..sha.len().min(12)]);
        return Ok(ExitCode::SUCCESS);
    }
    let sha = promotion.promote(args.to.as_deref()).await?;
    println!(
        "✔ promoted {} through every wave",
        &sha[..sha.len().min(12)]
    );
    Ok(ExitCode::SUCCESS)
}

/// `fleet serve`: watches every selected cluster (crates/fleet's [`Live`]) and serves its page
/// until Ctrl-C. Refuses a non-loopback address without --token.
async fn serve(kube: &KubeArgs, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    if !args.addr.ip().is_loopback() && args.token.is_none() {
        bail!(
            "--addr {} is not a loopback address: set --token so that only its holders read the fleet",
            args.addr
        );
    }
    let select = StatusArgs {
        contexts: args.contexts.clone(),
        output: Output::Table,
        watch: true,
    };
    let (kubeconfig, contexts) = selected(kube, &select)?;
    let mut targets = Vec::new();
    for name in &contexts {
        let cluster = Cluster::connect_watching_to(kube, &kubeconfig, name).await?;
        targets.push(Target {
            context: cluster.context,
            server: cluster.url,
            client: cluster.client,
        });
    }
    let live = std::sync::Arc::new(Live::start_with_events(targets));
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listening on {}", args.addr))?;
    let addr = listener.local_addr()?;
    crate::output::watchloop::write_now(&format!("serving the fleet on http://{addr}/\n"))?;
    let app = ferroflux_fleet::web::router(live, args.token.clone(), args.page_rows);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            tokio::signal::ctrl_c().await.ok();
        })
        .await
        .context("serving the fleet page")?;
    Ok(ExitCode::SUCCESS)
}
