//! `ferroflux get`: Flux objects as the flux CLI lists them (the notification kinds with their own
//! columns, [`notifications`]).

use crate::cluster::{Cluster, KubeArgs};
use crate::output::table::{StreamedRows, flux_table};
use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use ferroflux_api::conditions::{READY, find_condition};
use ferroflux_api::{
    Alert, ArtifactGenerator, FluxObject, GitRepository, HelmChart, HelmRelease, HelmRepository,
    Kustomization, OCIRepository, Provider, Receiver, short_revision,
};
use ferroflux_notification::config;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GetArgs {
    #[command(subcommand)]
    what: GetWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum GetWhat {
    /// Kustomizations and their status.
    #[command(visible_alias = "ks", alias = "kustomization")]
    Kustomizations(ListArgs),
    /// HelmReleases and their status.
    #[command(visible_alias = "hr", alias = "helmrelease")]
    Helmreleases(ListArgs),
    /// Sources and their status.
    #[command(subcommand, alias = "source")]
    Sources(SourceKind),
    /// Every Flux object of the namespace: sources first, then Kustomizations.
    All(AllArgs),
    /// Artifact objects (flux's `get artifact generators`).
    #[command(subcommand, alias = "artifact")]
    Artifacts(ArtifactKind),
    /// Alerts and their status.
    #[command(alias = "alert")]
    Alerts(ListArgs),
    /// Alert Providers and their status.
    #[command(name = "alert-providers", alias = "alert-provider")]
    AlertProviders(ListArgs),
    /// Receivers and their status.
    #[command(alias = "receiver")]
    Receivers(ListArgs),
    /// Image automation objects and their status.
    #[command(subcommand, alias = "images")]
    Image(ImageKind),
}

#[derive(Subcommand, Debug)]
enum ImageKind {
    /// ImageRepositories: their last scan.
    #[command(alias = "repositories")]
    Repository(ListArgs),
    /// ImagePolicies: the image and tag each selected.
    #[command(alias = "policies")]
    Policy(ListArgs),
    /// ImageUpdateAutomations: their last run.
    #[command(alias = "updates")]
    Update(ListArgs),
}

#[derive(Subcommand, Debug)]
enum ArtifactKind {
    /// ArtifactGenerators and their status.
    #[command(alias = "generator")]
    Generators(ListArgs),
}

#[derive(Args, Debug)]
struct AllArgs {
    /// List the objects of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only objects whose condition matches, as `ready=false` or `ready!=true`.
    #[arg(long)]
    status_selector: Option<String>,
    /// Only objects whose labels match, as `-l app=web` or `-l 'tier notin (db,cache)'`.
    #[arg(short = 'l', long)]
    label_selector: Option<String>,
    /// Not supported for `all`, as in flux: watch one kind.
    #[arg(short = 'w', long, hide = true)]
    watch: bool,
}

#[derive(Subcommand, Debug)]
enum SourceKind {
    /// GitRepository sources and their status.
    Git(ListArgs),
    /// HelmRepository sources and their status.
    Helm(ListArgs),
    /// HelmChart sources and their status.
    Chart(ListArgs),
    /// OCIRepository sources and their status.
    Oci(ListArgs),
    /// Bucket sources and their status.
    Bucket(ListArgs),
    /// Sources of every kind, each name prefixed with its kind.
    All(AllArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Only this object.
    name: Option<String>,
    /// List the objects of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only objects whose condition matches, as `ready=false` or `ready!=true`.
    #[arg(long)]
    status_selector: Option<String>,
    /// Only objects whose labels match, as `-l app=web` or `-l 'tier notin (db,cache)'`.
    #[arg(short = 'l', long)]
    label_selector: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// After listing, print a row for every change until --timeout or Ctrl-C.
    #[arg(short = 'w', long)]
    watch: bool,
}

impl ListArgs {
    /// The objects of every namespace with `-A`, else of `--namespace`.
    fn api<K>(&self, client: &kube::Client, kube: &KubeArgs) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        if self.all_namespaces {
            Api::all(client.clone())
        } else {
            Api::namespaced(client.clone(), &kube.namespace)
        }
    }

    /// `--label-selector`, checked as flux does before anything is asked of the cluster (the
    /// API server filters by it).
    fn labels(&self) -> anyhow::Result<Option<ferroflux_schema::labels::LabelSelector>> {
        self.label_selector
            .as_deref()
            .map(|s| {
                ferroflux_schema::labels::LabelSelector::parse(s)
                    .map_err(|e| anyhow!("unable to parse label selector: {e}"))
            })
            .transpose()
    }

    /// The list request: `--label-selector` and, when given, the name.
    fn params(&self) -> ListParams {
        let mut params = ListParams::default();
        if let Some(labels) = &self.label_selector {
            params = params.labels(labels);
        }
        if let Some(name) = &self.name {
            params = params.fields(&format!("metadata.name={name}"));
        }
        params
    }

    /// Whether `--status-selector` (if given) keeps the object of row `r`.
    fn keeps(&self, r: &Row) -> anyhow::Result<bool> {
        match &self.status_selector {
            Some(sel) => matches_selector(&r.conditions, sel),
            None => Ok(true),
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
    Yaml,
}

pub async fn run(args: GetArgs) -> anyhow::Result<ExitCode> {
    if let GetWhat::All(all) = &args.what
        && all.watch
    {
        return Err(anyhow!("expected a single resource type, but found all"));
    }
    async {
        match &args.what {
            GetWhat::Kustomizations(list) if list.watch => {
                return watch::<Kustomization>(&args.kube, list, ks_row).await;
            }
            GetWhat::Sources(SourceKind::Git(list)) if list.watch => {
                return watch::<GitRepository>(&args.kube, list, git_row).await;
            }
            GetWhat::Helmreleases(list) if list.watch => {
                return watch::<HelmRelease>(&args.kube, list, hr_row).await;
            }
            GetWhat::Sources(SourceKind::Helm(list)) if list.watch => {
                return watch::<HelmRepository>(&args.kube, list, helm_row).await;
            }
            GetWhat::Sources(SourceKind::Chart(list)) if list.watch => {
                return watch::<HelmChart>(&args.kube, list, chart_row).await;
            }
            GetWhat::Sources(SourceKind::Oci(list)) if list.watch => {
                return watch::<OCIRepository>(&args.kube, list, oci_row).await;
            }
            GetWhat::Sources(SourceKind::Bucket(list)) if list.watch => {
                return watch::<ferroflux_api::Bucket>(&args.kube, list, bucket_row).await;
            }
            GetWhat::Sources(SourceKind::All(all)) if all.watch => {
                return Err(anyhow!("expected a single resource type, but found all"));
            }
            GetWhat::Artifacts(ArtifactKind::Generators(list)) if list.watch => {
                return Err(anyhow!(
                    "--watch is not supported yet for artifact generators"
                ));
            }
            GetWhat::Alerts(list) if list.watch => {
                let client = Cluster::connect(&args.kube).await?.client;
                let row = move |a: &Alert| {
                    notification_row(a, blocking(alert_problem(&client, a, &mut HashMap::new())))
                };
                return watch_columns(&args.kube, list, row, &notification_dropped::<Alert>(list))
                    .await;
            }
            GetWhat::AlertProviders(list) if list.watch => {
                let client = Cluster::connect(&args.kube).await?.client;
                let row =
                    move |p: &Provider| notification_row(p, blocking(provider_problem(&client, p)));
                let dropped = notification_dropped::<Provider>(list);
                return watch_columns(&args.kube, list, row, &dropped).await;
            }
            GetWhat::Receivers(list) if list.watch => {
                let row = |r: &Receiver| notification_row(r, None);
                let dropped = notification_dropped::<Receiver>(list);
                return watch_columns(&args.kube, list, row, &dropped).await;
            }
            _ => {}
        }
        let client = Cluster::connect(&args.kube).await?.client;
        let out = match &args.what {
            GetWhat::Kustomizations(list) => {
                let items: Vec<Kustomization> = fetch(&client, &args.kube, list).await?;
                render(&items, list, ks_row)?
            }
            GetWhat::Sources(SourceKind::Git(list)) => {
                let items: Vec<GitRepository> = fetch(&client, &args.kube, list).await?;
                render(&items, list, git_row)?
            }
            GetWhat::Helmreleases(list) => {
                let items: Vec<HelmRelease> = fetch(&client, &args.kube, list).await?;
                render(&items, list, hr_row)?
            }
            GetWhat::Sources(SourceKind::Helm(list)) => {
                let items: Vec<HelmRepository> = fetch(&client, &args.kube, list).await?;
                render(&items, list, helm_row)?
            }
            GetWhat::Sources(SourceKind::Chart(list)) => {
                let items: Vec<HelmChart> = fetch(&client, &args.kube, list).await?;
                render(&items, list, chart_row)?
            }
            GetWhat::Sources(SourceKind::Oci(list)) => {
                let items: Vec<OCIRepository> = fetch(&client, &args.kube, list).await?;
                render(&items, list, oci_row)?
            }
            GetWhat::Sources(SourceKind::Bucket(list)) => {
                let items: Vec<ferroflux_api::Bucket> = fetch(&client, &args.kube, list).await?;
                render(&items, list, bucket_row)?
            }
            GetWhat::Sources(SourceKind::All(all)) => {
                let list = all.list_args();
                all_sources(&client, &args.kube, &list).await?
            }
            GetWhat::Artifacts(ArtifactKind::Generators(list)) => {
                let items: Vec<ArtifactGenerator> = fetch(&client, &args.kube, list).await?;
                generators(&items, list)?
            }
            GetWhat::Alerts(list) => {
                let items: Vec<Alert> = fetch(&client, &args.kube, list).await?;
                let problems = alert_problems(&client, &items).await;
                notifications(&items, list, &args.kube, false, &problems)?
            }
            GetWhat::AlertProviders(list) => {
                let items: Vec<Provider> = fetch(&client, &args.kube, list).await?;
                let problems = provider_problems(&client, &items).await;
                notifications(&items, list, &args.kube, false, &problems)?
            }
            GetWhat::Receivers(list) => {
                let items: Vec<Receiver> = fetch(&client, &args.kube, list).await?;
                notifications(&items, list, &args.kube, false, &Problems::new())?
            }
            GetWhat::Image(kind) => images(&client, &args.kube, kind).await?,
            GetWhat::All(all) => {
                let list = all.list_args();
                let mut out = all_sources(&client, &args.kube, &list).await?;
                // flux lists HelmReleases before Kustomizations.
                let hr: Vec<HelmRelease> = fetch(&client, &args.kube, &list)
                    .await
                    .or_else(crd_missing_is_empty)?;
                out.push_str(&render_all(&hr, &list, hr_row)?);
                let ks: Vec<Kustomization> = fetch(&client, &args.kube, &list).await?;
                out.push_str(&render_all(&ks, &list, ks_row)?);
                // Then the notification kinds, in flux's order.
                let receivers: Vec<Receiver> = fetch(&client, &args.kube, &list)
                    .await
                    .or_else(crd_missing_is_empty)?;
                out.push_str(&notifications(
                    &receivers,
                    &list,
                    &args.kube,
                    true,
                    &Problems::new(),
                )?);
                let providers: Vec<Provider> = fetch(&client, &args.kube, &list)
                    .await
                    .or_else(crd_missing_is_empty)?;
                let problems = provider_problems(&client, &providers).await;
                out.push_str(&notifications(
                    &providers, &list, &args.kube, true, &problems,
                )?);
                let alerts: Vec<Alert> = fetch(&client, &args.kube, &list)
                    .await
                    .or_else(crd_missing_is_empty)?;
                let problems = alert_problems(&client, &alerts).await;
                out.push_str(&notifications(&alerts, &list, &args.kube, true, &problems)?);
                out
            }
        };
        print!("{out}");
        Ok::<_, anyhow::Error>(())
    }
    .await?;
    Ok(ExitCode::SUCCESS)
}

impl AllArgs {
    /// The listing options of one kind's section.
    fn list_args(&self) -> ListArgs {
        ListArgs {
            name: None,
            all_namespaces: self.all_namespaces,
            status_selector: self.status_selector.clone(),
            label_selector: self.label_selector.clone(),
            output: Output::Table,
            watch: false,
        }
    }
}

/// `get sources all`: one section per source kind, in flux's order.
async fn all_sources(
    client: &kube::Client,
    kube: &KubeArgs,
    list: &ListArgs,
) -> anyhow::Result<String> {
    let mut out = String::new();
    let git: Vec<GitRepository> = fetch(client, kube, list).await?;
    out.push_str(&render_all(&git, list, git_row)?);
    let helm: Vec<HelmRepository> = fetch(client, kube, list)
        .await
        .or_else(crd_missing_is_empty)?;
    out.push_str(&render_all(&helm, list, helm_row)?);
    let charts: Vec<HelmChart> = fetch(client, kube, list)
        .await
        .or_else(crd_missing_is_empty)?;
    out.push_str(&render_all(&charts, list, chart_row)?);
    let oci: Vec<OCIRepository> = fetch(client, kube, list)
        .await
        .or_else(crd_missing_is_empty)?;
    out.push_str(&render_all(&oci, list, oci_row)?);
    let buckets: Vec<ferroflux_api::Bucket> = fetch(client, kube, list)
        .await
        .or_else(crd_missing_is_empty)?;
    out.push_str(&render_all(&buckets, list, bucket_row)?);
    Ok(out)
}

/// `get artifact generators`: flux's columns for them have no revision (NAME, SUSPENDED,
/// READY, MESSAGE); suspended is the `source.extensions.fluxcd.io/reconcile: Disabled`
/// annotation.
fn generators(items: &[ArtifactGenerator], list: &ListArgs) -> anyhow::Result<String> {
    let row = |g: &ArtifactGenerator| {
        let status = g.status.clone().unwrap_or_default();
        Row {
            revision: String::new(),
            suspended: g.is_disabled(),
            conditions: status.conditions.unwrap_or_default(),
        }
    };
    if !matches!(list.output, Output::Table) {
        return render(items, list, row);
    }
    let mut kept = Vec::new();
    for g in items {
        let r = row(g);
        if list.keeps(&r)? {
            kept.push((g, r));
        }
    }
    kept.sort_by_key(|(g, _)| (g.namespace(), g.name_any()));
    let revision_at = 1 + usize::from(list.all_namespaces);
    let rows: Vec<Vec<String>> = kept
        .iter()
        .map(|(g, r)| {
            let mut c = cells(*g, r, list.all_namespaces);
            c.remove(revision_at);
            c
        })
        .collect();
    let mut headers = headers(list.all_namespaces);
    headers.remove(revision_at);
    Ok(flux_table(&headers, &rows))
}

/// `get alerts|alert-providers|receivers` and their sections of `get all`, with flux's columns:
/// no revision, and no suspended column for Providers. Alerts and Providers have no status
/// (notification v1beta3): flux shows them ready (`Alert is Ready`), so does ferroflux unless
/// `problems` names why one cannot send (a Secret or a key missing, read as the dispatcher reads
/// them): then Ready is False with that message. Like flux, and unlike the other kinds'
/// listings, an empty list is an error outside `get all`.
fn notifications<K: FluxObject>(
    items: &[K],
    list: &ListArgs,
    kube: &KubeArgs,
    in_all: bool,
    problems: &Problems,
) -> anyhow::Result<String> {
    let row = |o: &K| {
        let key = (o.namespace().unwrap_or_default(), o.name_any());
        notification_row(o, problems.get(&key).cloned())
    };
    if items.is_empty() && !in_all {
        let ns = if list.all_namespaces {
            "any".to_string()
        } else {
            format!("{:?}", kube.namespace)
        };
        return Err(anyhow!("no {} objects found in {ns} namespace", K::KIND));
    }
    if !in_all && !matches!(list.output, Output::Table) {
        return render(items, list, row);
    }
    let mut kept = Vec::new();
    for o in items {
        let r = row(o);
        if list.keeps(&r)? {
            kept.push((o, r));
        }
    }
    if in_all && kept.is_empty() {
        return Ok(String::new());
    }
    kept.sort_by_key(|(o, _)| (o.namespace(), o.name_any()));
    let name_at = usize::from(list.all_namespaces);
    let dropped = &notification_dropped::<K>(list);
    let rows: Vec<Vec<String>> = kept
        .iter()
        .map(|(o, r)| {
            let mut c = cells(*o, r, list.all_namespaces);
            if in_all {
                c[name_at] = format!("{}/{}", K::KIND.to_lowercase(), c[name_at]);
            }
            without(c, dropped)
        })
        .collect();
    let headers = without(headers(list.all_namespaces), dropped);
    let table = flux_table(&headers, &rows);
    Ok(if in_all { table + "\n" } else { table })
}

/// `cells` without the columns at `dropped`.
fn without<T>(cells: Vec<T>, dropped: &[usize]) -> Vec<T> {
    cells
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dropped.contains(i))
        .map(|(_, c)| c)
        .collect()
}

fn oci_row(o: &OCIRepository) -> Row {
    let status = o.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: o.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

fn bucket_row(b: &ferroflux_api::Bucket) -> Row {
    let status = b.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: b.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

fn helm_row(h: &HelmRepository) -> Row {
    let status = h.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: h.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

fn chart_row(c: &HelmChart) -> Row {
    let status = c.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: c.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

fn ks_row(k: &Kustomization) -> Row {
    let status = k.status.clone().unwrap_or_default();
    Row {
        revision: status.last_applied_revision.unwrap_or_default(),
        suspended: k.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

/// A cluster without the HelmRelease CRD (Flux's older installs, `--no-helm`) has none: `get
/// all` lists what it has.
fn crd_missing_is_empty<K>(e: anyhow::Error) -> anyhow::Result<Vec<K>> {
    match e.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        _ => Err(e),
    }
}

/// flux's HelmRelease revision: the chart version of the newest release in the history, else
/// the last attempted one.
fn hr_row(h: &HelmRelease) -> Row {
    let status = h.status.clone().unwrap_or_default();
    let revision = status
        .history
        .as_ref()
        .and_then(|history| history.first())
        .map(|s| s.chart_version.clone())
        .or(status.last_attempted_revision)
        .unwrap_or_default();
    Row {
        revision,
        suspended: h.spec.suspend.unwrap_or(false),
        conditions: status.conditions.unwrap_or_default(),
    }
}

fn git_row(g: &GitRepository) -> Row {
    let status = g.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: g.spec.suspend.unwrap_or(false),
        conditions: hex_truncated(status.conditions.unwrap_or_default()),
    }
}

/// `get all`'s section for one kind: names as `kind/name`, a blank line after, nothing at all
/// when no object is left.
fn render_all<K: Serialize + ResourceExt + Resource<DynamicType = ()>>(
    items: &[K],
    list: &ListArgs,
    row: impl Fn(&K) -> Row,
) -> anyhow::Result<String> {
    let kind = K::kind(&()).to_lowercase();
    let mut rows = Vec::new();
    for item in items {
        let r = row(item);
        if !list.keeps(&r)? {
            continue;
        }
        let mut cells = cells(item, &r, list.all_namespaces);
        let name_at = usize::from(list.all_namespaces);
        cells[name_at] = format!("{kind}/{}", cells[name_at]);
        rows.push(cells);
    }
    if rows.is_empty() {
        return Ok(String::new());
    }
    Ok(flux_table(&headers(list.all_namespaces), &rows) + "\n")
}

/// Lists, then prints a row for every change, as `flux get --watch` does: the header with the
/// first row only, each later row padded on its own. The watch outlives closed and broken
/// connections and 410s ([`crate::output::watchloop`]): after a re-list only the objects that changed
/// meanwhile get a row. Ends with exit 0 at --timeout or on Ctrl-C.
async fn watch<K>(kube: &KubeArgs, list: &ListArgs, row: fn(&K) -> Row) -> anyhow::Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + 'static,
{
    watch_columns(kube, list, row, &[]).await
}

/// [`watch`] without the columns at `dropped` (the notification kinds' tables).
async fn watch_columns<K>(
    kube: &KubeArgs,
    list: &ListArgs,
    row: impl Fn(&K) -> Row,
    dropped: &[usize],
) -> anyhow::Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + 'static,
{
    use crate::output::watchloop::{Change, list_and_watch, write_now};
    if !matches!(list.output, Output::Table) {
        return Err(anyhow!("--watch prints tables only; drop -o"));
    }
    // Listened for before anything is printed, so Ctrl-C always ends the command cleanly.
    let interrupt = crate::fluxobj::listen_for_interrupt();
    // The watch asks by name only: the labels are matched here, on every change.
    let labels = list.labels()?;
    // A watch holds its connection open until --timeout: no read timeout on it.
    let cluster = Cluster::connect_watching(kube).await?;
    let api: Api<K> = list.api(&cluster.client, kube);
    let what = format!("{} objects", K::kind(&()));
    let fields = list.name.as_ref().map(|n| format!("metadata.name={n}"));
    let mut table = StreamedRows::new(without(headers(list.all_namespaces), dropped));
    let report = |changes: Vec<Change<K>>| -> anyhow::Result<()> {
        let mut objects: Vec<K> = changes
            .into_iter()
            .map(|c| match c {
                Change::Applied(o) | Change::Deleted(o) => o,
            })
            .collect();
        objects.sort_by_key(|k| (k.namespace(), k.name_any()));
        let mut text = String::new();
        for obj in &objects {
            let r = row(obj);
            if !list.keeps(&r)?
                || labels
                    .as_ref()
                    .is_some_and(|l| !l.matches(&serde_json::to_value(obj).unwrap_or_default()))
            {
                continue;
            }
            text.push_str(&table.row(without(cells(obj, &r, list.all_namespaces), dropped)));
        }
        write_now(&text)
    };
    list_and_watch(&cluster, &api, fields.as_deref(), &what, interrupt, report).await
}

async fn fetch<K>(client: &kube::Client, kube: &KubeArgs, list: &ListArgs) -> anyhow::Result<Vec<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    list.labels()?;
    let api: Api<K> = list.api(client, kube);
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let items = match &list.name {
        // Across namespaces a name may be there more than once, and a label selector may leave
        // it out: a listing, as flux's.
        Some(name) if list.all_namespaces || list.label_selector.is_some() => {
            let items = api
                .list(&list.params())
                .await
                .with_context(|| format!("listing {kind} objects"))?
                .items;
            if items.is_empty() {
                let ns = if list.all_namespaces {
                    "any".to_string()
                } else {
                    format!("{:?}", kube.namespace)
                };
                return Err(anyhow!(
                    "{kind} object '{name}' not found in {ns} namespace"
                ));
            }
            items
        }
        Some(name) => vec![
            api.get_opt(name)
                .await
                .with_context(|| format!("getting {kind} {name}"))?
                .ok_or_else(|| {
                    anyhow!(
                        "{kind} object '{name}' not found in \"{}\" namespace",
                        kube.namespace
                    )
                })?,
        ],
        None => {
            api.list(&list.params())
                .await
                .with_context(|| format!("listing {kind} objects"))?
                .items
        }
    };
    Ok(items)
}

/// The conditions with flux's `TruncateHex` applied to their messages: every word of 40 to 128
/// lower-case hex digits (a SHA-1 to SHA-512 hash) cut to its first 8, as flux shows the
/// messages of sources and Kustomizations (not of HelmReleases).
fn hex_truncated(mut conditions: Vec<Condition>) -> Vec<Condition> {
    for c in &mut conditions {
        c.message = truncate_hex(&c.message);
    }
    conditions
}

fn truncate_hex(s: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find(word) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(|c: char| !word(c)).unwrap_or(tail.len());
        let w = &tail[..end];
        let hash = (40..=128).contains(&w.len())
            && w.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        out.push_str(if hash { &w[..8] } else { w });
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// What a row of `flux get` needs from an object.
struct Row {
    revision: String,
    suspended: bool,
    conditions: Vec<Condition>,
}

/// flux's `--status-selector`: `type=status` keeps the objects whose condition of that type
/// (the last one, any case) has that status; `type!=status` keeps every other object, those
/// without the condition too.
fn matches_selector(conditions: &[Condition], selector: &str) -> anyhow::Result<bool> {
    let (negated, (type_, status)) = match selector.split_once("!=") {
        Some(parts) => (true, parts),
        None => (
            false,
            selector.split_once('=').ok_or_else(|| {
                anyhow!(
                    "expected status selector in type=status or type!=status format, but \
                     found: {selector}"
                )
            })?,
        ),
    };
    let matched = conditions
        .iter()
        .rev()
        .find(|c| c.type_.eq_ignore_ascii_case(type_))
        .is_some_and(|c| c.status.eq_ignore_ascii_case(status));
    Ok(matched != negated)
}

fn render<K: Serialize + ResourceExt>(
    items: &[K],
    list: &ListArgs,
    row: impl Fn(&K) -> Row,
) -> anyhow::Result<String> {
    let mut kept = Vec::new();
    for item in items {
        let r = row(item);
        if !list.keeps(&r)? {
            continue;
        }
        kept.push((item, r));
    }
    kept.sort_by(|(a, _), (b, _)| {
        (a.namespace(), a.name_any()).cmp(&(b.namespace(), b.name_any()))
    });
    match list.output {
        Output::Json => {
            let objects: Vec<&K> = kept.iter().map(|(k, _)| *k).collect();
            Ok(serde_json::to_string_pretty(
                &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects}),
            )? + "\n")
        }
        Output::Yaml => {
            let objects: Vec<&K> = kept.iter().map(|(k, _)| *k).collect();
            Ok(serde_saphyr::to_string(
                &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects}),
            )?)
        }
        Output::Table => {
            let rows: Vec<Vec<String>> = kept
                .iter()
                .map(|(k, r)| cells(*k, r, list.all_namespaces))
                .collect();
            Ok(flux_table(&headers(list.all_namespaces), &rows))
        }
    }
}

fn headers(all_namespaces: bool) -> Vec<&'static str> {
    let mut headers = vec!["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"];
    if all_namespaces {
        headers.insert(0, "NAMESPACE");
    }
    headers
}

/// One row of `flux get`: revision shortened, a missing Ready condition read as flux does.
fn cells<K: ResourceExt>(k: &K, r: &Row, all_namespaces: bool) -> Vec<String> {
    let ready = find_condition(&r.conditions, READY);
    let mut cells = vec![
        k.name_any(),
        short_revision(&r.revision),
        if r.suspended { "True" } else { "False" }.to_string(),
        ready.map_or("False".to_string(), |c| c.status.clone()),
        ready.map_or("waiting to be reconciled".to_string(), |c| {
            c.message.clone()
        }),
    ];
    if all_namespaces {
        cells.insert(0, k.namespace().unwrap_or_default());
    }
    cells
}

/// Why a listed Provider or Alert cannot send, by (namespace, name).
type Problems = BTreeMap<(String, String), String>;

/// The row of a notification object: its conditions (Receivers), or for the static kinds flux's
/// `<Kind> is Ready` unless `problem` says why it cannot send.
fn notification_row<K: FluxObject>(o: &K, problem: Option<String>) -> Row {
    let conditions = if K::STATIC {
        let (status, reason, message) = match problem {
            Some(message) => ("False", "NotificationConfigInvalid", message),
            None => ("True", "", format!("{} is Ready", K::KIND)),
        };
        vec![Condition {
            type_: READY.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }]
    } else {
        o.conditions().to_vec()
    };
    Row {
        revision: String::new(),
        suspended: o.suspended(),
        conditions,
    }
}

/// The columns flux's notification tables leave out: the revision; a Provider's suspended too.
fn notification_dropped<K: FluxObject>(list: &ListArgs) -> Vec<usize> {
    let name_at = usize::from(list.all_namespaces);
    if K::KIND == "Provider" {
        vec![name_at + 1, name_at + 2]
    } else {
        vec![name_at + 1]
    }
}

/// Runs `f` to its end from a synchronous row function (a watch's report) on the CLI's
/// multi-threaded runtime.
fn blocking<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

/// What the dispatcher would report for Provider `p`, read the same way (its Secrets, the keys
/// its type needs); `None` when it can send, or when this user may not read its Secrets (then
/// flux's row stands).
async fn provider_problem(client: &kube::Client, p: &Provider) -> Option<String> {
    let ns = p.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let mut found = BTreeMap::new();
    for name in config::secret_names(p) {
        match secrets.get_opt(&name).await {
            Ok(Some(secret)) => {
                let data = secret.data.unwrap_or_default();
                found.insert(name, data.into_iter().map(|(k, v)| (k, v.0)).collect());
            }
            Ok(None) => {}
            Err(_) => return None,
        }
    }
    config::provider_config(p, &ns, "", &found).err()
}

/// The problem of Alert `a`: its Provider missing or unable to send. `seen` keeps each
/// Provider's answer for the other Alerts naming it.
async fn alert_problem(
    client: &kube::Client,
    a: &Alert,
    seen: &mut HashMap<(String, String), Option<String>>,
) -> Option<String> {
    let ns = a.namespace().unwrap_or_default();
    let name = a.spec.provider_ref.name.clone();
    let key = (ns.clone(), name.clone());
    if let Some(problem) = seen.get(&key) {
        return problem.clone();
    }
    let providers: Api<Provider> = Api::namespaced(client.clone(), &ns);
    let problem = match providers.get_opt(&name).await {
        Ok(Some(p)) => provider_problem(client, &p)
            .await
            .map(|m| format!("provider '{name}': {m}")),
        Ok(None) => Some(format!("provider '{ns}/{name}' not found")),
        Err(_) => None,
    };
    seen.insert(key, problem.clone());
    problem
}

async fn provider_problems(client: &kube::Client, items: &[Provider]) -> Problems {
    let mut problems = Problems::new();
    for p in items {
        if let Some(m) = provider_problem(client, p).await {
            problems.insert((p.namespace().unwrap_or_default(), p.name_any()), m);
        }
    }
    problems
}

async fn alert_problems(client: &kube::Client, items: &[Alert]) -> Problems {
    let mut problems = Problems::new();
    let mut seen = HashMap::new();
    for a in items {
        if let Some(m) = alert_problem(client, a, &mut seen).await {
            problems.insert((a.namespace().unwrap_or_default(), a.name_any()), m);
        }
    }
    problems
}

/// `get image repository|policy|update` with flux's columns: the ImageRepository's last scan
/// and suspension, the ImagePolicy's selected image and tag, the automation's last run and
/// suspension; Ready and its message uncut (flux shows digests whole there).
async fn images(
    client: &kube::Client,
    kube: &KubeArgs,
    kind: &ImageKind,
) -> anyhow::Result<String> {
    use ferroflux_api::{ImagePolicy, ImageRepository, ImageUpdateAutomation};
    let title = |b: bool| if b { "True" } else { "False" }.to_string();
    match kind {
        ImageKind::Repository(list) => {
            let items: Vec<ImageRepository> = fetch(client, kube, list).await?;
            image_table(&items, list, &["LAST SCAN", "SUSPENDED"], |r| {
                let scan = r.status.as_ref().and_then(|s| s.last_scan_result.as_ref());
                vec![
                    scan.and_then(|s| s.scan_time.clone()).unwrap_or_default(),
                    title(r.suspended()),
                ]
            })
        }
        ImageKind::Policy(list) => {
            let items: Vec<ImagePolicy> = fetch(client, kube, list).await?;
            image_table(&items, list, &["IMAGE", "TAG"], |p| {
                let latest = p.status.as_ref().and_then(|s| s.latest_ref.as_ref());
                vec![
                    latest.map(|l| l.name.clone()).unwrap_or_default(),
                    latest.map(|l| l.tag.clone()).unwrap_or_default(),
                ]
            })
        }
        ImageKind::Update(list) => {
            let items: Vec<ImageUpdateAutomation> = fetch(client, kube, list).await?;
            image_table(&items, list, &["LAST RUN", "SUSPENDED"], |u| {
                vec![
                    u.status
                        .as_ref()
                        .and_then(|s| s.last_automation_run_time.clone())
                        .unwrap_or_default(),
                    title(u.suspended()),
                ]
            })
        }
    }
}

fn image_table<K: FluxObject>(
    items: &[K],
    list: &ListArgs,
    columns: &[&'static str],
    extra: impl Fn(&K) -> Vec<String>,
) -> anyhow::Result<String> {
    let row = |o: &K| Row {
        revision: String::new(),
        suspended: o.suspended(),
        conditions: o.conditions().to_vec(),
    };
    if !matches!(list.output, Output::Table) {
        return render(items, list, row);
    }
    let mut kept = Vec::new();
    for o in items {
        let r = row(o);
        if list.keeps(&r)? {
            kept.push((o, r));
        }
    }
    kept.sort_by_key(|(o, _)| (o.namespace(), o.name_any()));
    let rows: Vec<Vec<String>> = kept
        .iter()
        .map(|(o, r)| {
            // NAME (after NAMESPACE with -A), then the kind's columns, then READY and MESSAGE.
            let base = cells(*o, r, list.all_namespaces);
            let name_end = 1 + usize::from(list.all_namespaces);
            let mut c = base[..name_end].to_vec();
            c.extend(extra(o));
            c.extend(base[base.len() - 2..].iter().cloned());
            c
        })
        .collect();
    let mut headers = vec!["NAME"];
    if list.all_namespaces {
        headers.insert(0, "NAMESPACE");
    }
    headers.extend_from_slice(columns);
    headers.extend(["READY", "MESSAGE"]);
    Ok(flux_table(&headers, &rows))
}

#[cfg(test)]
mod hex_tests {
    #[test]
    fn truncates_hashes_as_flux() {
        let sha1 = "16cfcc0b9066b3234dda29927ac1c19860d9663f";
        let sha256 = "c2448c95e262b10f9c1137bf1472f51c04dffca76966ff15eff409d0b300c0b0";
        for (s, want) in [
            (sha1.to_string(), "16cfcc0b".to_string()),
            (format!("tag@sha256:{sha256}"), "tag@sha256:c2448c95".into()),
            (format!("HEAD/{sha1}"), "HEAD/16cfcc0b".into()),
            (
                format!("a hash '{sha256}' in it"),
                "a hash 'c2448c95' in it".into(),
            ),
            ("f".repeat(129), "f".repeat(129)),
            ("f".repeat(39), "f".repeat(39)),
            (format!("x{sha1}"), format!("x{sha1}")),
            (sha1.to_uppercase(), sha1.to_uppercase()),
            ("no hash here".into(), "no hash here".into()),
            (String::new(), String::new()),
        ] {
            assert_eq!(super::truncate_hex(&s), want, "{s}");
        }
    }
}
