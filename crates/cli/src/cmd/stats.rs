//! `ferroflux stats [-A]`: per Flux kind, how many objects run, fail and are suspended, and the
//! storage their artifacts take, as `flux stats` prints it. Kinds the cluster does not serve
//! count zero, as in flux; any other error (an unreachable cluster) is reported.

use crate::cluster::{Cluster, KubeArgs};
use crate::output::table::flux_table;

use clap::Args;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Count objects of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

/// The kinds flux reports, in its order: (group, version, kind, plural).
const KINDS: &[(&str, &str, &str, &str)] = &[
    (
        "source.toolkit.fluxcd.io",
        "v1",
        "GitRepository",
        "gitrepositories",
    ),
    (
        "source.toolkit.fluxcd.io",
        "v1",
        "OCIRepository",
        "ocirepositories",
    ),
    (
        "source.toolkit.fluxcd.io",
        "v1",
        "HelmRepository",
        "helmrepositories",
    ),
    ("source.toolkit.fluxcd.io", "v1", "HelmChart", "helmcharts"),
    ("source.toolkit.fluxcd.io", "v1", "Bucket", "buckets"),
    (
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "Kustomization",
        "kustomizations",
    ),
    (
        "helm.toolkit.fluxcd.io",
        "v2",
        "HelmRelease",
        "helmreleases",
    ),
    (
        "notification.toolkit.fluxcd.io",
        "v1beta3",
        "Alert",
        "alerts",
    ),
    (
        "notification.toolkit.fluxcd.io",
        "v1beta3",
        "Provider",
        "providers",
    ),
    (
        "notification.toolkit.fluxcd.io",
        "v1",
        "Receiver",
        "receivers",
    ),
    (
        "image.toolkit.fluxcd.io",
        "v1",
        "ImageUpdateAutomation",
        "imageupdateautomations",
    ),
    (
        "image.toolkit.fluxcd.io",
        "v1",
        "ImagePolicy",
        "imagepolicies",
    ),
    (
        "image.toolkit.fluxcd.io",
        "v1",
        "ImageRepository",
        "imagerepositories",
    ),
];

/// One row's counts.
#[derive(Debug, Default, PartialEq)]
pub struct Counts {
    pub total: usize,
    pub failing: usize,
    pub suspended: usize,
    pub storage: i64,
}

/// Counts a kind's objects as flux does: suspended from `spec.suspend`, failing from a
/// `Ready=False` condition, storage from `status.artifact.size`.
pub fn count(objects: &[serde_json::Value]) -> Counts {
    let mut c = Counts {
        total: objects.len(),
        ..Counts::default()
    };
    for o in objects {
        if o["spec"]["suspend"].as_bool() == Some(true) {
            c.suspended += 1;
        }
        if let Some(conds) = o["status"]["conditions"].as_array() {
            c.failing += conds
                .iter()
                .filter(|k| k["type"] == "Ready" && k["status"] == "False")
                .count();
        }
        if let Some(size) = o["status"]["artifact"]["size"].as_i64() {
            c.storage += size;
        }
    }
    c
}

/// Sizes as flux prints them: `-`, `512 B`, `1.5 KiB`.
pub fn format_size(b: i64) -> String {
    if b == 0 {
        return "-".into();
    }
    const UNIT: i64 = 1024;
    if b < UNIT {
        return format!("{b} B");
    }
    let (mut div, mut exp) = (UNIT, 0usize);
    let mut n = b / UNIT;
    while n >= UNIT {
        div *= UNIT;
        exp += 1;
        n /= UNIT;
    }
    let prefix = ['K', 'M', 'G', 'T', 'P', 'E'][exp];
    format!("{:.1} {prefix}iB", b as f64 / div as f64)
}

pub async fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    async {
        let cluster = Cluster::connect(&args.kube).await?;
        let mut rows = Vec::new();
        for (group, version, kind, plural) in KINDS {
            let ar = ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version: format!("{group}/{version}"),
                kind: kind.to_string(),
                plural: plural.to_string(),
            };
            let api: Api<DynamicObject> = if args.all_namespaces {
                Api::all_with(cluster.client.clone(), &ar)
            } else {
                Api::namespaced_with(cluster.client.clone(), &args.kube.namespace, &ar)
            };
            // A kind the cluster does not serve counts zero, as in flux.
            let listed = cluster
                .call(&format!("listing {kind} objects"), async {
                    match api.list(&ListParams::default()).await {
                        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
                        other => other.map(Some),
                    }
                })
                .await?;
            let objects = match listed {
                Some(list) => list
                    .items
                    .iter()
                    .map(serde_json::to_value)
                    .collect::<Result<Vec<_>, _>>()?,
                None => vec![],
            };
            let c = count(&objects);
            rows.push(vec![
                kind.to_string(),
                (c.total - c.suspended).to_string(),
                c.failing.to_string(),
                c.suspended.to_string(),
                format_size(c.storage),
            ]);
        }
        print!(
            "{}",
            flux_table(
                &["RECONCILERS", "RUNNING", "FAILING", "SUSPENDED", "STORAGE"],
                &rows
            )
        );
        Ok::<_, anyhow::Error>(())
    }
    .await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_read_like_flux() {
        assert_eq!(format_size(0), "-");
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn counts_follow_flux() {
        let objs = vec![
            json!({"spec": {"suspend": true}, "status": {"artifact": {"size": 100}}}),
            json!({"spec": {}, "status": {"conditions": [{"type": "Ready", "status": "False"}],
                   "artifact": {"size": 24}}}),
            json!({"spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        ];
        assert_eq!(
            count(&objs),
            Counts {
                total: 3,
                failing: 1,
                suspended: 1,
                storage: 124
            }
        );
    }
}
