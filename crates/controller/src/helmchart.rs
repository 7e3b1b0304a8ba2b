//! The `HelmChart` reconciler: one pass over one object. Finds the source (a HelmRepository's
//! stored index, a `type: oci` HelmRepository's registry, or a GitRepository's or Bucket's artifact
//! downloaded and unpacked once per artifact for all the charts built from it, see
//! [`SourceTrees`]), builds the chart with
//! `ferroflux-helmsource` on a blocking thread (a cached chart of the same name and version is
//! kept unless the generation changed), stores `<chart>-<version>.tgz`, and writes Flux's
//! status, finalizer and events.
//!
//! Revision rules (Flux's): the artifact's revision is the chart's version; with
//! `reconcileStrategy: Revision` a Git source adds `+<first 12 hex of the commit>`; values files
//! add the object's generation (`+<generation>`, or `.<generation>` after a commit).
//!
//! `spec.verify` (cosign/notation, OCI charts only) is refused with source-controller's
//! `VerificationError` on `SourceVerified` and Ready, and the artifact withdrawn from status:
//! ferroflux does not check signatures, and an unverified chart must not be installed.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::artifact;
use crate::finalizer;
use crate::gitrepository::Reconciled;
use crate::helmrepository::{FIELD_MANAGER, Options, access_for, timeout_of, to_artifact};
use crate::metrics::Metrics;
use crate::ocirepository::{SOURCE_VERIFIED, oci_reason, verification_unsupported};
use crate::sourceloop::{self, secret_data};
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::helmchart::{HelmChartSourceKind, ReconcileStrategy};
use ferroflux_api::helmrepository::{HelmRepositoryProvider, HelmRepositoryType};
use ferroflux_api::{GitRepository, HelmChart, HelmChartStatus, HelmRepository, Revision};
use ferroflux_helmsource::{Build, BuildOptions, DependencyRepositories, RepositoryAccess};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::future::Future;
use std::pin::Pin;

const KIND: &str = "HelmChart";
/// source-controller's condition of a failed chart build.
pub const BUILD_FAILED: &str = "BuildFailed";
/// The reason when the source cannot be read.
pub const SOURCE_UNAVAILABLE: &str = "SourceUnavailable";
/// The reason when the source has no artifact yet.
pub const NO_SOURCE_ARTIFACT: &str = "NoSourceArtifact";

/// A failed pass and which condition carries it (`FetchFailed` for the source, `BuildFailed`
/// for the build, `StorageOperationFailed`), or `Ready=Unknown` while the source has no artifact.
#[derive(Debug, Clone)]
pub struct ChartFailure {
    /// The reason, message, stall and retry.
    pub failure: Failure,
    /// `FetchFailed`, `BuildFailed`, `StorageOperationFailed`, or `None` for a wait.
    pub condition: Option<&'static str>,
}

impl ChartFailure {
    fn fetch(failure: Failure) -> Self {
        ChartFailure {
            failure,
            condition: Some(conditions::FETCH_FAILED),
        }
    }
    fn build(failure: Failure) -> Self {
        let condition = if failure.reason == ferroflux_helmsource::reason::STORAGE_OPERATION_FAILED
        {
            conditions::STORAGE_OPERATION_FAILED
        } else {
            BUILD_FAILED
        };
        ChartFailure {
            failure,
            condition: Some(condition),
        }
    }
    fn verification(failure: Failure) -> Self {
        ChartFailure {
            failure,
            condition: Some(SOURCE_VERIFIED),
        }
    }
    fn waiting(message: String, interval: Duration) -> Self {
        // The source's watch brings the chart back when the artifact appears; this bounds the
        // wait if that event is missed.
        let requeue = interval.min(Duration::from_secs(30));
        ChartFailure {
            failure: Failure::retry(NO_SOURCE_ARTIFACT, message, requeue),
            condition: None,
        }
    }
}

/// Source artifacts (a GitRepository's) unpacked once and shared by every HelmChart built from
/// them: a fleet of HelmReleases whose chart lives in one repository has one HelmChart per
/// release, and each would otherwise download and unpack the same artifact again. Keyed by the
/// artifact's digest, so a tree is exactly the bytes the digest names; the last few artifacts
/// are kept (a build in progress keeps its tree alive until it ends), and charts that ask for
/// the same artifact at once wait for one download. Builds only read the tree.
#[derive(Clone, Default)]
pub struct SourceTrees(Arc<std::sync::Mutex<VecDeque<Tree>>>);

/// An artifact's digest and its tree.
type Tree = (String, Arc<TreeCell>);

/// One artifact's tree, unpacked by the first chart that asks for it.
type TreeCell = tokio::sync::OnceCell<Arc<tempfile::TempDir>>;

/// How many unpacked artifacts [`SourceTrees`] keeps: the current and the previous revision of
/// a few sources.
const TREES_KEPT: usize = 4;

impl SourceTrees {
    /// The unpacked tree of `artifact`, downloaded, checked against its digest and unpacked
    /// unless an earlier call already did.
    async fn get(
        &self,
        artifact: &ferroflux_api::Artifact,
    ) -> Result<Arc<tempfile::TempDir>, TreeError> {
        let cell = {
            let mut trees = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match trees.iter().find(|(digest, _)| *digest == artifact.digest) {
                Some((_, cell)) => cell.clone(),
                None => {
                    let cell = Arc::new(TreeCell::new());
                    // An artifact without a digest cannot be told apart: never shared.
                    if !artifact.digest.is_empty() {
                        trees.push_back((artifact.digest.clone(), cell.clone()));
                        while trees.len() > TREES_KEPT {
                            trees.pop_front();
                        }
                    }
                    cell
                }
            }
        };
        // A failed attempt leaves the cell empty: the next chart tries again.
        cell.get_or_try_init(|| unpack(artifact.clone()))
            .await
            .cloned()
    }
}

/// Why a source artifact could not be had: its download or digest, or unpacking it.
#[derive(Debug)]
enum TreeError {
    Fetch(String),
    Unpack(String),
}

async fn unpack(artifact: ferroflux_api::Artifact) -> Result<Arc<tempfile::TempDir>, TreeError> {
    let data = artifact::download(&artifact.url, artifact::DEFAULT_MAX_SIZE)
        .await
        .map_err(|e| TreeError::Fetch(e.to_string()))?;
    artifact::verify_digest(&data, &artifact.digest)
        .map_err(|e| TreeError::Fetch(e.to_string()))?;
    let unpacked = step::blocking("unpacking the source artifact", move || {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        artifact::untar(&data, dir.path(), artifact::DEFAULT_MAX_SIZE)
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(dir)
    })
    .await
    .map_err(TreeError::Unpack)?
    .map_err(TreeError::Unpack)?;
    Ok(Arc::new(unpacked))
}

/// What a successful pass produced.
#[derive(Debug, Clone)]
pub struct Built {
    /// The build (its archive is `None` when the cached chart was kept).
    pub build: Build,
    /// Where it was stored, when it was.
    pub stored: Option<ferroflux_helmsource::Stored>,
    /// The source artifact's revision.
    pub source_revision: String,
}

/// Folds the pass into the status as source-controller does. Returns the event to publish.
pub fn apply_result(
    status: &mut HelmChartStatus,
    generation: Option<i64>,
    ignore_missing_values_files: bool,
    result: &Result<Built, ChartFailure>,
    now: Timestamp,
) -> Option<(String, String, String)> {
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    status.observed_generation = generation;
    match result {
        Ok(built) => {
            let summary = built.build.summary();
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &summary)
                .mark_true(conditions::ARTIFACT_IN_STORAGE, reason::SUCCEEDED, &summary)
                .delete(conditions::FETCH_FAILED)
                .delete(BUILD_FAILED)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING)
                .delete(conditions::STORAGE_OPERATION_FAILED);
            conds.delete(SOURCE_VERIFIED);
            // An OCI repository has no artifact, so no revision to observe (as Flux).
            status.observed_source_artifact_revision =
                (!built.source_revision.is_empty()).then(|| built.source_revision.clone());
            let stored = built.stored.as_ref()?;
            status.artifact = Some(to_artifact(stored, &built.build.version, now));
            status.url = Some(stored.stable_url.clone());
            status.observed_chart_name = Some(built.build.name.clone());
            status.observed_values_files =
                ignore_missing_values_files.then(|| built.build.values_files.clone());
            Some(("Normal".into(), reason::NEW_ARTIFACT.into(), summary))
        }
        Err(ChartFailure {
            failure,
            condition: None,
        }) => {
            conds
                .mark_unknown(conditions::READY, failure.reason, &failure.message)
                .mark_reconciling(reason::PROGRESSING, &failure.message);
            None
        }
        Err(ChartFailure {
            failure,
            condition: Some(SOURCE_VERIFIED),
        }) => {
            conds.mark_false(SOURCE_VERIFIED, failure.reason, &failure.message);
            failure.mark(&mut conds);
            // An unverified chart is not served: HelmReleases wait instead of installing it.
            status.artifact = None;
            status.url = None;
            Some((
                "Warning".into(),
                failure.reason.to_string(),
                failure.message.clone(),
            ))
        }
        Err(ChartFailure {
            failure,
            condition: Some(condition),
        }) => {
            conds.mark_true(condition, failure.reason, &failure.message);
            failure.mark(&mut conds);
            // The last good chart stays in status and in storage: HelmReleases keep using it.
            Some((
                "Warning".into(),
                failure.reason.to_string(),
                failure.message.clone(),
            ))
        }
    }
}

/// Build metadata as source-controller computes it for a Git source.
pub fn version_metadata(
    strategy: ReconcileStrategy,
    source_kind: HelmChartSourceKind,
    source_revision: &str,
    has_values_files: bool,
    generation: Option<i64>,
) -> Option<String> {
    let mut meta = String::new();
    if strategy == ReconcileStrategy::Revision && source_kind != HelmChartSourceKind::HelmRepository
    {
        let hash = Revision::parse(source_revision)
            .map(|r| r.hash().to_string())
            .unwrap_or_else(|| source_revision.to_string());
        meta = hash.chars().take(12).collect();
    }
    if has_values_files {
        if !meta.is_empty() {
            meta.push('.');
        }
        meta.push_str(&generation.unwrap_or_default().to_string());
    }
    (!meta.is_empty()).then_some(meta)
}

/// The HelmRepositories of the namespace by normalized URL, for dependencies: their access
/// (secrets read) or why it cannot be used.
struct NamespaceRepositories(HashMap<String, Result<RepositoryAccess, String>>);

impl DependencyRepositories for NamespaceRepositories {
    fn access(&self, url: &str) -> Result<RepositoryAccess, String> {
        match self.0.get(&ferroflux_helmsource::normalize_url(url)) {
            Some(r) => r.clone(),
            None => Ok(RepositoryAccess::anonymous(url)),
        }
    }
}

/// [`NamespaceRepositories`] listed the first time a dependency asks, from the blocking thread
/// the build runs on: a chart without remote dependencies (most charts kept in Git) costs no
/// list of the namespace's HelmRepositories.
struct LazyRepositories {
    client: kube::Client,
    namespace: String,
    runtime: tokio::runtime::Handle,
    listed: std::sync::OnceLock<NamespaceRepositories>,
}

impl DependencyRepositories for LazyRepositories {
    fn access(&self, url: &str) -> Result<RepositoryAccess, String> {
        self.listed
            .get_or_init(|| {
                self.runtime
                    .block_on(namespace_repositories(&self.client, &self.namespace))
            })
            .access(url)
    }
}

async fn namespace_repositories(client: &kube::Client, ns: &str) -> NamespaceRepositories {
    let api: Api<HelmRepository> = Api::namespaced(client.clone(), ns);
    let mut map = HashMap::new();
    if let Ok(list) = api.list(&ListParams::default()).await {
        for repo in list.items {
            if repo.repository_type() == HelmRepositoryType::Oci {
                continue;
            }
            let access = access_for(client, &repo, ns)
                .await
                .map_err(|e| e.to_string());
            map.insert(ferroflux_helmsource::normalize_url(&repo.spec.url), access);
        }
    }
    NamespaceRepositories(map)
}

fn build_options(obj: &HelmChart, metadata: Option<String>, settings: &Options) -> BuildOptions {
    let status = obj.status.clone().unwrap_or_default();
    let cached_chart = obj
        .artifact()
        .filter(|a| settings.storage.exists(&a.path))
        .map(|a| settings.storage.local_path(&a.path));
    BuildOptions {
        values_files: obj.spec.values_files.clone().unwrap_or_default(),
        ignore_missing_values_files: obj.spec.ignore_missing_values_files.unwrap_or(false),
        version_metadata: metadata,
        cached_chart,
        cached_values_files: status.observed_values_files.unwrap_or_default(),
        force: obj.metadata.generation != status.observed_generation,
    }
}

async fn build(
    client: &kube::Client,
    settings: &Options,
    obj: &HelmChart,
    ns: &str,
    interval: Duration,
) -> Result<(Build, String), ChartFailure> {
    let source = &obj.spec.source_ref;
    let values_files = BuildOptions {
        values_files: obj.spec.values_files.clone().unwrap_or_default(),
        ..Default::default()
    };
    let has_values_files = !values_files.effective_values_files().is_empty();
    match source.kind {
        HelmChartSourceKind::HelmRepository => {
            let api: Api<HelmRepository> = Api::namespaced(client.clone(), ns);
            let repo = api.get(&source.name).await.map_err(|e| {
                ChartFailure::fetch(Failure::retry(
                    SOURCE_UNAVAILABLE,
                    format!("failed to get source: {e}"),
                    interval,
                ))
            })?;
            if repo.repository_type() == HelmRepositoryType::Oci {
                return build_oci(client, settings, obj, &repo, ns, has_values_files, interval)
                    .await;
            }
            let Some(artifact) = repo
                .status
                .as_ref()
                .and_then(|s| s.artifact.clone())
                .filter(|a| settings.storage.exists(&a.path))
            else {
                return Err(ChartFailure::waiting(
                    format!(
                        "no artifact available for HelmRepository source '{}'",
                        source.name
                    ),
                    interval,
                ));
            };
            let access = access_for(client, &repo, ns)
                .await
                .map_err(|e| ChartFailure::fetch(Failure::of(&e, interval)))?;
            let index_path = settings.storage.local_path(&artifact.path);
            let metadata = version_metadata(
                obj.reconcile_strategy(),
                source.kind,
                &artifact.revision,
                has_values_files,
                obj.metadata.generation,
            );
            let opts = build_options(obj, metadata, settings);
            let chart = obj.spec.chart.clone();
            let range = obj.version_range().to_string();
            let timeout = timeout_of(&repo);
            let task = tokio::task::spawn_blocking(move || {
                let repository =
                    ferroflux_helmsource::Repository::from_index_file(access, &index_path)?;
                ferroflux_helmsource::build_from_repository(&repository, &chart, &range, &opts)
            });
            let build = run_with_timeout(task, timeout, interval).await?;
            Ok((build, artifact.revision))
        }
        HelmChartSourceKind::GitRepository | HelmChartSourceKind::Bucket => {
            let unavailable = |e: kube::Error| {
                ChartFailure::fetch(Failure::retry(
                    SOURCE_UNAVAILABLE,
                    format!("failed to get source: {e}"),
                    interval,
                ))
            };
            // A chart in a Git commit or in a bucket's objects: both are an artifact tree.
            let artifact = if source.kind == HelmChartSourceKind::Bucket {
                let api: Api<ferroflux_api::Bucket> = Api::namespaced(client.clone(), ns);
                let bucket = api.get(&source.name).await.map_err(unavailable)?;
                bucket.status.and_then(|s| s.artifact)
            } else {
                let api: Api<GitRepository> = Api::namespaced(client.clone(), ns);
                let git = api.get(&source.name).await.map_err(unavailable)?;
                git.status.and_then(|s| s.artifact)
            };
            let Some(a) = artifact else {
                return Err(ChartFailure::waiting(
                    format!(
                        "no artifact available for {} source '{}'",
                        source.kind.as_str(),
                        source.name
                    ),
                    interval,
                ));
            };
            let tree = settings.source_trees.get(&a).await.map_err(|e| match e {
                TreeError::Fetch(e) => ChartFailure::fetch(Failure::retry(
                    conditions::reason::ARTIFACT_FAILED,
                    format!("failed to fetch source artifact: {e}"),
                    interval,
                )),
                TreeError::Unpack(e) => ChartFailure::build(Failure::of(
                    &ferroflux_helmsource::Error::Storage(e),
                    interval,
                )),
            })?;
            let metadata = version_metadata(
                obj.reconcile_strategy(),
                source.kind,
                &a.revision,
                has_values_files,
                obj.metadata.generation,
            );
            let opts = build_options(obj, metadata, settings);
            let repos = LazyRepositories {
                client: client.clone(),
                namespace: ns.to_string(),
                runtime: tokio::runtime::Handle::current(),
                listed: std::sync::OnceLock::new(),
            };
            let chart_path = obj.spec.chart.clone();
            let task = tokio::task::spawn_blocking(move || {
                ferroflux_helmsource::build_from_source(tree.path(), &chart_path, &opts, &repos)
            });
            // Dependencies from repositories may take a while: the interval bounds the build.
            let build =
                run_with_timeout(task, interval.max(Duration::from_secs(60)), interval).await?;
            Ok((build, a.revision))
        }
    }
}

/// A chart of a `type: oci` HelmRepository: `spec.verify` refused (ferroflux cannot check
/// signatures), then pulled from `<url>/<chart>` with the repository's credentials and TLS.
/// There is no source artifact: the source revision is empty.
async fn build_oci(
    client: &kube::Client,
    settings: &Options,
    obj: &HelmChart,
    repo: &HelmRepository,
    ns: &str,
    has_values_files: bool,
    interval: Duration,
) -> Result<(Build, String), ChartFailure> {
    if let Some(v) = &obj.spec.verify {
        let provider = match v.provider {
            ferroflux_api::helmchart::VerificationProvider::Cosign => "cosign",
            ferroflux_api::helmchart::VerificationProvider::Notation => "notation",
        };
        return Err(ChartFailure::verification(Failure::stalled(
            oci_reason::VERIFICATION_ERROR,
            verification_unsupported(provider, v.secret_ref.is_none()),
            interval,
        )));
    }
    let provider = repo
        .spec
        .provider
        .unwrap_or(HelmRepositoryProvider::Generic);
    if provider != HelmRepositoryProvider::Generic {
        return Err(ChartFailure::fetch(Failure::stalled(
            ferroflux_helmsource::reason::AUTHENTICATION_FAILED,
            format!(
                "not supported yet: provider '{}' of HelmRepository '{}' (only 'generic', with secretRef)",
                serde_json::to_value(provider)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                repo.metadata.name.as_deref().unwrap_or_default()
            ),
            interval,
        )));
    }
    let opts = oci_client_options(client, repo, ns).await.map_err(|m| {
        ChartFailure::fetch(Failure::retry(
            ferroflux_helmsource::reason::AUTHENTICATION_FAILED,
            m,
            interval,
        ))
    })?;
    let metadata = version_metadata(
        obj.reconcile_strategy(),
        HelmChartSourceKind::HelmRepository,
        "",
        has_values_files,
        obj.metadata.generation,
    );
    let build_opts = build_options(obj, metadata, settings);
    let url = repo.spec.url.clone();
    let chart = obj.spec.chart.clone();
    let range = obj.version_range().to_string();
    let timeout = timeout_of(repo);
    let task = tokio::task::spawn_blocking(move || {
        let repository = ferroflux_helmsource::oci::OciRepository::new(&url, opts)?;
        ferroflux_helmsource::oci::build_from_oci(&repository, &chart, &range, &build_opts)
            .map(|b| b.build)
    });
    let build = run_with_timeout(task, timeout, interval)
        .await
        .map_err(|mut f| {
            // Refused credentials are a fetch failure in Flux, not a build failure.
            if f.failure.reason == ferroflux_helmsource::reason::AUTHENTICATION_FAILED
                || f.failure.reason == ferroflux_helmsource::reason::URL_INVALID
            {
                f.condition = Some(conditions::FETCH_FAILED);
            }
            f
        })?;
    Ok((build, String::new()))
}

/// The registry client settings of a `type: oci` HelmRepository: `secretRef` (a
/// `kubernetes.io/dockerconfigjson` Secret, or `username`/`password`), `certSecretRef`
/// (`ca.crt`, `tls.crt`, `tls.key`), `insecure` and `timeout`. Messages name the Secret, never
/// its content.
pub async fn oci_client_options(
    client: &kube::Client,
    repo: &HelmRepository,
    ns: &str,
) -> Result<ferroflux_oci::ClientOptions, String> {
    let mut opts = ferroflux_oci::ClientOptions {
        insecure: repo.spec.insecure.unwrap_or(false),
        timeout: timeout_of(repo),
        ..Default::default()
    };
    if let Some(r) = &repo.spec.secret_ref {
        let data = secret_data(client, ns, &r.name).await?;
        let name = format!("{ns}/{}", r.name);
        opts.auth = if let Some(json) = data.get(".dockerconfigjson") {
            let registry = repo
                .spec
                .url
                .trim_start_matches("oci://")
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string();
            ferroflux_oci::DockerConfig::parse(json)
                .map_err(|e| format!("invalid '{name}' secret data: {e}"))?
                .for_registry(&registry)
        } else {
            match (data.get("username"), data.get("password")) {
                (Some(u), Some(p)) => ferroflux_oci::Auth::Basic {
                    username: String::from_utf8_lossy(u).into_owned(),
                    password: String::from_utf8_lossy(p).into_owned(),
                },
                _ => {
                    return Err(format!(
                        "invalid '{name}' secret data: required fields 'username' and 'password' (or '.dockerconfigjson')"
                    ));
                }
            }
        };
    }
    if let Some(r) = &repo.spec.cert_secret_ref {
        let data = secret_data(client, ns, &r.name).await?;
        opts.ca_pem = data.get("ca.crt").cloned();
        match (data.get("tls.crt"), data.get("tls.key")) {
            (Some(c), Some(k)) => opts.client_cert = Some((c.clone(), k.clone())),
            (None, None) => {}
            _ => {
                return Err(format!(
                    "invalid '{ns}/{}' secret data: 'tls.crt' and 'tls.key' go together",
                    r.name
                ));
            }
        }
    }
    Ok(opts)
}

async fn run_with_timeout(
    task: tokio::task::JoinHandle<ferroflux_helmsource::Result<Build>>,
    timeout: Duration,
    interval: Duration,
) -> Result<Build, ChartFailure> {
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(r)) => r.map_err(|e| ChartFailure::build(Failure::of(&e, interval))),
        Ok(Err(join)) => Err(ChartFailure::build(Failure::retry(
            ferroflux_helmsource::reason::CHART_PACKAGE_ERROR,
            format!("the chart build failed: {join}"),
            interval,
        ))),
        Err(_) => Err(ChartFailure::build(Failure::retry(
            ferroflux_helmsource::reason::CHART_PULL_ERROR,
            format!(
                "chart pull error: timed out after {}",
                ferroflux_api::duration::format_duration(timeout)
            ),
            interval,
        ))),
    }
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, kube::Error> {
    let api: Api<HelmChart> = Api::namespaced(client.clone(), ns);
    let Some(obj) = finalizer::begin(&api, name, |_| async {
        if let Err(e) = ferroflux_helmsource::remove_artifacts(&settings.storage, KIND, ns, name) {
            tracing::warn!(error = %e, "failed to remove the artifacts of {KIND} {ns}/{name}");
        }
        Ok::<(), kube::Error>(())
    })
    .await?
    else {
        return Ok(Reconciled::default());
    };
    let interval = ferroflux_api::duration::parse_duration(&obj.spec.interval)
        .unwrap_or(Duration::from_secs(600));
    let result: Result<Built, ChartFailure> = async {
        let (build, source_revision) = build(client, settings, &obj, ns, interval).await?;
        let storage = settings.storage.clone();
        let (ns2, name2, b) = (ns.to_string(), name.to_string(), build.clone());
        let stored = tokio::task::spawn_blocking(move || {
            ferroflux_helmsource::store_chart(&storage, &ns2, &name2, &b)
        })
        .await
        .map_err(|e| {
            ChartFailure::build(Failure::retry(
                ferroflux_helmsource::reason::STORAGE_OPERATION_FAILED,
                e.to_string(),
                interval,
            ))
        })?
        .map_err(|e| ChartFailure::build(Failure::of(&e, interval)))?;
        Ok(Built {
            build,
            stored,
            source_revision,
        })
    }
    .await;
    match &result {
        Ok(b) => step::log_success(
            KIND,
            ns,
            name,
            &b.build.version,
            if b.stored.is_some() {
                "new artifact stored"
            } else {
                "artifact up to date"
            },
        ),
        Err(f) => step::log_failure(KIND, ns, name, &f.failure),
    }
    let mut status = obj.status.clone().unwrap_or_default();
    let event = apply_result(
        &mut status,
        obj.metadata.generation,
        obj.spec.ignore_missing_values_files.unwrap_or(false),
        &result,
        Timestamp::now(),
    );
    // Same file, but the server may listen elsewhere than when it was stored.
    if let Some(a) = status.artifact.as_mut() {
        a.url = settings.storage.url_for(&a.path);
        if let Some((dir, _)) = a.path.rsplit_once('/') {
            status.url = Some(settings.storage.url_for(&format!("{dir}/latest.tar.gz")));
        }
    }
    sourceloop::write_status(
        &api,
        &obj,
        &status,
        &["observedValuesFiles", "artifact", "url"],
        FIELD_MANAGER,
    )
    .await?;
    let requeue = match &result {
        Err(f) => f.failure.requeue,
        Ok(_) => interval,
    };
    Ok(Reconciled {
        requeue_after: Some(requeue),
        event,
    })
}

/// The HelmChart controller: its cache and the future that runs [`reconcile`] until `shutdown`
/// resolves.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (Store<HelmChart>, Pin<Box<dyn Future<Output = ()> + Send>>) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    let sources = client.clone();
    // As source-controller: a source's new artifact (or a change of its spec) reconciles the
    // HelmCharts built from it; its status writes without a new artifact do not (with a
    // thousand charts from one GitRepository, each of its status writes would queue them all).
    let watches = move |c: Controller<HelmChart>| {
        let charts = c.store();
        let git_charts = charts.clone();
        let repo_changes = SourceChanges::default();
        let git_changes = SourceChanges::default();
        let bucket_charts = charts.clone();
        let bucket_changes = SourceChanges::default();
        let bucket_sources = sources.clone();
        c.watches(
            Api::<HelmRepository>::all(sources.clone()),
            watcher::Config::default(),
            move |repo| {
                let artifact = repo.status.as_ref().and_then(|s| s.artifact.as_ref());
                if !repo_changes.changed(&repo, artifact) {
                    return Vec::new();
                }
                charts_of(&charts, HelmChartSourceKind::HelmRepository, &repo)
            },
        )
        .watches(
            Api::<GitRepository>::all(sources),
            watcher::Config::default(),
            move |repo| {
                let artifact = repo.status.as_ref().and_then(|s| s.artifact.as_ref());
                if !git_changes.changed(&repo, artifact) {
                    return Vec::new();
                }
                charts_of(&git_charts, HelmChartSourceKind::GitRepository, &repo)
            },
        )
        .watches(
            Api::<ferroflux_api::Bucket>::all(bucket_sources),
            watcher::Config::default(),
            move |bucket| {
                let artifact = bucket.status.as_ref().and_then(|s| s.artifact.as_ref());
                if !bucket_changes.changed(&bucket, artifact) {
                    return Vec::new();
                }
                charts_of(&bucket_charts, HelmChartSourceKind::Bucket, &bucket)
            },
        )
    };
    // A HelmChart's own status and finalizer writes do not build it again.
    sourceloop::controller_on_spec::<HelmChart>(
        client,
        "helmchart",
        run,
        concurrency,
        metrics,
        shutdown,
        watches,
    )
}

/// The generation and artifact revision last seen of each source, so that only a change of
/// either reaches the HelmCharts.
#[derive(Default)]
struct SourceChanges(std::sync::Mutex<BTreeMap<String, Seen>>);

/// A source's generation and artifact revision.
type Seen = (Option<i64>, Option<String>);

impl SourceChanges {
    /// Whether `source` shows a generation or artifact revision not seen before (the first
    /// sight of a source counts as a change).
    fn changed<S: kube::Resource>(
        &self,
        source: &S,
        artifact: Option<&ferroflux_api::Artifact>,
    ) -> bool {
        let meta = source.meta();
        let key = format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        );
        let seen = (meta.generation, artifact.map(|a| a.revision.clone()));
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        last.insert(key, seen.clone()).as_ref() != Some(&seen)
    }
}

/// The HelmCharts of `source`'s namespace whose `sourceRef` names it.
fn charts_of<S: kube::Resource>(
    charts: &Store<HelmChart>,
    kind: HelmChartSourceKind,
    source: &S,
) -> Vec<ObjectRef<HelmChart>> {
    let ns = source.meta().namespace.clone();
    let name = source.meta().name.clone().unwrap_or_default();
    charts
        .state()
        .iter()
        .filter(|c| {
            c.metadata.namespace == ns
                && c.spec.source_ref.kind == kind
                && c.spec.source_ref.name == name
        })
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn tarball(files: &[(&str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut builder = tar::Builder::new(gz);
        for (path, data) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    /// An artifact server on loopback serving `data` to every request; counts the requests.
    async fn serve(data: Vec<u8>) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let data = data.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 2048];
                    let _ = sock.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        data.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(&data).await;
                });
            }
        });
        (
            format!("http://{addr}/gitrepository/ns/fleet/abc.tar.gz"),
            served,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_source_artifact_is_fetched_and_unpacked_once_for_all_its_charts() {
        let data = tarball(&[("charts/app/Chart.yaml", b"name: app\nversion: 1.0.0\n")]);
        let digest = format!("sha256:{:x}", Sha256::digest(&data));
        let (url, served) = serve(data).await;
        let artifact = ferroflux_api::Artifact {
            url,
            digest,
            revision: "main@sha1:abc".into(),
            ..Default::default()
        };
        let trees = SourceTrees::default();
        let all = futures::future::join_all((0..8).map(|_| trees.get(&artifact))).await;
        let paths: Vec<_> = all
            .into_iter()
            .map(|t| t.unwrap().path().to_path_buf())
            .collect();
        assert!(paths.iter().all(|p| *p == paths[0]), "{paths:?}");
        assert_eq!(
            std::fs::read_to_string(paths[0].join("charts/app/Chart.yaml")).unwrap(),
            "name: app\nversion: 1.0.0\n"
        );
        assert_eq!(served.load(Ordering::SeqCst), 1);

        // Bytes that do not match the digest are refused, and not kept: tried again.
        let wrong = ferroflux_api::Artifact {
            digest: format!("sha256:{}", "0".repeat(64)),
            ..artifact.clone()
        };
        for _ in 0..2 {
            match trees.get(&wrong).await {
                Err(TreeError::Fetch(m)) => assert!(m.contains("doesn't match"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(served.load(Ordering::SeqCst), 3);
        trees.get(&artifact).await.unwrap();
        assert_eq!(served.load(Ordering::SeqCst), 3);

        // Older artifacts give way to newer ones; a dropped tree is removed from disk.
        let kept = paths[0].clone();
        for i in 0..TREES_KEPT {
            let other = ferroflux_api::Artifact {
                digest: format!("sha256:{i:064}"),
                ..artifact.clone()
            };
            let _ = trees.get(&other).await;
        }
        assert!(!kept.exists(), "{} still on disk", kept.display());
    }

    #[test]
    fn version_metadata_follows_flux() {
        let rev = format!("main@sha1:{}", "0123456789abcdef".repeat(2) + "01234567");
        let git = HelmChartSourceKind::GitRepository;
        assert_eq!(
            version_metadata(ReconcileStrategy::Revision, git, &rev, false, Some(3)).as_deref(),
            Some("0123456789ab")
        );
        assert_eq!(
            version_metadata(ReconcileStrategy::Revision, git, &rev, true, Some(3)).as_deref(),
            Some("0123456789ab.3")
        );
        assert_eq!(
            version_metadata(ReconcileStrategy::ChartVersion, git, &rev, true, Some(3)).as_deref(),
            Some("3")
        );
        assert_eq!(
            version_metadata(
                ReconcileStrategy::Revision,
                HelmChartSourceKind::HelmRepository,
                "sha256:ab",
                false,
                Some(3)
            ),
            None
        );
    }
}
