//! HelmReleases in `fleet diff`: each HelmRelease a cluster's build holds is rendered as the
//! controller would release it (crates/controller's `helmrelease::template`), and its objects
//! join the build, attributed to `HelmRelease/<ns>/<name>`, so that a chart version bump in
//! the repository shows as the rendered Deployment's change on each cluster.
//!
//! The chart: a chart kept in the fleet repository (`chart.spec.sourceRef` the cluster's
//! `flux-system` GitRepository, `chart.spec.chart` a folder of the tree); a chart of a
//! HelmRepository, HTTP(S) or `type: oci` (the HelmRepository taken from the build, else from
//! the live cluster), pulled as the source controller pulls it (`chart.spec.version` range,
//! `valuesFiles` merged); a chart folder among a Bucket's objects (fetched as the source
//! controller fetches them: prefix, `.sourceignore`, `spec.ignore`); the chart a HelmChart
//! `chartRef` describes (the HelmChart taken from the build, else from the live cluster; its
//! `spec` then read as a `chart.spec` is); or the artifact of an OCIRepository `chartRef` (its
//! `ref` resolved as the source controller resolves it — digest, semver range, tag — its layer
//! selected by `layerSelector`), with helm-controller's version rule (`<version>+<digest's
//! first 12 hex>`). A repository or bucket needing credentials (`secretRef`, `certSecretRef`)
//! is pulled with the cluster's Secrets ([`Secrets`]: the live cluster's, or against another
//! revision those of the cluster's kubeconfig context when there is one). What is not
//! rendered — a source whose Secrets cannot be read, an unreachable registry, repository or
//! object store, a chart of another GitRepository — is compared as the HelmRelease object
//! alone, and a note says why its chart was not rendered.
//!
//! Charts of the repository and of Buckets are built as the source controller builds them
//! ([`ChartBuild`]): `valuesFiles` merged, and the version given build metadata — the source
//! revision under `reconcileStrategy: Revision`, the HelmChart's generation with values files
//! (read from the live cluster, 1 against another revision) — so that labels such as
//! `helm.sh/chart` compare with what runs.
//!
//! The values: `valuesFrom` ConfigMaps and Secrets are taken from the cluster's build first
//! (what the cluster will hold once the Kustomizations apply), then, against a live cluster,
//! from the cluster; inline values are merged in Flux's order.

use crate::repo::{Built, ClusterBuild, RepoError, Tree, object_id};
use base64::Engine as _;
use ferroflux_api::helmchart::{
    HelmChartSourceKind, ReconcileStrategy as HelmChartReconcileStrategy,
};
use ferroflux_api::helmrelease::ChartRefKind;
use ferroflux_api::helmrelease::{ValuesKind, ValuesReference};
use ferroflux_api::helmrepository::HelmRepositoryType;
use ferroflux_api::ocirepository::{OCILayerOperation, OCILayerSelector, OCIRepositoryRef};
use ferroflux_api::{HelmChart, HelmRelease, HelmRepository, OCIRepository};
use ferroflux_controller::helmrelease::chart::helm_chart_object;
use ferroflux_controller::helmrelease::template::{Against, template};
use ferroflux_controller::helmrelease::values::{self, Fetched};
use ferroflux_helmsource::BuildOptions;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// Where the Secrets of chart sources that need credentials (`secretRef`, `certSecretRef`) are
/// read from.
#[derive(Clone, Copy)]
pub enum Secrets<'a> {
    /// The cluster's API server (the same cluster the diff compares against, or, against
    /// another revision, the cluster's kubeconfig context reached for its Secrets alone).
    Cluster(&'a kube::Client),
    /// Nowhere: why (e.g. no kubeconfig context of the cluster's name).
    Unavailable(&'a str),
}

/// Renders every HelmRelease of `build` (cluster `cluster` of `tree`) and adds its objects.
/// `client`: the live cluster (Capabilities, `lookup`, the stored release, values not in the
/// build); `None` renders offline, as `helm template` does. `secrets`: where the credentials
/// of chart sources needing them are read. A chart that fails to render fails the cluster's
/// build, as a failing kustomize build does.
pub async fn render_releases(
    build: &mut ClusterBuild,
    tree: &Tree,
    cluster: &str,
    client: Option<&kube::Client>,
    secrets: Secrets<'_>,
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
        let chart = match locate(&hr, &ns, build, cluster, client, secrets).await {
            Ok(Located::Repository(folder)) => {
                let revision = tree.commit.as_deref();
                if folder.build.revision_strategy && revision.is_none() {
                    build.notes.push(format!(
                        "{id}: its chart's version is rendered without the source revision reconcileStrategy Revision adds: the work tree has none yet"
                    ));
                }
                let opts = folder.build.options(
                    HelmChartSourceKind::GitRepository,
                    revision.map(|sha| format!("sha1:{sha}")).as_deref(),
                );
                build_chart(tree.path(), &folder.chart, &opts)
                    .map_err(|e| failed(format!("loading the chart ./{}: {e}", folder.chart)))?
            }
            Ok(Located::Remote(remote)) => match pull(remote).await {
                Ok(chart) => chart,
                Err(why) => {
                    build.notes.push(format!("{id}: chart not rendered: {why}"));
                    continue;
                }
            },
            Ok(Located::Oci(oci)) => match pull_oci(oci).await {
                Ok(chart) => chart,
                Err(why) => {
                    build.notes.push(format!("{id}: chart not rendered: {why}"));
                    continue;
                }
            },
            Ok(Located::Bucket(bucket)) => match pull_bucket(bucket).await {
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
    /// A folder of the fleet repository.
    Repository(InRepository),
    /// A chart of an HTTP(S) chart repository.
    Remote(Remote),
    /// A chart in an OCI registry: a `type: oci` HelmRepository's, or an OCIRepository's
    /// artifact.
    Oci(Oci),
    /// A chart folder among a Bucket's objects.
    Bucket(InBucket),
}

/// A chart folder of the fleet repository.
struct InRepository {
    /// The folder (relative, normalised).
    chart: String,
    build: ChartBuild,
}

/// What source-controller changes in a chart as it builds its artifact: `valuesFiles` merged
/// into its values, and build metadata added to its version (the source revision under
/// `reconcileStrategy: Revision`, the HelmChart's generation with values files).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct ChartBuild {
    values_files: Vec<String>,
    ignore_missing_values_files: bool,
    /// `reconcileStrategy: Revision` (for charts of Git repositories and Buckets).
    revision_strategy: bool,
    /// The generation the HelmChart has once the cluster applies the build ([`generation`]).
    generation: i64,
}

impl ChartBuild {
    /// The build options for a chart of a `kind` source at `revision` (its artifact's).
    fn options(&self, kind: HelmChartSourceKind, revision: Option<&str>) -> BuildOptions {
        let mut opts = BuildOptions {
            values_files: self.values_files.clone(),
            ignore_missing_values_files: self.ignore_missing_values_files,
            ..BuildOptions::default()
        };
        let strategy = match (self.revision_strategy, revision) {
            (true, Some(_)) => HelmChartReconcileStrategy::Revision,
            _ => HelmChartReconcileStrategy::ChartVersion,
        };
        opts.version_metadata = ferroflux_controller::helmchart::version_metadata(
            strategy,
            kind,
            revision.unwrap_or_default(),
            !opts.effective_values_files().is_empty(),
            Some(self.generation),
        );
        opts
    }
}

/// The chart folder `chart` of a source whose files are at `root`, as source-controller
/// builds it ([`ChartBuild`]): values files (relative to `root`) merged, metadata added to
/// the version; loaded as it is when neither applies.
fn build_chart(
    root: &Path,
    chart: &str,
    opts: &BuildOptions,
) -> Result<ferroflux_helm::Chart, String> {
    if opts.effective_values_files().is_empty() && opts.version_metadata.is_none() {
        return ferroflux_helm::load(&root.join(chart)).map_err(|e| e.to_string());
    }
    let built = ferroflux_helmsource::build_from_source(
        root,
        chart,
        opts,
        &ferroflux_helmsource::AnonymousRepositories,
    )
    .map_err(|e| e.to_string())?;
    let archive = built
        .archive
        .ok_or_else(|| format!("building {chart} gave no archive"))?;
    ferroflux_helm::load_archive(&archive).map_err(|e| e.to_string())
}

/// The generation the HelmChart `ns/name` has once `desired` (its spec) is applied, as the API
/// server counts: the live object's when its spec is the same, one more when it differs, 1 when
/// there is no such object, no cluster to ask (against another revision) or the object cannot
/// be read: the generation shows only in the chart's version, never in what is applied.
async fn generation(desired: &Value, ns: &str, name: &str, client: Option<&kube::Client>) -> i64 {
    let Some(client) = client else {
        return 1;
    };
    let api: kube::Api<HelmChart> = kube::Api::namespaced(client.clone(), ns);
    let Ok(Some(live)) = api.get_opt(name).await else {
        return 1;
    };
    let current = live.metadata.generation.unwrap_or(1);
    let live_spec = serde_json::to_value(&live.spec).unwrap_or_default();
    if same_chart_spec(desired, &live_spec) {
        current
    } else {
        current + 1
    }
}

/// Whether two HelmChart specs are the same, the CRD's defaults standing for absent fields.
fn same_chart_spec(a: &Value, b: &Value) -> bool {
    let field = |spec: &Value, key: &str| -> Value {
        match (key, spec.get(key)) {
            (_, Some(v)) if !v.is_null() => match key {
                // helm-controller writes the source's kind and name alone.
                "sourceRef" => serde_json::json!({"kind": v["kind"], "name": v["name"]}),
                _ => v.clone(),
            },
            ("version", _) => Value::from("*"),
            ("reconcileStrategy", _) => Value::from("ChartVersion"),
            ("ignoreMissingValuesFiles", _) => Value::from(false),
            ("valuesFiles", _) => Value::Array(Vec::new()),
            _ => Value::Null,
        }
    };
    [
        "chart",
        "version",
        "sourceRef",
        "interval",
        "reconcileStrategy",
        "valuesFiles",
        "ignoreMissingValuesFiles",
        "verify",
    ]
    .iter()
    .all(|k| field(a, k) == field(b, k))
}

/// How source-controller builds the chart of a HelmChart spec (`spec`, the HelmChart `ns/name`
/// once the cluster applies the build).
async fn chart_build(
    spec: &Value,
    ns: &str,
    name: &str,
    client: Option<&kube::Client>,
) -> ChartBuild {
    let values_files: Vec<String> =
        serde_json::from_value(spec["valuesFiles"].clone()).unwrap_or_default();
    let mut build = ChartBuild {
        ignore_missing_values_files: spec["ignoreMissingValuesFiles"].as_bool().unwrap_or(false),
        revision_strategy: spec["reconcileStrategy"] == "Revision",
        generation: 1,
        values_files,
    };
    // The generation shows in the version only with values files: not asked otherwise.
    let with_files = BuildOptions {
        values_files: build.values_files.clone(),
        ..BuildOptions::default()
    };
    if !with_files.effective_values_files().is_empty() {
        build.generation = generation(spec, ns, name, client).await;
    }
    build
}

/// A chart folder to take from a Bucket's objects.
struct InBucket {
    /// The S3 client's settings (endpoint, credentials, TLS, timeout).
    options: ferroflux_bucket::Options,
    /// Whose credentials `options` carry, when any.
    credentials: Option<String>,
    /// `spec.bucketName`, `spec.prefix`, `spec.ignore`.
    bucket: String,
    prefix: String,
    ignore: Option<String>,
    /// The chart's folder in the bucket (relative, normalised).
    chart: String,
    build: ChartBuild,
}

/// A chart to pull from a chart repository.
struct Remote {
    access: ferroflux_helmsource::RepositoryAccess,
    /// Whose credentials `access` carries (`cluster Secret ns/name`), when any: pulls made with
    /// different credentials are not shared.
    credentials: Option<String>,
    chart: String,
    version: String,
    build: ChartBuild,
}

/// A chart to pull from an OCI registry.
struct Oci {
    /// The registry client's settings (credentials, TLS, insecure, timeout).
    options: ferroflux_oci::ClientOptions,
    /// Whose credentials `options` carry, when any.
    credentials: Option<String>,
    what: OciChart,
}

/// What to pull from the registry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum OciChart {
    /// Chart `chart` at `version` (a range) of the `type: oci` HelmRepository `url`.
    HelmRepository {
        url: String,
        chart: String,
        version: String,
        build: ChartBuild,
    },
    /// The artifact of an OCIRepository: its `url`, `ref` and `layerSelector` (JSON).
    Artifact {
        url: String,
        reference: String,
        layer: String,
    },
}

/// The source object `Kind/ns/name`: from the build (what the cluster will hold), else from
/// the live cluster.
async fn source_object<K>(
    build: &ClusterBuild,
    ns: &str,
    name: &str,
    client: Option<&kube::Client>,
) -> Result<K, String>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + serde::de::DeserializeOwned
        + Clone
        + std::fmt::Debug,
{
    let id = format!("{}/{ns}/{name}", K::kind(&()));
    if let Some(b) = build.objects.get(&id) {
        return serde_json::from_value(b.object.clone()).map_err(|e| format!("{id}: {e}"));
    }
    let Some(client) = client else {
        return Err(format!(
            "it comes from {id}, which the repository does not hold"
        ));
    };
    let api: kube::Api<K> = kube::Api::namespaced(client.clone(), ns);
    match api.get_opt(name).await {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(format!(
            "it comes from {id}, which neither the repository nor the cluster holds"
        )),
        Err(e) => Err(format!("reading {id} from the cluster: {e}")),
    }
}

/// The Secrets a source's `secretRef` and `certSecretRef` name, as `Secret ns/name`.
fn secret_names<'a>(ns: &str, names: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let names: Vec<String> = names
        .into_iter()
        .flatten()
        .map(|n| format!("Secret {ns}/{n}"))
        .collect();
    names.join(" and ")
}

/// Why a source needing credentials is not pulled: its Secrets cannot be read.
fn needs_credentials(source: &str, secrets: &str, why: &str) -> String {
    format!("it comes from {source}, which needs credentials ({secrets}): {why}")
}

/// The client to read `source`'s Secrets with, or why there is none.
fn secrets_client<'a>(
    source: &str,
    names: &str,
    secrets: Secrets<'a>,
) -> Result<&'a kube::Client, String> {
    match secrets {
        Secrets::Cluster(client) => Ok(client),
        Secrets::Unavailable(why) => Err(needs_credentials(source, names, why)),
    }
}

/// A failure to read `source`'s Secrets from the cluster, or to use them.
fn unreadable(source: &str, names: &str, cluster: &str, e: impl std::fmt::Display) -> String {
    format!("{source}: its credentials ({names}) from cluster {cluster}: {e}")
}

/// A chart of a source: a `spec.chart` template, or the spec of the HelmChart a `chartRef`
/// names.
struct ChartOfSource {
    chart: String,
    version: Option<String>,
    kind: String,
    name: String,
    /// The source's namespace.
    namespace: String,
    build: ChartBuild,
}

/// Where `hr`'s chart is, or why fleet diff does not render it.
async fn locate(
    hr: &HelmRelease,
    ns: &str,
    build: &ClusterBuild,
    cluster: &str,
    client: Option<&kube::Client>,
    secrets: Secrets<'_>,
) -> Result<Located, String> {
    let secrets_of = |source: &str| format!("{source}'s Secrets on cluster {cluster}");
    let of_source = if let Some(r) = &hr.spec.chart_ref {
        let src_ns = r
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| ns.to_string());
        match r.kind {
            ChartRefKind::OCIRepository => {
                return locate_oci_repository(build, &src_ns, &r.name, cluster, client, secrets)
                    .await;
            }
            ChartRefKind::HelmChart => {
                // helm-controller reads the HelmChart's artifact; here the HelmChart's spec is
                // built as the source controller would build it.
                let source = format!("HelmChart/{src_ns}/{}", r.name);
                let chart: HelmChart = source_object(build, &src_ns, &r.name, client).await?;
                let desired = serde_json::to_value(&chart.spec).unwrap_or_default();
                let mut chart_build = chart_build(&desired, &src_ns, &r.name, client).await;
                // A HelmChart only the cluster holds keeps its generation.
                if !build.objects.contains_key(&source) {
                    chart_build.generation = chart.metadata.generation.unwrap_or(1);
                }
                let spec = chart.spec;
                ChartOfSource {
                    chart: spec.chart,
                    version: spec.version,
                    kind: spec.source_ref.kind.as_str().to_string(),
                    name: spec.source_ref.name,
                    // A HelmChart's source is in its own namespace.
                    namespace: src_ns,
                    build: chart_build,
                }
                .with_origin(&source)
            }
            _ => {
                return Err(format!(
                    "it comes from chartRef {}/{src_ns}/{}, which fleet diff does not fetch (HelmChart and OCIRepository chartRefs are rendered)",
                    r.kind.as_str(),
                    r.name
                ));
            }
        }
    } else {
        let Some(template) = &hr.spec.chart else {
            return Err("the HelmRelease names no chart".into());
        };
        let spec = &template.spec;
        let src = &spec.source_ref;
        // The HelmChart helm-controller makes of the template.
        let desired = helm_chart_object(hr, template);
        let chart_build = chart_build(
            &desired["spec"],
            desired["metadata"]["namespace"].as_str().unwrap_or(ns),
            desired["metadata"]["name"].as_str().unwrap_or_default(),
            client,
        )
        .await;
        (
            ChartOfSource {
                chart: spec.chart.clone(),
                version: spec.version.clone(),
                kind: src.kind.as_str().to_string(),
                name: src.name.clone(),
                namespace: src.namespace.clone().unwrap_or_else(|| ns.to_string()),
                build: chart_build,
            },
            String::new(),
        )
    };
    let (spec, via) = of_source;
    let src_ns = spec.namespace.clone();
    let source = format!("{}/{src_ns}/{}", spec.kind, spec.name);
    if spec.kind == "HelmRepository" {
        let repository: HelmRepository = source_object(build, &src_ns, &spec.name, client)
            .await
            .map_err(|e| format!("{via}{e}"))?;
        let spec_repo = &repository.spec;
        let names = secret_names(
            &src_ns,
            [
                spec_repo.secret_ref.as_ref().map(|r| r.name.as_str()),
                spec_repo.cert_secret_ref.as_ref().map(|r| r.name.as_str()),
            ],
        );
        let secured = !names.is_empty();
        let reader = if secured {
            Some(secrets_client(&source, &names, secrets).map_err(|e| format!("{via}{e}"))?)
        } else {
            None
        };
        let version = spec
            .version
            .clone()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "*".into());
        let credentials = secured.then(|| secrets_of(&source));
        if spec_repo.r#type == Some(HelmRepositoryType::Oci) {
            let options = match reader {
                Some(reader) => ferroflux_controller::helmchart::oci_client_options(
                    reader,
                    &repository,
                    &src_ns,
                )
                .await
                .map_err(|e| format!("{via}{}", unreadable(&source, &names, cluster, e)))?,
                None => ferroflux_oci::ClientOptions {
                    insecure: spec_repo.insecure.unwrap_or(false),
                    timeout: ferroflux_controller::helmrepository::timeout_of(&repository),
                    ..Default::default()
                },
            };
            return Ok(Located::Oci(Oci {
                options,
                credentials,
                what: OciChart::HelmRepository {
                    url: spec_repo.url.clone(),
                    chart: spec.chart.clone(),
                    version,
                    build: spec.build,
                },
            }));
        }
        let access = match reader {
            Some(reader) => {
                ferroflux_controller::helmrepository::access_for(reader, &repository, &src_ns)
                    .await
                    .map_err(|e| format!("{via}{}", unreadable(&source, &names, cluster, e)))?
            }
            None => ferroflux_helmsource::RepositoryAccess::anonymous(&spec_repo.url),
        };
        return Ok(Located::Remote(Remote {
            access,
            credentials,
            chart: spec.chart.clone(),
            version,
            build: spec.build,
        }));
    }
    if spec.kind == "Bucket" {
        return locate_bucket(&spec, &source, cluster, build, client, secrets)
            .await
            .map_err(|e| format!("{via}{e}"));
    }
    if spec.kind != "GitRepository" || spec.name != "flux-system" || src_ns != "flux-system" {
        return Err(format!(
            "{via}it comes from {source}, which fleet diff does not fetch (charts kept in this repository, HelmRepository and Bucket charts, and HelmChart and OCIRepository chartRefs are rendered)"
        ));
    }
    let mut parts = Vec::new();
    for c in Path::new(&spec.chart).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            // The chart must stay inside the repository, as the source controller requires.
            _ => {
                return Err(format!(
                    "{via}chart path {:?} leaves the repository",
                    spec.chart
                ));
            }
        }
    }
    if parts.is_empty() {
        return Err(format!("{via}the chart path is empty"));
    }
    Ok(Located::Repository(InRepository {
        chart: parts.join("/"),
        build: spec.build.clone(),
    }))
}

/// `path` as a relative path that stays inside its root (`./a/../b` is refused, as the
/// source controller refuses a chart path leaving its artifact).
fn inside(path: &str) -> Result<String, String> {
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err(format!("chart path {path:?} leaves its source")),
        }
    }
    if parts.is_empty() {
        return Err("the chart path is empty".into());
    }
    Ok(parts.join("/"))
}

/// A chart of a Bucket: the Bucket from the build (else the live cluster), its client settings
/// (with its Secrets when it has a `secretRef` or `certSecretRef`).
async fn locate_bucket(
    spec: &ChartOfSource,
    source: &str,
    cluster: &str,
    build: &ClusterBuild,
    client: Option<&kube::Client>,
    secrets: Secrets<'_>,
) -> Result<Located, String> {
    let bucket: ferroflux_api::Bucket =
        source_object(build, &spec.namespace, &spec.name, client).await?;
    ferroflux_controller::bucket::validate(&bucket)
        .map_err(|e| format!("{source}: {}", e.message))?;
    let timeout = bucket
        .spec
        .timeout
        .as_deref()
        .and_then(|t| ferroflux_api::duration::parse_duration(t).ok())
        .unwrap_or(OCI_TIMEOUT);
    let names = secret_names(
        &spec.namespace,
        [
            bucket.spec.secret_ref.as_ref().map(|r| r.name.as_str()),
            bucket
                .spec
                .cert_secret_ref
                .as_ref()
                .map(|r| r.name.as_str()),
            bucket
                .spec
                .proxy_secret_ref
                .as_ref()
                .map(|r| r.name.as_str()),
        ],
    );
    let (options, credentials) = if names.is_empty() {
        (
            ferroflux_bucket::Options {
                endpoint: bucket.spec.endpoint.clone(),
                insecure: bucket.spec.insecure.unwrap_or(false),
                region: bucket.spec.region.clone().unwrap_or_default(),
                credentials: None,
                ca_pem: None,
                timeout,
                proxy: None,
            },
            None,
        )
    } else {
        let reader = secrets_client(source, &names, secrets)?;
        (
            ferroflux_controller::bucket::client_options(reader, &bucket, &spec.namespace, timeout)
                .await
                .map_err(|e| unreadable(source, &names, cluster, e.message))?,
            Some(format!("{source}'s Secrets on cluster {cluster}")),
        )
    };
    Ok(Located::Bucket(InBucket {
        options,
        credentials,
        bucket: bucket.spec.bucket_name.clone(),
        prefix: bucket.spec.prefix.clone().unwrap_or_default(),
        ignore: bucket.spec.ignore.clone(),
        chart: inside(&spec.chart)?,
        build: spec.build.clone(),
    }))
}

/// The chart of a Bucket: its objects fetched as the source controller fetches them (prefix,
/// `.sourceignore` and `spec.ignore`), then the chart folder loaded from them; once per process
/// for the same bucket, folder and credentials.
async fn pull_bucket(b: InBucket) -> Result<ferroflux_helm::Chart, String> {
    type Key = (
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        ChartBuild,
    );
    static PULLED: std::sync::Mutex<BTreeMap<Key, std::sync::Arc<ferroflux_helm::Chart>>> =
        std::sync::Mutex::new(BTreeMap::new());
    let key: Key = (
        b.options.endpoint.clone(),
        b.bucket.clone(),
        b.prefix.clone(),
        b.chart.clone(),
        b.ignore.clone(),
        b.credentials.clone(),
        b.build.clone(),
    );
    if let Some(chart) = PULLED.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok((*chart).clone());
    }
    // The S3 client blocks (ureq).
    let chart = tokio::task::spawn_blocking(move || {
        let shown = format!("bucket {} at {}", b.bucket, b.options.endpoint);
        let client = ferroflux_bucket::Client::new(b.options.clone())
            .map_err(|e| format!("{shown}: {e}"))?;
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
        let storage =
            ferroflux_source::Storage::new(dir.path().join("storage"), "http://fleet-diff")
                .map_err(|e| format!("a temporary storage: {e}"))?;
        let request = ferroflux_bucket::Request {
            bucket: b.bucket.clone(),
            prefix: b.prefix.clone(),
            ignore: b.ignore.clone(),
            key: ferroflux_source::ObjectKey::of_kind("bucket", "fleet-diff", "chart"),
            previous_revision: None,
        };
        let artifact = match ferroflux_bucket::fetch(&client, &request, &storage)
            .map_err(|e| format!("{shown}: {e}"))?
        {
            ferroflux_bucket::Fetched::Stored { artifact, .. } => artifact,
            ferroflux_bucket::Fetched::Unchanged { .. } => {
                return Err(format!("{shown}: nothing fetched"));
            }
        };
        let files = dir.path().join("files");
        let archive = std::fs::File::open(storage.local_path(&artifact.path))
            .map_err(|e| format!("reading the fetched objects: {e}"))?;
        ferroflux_oci::extract::extract_tar_gz(
            archive,
            &files,
            ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE,
        )
        .map_err(|e| format!("unpacking the fetched objects: {e}"))?;
        if !files.join(&b.chart).join("Chart.yaml").is_file() {
            return Err(format!(
                "{shown} holds no chart at {} (no Chart.yaml)",
                b.chart
            ));
        }
        let opts = b
            .build
            .options(HelmChartSourceKind::Bucket, Some(&artifact.revision));
        build_chart(&files, &b.chart, &opts)
            .map_err(|e| format!("loading the chart {}: {e}", b.chart))
    })
    .await
    .map_err(|e| format!("pulling the chart stopped: {e}"))??;
    if let Ok(mut m) = PULLED.lock() {
        m.insert(key, std::sync::Arc::new(chart.clone()));
    }
    Ok(chart)
}

impl ChartOfSource {
    /// The spec with what it was read from, as a note's prefix (`HelmChart/ns/name: `).
    fn with_origin(self, origin: &str) -> (ChartOfSource, String) {
        (self, format!("{origin}: "))
    }
}

/// An OCIRepository `chartRef`: the artifact its `ref` resolves to, pulled with its Secrets
/// when it needs credentials.
async fn locate_oci_repository(
    build: &ClusterBuild,
    src_ns: &str,
    name: &str,
    cluster: &str,
    client: Option<&kube::Client>,
    secrets: Secrets<'_>,
) -> Result<Located, String> {
    let source = format!("OCIRepository/{src_ns}/{name}");
    let repository: OCIRepository = source_object(build, src_ns, name, client).await?;
    let parsed = ferroflux_controller::ocirepository::validate(&repository)
        .map_err(|e| format!("{source}: {}", e.message))?;
    let timeout = repository
        .spec
        .timeout
        .as_deref()
        .and_then(|t| ferroflux_api::duration::parse_duration(t).ok())
        .unwrap_or(OCI_TIMEOUT);
    let names = secret_names(
        src_ns,
        [
            repository.spec.secret_ref.as_ref().map(|r| r.name.as_str()),
            repository
                .spec
                .cert_secret_ref
                .as_ref()
                .map(|r| r.name.as_str()),
            repository
                .spec
                .proxy_secret_ref
                .as_ref()
                .map(|r| r.name.as_str()),
        ],
    );
    let (options, credentials) = if names.is_empty() {
        (
            ferroflux_oci::ClientOptions {
                insecure: repository.spec.insecure.unwrap_or(false),
                timeout,
                ..Default::default()
            },
            None,
        )
    } else {
        let reader = secrets_client(&source, &names, secrets)?;
        (
            ferroflux_controller::ocirepository::client_options(
                reader,
                &repository,
                src_ns,
                &parsed.registry,
                timeout,
            )
            .await
            .map_err(|e| unreadable(&source, &names, cluster, e.message))?,
            Some(format!("{source}'s Secrets on cluster {cluster}")),
        )
    };
    Ok(Located::Oci(Oci {
        options,
        credentials,
        what: OciChart::Artifact {
            url: repository.spec.url.clone(),
            reference: serde_json::to_string(&repository.spec.r#ref).unwrap_or_default(),
            layer: serde_json::to_string(&repository.spec.layer_selector).unwrap_or_default(),
        },
    }))
}

/// Pulls `remote` as the source controller does (index, version range, `valuesFiles`), once
/// per process for the same repository, chart, range, build and credentials.
async fn pull(remote: Remote) -> Result<ferroflux_helm::Chart, String> {
    type Key = (String, String, String, ChartBuild, Option<String>);
    static PULLED: std::sync::Mutex<BTreeMap<Key, std::sync::Arc<Vec<u8>>>> =
        std::sync::Mutex::new(BTreeMap::new());
    let key: Key = (
        remote.access.url.clone(),
        remote.chart.clone(),
        remote.version.clone(),
        remote.build.clone(),
        remote.credentials.clone(),
    );
    let cached = PULLED.lock().ok().and_then(|m| m.get(&key).cloned());
    let archive = match cached {
        Some(a) => a,
        None => {
            // The chart repository client blocks (ureq).
            let archive = tokio::task::spawn_blocking(move || {
                use ferroflux_helmsource::{
                    MAX_INDEX_SIZE, build_from_repository, fetch_index, redact,
                };
                let shown = redact(&remote.access.url);
                let fetched = fetch_index(remote.access.clone(), MAX_INDEX_SIZE)
                    .map_err(|e| format!("fetching the index of {shown}: {e}"))?;
                let opts = remote
                    .build
                    .options(HelmChartSourceKind::HelmRepository, None);
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

/// The default `spec.timeout` of an OCIRepository.
const OCI_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Pulls a chart from an OCI registry, once per process for the same chart and credentials:
/// a `type: oci` HelmRepository's as the source controller builds it, or an OCIRepository's
/// artifact with helm-controller's version rule applied.
async fn pull_oci(oci: Oci) -> Result<ferroflux_helm::Chart, String> {
    type Key = (OciChart, Option<String>);
    static PULLED: std::sync::Mutex<BTreeMap<Key, std::sync::Arc<ferroflux_helm::Chart>>> =
        std::sync::Mutex::new(BTreeMap::new());
    let key: Key = (oci.what.clone(), oci.credentials.clone());
    if let Some(chart) = PULLED.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok((*chart).clone());
    }
    // The registry client blocks (ureq).
    let chart = tokio::task::spawn_blocking(move || match &oci.what {
        OciChart::HelmRepository {
            url,
            chart,
            version,
            build,
        } => {
            use ferroflux_helmsource::oci::{OciRepository, build_from_oci};
            let repository =
                OciRepository::new(url, oci.options.clone()).map_err(|e| format!("{url}: {e}"))?;
            let opts = build.options(HelmChartSourceKind::HelmRepository, None);
            let built = build_from_oci(&repository, chart, version, &opts)
                .map_err(|e| format!("pulling {chart} {version} from {url}: {e}"))?;
            let archive = built
                .build
                .archive
                .ok_or_else(|| format!("{url} gave no archive for {chart}"))?;
            ferroflux_helm::load_archive(&archive)
                .map_err(|e| format!("loading the pulled chart: {e}"))
        }
        OciChart::Artifact {
            url,
            reference,
            layer,
        } => {
            let reference: Option<OCIRepositoryRef> =
                serde_json::from_str(reference).map_err(|e| e.to_string())?;
            let layer: Option<OCILayerSelector> =
                serde_json::from_str(layer).map_err(|e| e.to_string())?;
            let (mut chart, revision) = pull_artifact(
                url,
                reference.unwrap_or_default(),
                layer,
                oci.options.clone(),
            )
            .map_err(|e| format!("pulling {url}: {e}"))?;
            let (version, _) = ferroflux_controller::helmrelease::chart::version_with_digest(
                &chart.metadata.version,
                &revision,
            )?;
            chart.metadata.version = version;
            Ok(chart)
        }
    })
    .await
    .map_err(|e| format!("pulling the chart stopped: {e}"))??;
    if let Ok(mut m) = PULLED.lock() {
        m.insert(key, std::sync::Arc::new(chart.clone()));
    }
    Ok(chart)
}

/// An OCIRepository's artifact as the source controller fetches it — the ref resolved (digest,
/// else the highest tag in the semver range, else the tag, else `latest`), the manifest
/// pinned, the layer of `layerSelector.mediaType` (else the first) — loaded as a chart: the
/// layer itself with `operation: copy`, else the chart folder of its extracted files. Also its
/// revision (`<tag>@sha256:…` or `sha256:…`).
fn pull_artifact(
    url: &str,
    r#ref: OCIRepositoryRef,
    layer: Option<OCILayerSelector>,
    options: ferroflux_oci::ClientOptions,
) -> Result<(ferroflux_helm::Chart, String), String> {
    use ferroflux_oci::{Client, Reference, artifact};
    let repository = Reference::parse(url).map_err(|e| e.to_string())?;
    let client = Client::for_reference(&repository, options).map_err(|e| e.to_string())?;
    let (target, tag) = if let Some(d) = &r#ref.digest {
        (repository.with_digest(d), None)
    } else if let Some(range) = &r#ref.semver {
        let tags = client
            .list_tags(&repository.repository)
            .map_err(|e| e.to_string())?;
        let t = ferroflux_oci::tags::pick_semver(
            &repository.repo_url(),
            &tags,
            range,
            r#ref.semver_filter.as_deref(),
        )
        .map_err(|e| e.to_string())?;
        (repository.with_tag(&t), Some(t))
    } else {
        let t = r#ref.tag.clone().unwrap_or_else(|| "latest".into());
        (repository.with_tag(&t), Some(t))
    };
    let head = client.head_manifest(&target).map_err(|e| e.to_string())?;
    let revision = ferroflux_controller::ocirepository::revision(tag.as_deref(), &head.digest);
    let pinned = target.with_digest(&head.digest);
    let resolved = artifact::resolve(&client, &pinned).map_err(|e| e.to_string())?;
    let media_type = layer.as_ref().and_then(|l| l.media_type.as_deref());
    let descriptor = artifact::select_layer(&target, &resolved.manifest, media_type)
        .map_err(|e| e.to_string())?
        .clone();
    let copy = layer
        .as_ref()
        .and_then(|l| l.operation)
        .is_some_and(|o| o == OCILayerOperation::Copy);
    let limit = artifact::DEFAULT_MAX_LAYER_SIZE;
    let chart = if copy {
        let mut file = artifact::fetch_layer(&client, &pinned, &descriptor, limit)
            .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .map_err(|e| format!("reading the layer: {e}"))?;
        ferroflux_helm::load_archive(&bytes).map_err(|e| format!("loading the chart: {e}"))?
    } else {
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
        let extracted = ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE;
        artifact::extract_layer(&client, &pinned, &descriptor, dir.path(), limit, extracted)
            .map_err(|e| e.to_string())?;
        ferroflux_helm::load(&chart_folder(dir.path())?)
            .map_err(|e| format!("loading the chart: {e}"))?
    };
    Ok((chart, revision))
}

/// The chart in an extracted artifact: the folder itself when it holds `Chart.yaml`, else its
/// only sub-folder holding one (a packaged chart's `<name>/`).
fn chart_folder(dir: &Path) -> Result<std::path::PathBuf, String> {
    if dir.join("Chart.yaml").is_file() {
        return Ok(dir.to_path_buf());
    }
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        if e.path().join("Chart.yaml").is_file() {
            found.push(e.path());
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err("the artifact holds no chart (no Chart.yaml)".into()),
        _ => Err("the artifact holds several charts".into()),
    }
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
/// ([`render_releases`]): against `client` when given, offline otherwise; credentials read as
/// `secrets` says.
pub async fn build_cluster_with_releases(
    tree: &Tree,
    name: &str,
    client: Option<&kube::Client>,
    secrets: Secrets<'_>,
) -> Result<ClusterBuild, RepoError> {
    use ferroflux_controller::kustomization::build::Cluster;
    let on = match client {
        Some(c) => Cluster::Client(c),
        None => Cluster::Offline,
    };
    let mut build = crate::repo::build_cluster(tree, name, on).await?;
    render_releases(&mut build, tree, name, client, secrets).await?;
    Ok(build)
}
