//! `ferroflux tree kustomization NAME`: what a Kustomization applied, recursing into the
//! Kustomizations it applied and listing what each HelmRelease it applied manages, drawn as the
//! flux CLI draws it. `ferroflux tree helmrelease NAME` (beyond flux) draws one HelmRelease.
//!
//! What a HelmRelease manages is read as flux reads it: the objects of the manifest of its
//! latest release in Helm's storage (namespaced ones in the release's namespace), plus the CRDs
//! carrying its owner labels when its install or upgrade CRD policy is not `Skip`. A release
//! on a remote cluster (`kubeConfig`) or never installed shows no children.

use crate::cluster::{Cluster, KubeArgs};
use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand};
use ferroflux_api::helmrelease::CrdsPolicy;
use ferroflux_api::{HelmRelease, Kustomization, ObjectId};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use std::cell::RefCell;
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
    /// The objects a HelmRelease's current release manages.
    #[command(visible_alias = "hr")]
    Helmrelease {
        name: String,
        /// Only Flux objects.
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
const HELM_GROUP: &str = "helm.toolkit.fluxcd.io";

/// Where the tree's objects come from: the Kustomizations by namespace and name, and the
/// objects each HelmRelease manages (`None`: nothing to show for it).
pub struct Lookup<'a> {
    pub kustomization: &'a dyn Fn(&str, &str) -> Option<Kustomization>,
    pub helm_release: &'a dyn Fn(&str, &str) -> Option<Vec<ObjectId>>,
}

/// The tree under a Kustomization; with `compact` only objects of Flux's API groups are kept.
pub fn build_tree(root: &Kustomization, lookup: &Lookup<'_>, compact: bool) -> Node {
    let mut seen = BTreeSet::new();
    node_for(root, lookup, compact, &mut seen)
}

/// The tree under a HelmRelease: the objects it manages.
pub fn helm_release_tree(namespace: &str, name: &str, objects: &[ObjectId], compact: bool) -> Node {
    Node {
        label: format!("HelmRelease/{namespace}/{name}"),
        children: leaves(objects, compact),
    }
}

fn leaves(objects: &[ObjectId], compact: bool) -> Vec<Node> {
    objects
        .iter()
        .filter(|id| !compact || id.group.ends_with(".toolkit.fluxcd.io"))
        .map(|id| Node {
            label: id.display_name(),
            children: vec![],
        })
        .collect()
}

fn node_for(
    ks: &Kustomization,
    lookup: &Lookup<'_>,
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
        let child = if id.group == HELM_GROUP && id.kind == "HelmRelease" {
            let objects = (lookup.helm_release)(&id.namespace, &id.name).unwrap_or_default();
            Node {
                label,
                children: leaves(&objects, compact),
            }
        } else if id.group == KUSTOMIZE_GROUP
            && id.kind == "Kustomization"
            && !seen.contains(&(id.namespace.clone(), id.name.clone()))
        {
            match (lookup.kustomization)(&id.namespace, &id.name) {
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
        let (name, compact) = match &args.what {
            TreeWhat::Kustomization { name, compact } => (name, *compact),
            TreeWhat::Helmrelease { name, compact } => {
                let api: Api<HelmRelease> = Api::namespaced(client.clone(), &args.kube.namespace);
                let hr = api
                    .get_opt(name)
                    .await
                    .with_context(|| format!("getting HelmRelease {name}"))?
                    .ok_or_else(|| {
                        anyhow!(
                            "HelmRelease object '{name}' not found in \"{}\" namespace",
                            args.kube.namespace
                        )
                    })?;
                let objects = managed_objects(&client, &hr).await?.unwrap_or_default();
                let ns = hr.namespace().unwrap_or_default();
                print!(
                    "{}",
                    render(&helm_release_tree(&ns, name, &objects, *compact))
                );
                return Ok(());
            }
        };
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
        let all: BTreeMap<(String, String), Kustomization> =
            Api::<Kustomization>::all(client.clone())
                .list(&Default::default())
                .await
                .context("listing Kustomizations")?
                .items
                .into_iter()
                .map(|k| ((k.namespace().unwrap_or_default(), k.name_any()), k))
                .collect();
        let find = |ns: &str, n: &str| all.get(&(ns.to_string(), n.to_string())).cloned();
        // A first pass names the HelmReleases the tree reaches; their storage is then read
        // once each, and the second pass draws them.
        let wanted = RefCell::new(BTreeSet::new());
        let record = |ns: &str, n: &str| {
            wanted.borrow_mut().insert((ns.to_string(), n.to_string()));
            None
        };
        let lookup = Lookup {
            kustomization: &find,
            helm_release: &record,
        };
        build_tree(&root, &lookup, compact);
        let mut managed = BTreeMap::new();
        for (ns, n) in wanted.into_inner() {
            let Some(hr) = Api::<HelmRelease>::namespaced(client.clone(), &ns)
                .get_opt(&n)
                .await
                .with_context(|| format!("getting HelmRelease {ns}/{n}"))?
            else {
                continue;
            };
            if let Some(objects) = managed_objects(&client, &hr).await? {
                managed.insert((ns, n), objects);
            }
        }
        let release = |ns: &str, n: &str| managed.get(&(ns.to_string(), n.to_string())).cloned();
        let lookup = Lookup {
            kustomization: &find,
            helm_release: &release,
        };
        print!("{}", render(&build_tree(&root, &lookup, compact)));
        Ok::<_, anyhow::Error>(())
    }
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// The objects a HelmRelease's latest release manages, as flux's tree lists them; `None` when
/// it targets another cluster or has no release in storage.
async fn managed_objects(
    client: &kube::Client,
    hr: &HelmRelease,
) -> anyhow::Result<Option<Vec<ObjectId>>> {
    let key = format!("{}/{}", hr.namespace().unwrap_or_default(), hr.name_any());
    if hr.spec.kube_config.is_some() {
        return Ok(None);
    }
    let Some(version) = hr
        .status
        .as_ref()
        .and_then(|s| s.history.as_ref())
        .and_then(|h| h.first())
        .map(|s| s.version)
    else {
        return Ok(None);
    };
    let actions = ferroflux_helmrelease::Actions::new(client.clone(), "flux");
    let storage = actions.storage(&hr.storage_namespace());
    let Some(release) = storage
        .get(&hr.release_name(), version)
        .await
        .with_context(|| {
            format!("failed to find the Helm storage object for HelmRelease '{key}'")
        })?
    else {
        return Ok(None);
    };
    let objects = actions.objects(&release).await.with_context(|| {
        format!("failed to read the Helm storage object for HelmRelease '{key}'")
    })?;
    let mut ids: Vec<ObjectId> = objects.iter().map(object_id).collect();
    let manages_crds = |policy: Option<CrdsPolicy>| policy.is_some_and(|p| p != CrdsPolicy::Skip);
    if manages_crds(hr.spec.install.as_ref().and_then(|i| i.crds))
        || manages_crds(hr.spec.upgrade.as_ref().and_then(|u| u.crds))
    {
        let selector = format!(
            "{HELM_GROUP}/name={},{HELM_GROUP}/namespace={}",
            hr.name_any(),
            hr.namespace().unwrap_or_default()
        );
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        // As flux: a failure to list CRDs leaves them out.
        if let Ok(list) = crds.list(&ListParams::default().labels(&selector)).await {
            for crd in list.items {
                let id = ObjectId::new(
                    "",
                    crd.name_any(),
                    "apiextensions.k8s.io",
                    "CustomResourceDefinition",
                );
                if !ids
                    .iter()
                    .any(|i| i.name == id.name && i.kind == id.kind && i.group == id.group)
                {
                    ids.push(id);
                }
            }
        }
    }
    Ok(Some(ids))
}

fn object_id(obj: &serde_json::Value) -> ObjectId {
    let text = |pointer: &str| {
        obj.pointer(pointer)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    };
    let group = text("/apiVersion")
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default();
    ObjectId::new(
        text("/metadata/namespace"),
        text("/metadata/name"),
        group,
        text("/kind"),
    )
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
        let find = |_: &str, n: &str| all.get(n).cloned();
        let none = |_: &str, _: &str| None;
        let lookup = Lookup {
            kustomization: &find,
            helm_release: &none,
        };
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
