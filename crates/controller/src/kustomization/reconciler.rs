//! The Kustomization reconciler: Flux's kustomize-controller pipeline, object by object.
//!
//! finalizer → suspend → then Flux's named steps, each a function of its own with a typed
//! result and a span: `source` (the GitRepository's artifact) → `dependencies` (`dependsOn`)
//! → `artifact` (download, digest, untar) → `build` (the `build` module: kustomization.yaml,
//! kustomize, owner labels and commonMetadata, decrypt, substitute) → `apply` (staged, then
//! the inventory) → `prune` → `health`; their `Applied` result or `Failure` becomes the
//! status (through `Conditions`), an event and one log line. A failed build or apply never
//! prunes. Deletion is `finalize`.

use super::build;
use crate::artifact;
use crate::dependencies::{check_dependencies, dependency_keys, find_cycle, key};
use crate::events::Recorder;
use crate::finalizer;
use crate::metrics::{KUSTOMIZE_CONTROLLER, Metrics, Outcome};
use crate::step::{self, Failure, OrFail, TERMINAL_ERROR};
use crate::target;
use ferroflux_api::HasArtifact;
use ferroflux_api::conditions::{Conditions, HEALTHY, READY, RECONCILING, STALLED, reason};
use ferroflux_api::duration::{format_duration, parse_duration};
use ferroflux_api::kustomization::{DeletionPolicy, ResourceInventory, SourceKind};
use ferroflux_api::{
    Artifact, GitRepository, Kustomization, KustomizationStatus, RECONCILE_REQUESTED_AT,
};
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::changeset::{Action as ChangeAction, ChangeSet};
use ferroflux_apply::health::CustomHealth;
use ferroflux_apply::ignore::IgnoreRules;
use ferroflux_apply::inventory::{InventoryObject, inventory_of, stale_entries, with_unpruned};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tracing::Instrument;

/// The kind this reconciler owns, as its log lines name it.
const KIND: &str = "Kustomization";

/// Labels Flux puts on every applied object, naming the Kustomization that owns it.
pub const OWNER_NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
/// The label naming the owning Kustomization's namespace, beside [`OWNER_NAME_LABEL`].
pub const OWNER_NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";
/// The field manager of applied objects, as in Flux.
pub const FIELD_MANAGER: &str = "kustomize-controller";
/// The field manager of status writes, as in Flux.
pub const STATUS_MANAGER: &str = "gotk-kustomize-controller";

/// Settings of the Kustomization controller (Flux's flags).
#[derive(Clone, Debug)]
pub struct Options {
    /// How often a Kustomization waiting on dependencies is retried (`--requeue-dependency`).
    pub requeue_dependency: Duration,
    /// The largest artifact accepted, compressed or unpacked.
    pub max_artifact_size: u64,
    /// How often health checks poll.
    pub health_poll: Duration,
    /// How many Kustomizations reconcile at once (Flux's `--concurrent`).
    pub concurrency: u16,
    /// What an unset substitution variable does (Flux's `StrictPostBuildSubstitutions`
    /// feature gate; strict by default).
    pub substitution: build::Strictness,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            requeue_dependency: Duration::from_secs(30),
            max_artifact_size: artifact::DEFAULT_MAX_SIZE,
            health_poll: Duration::from_secs(2),
            concurrency: 4,
            substitution: build::Strictness::Strict,
        }
    }
}

/// What every reconcile shares.
pub struct Context {
    client: kube::Client,
    /// Applies to the controller's own cluster as itself: one connection pool and one
    /// discovery cache for every Kustomization without `kubeConfig` or `serviceAccountName`.
    local: Applier,
    config: kube::Config,
    store: Store<Kustomization>,
    recorder: Recorder,
    options: Options,
    metrics: Arc<Metrics>,
}

/// An error the controller loop reports (status writes and API failures); failures of the
/// pipeline itself end up in the object's status instead.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused or failed a status write or a read the loop needs.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// Runs the Kustomization controller until SIGINT or SIGTERM, with metrics nobody scrapes;
/// a process that serves metrics or shares its shutdown uses [`controller`].
pub async fn run(client: kube::Client, config: kube::Config, options: Options) {
    let (_, task) = controller(client, config, options, Arc::new(Metrics::new()), None);
    task.await;
}

/// A shutdown trigger for [`controller`]; `None` means SIGINT or SIGTERM.
pub type Shutdown = Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>;

/// The Kustomization controller: its cache (for metrics and readiness) and the future that runs
/// it until `shutdown` resolves, letting reconciles in progress finish.
pub fn controller(
    client: kube::Client,
    config: kube::Config,
    options: Options,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) -> (
    Store<Kustomization>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let kustomizations = Api::<Kustomization>::all(client.clone());
    let repositories = Api::<GitRepository>::all(client.clone());
    let concurrency = options.concurrency.max(1);
    let (store, writer) = reflector::store();
    // As Flux's GenerationChangedPredicate and ReconcileRequestedPredicate: a Kustomization
    // runs when its spec changes, when a reconcile is requested, when it is being deleted, and
    // on its own schedule; never because of its own status write (a Healthy message carries
    // the check's duration, so each run would start the next one).
    let triggers = watcher(kustomizations.clone(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(reconcile_trigger, PredicateConfig::default());
    let controller = Controller::for_stream(triggers, store.clone())
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency));
    let git_wakes = SourceWakes::new(SourceKind::GitRepository, store.clone());
    let by_dependency = store.clone();
    let oci_repositories = Api::<ferroflux_api::OCIRepository>::all(client.clone());
    let oci_wakes = SourceWakes::new(SourceKind::OCIRepository, store.clone());
    let external_artifacts = Api::<ferroflux_api::ExternalArtifact>::all(client.clone());
    let ea_wakes = SourceWakes::new(SourceKind::ExternalArtifact, store.clone());
    let buckets = Api::<ferroflux_api::Bucket>::all(client.clone());
    let bucket_wakes = SourceWakes::new(SourceKind::Bucket, store.clone());
    let reporter = Reporter {
        controller: "kustomize-controller".into(),
        instance: None,
    };
    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter).notifying(metrics.notifier()),
        local: new_applier(client.clone(), &options),
        client,
        config,
        store: store.clone(),
        options,
        metrics,
    });
    let controller = controller
        // A new artifact reconciles every Kustomization built from it at once.
        .watches(repositories, watcher::Config::default(), move |repo| {
            git_wakes.woken(&repo)
        })
        // The same for OCIRepositories, ExternalArtifacts (an ArtifactGenerator's output) and
        // Buckets.
        .watches(oci_repositories, watcher::Config::default(), move |repo| {
            oci_wakes.woken(&repo)
        })
        .watches(external_artifacts, watcher::Config::default(), move |ea| {
            ea_wakes.woken(&ea)
        })
        .watches(buckets, watcher::Config::default(), move |bucket| {
            bucket_wakes.woken(&bucket)
        })
        // A Kustomization that changes wakes the ones depending on it, instead of leaving
        // them to the dependency requeue interval.
        .watches(kustomizations, watcher::Config::default(), move |ks| {
            // A dependency in the middle of a pass (Ready=Unknown, Progressing) cannot let its
            // dependents through yet: they are woken by the pass's outcome, not by its start.
            if in_progress(&ks) {
                return Vec::new();
            }
            let this = key(&ks.namespace().unwrap_or_default(), &ks.name_any());
            by_dependency
                .state()
                .iter()
                .filter(|k| dependency_keys(k).contains(&this))
                .map(|k| ObjectRef::from_obj(k.as_ref()))
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
                tracing::debug!(error = %e, "kustomization reconcile error");
            }
        });
    (store, Box::pin(task))
}

/// What, when it changes, makes a Kustomization reconcile at once: its generation, the
/// `reconcile.fluxcd.io/requestedAt` annotation and the start of its deletion.
fn reconcile_trigger(ks: &Kustomization) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    ks.metadata.generation.hash(&mut hasher);
    ks.annotations()
        .get(RECONCILE_REQUESTED_AT)
        .hash(&mut hasher);
    ks.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

/// Whether `ks` is in the middle of a pass: the progress [`progress`] writes (Ready=Unknown,
/// reason Progressing).
fn in_progress(ks: &Kustomization) -> bool {
    ks.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| ferroflux_api::conditions::find_condition(c, READY))
        .is_some_and(|c| c.status == "Unknown" && c.reason == reason::PROGRESSING)
}

/// Whether `repo`'s artifact revision differs from the one last seen (Flux's
/// SourceRevisionChangePredicate): the source's other changes (its own conditions,
/// `lastHandledReconcileAt`, annotations) must not rebuild every Kustomization made from it.
/// A source seen for the first time counts as changed, as a create event does in Flux.
/// The Kustomizations of one source kind a source's change wakes: those built from it, when
/// its artifact's revision differs from the last seen (first sight counts, as a create event
/// does); a status write that keeps the revision wakes nobody.
struct SourceWakes {
    kind: SourceKind,
    kustomizations: Store<Kustomization>,
    /// The last artifact revision seen of each source, by `namespace/name`.
    seen: std::sync::Mutex<BTreeMap<String, Option<String>>>,
}

impl SourceWakes {
    fn new(kind: SourceKind, kustomizations: Store<Kustomization>) -> Self {
        SourceWakes {
            kind,
            kustomizations,
            seen: std::sync::Mutex::default(),
        }
    }

    fn woken(&self, source: &(impl ResourceExt + HasArtifact)) -> Vec<ObjectRef<Kustomization>> {
        let ns = source.namespace().unwrap_or_default();
        let name = source.name_any();
        let revision = source.artifact().map(|a| a.revision.clone());
        if !self.changed(&ns, &name, revision) {
            return Vec::new();
        }
        self.kustomizations
            .state()
            .iter()
            .filter(|k| {
                let own = k.namespace().unwrap_or_default();
                k.spec.source_ref.kind == self.kind
                    && k.spec.source_ref.name == name
                    && k.spec.source_ref.namespace.as_deref().unwrap_or(&own) == ns
            })
            .map(|k| ObjectRef::from_obj(k.as_ref()))
            .collect()
    }

    /// Whether `revision` differs from the last seen of `ns/name`, remembering it.
    fn changed(&self, ns: &str, name: &str, revision: Option<String>) -> bool {
        let Ok(mut seen) = self.seen.lock() else {
            return true;
        };
        match seen.insert(key(ns, name), revision.clone()) {
            None => true,
            Some(previous) => previous != revision,
        }
    }
}

fn error_policy(_ks: Arc<Kustomization>, _error: &ReconcileError, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

struct Timing {
    interval: Duration,
    retry: Duration,
    timeout: Duration,
}

fn timing(ks: &Kustomization) -> Result<Timing, String> {
    let interval = parse_duration(&ks.spec.interval).map_err(|e| format!("spec.interval: {e}"))?;
    let retry = match &ks.spec.retry_interval {
        Some(r) => parse_duration(r).map_err(|e| format!("spec.retryInterval: {e}"))?,
        None => interval,
    };
    let timeout = match &ks.spec.timeout {
        Some(t) => parse_duration(t).map_err(|e| format!("spec.timeout: {e}"))?,
        None => interval
            .saturating_sub(Duration::from_secs(30))
            .max(Duration::from_secs(30)),
    };
    Ok(Timing {
        interval: interval.max(Duration::from_secs(1)),
        retry: retry.max(Duration::from_secs(1)),
        timeout,
    })
}

async fn reconcile(ks: Arc<Kustomization>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let _active = ctx.metrics.start(KUSTOMIZE_CONTROLLER);
    let started = Instant::now();
    let result = reconcile_object(ks.clone(), ctx.clone()).await;
    let outcome = match &result {
        Ok((_, outcome)) => *outcome,
        Err(_) => Outcome::Error,
    };
    ctx.metrics.record(
        KUSTOMIZE_CONTROLLER,
        "Kustomization",
        &ks.namespace().unwrap_or_default(),
        &ks.name_any(),
        started.elapsed(),
        outcome,
    );
    result.map(|(action, _)| action)
}

/// What a successful pass did: the revision applied, what changed (applied and pruned) and,
/// when health was checked, the Healthy message.
struct Applied {
    revision: String,
    changes: ChangeSet,
    health: Option<String>,
}

async fn reconcile_object(
    ks: Arc<Kustomization>,
    ctx: Arc<Context>,
) -> Result<(Action, Outcome), ReconcileError> {
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let name = ks.name_any();
    let api: Api<Kustomization> = Api::namespaced(ctx.client.clone(), &ns);

    if ks.metadata.deletion_timestamp.is_some() {
        return finalize(&ks, &ctx, &api)
            .instrument(tracing::info_span!("finalize"))
            .await
            .map(|a| (a, Outcome::Success));
    }
    finalizer::ensure(&api, ks.as_ref()).await?;
    if ks.spec.suspend == Some(true) {
        return Ok((Action::await_change(), Outcome::Success));
    }

    let started = Instant::now();
    let mut status = ks.status.clone().unwrap_or_default();
    let (result, interval) = match timing(&ks) {
        Ok(timing) => {
            // spec.timeout bounds the API client's retries of transient failures (not the
            // steps: the health wait and the staged applies have their own bounds).
            let deadline = tokio::time::Instant::now() + timing.timeout;
            let steps = steps(&ks, &ctx, &api, &mut status, &timing);
            (
                ferroflux_kubeclient::within(deadline, steps).await,
                timing.interval,
            )
        }
        Err(message) => (
            Err(Failure::stalled(
                "InvalidDuration",
                message,
                Duration::from_secs(300),
            )),
            Duration::ZERO,
        ),
    };
    // Written with the outcome only, as Flux does: `reconcile --with-source` and the other
    // waits take a handled request with Ready=Unknown (the progress writes) for a finished one
    // otherwise.
    if let Some(requested) = ks.annotations().get(RECONCILE_REQUESTED_AT) {
        status.last_handled_reconcile_at = Some(requested.clone());
    }
    match result {
        Ok(applied) => {
            let summary = step::change_summary(&applied.changes);
            step::log_success(KIND, &ns, &name, &applied.revision, &summary);
            let note = succeed(&ks, &api, status, &applied, started, interval).await?;
            let revision = Some(applied.revision.clone());
            publish_at(
                &ctx,
                &ks,
                (EventType::Normal, reason::RECONCILIATION_SUCCEEDED),
                note,
                revision.clone(),
            )
            .await;
            // As kustomize-controller does: a commit status update for every successful
            // reconcile, which only commit-status providers act on.
            let mut metadata = revision_metadata(revision);
            metadata.insert(
                "kustomize.toolkit.fluxcd.io/commit_status".to_string(),
                "update".to_string(),
            );
            let finished = Event {
                type_: EventType::Normal,
                reason: reason::RECONCILIATION_SUCCEEDED.into(),
                note: Some(format!(
                    "Reconciliation finished in {}, next run in {}",
                    ferroflux_api::duration::format_duration(started.elapsed()),
                    ferroflux_api::duration::format_duration(interval)
                )),
                action: "Reconcile".into(),
                secondary: None,
            };
            ctx.recorder
                .notify_only(&finished, &ks.object_ref(&()), metadata)
                .await;
            Ok((Action::requeue(interval), Outcome::Success))
        }
        Err(failure) => {
            step::log_failure(KIND, &ns, &name, &failure);
            let revision = status.last_attempted_revision.clone();
            fail(&ks, &api, status, &failure).await?;
            // Waiting on a dependency is expected, not a warning.
            let type_ = if failure.reason == reason::DEPENDENCY_NOT_READY {
                EventType::Normal
            } else {
                EventType::Warning
            };
            publish_at(
                &ctx,
                &ks,
                (type_, failure.reason),
                failure.message,
                revision,
            )
            .await;
            Ok((Action::requeue(failure.requeue), Outcome::Requeue))
        }
    }
}

/// Flux's steps, in kustomize-controller's order: source → dependencies → artifact → build →
/// apply (and inventory) → prune → health. A failed build or apply never prunes.
async fn steps(
    ks: &Kustomization,
    ctx: &Context,
    api: &Api<Kustomization>,
    status: &mut KustomizationStatus,
    timing: &Timing,
) -> Result<Applied, Failure> {
    let retry = timing.retry;
    let custom_health = CustomHealth::new(
        ks.spec.health_check_exprs.as_deref().unwrap_or_default(),
    )
    .map_err(|e| {
        Failure::stalled(
            reason::INVALID_CEL_EXPRESSION,
            format!("{TERMINAL_ERROR}: {e}"),
            timing.interval,
        )
    })?;
    let art = source(ks, ctx, retry)
        .instrument(tracing::info_span!("source"))
        .await?;
    let revision = art.revision.clone();
    status.last_attempted_revision = Some(revision.clone());
    tracing::info_span!("dependencies").in_scope(|| dependencies(ks, ctx, &revision))?;
    progress(ks, api, status, Progress::Start, &revision, timing).await?;
    let unpacked = artifact(ctx, &art, retry)
        .instrument(tracing::info_span!("artifact", revision = %revision))
        .await?;
    let objects = build(ks, ctx, &unpacked, retry)
        .instrument(tracing::info_span!("build"))
        .await?;
    drop(unpacked);

    let own = own_applier(ks, ctx)
        .await
        .or_fail(reason::RECONCILIATION_FAILED, retry)?;
    let applier = own.as_ref().unwrap_or(&ctx.local);
    let mut changes = apply(ks, applier, &objects, timing)
        .instrument(tracing::info_span!("apply"))
        .await?;
    let inventory = inventory_of(&objects).or_fail(reason::BUILD_FAILED, retry)?;
    let previous = status
        .inventory
        .replace(inventory.clone())
        .unwrap_or_default();
    if ks.spec.prune {
        match prune(ks, applier, &previous, &inventory, retry)
            .instrument(tracing::info_span!("prune"))
            .await
        {
            Ok(pruned) => changes.extend(pruned),
            Err(failure) => {
                // Stale objects not deleted yet stay in the inventory (as Flux 2.9 keeps
                // them): the next attempt prunes them instead of leaving them behind.
                status.inventory = Some(with_unpruned(&inventory, &previous));
                return Err(failure);
            }
        }
    }
    let health = health(
        ks,
        api,
        status,
        applier,
        objects,
        &custom_health,
        &revision,
        timing,
    )
    .instrument(tracing::info_span!("health"))
    .await?;
    Ok(Applied {
        revision,
        changes,
        health,
    })
}

/// The source's artifact: `spec.sourceRef` must be a GitRepository, an OCIRepository, a Bucket
/// or an ExternalArtifact with an artifact.
async fn source(ks: &Kustomization, ctx: &Context, retry: Duration) -> Result<Artifact, Failure> {
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let source = &ks.spec.source_ref;
    let source_ns = source.namespace.clone().unwrap_or(ns);
    let source_id = format!("{}/{}/{}", source.kind.as_str(), source_ns, source.name);
    if source.kind == SourceKind::OCIRepository {
        let repos: Api<ferroflux_api::OCIRepository> =
            Api::namespaced(ctx.client.clone(), &source_ns);
        let repo = repos
            .get_opt(&source.name)
            .await
            .map_err(|e| format!("Source '{source_id}': {e}"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?
            .ok_or_else(|| format!("Source '{source_id}' not found"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?;
        return repo
            .status
            .and_then(|s| s.artifact)
            .ok_or("Source is not ready, artifact not found")
            .or_fail(reason::ARTIFACT_FAILED, retry);
    }
    if source.kind == SourceKind::ExternalArtifact {
        let artifacts: Api<ferroflux_api::ExternalArtifact> =
            Api::namespaced(ctx.client.clone(), &source_ns);
        let external = artifacts
            .get_opt(&source.name)
            .await
            .map_err(|e| format!("Source '{source_id}': {e}"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?
            .ok_or_else(|| format!("Source '{source_id}' not found"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?;
        return external
            .status
            .and_then(|s| s.artifact)
            .ok_or("Source is not ready, artifact not found")
            .or_fail(reason::ARTIFACT_FAILED, retry);
    }
    if source.kind == SourceKind::Bucket {
        let buckets: Api<ferroflux_api::Bucket> = Api::namespaced(ctx.client.clone(), &source_ns);
        let bucket = buckets
            .get_opt(&source.name)
            .await
            .map_err(|e| format!("Source '{source_id}': {e}"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?
            .ok_or_else(|| format!("Source '{source_id}' not found"))
            .or_fail(reason::ARTIFACT_FAILED, retry)?;
        return bucket
            .status
            .and_then(|s| s.artifact)
            .ok_or("Source is not ready, artifact not found")
            .or_fail(reason::ARTIFACT_FAILED, retry);
    }
    if source.kind != SourceKind::GitRepository {
        return Err(Failure::stalled(
            reason::ARTIFACT_FAILED,
            format!(
                "Source '{source_id}': kind {} is not supported yet",
                source.kind.as_str()
            ),
            retry,
        ));
    }
    let repos: Api<GitRepository> = Api::namespaced(ctx.client.clone(), &source_ns);
    let repo = repos
        .get_opt(&source.name)
        .await
        .map_err(|e| format!("Source '{source_id}': {e}"))
        .or_fail(reason::ARTIFACT_FAILED, retry)?
        .ok_or_else(|| format!("Source '{source_id}' not found"))
        .or_fail(reason::ARTIFACT_FAILED, retry)?;
    repo.status
        .and_then(|s| s.artifact)
        .ok_or("Source is not ready, artifact not found")
        .or_fail(reason::ARTIFACT_FAILED, retry)
}

/// `dependsOn`: no cycle through this Kustomization, and every dependency Ready at its
/// source's revision. Read from the controller's cache, so it costs no request.
fn dependencies(ks: &Kustomization, ctx: &Context, revision: &str) -> Result<(), Failure> {
    if ks.spec.depends_on.as_ref().is_none_or(|d| d.is_empty()) {
        return Ok(());
    }
    let requeue = ctx.options.requeue_dependency;
    let graph: BTreeMap<String, Vec<String>> = ctx
        .store
        .state()
        .iter()
        .map(|k| {
            (
                key(&k.namespace().unwrap_or_default(), &k.name_any()),
                dependency_keys(k),
            )
        })
        .collect();
    let this = key(
        &ks.namespace().unwrap_or_else(|| "default".into()),
        &ks.name_any(),
    );
    if let Some(cycle) = find_cycle(&graph, &this) {
        return Err(Failure::stalled(
            reason::DEPENDENCY_NOT_READY,
            format!("circular dependency detected: {cycle}"),
            requeue,
        ));
    }
    let lookup = |dep_ns: &str, dep_name: &str| {
        ctx.store
            .get(&ObjectRef::new(dep_name).within(dep_ns))
            .map(|k| k.as_ref().clone())
    };
    check_dependencies(ks, lookup, revision).map_err(|e| e.into_failure(requeue))
}

/// The artifact downloaded, checked against its digest and unpacked into a private directory
/// (deleted when dropped). Checking and unpacking run off the executor.
async fn artifact(ctx: &Context, art: &Artifact, retry: Duration) -> Result<TempDir, Failure> {
    let max_size = ctx.options.max_artifact_size;
    let data = artifact::download(&art.url, max_size)
        .await
        .or_fail(reason::ARTIFACT_FAILED, retry)?;
    let digest = art.digest.clone();
    step::blocking("unpacking the artifact", move || {
        artifact::verify_digest(&data, &digest).map_err(|e| e.to_string())?;
        let workdir = tempfile::Builder::new()
            .prefix("kustomization-")
            .tempdir()
            .map_err(|e| format!("failed to create temp dir: {e}"))?;
        artifact::untar(&data, workdir.path(), max_size).map_err(|e| e.to_string())?;
        Ok(workdir)
    })
    .await
    .and_then(|unpacked| unpacked)
    .or_fail(reason::ARTIFACT_FAILED, retry)
}

/// The objects `spec.path` builds to (the `build` module's pipeline), in apply order: Flux
/// records the inventory in apply order, whatever order the build listed.
async fn build(
    ks: &Kustomization,
    ctx: &Context,
    workdir: &TempDir,
    retry: Duration,
) -> Result<Vec<Value>, Failure> {
    let root = workdir.path();
    let dir =
        build::resolve_path(root, ks.spec.path.as_deref()).map_err(|e| Failure::of(&e, retry))?;
    let mut objects = build::build_with(
        ks,
        root,
        &dir,
        build::Cluster::Client(&ctx.client),
        ctx.options.substitution,
    )
    .await
    .map_err(|e| Failure::of(&e, retry))?;
    objects.sort_by(ferroflux_apply::order::apply_order);
    Ok(objects)
}

/// The staged server-side apply of every object.
async fn apply(
    ks: &Kustomization,
    applier: &Applier,
    objects: &[Value],
    timing: &Timing,
) -> Result<ChangeSet, Failure> {
    let options = ApplyOptions {
        force: ks.spec.force.unwrap_or(false),
        stage_timeout: timing.timeout,
        concurrency: 4,
    };
    // spec.ignore: fields Flux leaves to the cluster on objects that exist.
    let ignore = IgnoreRules::compile(ks.spec.ignore.as_deref().unwrap_or_default())
        .map_err(|e| format!("invalid spec.ignore: {e}"))
        .or_fail(reason::RECONCILIATION_FAILED, timing.retry)?;
    applier
        .apply_staged_ignoring(objects.to_vec(), &options, &ignore)
        .await
        .or_fail(reason::RECONCILIATION_FAILED, timing.retry)
}

/// Deletes what the previous inventory held and the new one does not.
async fn prune(
    ks: &Kustomization,
    applier: &Applier,
    previous: &ResourceInventory,
    current: &ResourceInventory,
    retry: Duration,
) -> Result<ChangeSet, Failure> {
    let stale = stale_entries(previous, current).or_fail(reason::PRUNE_FAILED, retry)?;
    delete_owned(ks, applier, &stale)
        .await
        .or_fail(reason::PRUNE_FAILED, retry)
}

/// Deletes `stale` objects that still carry this Kustomization's labels and are not kept by
/// annotation (pruning and deletion alike).
async fn delete_owned(
    ks: &Kustomization,
    applier: &Applier,
    stale: &[InventoryObject],
) -> Result<ChangeSet, ferroflux_apply::applier::ApplyError> {
    let name = ks.name_any();
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    applier
        .prune(
            stale,
            &[
                (OWNER_NAME_LABEL, name.as_str()),
                (OWNER_NAMESPACE_LABEL, ns.as_str()),
            ],
        )
        .await
}

/// Waits for what `wait: true` (every applied object) or `healthChecks` name to be healthy;
/// the Healthy message, or `None` when there was nothing to check.
#[allow(clippy::too_many_arguments)]
async fn health(
    ks: &Kustomization,
    api: &Api<Kustomization>,
    status: &mut KustomizationStatus,
    applier: &Applier,
    objects: Vec<Value>,
    custom: &CustomHealth,
    revision: &str,
    timing: &Timing,
) -> Result<Option<String>, Failure> {
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let to_check: Vec<Value> = if ks.spec.wait == Some(true) {
        objects
    } else {
        let mut checks = Vec::new();
        for h in ks.spec.health_checks.iter().flatten() {
            // No API version means the cluster's preferred one for the kind (`flux create
            // kustomization --health-check Deployment/...` writes none).
            let api_version = match h.api_version.as_deref().filter(|v| !v.is_empty()) {
                Some(v) => v.to_string(),
                None => applier
                    .preferred_api_version(&h.kind)
                    .await
                    .or_fail(reason::HEALTH_CHECK_FAILED, timing.retry)?,
            };
            checks.push(json!({
                "apiVersion": api_version,
                "kind": h.kind,
                "metadata": {"name": h.name, "namespace": h.namespace.clone().unwrap_or_else(|| ns.clone())},
            }));
        }
        checks
    };
    if to_check.is_empty() {
        return Ok(None);
    }
    progress(ks, api, status, Progress::Health, revision, timing).await?;
    let started = Instant::now();
    applier
        .wait_for_with(&to_check, timing.timeout, custom)
        .await
        .or_fail(reason::HEALTH_CHECK_FAILED, timing.retry)?;
    Ok(Some(format!(
        "Health check passed in {}",
        format_duration(Duration::from_millis(started.elapsed().as_millis() as u64))
    )))
}

/// The points of a pass at which Flux tells the user what it is doing.
#[derive(Clone, Copy)]
enum Progress {
    /// The source and dependencies allow a pass: Ready turns Unknown until it ends.
    Start,
    /// Applied; waiting for `wait`/`healthChecks` (which can take up to `spec.timeout`).
    Health,
}

/// Writes the pass in progress into the status, as kustomize-controller does: at the start
/// `Ready=Unknown` (Progressing, "Reconciliation in progress") and `Reconciling=True` ("Fetching
/// manifests for revision R with a timeout of T"); before the health checks `Reconciling` and
/// `Healthy=Unknown` ("Running health checks for revision R with a timeout of T"). Without it
/// `get kustomizations` shows the previous pass's message for as long as a health check waits.
/// Flux's two other progress messages (building, detecting drift) cover steps that take
/// milliseconds here and are not written: each write is one more request per pass.
async fn progress(
    ks: &Kustomization,
    api: &Api<Kustomization>,
    status: &mut KustomizationStatus,
    step: Progress,
    revision: &str,
    timing: &Timing,
) -> Result<(), Failure> {
    let mut conditions = Conditions::of(
        &mut status.conditions,
        ks.metadata.generation,
        Timestamp::now(),
    );
    let timeout = format_duration(timing.timeout);
    match step {
        Progress::Start => {
            let message =
                format!("Fetching manifests for revision {revision} with a timeout of {timeout}");
            conditions
                .mark_unknown(READY, reason::PROGRESSING, "Reconciliation in progress")
                .mark_reconciling(reason::PROGRESSING, &message);
        }
        Progress::Health => {
            let message = format!(
                "Running health checks for revision {revision} with a timeout of {timeout}"
            );
            conditions
                .mark_reconciling(reason::PROGRESSING, &message)
                .mark_unknown(HEALTHY, reason::PROGRESSING, &message);
        }
    }
    write_status(api, &ks.name_any(), status)
        .await
        .map_err(|e| format!("failed to update status: {e}"))
        .or_fail(reason::RECONCILIATION_FAILED, timing.retry)
}

/// Writes a successful pass into the status; returns the note of its event.
async fn succeed(
    ks: &Kustomization,
    api: &Api<Kustomization>,
    mut status: KustomizationStatus,
    applied: &Applied,
    started: Instant,
    interval: Duration,
) -> Result<String, ReconcileError> {
    let generation = ks.metadata.generation;
    let mut conditions = Conditions::of(&mut status.conditions, generation, Timestamp::now());
    let message = format!("Applied revision: {}", applied.revision);
    conditions
        .mark_true(READY, reason::RECONCILIATION_SUCCEEDED, &message)
        .delete(RECONCILING)
        .delete(STALLED);
    match &applied.health {
        Some(health) => conditions.mark_true(HEALTHY, reason::SUCCEEDED, health),
        None => conditions.delete(HEALTHY),
    };
    status.last_applied_revision = Some(applied.revision.clone());
    status.last_attempted_revision = Some(applied.revision.clone());
    status.observed_generation = generation;
    write_status(api, &ks.name_any(), &status).await?;
    let summary = format!(
        "Reconciliation finished in {}, next run in {}",
        format_duration(Duration::from_millis(started.elapsed().as_millis() as u64)),
        format_duration(interval)
    );
    Ok(if applied.changes.has_changes() {
        format!("{}\n{summary}", applied.changes.changes_message())
    } else {
        summary
    })
}

/// Writes a failed pass into the status.
async fn fail(
    ks: &Kustomization,
    api: &Api<Kustomization>,
    mut status: KustomizationStatus,
    failure: &Failure,
) -> Result<(), ReconcileError> {
    let generation = ks.metadata.generation;
    let mut conditions = Conditions::of(&mut status.conditions, generation, Timestamp::now());
    failure.mark(&mut conditions);
    if failure.reason == reason::HEALTH_CHECK_FAILED {
        conditions.mark_false(HEALTHY, reason::HEALTH_CHECK_FAILED, &failure.message);
    }
    status.observed_generation = generation;
    write_status(api, &ks.name_any(), &status).await?;
    Ok(())
}

async fn write_status(
    api: &Api<Kustomization>,
    name: &str,
    status: &KustomizationStatus,
) -> Result<(), kube::Error> {
    let params = PatchParams {
        field_manager: Some(STATUS_MANAGER.into()),
        ..Default::default()
    };
    api.patch_status(name, &params, &Patch::Merge(json!({"status": status})))
        .await
        .map(|_| ())
}

async fn publish(ctx: &Context, ks: &Kustomization, type_: EventType, reason: &str, note: String) {
    publish_at(ctx, ks, (type_, reason), note, None).await;
}

fn revision_metadata(revision: Option<String>) -> std::collections::BTreeMap<String, String> {
    revision
        .map(|r| ("kustomize.toolkit.fluxcd.io/revision".to_string(), r))
        .into_iter()
        .collect()
}

/// An event about the revision a reconcile ended on: its notification carries
/// `kustomize.toolkit.fluxcd.io/revision`.
async fn publish_at(
    ctx: &Context,
    ks: &Kustomization,
    (type_, reason): (EventType, &str),
    note: String,
    revision: Option<String>,
) {
    let metadata = revision_metadata(revision);
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
    if let Err(e) = ctx
        .recorder
        .publish_with(&event, &ks.object_ref(&()), metadata)
        .await
    {
        tracing::debug!(error = %e, "failed to publish event");
    }
}

/// The applier for a Kustomization that needs its own client: for the cluster its
/// `kubeConfig` Secret names, impersonating `serviceAccountName` when set. `None` means the
/// controller's own cluster as itself, whose shared applier (`Context::local`) is used.
async fn own_applier(ks: &Kustomization, ctx: &Context) -> Result<Option<Applier>, String> {
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let Some(config) = target::config(
        &ctx.client,
        &ctx.config,
        &ns,
        ks.spec.kube_config.as_ref(),
        ks.spec.service_account_name.as_deref(),
    )
    .await?
    else {
        return Ok(None);
    };
    let client =
        ferroflux_kubeclient::client(config).map_err(|e| format!("failed to build client: {e}"))?;
    Ok(Some(new_applier(client, &ctx.options)))
}

fn new_applier(client: kube::Client, options: &Options) -> Applier {
    Applier::new(client, FIELD_MANAGER).with_poll_interval(options.health_poll)
}

/// The reason Flux gives the Events of a deletion: the Ready condition's, or the event's
/// severity (`info`, `error`) when there is none.
fn finalize_event_reason(ks: &Kustomization, severity: &str) -> String {
    ks.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| ferroflux_api::conditions::find_condition(c, READY))
        .map(|c| c.reason.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| severity.to_string())
}

/// Deletion: prune what the deletion policy says, then let the object go.
async fn finalize(
    ks: &Kustomization,
    ctx: &Context,
    api: &Api<Kustomization>,
) -> Result<Action, ReconcileError> {
    if !finalizer::has(ks) {
        return Ok(Action::await_change());
    }
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let name = ks.name_any();
    let policy = ks.spec.deletion_policy.unwrap_or_default();
    let delete = match policy {
        DeletionPolicy::MirrorPrune => ks.spec.prune,
        DeletionPolicy::Delete | DeletionPolicy::WaitForTermination => true,
        DeletionPolicy::Orphan => false,
    };
    let inventory: ResourceInventory = ks
        .status
        .as_ref()
        .and_then(|s| s.inventory.clone())
        .unwrap_or_default();
    if delete && ks.spec.suspend != Some(true) && !inventory.entries.is_empty() {
        let outcome = async {
            let own = own_applier(ks, ctx).await?;
            let applier = own.as_ref().unwrap_or(&ctx.local);
            let stale: Vec<InventoryObject> =
                stale_entries(&inventory, &ResourceInventory::default())
                    .map_err(|e| e.to_string())?;
            let deleted = delete_owned(ks, applier, &stale)
                .await
                .map_err(|e| e.to_string())?;
            if deleted.has_changes() {
                let reason = finalize_event_reason(ks, "info");
                publish(
                    ctx,
                    ks,
                    EventType::Normal,
                    &reason,
                    deleted.changes_message(),
                )
                .await;
            }
            if policy == DeletionPolicy::WaitForTermination {
                // Only what was deleted: objects kept by annotation or owned by someone else
                // would never go.
                let gone: Vec<Value> = stale
                    .iter()
                    .filter(|o| {
                        deleted
                            .entries
                            .iter()
                            .any(|c| c.id == o.id && c.action == ChangeAction::Deleted)
                    })
                    .map(|o| {
                        json!({"apiVersion": o.api_version(), "kind": o.id.kind,
                        "metadata": {"name": o.id.name, "namespace": o.id.namespace}})
                    })
                    .collect();
                let timeout = timing(ks)
                    .map(|t| t.timeout)
                    .unwrap_or(Duration::from_secs(300));
                // As in Flux, the wait is bounded by spec.timeout and then given up: the
                // Kustomization goes, and what still terminates is left to its finalizers.
                if let Err(e) = applier.wait_deleted(&gone, timeout).await {
                    tracing::warn!(kustomization = %name, namespace = %ns, error = %e,
                        "failed to wait for resources termination");
                    let reason = finalize_event_reason(ks, "error");
                    let message = "failed to wait for resources termination".to_string();
                    publish(ctx, ks, EventType::Warning, &reason, message).await;
                }
            }
            Ok::<(), String>(())
        }
        .await;
        if let Err(message) = outcome {
            publish(ctx, ks, EventType::Warning, reason::PRUNE_FAILED, message).await;
            return Ok(Action::requeue(Duration::from_secs(10)));
        }
    }
    finalizer::remove(api, ks).await?;
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::FINALIZER;

    fn kustomization(generation: i64) -> Kustomization {
        serde_json::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system", "generation": generation},
            "spec": {
                "interval": "10m",
                "prune": true,
                "sourceRef": {"kind": "GitRepository", "name": "fleet"},
            },
        }))
        .unwrap()
    }

    #[test]
    fn status_writes_do_not_trigger_but_spec_requests_and_deletion_do() {
        let ks = kustomization(1);
        let base = reconcile_trigger(&ks);

        let mut status_only = ks.clone();
        status_only.status = Some(KustomizationStatus {
            last_applied_revision: Some("main@sha1:1234".into()),
            ..Default::default()
        });
        status_only.metadata.resource_version = Some("99".into());
        status_only.metadata.finalizers = Some(vec![FINALIZER.into()]);
        assert_eq!(reconcile_trigger(&status_only), base);

        assert_ne!(reconcile_trigger(&kustomization(2)), base);

        let mut requested = ks.clone();
        requested.metadata.annotations = Some(
            [(RECONCILE_REQUESTED_AT.to_string(), "now".to_string())]
                .into_iter()
                .collect(),
        );
        assert_ne!(reconcile_trigger(&requested), base);

        let mut deleting = ks.clone();
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
        );
        assert_ne!(reconcile_trigger(&deleting), base);
    }

    fn repository(revision: Option<&str>) -> GitRepository {
        let mut repo: GitRepository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system"},
            "spec": {"url": "https://example.com/fleet.git", "interval": "1m"},
        }))
        .unwrap();
        if let Some(revision) = revision {
            repo.status = Some(
                serde_json::from_value(json!({"artifact": {
                    "path": "p", "url": "http://x/p", "revision": revision,
                    "digest": "sha256:00", "lastUpdateTime": "2026-01-01T00:00:00Z",
                }}))
                .unwrap(),
            );
        }
        repo
    }

    #[test]
    fn only_a_new_artifact_revision_wakes_the_kustomizations() {
        let (store, _writer) = reflector::store::<Kustomization>();
        let wakes = SourceWakes::new(SourceKind::GitRepository, store);
        let changed = |repo: GitRepository| {
            wakes.changed(
                &repo.namespace().unwrap_or_default(),
                &repo.name_any(),
                repo.artifact().map(|a| a.revision.clone()),
            )
        };
        // First sight counts (as a create event), even before there is an artifact.
        assert!(changed(repository(None)));
        assert!(!changed(repository(None)));
        assert!(changed(repository(Some("main@sha1:aa"))));
        // Conditions, lastHandledReconcileAt, annotations: same revision, nobody woken.
        assert!(!changed(repository(Some("main@sha1:aa"))));
        assert!(changed(repository(Some("main@sha1:bb"))));
    }
}
