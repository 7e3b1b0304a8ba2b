//! HelmReleases in `fleet diff`: each HelmRelease a cluster's build holds is rendered as the
//! controller would release it (crates/controller's `helmrelease::template`), and its objects
//! join the build, attributed to `HelmRelease/<ns>/<name>`, so that a chart version bump in
//! the repository shows as the rendered Deployment's change on each cluster.
//!
//! The chart: a chart kept in the fleet repository (`chart.spec.sourceRef` the cluster's
//! `flux-system` GitRepository, `chart.spec.chart` a folder of the tree), or a chart of an
//! HTTP(S) HelmRepository without credentials (the HelmRepository taken from the build, else from
//! the live cluster), pulled as the source controller pulls it (`chart.spec.version` range,
//! `valuesFiles` merged) when the repository answers. Charts of OCI HelmRepositories,
//! repositories needing credentials, OCIRepositories and `chartRef`s are not fetched, nor are
//! unreachable repositories: such a HelmRelease is compared as an object and a note says why its
//! chart was not rendered.
//!
//! The values: `valuesFrom` ConfigMaps and Secrets are taken from the cluster's build first
//! (what the cluster will hold once the Kustomizations apply), then, against a live cluster,
//! from the cluster; inline values are merged in Flux's order.

use crate::repo::{Built, ClusterBuild, RepoError, Tree, object_id};
use base64::Engine as _;
use ferroflux_api::helmrelease::{ValuesKind, ValuesReference};
use ferroflux_api::helmrepository::HelmRepositoryType;
use ferroflux_api::{HelmRelease, HelmRepository};
use ferroflux_controller::helmrelease::template::{Against, template};
use ferroflux_controller::helmrelease::values::{self, Fetched};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// Renders every HelmRelease of `build` (cluster `cluster` of `tree`) and adds its objects.
/// `client`: the live cluster (Capabilities, `lookup`, the stored release, values not in the
/// build); `None` renders offline, as `helm template` does. A chart that fails to render fails
/// the cluster's build, as a failing kustomize build does.
pub async fn render_releases(
    build: &mut ClusterBuild,
    tree: &Tree,
    cluster: &str,
    client: Option<&kube::Client>,
) -> Result<(), RepoError> {
    let releases: Vec<(String, Value)> = build
        .objects
        .iter()
        .filter(|(_, b)| {
            b.object["kind"] == "HelmRelease"
                && b.object["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("helm.toolkit.fluxcd.io/"))
        })
        .map(|(id, b)| (id.clone(), b.object.clone()))
        .collect();
    for (id, object) in releases {
        let failed = |message: String| RepoError::Build {
            cluster: cluster.to_string(),
            what: id.clone(),
            message,
        };
        let hr: HelmRelease = serde_json::from_value(object)
            .map_err(|e| failed(format!("not a HelmRelease: {e}")))?;
        let ns = hr.metadata.namespace.clone().unwrap_or_default();
        let chart = match locate(&hr, &ns, build, client).await {
            Ok(Located::Repository(chart_dir)) => {
                let path = tree.path().join(&chart_dir);
                ferroflux_helm::load(&path)
                    .map_err(|e| failed(format!("loading the chart ./{chart_dir}: {e}")))?
            }
            Ok(Located::Remote(remote)) => match pull(remote).await {
                Ok(chart) => chart,
                Err(why) => {
                    build.notes.push(format!("{id}: chart not rendered: {why}"));
                    continue;
                }
            },
            Err(why) => {
                build.notes.push(format!("{id}: chart not rendered: {why}"));
                continue;
            }
        };
        let refs = hr.spec.values_from.clone().unwrap_or_default();
        let mut fetched = from_build(build, &ns, &refs);
        if let Some(client) = client {
            let missing: Vec<ValuesReference> = refs
                .iter()
                .filter(|r| !fetched.contains_key(&(r.kind, r.name.clone())))
                .cloned()
                .collect();
            let live = values::fetch(client, &ns, &missing)
                .await
                .map_err(|e| failed(format!("reading valuesFrom: {e}")))?;
            fetched.extend(live);
        }
        let against = match client {
            Some(c) => Against::Cluster(c),
            None => Against::Offline,
        };
        let rendered = template(&hr, chart, &fetched, against)
            .await
            .map_err(|e| failed(e.to_string()))?;
        for obj in rendered.objects {
            let oid = object_id(&obj);
            if let Some(other) = build.objects.get(&oid) {
                build.notes.push(format!(
                    "{oid} of {id} not compared: {} applies an object of that name too",
                    other.by
                ));
                continue;
            }
            build.objects.insert(
                oid,
                Built {
                    by: id.clone(),
                    object: obj,
                },
            );
        }
    }
    Ok(())
}

/// Where a HelmRelease's chart is.
enum Located {
    /// A folder of the fleet repository (relative, normalised).
    Repository(String),
    /// A chart of an HTTP(S) chart repository.
    Remote(Remote),
}

/// A chart to pull from a chart repository.
struct Remote {
    url: String,
    chart: String,
    version: String,
    values_files: Vec<String>,
    ignore_missing_values_files: bool,
}

/// Where `hr`'s chart is, or why fleet diff does not render it.
async fn locate(
    hr: &HelmRelease,
    ns: &str,
    build: &ClusterBuild,
    client: Option<&kube::Client>,
) -> Result<Located, String> {
    if let Some(r) = &hr.spec.chart_ref {
        return Err(format!(
            "it comes from chartRef {}/{}, which fleet diff does not fetch",
            r.kind.as_str(),
            r.name
        ));
    }
    let Some(template) = &hr.spec.chart else {
        return Err("the HelmRelease names no chart".into());
    };
    let spec = &template.spec;
    let src = &spec.source_ref;
    let src_ns = src.namespace.clone().unwrap_or_else(|| ns.to_string());
    let source = format!("{}/{src_ns}/{}", src.kind.as_str(), src.name);
    if src.kind.as_str() == "HelmRepository" {
        let repository = helm_repository(build, &src_ns, &src.name, client).await?;
        let spec_repo = &repository.spec;
        if spec_repo.r#type == Some(HelmRepositoryType::Oci) {
            return Err(format!(
                "it comes from {source}, an OCI repository, which fleet diff does not fetch"
            ));
        }
        if spec_repo.secret_ref.is_some() || spec_repo.cert_secret_ref.is_some() {
            return Err(format!(
                "it comes from {source}, which needs credentials; fleet diff only pulls from repositories without them"
            ));
        }
        return Ok(Located::Remote(Remote {
            url: spec_repo.url.clone(),
            chart: spec.chart.clone(),
            version: spec
                .version
                .clone()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "*".into()),
            values_files: spec.values_files.clone().unwrap_or_default(),
            ignore_missing_values_files: spec.ignore_missing_values_files.unwrap_or(false),
        }));
    }
    if src.kind.as_str() != "GitRepository" || src.name != "flux-system" || src_ns != "flux-system"
    {
        return Err(format!(
            "it comes from {source}, which fleet diff does not fetch (charts kept in this repository and HelmRepository charts are rendered)"
        ));
    }
    if spec.values_files.as_ref().is_some_and(|f| !f.is_empty()) {
        return Err("its chart.spec.valuesFiles are not merged by fleet diff yet".into());
    }
    let mut parts = Vec::new();
    for c in Path::new(&spec.chart).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            // The chart must stay inside the repository, as the source controller requires.
            _ => return Err(format!("chart path {:?} leaves the repository", spec.chart)),
        }
    }
    if parts.is_empty() {
        return Err("the chart path is empty".into());
    }
    Ok(Located::Repository(parts.join("/")))
}

/// The HelmRepository `ns/name`: from the build (what the cluster will hold), else from the
/// live cluster.
async fn helm_repository(
    build: &ClusterBuild,
    ns: &str,
    name: &str,
    client: Option<&kube::Client>,
) -> Result<HelmRepository, String> {
    let id = format!("HelmRepository/{ns}/{name}");
    if let Some(b) = build.objects.get(&id) {
        return serde_json::from_value(b.object.clone()).map_err(|e| format!("{id}: {e}"));
    }
    let Some(client) = client else {
        return Err(format!(
            "it comes from {id}, which the repository does not hold"
        ));
    };
    let api: kube::Api<HelmRepository> = kube::Api::namespaced(client.clone(), ns);
    match api.get_opt(name).await {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(format!(
            "it comes from {id}, which neither the repository nor the cluster holds"
        )),
        Err(e) => Err(format!("reading {id} from the cluster: {e}")),
    }
}

/// Pulls `remote` as the source controller does (index, version range, `valuesFiles`), once
/// per process for the same repository, chart, range and values files.
async fn pull(remote: Remote) -> Result<ferroflux_helm::Chart, String> {
    type Key = (String, String, String, Vec<String>);
    static PULLED: std::sync::Mutex<BTreeMap<Key, std::sync::Arc<Vec<u8>>>> =
        std::sync::Mutex::new(BTreeMap::new());
    let key: Key = (
        remote.url.clone(),
        remote.chart.clone(),
        remote.version.clone(),
        remote.values_files.clone(),
    );
    let cached = PULLED.lock().ok().and_then(|m| m.get(&key).cloned());
    let archive = match cached {
        Some(a) => a,
        None => {
            // The chart repository client blocks (ureq).
            let archive = tokio::task::spawn_blocking(move || {
                use ferroflux_helmsource::{
                    BuildOptions, MAX_INDEX_SIZE, RepositoryAccess, build_from_repository,
                    fetch_index, redact,
                };
                let shown = redact(&remote.url);
                let fetched = fetch_index(RepositoryAccess::anonymous(&remote.url), MAX_INDEX_SIZE)
                    .map_err(|e| format!("fetching the index of {shown}: {e}"))?;
                let opts = BuildOptions {
                    values_files: remote.values_files.clone(),
                    ignore_missing_values_files: remote.ignore_missing_values_files,
                    ..BuildOptions::default()
                };
                let built = build_from_repository(
                    &fetched.repository,
                    &remote.chart,
                    &remote.version,
                    &opts,
                )
                .map_err(|e| {
                    format!(
                        "pulling {} {} from {shown}: {e}",
                        remote.chart, remote.version
                    )
                })?;
                built
                    .archive
                    .ok_or_else(|| format!("{shown} gave no archive for {}", remote.chart))
            })
            .await
            .map_err(|e| format!("pulling the chart stopped: {e}"))??;
            let archive = std::sync::Arc::new(archive);
            if let Ok(mut m) = PULLED.lock() {
                m.insert(key, archive.clone());
            }
            archive
        }
    };
    ferroflux_helm::load_archive(&archive).map_err(|e| format!("loading the pulled chart: {e}"))
}

/// The `valuesFrom` ConfigMaps and Secrets the build itself holds, as the controller would
/// read them once applied.
fn from_build(
    build: &ClusterBuild,
    ns: &str,
    refs: &[ValuesReference],
) -> BTreeMap<(ValuesKind, String), Fetched> {
    let mut out = BTreeMap::new();
    for r in refs {
        let kind = match r.kind {
            ValuesKind::ConfigMap => "ConfigMap",
            ValuesKind::Secret => "Secret",
        };
        let Some(b) = build.objects.get(&format!("{kind}/{ns}/{}", r.name)) else {
            continue;
        };
        let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let text = |v: &Value| v.as_str().map(|s| s.as_bytes().to_vec());
        if let Some(map) = b.object["data"].as_object() {
            for (k, v) in map {
                let bytes = match r.kind {
                    ValuesKind::ConfigMap => text(v),
                    ValuesKind::Secret => v.as_str().and_then(|s| {
                        base64::engine::general_purpose::STANDARD
                            .decode(s.trim())
                            .ok()
                    }),
                };
                if let Some(bytes) = bytes {
                    data.insert(k.clone(), bytes);
                }
            }
        }
        for field in ["binaryData", "stringData"] {
            if let Some(map) = b.object[field].as_object() {
                for (k, v) in map {
                    let bytes = if field == "binaryData" {
                        v.as_str().and_then(|s| {
                            base64::engine::general_purpose::STANDARD
                                .decode(s.trim())
                                .ok()
                        })
                    } else {
                        text(v)
                    };
                    if let Some(bytes) = bytes {
                        data.insert(k.clone(), bytes);
                    }
                }
            }
        }
        out.insert((r.kind, r.name.clone()), Some(data));
    }
    out
}

/// [`crate::repo::build_cluster`] of cluster `name`, then its HelmReleases rendered
/// ([`render_releases`]): against `client` when given, offline otherwise.
pub async fn build_cluster_with_releases(
    tree: &Tree,
    name: &str,
    client: Option<&kube::Client>,
) -> Result<ClusterBuild, RepoError> {
    use ferroflux_controller::kustomization::build::Cluster;
    let on = match client {
        Some(c) => Cluster::Client(c),
        None => Cluster::Offline,
    };
    let mut build = crate::repo::build_cluster(tree, name, on).await?;
    render_releases(&mut build, tree, name, client).await?;
    Ok(build)
}
