//! The `OCIRepository` reconciler: one pass over one object, as source-controller's steps.
//!
//! The registry work is `ferroflux-oci`'s (on a blocking thread under `spec.timeout`): resolve
//! the ref (digest, else the highest tag in `semver` narrowed by `semverFilter`, else `tag`,
//! else `latest`), HEAD the manifest, and stop there when the revision
//! (`<tag>@sha256:<digest>`, or `sha256:<digest>` for a digest ref) is the stored one with the
//! same `ignore` and `layerSelector` (the no-op poll: one HEAD, plus the tag list for semver).
//! Otherwise the manifest is fetched, the layer selected by `layerSelector.mediaType` (the first
//! layer by default) is downloaded digest-checked, and either extracted and packed again with
//! `.sourceignore`/`spec.ignore` applied (`operation: extract`, the default) or stored as is
//! (`copy`), under `ocirepository/<ns>/<name>/<digest>.tar.gz`, served by the artifact server.
//! The manifest's annotations become `status.artifact.metadata`. A failure leaves the last
//! artifact in storage and in status (consumers keep using it), with Ready=False and the reason.
//! `proxySecretRef` sends every request through the Secret's proxy. Cloud providers and
//! `serviceAccountName` answer "not supported yet" (Stalled). `verify` (cosign/notation) is refused with source-controller's `VerificationError`
//! on `SourceVerified` and Ready, Stalled, and the artifact withdrawn from status: ferroflux
//! cannot check signatures, and nothing unverified may be applied.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use crate::gitrepository::Reconciled;
use crate::metrics::{Metrics, SOURCE_CONTROLLER};
use crate::sourcefetch::FetchError;
use crate::sourceloop;
use crate::step;
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::ocirepository::{OCILayerOperation, OCILayerSelector, OCIProvider};
use ferroflux_api::{Artifact, OCIRepository, OCIRepositoryStatus};
use ferroflux_oci::{Auth, Client, ClientOptions, DockerConfig, Reference, artifact};
use ferroflux_source::sourceignore::Rules;
use ferroflux_source::{KEEP_ARTIFACTS, ObjectKey, Storage};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::future::Future;
use std::pin::Pin;

/// Settings of the OCIRepository controller.
#[derive(Clone)]
pub struct Options {
    /// The artifact storage and the address it is served at.
    pub storage: Storage,
}

const FIELD_MANAGER: &str = "gotk-source-controller";
const KIND: &str = "OCIRepository";
/// Flux's storage folder of the kind.
pub const STORAGE_KIND: &str = "ocirepository";

/// Flux's reasons specific to OCIRepository.
pub mod oci_reason {
    /// The registry could not be read (unreachable, unknown tag, wrong manifest, digest).
    pub const PULL_FAILED: &str = "OCIArtifactPullFailed";
    /// The layer could not be selected or extracted.
    pub const LAYER_FAILED: &str = "OCIArtifactLayerOperationFailed";
    /// Credentials refused or unusable.
    pub const AUTH_FAILED: &str = "AuthenticationFailed";
    /// The URL or ref cannot be used.
    pub const URL_INVALID: &str = "URLInvalid";
    /// The spec asks for something ferroflux does not do.
    pub const UNSUPPORTED: &str = "UnsupportedFeature";
    /// Signature verification failed (or, here, cannot be done): Flux's `VerificationError`.
    pub const VERIFICATION_ERROR: &str = "VerificationError";
}

/// The condition source-controller sets on the outcome of `spec.verify`.
pub const SOURCE_VERIFIED: &str = "SourceVerified";

/// The message of a `spec.verify` ferroflux cannot honour, in source-controller's words
/// ("failed to verify the signature using provider 'cosign keyless': ..."): nothing of the
/// source is stored or served, since an unverified artifact must not be applied.
pub fn verification_unsupported(provider: &str, keyless: bool) -> String {
    let provider = if keyless && provider == "cosign" {
        "cosign keyless"
    } else {
        provider
    };
    format!(
        "failed to verify the signature using provider '{provider}': signature verification is not supported yet by ferroflux; no artifact is served from this source while spec.verify is set"
    )
}

/// A failure of the API server or the storage (the pass is retried by the loop).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The artifact storage.
    #[error("storage: {0}")]
    Source(#[from] ferroflux_source::Error),
}

/// The outcome of the registry step.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// The revision is the stored one: nothing downloaded.
    Unchanged,
    /// A new artifact was stored, with the manifest's annotations.
    Stored {
        /// The storage record.
        artifact: ferroflux_source::Artifact,
        /// The manifest's annotations (`status.artifact.metadata`).
        metadata: Option<BTreeMap<String, String>>,
    },
}

impl From<ferroflux_oci::Error> for FetchError {
    fn from(e: ferroflux_oci::Error) -> Self {
        use ferroflux_oci::Error as E;
        let (reason, stalled) = match &e {
            E::InvalidReference { .. } => (oci_reason::URL_INVALID, true),
            E::InvalidCredentials(_) | E::Unauthorized { .. } => (oci_reason::AUTH_FAILED, false),
            E::LayerNotFound { .. } | E::UnsafeEntry { .. } => (oci_reason::LAYER_FAILED, false),
            E::TooLarge { what, .. } if what.starts_with("the extracted") => {
                (oci_reason::LAYER_FAILED, false)
            }
            E::Io { .. } => (reason::FAILED, false),
            _ => (oci_reason::PULL_FAILED, false),
        };
        FetchError {
            reason,
            message: e.to_string(),
            stalled,
        }
    }
}

impl From<ferroflux_source::Error> for FetchError {
    fn from(e: ferroflux_source::Error) -> Self {
        FetchError::retry(
            ferroflux_source::reason::STORAGE_OPERATION_FAILED,
            e.to_string(),
        )
    }
}

/// Everything the blocking registry step needs, read from the object and its Secrets.
#[derive(Debug, Clone)]
pub struct Request {
    /// `spec.url` parsed (no tag, no digest).
    pub repository: Reference,
    /// `spec.url` as written.
    pub url: String,
    /// `spec.ref`.
    pub r#ref: ferroflux_api::ocirepository::OCIRepositoryRef,
    /// `spec.layerSelector`.
    pub layer: Option<OCILayerSelector>,
    /// `spec.ignore`.
    pub ignore: Option<String>,
    /// Client settings (credentials, TLS, insecure, timeout).
    pub client: ClientOptions,
    /// Storage key of the object.
    pub key: ObjectKey,
    /// What the last good pass stored: `(status.artifact, observedIgnore, observedLayerSelector)`.
    pub previous: Option<(Artifact, Option<String>, Option<OCILayerSelector>)>,
}

/// Checks the spec before any request: the URL and what ferroflux does not support.
pub fn validate(obj: &OCIRepository) -> Result<Reference, FetchError> {
    let spec = &obj.spec;
    let provider = spec.provider.unwrap_or(OCIProvider::Generic);
    if provider != OCIProvider::Generic {
        return Err(FetchError::stalled(
            oci_reason::UNSUPPORTED,
            format!(
                "not supported yet: provider '{}' (only 'generic')",
                provider.as_str()
            ),
        ));
    }
    if let Some(v) = &spec.verify {
        let p = match v.provider {
            ferroflux_api::ocirepository::VerificationProvider::Cosign => "cosign",
            ferroflux_api::ocirepository::VerificationProvider::Notation => "notation",
        };
        return Err(FetchError::stalled(
            oci_reason::VERIFICATION_ERROR,
            verification_unsupported(p, v.secret_ref.is_none()),
        ));
    }
    if spec.service_account_name.is_some() {
        return Err(FetchError::stalled(
            oci_reason::UNSUPPORTED,
            "not supported yet: serviceAccountName (use secretRef)",
        ));
    }
    if !spec.url.starts_with("oci://") {
        return Err(FetchError::stalled(
            oci_reason::URL_INVALID,
            format!(
                "URL must be in format 'oci://<domain>/<org>/<repo>': {}",
                spec.url
            ),
        ));
    }
    let r = Reference::parse(&spec.url).map_err(FetchError::from)?;
    if r.tag.is_some() || r.digest.is_some() {
        return Err(FetchError::stalled(
            oci_reason::URL_INVALID,
            format!(
                "URL must not name a tag or digest (use spec.ref): {}",
                spec.url
            ),
        ));
    }
    if let Some(d) = spec.r#ref.as_ref().and_then(|r| r.digest.as_deref())
        && !ferroflux_oci::valid_digest(d)
    {
        return Err(FetchError::stalled(
            oci_reason::URL_INVALID,
            format!("spec.ref.digest {d:?} is not a sha256 digest"),
        ));
    }
    Ok(r)
}

/// Flux's revision: `<tag>@sha256:<hex>`, or the digest alone for a digest ref.
pub fn revision(tag: Option<&str>, digest: &str) -> String {
    match tag {
        Some(t) => format!("{t}@{digest}"),
        None => digest.to_string(),
    }
}

/// The registry step: resolve, HEAD, and download and store only when the revision changed.
pub fn fetch(req: &Request, storage: &Storage) -> Result<Fetched, FetchError> {
    let client = Client::for_reference(&req.repository, req.client.clone())?;
    let (target, tag) = if let Some(d) = &req.r#ref.digest {
        (req.repository.with_digest(d), None)
    } else if let Some(range) = &req.r#ref.semver {
        let tags = client.list_tags(&req.repository.repository)?;
        let t = ferroflux_oci::tags::pick_semver(
            &req.repository.repo_url(),
            &tags,
            range,
            req.r#ref.semver_filter.as_deref(),
        )?;
        (req.repository.with_tag(&t), Some(t))
    } else {
        let t = req.r#ref.tag.clone().unwrap_or_else(|| "latest".into());
        (req.repository.with_tag(&t), Some(t))
    };
    let head = client.head_manifest(&target)?;
    let rev = revision(tag.as_deref(), &head.digest);
    if let Some((prev, ignore, layer)) = &req.previous
        && prev.revision == rev
        && *ignore == req.ignore
        && *layer == req.layer
        && storage.exists(&prev.path)
    {
        return Ok(Fetched::Unchanged);
    }
    // Pin the digest the HEAD saw, so a tag moved meanwhile cannot mix two artifacts.
    let pinned = target.with_digest(&head.digest);
    let resolved = artifact::resolve(&client, &pinned)?;
    let media_type = req.layer.as_ref().and_then(|l| l.media_type.as_deref());
    let layer = artifact::select_layer(&target, &resolved.manifest, media_type)?.clone();
    let file_name = format!("{}.tar.gz", head.digest.trim_start_matches("sha256:"));
    let copy = req
        .layer
        .as_ref()
        .and_then(|l| l.operation)
        .is_some_and(|o| o == OCILayerOperation::Copy);
    let (path, digest, size, ()) = if copy {
        let mut blob = artifact::fetch_layer(
            &client,
            &pinned,
            &layer,
            ferroflux_source::DEFAULT_MAX_ARTIFACT_SIZE,
        )?;
        storage.write_atomic(&req.key, &file_name, |w| {
            std::io::copy(&mut blob, w)
                .map_err(|e| ferroflux_source::Error::Archive(e.to_string()))?;
            Ok(())
        })?
    } else {
        let dir = tempfile::tempdir().map_err(|e| {
            FetchError::retry(
                reason::FAILED,
                format!("cannot create a temporary directory: {e}"),
            )
        })?;
        // Unpacked as it downloads; the digest is checked once the stream ends.
        artifact::extract_layer(
            &client,
            &pinned,
            &layer,
            dir.path(),
            ferroflux_source::DEFAULT_MAX_ARTIFACT_SIZE,
            ferroflux_source::DEFAULT_MAX_ARTIFACT_SIZE,
        )?;
        let extra: Vec<String> = req.ignore.iter().cloned().collect();
        let rules = Rules::load_dir(dir.path(), &extra)
            .map_err(|e| FetchError::retry(oci_reason::LAYER_FAILED, e.to_string()))?;
        let exclude = |p: &Path, is_dir: bool| rules.excluded_path(p, is_dir);
        let mut packed = Ok(());
        let out = storage.write_atomic(&req.key, &file_name, |w| {
            packed = artifact::pack_dir(dir.path(), &exclude, w).map(|_| ());
            packed
                .as_ref()
                .map_err(|e| ferroflux_source::Error::Archive(e.to_string()))
                .map(|_| ())
        });
        packed?;
        out?
    };
    let removed = storage.garbage_collect(&req.key, &path, KEEP_ARTIFACTS)?;
    if !removed.is_empty() {
        tracing::debug!(?removed, "garbage-collected OCI artifacts");
    }
    let metadata =
        (!resolved.manifest.annotations.is_empty()).then_some(resolved.manifest.annotations);
    Ok(Fetched::Stored {
        artifact: ferroflux_source::Artifact {
            url: storage.url_for(&path),
            path,
            revision: rev,
            digest,
            size,
            last_update_time: std::time::SystemTime::now(),
        },
        metadata,
    })
}

/// The result folded into the status as source-controller does (pure, tested without a cluster).
pub fn apply_result(
    status: &mut OCIRepositoryStatus,
    obj: &OCIRepository,
    result: &Result<Fetched, FetchError>,
    now: Timestamp,
) -> Option<(String, String, String)> {
    let mut conds = Conditions::of(&mut status.conditions, obj.metadata.generation, now);
    let event;
    match result {
        Ok(fetched) => {
            if let Fetched::Stored {
                artifact: a,
                metadata,
            } = fetched
            {
                status.artifact = Some(Artifact {
                    digest: a.digest.clone(),
                    last_update_time: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    metadata: metadata.clone(),
                    path: a.path.clone(),
                    revision: a.revision.clone(),
                    size: Some(a.size as i64),
                    url: a.url.clone(),
                });
            }
            let rev = status
                .artifact
                .as_ref()
                .map(|a| a.revision.clone())
                .unwrap_or_default();
            let msg = format!("stored artifact for digest '{rev}'");
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &msg)
                .mark_true(conditions::ARTIFACT_IN_STORAGE, reason::SUCCEEDED, &msg)
                .delete(conditions::FETCH_FAILED)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING)
                .delete(conditions::STORAGE_OPERATION_FAILED)
                .delete(SOURCE_VERIFIED);
            event = match fetched {
                Fetched::Stored { .. } => Some((
                    "Normal".to_string(),
                    reason::NEW_ARTIFACT.to_string(),
                    format!(
                        "stored artifact with revision '{rev}' from '{}'",
                        obj.spec.url
                    ),
                )),
                Fetched::Unchanged => None,
            };
            status.observed_ignore = obj.spec.ignore.clone();
            status.observed_layer_selector = obj.spec.layer_selector.clone();
            status.url = Some(obj.spec.url.clone());
        }
        Err(e) if e.reason == oci_reason::VERIFICATION_ERROR => {
            // As source-controller: SourceVerified=False. And since nothing here can verify,
            // no artifact is served: consumers wait rather than apply unverified content.
            conds
                .mark_false(SOURCE_VERIFIED, e.reason, &e.message)
                .mark_false(conditions::READY, e.reason, &e.message)
                .mark_stalled(e.reason, &e.message)
                .delete(conditions::RECONCILING)
                .delete(conditions::FETCH_FAILED)
                .delete(conditions::ARTIFACT_IN_STORAGE);
            status.artifact = None;
            event = Some((
                "Warning".to_string(),
                e.reason.to_string(),
                e.message.clone(),
            ));
        }
        Err(e) => {
            event = Some(e.mark(&mut conds));
        }
    }
    status.observed_generation = obj.metadata.generation;
    event
}

fn secret_data(secret: Secret) -> BTreeMap<String, Vec<u8>> {
    secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .chain(
            secret
                .string_data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes())),
        )
        .collect()
}

async fn read_secret(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, FetchError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret = secrets.get(name).await.map_err(|e| {
        FetchError::retry(
            oci_reason::AUTH_FAILED,
            format!("failed to get secret '{ns}/{name}': {e}"),
        )
    })?;
    Ok(secret_data(secret))
}

/// Builds the client settings from `secretRef` (docker config JSON) and `certSecretRef`.
pub async fn client_options(
    client: &kube::Client,
    obj: &OCIRepository,
    ns: &str,
    registry: &str,
    timeout: Duration,
) -> Result<ClientOptions, FetchError> {
    registry_options(
        client,
        ns,
        crate::ocirepository::RegistrySecrets {
            secret_ref: obj.spec.secret_ref.as_ref(),
            cert_secret_ref: obj.spec.cert_secret_ref.as_ref(),
            proxy_secret_ref: obj.spec.proxy_secret_ref.as_ref(),
        },
        obj.spec.insecure.unwrap_or(false),
        registry,
        timeout,
    )
    .await
}

/// The Secrets an OCI registry client is configured from: `secretRef` (a docker config),
/// `certSecretRef` (CA and client certificate) and `proxySecretRef`.
#[derive(Clone, Copy, Default)]
pub struct RegistrySecrets<'a> {
    /// `secretRef`.
    pub secret_ref: Option<&'a ferroflux_api::LocalObjectReference>,
    /// `certSecretRef`.
    pub cert_secret_ref: Option<&'a ferroflux_api::LocalObjectReference>,
    /// `proxySecretRef`.
    pub proxy_secret_ref: Option<&'a ferroflux_api::LocalObjectReference>,
}

/// The registry client settings of any kind that names a `kubernetes.io/dockerconfigjson`
/// Secret (`secretRef`), a TLS Secret (`certSecretRef`) and a proxy Secret (`proxySecretRef`)
/// in namespace `ns`: OCIRepository, ImageRepository.
pub async fn registry_options(
    client: &kube::Client,
    ns: &str,
    secrets: RegistrySecrets<'_>,
    insecure: bool,
    registry: &str,
    timeout: Duration,
) -> Result<ClientOptions, FetchError> {
    let RegistrySecrets {
        secret_ref,
        cert_secret_ref,
        proxy_secret_ref,
    } = secrets;
    let mut opts = ClientOptions {
        insecure,
        timeout,
        ..Default::default()
    };
    if let Some(r) = proxy_secret_ref {
        let proxy = sourceloop::proxy(client, ns, &r.name)
            .await
            .map_err(|m| FetchError::retry(oci_reason::AUTH_FAILED, m))?;
        opts.proxy = Some(proxy.url());
    }
    if let Some(r) = secret_ref {
        let data = read_secret(client, ns, &r.name).await?;
        let json = data
            .get(".dockerconfigjson")
            .or_else(|| data.get(".dockercfg"))
            .ok_or_else(|| {
                let message = format!(
                    "secret '{ns}/{}' has no '.dockerconfigjson' key (a kubernetes.io/dockerconfigjson Secret is expected)",
                    r.name
                );
                FetchError::retry(oci_reason::AUTH_FAILED, message)
            })?;
        opts.auth = DockerConfig::parse(json)
            .map_err(|e| {
                FetchError::retry(
                    oci_reason::AUTH_FAILED,
                    format!("secret '{ns}/{}': {e}", r.name),
                )
            })?
            .for_registry(registry);
    } else {
        opts.auth = Auth::Anonymous;
    }
    if let Some(r) = cert_secret_ref {
        let data = read_secret(client, ns, &r.name).await?;
        opts.ca_pem = data.get("ca.crt").or_else(|| data.get("caFile")).cloned();
        let cert = data.get("tls.crt").or_else(|| data.get("certFile"));
        let key = data.get("tls.key").or_else(|| data.get("keyFile"));
        if let (Some(c), Some(k)) = (cert, key) {
            opts.client_cert = Some((c.clone(), k.clone()));
        }
    }
    Ok(opts)
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<OCIRepository> = Api::namespaced(client.clone(), ns);
    let key = ObjectKey::of_kind(STORAGE_KIND, ns, name);
    let Some(obj) =
        sourceloop::begin_stored::<_, ReconcileError>(&api, name, &settings.storage, &key).await?
    else {
        return Ok(Reconciled::default());
    };
    let (interval, timeout) =
        sourceloop::interval_and_timeout(&obj.spec.interval, obj.spec.timeout.as_deref());

    let result = async {
        let repository = validate(&obj)?;
        let opts = client_options(client, &obj, ns, &repository.registry, timeout).await?;
        let previous = obj.status.as_ref().and_then(|s| {
            s.artifact.clone().map(|a| {
                (
                    a,
                    s.observed_ignore.clone(),
                    s.observed_layer_selector.clone(),
                )
            })
        });
        let req = Request {
            repository,
            url: obj.spec.url.clone(),
            r#ref: obj.spec.r#ref.clone().unwrap_or_default(),
            layer: obj.spec.layer_selector.clone(),
            ignore: obj.spec.ignore.clone(),
            client: opts,
            key: key.clone(),
            previous,
        };
        let storage = settings.storage.clone();
        let task = tokio::task::spawn_blocking(move || fetch(&req, &storage));
        match tokio::time::timeout(timeout, task).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(FetchError::retry(
                oci_reason::PULL_FAILED,
                format!("the pull task failed: {join}"),
            )),
            Err(_) => Err(FetchError::retry(
                oci_reason::PULL_FAILED,
                format!(
                    "timed out after {}",
                    ferroflux_api::duration::format_duration(timeout)
                ),
            )),
        }
    }
    .await;

    let mut status = obj.status.clone().unwrap_or_default();
    let now = Timestamp::now();
    let event = apply_result(&mut status, &obj, &result, now);
    match &result {
        Ok(fetched) => {
            let changes = match fetched {
                Fetched::Stored { .. } => "new artifact stored",
                Fetched::Unchanged => "artifact up to date",
            };
            let rev = status
                .artifact
                .as_ref()
                .map(|a| a.revision.as_str())
                .unwrap_or_default();
            step::log_success(KIND, ns, name, rev, changes);
        }
        Err(e) => step::log_failure(KIND, ns, name, &e.failure(interval)),
    }
    sourceloop::write_status(&api, &obj, &status, &["artifact"], FIELD_MANAGER).await?;
    Ok(Reconciled {
        requeue_after: Some(interval),
        event,
    })
}

/// The OCIRepository controller: its cache and the future running [`reconcile`] for every
/// object on its interval, on changes and on `reconcile.fluxcd.io/requestedAt`, until
/// `shutdown` resolves (the source loop the Helm sources share).
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<OCIRepository>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    sourceloop::controller::<OCIRepository>(
        client,
        SOURCE_CONTROLLER,
        run,
        concurrency,
        metrics,
        shutdown,
        |c| c,
    )
}
