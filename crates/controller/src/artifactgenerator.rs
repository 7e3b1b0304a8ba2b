//! The `ArtifactGenerator` reconciler (Flux's source-watcher): one pass over one generator.
//!
//! Steps, as source-watcher's: validate the spec (unique aliases and artifact names, names
//! that are object names, `revision`/`originRevision` naming a source; otherwise Stalled
//! `ValidationFailed`); observe the sources (each must exist and have an artifact, else Ready=False
//! `SourceFetchFailed` "get sources failed: …", retried soon); stop there when the sources'
//! digest, the generation and the stored files are those of the last pass (no download at all);
//! otherwise download each source's artifact from its controller (digest-checked) and unpack it
//! under its alias, compose every output artifact with crates/artgen's copy rules, store it as
//! `externalartifact/<ns>/<name>/<content hash>.tar.gz` (served by the artifact server) and
//! apply its `ExternalArtifact` (owned by this generator through a label, status written with
//! the artifact: revision `latest@sha256:<digest>` or the `revision` source's, and the
//! `originRevision` source's origin revision or revision as `org.opencontainers.image.revision`).
//! ExternalArtifacts no longer generated are deleted with their files. A failure at any step
//! leaves every ExternalArtifact and file as the last good pass wrote them.
//!
//! With `spec.pathPattern` the artifacts are made once per matching directory of a source
//! (crates/artgen's `pattern`), each ExternalArtifact labelled with the captured values; a
//! pattern that cannot be expanded stalls the generator (`BuildFailed`).
//!
//! `source.extensions.fluxcd.io/reconcile: Disabled` suspends a generator.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::artifact;
use crate::finalizer;
pub use crate::gitrepository::Reconciled;
use crate::metrics::{Metrics, SOURCE_CONTROLLER};
use crate::sourceloop;
use crate::step::{self, Failure};
use ferroflux_api::artifactgenerator::{
    ExternalArtifactReference, GENERATOR_LABEL, GeneratorSourceKind, ORIGIN_REVISION,
    OutputArtifact,
};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::{
    Artifact, ArtifactGenerator, ArtifactGeneratorStatus, ExternalArtifact, GitRepository,
    HelmChart, OCIRepository,
};
use ferroflux_source::{KEEP_ARTIFACTS, ObjectKey, Storage};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use sha2::{Digest, Sha256};

/// Settings of the ArtifactGenerator controller.
#[derive(Clone)]
pub struct Options {
    /// The artifact storage and the address it is served at.
    pub storage: Storage,
    /// How soon a generator whose sources are not ready looks again.
    pub dependency_requeue: Duration,
}

impl Options {
    /// Flux's defaults: sources not ready are looked at again after 5s.
    pub fn new(storage: Storage) -> Self {
        Options {
            storage,
            dependency_requeue: Duration::from_secs(5),
        }
    }
}

/// The name source-watcher writes with (field manager and `app.kubernetes.io/managed-by`).
pub const CONTROLLER_NAME: &str = "source-watcher";
/// Flux's storage folder of ExternalArtifacts.
pub const STORAGE_KIND: &str = "externalartifact";
const KIND: &str = "ArtifactGenerator";
/// source-watcher reconciles a generator whose sources did not change every hour.
const REQUEUE: Duration = Duration::from_secs(3600);
/// The most a source's artifact may weigh, compressed or unpacked.
const MAX_SOURCE_SIZE: u64 = ferroflux_source::DEFAULT_MAX_ARTIFACT_SIZE;

/// source-watcher's reasons.
pub mod generator_reason {
    /// A source is missing, not ready, or its artifact could not be downloaded.
    pub const SOURCE_FETCH_FAILED: &str = "SourceFetchFailed";
    /// The spec is invalid.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// A reconciliation was skipped because the generator is disabled.
    pub const RECONCILIATION_DISABLED: &str = "ReconciliationDisabled";
}

/// A failure of the API server (the pass is retried by the loop).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The artifact storage.
    #[error("storage: {0}")]
    Source(#[from] ferroflux_source::Error),
}

/// A source as observed in its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedSource {
    /// `status.artifact.digest`.
    pub digest: String,
    /// `status.artifact.revision`.
    pub revision: String,
    /// `status.artifact.url`.
    pub url: String,
    /// `org.opencontainers.image.revision` of the artifact's metadata, if any.
    pub origin_revision: Option<String>,
}

/// Checks what the API server's schema cannot (source-watcher's `validateSpec`).
pub fn validate(obj: &ArtifactGenerator) -> Result<(), String> {
    let spec = &obj.spec;
    // With a pathPattern the names are templates, checked once rendered.
    let pattern = spec.path_pattern.as_deref().is_some_and(|p| !p.is_empty());
    let mut aliases = BTreeSet::new();
    for s in &spec.sources {
        if !aliases.insert(s.alias.as_str()) {
            return Err(format!("duplicate source alias '{}' found", s.alias));
        }
    }
    let mut names = BTreeSet::new();
    for a in &spec.output_artifacts {
        if !names.insert(a.name.as_str()) {
            return Err(format!("duplicate artifact name '{}' found", a.name));
        }
        if !pattern && !ferroflux_artgen::is_object_name(&a.name) {
            return Err(format!(
                "artifact name {:?} is not a valid Kubernetes object name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                a.name
            ));
        }
        for (field, value) in [
            ("revision", &a.revision),
            ("originRevision", &a.origin_revision),
        ] {
            if let Some(v) = value {
                let alias = v.trim_start_matches('@');
                if !aliases.contains(alias) {
                    return Err(format!(
                        "artifact {} {field} source alias '{alias}' not found",
                        a.name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A digest over what the sources hold (alias, digest, revision, URL), so an unchanged set
/// of sources is recognised without downloading anything.
pub fn sources_digest(sources: &BTreeMap<String, ObservedSource>) -> String {
    let mut h = Sha256::new();
    for (alias, s) in sources {
        h.update(format!("{alias}\0{}\0{}\0{}\n", s.digest, s.revision, s.url).as_bytes());
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

async fn artifact_of<K>(
    client: &kube::Client,
    ns: &str,
    name: &str,
    artifact: impl Fn(K) -> Option<Artifact>,
) -> Result<Option<Artifact>, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    match api.get_opt(name).await {
        Ok(Some(obj)) => Ok(artifact(obj)),
        Ok(None) => Err(format!(
            "{}.{} \"{name}\" not found",
            K::plural(&()),
            K::group(&())
        )),
        Err(e) => Err(format!("unable to get source '{ns}/{name}': {e}")),
    }
}

/// Reads every source's artifact from its status.
async fn observe(
    client: &kube::Client,
    obj: &ArtifactGenerator,
    ns: &str,
) -> Result<BTreeMap<String, ObservedSource>, String> {
    let mut out = BTreeMap::new();
    for s in &obj.spec.sources {
        let sns = s.namespace.as_deref().unwrap_or(ns);
        let artifact = match s.kind {
            GeneratorSourceKind::GitRepository => {
                artifact_of::<GitRepository>(client, sns, &s.name, |o| {
                    o.status.and_then(|s| s.artifact)
                })
                .await?
            }
            GeneratorSourceKind::OCIRepository => {
                artifact_of::<OCIRepository>(client, sns, &s.name, |o| {
                    o.status.and_then(|s| s.artifact)
                })
                .await?
            }
            GeneratorSourceKind::HelmChart => {
                artifact_of::<HelmChart>(client, sns, &s.name, |o| o.artifact().cloned()).await?
            }
            GeneratorSourceKind::ExternalArtifact => {
                artifact_of::<ExternalArtifact>(client, sns, &s.name, |o| {
                    o.status.and_then(|s| s.artifact)
                })
                .await?
            }
            GeneratorSourceKind::Bucket => {
                artifact_of::<ferroflux_api::Bucket>(client, sns, &s.name, |o| {
                    o.status.and_then(|s| s.artifact)
                })
                .await?
            }
        };
        let a = artifact
            .ok_or_else(|| format!("source '{}/{sns}/{}' is not ready", s.kind.as_str(), s.name))?;
        out.insert(
            s.alias.clone(),
            ObservedSource {
                origin_revision: a
                    .metadata
                    .as_ref()
                    .and_then(|m| m.get(ORIGIN_REVISION))
                    .cloned(),
                digest: a.digest,
                revision: a.revision,
                url: a.url,
            },
        );
    }
    Ok(out)
}

/// Downloads and unpacks every source under `dir/<alias>`.
async fn fetch_sources(
    sources: &BTreeMap<String, ObservedSource>,
    dir: &Path,
) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut out = BTreeMap::new();
    for (alias, s) in sources {
        let data = artifact::download(&s.url, MAX_SOURCE_SIZE)
            .await
            .map_err(|e| e.to_string())?;
        let target = dir.join("sources").join(alias);
        let digest = s.digest.clone();
        let t = target.clone();
        step::blocking("unpacking the source", move || {
            artifact::verify_digest(&data, &digest)?;
            std::fs::create_dir_all(&t)
                .map_err(|e| artifact::ArtifactError::Untar(e.to_string()))?;
            artifact::untar(&data, &t, MAX_SOURCE_SIZE)
        })
        .await?
        .map_err(|e| e.to_string())?;
        out.insert(alias.clone(), target);
    }
    Ok(out)
}

/// One output artifact composed, packed and stored.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The storage record.
    pub artifact: ferroflux_source::Artifact,
}

/// Composes `out` from the unpacked sources and stores it (blocking).
pub fn build(
    storage: &Storage,
    ns: &str,
    out: &OutputArtifact,
    sources: &BTreeMap<String, PathBuf>,
    workspace: &Path,
) -> Result<Stored, String> {
    let staging = workspace.join("artifacts").join(&out.name);
    std::fs::create_dir_all(&staging).map_err(|e| format!("failed to create staging dir: {e}"))?;
    ferroflux_artgen::apply_all(&out.copy, sources, &staging).map_err(|e| e.to_string())?;
    let hash = ferroflux_artgen::content_hash(&staging, &out.name).map_err(|e| e.to_string())?;
    let key = ObjectKey::of_kind(STORAGE_KIND, ns, &out.name);
    let file = format!("{hash}.tar.gz");
    let mut packed = Ok(());
    let written = storage.write_atomic(&key, &file, |w| {
        packed = ferroflux_artgen::pack(&staging, w).map_err(|e| e.to_string());
        packed
            .as_ref()
            .map(|_| ())
            .map_err(|e| ferroflux_source::Error::Archive(e.clone()))
    });
    packed?;
    let (path, digest, size, ()) = written.map_err(|e| e.to_string())?;
    if let Err(e) = storage.garbage_collect(&key, &path, KEEP_ARTIFACTS) {
        tracing::debug!(error = %e, "garbage collection of ExternalArtifact files failed");
    }
    Ok(Stored {
        artifact: ferroflux_source::Artifact {
            url: storage.url_for(&path),
            revision: format!("latest@{digest}"),
            path,
            digest,
            size,
            last_update_time: std::time::SystemTime::now(),
        },
    })
}

/// The `status.artifact` of an output, with the revisions its spec asks for.
pub fn external_status_artifact(
    stored: &ferroflux_source::Artifact,
    out: &OutputArtifact,
    sources: &BTreeMap<String, ObservedSource>,
    now: Timestamp,
) -> Artifact {
    let by_alias = |v: &Option<String>| {
        v.as_deref()
            .and_then(|a| sources.get(a.trim_start_matches('@')))
    };
    let revision = by_alias(&out.revision)
        .map(|s| s.revision.clone())
        .unwrap_or_else(|| stored.revision.clone());
    let metadata = by_alias(&out.origin_revision).map(|s| {
        BTreeMap::from([(
            ORIGIN_REVISION.to_string(),
            s.origin_revision
                .clone()
                .unwrap_or_else(|| s.revision.clone()),
        )])
    });
    Artifact {
        digest: stored.digest.clone(),
        last_update_time: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        metadata,
        path: stored.path.clone(),
        revision,
        size: Some(stored.size as i64),
        url: stored.url.clone(),
    }
}

/// Applies the ExternalArtifact of `out` and writes its status.
async fn apply_external(
    client: &kube::Client,
    obj: &ArtifactGenerator,
    ns: &str,
    out: &OutputArtifact,
    artifact: &Artifact,
    pattern_labels: &BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let api: Api<ExternalArtifact> = Api::namespaced(client.clone(), ns);
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    if let Some(cm) = &obj.spec.common_metadata {
        labels.extend(cm.labels.clone().unwrap_or_default());
        annotations.extend(cm.annotations.clone().unwrap_or_default());
    }
    labels.extend(pattern_labels.clone());
    labels.insert(
        "app.kubernetes.io/managed-by".to_string(),
        CONTROLLER_NAME.to_string(),
    );
    labels.insert(GENERATOR_LABEL.to_string(), obj.uid().unwrap_or_default());
    let mut metadata = serde_json::json!({"name": out.name, "namespace": ns, "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = serde_json::json!(annotations);
    }
    let body = serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "ExternalArtifact",
        "metadata": metadata,
        "spec": {"sourceRef": {
            "apiVersion": "source.extensions.fluxcd.io/v1beta1",
            "kind": KIND,
            "name": obj.name_any(),
            "namespace": ns,
        }},
    });
    let applied = api
        .patch(
            &out.name,
            &PatchParams::apply(CONTROLLER_NAME).force(),
            &Patch::Apply(&body),
        )
        .await?;
    let mut status = applied.status.clone().unwrap_or_default();
    let unchanged = status.artifact.as_ref().is_some_and(|a| {
        a.digest == artifact.digest
            && a.revision == artifact.revision
            && a.metadata == artifact.metadata
            && a.url == artifact.url
    });
    if unchanged && applied.conditions_ready() {
        return Ok(());
    }
    status.artifact = Some(artifact.clone());
    Conditions::of(
        &mut status.conditions,
        applied.metadata.generation,
        Timestamp::now(),
    )
    .mark_true(conditions::READY, reason::SUCCEEDED, "Artifact is ready");
    api.patch_status(
        &out.name,
        &PatchParams::apply(CONTROLLER_NAME),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await?;
    Ok(())
}

trait ReadyExt {
    fn conditions_ready(&self) -> bool;
}

impl ReadyExt for ExternalArtifact {
    fn conditions_ready(&self) -> bool {
        use ferroflux_api::FluxObject;
        self.conditions()
            .iter()
            .any(|c| c.type_ == conditions::READY && c.status == "True")
    }
}

/// Deletes the ExternalArtifacts in `orphans` (only those this generator wrote) and their files.
async fn remove_externals(
    client: &kube::Client,
    storage: &Storage,
    uid: &str,
    orphans: &[ExternalArtifactReference],
) -> Result<(), ReconcileError> {
    for r in orphans {
        let api: Api<ExternalArtifact> = Api::namespaced(client.clone(), &r.namespace);
        if let Some(ea) = api.get_opt(&r.name).await?
            && ea.labels().get(GENERATOR_LABEL).map(String::as_str) == Some(uid)
        {
            api.delete(&r.name, &DeleteParams::default()).await?;
        }
        storage.remove_all(&ObjectKey::of_kind(STORAGE_KIND, &r.namespace, &r.name))?;
    }
    Ok(())
}

/// Whether the last pass stands: same sources, same generation, every file still stored.
fn up_to_date(obj: &ArtifactGenerator, digest: &str, storage: &Storage) -> bool {
    use ferroflux_api::FluxObject;
    let Some(status) = &obj.status else {
        return false;
    };
    let ready = obj.conditions().iter().any(|c| {
        c.type_ == conditions::READY
            && c.status == "True"
            && c.observed_generation == obj.metadata.generation
    });
    // A pathPattern's artifact count depends on the sources' trees, whose digest is compared.
    let pattern = obj
        .spec
        .path_pattern
        .as_deref()
        .is_some_and(|p| !p.is_empty());
    ready
        && status.observed_sources_digest.as_deref() == Some(digest)
        && status.inventory.as_ref().is_some_and(|inv| {
            (pattern || inv.len() == obj.spec.output_artifacts.len())
                && inv.iter().all(|r| {
                    storage.exists(&format!(
                        "{}/{}",
                        ObjectKey::of_kind(STORAGE_KIND, &r.namespace, &r.name).dir(),
                        r.filename
                    ))
                })
        })
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<ArtifactGenerator> = Api::namespaced(client.clone(), ns);
    let Some(obj) = api.get_opt(name).await? else {
        return Ok(Reconciled {
            requeue_after: None,
            event: None,
        });
    };
    let uid = obj.uid().unwrap_or_default();
    if obj.metadata.deletion_timestamp.is_some() {
        let inventory = obj
            .status
            .as_ref()
            .and_then(|s| s.inventory.clone())
            .unwrap_or_default();
        remove_externals(client, &settings.storage, &uid, &inventory).await?;
        finalizer::remove(&api, &obj).await?;
        return Ok(Reconciled {
            requeue_after: None,
            event: None,
        });
    }
    finalizer::ensure(&api, &obj).await?;
    if obj.is_disabled() {
        tracing::info!(
            kind = KIND,
            namespace = ns,
            name,
            "reconciliation is disabled"
        );
        return Ok(Reconciled {
            requeue_after: None,
            event: None,
        });
    }

    let mut status = obj.status.clone().unwrap_or_default();
    let outcome = run(client, settings, &obj, ns, &mut status).await?;
    let now = Timestamp::now();
    let mut conds = Conditions::of(&mut status.conditions, obj.metadata.generation, now);
    let (event, requeue) = match &outcome {
        Ok(Pass::UpToDate) => {
            step::log_success(KIND, ns, name, "", "no drift detected");
            (None, REQUEUE)
        }
        Ok(Pass::Generated { count, changed }) => {
            let msg = format!("reconciliation succeeded, generated {count} artifact(s)");
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &msg)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING);
            step::log_success(KIND, ns, name, "", &msg);
            let event = (!changed.is_empty()).then(|| {
                (
                    "Normal".to_string(),
                    conditions::READY.to_string(),
                    format!("external artifacts reconciled: {}", changed.join("\n")),
                )
            });
            (event, REQUEUE)
        }
        Err(f) => {
            f.mark(&mut conds);
            step::log_failure(KIND, ns, name, f);
            (
                Some((
                    "Warning".to_string(),
                    f.reason.to_string(),
                    f.message.clone(),
                )),
                f.requeue,
            )
        }
    };
    sourceloop::write_status(&api, &obj, &status, &[], CONTROLLER_NAME).await?;
    Ok(Reconciled {
        requeue_after: Some(requeue),
        event,
    })
}

/// How a pass ended.
enum Pass {
    /// Nothing changed since the last pass.
    UpToDate,
    /// Artifacts written; `changed` names those whose digest is new.
    Generated { count: usize, changed: Vec<String> },
}

async fn run(
    client: &kube::Client,
    settings: &Options,
    obj: &ArtifactGenerator,
    ns: &str,
    status: &mut ArtifactGeneratorStatus,
) -> Result<Result<Pass, Failure>, ReconcileError> {
    if let Err(msg) = validate(obj) {
        return Ok(Err(Failure::stalled(
            generator_reason::VALIDATION_FAILED,
            msg,
            REQUEUE,
        )));
    }
    let retry = settings.dependency_requeue;
    let sources = match observe(client, obj, ns).await {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(Failure::retry(
                generator_reason::SOURCE_FETCH_FAILED,
                format!("get sources failed: {e}"),
                retry,
            )));
        }
    };
    let digest = sources_digest(&sources);
    if up_to_date(obj, &digest, &settings.storage) {
        return Ok(Ok(Pass::UpToDate));
    }
    let workspace = match tempfile::Builder::new().prefix("ag-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            return Ok(Err(Failure::retry(
                reason::FAILED,
                format!("failed to create tmp dir: {e}"),
                retry,
            )));
        }
    };
    let local = match fetch_sources(&sources, workspace.path()).await {
        Ok(l) => l,
        Err(e) => {
            return Ok(Err(Failure::retry(
                generator_reason::SOURCE_FETCH_FAILED,
                format!("fetch sources failed: {e}"),
                retry,
            )));
        }
    };
    let requests = match ferroflux_artgen::pattern::expand(
        obj.spec.path_pattern.as_deref(),
        &obj.spec.output_artifacts,
        &local,
    ) {
        Ok(r) => r,
        Err(e) => {
            return Ok(Err(Failure::stalled(
                reason::BUILD_FAILED,
                format!("failed to expand path pattern: {e}"),
                REQUEUE,
            )));
        }
    };
    let previous = status.inventory.clone().unwrap_or_default();
    let mut inventory = Vec::new();
    let mut changed = Vec::new();
    for request in &requests {
        let out = &request.artifact;
        let (storage, o, l, w, n) = (
            settings.storage.clone(),
            out.clone(),
            local.clone(),
            workspace.path().to_path_buf(),
            ns.to_string(),
        );
        let built = step::blocking("building the artifact", move || {
            build(&storage, &n, &o, &l, &w)
        })
        .await
        .and_then(|r| r);
        let stored = match built {
            Ok(s) => s,
            Err(e) => {
                return Ok(Err(Failure::retry(
                    reason::BUILD_FAILED,
                    format!("{} build failed: {e}", out.name),
                    REQUEUE,
                )));
            }
        };
        let artifact = external_status_artifact(&stored.artifact, out, &sources, Timestamp::now());
        if let Err(e) = apply_external(client, obj, ns, out, &artifact, &request.labels).await {
            return Ok(Err(Failure::retry(
                reason::RECONCILIATION_FAILED,
                format!("{} reconcile failed: {e}", out.name),
                retry,
            )));
        }
        let filename = stored
            .artifact
            .path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let r = ExternalArtifactReference {
            digest: artifact.digest.clone(),
            filename,
            name: out.name.clone(),
            namespace: ns.to_string(),
        };
        if !previous
            .iter()
            .any(|p| p.name == r.name && p.namespace == r.namespace && p.digest == r.digest)
        {
            changed.push(format!("{}/{} ({})", r.namespace, r.name, r.digest));
        }
        inventory.push(r);
    }
    let orphans: Vec<ExternalArtifactReference> = previous
        .into_iter()
        .filter(|p| {
            !inventory
                .iter()
                .any(|r| r.name == p.name && r.namespace == p.namespace)
        })
        .collect();
    remove_externals(
        client,
        &settings.storage,
        &obj.uid().unwrap_or_default(),
        &orphans,
    )
    .await?;
    let count = inventory.len();
    status.inventory = Some(inventory);
    status.observed_sources_digest = Some(digest);
    Ok(Ok(Pass::Generated { count, changed }))
}

/// The generators of `store` that read the source `kind ns/name`.
fn readers_of(
    store: &Store<ArtifactGenerator>,
    kind: GeneratorSourceKind,
    ns: &str,
    name: &str,
) -> Vec<ObjectRef<ArtifactGenerator>> {
    store
        .state()
        .iter()
        .filter(|g| {
            let own = g.namespace().unwrap_or_default();
            g.spec.sources.iter().any(|s| {
                s.kind == kind && s.name == name && s.namespace.as_deref().unwrap_or(&own) == ns
            })
        })
        .map(|g| ObjectRef::from_obj(g.as_ref()))
        .collect()
}

/// The ArtifactGenerator controller: its cache and the future running [`reconcile`] for every
/// generator on changes, every hour, on `reconcile.fluxcd.io/requestedAt`, and whenever one of
/// its sources changes, until `shutdown` resolves.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<ArtifactGenerator>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    let watch_client = client.clone();
    sourceloop::controller::<ArtifactGenerator>(
        client,
        SOURCE_CONTROLLER,
        run,
        concurrency,
        metrics,
        shutdown,
        move |ctrl| {
            let store = ctrl.store();
            let (s1, s2, s3, s4, s5) = (
                store.clone(),
                store.clone(),
                store.clone(),
                store.clone(),
                store,
            );
            let cfg = watcher::Config::default;
            ctrl.watches(
                Api::<GitRepository>::all(watch_client.clone()),
                cfg(),
                move |o| {
                    readers_of(
                        &s1,
                        GeneratorSourceKind::GitRepository,
                        &o.namespace().unwrap_or_default(),
                        &o.name_any(),
                    )
                },
            )
            .watches(
                Api::<OCIRepository>::all(watch_client.clone()),
                cfg(),
                move |o| {
                    readers_of(
                        &s2,
                        GeneratorSourceKind::OCIRepository,
                        &o.namespace().unwrap_or_default(),
                        &o.name_any(),
                    )
                },
            )
            .watches(
                Api::<HelmChart>::all(watch_client.clone()),
                cfg(),
                move |o| {
                    readers_of(
                        &s3,
                        GeneratorSourceKind::HelmChart,
                        &o.namespace().unwrap_or_default(),
                        &o.name_any(),
                    )
                },
            )
            .watches(
                Api::<ferroflux_api::Bucket>::all(watch_client.clone()),
                cfg(),
                move |o| {
                    readers_of(
                        &s5,
                        GeneratorSourceKind::Bucket,
                        &o.namespace().unwrap_or_default(),
                        &o.name_any(),
                    )
                },
            )
            .watches(
                Api::<ExternalArtifact>::all(watch_client),
                cfg(),
                move |o| {
                    readers_of(
                        &s4,
                        GeneratorSourceKind::ExternalArtifact,
                        &o.namespace().unwrap_or_default(),
                        &o.name_any(),
                    )
                },
            )
        },
    )
}
