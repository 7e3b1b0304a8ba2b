//! `ferroflux get`: Flux objects as the flux CLI lists them.

use crate::kubecontext::KubeArgs;
use crate::table::flux_table;
use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use ferroflux_api::conditions::{READY, find_condition};
use ferroflux_api::{GitRepository, Kustomization, short_revision};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

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
    /// Sources and their status.
    #[command(subcommand)]
    Sources(SourceKind),
    /// Every Flux object of the namespace: sources first, then Kustomizations.
    All(AllArgs),
}

#[derive(Args, Debug)]
struct AllArgs {
    /// List the objects of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only objects whose condition matches, as `ready=false`.
    #[arg(long)]
    status_selector: Option<String>,
    /// Not supported for `all`, as in flux: watch one kind.
    #[arg(short = 'w', long, hide = true)]
    watch: bool,
}

#[derive(Subcommand, Debug)]
enum SourceKind {
    /// GitRepository sources and their status.
    Git(ListArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Only this object.
    name: Option<String>,
    /// List the objects of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only objects whose condition matches, as `ready=false`.
    #[arg(long)]
    status_selector: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// After listing, print a row for every change until --timeout or Ctrl-C.
    #[arg(short = 'w', long)]
    watch: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
    Yaml,
}

pub fn run(args: GetArgs) -> anyhow::Result<()> {
    if let GetWhat::All(all) = &args.what
        && all.watch
    {
        return Err(anyhow!("expected a single resource type, but found all"));
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (client, _) = args.kube.client().await?;
        let out = match &args.what {
            // A watch holds its connection open until --timeout: no read timeout on it.
            GetWhat::Kustomizations(list) if list.watch => {
                let watching = crate::fluxobj::Cluster::connect_watching(&args.kube).await?;
                return watch::<Kustomization>(&watching.client, &args.kube, list, ks_row).await;
            }
            GetWhat::Sources(SourceKind::Git(list)) if list.watch => {
                let watching = crate::fluxobj::Cluster::connect_watching(&args.kube).await?;
                return watch::<GitRepository>(&watching.client, &args.kube, list, git_row).await;
            }
            GetWhat::Kustomizations(list) => {
                let items: Vec<Kustomization> = fetch(&client, &args.kube, list).await?;
                render(&items, list, ks_row)?
            }
            GetWhat::Sources(SourceKind::Git(list)) => {
                let items: Vec<GitRepository> = fetch(&client, &args.kube, list).await?;
                render(&items, list, git_row)?
            }
            GetWhat::All(all) => {
                let list = ListArgs {
                    name: None,
                    all_namespaces: all.all_namespaces,
                    status_selector: all.status_selector.clone(),
                    output: Output::Table,
                    watch: false,
                };
                let mut out = String::new();
                let git: Vec<GitRepository> = fetch(&client, &args.kube, &list).await?;
                out.push_str(&render_all(&git, &list, git_row)?);
                let ks: Vec<Kustomization> = fetch(&client, &args.kube, &list).await?;
                out.push_str(&render_all(&ks, &list, ks_row)?);
                out
            }
        };
        print!("{out}");
        Ok(())
    })
}

fn ks_row(k: &Kustomization) -> Row {
    let status = k.status.clone().unwrap_or_default();
    Row {
        revision: status.last_applied_revision.unwrap_or_default(),
        suspended: k.spec.suspend.unwrap_or(false),
        conditions: status.conditions.unwrap_or_default(),
    }
}

fn git_row(g: &GitRepository) -> Row {
    let status = g.status.clone().unwrap_or_default();
    Row {
        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
        suspended: g.spec.suspend.unwrap_or(false),
        conditions: status.conditions.unwrap_or_default(),
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
        if let Some(sel) = &list.status_selector
            && !matches_selector(&r.conditions, sel)?
        {
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
/// first row only, each later row padded on its own.
async fn watch<K>(
    client: &kube::Client,
    kube: &KubeArgs,
    list: &ListArgs,
    row: fn(&K) -> Row,
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
    use futures::StreamExt;
    use std::io::Write;
    if !matches!(list.output, Output::Table) {
        return Err(anyhow!("--watch prints tables only; drop -o"));
    }
    let api: Api<K> = if list.all_namespaces {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), &kube.namespace)
    };
    let kind = K::kind(&()).to_string();
    let mut lp = ListParams::default();
    if let Some(name) = &list.name {
        lp = lp.fields(&format!("metadata.name={name}"));
    }
    let listed = api
        .list(&lp)
        .await
        .with_context(|| format!("listing {kind} objects"))?;
    let mut first = true;
    let mut print = |obj: &K| -> anyhow::Result<()> {
        let r = row(obj);
        if let Some(sel) = &list.status_selector
            && !matches_selector(&r.conditions, sel)?
        {
            return Ok(());
        }
        let cells = cells(obj, &r, list.all_namespaces);
        let text = if first {
            first = false;
            flux_table(&headers(list.all_namespaces), &[cells])
        } else {
            // Flux's table writer with no header: each row padded to itself.
            let mut line = cells.join("\t");
            line.push_str("\t\n");
            line
        };
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        Ok(())
    };
    let mut items = listed.items;
    items.sort_by_key(|k| (k.namespace(), k.name_any()));
    for item in &items {
        print(item)?;
    }
    let version = listed.metadata.resource_version.unwrap_or_default();
    let mut wp = kube::api::WatchParams::default();
    if let Some(name) = &list.name {
        wp = wp.fields(&format!("metadata.name={name}"));
    }
    let stream = api
        .watch(&wp, &version)
        .await
        .with_context(|| format!("watching {kind} objects"))?;
    let mut stream = std::pin::pin!(stream);
    let deadline = tokio::time::sleep(kube.timeout()?);
    let mut deadline = std::pin::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => return Ok(()),
            _ = tokio::signal::ctrl_c() => return Ok(()),
            event = stream.next() => match event {
                None => return Ok(()),
                Some(Err(e)) => return Err(anyhow!("watching {kind} objects: {e}")),
                Some(Ok(kube::api::WatchEvent::Added(o)))
                | Some(Ok(kube::api::WatchEvent::Modified(o)))
                | Some(Ok(kube::api::WatchEvent::Deleted(o))) => print(&o)?,
                Some(Ok(kube::api::WatchEvent::Error(e))) => {
                    return Err(anyhow!("watching {kind} objects: {}", e.message));
                }
                Some(Ok(_)) => {}
            }
        }
    }
}

async fn fetch<K>(client: &kube::Client, kube: &KubeArgs, list: &ListArgs) -> anyhow::Result<Vec<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = if list.all_namespaces {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), &kube.namespace)
    };
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let items = match &list.name {
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
            api.list(&ListParams::default())
                .await
                .with_context(|| format!("listing {kind} objects"))?
                .items
        }
    };
    Ok(items)
}

/// What a row of `flux get` needs from an object.
struct Row {
    revision: String,
    suspended: bool,
    conditions: Vec<Condition>,
}

fn matches_selector(conditions: &[Condition], selector: &str) -> anyhow::Result<bool> {
    let (type_, status) = selector
        .split_once('=')
        .ok_or_else(|| anyhow!("--status-selector must be <condition>=<status>, as ready=false"))?;
    Ok(conditions
        .iter()
        .any(|c| c.type_.eq_ignore_ascii_case(type_) && c.status.eq_ignore_ascii_case(status)))
}

fn render<K: Serialize + ResourceExt>(
    items: &[K],
    list: &ListArgs,
    row: impl Fn(&K) -> Row,
) -> anyhow::Result<String> {
    let mut kept = Vec::new();
    for item in items {
        let r = row(item);
        if let Some(sel) = &list.status_selector
            && !matches_selector(&r.conditions, sel)?
        {
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
