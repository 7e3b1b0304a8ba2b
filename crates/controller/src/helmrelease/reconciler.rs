//! The HelmRelease reconciler: helm-controller's pipeline, object by object.
//!
//! finalizer → suspend → then Flux's named steps, each a function with a typed result:
//! `dependencies` (`dependsOn` HelmReleases Ready) → `chart_template` (the owned HelmChart, or
//! none with `chartRef`) → `source` (the HelmChart's artifact, ready for its generation) →
//! `values` (`valuesFrom` and inline, Flux's order) → `load_chart` (download, digest, load) →
//! `release` (helm-controller's atomic release: the state of the release in storage decides the
//! next action, install / upgrade / test / rollback or uninstall remediation / unlock, until the
//! release is in sync or the attempt has to stop; `state` holds those rules). A prerequisite's
//! `Failure` becomes `Ready=False` with Flux's reason; the release's own outcome is written in
//! `Released`, `TestSuccess` and `Remediated` and summarised into `Ready` as Flux does.
//! Deletion is `finalize`: uninstall the release, delete the owned HelmChart.

use super::chart;
use super::drift;
use super::postrender;
use super::state::{
    self, Desired, Next, Observed, Remediation, State, full_release_name, versioned_chart_name,
};
use super::values;
use crate::artifact;
use crate::dependencies;
use crate::events::Recorder;
use crate::finalizer;
use crate::metrics::{HELM_CONTROLLER, Metrics, Outcome};
use crate::step::{self, Failure, OrFail, TERMINAL_ERROR};
use crate::target;
use ferroflux_api::conditions::{Conditions, READY, RECONCILING, STALLED, find_condition, reason};
use ferroflux_api::duration::{format_duration, parse_duration};
use ferroflux_api::helmrelease::conditions::{
    DRIFTED, RELEASED, REMEDIATED, TEST_SUCCESS, reason as hr_reason,
};
use ferroflux_api::helmrelease::{
    CrdsPolicy, DriftDetectionMode, FORCE_REQUESTED_AT, RESET_REQUESTED_AT, ReleaseAction,
    Snapshot, TestHookStatus,
};
use ferroflux_api::{HelmRelease, HelmReleaseStatus, RECONCILE_REQUESTED_AT};
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::health::CustomHealth;
use ferroflux_helmrelease::{
    Actions, CrdPolicy, InstallOptions, Release, ReleaseRef, RollbackOptions, TestOptions,
    UninstallOptions, UpgradeOptions, WaitOptions,
};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kind this reconciler owns, as its log lines name it.
const KIND: &str = "HelmRelease";
/// The field manager of what the controller applies (the HelmChart, the release's objects).
pub const FIELD_MANAGER: &str = "helm-controller";
/// The field manager of status writes, as in Flux.
pub const STATUS_MANAGER: &str = "gotk-helm-controller";
/// Snapshots kept in `status.history`.
const MAX_SNAPSHOTS: usize = 5;

/// Settings of the HelmRelease controller (Flux's flags).
#[derive(Clone, Debug)]
pub struct Options {
    /// How often a HelmRelease waiting on dependencies or its chart's artifact is retried
    /// (`--requeue-dependency`); the watches of HelmReleases, HelmCharts and OCIRepositories
    /// wake it as soon as what it waits for changes, so this only bounds a missed event.
    pub requeue_dependency: Duration,
    /// How many HelmReleases reconcile at once (`--concurrent`).
    pub concurrency: u16,
    /// The largest chart artifact accepted.
    pub max_artifact_size: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            requeue_dependency: Duration::from_secs(5),
            concurrency: 4,
            max_artifact_size: artifact::DEFAULT_MAX_SIZE,
        }
    }
}

/// What every reconcile shares.
pub struct Context {
    client: kube::Client,
    /// The controller's cache of HelmReleases (dependencies are read from it).
    store: Store<HelmRelease>,
    config: kube::Config,
    /// Helm actions on the controller's own cluster as itself.
    local: Arc<Actions>,
    engine: Arc<ferroflux_helm::Engine>,
    recorder: Recorder,
    options: Options,
    metrics: Arc<Metrics>,
    /// Failures in a row per object, for [`backoff`].
    queue: Queue,
    /// Charts loaded, by artifact digest.
    charts: Charts,
}

/// Charts loaded from artifacts, by the artifact's digest: a fleet of releases of one chart
/// (each HelmRelease's own HelmChart packs the same bytes, so the same digest) downloads and
/// loads it once, and shares it. Holds the last [`CHARTS_KEPT`] digests.
#[derive(Default)]
struct Charts(std::sync::Mutex<std::collections::VecDeque<(String, Arc<ferroflux_helm::Chart>)>>);

/// How many loaded charts [`Charts`] keeps (a few versions of a few charts in flight).
const CHARTS_KEPT: usize = 16;

impl Charts {
    fn get(&self, digest: &str) -> Option<Arc<ferroflux_helm::Chart>> {
        let charts = self.0.lock().ok()?;
        charts
            .iter()
            .find(|(d, _)| d == digest)
            .map(|(_, c)| c.clone())
    }

    fn insert(&self, digest: &str, chart: Arc<ferroflux_helm::Chart>) {
        let Ok(mut charts) = self.0.lock() else {
            return;
        };
        if charts.iter().any(|(d, _)| d == digest) {
            return;
        }
        if charts.len() >= CHARTS_KEPT {
            charts.pop_front();
        }
        charts.push_back((digest.to_string(), chart));
    }
}

/// What the controller's work queue does with a reconcile's result, as controller-runtime's
/// does with what helm-controller returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Requeue {
    /// `RequeueAfter`: the object's failures are forgotten and it runs again after this long
    /// (its interval, a `retryInterval`, the dependency requeue).
    After(Duration),
    /// An error or `Requeue: true` (helm-controller's `ErrMustRequeue`): the failure rate
    /// limiter says when ([`backoff`] of the failures in a row, this one counted).
    RateLimited,
    /// A terminal error (retries exhausted): forgotten, and run again only when the object
    /// changes (spec, `requestedAt`, `resetAt`).
    OnChange,
}

/// Per-object failure counts: controller-runtime's exponential failure rate limiter, which
/// forgets an object when its reconcile ends without an error.
#[derive(Default)]
struct Queue {
    failures: std::sync::Mutex<BTreeMap<String, u32>>,
}

impl Queue {
    /// When `key` (`namespace/name`) runs again after `requeue`; `None`: not until it changes.
    fn next(&self, key: &str, requeue: Requeue) -> Option<Duration> {
        let Ok(mut failures) = self.failures.lock() else {
            return Some(backoff(0));
        };
        match requeue {
            Requeue::After(after) => {
                failures.remove(key);
                Some(after)
            }
            Requeue::OnChange => {
                failures.remove(key);
                None
            }
            Requeue::RateLimited => {
                let n = failures.entry(key.to_string()).or_insert(0);
                let after = backoff(*n);
                *n = n.saturating_add(1);
                Some(after)
            }
        }
    }
}

impl Context {
    /// The controller's action for `hr` after `requeue`.
    fn requeue(&self, ns: &str, name: &str, requeue: Requeue) -> Action {
        match self.queue.next(&format!("{ns}/{name}"), requeue) {
            Some(after) => Action::requeue(after),
            None => Action::await_change(),
        }
    }
}

/// Flux's failure rate limiter (controller-runtime's exponential one with Flux's defaults
/// `--min-retry-delay=750ms`, `--max-retry-delay=15m`): the delay after `failures` earlier
/// failures in a row.
fn backoff(failures: u32) -> Duration {
    let ms = 750u64.saturating_mul(1u64 << failures.min(20));
    Duration::from_millis(ms).min(Duration::from_secs(15 * 60))
}

/// An error the controller loop reports (status writes); failures of the pipeline end up in
/// the object's status instead.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused or failed a status write or a read the loop needs.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// A shutdown trigger for [`controller`]; `None` means SIGINT or SIGTERM.
pub type Shutdown = Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>;

/// The HelmRelease controller: its cache and the future that runs it until `shutdown`.
pub fn controller(
    client: kube::Client,
    config: kube::Config,
    options: Options,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) -> (Store<HelmRelease>, Pin<Box<dyn Future<Output = ()> + Send>>) {
    let releases = Api::<HelmRelease>::all(client.clone());
    let charts = Api::<DynamicObject>::all_with(client.clone(), &chart::helm_chart_resource());
    let concurrency = options.concurrency.max(1);
    let (store, writer) = reflector::store();
    // As Flux's predicates: a HelmRelease runs when its spec changes, when a reconcile is
    // requested, when it is being deleted, and on its own schedule; never because of its own
    // status write.
    let triggers = watcher(releases.clone(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(reconcile_trigger, PredicateConfig::default());
    let controller = Controller::for_stream(triggers, store.clone())
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency));
    let by_chart = store.clone();
    let by_oci = store.clone();
    let ocis = Api::<DynamicObject>::all_with(client.clone(), &chart::oci_repository_resource());
    let oci_revisions = std::sync::Mutex::new(BTreeMap::<String, Option<String>>::new());
    let revisions = std::sync::Mutex::new(BTreeMap::<String, Option<String>>::new());
    let by_dependency = store.clone();
    let engine = Arc::new(ferroflux_helm::Engine::new());
    let context = Arc::new(Context {
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: FIELD_MANAGER.into(),
                instance: None,
            },
        )
        .notifying(metrics.notifier()),
        local: Arc::new(Actions::with_engine(
            client.clone(),
            FIELD_MANAGER,
            engine.clone(),
        )),
        engine,
        client,
        store: store.clone(),
        config,
        options,
        metrics,
        queue: Queue::default(),
        charts: Charts::default(),
    });
    let controller = controller
        // A HelmChart with a new artifact reconciles the HelmReleases that use it.
        .watches_with(
            charts,
            chart::helm_chart_resource(),
            watcher::Config::default(),
            move |hc| {
                let key = format!("{}/{}", hc.namespace().unwrap_or_default(), hc.name_any());
                let revision = hc
                    .data
                    .pointer("/status/artifact/revision")
                    .and_then(Value::as_str)
                    .map(String::from);
                let changed = match revisions.lock() {
                    Ok(mut seen) => new_artifact(&mut seen, &key, revision),
                    Err(_) => true,
                };
                if !changed {
                    return Vec::new();
                }
                by_chart
                    .state()
                    .iter()
                    .filter(|hr| {
                        chart::chart_location(hr)
                            .map(|(ns, name)| format!("{ns}/{name}") == key)
                            .unwrap_or(false)
                    })
                    .map(|hr| ObjectRef::from_obj(hr.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        // An OCIRepository with a new artifact reconciles the HelmReleases whose chartRef
        // names it.
        .watches_with(
            ocis,
            chart::oci_repository_resource(),
            watcher::Config::default(),
            move |repo| {
                let key = format!(
                    "{}/{}",
                    repo.namespace().unwrap_or_default(),
                    repo.name_any()
                );
                let revision = repo
                    .data
                    .pointer("/status/artifact/revision")
                    .and_then(Value::as_str)
                    .map(String::from);
                let changed = match oci_revisions.lock() {
                    Ok(mut seen) => new_artifact(&mut seen, &key, revision),
                    Err(_) => true,
                };
                if !changed {
                    return Vec::new();
                }
                by_oci
                    .state()
                    .iter()
                    .filter(|hr| {
                        chart::source_location(hr).is_ok_and(|(r, ns, name)| {
                            r.kind == "OCIRepository" && format!("{ns}/{name}") == key
                        })
                    })
                    .map(|hr| ObjectRef::from_obj(hr.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        // A HelmRelease that changes wakes the ones depending on it.
        .watches(releases, watcher::Config::default(), move |hr| {
            let this = format!("{}/{}", hr.namespace().unwrap_or_default(), hr.name_any());
            by_dependency
                .state()
                .iter()
                .filter(|h| dependency_keys(h).contains(&this))
                .map(|h| ObjectRef::from_obj(h.as_ref()))
                .collect::<Vec<_>>()
        });
    let controller = match shutdown {
        Some(trigger) => controller.graceful_shutdown_on(trigger),
        None => controller.shutdown_on_signal(),
    };
    let task = controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "helmrelease reconcile error");
            }
        });
    (store, Box::pin(task))
}

/// Records the artifact revision a source `key` has now (`None`: no artifact) and says whether
/// it is one the releases using it have not seen: a source without an artifact wakes nobody
/// (a release waiting for it would only find it not ready again, and each wasted pass costs
/// two status writes and the HelmChart's apply), nor does one whose status changed without a
/// new artifact.
fn new_artifact(
    seen: &mut BTreeMap<String, Option<String>>,
    key: &str,
    revision: Option<String>,
) -> bool {
    let fresh = revision.is_some();
    let before = seen.insert(key.to_string(), revision.clone());
    fresh && before != Some(revision)
}

/// Generation, the three request annotations and the start of deletion.
fn reconcile_trigger(hr: &HelmRelease) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hr.metadata.generation.hash(&mut hasher);
    for key in [
        RECONCILE_REQUESTED_AT,
        FORCE_REQUESTED_AT,
        RESET_REQUESTED_AT,
    ] {
        hr.annotations().get(key).hash(&mut hasher);
    }
    hr.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

fn dependency_keys(hr: &HelmRelease) -> Vec<String> {
    let own = hr.namespace().unwrap_or_else(|| "default".into());
    dependencies::keys(hr.spec.depends_on.as_deref(), &own)
}

/// A status write or read the loop needed failed: helm-controller returns the error, and the
/// failure rate limiter decides when it runs again.
fn error_policy(hr: Arc<HelmRelease>, _error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let ns = hr.namespace().unwrap_or_else(|| "default".into());
    ctx.requeue(&ns, &hr.name_any(), Requeue::RateLimited)
}

async fn reconcile(hr: Arc<HelmRelease>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let _active = ctx.metrics.start(HELM_CONTROLLER);
    let started = Instant::now();
    let result = reconcile_object(hr.clone(), ctx.clone()).await;
    let outcome = match &result {
        Ok((_, outcome)) => *outcome,
        Err(_) => Outcome::Error,
    };
    ctx.metrics.record(
        HELM_CONTROLLER,
        KIND,
        &hr.namespace().unwrap_or_default(),
        &hr.name_any(),
        started.elapsed(),
        outcome,
    );
    result.map(|(action, _)| action)
}

/// The request annotations handled at this reconcile.
#[derive(Default)]
struct Requests {
    force: bool,
    reset: bool,
}

/// The requests `hr` carries that were not handled yet: `forceAt` and `resetAt` count only
/// with the same value as `requestedAt`, as Flux's `ShouldHandleForceRequest` decides.
fn requests(hr: &HelmRelease, status: &mut HelmReleaseStatus) -> Requests {
    let annotations = hr.annotations();
    let Some(requested) = annotations.get(RECONCILE_REQUESTED_AT) else {
        return Requests::default();
    };
    status.last_handled_reconcile_at = Some(requested.clone());
    let mut out = Requests::default();
    if annotations.get(FORCE_REQUESTED_AT) == Some(requested)
        && status.last_handled_force_at.as_deref() != Some(requested.as_str())
    {
        status.last_handled_force_at = Some(requested.clone());
        out.force = true;
    }
    if annotations.get(RESET_REQUESTED_AT) == Some(requested)
        && status.last_handled_reset_at.as_deref() != Some(requested.as_str())
    {
        status.last_handled_reset_at = Some(requested.clone());
        out.reset = true;
    }
    out
}

/// How the reconcile ended, for the requeue and the event.
enum Ended {
    /// In sync: requeue after the interval.
    Ready(String),
    /// The `RetryOnFailure` strategy: tried again after its `retryInterval`
    /// (helm-controller's `ErrRetryAfterInterval`).
    Retry { after: Duration },
    /// Another pass is needed at once (after a remediation with retries left, or before an
    /// action would run twice in one attempt): helm-controller's `ErrMustRequeue`, a
    /// `Requeue: true` the failure rate limiter spaces out.
    MustRequeue,
    /// An action failed without recording a release (refused, storage unreadable): retried
    /// with Flux's per-object exponential backoff ([`backoff`]), as helm-controller returns
    /// the error to controller-runtime's rate limiter.
    Failed,
    /// Out of retries: only a change (or force/reset) helps (helm-controller's terminal
    /// error).
    Stalled,
}

/// When a release runs again after its attempt ended as `ended` (`interval`: its
/// `spec.interval`).
fn requeue_after_release(ended: &Ended, interval: Duration) -> Requeue {
    match ended {
        Ended::Ready(_) => Requeue::After(interval),
        Ended::Retry { after } => Requeue::After(*after),
        Ended::MustRequeue | Ended::Failed => Requeue::RateLimited,
        Ended::Stalled => Requeue::OnChange,
    }
}

/// When a release whose prerequisites are not met runs again: a wait (dependency, chart not
/// ready) after the dependency requeue, with its failures forgotten (helm-controller returns
/// `RequeueAfter` and drops the wait error); an error through the rate limiter; a
/// prerequisite that cannot be met without a change after its own requeue.
fn requeue_after_unmet(unmet: &Unmet) -> Requeue {
    match unmet {
        Unmet::Wait(failure) => Requeue::After(failure.requeue),
        Unmet::Error(failure) if failure.stalled => Requeue::After(failure.requeue),
        Unmet::Error(_) => Requeue::RateLimited,
    }
}

async fn reconcile_object(
    hr: Arc<HelmRelease>,
    ctx: Arc<Context>,
) -> Result<(Action, Outcome), ReconcileError> {
    let ns = hr.namespace().unwrap_or_else(|| "default".into());
    let name = hr.name_any();
    let api: Api<HelmRelease> = Api::namespaced(ctx.client.clone(), &ns);

    if hr.metadata.deletion_timestamp.is_some() {
        return finalize(&hr, &ctx, &api)
            .await
            .map(|a| (a, Outcome::Success));
    }
    finalizer::ensure(&api, hr.as_ref()).await?;
    if hr.spec.suspend == Some(true) {
        return Ok((Action::await_change(), Outcome::Success));
    }

    let mut obj = (*hr).clone();
    let mut status = obj.status.clone().unwrap_or_default();
    let requests = requests(&obj, &mut status);
    let interval = match parse_duration(&hr.spec.interval) {
        Ok(d) => d.max(Duration::from_secs(1)),
        Err(e) => {
            let failure = Failure::stalled(
                "InvalidDuration",
                format!("spec.interval: {e}"),
                Duration::from_secs(300),
            );
            obj.status = Some(status);
            fail(&ctx, &api, &mut obj, &failure).await?;
            let requeue = requeue_after_unmet(&Unmet::Error(failure));
            return Ok((ctx.requeue(&ns, &name, requeue), Outcome::Requeue));
        }
    };
    if let Err(e) = CustomHealth::new(hr.spec.health_check_exprs.as_deref().unwrap_or_default()) {
        let failure = Failure::stalled(
            reason::INVALID_CEL_EXPRESSION,
            format!("{TERMINAL_ERROR}: {e}"),
            interval,
        );
        obj.status = Some(status);
        fail(&ctx, &api, &mut obj, &failure).await?;
        let requeue = requeue_after_unmet(&Unmet::Error(failure));
        return Ok((ctx.requeue(&ns, &name, requeue), Outcome::Requeue));
    }
    {
        let mut c = Conditions::of(
            &mut status.conditions,
            hr.metadata.generation,
            Timestamp::now(),
        );
        c.mark_reconciling(reason::PROGRESSING, "Fulfilling prerequisites");
    }
    obj.status = Some(status);
    write_status(&api, &obj).await?;

    match prerequisites(&mut obj, &ctx, &requests).await {
        Err(unmet) => {
            let failure = match &unmet {
                Unmet::Wait(f) | Unmet::Error(f) => f,
            };
            fail(&ctx, &api, &mut obj, failure).await?;
            let requeue = requeue_after_unmet(&unmet);
            Ok((ctx.requeue(&ns, &name, requeue), Outcome::Requeue))
        }
        Ok(prepared) => {
            let ended = release(&mut obj, &ctx, &api, prepared, &requests).await?;
            let status = obj.status.get_or_insert_with(Default::default);
            if matches!(ended, Ended::Ready(_) | Ended::Stalled) {
                status.observed_generation = obj.metadata.generation;
            }
            write_status(&api, &obj).await?;
            let key = format!("{ns}/{name}");
            let after = ctx
                .queue
                .next(&key, requeue_after_release(&ended, interval));
            let action = after.map_or_else(Action::await_change, Action::requeue);
            let message = ready_message(&obj);
            match ended {
                Ended::Ready(message) => {
                    step::log_success(KIND, &ns, &name, &last_revision(&obj), &message);
                    return Ok((action, Outcome::Success));
                }
                Ended::Stalled => {
                    tracing::warn!(kind = KIND, namespace = %ns, name = %name, error = %message, "reconciliation stalled");
                }
                Ended::Retry { .. } | Ended::MustRequeue | Ended::Failed => {
                    tracing::warn!(kind = KIND, namespace = %ns, name = %name, error = %message, retry_after = ?after, "reconciliation failed");
                }
            }
            Ok((action, Outcome::Requeue))
        }
    }
}

fn last_revision(hr: &HelmRelease) -> String {
    hr.status
        .as_ref()
        .and_then(|s| s.history.as_ref())
        .and_then(|h| h.first())
        .map(|s| s.chart_version.clone())
        .unwrap_or_default()
}

fn ready_message(hr: &HelmRelease) -> String {
    hr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| find_condition(c, READY))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// A prerequisite failed: Ready=False with its reason, Reconciling or Stalled, an event (none
/// while the chart is not ready: helm-controller only logs that wait).
async fn fail(
    ctx: &Context,
    api: &Api<HelmRelease>,
    obj: &mut HelmRelease,
    failure: &Failure,
) -> Result<(), ReconcileError> {
    failure.mark(&mut conditions(obj));
    if failure.stalled {
        obj.status
            .get_or_insert_with(Default::default)
            .observed_generation = obj.metadata.generation;
    }
    write_status(api, obj).await?;
    step::log_failure(
        KIND,
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
        failure,
    );
    if failure.reason != hr_reason::SOURCE_NOT_READY {
        let type_ = if failure.reason == reason::DEPENDENCY_NOT_READY {
            EventType::Normal
        } else {
            EventType::Warning
        };
        publish(ctx, obj, type_, failure.reason, failure.message.clone()).await;
    }
    Ok(())
}

/// Why the prerequisites of a release are not met, which decides when it is tried again.
enum Unmet {
    /// Something to wait for: a `dependsOn` HelmRelease not Ready, or the chart's source
    /// without an artifact. Retried at `--requeue-dependency`, as helm-controller does; the
    /// watches of HelmReleases, HelmCharts and OCIRepositories bring it back sooner, as soon
    /// as what it waits for changes.
    Wait(Failure),
    /// An error (values, the chart's download, the target cluster's client): retried with the
    /// per-object exponential backoff ([`backoff`]), as helm-controller returns these errors
    /// to controller-runtime's rate limiter. `Failure::requeue` counts only when stalled.
    Error(Failure),
}

impl From<Failure> for Unmet {
    fn from(failure: Failure) -> Self {
        Unmet::Error(failure)
    }
}

/// What the prerequisites produce for the release step.
struct Prepared {
    chart: Arc<ferroflux_helm::Chart>,
    values: Map<String, Value>,
    config_digest: String,
    actions: Arc<Actions>,
    /// A client of the cluster and identity the release targets.
    client: kube::Client,
    target: ReleaseRef,
}

/// dependencies → chart template → source → values → chart, then the status fields Flux
/// writes before an attempt.
async fn prerequisites(
    obj: &mut HelmRelease,
    ctx: &Context,
    requests: &Requests,
) -> Result<Prepared, Unmet> {
    // Only the stalled failures below keep their own requeue; the others back off.
    let retry = Duration::from_secs(10);
    dependencies(obj, ctx).map_err(Unmet::Wait)?;
    let applied = chart_template(obj, ctx).await?;
    let artifact = source(obj, ctx, applied).await?;
    let values = compose_values(obj, ctx, retry).await?;
    let mut chart = load_chart(&artifact, ctx, retry).await?;
    let oci_digest = oci_chart_version(obj, &mut chart, &artifact.revision, retry)?;
    let (actions, client) = target_actions(obj, ctx, retry).await?;
    uninstall_moved(obj, ctx, &actions, &chart.metadata.name, retry).await?;
    let config_digest = values::digest(&values);
    let version = chart.metadata.version.clone();
    let generation = obj.metadata.generation;
    let target = ReleaseRef::new(
        &obj.release_name(),
        &obj.target_namespace(),
        &obj.storage_namespace(),
    );
    let storage_namespace = obj.storage_namespace();
    let hr = obj.clone();
    let status = obj.status.get_or_insert_with(Default::default);
    status.storage_namespace = Some(storage_namespace);
    if let Some(why) = state::must_reset_failures(&hr, &version, &config_digest, requests.reset) {
        tracing::debug!(reason = why, "resetting failure count");
        status.failures = None;
        status.install_failures = None;
        status.upgrade_failures = None;
    }
    status.last_attempted_generation = generation;
    status.last_attempted_revision = Some(version);
    status.last_attempted_revision_digest = oci_digest;
    status.last_attempted_config_digest = Some(config_digest.clone());
    status.last_attempted_values_checksum = None;
    status.last_release_revision = None;
    Ok(Prepared {
        chart,
        values,
        config_digest,
        actions,
        client,
        target,
    })
}

/// A chart from an OCIRepository `chartRef` gets the artifact digest as build metadata of its
/// version (helm-controller's rule, so a moved tag is a new chart version); returns the digest
/// for `status.lastAttemptedRevisionDigest`. Other sources leave the chart as it is.
fn oci_chart_version(
    hr: &HelmRelease,
    chart: &mut Arc<ferroflux_helm::Chart>,
    revision: &str,
    retry: Duration,
) -> Result<Option<String>, Failure> {
    let from_oci = hr.spec.chart.is_none()
        && hr
            .spec
            .chart_ref
            .as_ref()
            .is_some_and(|r| r.kind == ferroflux_api::helmrelease::ChartRefKind::OCIRepository);
    if !from_oci {
        return Ok(None);
    }
    let (version, digest) = chart::version_with_digest(&chart.metadata.version, revision)
        .map_err(|m| Failure::retry("ChartMutateError", m, retry))?;
    Arc::make_mut(chart).metadata.version = version;
    Ok(Some(digest))
}

/// helm-controller's `checkDependencies`: every `dependsOn` HelmRelease exists, has
/// reconciled its generation and is Ready (the readiness rule the Kustomization's shares).
/// Read from the controller's cache, as helm-controller's client reads, so it costs no request.
fn dependencies(hr: &HelmRelease, ctx: &Context) -> Result<(), Failure> {
    let own = hr.namespace().unwrap_or_else(|| "default".into());
    let lookup = |ns: &str, name: &str| {
        ctx.store
            .get(&ObjectRef::new(name).within(ns))
            .map(|h| h.as_ref().clone())
    };
    let missing = |key: &str, name: &str| {
        format!(
            "unable to get '{key}' dependency: helmreleases.helm.toolkit.fluxcd.io \"{name}\" not found"
        )
    };
    dependencies::check_ready(
        hr,
        hr.spec.depends_on.as_deref(),
        &own,
        lookup,
        missing,
        |_, _| Ok(()),
    )
    .map_err(|e| e.into_failure(ctx.options.requeue_dependency))
}

/// The owned HelmChart: applied from `spec.chart`, or deleted when the release moved to
/// `chartRef` (or to another HelmChart name). Returns the HelmChart as the apply answered it.
async fn chart_template(
    obj: &mut HelmRelease,
    ctx: &Context,
) -> Result<Option<DynamicObject>, Failure> {
    let retry = Duration::from_secs(30);
    let wanted = match &obj.spec.chart {
        Some(_) => chart::chart_location(obj)
            .ok()
            .map(|(ns, name)| format!("{ns}/{name}")),
        None => None,
    };
    let current = obj.status.as_ref().and_then(|s| s.helm_chart.clone());
    if let Some(current) = current.filter(|c| Some(c) != wanted.as_ref()) {
        chart::delete(&ctx.client, &current)
            .await
            .or_fail(hr_reason::ARTIFACT_FAILED, retry)?;
        obj.status.get_or_insert_with(Default::default).helm_chart = None;
    }
    let Some(template) = obj.spec.chart.clone() else {
        return Ok(None);
    };
    let (location, applied) = chart::apply_template(&ctx.client, obj, &template, FIELD_MANAGER)
        .await
        .or_fail(hr_reason::ARTIFACT_FAILED, retry)?;
    obj.status.get_or_insert_with(Default::default).helm_chart = Some(location);
    Ok(Some(applied))
}

/// The HelmChart's artifact, once it is ready for its generation. A source that is missing or
/// unreadable is an error; one without an artifact yet is waited for. `applied` is the owned
/// HelmChart as its apply just answered (read instead of asking again); a `chartRef`'s source
/// is read.
async fn source(
    hr: &HelmRelease,
    ctx: &Context,
    applied: Option<DynamicObject>,
) -> Result<ferroflux_api::Artifact, Unmet> {
    let requeue = ctx.options.requeue_dependency;
    let (resource, ns, name) = chart::source_location(hr)
        .map_err(|e| Failure::stalled(hr_reason::ARTIFACT_FAILED, e, Duration::from_secs(300)))?;
    let applied = applied.filter(|a| {
        resource.kind == chart::helm_chart_resource().kind
            && a.namespace().as_deref() == Some(ns.as_str())
            && a.name_any() == name
    });
    let source = match applied {
        Some(a) => Ok(Some(a)),
        None => chart::get_source(&ctx.client, &resource, &ns, &name).await,
    }
    .map_err(|e| {
        Failure::retry(
            hr_reason::ARTIFACT_FAILED,
            format!("could not get Source object: {e}"),
            requeue,
        )
    })?
    .ok_or_else(|| {
        Failure::retry(
            hr_reason::ARTIFACT_FAILED,
            format!(
                "could not get Source object: {}.source.toolkit.fluxcd.io \"{name}\" not found",
                resource.plural
            ),
            requeue,
        )
    })?;
    chart::ready_artifact(&source)
        .map_err(|m| Unmet::Wait(Failure::retry(hr_reason::SOURCE_NOT_READY, m, requeue)))
}

async fn compose_values(
    hr: &HelmRelease,
    ctx: &Context,
    retry: Duration,
) -> Result<Map<String, Value>, Failure> {
    let ns = hr.namespace().unwrap_or_else(|| "default".into());
    let refs = hr.spec.values_from.clone().unwrap_or_default();
    let fetched = values::fetch(&ctx.client, &ns, &refs)
        .await
        .or_fail(hr_reason::VALUES_ERROR, retry)?;
    values::compose(&ns, &refs, &fetched, hr.spec.values.as_ref())
        .or_fail(hr_reason::VALUES_ERROR, retry)
}

/// Downloads the chart artifact, checks its digest and loads it; a digest loaded before is
/// taken from [`Charts`] (the same bytes: the digest was checked when they were loaded).
async fn load_chart(
    artifact: &ferroflux_api::Artifact,
    ctx: &Context,
    retry: Duration,
) -> Result<Arc<ferroflux_helm::Chart>, Failure> {
    let digest = (!artifact.digest.is_empty()).then_some(artifact.digest.as_str());
    if let Some(chart) = digest.and_then(|d| ctx.charts.get(d)) {
        return Ok(chart);
    }
    let fail = |e: String| {
        Failure::retry(
            hr_reason::ARTIFACT_FAILED,
            format!("Could not load chart: {e}"),
            retry,
        )
    };
    let data = artifact::download(&artifact.url, ctx.options.max_artifact_size)
        .await
        .map_err(|e| fail(e.to_string()))?;
    artifact::verify_digest(&data, &artifact.digest).map_err(|e| fail(e.to_string()))?;
    let chart = step::blocking("loading the chart", move || {
        ferroflux_helm::load_archive(&data).map_err(|e| e.to_string())
    })
    .await
    .map_err(fail)?
    .map_err(fail)?;
    let chart = Arc::new(chart);
    if let Some(d) = digest {
        ctx.charts.insert(d, chart.clone());
    }
    Ok(chart)
}

/// Helm actions on the cluster and identity the release targets, and a client of it.
async fn target_actions(
    hr: &HelmRelease,
    ctx: &Context,
    retry: Duration,
) -> Result<(Arc<Actions>, kube::Client), Failure> {
    let ns = hr.namespace().unwrap_or_else(|| "default".into());
    let config = target::config(
        &ctx.client,
        &ctx.config,
        &ns,
        hr.spec.kube_config.as_ref(),
        hr.spec.service_account_name.as_deref(),
    )
    .await
    .or_fail("RESTClientError", retry)?;
    match config {
        None => Ok((ctx.local.clone(), ctx.client.clone())),
        Some(config) => {
            let client = ferroflux_kubeclient::client(config).map_err(|e| {
                Failure::retry(
                    "RESTClientError",
                    format!("failed to build client: {e}"),
                    retry,
                )
            })?;
            let actions = Actions::with_engine(client.clone(), FIELD_MANAGER, ctx.engine.clone());
            Ok((Arc::new(actions), client))
        }
    }
}

/// `spec.driftDetection` on an in-sync release: the `Drifted` condition and a warning event
/// when its objects differ in the cluster; with `mode: enabled` the drifted objects are applied
/// again. A failure to look is logged and left for the next reconcile.
async fn detect_drift(obj: &mut HelmRelease, ctx: &Context, prepared: &Prepared, rel: &Release) {
    let settings = obj.spec.drift_detection.clone().unwrap_or_default();
    let mode = settings.mode.unwrap_or_default();
    if mode == DriftDetectionMode::Disabled {
        conditions(obj).delete(DRIFTED);
        return;
    }
    let objects = match prepared.actions.objects(rel).await {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(error = %e, "drift detection: cannot read the release's objects");
            return;
        }
    };
    let applier = Applier::new(prepared.client.clone(), FIELD_MANAGER);
    let ignore = settings.ignore.unwrap_or_default();
    let (drifted, unsupported) = match drift::detect(&applier, &objects, &ignore).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "drift detection failed");
            return;
        }
    };
    for u in unsupported {
        tracing::warn!("{u}");
    }
    let release = full_release_name(&latest(obj));
    if drifted.is_empty() {
        conditions(obj).mark_false(
            DRIFTED,
            hr_reason::NO_DRIFT_DETECTED,
            "No drift detected against the cluster state",
        );
        return;
    }
    let message = format!(
        "Cluster state of release {release} has drifted from the desired state:\n{}",
        drift::summary(&drifted)
    );
    publish(
        ctx,
        obj,
        EventType::Warning,
        hr_reason::DRIFT_DETECTED,
        message.clone(),
    )
    .await;
    {
        conditions(obj).mark_true(DRIFTED, hr_reason::DRIFT_DETECTED, &message);
    }
    if mode != DriftDetectionMode::Enabled {
        return;
    }
    let desired: Vec<Value> = drifted.iter().map(|d| d.desired.clone()).collect();
    let options = ApplyOptions {
        force: true,
        ..ApplyOptions::default()
    };
    match applier.apply_staged(desired, &options).await {
        Ok(changes) => {
            let note = format!(
                "Cluster state of release {release} has been corrected:\n{}",
                changes.changes_message()
            );
            publish(ctx, obj, EventType::Normal, "DriftCorrected", note).await;
            conditions(obj).mark_false(
                DRIFTED,
                hr_reason::NO_DRIFT_DETECTED,
                "No drift detected against the cluster state",
            );
        }
        Err(e) => {
            let note = format!("Failed to correct cluster state of release {release}:\n{e}");
            publish(ctx, obj, EventType::Warning, "DriftCorrectionFailed", note).await;
        }
    }
}

/// Which kind of action ran, for the "must not run twice in one attempt" rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Release,
    Test,
    Remediate,
    Unlock,
}

fn kind_of(next: &Next) -> Option<(Kind, &'static str)> {
    match next {
        Next::Install => Some((Kind::Release, "install")),
        Next::Upgrade => Some((Kind::Release, "upgrade")),
        Next::Test => Some((Kind::Test, "test")),
        Next::Rollback => Some((Kind::Remediate, "rollback")),
        Next::Uninstall => Some((Kind::Remediate, "uninstall")),
        Next::Unlock => Some((Kind::Unlock, "unlock")),
        Next::Done | Next::Stall(_) => None,
    }
}

/// helm-controller's `AtomicRelease`: look at the release in storage, run the action its state
/// calls for, and again, until it is in sync or the attempt must stop.
async fn release(
    obj: &mut HelmRelease,
    ctx: &Context,
    api: &Api<HelmRelease>,
    prepared: Prepared,
    requests: &Requests,
) -> Result<Ended, ReconcileError> {
    let storage = prepared.actions.storage(&prepared.target.storage_namespace);
    let timeout = obj
        .spec
        .timeout
        .as_deref()
        .and_then(|t| parse_duration(t).ok())
        .unwrap_or(Duration::from_secs(300));
    let desired_post = obj
        .spec
        .post_renderers
        .as_ref()
        .map(|p| spec_digest(&json!(p)));
    let desired_common = obj
        .spec
        .common_metadata
        .as_ref()
        .map(|c| spec_digest(&json!(c)));
    let chart_name = prepared.chart.metadata.name.clone();
    let chart_version = prepared.chart.metadata.version.clone();
    let mut previous: Vec<Kind> = Vec::new();
    let mut force = requests.force;
    loop {
        let last = match storage.last(&prepared.target.name).await {
            Ok(last) => last,
            Err(e) => {
                let message = format!("Could not determine release state: {e}");
                conditions(obj)
                    .mark_false(READY, "StateError", &message)
                    .mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message);
                publish(ctx, obj, EventType::Warning, "StateError", message).await;
                return Ok(Ended::Failed);
            }
        };
        let observed = last.as_ref().map(observe);
        let desired = Desired {
            chart_name: &chart_name,
            chart_version: &chart_version,
            config_digest: &prepared.config_digest,
            post_renderers_digest: desired_post.clone(),
            common_metadata_digest: desired_common.clone(),
        };
        let state = state::determine(obj, observed.as_ref(), &desired);
        tracing::debug!(?state, "release state");
        if let State::Unmanaged(_) = state {
            obj.status.get_or_insert_with(Default::default).history = None;
        }
        let next = state::action_for_state(obj, &state, force);
        match &next {
            Next::Done => {
                in_sync(obj);
                if let Some(rel) = &last {
                    detect_drift(obj, ctx, &prepared, rel).await;
                }
                summarize(obj);
                conditions(obj).delete(RECONCILING);
                return Ok(Ended::Ready(ready_message(obj)));
            }
            Next::Stall(message) => {
                // Ready says why the last attempt failed (Released), Stalled that no retry
                // is left.
                summarize(obj);
                let ready_false =
                    find_condition(c_conditions(obj), READY).is_some_and(|r| r.status == "False");
                let mut c = conditions(obj);
                c.mark_stalled(hr_reason::RETRIES_EXCEEDED, message);
                if !ready_false {
                    c.mark_false(READY, hr_reason::RETRIES_EXCEEDED, message);
                }
                return Ok(Ended::Stalled);
            }
            _ => {}
        }
        let Some((kind, action_name)) = kind_of(&next) else {
            continue;
        };
        if previous.contains(&kind) {
            // Flux's clean release strategy: one action of each kind per attempt.
            return Ok(stop_before_repeat(obj));
        }
        let message = format!(
            "Running '{action_name}' action with timeout of {}",
            format_duration(timeout)
        );
        {
            let mut c = conditions(obj);
            c.mark_reconciling(reason::PROGRESSING, &message);
            if kind == Kind::Release {
                c.mark_unknown(READY, reason::PROGRESSING, &message);
            }
        }
        write_status(api, obj).await?;
        tracing::info!(kind = KIND, namespace = %obj.namespace().unwrap_or_default(), name = %obj.name_any(), "running '{action_name}' action with timeout of {}", format_duration(timeout));
        let outcome = run_action(obj, ctx, &prepared, &next, timeout).await;
        force = false;
        if let Err(stop) = outcome {
            return Ok(stop);
        }
        // As each of helm-controller's action reconcilers does on its way out.
        summarize(obj);
        if kind == Kind::Remediate {
            return Ok(stop_after_remediation(obj));
        }
        previous.push(kind);
        write_status(api, obj).await?;
    }
}

/// The conditions of `obj`'s status (created when missing), stamped with its generation and
/// the time now: how every step below records its outcome.
fn conditions(obj: &mut HelmRelease) -> Conditions<'_> {
    conditions_at(obj, Timestamp::now())
}

/// [`conditions`] stamped with `now` (one time for the conditions of one action's outcome).
fn conditions_at(obj: &mut HelmRelease, now: Timestamp) -> Conditions<'_> {
    let generation = obj.metadata.generation;
    let status = obj.status.get_or_insert_with(Default::default);
    Conditions::of(&mut status.conditions, generation, now)
}

fn c_conditions(hr: &HelmRelease) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    hr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// Before running an action a second time in one attempt: retry later.
fn stop_before_repeat(obj: &mut HelmRelease) -> Ended {
    let action = obj
        .status
        .as_ref()
        .and_then(|s| s.last_attempted_release_action);
    if let Some(interval) = action.and_then(|a| state::retry_on_failure(obj, a)) {
        conditions(obj).mark_reconciling(
            reason::PROGRESSING_WITH_RETRY,
            &format!("retrying after {interval}"),
        );
        let after = parse_duration(&interval).unwrap_or(Duration::from_secs(300));
        return Ended::Retry { after };
    }
    summarize(obj);
    let message = ready_message(obj);
    conditions(obj).mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message);
    Ended::MustRequeue
}

/// After a remediation: try again while retries remain, else Stalled.
fn stop_after_remediation(obj: &mut HelmRelease) -> Ended {
    summarize(obj);
    let remediation = Remediation::active(obj);
    let exhausted = remediation
        .as_ref()
        .is_some_and(|r| r.retries_exhausted(obj));
    let uninstall_after_upgrade = remediation.as_ref().is_some_and(|r| {
        r.action == ReleaseAction::Upgrade
            && r.strategy == ferroflux_api::helmrelease::RemediationStrategy::Uninstall
    });
    if !exhausted || uninstall_after_upgrade {
        let message = ready_message(obj);
        conditions(obj).mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message);
        return Ended::MustRequeue;
    }
    let message = state::stall_message(obj);
    conditions(obj).mark_stalled(hr_reason::RETRIES_EXCEEDED, &message);
    Ended::Stalled
}

/// Runs one action and records its outcome in the status; `Err` ends the attempt.
async fn run_action(
    obj: &mut HelmRelease,
    ctx: &Context,
    prepared: &Prepared,
    next: &Next,
    timeout: Duration,
) -> Result<(), Ended> {
    let now = Timestamp::now();
    let chart = &prepared.chart;
    let chart_label = format!("{}@{}", chart.metadata.name, chart.metadata.version);
    let target = &prepared.target;
    // Parsed when the reconcile began (a parse error stalls it there).
    let health = Arc::new(
        CustomHealth::new(obj.spec.health_check_exprs.as_deref().unwrap_or_default())
            .unwrap_or_default(),
    );
    let wait = |disable_wait: Option<bool>, for_jobs: Option<bool>| WaitOptions {
        wait: !disable_wait.unwrap_or(false),
        wait_for_jobs: !for_jobs.unwrap_or(false),
        timeout,
        health: health.clone(),
    };
    let renderer = postrender::for_release(obj);
    let max_history = obj.spec.max_history.unwrap_or(5).max(0) as usize;
    match next {
        Next::Install | Next::Upgrade => {
            let action = if *next == Next::Install {
                ReleaseAction::Install
            } else {
                ReleaseAction::Upgrade
            };
            conditions_at(obj, now)
                .delete(TEST_SUCCESS)
                .delete(REMEDIATED);
            obj.status
                .get_or_insert_with(Default::default)
                .last_attempted_release_action = Some(action);
            let started = Instant::now();
            let result = match action {
                ReleaseAction::Install => {
                    let install = obj.spec.install.clone().unwrap_or_default();
                    let opts = InstallOptions {
                        wait: wait(install.disable_wait, install.disable_wait_for_jobs),
                        disable_hooks: install.disable_hooks.unwrap_or(false),
                        crds: crd_policy(install.crds, install.skip_crds, CrdPolicy::Create),
                        create_namespace: install.create_namespace.unwrap_or(false),
                        skip_schema_validation: install.disable_schema_validation.unwrap_or(false),
                        replace: install.replace.unwrap_or(false),
                        take_ownership: !install.disable_take_ownership.unwrap_or(false),
                        max_history,
                        post_renderer: Some(renderer),
                        ..Default::default()
                    };
                    prepared
                        .actions
                        .install(target, chart.clone(), prepared.values.clone(), &opts)
                        .await
                }
                ReleaseAction::Upgrade => {
                    let upgrade = obj.spec.upgrade.clone().unwrap_or_default();
                    let opts = UpgradeOptions {
                        wait: wait(upgrade.disable_wait, upgrade.disable_wait_for_jobs),
                        disable_hooks: upgrade.disable_hooks.unwrap_or(false),
                        crds: crd_policy(upgrade.crds, None, CrdPolicy::Skip),
                        skip_schema_validation: upgrade.disable_schema_validation.unwrap_or(false),
                        max_history,
                        cleanup_on_fail: upgrade.cleanup_on_fail.unwrap_or(false),
                        force: upgrade.force.unwrap_or(false),
                        take_ownership: !upgrade.disable_take_ownership.unwrap_or(false),
                        post_renderer: Some(renderer),
                        reuse_values: upgrade.preserve_values.unwrap_or(false),
                        ..Default::default()
                    };
                    prepared
                        .actions
                        .upgrade(target, chart.clone(), prepared.values.clone(), &opts)
                        .await
                }
            };
            let status = obj.status.get_or_insert_with(Default::default);
            status.last_attempted_release_action_duration = Some(format_duration(
                Duration::from_millis(started.elapsed().as_millis() as u64),
            ));
            let verb = state::action_name(action);
            match result {
                Ok(rel) => {
                    let rel = stored(prepared, rel).await;
                    record(obj, &rel, Some(action));
                    let snapshot = latest(obj);
                    let (reason, title) = match action {
                        ReleaseAction::Install => (hr_reason::INSTALL_SUCCEEDED, "install"),
                        ReleaseAction::Upgrade => (hr_reason::UPGRADE_SUCCEEDED, "upgrade"),
                    };
                    let message = format!(
                        "Helm {title} succeeded for release {} with chart {}",
                        full_release_name(&snapshot),
                        versioned_chart_name(&snapshot)
                    );
                    let test_enabled = obj.spec.test.as_ref().and_then(|t| t.enable) == Some(true);
                    let mut c = conditions_at(obj, now);
                    c.mark_true(RELEASED, reason, &message);
                    if test_enabled {
                        c.mark_unknown(
                            TEST_SUCCESS,
                            "AwaitingTests",
                            &format!(
                                "Helm release {} with chart {} is awaiting tests",
                                full_release_name(&snapshot),
                                versioned_chart_name(&snapshot)
                            ),
                        );
                    }
                    publish(ctx, obj, EventType::Normal, reason, message).await;
                    Ok(())
                }
                Err(e) => {
                    let reason = match action {
                        ReleaseAction::Install => hr_reason::INSTALL_FAILED,
                        ReleaseAction::Upgrade => hr_reason::UPGRADE_FAILED,
                    };
                    let message = format!(
                        "Helm {verb} failed for release {}/{} with chart {chart_label}: {}",
                        target.namespace,
                        target.name,
                        e.to_string().trim()
                    );
                    let recorded = e.release().cloned();
                    let status = obj.status.get_or_insert_with(Default::default);
                    status.failures = Some(status.failures.unwrap_or(0) + 1);
                    conditions_at(obj, now).mark_false(RELEASED, reason, &message);
                    publish(ctx, obj, EventType::Warning, reason, message).await;
                    match recorded {
                        Some(rel) => {
                            let rel = stored(prepared, rel).await;
                            record(obj, &rel, Some(action));
                            increment_failures(obj, action);
                            Ok(())
                        }
                        None => {
                            // Nothing was recorded (invalid values or chart, a refused
                            // action): the previous release stands. The RetryOnFailure
                            // strategy retries after its `retryInterval`; otherwise the
                            // failure backs off as helm-controller's does.
                            summarize(obj);
                            let message = ready_message(obj);
                            conditions_at(obj, now)
                                .mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message);
                            match state::retry_on_failure(obj, action)
                                .and_then(|i| parse_duration(&i).ok())
                            {
                                Some(after) => Err(Ended::Retry { after }),
                                None => Err(Ended::Failed),
                            }
                        }
                    }
                }
            }
        }
        Next::Test => {
            let test = obj.spec.test.clone().unwrap_or_default();
            let mut include = Vec::new();
            let mut exclude = Vec::new();
            for f in test.filters.iter().flatten() {
                if f.exclude == Some(true) {
                    exclude.push(f.name.clone());
                } else {
                    include.push(f.name.clone());
                }
            }
            let test_timeout = test
                .timeout
                .as_deref()
                .and_then(|t| parse_duration(t).ok())
                .unwrap_or(timeout);
            let opts = TestOptions {
                timeout: test_timeout,
                include,
                exclude,
            };
            let result = prepared.actions.test(target, &opts).await;
            let rel = match &result {
                Ok(rel) => Some(rel.clone()),
                Err(e) => e.release().cloned(),
            };
            if let Some(rel) = rel {
                let rel = stored(prepared, rel).await;
                record_tests(obj, &rel);
            }
            let snapshot = latest(obj);
            match result {
                Ok(_) => {
                    let hooks = snapshot.test_hooks.as_ref().map(|h| h.len()).unwrap_or(0);
                    let detail = if hooks == 0 {
                        "no test hooks".to_string()
                    } else {
                        format!("{hooks} test hook(s) completed successfully")
                    };
                    let message = format!(
                        "Helm test succeeded for release {} with chart {}: {detail}",
                        full_release_name(&snapshot),
                        versioned_chart_name(&snapshot)
                    );
                    conditions_at(obj, now).mark_true(
                        TEST_SUCCESS,
                        hr_reason::TEST_SUCCEEDED,
                        &message,
                    );
                    publish(
                        ctx,
                        obj,
                        EventType::Normal,
                        hr_reason::TEST_SUCCEEDED,
                        message,
                    )
                    .await;
                    Ok(())
                }
                Err(e) => {
                    let message = format!(
                        "Helm test failed for release {} with chart {}: {}",
                        full_release_name(&snapshot),
                        versioned_chart_name(&snapshot),
                        e.to_string().trim()
                    );
                    let ignore = test.ignore_failures.unwrap_or(false);
                    let status = obj.status.get_or_insert_with(Default::default);
                    status.failures = Some(status.failures.unwrap_or(0) + 1);
                    conditions_at(obj, now).mark_false(
                        TEST_SUCCESS,
                        hr_reason::TEST_FAILED,
                        &message,
                    );
                    if let Some(r) = Remediation::active(obj)
                        && !r.ignore_test_failures(ignore)
                    {
                        increment_failures(obj, r.action);
                    }
                    publish(
                        ctx,
                        obj,
                        EventType::Warning,
                        hr_reason::TEST_FAILED,
                        message,
                    )
                    .await;
                    Ok(())
                }
            }
        }
        Next::Rollback => {
            let failed = latest(obj);
            let rollback = obj.spec.rollback.clone().unwrap_or_default();
            // The newest successful revision before the failed one.
            let to = obj
                .status
                .as_ref()
                .and_then(|s| s.history.as_ref())
                .and_then(|h| {
                    h.iter()
                        .skip(1)
                        .find(|s| s.status == "deployed" || s.status == "superseded")
                        .map(|s| s.version)
                })
                .unwrap_or(0);
            let opts = RollbackOptions {
                version: to,
                wait: wait(rollback.disable_wait, rollback.disable_wait_for_jobs),
                disable_hooks: rollback.disable_hooks.unwrap_or(false),
                max_history,
                cleanup_on_fail: rollback.cleanup_on_fail.unwrap_or(false),
                force: rollback.force.unwrap_or(false),
                description: None,
            };
            let result = prepared.actions.rollback(target, &opts).await;
            match result {
                Ok(rel) => {
                    let rel = stored(prepared, rel).await;
                    record(obj, &rel, None);
                    let target_snapshot = latest(obj);
                    let message = format!(
                        "Helm rollback to previous release {} with chart {} succeeded",
                        full_release_name(&target_snapshot),
                        versioned_chart_name(&target_snapshot)
                    );
                    conditions_at(obj, now).mark_true(
                        REMEDIATED,
                        hr_reason::ROLLBACK_SUCCEEDED,
                        &message,
                    );
                    publish(
                        ctx,
                        obj,
                        EventType::Normal,
                        hr_reason::ROLLBACK_SUCCEEDED,
                        message,
                    )
                    .await;
                }
                Err(e) => {
                    if let Some(rel) = e.release().cloned() {
                        let rel = stored(prepared, rel).await;
                        record(obj, &rel, None);
                    }
                    let message = format!(
                        "Helm rollback to previous release {} with chart {} failed: {}",
                        full_release_name(&failed),
                        versioned_chart_name(&failed),
                        e.to_string().trim()
                    );
                    conditions_at(obj, now).mark_false(
                        REMEDIATED,
                        hr_reason::ROLLBACK_FAILED,
                        &message,
                    );
                    publish(
                        ctx,
                        obj,
                        EventType::Warning,
                        hr_reason::ROLLBACK_FAILED,
                        message,
                    )
                    .await;
                }
            }
            Ok(())
        }
        Next::Uninstall => {
            let failed = latest(obj);
            let uninstall = obj.spec.uninstall.clone().unwrap_or_default();
            let opts = UninstallOptions {
                wait: wait(uninstall.disable_wait, None),
                disable_hooks: uninstall.disable_hooks.unwrap_or(false),
                keep_history: uninstall.keep_history.unwrap_or(false),
                description: None,
                ignore_not_found: true,
                deletion_propagation: Some(propagation(uninstall.deletion_propagation)),
            };
            match prepared.actions.uninstall(target, &opts).await {
                Ok(gone) => {
                    if let Some(rel) = gone {
                        record(obj, &rel, None);
                    }
                    let message = format!(
                        "Helm uninstall remediation for release {} with chart {} succeeded",
                        full_release_name(&failed),
                        versioned_chart_name(&failed)
                    );
                    conditions_at(obj, now).mark_true(
                        REMEDIATED,
                        hr_reason::UNINSTALL_SUCCEEDED,
                        &message,
                    );
                    publish(
                        ctx,
                        obj,
                        EventType::Normal,
                        hr_reason::UNINSTALL_SUCCEEDED,
                        message,
                    )
                    .await;
                }
                Err(e) => {
                    let message = format!(
                        "Helm uninstall remediation for release {} with chart {} failed: {}",
                        full_release_name(&failed),
                        versioned_chart_name(&failed),
                        e.to_string().trim()
                    );
                    conditions_at(obj, now).mark_false(
                        REMEDIATED,
                        hr_reason::UNINSTALL_FAILED,
                        &message,
                    );
                    publish(
                        ctx,
                        obj,
                        EventType::Warning,
                        hr_reason::UNINSTALL_FAILED,
                        message,
                    )
                    .await;
                }
            }
            Ok(())
        }
        Next::Unlock => {
            let storage = prepared.actions.storage(&target.storage_namespace);
            match storage.unlock(&target.name).await {
                Ok(Some(rel)) => {
                    let was = latest(obj);
                    let rel = stored(prepared, rel).await;
                    record(obj, &rel, None);
                    let message = format!(
                        "Unlocked Helm release {} with chart {} in {} state",
                        full_release_name(&was),
                        versioned_chart_name(&was),
                        was.status
                    );
                    publish(ctx, obj, EventType::Normal, "PendingRelease", message).await;
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(e) => {
                    let message = format!("Unlock of Helm release {} failed: {e}", target.name);
                    conditions_at(obj, now)
                        .mark_false(RELEASED, "PendingRelease", &message)
                        .mark_false(READY, "PendingRelease", &message)
                        .mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message);
                    Err(Ended::Failed)
                }
            }
        }
        Next::Done | Next::Stall(_) => Ok(()),
    }
}

fn crd_policy(
    policy: Option<CrdsPolicy>,
    skip_crds: Option<bool>,
    default: CrdPolicy,
) -> CrdPolicy {
    match policy {
        Some(CrdsPolicy::Skip) => CrdPolicy::Skip,
        Some(CrdsPolicy::Create) => CrdPolicy::Create,
        Some(CrdsPolicy::CreateReplace) => CrdPolicy::CreateReplace,
        None if skip_crds == Some(true) => CrdPolicy::Skip,
        None => default,
    }
}

fn increment_failures(obj: &mut HelmRelease, action: ReleaseAction) {
    let status = obj.status.get_or_insert_with(Default::default);
    match action {
        ReleaseAction::Install => {
            status.install_failures = Some(status.install_failures.unwrap_or(0) + 1)
        }
        ReleaseAction::Upgrade => {
            status.upgrade_failures = Some(status.upgrade_failures.unwrap_or(0) + 1)
        }
    }
}

/// `rel` as storage holds it (what the next look at storage compares the history with), or
/// `rel` itself when it is not there (uninstalled without history) or cannot be read.
async fn stored(prepared: &Prepared, rel: Release) -> Release {
    let storage = prepared.actions.storage(&prepared.target.storage_namespace);
    match storage.get(&rel.name, rel.version).await {
        Ok(Some(found)) => found,
        _ => rel,
    }
}

/// What Flux observes of a stored release.
fn observe(rel: &Release) -> Observed {
    let digest = serde_json::to_vec(rel)
        .map(|bytes| {
            let sum = Sha256::digest(&bytes);
            format!(
                "sha256:{}",
                sum.iter().map(|b| format!("{b:02x}")).collect::<String>()
            )
        })
        .unwrap_or_default();
    let time = |t: &str| (!t.is_empty()).then(|| t.to_string());
    Observed {
        name: rel.name.clone(),
        namespace: rel.namespace.clone(),
        version: rel.version,
        status: rel.info.status.as_str().to_string(),
        chart_name: rel.chart_name().to_string(),
        chart_version: rel.chart_version().to_string(),
        app_version: rel.app_version().to_string(),
        config_digest: values::digest(&rel.config),
        digest,
        first_deployed: rel.info.first_deployed.clone(),
        last_deployed: rel.info.last_deployed.clone(),
        deleted: time(&rel.info.deleted),
    }
}

/// Records `rel` in `status.history`: replaces the snapshot of the same revision, or puts a new
/// one first; at most [`MAX_SNAPSHOTS`] kept.
fn record(obj: &mut HelmRelease, rel: &Release, action: Option<ReleaseAction>) {
    let observed = observe(rel);
    let status = obj.status.get_or_insert_with(Default::default);
    let mut history = status.history.take().unwrap_or_default();
    if let Some(existing) = history.iter_mut().find(|s| {
        s.name == observed.name
            && s.namespace == observed.namespace
            && s.version == observed.version
    }) {
        let mut snapshot =
            observed.snapshot(action.or_else(|| existing.action.as_deref().and_then(parse_action)));
        snapshot.test_hooks = existing.test_hooks.clone();
        snapshot.oci_digest = existing.oci_digest.clone();
        *existing = snapshot;
    } else {
        let mut snapshot = observed.snapshot(action);
        snapshot.oci_digest = status.last_attempted_revision_digest.clone();
        history.insert(0, snapshot);
    }
    history.sort_by_key(|s| std::cmp::Reverse(s.version));
    history.truncate(MAX_SNAPSHOTS);
    status.history = Some(history);
}

fn parse_action(s: &str) -> Option<ReleaseAction> {
    match s {
        "install" => Some(ReleaseAction::Install),
        "upgrade" => Some(ReleaseAction::Upgrade),
        _ => None,
    }
}

/// Records the test hooks' last runs of `rel` in its snapshot.
fn record_tests(obj: &mut HelmRelease, rel: &Release) {
    record(obj, rel, None);
    let mut hooks = BTreeMap::new();
    for h in rel.hooks.iter().filter(|h| h.runs_on("test")) {
        let time = |t: &str| (!t.is_empty()).then(|| t.to_string());
        hooks.insert(
            h.name.clone(),
            TestHookStatus {
                last_completed: time(&h.last_run.completed_at),
                last_started: time(&h.last_run.started_at),
                phase: time(&h.last_run.phase),
            },
        );
    }
    let status = obj.status.get_or_insert_with(Default::default);
    if let Some(s) = status
        .history
        .iter_mut()
        .flatten()
        .find(|s| s.version == rel.version && s.name == rel.name)
    {
        s.test_hooks = Some(hooks);
    }
}

fn latest(obj: &HelmRelease) -> Snapshot {
    obj.status
        .as_ref()
        .and_then(|s| s.history.as_ref())
        .and_then(|h| h.first())
        .cloned()
        .unwrap_or_default()
}

/// In sync: a Released condition left failed by an earlier attempt becomes a success (the
/// release is what the spec asks for), as Flux does.
fn in_sync(obj: &mut HelmRelease) {
    let generation = obj.metadata.generation;
    let cur = latest(obj);
    let status = obj.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.clone().unwrap_or_default();
    let mut c = Conditions::of(&mut status.conditions, generation, Timestamp::now());
    if ferroflux_api::conditions::is_true(&conditions, REMEDIATED) {
        c.delete(REMEDIATED);
        c.mark_true(
            RELEASED,
            hr_reason::UPGRADE_SUCCEEDED,
            &format!(
                "Helm upgrade succeeded for release {} with chart {}",
                full_release_name(&cur),
                versioned_chart_name(&cur)
            ),
        );
        return;
    }
    let released = find_condition(&conditions, RELEASED);
    let (reason, verb) = match released.map(|c| c.reason.as_str()) {
        Some(hr_reason::INSTALL_FAILED) => (hr_reason::INSTALL_SUCCEEDED, "install"),
        Some(hr_reason::UPGRADE_FAILED) => (hr_reason::UPGRADE_SUCCEEDED, "upgrade"),
        _ => return,
    };
    c.mark_true(
        RELEASED,
        reason,
        &format!(
            "Helm {verb} succeeded for release {} with chart {}",
            full_release_name(&cur),
            versioned_chart_name(&cur)
        ),
    );
}

/// Flux's `summarize`: Ready mirrors the first of Remediated, TestSuccess (when tests count)
/// and Released; a remediation is never Ready.
fn summarize(obj: &mut HelmRelease) {
    let generation = obj.metadata.generation;
    let test = obj.spec.test.clone().unwrap_or_default();
    let tests_count = test.enable == Some(true) && test.ignore_failures != Some(true);
    let order: &[&str] = if tests_count {
        &[REMEDIATED, TEST_SUCCESS, RELEASED]
    } else {
        &[REMEDIATED, RELEASED]
    };
    let post = obj
        .spec
        .post_renderers
        .as_ref()
        .map(|p| spec_digest(&json!(p)));
    let common = obj
        .spec
        .common_metadata
        .as_ref()
        .map(|c| spec_digest(&json!(c)));
    let status = obj.status.get_or_insert_with(Default::default);
    status.observed_post_renderers_digest = post;
    status.observed_common_metadata_digest = common;
    let conditions = status.conditions.clone().unwrap_or_default();
    let mut c = Conditions::of(&mut status.conditions, generation, Timestamp::now());
    if test.enable != Some(true) {
        c.delete(TEST_SUCCESS);
    }
    let Some(first) = order
        .iter()
        .filter(|t| test.enable == Some(true) || **t != TEST_SUCCESS)
        .find_map(|t| find_condition(&conditions, t))
    else {
        return;
    };
    let status_value = if first.type_ == REMEDIATED {
        "False"
    } else {
        first.status.as_str()
    };
    match status_value {
        "True" => {
            c.mark_true(READY, &first.reason, &first.message)
                .delete(STALLED);
        }
        "False" => {
            c.mark_false(READY, &first.reason, &first.message);
        }
        _ => {
            c.mark_unknown(READY, &first.reason, &first.message);
        }
    }
}

/// Flux's digest of a spec part: sha256 of its JSON.
fn spec_digest(v: &Value) -> String {
    match v {
        Value::Object(map) => values::digest(map),
        other => {
            let mut map = Map::new();
            map.insert("v".into(), other.clone());
            values::digest(&map)
        }
    }
}

async fn write_status(api: &Api<HelmRelease>, hr: &HelmRelease) -> Result<(), kube::Error> {
    let params = PatchParams {
        field_manager: Some(STATUS_MANAGER.into()),
        ..Default::default()
    };
    let status = hr.status.clone().unwrap_or_default();
    // A merge patch would keep list entries and fields the new status dropped (a history
    // entry, a cleared counter): null them explicitly.
    let mut value = serde_json::to_value(&status).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        for key in [
            "failures",
            "installFailures",
            "upgradeFailures",
            "helmChart",
            "history",
            "lastAttemptedValuesChecksum",
            "lastReleaseRevision",
            "observedPostRenderersDigest",
            "observedCommonMetadataDigest",
        ] {
            map.entry(key).or_insert(Value::Null);
        }
    }
    api.patch_status(
        &hr.name_any(),
        &params,
        &Patch::Merge(json!({"status": value})),
    )
    .await
    .map(|_| ())
}

async fn publish(ctx: &Context, hr: &HelmRelease, type_: EventType, reason: &str, note: String) {
    let mut note = note;
    if note.len() > 1024 {
        let mut end = 1000;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note = format!("{}...", &note[..end]);
    }
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: "Reconcile".into(),
        secondary: None,
    };
    let metadata = super::eventmeta::event_metadata(hr, reason);
    if let Err(e) = ctx
        .recorder
        .publish_with(&event, &hr.object_ref(&()), metadata)
        .await
    {
        tracing::debug!(error = %e, "failed to publish event");
    }
}

/// Deletion: uninstall the release (unless suspended), delete the owned HelmChart, let go.
async fn finalize(
    hr: &HelmRelease,
    ctx: &Context,
    api: &Api<HelmRelease>,
) -> Result<Action, ReconcileError> {
    if !finalizer::has(hr) {
        return Ok(Action::await_change());
    }
    let status = hr.status.clone().unwrap_or_default();
    if hr.spec.suspend != Some(true) {
        if let Some(storage_ns) = status
            .storage_namespace
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            let retry = Duration::from_secs(10);
            let outcome = async {
                let (actions, _) = target_actions(hr, ctx, retry)
                    .await
                    .map_err(|f| f.message)?;
                let target =
                    ReleaseRef::new(&hr.release_name(), &hr.target_namespace(), storage_ns);
                uninstall_announced(ctx, hr, &actions, &target).await
            }
            .await;
            if let Err(e) = outcome {
                let message = format!(
                    "Helm uninstall failed for release {}: {e}",
                    hr.release_name()
                );
                publish(
                    ctx,
                    hr,
                    EventType::Warning,
                    hr_reason::UNINSTALL_FAILED,
                    message,
                )
                .await;
                return Ok(Action::requeue(Duration::from_secs(10)));
            }
        }
        if let Some(helm_chart) = status.helm_chart.as_deref()
            && let Err(e) = chart::delete(&ctx.client, helm_chart).await
        {
            publish(ctx, hr, EventType::Warning, "HelmChartDeleteFailed", e).await;
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
    }
    finalizer::remove(api, hr).await?;
    Ok(Action::await_change())
}

/// The uninstall of a release that is gone from the spec (the HelmRelease deleted, or its
/// release moved): `spec.uninstall`, timing out after its `timeout` or the HelmRelease's.
fn uninstall_options(hr: &HelmRelease) -> UninstallOptions {
    let uninstall = hr.spec.uninstall.clone().unwrap_or_default();
    let timeout = uninstall
        .timeout
        .as_deref()
        .or(hr.spec.timeout.as_deref())
        .and_then(|t| parse_duration(t).ok())
        .unwrap_or(Duration::from_secs(300));
    UninstallOptions {
        wait: WaitOptions {
            wait: !uninstall.disable_wait.unwrap_or(false),
            wait_for_jobs: false,
            timeout,
            health: Default::default(),
        },
        disable_hooks: uninstall.disable_hooks.unwrap_or(false),
        keep_history: uninstall.keep_history.unwrap_or(false),
        description: None,
        ignore_not_found: true,
        deletion_propagation: Some(propagation(uninstall.deletion_propagation)),
    }
}

/// Uninstalls the release last made for `obj` when it has moved (Flux's release target
/// change, [`state::moved_release`]) and forgets it: history, failure counts and storage
/// namespace, so that the spec's release is installed afresh.
async fn uninstall_moved(
    obj: &mut HelmRelease,
    ctx: &Context,
    actions: &Actions,
    chart_name: &str,
    retry: Duration,
) -> Result<(), Failure> {
    let Some(old) = state::moved_release(obj, chart_name) else {
        return Ok(());
    };
    tracing::info!(
        release = %format!("{}/{}", old.namespace, old.name),
        "release target configuration changed (chart name or release namespace/name): running uninstall for current release"
    );
    let target = ReleaseRef::new(&old.name, &old.namespace, &old.storage_namespace);
    uninstall_announced(ctx, obj, actions, &target)
        .await
        .map_err(|e| {
            Failure::retry(
                hr_reason::UNINSTALL_FAILED,
                format!(
                    "Helm uninstall failed for release {}/{}: {e}",
                    old.namespace, old.name
                ),
                retry,
            )
        })?;
    let status = obj.status.get_or_insert_with(Default::default);
    status.history = None;
    status.failures = None;
    status.install_failures = None;
    status.upgrade_failures = None;
    status.storage_namespace = None;
    Ok(())
}

/// Uninstalls `target` with `hr`'s `spec.uninstall`; a release that was there is announced
/// with helm-controller's event. Errs with the action's message.
async fn uninstall_announced(
    ctx: &Context,
    hr: &HelmRelease,
    actions: &Actions,
    target: &ReleaseRef,
) -> Result<(), String> {
    let gone = actions
        .uninstall(target, &uninstall_options(hr))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(rel) = gone {
        let message = format!(
            "Helm uninstall succeeded for release {}/{}.v{} with chart {}@{}",
            rel.namespace,
            rel.name,
            rel.version,
            rel.chart_name(),
            rel.chart_version()
        );
        publish(
            ctx,
            hr,
            EventType::Normal,
            hr_reason::UNINSTALL_SUCCEEDED,
            message,
        )
        .await;
    }
    Ok(())
}

/// Flux's `uninstall.deletionPropagation` as the API server's policy (`background` unset).
fn propagation(
    policy: Option<ferroflux_api::helmrelease::DeletionPropagation>,
) -> kube::api::PropagationPolicy {
    use ferroflux_api::helmrelease::DeletionPropagation as Flux;
    use kube::api::PropagationPolicy as Api;
    match policy.unwrap_or(Flux::Background) {
        Flux::Background => Api::Background,
        Flux::Foreground => Api::Foreground,
        Flux::Orphan => Api::Orphan,
    }
}

#[cfg(test)]
mod tests;
