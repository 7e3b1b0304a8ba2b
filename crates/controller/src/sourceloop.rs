//! The watch/queue loop every source reconciler shares (GitRepository, OCIRepository,
//! HelmRepository, HelmChart, and the image reflector's ImageRepository and ImagePolicy): one reconcile per object on changes, on its interval and on
//! `reconcile.fluxcd.io/requestedAt`; the pass's event published, its duration and outcome
//! recorded in the metrics.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::events::Recorder;
use crate::gitrepository::Reconciled;
use crate::metrics::{Metrics, Outcome as MetricOutcome};
use ferroflux_api::{FluxObject, RECONCILE_REQUESTED_AT};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};

/// One reconcile of `namespace/name`; an `Err` is an API failure (writing status), retried soon.
pub(crate) type ReconcileFn = Arc<dyn Fn(String, String) -> Pass + Send + Sync>;

/// One reconcile in progress.
pub(crate) type Pass = Pin<Box<dyn Future<Output = Result<Reconciled, String>> + Send>>;

/// The [`ReconcileFn`] of a reconciler `reconcile(client, settings, ns, name)`: each pass gets
/// its own clones of the client and settings, and an error becomes its message.
pub(crate) fn reconcile_fn<S, E, F, Fut>(
    client: kube::Client,
    settings: S,
    reconcile: F,
) -> ReconcileFn
where
    S: Clone + Send + Sync + 'static,
    E: std::fmt::Display,
    F: Fn(kube::Client, S, String, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reconciled, E>> + Send + 'static,
{
    Arc::new(move |ns: String, name: String| {
        let pass = reconcile(client.clone(), settings.clone(), ns, name);
        let pass: Pass = Box::pin(async move { pass.await.map_err(|e| e.to_string()) });
        pass
    })
}

struct LoopContext {
    client: kube::Client,
    reconcile: ReconcileFn,
    recorder: Recorder,
    metrics: Arc<Metrics>,
    controller: &'static str,
}

/// The controller of kind `K`: its cache and the future that runs `reconcile` until
/// `shutdown` resolves.
pub(crate) fn controller<K>(
    client: kube::Client,
    controller_name: &'static str,
    reconcile: ReconcileFn,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    watches: impl FnOnce(Controller<K>) -> Controller<K>,
) -> (Store<K>, Pin<Box<dyn Future<Output = ()> + Send>>)
where
    K: FluxObject,
{
    let api = Api::<K>::all(client.clone());
    let controller = Controller::new(api, watcher::Config::default());
    run(
        client,
        controller_name,
        reconcile,
        concurrency,
        metrics,
        shutdown,
        watches(controller),
    )
}

/// [`controller`] for a kind whose own changes reconcile it only on a change of its spec, a
/// `reconcile.fluxcd.io/requestedAt` or its deletion (source-controller's
/// `GenerationChangedPredicate` or `ReconcileRequestedPredicate`, see [`spec_or_request`]):
/// its own status and finalizer writes then cost no second pass.
pub(crate) fn controller_on_spec<K>(
    client: kube::Client,
    controller_name: &'static str,
    reconcile: ReconcileFn,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    watches: impl FnOnce(Controller<K>) -> Controller<K>,
) -> (Store<K>, Pin<Box<dyn Future<Output = ()> + Send>>)
where
    K: FluxObject,
{
    let (store, writer) = reflector::store();
    let triggers = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(spec_or_request::<K>, PredicateConfig::default());
    let controller = Controller::for_stream(triggers, store);
    run(
        client,
        controller_name,
        reconcile,
        concurrency,
        metrics,
        shutdown,
        watches(controller),
    )
}

/// The trigger of source-controller's predicates: the generation (a spec change), a
/// `reconcile.fluxcd.io/requestedAt` annotation, and the start of deletion.
fn spec_or_request<K: FluxObject>(obj: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    obj.meta().generation.hash(&mut hasher);
    obj.annotations()
        .get(RECONCILE_REQUESTED_AT)
        .hash(&mut hasher);
    obj.meta().deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

fn run<K>(
    client: kube::Client,
    controller_name: &'static str,
    reconcile: ReconcileFn,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
    controller: Controller<K>,
) -> (Store<K>, Pin<Box<dyn Future<Output = ()> + Send>>)
where
    K: FluxObject,
{
    let controller = controller
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency.max(1)));
    let store = controller.store();
    // The controller Flux's events name: the image kinds are image-reflector-controller's.
    let reporting = if K::group(&()) == "image.toolkit.fluxcd.io" {
        "image-reflector-controller"
    } else {
        "source-controller"
    };
    let reporter = Reporter {
        controller: reporting.into(),
        instance: None,
    };
    let context = Arc::new(LoopContext {
        client: client.clone(),
        reconcile,
        recorder: Recorder::new(client, reporter).notifying(metrics.notifier()),
        metrics,
        controller: controller_name,
    });
    let task = controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile_item::<K>, error_policy::<K>, context)
        .for_each(move |result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, controller = controller_name, "reconcile error");
            }
        });
    (store, Box::pin(task))
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LoopError(String);

async fn reconcile_item<K: FluxObject>(
    obj: Arc<K>,
    ctx: Arc<LoopContext>,
) -> Result<Action, LoopError> {
    let _active = ctx.metrics.start(ctx.controller);
    let started = std::time::Instant::now();
    let ns = obj.namespace().unwrap_or_else(|| "default".into());
    let name = obj.name_any();
    let result = (ctx.reconcile)(ns.clone(), name.clone()).await;
    let outcome = match &result {
        Ok(r) if r.event.as_ref().is_some_and(|(t, _, _)| t == "Warning") => MetricOutcome::Requeue,
        Ok(_) => MetricOutcome::Success,
        Err(_) => MetricOutcome::Error,
    };
    ctx.metrics.record(
        ctx.controller,
        K::KIND,
        &ns,
        &name,
        started.elapsed(),
        outcome,
    );
    let reconciled = result.map_err(LoopError)?;
    if let Some((type_, reason, note)) = reconciled.event {
        let event = Event {
            type_: if type_ == "Warning" {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason,
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        let metadata = if event.type_ == EventType::Normal {
            artifact_metadata::<K>(&ctx.client, &ns, &name).await
        } else {
            BTreeMap::new()
        };
        if let Err(e) = ctx
            .recorder
            .publish_with(&event, &obj.object_ref(&()), metadata)
            .await
        {
            tracing::debug!(error = %e, "failed to publish event");
        }
    }
    Ok(match reconciled.requeue_after {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

/// What source-controller puts on its success events (a new artifact, a recovery): the
/// artifact's revision and digest under the kind's group (`source.toolkit.fluxcd.io/revision`),
/// so an alert and a commit status name the revision. The pass has just written the status;
/// it is read back (success events are rare, one GET each). A kind without a single artifact
/// (ArtifactGenerator) gets none.
async fn artifact_metadata<K: FluxObject>(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> BTreeMap<String, String> {
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let mut metadata = BTreeMap::new();
    let Ok(Some(obj)) = api.get_opt(name).await else {
        return metadata;
    };
    let Ok(value) = serde_json::to_value(&obj) else {
        return metadata;
    };
    let group = K::group(&());
    for key in ["revision", "digest"] {
        if let Some(v) = value["status"]["artifact"][key].as_str() {
            metadata.insert(format!("{group}/{key}"), v.to_string());
        }
    }
    metadata
}

fn error_policy<K: FluxObject>(obj: Arc<K>, error: &LoopError, _ctx: Arc<LoopContext>) -> Action {
    tracing::warn!(
        kind = K::KIND,
        object = %format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()),
        error = %error,
        "reconcile failed"
    );
    Action::requeue(Duration::from_secs(5))
}

/// How often a source is fetched when its `interval` does not parse (the API server's schema
/// refuses such a value; this keeps a hand-edited object from spinning).
const FALLBACK_INTERVAL: Duration = Duration::from_secs(600);

/// How long a fetch may take when `timeout` is unset: Flux's default for the sources that have
/// the field (GitRepository, OCIRepository, Bucket).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A source's `spec.interval` and `spec.timeout` as durations.
pub(crate) fn interval_and_timeout(interval: &str, timeout: Option<&str>) -> (Duration, Duration) {
    let parse = |d: &str| ferroflux_api::duration::parse_duration(d).ok();
    (
        parse(interval).unwrap_or(FALLBACK_INTERVAL),
        timeout.and_then(parse).unwrap_or(DEFAULT_TIMEOUT),
    )
}

/// Writes `status` as a merge patch of `obj`'s status, as field manager `manager`. The object's
/// `reconcile.fluxcd.io/requestedAt` becomes `lastHandledReconcileAt`: that is how `flux
/// reconcile` learns its request was handled. A merge patch keeps what it does not name, so
/// each field of `withdrawn` that `status` no longer has (an artifact that went away) is
/// nulled, which removes it.
pub(crate) async fn write_status<K, S>(
    api: &Api<K>,
    obj: &K,
    status: &S,
    withdrawn: &[&str],
    manager: &str,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    S: serde::Serialize,
{
    let mut status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Some(fields) = status.as_object_mut() {
        if let Some(requested) = obj.annotations().get(RECONCILE_REQUESTED_AT) {
            fields.insert(
                "lastHandledReconcileAt".to_string(),
                requested.clone().into(),
            );
        }
        for field in withdrawn {
            if fields.get(*field).is_none_or(serde_json::Value::is_null) {
                fields.insert((*field).to_string(), serde_json::Value::Null);
            }
        }
    }
    let patch = serde_json::json!({ "status": status });
    api.patch_status(
        &obj.name_any(),
        &PatchParams::apply(manager),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// [`crate::finalizer::begin`] for a source whose artifacts are kept in `storage` under `key`:
/// when the object is being deleted, its stored artifacts go before its finalizer does.
pub(crate) async fn begin_stored<K, E>(
    api: &Api<K>,
    name: &str,
    storage: &ferroflux_source::Storage,
    key: &ferroflux_source::ObjectKey,
) -> Result<Option<K>, E>
where
    K: FluxObject,
    E: From<kube::Error> + From<ferroflux_source::Error>,
{
    crate::finalizer::begin(api, name, |_| async {
        storage.remove_all(key).map_err(E::from)
    })
    .await
}

/// The data of Secret `ns/name` (`data` and `stringData`), or Flux's message why not.
pub(crate) async fn secret_data(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<std::collections::BTreeMap<String, Vec<u8>>, String> {
    use k8s_openapi::api::core::v1::Secret;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret = secrets
        .get(name)
        .await
        .map_err(|e| format!("failed to get secret '{ns}/{name}': {e}"))?;
    Ok(secret
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
        .collect())
}

/// The proxy a `proxySecretRef` Secret `ns/name` names (every source kind that has the field
/// reads it the same way), or Flux's message why not.
pub(crate) async fn proxy(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<ferroflux_source::Proxy, String> {
    let fail = |e: String| format!("failed to configure proxy options: {e}");
    let data = secret_data(client, ns, name).await.map_err(fail)?;
    ferroflux_source::Proxy::from_secret_data(&format!("{ns}/{name}"), &data).map_err(|e| match e {
        ferroflux_source::Error::InvalidSecret(m) => fail(m),
        other => fail(other.to_string()),
    })
}
