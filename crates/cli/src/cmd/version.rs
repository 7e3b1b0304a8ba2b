//! `ferroflux version [--client] [-o yaml|json]`: this binary's version and, unless `--client`,
//! what the cluster runs, as `flux version` prints it: the distribution read from the
//! GitRepository CRD's labels, then one entry per container image of the Deployments labelled
//! `app.kubernetes.io/part-of=flux` in the namespace (the image's name and its tag).
//!
//! Also owns [`ClusterInfo`], what the GitRepository CRD's labels say about an installation
//! (`check` prints it too).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_bootstrap::manifests::{CONTROLLER, PART_OF_LABEL, PART_OF_VALUE, VERSION};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};

use crate::cluster::{Cluster, KubeArgs};

/// The CRD whose labels describe an installation (flux reads the same one).
const INFO_CRD: &str = "gitrepositories.source.toolkit.fluxcd.io";
/// Set by tools installing Flux other than flux itself (Helm among them).
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The key of this binary's own version: the CLI's name, as flux keys its own `flux`.
const CLIENT_KEY: &str = "ferroflux";

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Print only the version of this binary.
    #[arg(long)]
    client: bool,
    /// The format of the output: yaml or json.
    #[arg(short = 'o', long, default_value = "yaml")]
    output: String,
    #[command(flatten)]
    kube: KubeArgs,
}

/// What the GitRepository CRD's labels say about the installation, read as flux reads them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Installed by `bootstrap`: the CRD carries the labels of the Kustomization applying it.
    pub bootstrapped: bool,
    /// `app.kubernetes.io/managed-by`, when another tool installed it.
    pub managed_by: Option<String>,
    /// `app.kubernetes.io/part-of`.
    pub part_of: Option<String>,
    /// `app.kubernetes.io/version`, empty when missing.
    pub version: String,
}

impl ClusterInfo {
    /// Reads the labels of a GitRepository CRD.
    pub fn from_labels(labels: &BTreeMap<String, String>) -> ClusterInfo {
        ClusterInfo {
            // flux looks at both labels but, through an overwritten loop variable, decides on
            // the namespace label alone; so does this.
            bootstrapped: labels.contains_key("kustomize.toolkit.fluxcd.io/namespace"),
            managed_by: labels.get(MANAGED_BY_LABEL).cloned(),
            part_of: labels.get(PART_OF_LABEL).cloned(),
            version: labels
                .get(ferroflux_bootstrap::manifests::VERSION_LABEL)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The installation's info; `None` when the GitRepository CRD is not installed.
    pub async fn read(client: &kube::Client) -> anyhow::Result<Option<ClusterInfo>> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd = crds
            .get_opt(INFO_CRD)
            .await
            .with_context(|| format!("reading the CRD {INFO_CRD}"))?;
        Ok(crd.map(|c| ClusterInfo::from_labels(&c.metadata.labels.unwrap_or_default())))
    }

    /// flux's distribution: `<part-of>-<version>`, or the version alone.
    pub fn distribution(&self) -> String {
        match &self.part_of {
            Some(p) => format!("{p}-{}", self.version),
            None => self.version.clone(),
        }
    }
}

/// An image reference's last path segment and its tag, as flux keys its controllers
/// (`ghcr.io/fluxcd/source-controller:v1.7.0` is `source-controller`, `v1.7.0`; a registry
/// with a port is not a tag). An image pinned by digest alone gives its digest.
pub fn split_image(image: &str) -> anyhow::Result<(String, String)> {
    let (reference, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let last = reference.rsplit('/').next().unwrap_or(reference);
    match (last.split_once(':'), digest) {
        (Some((name, tag)), _) if !name.is_empty() && !tag.is_empty() => {
            Ok((name.to_string(), tag.to_string()))
        }
        (None, Some(digest)) if !last.is_empty() && !digest.is_empty() => {
            Ok((last.to_string(), digest.to_string()))
        }
        _ => bail!("missing image tag in image {image}"),
    }
}

pub async fn run(args: VersionArgs) -> anyhow::Result<ExitCode> {
    if args.output != "yaml" && args.output != "json" {
        bail!("--output must be json or yaml, not {}", args.output);
    }
    let mut distribution = None;
    let mut controllers: BTreeMap<String, String> = BTreeMap::new();
    if !args.client {
        let client = Cluster::connect(&args.kube).await?.client;
        // Without the CRD the controllers are still listed, as flux does (a cluster may run
        // only some of them).
        if let Some(info) = ClusterInfo::read(&client).await? {
            let d = info.distribution();
            if !d.is_empty() {
                distribution = Some(d);
            }
        }
        let ns = &args.kube.namespace;
        let deployments: Api<Deployment> = Api::namespaced(client, ns);
        let selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"));
        let list = deployments
            .list(&selector)
            .await
            .with_context(|| format!("listing the deployments of namespace {ns}"))?;
        if list.items.is_empty() {
            return Err(anyhow!("no deployments found in {ns} namespace"));
        }
        for d in &list.items {
            let containers = d
                .spec
                .template
                .spec
                .as_ref()
                .map(|s| s.containers.as_slice())
                .unwrap_or_default();
            for c in containers {
                let (name, tag) = split_image(c.image.as_deref().unwrap_or_default())?;
                // Our image is named `ferroflux` like the CLI's key: keyed by its Deployment.
                let key = if name == CLIENT_KEY {
                    CONTROLLER.to_string()
                } else {
                    name
                };
                controllers.insert(key, tag);
            }
        }
    }
    print!(
        "{}",
        render(&args.output, distribution.as_deref(), &controllers)
    );
    Ok(ExitCode::SUCCESS)
}

/// flux's two layouts: YAML with the CLI first, the distribution, then the controllers by
/// name; JSON with every key sorted, indented by two spaces.
fn render(
    output: &str,
    distribution: Option<&str>,
    controllers: &BTreeMap<String, String>,
) -> String {
    if output == "json" {
        let mut all: BTreeMap<&str, &str> = BTreeMap::new();
        all.insert(CLIENT_KEY, VERSION);
        if let Some(d) = distribution {
            all.insert("distribution", d);
        }
        for (k, v) in controllers {
            all.insert(k, v);
        }
        // A map of strings always serializes.
        return serde_json::to_string_pretty(&all).unwrap_or_default() + "\n";
    }
    let mut out = format!("{CLIENT_KEY}: {VERSION}\n");
    if let Some(d) = distribution {
        out.push_str(&format!("distribution: {d}\n"));
    }
    for (k, v) in controllers {
        out.push_str(&format!("{k}: {v}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_as_flux_keys_them() {
        let ok = |i: &str| split_image(i).unwrap();
        assert_eq!(
            ok("ghcr.io/fluxcd/source-controller:v1.7.0"),
            ("source-controller".into(), "v1.7.0".into())
        );
        assert_eq!(
            ok("localhost:5000/team/kustomize-controller:v1.2.3-rc.1"),
            ("kustomize-controller".into(), "v1.2.3-rc.1".into())
        );
        assert_eq!(
            ok("helm-controller:v1@sha256:abc"),
            ("helm-controller".into(), "v1".into())
        );
        assert_eq!(
            ok("ghcr.io/fluxcd/helm-controller@sha256:abc"),
            ("helm-controller".into(), "sha256:abc".into())
        );
        let err = split_image("localhost:5000/notification-controller").unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing image tag in image localhost:5000/notification-controller"
        );
    }

    #[test]
    fn cluster_info_reads_the_labels_as_flux() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let bootstrapped = ClusterInfo::from_labels(&labels(&[
            ("kustomize.toolkit.fluxcd.io/name", "flux-system"),
            ("kustomize.toolkit.fluxcd.io/namespace", "flux-system"),
            ("app.kubernetes.io/version", "v2.1.0"),
            ("app.kubernetes.io/managed-by", "flux"),
        ]));
        assert_eq!(
            bootstrapped,
            ClusterInfo {
                bootstrapped: true,
                managed_by: Some("flux".into()),
                part_of: None,
                version: "v2.1.0".into(),
            }
        );
        assert_eq!(bootstrapped.distribution(), "v2.1.0");
        let helm = ClusterInfo::from_labels(&labels(&[
            ("app.kubernetes.io/version", "v2.1.0"),
            ("app.kubernetes.io/managed-by", "helm"),
            ("app.kubernetes.io/part-of", "flux"),
        ]));
        assert!(!helm.bootstrapped);
        assert_eq!(helm.distribution(), "flux-v2.1.0");
        assert_eq!(
            ClusterInfo::from_labels(&labels(&[])),
            ClusterInfo::default()
        );
    }

    #[test]
    fn renders_yaml_in_flux_order_and_json_sorted() {
        let controllers: BTreeMap<String, String> = [
            ("source-controller".to_string(), "v1.7.0".to_string()),
            ("helm-controller".to_string(), "v1.4.0".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            render("yaml", Some("flux-v2.7.0"), &controllers),
            format!(
                "ferroflux: {VERSION}\ndistribution: flux-v2.7.0\nhelm-controller: v1.4.0\n\
                 source-controller: v1.7.0\n"
            )
        );
        assert_eq!(
            render("json", Some("flux-v2.7.0"), &controllers),
            format!(
                "{{\n  \"distribution\": \"flux-v2.7.0\",\n  \"ferroflux\": \"{VERSION}\",\n  \
                 \"helm-controller\": \"v1.4.0\",\n  \"source-controller\": \"v1.7.0\"\n}}\n"
            )
        );
        assert_eq!(
            render("yaml", None, &BTreeMap::new()),
            format!("ferroflux: {VERSION}\n")
        );
    }
}
