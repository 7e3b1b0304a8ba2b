//! `ferroflux debug kustomization NAME --show-status|--show-vars|--show-history` and `debug
//! helmrelease NAME --show-status|--show-values|--show-history`: what a
//! Kustomization's controller sees, as `flux debug kustomization` prints it: its status as
//! YAML, the post-build variables it substitutes (its `substituteFrom` ConfigMaps and Secrets,
//! then the inline `substitute`, read as the controller reads them), or its reconcile history;
//! for a HelmRelease its values as the controller composes them.

use crate::cluster::{Cluster, KubeArgs};
use crate::output::document::sorted;
use anyhow::bail;
use clap::{Args, Subcommand};
use ferroflux_api::{HelmRelease, Kustomization};
use kube::api::Api;
use serde_json::Value;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DebugArgs {
    #[command(subcommand)]
    what: DebugWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum DebugWhat {
    /// Debug a Kustomization.
    #[command(visible_alias = "ks")]
    Kustomization(KustomizationArgs),
    /// Debug a HelmRelease.
    #[command(visible_alias = "hr")]
    Helmrelease(HelmReleaseArgs),
}

#[derive(Args, Debug)]
struct HelmReleaseArgs {
    /// The HelmRelease's name.
    name: String,
    /// Print the HelmRelease's status.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_status: bool,
    /// Print the final values (valuesFrom, then the inline values) as the controller composes
    /// them.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_values: bool,
    /// Print the release history.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_history: bool,
}

#[derive(Args, Debug)]
struct KustomizationArgs {
    /// The Kustomization's name.
    name: String,
    /// Print the Kustomization's status.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_status: bool,
    /// Print the final post-build variables in dot-env format.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_vars: bool,
    /// Print the reconciliation history.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    show_history: bool,
}

/// Runs `debug`.
pub async fn run(args: DebugArgs) -> anyhow::Result<ExitCode> {
    let a = match &args.what {
        DebugWhat::Kustomization(a) => a,
        DebugWhat::Helmrelease(a) => return helmrelease(&args.kube, a).await,
    };
    if [a.show_status, a.show_vars, a.show_history]
        .iter()
        .filter(|b| **b)
        .count()
        != 1
    {
        bail!("exactly one of --show-status, --show-vars, or --show-history must be set");
    }
    let cluster = Cluster::connect(&args.kube).await?;
    let ns = args.kube.namespace.as_str();
    let api: Api<Kustomization> = Api::namespaced(cluster.client.clone(), ns);
    let ks = cluster
        .get_named(
            &api,
            &a.name,
            &format!("reading Kustomization {ns}/{}", a.name),
        )
        .await?;
    let mut out = String::new();
    if a.show_status {
        let status = serde_json::to_value(&ks.status)?;
        out.push_str("# Status documentation: https://fluxcd.io/flux/components/kustomize/kustomizations/#kustomization-status\n");
        out.push_str(&yaml(&status));
    } else if a.show_vars {
        let Some(post) = ks.spec.post_build.as_ref() else {
            bail!("no post build substitutions found");
        };
        let vars = ferroflux_controller::kustomization::build::load_vars(&cluster.client, ns, post)
            .await
            .map_err(anyhow::Error::msg)?;
        for (k, v) in vars {
            out.push_str(&format!("{k}={v}\n"));
        }
    } else {
        let history = serde_json::to_value(&ks)?["status"]["history"].clone();
        let history = match history {
            Value::Array(items) => Value::Array(items),
            _ => Value::Array(Vec::new()),
        };
        out.push_str("# History documentation: https://fluxcd.io/flux/components/kustomize/kustomizations/#history\n");
        out.push_str(&yaml(&history));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// `debug helmrelease`.
async fn helmrelease(kube: &KubeArgs, a: &HelmReleaseArgs) -> anyhow::Result<ExitCode> {
    if [a.show_status, a.show_values, a.show_history]
        .iter()
        .filter(|b| **b)
        .count()
        != 1
    {
        bail!("exactly one of --show-status, --show-values, or --show-history must be set");
    }
    let cluster = Cluster::connect(kube).await?;
    let ns = kube.namespace.as_str();
    let api: Api<HelmRelease> = Api::namespaced(cluster.client.clone(), ns);
    let hr = cluster
        .get_named(
            &api,
            &a.name,
            &format!("reading HelmRelease {ns}/{}", a.name),
        )
        .await?;
    let mut out = String::new();
    if a.show_status {
        let status = serde_json::to_value(&hr.status)?;
        out.push_str("# Status documentation: https://fluxcd.io/flux/components/helm/helmreleases/#helmrelease-status\n");
        out.push_str(&yaml(&status));
    } else if a.show_values {
        use ferroflux_controller::helmrelease::values;
        let refs = hr.spec.values_from.clone().unwrap_or_default();
        let fetched = cluster
            .call(
                "reading the values references",
                values::fetch(&cluster.client, ns, &refs),
            )
            .await?;
        let composed = values::compose(ns, &refs, &fetched, hr.spec.values.as_ref())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let composed = Value::Object(composed);
        if composed.as_object().is_some_and(|m| !m.is_empty()) {
            out.push_str(&yaml(&composed));
        } else {
            out.push_str("{}\n");
        }
    } else {
        let history = serde_json::to_value(&hr)?["status"]["history"].clone();
        let history = match history {
            // A snapshot's `deleted` is a Go time that is never left out: null until deleted.
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|mut snapshot| {
                        if let Some(map) = snapshot.as_object_mut() {
                            map.entry("deleted").or_insert(Value::Null);
                        }
                        snapshot
                    })
                    .collect(),
            ),
            _ => Value::Array(Vec::new()),
        };
        out.push_str("# History documentation: https://fluxcd.io/flux/components/helm/helmreleases/#history\n");
        out.push_str(&yaml(&history));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// YAML as flux's `yaml.Marshal` writes it (keys sorted; `[]` for an empty list).
fn yaml(value: &Value) -> String {
    if value.as_array().is_some_and(Vec::is_empty) {
        return "[]\n".into();
    }
    ferroflux_kustomize::render_yaml(std::slice::from_ref(&sorted(value.clone())))
}
