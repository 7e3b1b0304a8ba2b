//! `ferroflux build helmrelease NAME --path DIR` and `diff helmrelease NAME --path DIR` (beyond
//! flux): the chart in DIR rendered as the HelmRelease `NAME` of the cluster would release it
//! (its values with `valuesFrom` read from the cluster, Capabilities and `lookup` from the
//! cluster, its post-renderers, owner labels and `commonMetadata`), printed with Secret values
//! masked, or server-side dry-run against the cluster with what would change reported as
//! `diff kustomization` reports it, objects of the current release that the new one drops
//! listed as deleted.

use crate::cluster::{Cluster, KubeArgs};
use crate::cmd::build::render;
use crate::fluxobj;
use anyhow::{Context as _, anyhow};
use clap::Args;
use ferroflux_api::HelmRelease;
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_controller::helmrelease::reconciler::FIELD_MANAGER;
use ferroflux_controller::helmrelease::template::{Against, template};
use ferroflux_controller::helmrelease::values;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Which HelmRelease, rendered from which local chart.
#[derive(Args, Debug)]
pub struct LocalChartArgs {
    /// The HelmRelease's name.
    pub name: String,
    /// The chart: a directory or a packaged `.tgz`.
    #[arg(long)]
    pub path: PathBuf,
}

/// The release `args` would make, and the stored one it would replace (if any).
async fn rendered(
    cluster: &Cluster,
    ns: &str,
    args: &LocalChartArgs,
) -> anyhow::Result<(Vec<Value>, Option<Vec<Value>>)> {
    let hr: HelmRelease = fluxobj::get_object(cluster, ns, &args.name).await?;
    let chart = ferroflux_helm::load(&args.path)
        .map_err(|e| anyhow!("loading the chart at {}: {e}", args.path.display()))?;
    let refs = hr.spec.values_from.clone().unwrap_or_default();
    let fetched = values::fetch(&cluster.client, ns, &refs)
        .await
        .context("reading valuesFrom")?;
    let t = template(&hr, chart, &fetched, Against::Cluster(&cluster.client)).await?;
    Ok((t.objects, t.current))
}

/// `build helmrelease`: the rendered objects, Secret values masked.
pub async fn build(args: &LocalChartArgs, kube: &KubeArgs) -> anyhow::Result<String> {
    let cluster = Cluster::connect(kube).await?;
    let (objects, _) = rendered(&cluster, &kube.namespace, args).await?;
    Ok(render(&objects))
}

/// `diff helmrelease`: the report and whether anything would change; per-object failures
/// gathered beside it.
pub async fn diff(
    args: &LocalChartArgs,
    kube: &KubeArgs,
) -> anyhow::Result<(crate::cmd::diff::DiffReport, Vec<String>)> {
    let cluster = Cluster::connect(kube).await?;
    let (objects, current) = rendered(&cluster, &kube.namespace, args).await?;
    let applier = Applier::new(cluster.client.clone(), FIELD_MANAGER);
    let mut output = String::new();
    let mut changed = false;
    let mut errors = Vec::new();
    for obj in &objects {
        match applier.dry_run(obj, &ApplyOptions::default()).await {
            Ok(outcome) => changed |= crate::cmd::diff::describe(outcome, &mut output),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let key = |o: &Value| {
        let s = |p: &str| {
            o.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let group = s("/apiVersion")
            .rsplit_once('/')
            .map(|(g, _)| g.to_string())
            .unwrap_or_default();
        (
            group,
            s("/kind"),
            s("/metadata/namespace"),
            s("/metadata/name"),
        )
    };
    let new: BTreeSet<_> = objects.iter().map(key).collect();
    for old in current.iter().flatten() {
        let k = key(old);
        if !new.contains(&k) {
            let (_, kind, ns, name) = &k;
            let subject = if ns.is_empty() {
                format!("{kind}/{name}")
            } else {
                format!("{kind}/{ns}/{name}")
            };
            let _ = writeln!(output, "► {subject} deleted");
            changed = true;
        }
    }
    Ok((crate::cmd::diff::DiffReport { output, changed }, errors))
}
