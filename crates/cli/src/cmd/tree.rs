//! `ferroflux tree kustomization NAME`: what a Kustomization applied, recursing into the
//! Kustomizations it applied, drawn as the flux CLI draws it.

use crate::cluster::{Cluster, KubeArgs};
use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand};
use ferroflux_api::{Kustomization, ObjectId};
use kube::ResourceExt;
use kube::api::Api;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TreeArgs {
    #[command(subcommand)]
    what: TreeWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum TreeWhat {
    /// The objects a Kustomization applied.
    #[command(visible_alias = "ks")]
    Kustomization {
        name: String,
        /// Only Flux objects (Kustomizations and sources).
        #[arg(long)]
        compact: bool,
    },
}

/// A node of the tree: the object and what it applied.
#[derive(Debug, PartialEq)]
pub struct Node {
    pub label: String,
    pub children: Vec<Node>,
}

const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";

/// The tree under a Kustomization. `lookup` finds applied Kustomizations by namespace and
/// name; with `compact` only objects of Flux's API groups are kept.
pub fn build_tree(
    root: &Kustomization,
    lookup: &dyn Fn(&str, &str) -> Option<Kustomization>,
    compact: bool,
) -> Node {
    let mut seen = BTreeSet::new();
    node_for(root, lookup, compact, &mut seen)
}

fn node_for(
    ks: &Kustomization,
    lookup: &dyn Fn(&str, &str) -> Option<Kustomization>,
    compact: bool,
    seen: &mut BTreeSet<(String, String)>,
) -> Node {
    let ns = ks.namespace().unwrap_or_default();
    let name = ks.name_any();
    seen.insert((ns.clone(), name.clone()));
    let mut children = Vec::new();
    let entries = ks
        .status
        .as_ref()
        .and_then(|s| s.inventory.as_ref())
        .map(|i| i.entries.clone())
        .unwrap_or_default();
    for entry in entries {
        let Ok(id) = ObjectId::parse(&entry.id) else {
            continue;
        };
        if compact && !id.group.ends_with(".toolkit.fluxcd.io") {
            continue;
        }
        let label = id.display_name();
        let child = if id.group == KUSTOMIZE_GROUP
            && id.kind == "Kustomization"
            && !seen.contains(&(id.namespace.clone(), id.name.clone()))
        {
            match lookup(&id.namespace, &id.name) {
                Some(child) => node_for(&child, lookup, compact, seen),
                None => Node {
                    label,
                    children: vec![],
                },
            }
        } else {
            Node {
                label,
                children: vec![],
            }
        };
        children.push(child);
    }
    Node {
        label: format!("Kustomization/{ns}/{name}"),
        children,
    }
}

/// Draws a tree with `├── `, `│   `, `└── ` as flux does, blank line after it included.
pub fn render(root: &Node) -> String {
    let mut out = format!("{}\n", root.label);
    draw(&root.children, "", &mut out);
    out.push('\n');
    out
}

fn draw(children: &[Node], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        out.push_str(prefix);
        out.push_str(if last { "└── " } else { "├── " });
        out.push_str(&child.label);
        out.push('\n');
        let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
        draw(&child.children, &deeper, out);
    }
}

pub async fn run(args: TreeArgs) -> anyhow::Result<ExitCode> {
    async {
        let client = Cluster::connect(&args.kube).await?.client;
        let TreeWhat::Kustomization { name, compact } = &args.what;
        let api: Api<Kustomization> = Api::namespaced(client.clone(), &args.kube.namespace);
        let root = api
            .get_opt(name)
            .await
            .with_context(|| format!("getting Kustomization {name}"))?
            .ok_or_else(|| {
                anyhow!(
                    "Kustomization object '{name}' not found in \"{}\" namespace",
                    args.kube.namespace
                )
            })?;
        // Every Kustomization of the cluster, fetched once, answers the recursion.
        let all: BTreeMap<(String, String), Kustomization> = Api::<Kustomization>::all(client)
            .list(&Default::default())
            .await
            .context("listing Kustomizations")?
            .items
            .into_iter()
            .map(|k| ((k.namespace().unwrap_or_default(), k.name_any()), k))
            .collect();
        let lookup = |ns: &str, n: &str| all.get(&(ns.to_string(), n.to_string())).cloned();
        print!("{}", render(&build_tree(&root, &lookup, *compact)));
        Ok::<_, anyhow::Error>(())
    }
    .await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/tree/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path)
            .unwrap()
            .replace("{{ .fluxns }}", "flux-system")
    }

    fn objects() -> BTreeMap<String, Kustomization> {
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&fixture("kustomizations.yaml")).unwrap();
        docs.into_iter()
            .filter(|d| d["kind"] == "Kustomization")
            .map(|d| {
                let k: Kustomization = serde_json::from_value(d).unwrap();
                (k.name_any(), k)
            })
            .collect()
    }

    fn tree(name: &str, compact: bool) -> String {
        let all = objects();
        let lookup = |_: &str, n: &str| all.get(n).cloned();
        render(&build_tree(&all[name], &lookup, compact))
    }

    /// The flux CLI's goldens `tree.golden`, `tree-compact.golden` and `tree-empty.golden`.
    #[test]
    fn matches_flux_tree_goldens() {
        assert_eq!(tree("flux-system", false), fixture("tree.golden"));
        assert_eq!(tree("flux-system", true), fixture("tree-compact.golden"));
        assert_eq!(tree("empty", false), fixture("tree-empty.golden"));
    }
}
