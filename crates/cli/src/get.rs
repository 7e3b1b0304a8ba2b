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
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Table,
    Json,
    Yaml,
}

pub fn run(args: GetArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let (client, _) = args.kube.client().await?;
        let out = match &args.what {
            GetWhat::Kustomizations(list) => {
                let items: Vec<Kustomization> = fetch(&client, &args.kube, list).await?;
                render(&items, list, |k| {
                    let status = k.status.clone().unwrap_or_default();
                    Row {
                        revision: status.last_applied_revision.unwrap_or_default(),
                        suspended: k.spec.suspend.unwrap_or(false),
                        conditions: status.conditions.unwrap_or_default(),
                    }
                })?
            }
            GetWhat::Sources(SourceKind::Git(list)) => {
                let items: Vec<GitRepository> = fetch(&client, &args.kube, list).await?;
                render(&items, list, |g| {
                    let status = g.status.clone().unwrap_or_default();
                    Row {
                        revision: status.artifact.map(|a| a.revision).unwrap_or_default(),
                        suspended: g.spec.suspend.unwrap_or(false),
                        conditions: status.conditions.unwrap_or_default(),
                    }
                })?
            }
        };
        print!("{out}");
        Ok(())
    })
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
            let mut headers = vec!["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"];
            if list.all_namespaces {
                headers.insert(0, "NAMESPACE");
            }
            let rows: Vec<Vec<String>> = kept
                .iter()
                .map(|(k, r)| {
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
                    if list.all_namespaces {
                        cells.insert(0, k.namespace().unwrap_or_default());
                    }
                    cells
                })
                .collect();
            Ok(flux_table(&headers, &rows))
        }
    }
}
