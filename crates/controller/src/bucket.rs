//! The `Bucket` reconciler: one pass over one object, as source-controller's steps.
//!
//! The S3 work is `ferroflux-bucket`'s (on a blocking thread under `spec.timeout`): the bucket
//! must exist, the keys under `spec.prefix` are listed (every page) and filtered by the
//! bucket's `.sourceignore` and `spec.ignore`, and the revision is `sha256:` over the sorted
//! `<key> <etag>` index. When it is the stored revision (and its file is still stored) nothing
//! is downloaded: the no-op poll is one `HEAD`, one `GET` of `.sourceignore` and the listing.
//! Otherwise the objects are downloaded, packed with the default exclusions and stored under
//! `bucket/<ns>/<name>/<hex>.tar.gz`, served by the artifact server. A failure leaves the last
//! artifact in storage and in status (consumers keep using it), with `FetchFailed` and
//! Ready=False carrying source-controller's reason (`BucketOperationFailed`,
//! `AuthenticationFailed`) and message.
//!
//! Providers: `generic` with the Secret's `accesskey`/`secretkey` (or anonymous without a
//! Secret) and `aws` with the same static keys; `proxySecretRef` sends every request through
//! the Secret's proxy. `aws` without keys (workload identity), `gcp`, `azure`, `sts` and
//! `serviceAccountName` are not implemented: the status says so (Stalled,
//! `UnsupportedFeature`), nothing is faked.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use crate::gitrepository::Reconciled;
use crate::metrics::{Metrics, SOURCE_CONTROLLER};
use crate::sourcefetch::FetchError;
use crate::sourceloop;
use crate::step;
use ferroflux_api::bucket::BucketProvider;
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::{Artifact, Bucket, BucketStatus};
use ferroflux_bucket::{Client, Credentials, Fetched, Options as S3Options, Request};
use ferroflux_source::{ObjectKey, Storage};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::reflector::Store;

/// Settings of the Bucket controller.
#[derive(Clone)]
pub struct Options {
    /// The artifact storage and the address it is served at.
    pub storage: Storage,
}

const FIELD_MANAGER: &str = "gotk-source-controller";
const KIND: &str = "Bucket";

/// Flux's reasons specific to Bucket.
pub mod bucket_reason {
    /// Any failure of the bucket operations (existence, listing, download).
    pub const BUCKET_OPERATION_FAILED: &str = ferroflux_bucket::BUCKET_OPERATION_FAILED;
    /// The Secret is missing or lacks the keys; or the client cannot be made from the spec.
    pub const AUTH_FAILED: &str = "AuthenticationFailed";
    /// The spec asks for something ferroflux does not do.
    pub const UNSUPPORTED: &str = "UnsupportedFeature";
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

impl FetchError {
    fn unsupported(message: impl Into<String>) -> Self {
        FetchError::stalled(bucket_reason::UNSUPPORTED, message.into())
    }

    fn auth(message: impl Into<String>) -> Self {
        FetchError::retry(bucket_reason::AUTH_FAILED, message.into())
    }
}

impl From<ferroflux_bucket::Error> for FetchError {
    fn from(e: ferroflux_bucket::Error) -> Self {
        let reason = match &e {
            ferroflux_bucket::Error::Storage(_) => {
                ferroflux_source::reason::STORAGE_OPERATION_FAILED
            }
            _ => bucket_reason::BUCKET_OPERATION_FAILED,
        };
        FetchError::retry(reason, e.to_string())
    }
}

/// Checks what ferroflux does not support before any request.
pub fn validate(obj: &Bucket) -> Result<(), FetchError> {
    let spec = &obj.spec;
    let provider = spec.provider.unwrap_or_default();
    match provider {
        BucketProvider::Generic => {}
        BucketProvider::Aws if spec.secret_ref.is_some() => {}
        BucketProvider::Aws => {
            return Err(FetchError::unsupported(
                "not supported yet: provider 'aws' without spec.secretRef (workload identity and instance profiles); give static keys 'accesskey' and 'secretkey' in a Secret",
            ));
        }
        BucketProvider::Gcp | BucketProvider::Azure => {
            return Err(FetchError::unsupported(format!(
                "not supported yet: provider '{}' (ferroflux supports 'generic', and 'aws' with static keys)",
                provider.as_str()
            )));
        }
    }
    if spec.sts.is_some() {
        return Err(FetchError::unsupported("not supported yet: spec.sts"));
    }
    if spec.service_account_name.is_some() {
        return Err(FetchError::unsupported(
            "not supported yet: spec.serviceAccountName (use spec.secretRef)",
        ));
    }
    Ok(())
}

/// The client settings from the spec, `secretRef` (`accesskey`, `secretkey`), `certSecretRef`
/// (`ca.crt`) and `proxySecretRef`.
pub async fn client_options(
    client: &kube::Client,
    obj: &Bucket,
    ns: &str,
    timeout: Duration,
) -> Result<S3Options, FetchError> {
    let mut opts = S3Options {
        endpoint: obj.spec.endpoint.clone(),
        insecure: obj.spec.insecure.unwrap_or(false),
        region: obj.spec.region.clone().unwrap_or_default(),
        credentials: None,
        ca_pem: None,
        timeout,
        proxy: None,
    };
    if let Some(r) = &obj.spec.proxy_secret_ref {
        let proxy = sourceloop::proxy(client, ns, &r.name)
            .await
            .map_err(FetchError::auth)?;
        opts.proxy = Some(proxy.url());
    }
    if let Some(r) = &obj.spec.secret_ref {
        let data = sourceloop::secret_data(client, ns, &r.name)
            .await
            .map_err(FetchError::auth)?;
        let (Some(ak), Some(sk)) = (data.get("accesskey"), data.get("secretkey")) else {
            return Err(FetchError::auth(format!(
                "invalid '{}' secret data: required fields 'accesskey' and 'secretkey'",
                r.name
            )));
        };
        // source-controller's minio client signs only when both keys are non-empty.
        if !ak.is_empty() && !sk.is_empty() {
            opts.credentials = Some(Credentials {
                access_key: String::from_utf8_lossy(ak).into_owned(),
                secret_key: String::from_utf8_lossy(sk).into_owned(),
            });
        }
    }
    if let Some(r) = &obj.spec.cert_secret_ref {
        let data = sourceloop::secret_data(client, ns, &r.name)
            .await
            .map_err(FetchError::auth)?;
        if data.contains_key("tls.crt") || data.contains_key("tls.key") {
            return Err(FetchError::unsupported(
                "not supported yet: client certificates (tls.crt, tls.key) in spec.certSecretRef; only ca.crt",
            ));
        }
        opts.ca_pem = data.get("ca.crt").cloned();
    }
    Ok(opts)
}

/// The result folded into the status as source-controller does (pure, tested without a cluster).
pub fn apply_result(
    status: &mut BucketStatus,
    obj: &Bucket,
    result: &Result<Fetched, FetchError>,
    now: Timestamp,
) -> Option<(String, String, String)> {
    let mut conds = Conditions::of(&mut status.conditions, obj.metadata.generation, now);
    let event;
    match result {
        Ok(fetched) => {
            if let Fetched::Stored { artifact: a, .. } = fetched {
                status.artifact = Some(Artifact {
                    digest: a.digest.clone(),
                    last_update_time: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    metadata: None,
                    path: a.path.clone(),
                    revision: a.revision.clone(),
                    size: Some(a.size as i64),
                    url: a.url.clone(),
                });
                status.url = Some(a.url.clone());
            }
            let rev = status
                .artifact
                .as_ref()
                .map(|a| a.revision.clone())
                .unwrap_or_default();
            let msg = format!("stored artifact: revision '{rev}'");
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &msg)
                .mark_true(conditions::ARTIFACT_IN_STORAGE, reason::SUCCEEDED, &msg)
                .delete(conditions::FETCH_FAILED)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING)
                .delete(conditions::STORAGE_OPERATION_FAILED);
            event = match fetched {
                Fetched::Stored { files, .. } => Some((
                    "Normal".to_string(),
                    reason::NEW_ARTIFACT.to_string(),
                    format!(
                        "stored artifact with {files} fetched files from '{}' bucket",
                        obj.spec.bucket_name
                    ),
                )),
                Fetched::Unchanged { .. } => None,
            };
            status.observed_ignore = obj.spec.ignore.clone();
        }
        Err(e) => {
            event = Some(e.mark(&mut conds));
        }
    }
    status.observed_generation = obj.metadata.generation;
    event
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<Bucket> = Api::namespaced(client.clone(), ns);
    let key = ObjectKey::of_kind(ferroflux_bucket::STORAGE_KIND, ns, name);
    let Some(obj) =
        sourceloop::begin_stored::<_, ReconcileError>(&api, name, &settings.storage, &key).await?
    else {
        return Ok(Reconciled::default());
    };
    let (interval, timeout) =
        sourceloop::interval_and_timeout(&obj.spec.interval, obj.spec.timeout.as_deref());

    let result = async {
        validate(&obj)?;
        let opts = client_options(client, &obj, ns, timeout).await?;
        let s3 = Client::new(opts).map_err(|e| FetchError::auth(e.to_string()))?;
        // Only a revision whose file is still stored can be kept.
        let previous_revision = obj
            .status
            .as_ref()
            .and_then(|s| s.artifact.as_ref())
            .filter(|a| settings.storage.exists(&a.path))
            .map(|a| a.revision.clone());
        let req = Request {
            bucket: obj.spec.bucket_name.clone(),
            prefix: obj.spec.prefix.clone().unwrap_or_default(),
            ignore: obj.spec.ignore.clone(),
            key: key.clone(),
            previous_revision,
        };
        let storage = settings.storage.clone();
        let task =
            tokio::task::spawn_blocking(move || ferroflux_bucket::fetch(&s3, &req, &storage));
        match tokio::time::timeout(timeout, task).await {
            Ok(Ok(r)) => r.map_err(FetchError::from),
            Ok(Err(join)) => Err(FetchError::retry(
                bucket_reason::BUCKET_OPERATION_FAILED,
                format!("the fetch task failed: {join}"),
            )),
            Err(_) => Err(FetchError::retry(
                bucket_reason::BUCKET_OPERATION_FAILED,
                format!(
                    "fetch from bucket '{}' failed: timed out after {}",
                    obj.spec.bucket_name,
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
                Fetched::Unchanged { .. } => "artifact up to date",
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
    sourceloop::write_status(&api, &obj, &status, &[], FIELD_MANAGER).await?;
    Ok(Reconciled {
        requeue_after: Some(interval),
        event,
    })
}

/// The Bucket controller: its cache and the future running [`reconcile`] for every object on
/// its interval, on changes and on `reconcile.fluxcd.io/requestedAt`, until `shutdown` resolves.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (Store<Bucket>, Pin<Box<dyn Future<Output = ()> + Send>>) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    sourceloop::controller::<Bucket>(
        client,
        SOURCE_CONTROLLER,
        run,
        concurrency,
        metrics,
        shutdown,
        |c| c,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(spec: serde_json::Value) -> Bucket {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Bucket",
            "metadata": {"name": "b", "namespace": "ns", "generation": 2},
            "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn cloud_providers_without_keys_are_refused_plainly() {
        let base = serde_json::json!({"bucketName": "b", "endpoint": "e", "interval": "1m"});
        assert!(validate(&bucket(base.clone())).is_ok());
        for (provider, words) in [
            ("gcp", "not supported yet: provider 'gcp'"),
            ("azure", "not supported yet: provider 'azure'"),
            (
                "aws",
                "not supported yet: provider 'aws' without spec.secretRef",
            ),
        ] {
            let mut spec = base.clone();
            spec["provider"] = provider.into();
            let err = validate(&bucket(spec)).unwrap_err();
            assert!(
                err.stalled && err.message.starts_with(words),
                "{}",
                err.message
            );
            assert_eq!(err.reason, "UnsupportedFeature");
        }
        let mut spec = base.clone();
        spec["provider"] = "aws".into();
        spec["secretRef"] = serde_json::json!({"name": "keys"});
        assert!(validate(&bucket(spec)).is_ok());
    }

    #[test]
    fn failure_keeps_the_artifact_and_says_why() {
        let obj = bucket(serde_json::json!({"bucketName": "b", "endpoint": "e", "interval": "1m"}));
        let mut status = BucketStatus {
            artifact: Some(Artifact {
                digest: "sha256:00".into(),
                last_update_time: "2026-01-01T00:00:00Z".into(),
                metadata: None,
                path: "bucket/ns/b/x.tar.gz".into(),
                revision: "sha256:abc".into(),
                size: Some(1),
                url: "http://x/bucket/ns/b/x.tar.gz".into(),
            }),
            ..Default::default()
        };
        let err = FetchError::retry(
            bucket_reason::BUCKET_OPERATION_FAILED,
            "failed to confirm existence of 'b' bucket: Access Denied.",
        );
        let event = apply_result(&mut status, &obj, &Err(err), Timestamp::now()).unwrap();
        assert_eq!(event.1, "BucketOperationFailed");
        assert!(status.artifact.is_some());
        let conds = status.conditions.unwrap();
        let ready = conds.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(
            ready.message,
            "failed to confirm existence of 'b' bucket: Access Denied."
        );
        assert!(
            conds
                .iter()
                .any(|c| c.type_ == "FetchFailed" && c.status == "True")
        );
        assert_eq!(status.observed_generation, Some(2));
    }
}
