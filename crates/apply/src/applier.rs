//! The cluster-facing half: staged server-side apply with dry-run drift detection, prune and
//! health polling, through kube-rs with dynamic objects.

use crate::changeset::{Action, ChangeSet};
use crate::health::{self, CustomHealth, Status};
use crate::ignore::{self, IgnoreRules};
use crate::inventory::InventoryObject;
use crate::normalize::normalize;
use crate::object::{group_version, meta_value, object_id, str_at};
use crate::order::{Stage, stages};
use ferroflux_api::ObjectId;
use futures::stream::{self, StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PropagationPolicy};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Annotation that leaves an object out of apply (`disabled`).
pub const RECONCILE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/reconcile";
/// Annotation choosing how an object is applied: `Override` (default), `Merge`,
/// `IfNotPresent`, `Ignore`.
pub const SSA_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/ssa";
/// Annotation that keeps an object out of prune (`disabled`).
pub const PRUNE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Annotation asking for delete-and-recreate on immutable-field errors (`enabled`).
pub const FORCE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/force";

/// Why applying, pruning or waiting failed. Messages name the object.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An object lacks `apiVersion`, `kind` or `metadata.name`.
    #[error(transparent)]
    Object(#[from] crate::object::MissingField),
    /// The dry-run could not be made (no answer, or an answer we cannot read).
    #[error("{id} dry-run failed: {reason}")]
    DryRun {
        /// The object, as Flux names it (`Kind/namespace/name`).
        id: String,
        /// What went wrong.
        reason: String,
    },
    /// The API server refused the dry-run; `reason` is its status reason (`Invalid`, ...).
    #[error("{id} dry-run failed ({reason}): {message}")]
    Rejected {
        /// The object, as Flux names it.
        id: String,
        /// The status reason (`Invalid`, `Forbidden`, ...).
        reason: String,
        /// The API server's message.
        message: String,
    },
    /// The dry-run met a 404: the object's namespace does not exist.
    #[error("{id} not found: {message}")]
    NotFound {
        /// The object, as Flux names it.
        id: String,
        /// The API server's message.
        message: String,
    },
    /// An immutable field changed under `force`, and deleting the object to recreate it failed.
    #[error("{id} immutable field detected, failed to delete object: {reason}")]
    Recreate {
        /// The object, as Flux names it.
        id: String,
        /// Why the delete failed.
        reason: String,
    },
    /// The server-side apply itself failed.
    #[error("{id} apply failed: {reason}")]
    Apply {
        /// The object, as Flux names it.
        id: String,
        /// The API server's message.
        reason: String,
    },
    /// Pruning or deleting the object failed.
    #[error("{id} delete failed: {reason}")]
    Delete {
        /// The object, as Flux names it.
        id: String,
        /// The API server's message.
        reason: String,
    },
    /// The API server does not serve the object's group, version and kind.
    #[error("failed to discover {gvk}: {reason}")]
    Discovery {
        /// `group/version, Kind=kind`.
        gvk: String,
        /// Why discovery failed.
        reason: String,
    },
    /// Objects did not become healthy in time; the message lists them with their status.
    #[error("{0}")]
    Health(String),
}

/// How one apply run behaves.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// Delete and recreate objects whose immutable fields changed.
    pub force: bool,
    /// How long each stage may take to become ready before the next one.
    pub stage_timeout: Duration,
    /// How many objects are dry-run or applied at once.
    pub concurrency: usize,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            force: false,
            stage_timeout: Duration::from_secs(60),
            concurrency: 4,
        }
    }
}

/// The outcome of [`Applier::dry_run`] for one object.
#[derive(Clone, Debug)]
pub struct DryRun {
    /// The object dry-run.
    pub id: ObjectId,
    /// Created, Configured, Unchanged or Skipped.
    pub action: Action,
    /// The object in the cluster, when it drifted.
    pub live: Option<Value>,
    /// What the cluster would hold after the apply, when it drifted.
    pub merged: Option<Value>,
}

/// Applies object sets to one cluster as one field manager.
pub struct Applier {
    client: kube::Client,
    field_manager: String,
    resources: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
    /// The preferred `apiVersion` of kinds health checks name without one, found once.
    preferred: Mutex<HashMap<String, String>>,
    poll_interval: Duration,
}

fn gvk_of(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = group_version(api_version);
    GroupVersionKind::gvk(group, version, kind)
}

fn message_of(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message.clone(),
        // Transport errors say why only in their sources ("client error (SendRequest)" alone
        // does not tell a user that the connection closed).
        other => {
            let mut message = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                let text = cause.to_string();
                if !message.contains(&text) {
                    message = format!("{message}: {text}");
                }
                source = cause.source();
            }
            message
        }
    }
}

/// A refused dry-run in Flux's words: `Kind/ns/name not found: namespaces "x" not found` or
/// `Kind/ns/name dry-run failed (Invalid): <the API server's message>`.
fn dry_run_error(id: &ObjectId, e: &kube::Error) -> ApplyError {
    let shown = id.display_name();
    match e {
        kube::Error::Api(status) if status.code == 404 => ApplyError::NotFound {
            id: shown,
            message: status.message.clone(),
        },
        kube::Error::Api(status) if !status.reason.is_empty() => ApplyError::Rejected {
            id: shown,
            reason: status.reason.clone(),
            message: status.message.clone(),
        },
        other => ApplyError::DryRun {
            id: shown,
            reason: message_of(other),
        },
    }
}

/// One object of a stage after its dry-run: what will happen to it, and what to send when
/// it changes (the API, the object, and the live object the dry-run compared against).
struct Plan {
    id: ObjectId,
    action: Action,
    apply: Option<(Api<DynamicObject>, Value, Option<DynamicObject>)>,
}

impl Plan {
    fn done(id: ObjectId, action: Action) -> Self {
        Plan {
            id,
            action,
            apply: None,
        }
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// A 404 about the resource type rather than an object: the API server names no object in
/// the details ("the server could not find the requested resource").
fn is_unserved(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404
        && s.details.as_ref().is_none_or(|d| d.name.is_empty() && d.kind.is_empty()))
}

/// What [`Applier::read_and_dry_run`] found: the API the object lives behind, the live
/// object, and the dry-run's answer (None when the object is skipped as present).
struct Probe {
    api: Api<DynamicObject>,
    live: Result<Option<DynamicObject>, kube::Error>,
    dry: Option<Result<DynamicObject, kube::Error>>,
}

/// Whether an apply error lets force recreate the object, by Flux's rule (kubectl's before
/// it): any Conflict or Invalid answer, or a message saying a field is immutable, as
/// admission webhooks and CEL rules word it.
fn is_immutable(e: &kube::Error) -> bool {
    let kube::Error::Api(status) = e else {
        return false;
    };
    let words = status
        .message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    status.reason == "Conflict"
        || status.reason == "Invalid"
        || words.contains("is immutable")
        || words.contains("immutable field")
}

impl Applier {
    /// An applier acting as `field_manager` (Flux uses `kustomize-controller`).
    pub fn new(client: kube::Client, field_manager: &str) -> Self {
        Applier {
            client,
            field_manager: field_manager.to_string(),
            resources: Mutex::new(HashMap::new()),
            preferred: Mutex::new(HashMap::new()),
            poll_interval: Duration::from_millis(500),
        }
    }

    /// Server-side apply as this field manager, taking over fields others own (Flux's
    /// `ForceOwnership`).
    fn apply_params(&self) -> PatchParams {
        PatchParams::apply(&self.field_manager).force()
    }

    /// How often health checks poll the cluster.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The API of an object's kind, discovered once and cached, and whether it came from the
    /// cache; a kind the server does not (yet) serve is looked up again next time, since a CRD
    /// applied in an earlier stage makes it appear.
    async fn api_for(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, bool), ApplyError> {
        let gvk = gvk_of(api_version, kind);
        let cached = self
            .resources
            .lock()
            .ok()
            .and_then(|m| m.get(&gvk).cloned());
        let from_cache = cached.is_some();
        let (ar, caps) = match cached {
            Some(found) => found,
            None => {
                let found = kube::discovery::pinned_kind(&self.client, &gvk)
                    .await
                    .map_err(|e| ApplyError::Discovery {
                        gvk: format!("{api_version}/{kind}"),
                        reason: message_of(&e),
                    })?;
                if let Ok(mut m) = self.resources.lock() {
                    m.insert(gvk, found.clone());
                }
                found
            }
        };
        let api = match (caps.scope == Scope::Namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            (true, None) => Api::default_namespaced_with(self.client.clone(), &ar),
            (false, _) => Api::all_with(self.client.clone(), &ar),
        };
        Ok((api, from_cache))
    }

    /// The `apiVersion` the cluster prefers for `kind`, found by discovery (the core group
    /// first, then the groups in the order the server lists them): what a health check that
    /// names no API version means, as in Flux ("the Kubernetes preferred version").
    /// A full discovery is a request per API group: the answer is kept for the life of the
    /// applier.
    pub async fn preferred_api_version(&self, kind: &str) -> Result<String, ApplyError> {
        if let Some(found) = self
            .preferred
            .lock()
            .ok()
            .and_then(|m| m.get(kind).cloned())
        {
            return Ok(found);
        }
        let discovery = kube::Discovery::new(self.client.clone())
            .run()
            .await
            .map_err(|e| ApplyError::Discovery {
                gvk: kind.to_string(),
                reason: message_of(&e),
            })?;
        let found = discovery
            .groups()
            .find_map(|g| g.recommended_kind(kind))
            .map(|(ar, _)| ar.api_version)
            .ok_or_else(|| ApplyError::Discovery {
                gvk: kind.to_string(),
                reason: format!("no matches for kind \"{kind}\""),
            })?;
        if let Ok(mut m) = self.preferred.lock() {
            m.insert(kind.to_string(), found.clone());
        }
        Ok(found)
    }

    /// Reads the live object and dry-runs `obj` over it; `dry` is None when the object exists
    /// and asks to be applied only if absent. The discovery cache is shared by every
    /// Kustomization for the life of the process, so a CRD deleted and created again (another
    /// scope, plural or served version) leaves a stale entry: its requests meet a 404 without
    /// object details. The kind is then discovered again and both requests sent once more.
    async fn read_and_dry_run(&self, obj: &Value, id: &ObjectId) -> Result<Probe, ApplyError> {
        let api_version = str_at(obj, &["apiVersion"]).unwrap_or("");
        let namespace = str_at(obj, &["metadata", "namespace"]);
        let params = self.apply_params().dry_run();
        let mut rediscovered = false;
        loop {
            let (api, from_cache) = self.api_for(api_version, &id.kind, namespace).await?;
            let live = api.get_opt(&id.name).await;
            if matches!(live, Ok(Some(_)))
                && meta_value(obj, "annotations", SSA_ANNOTATION) == Some("IfNotPresent")
            {
                return Ok(Probe {
                    api,
                    live,
                    dry: None,
                });
            }
            let dry = api.patch(&id.name, &params, &Patch::Apply(obj)).await;
            if from_cache && !rediscovered && dry.as_ref().is_err_and(is_unserved) {
                if let Ok(mut m) = self.resources.lock() {
                    m.remove(&gvk_of(api_version, &id.kind));
                }
                rediscovered = true;
                continue;
            }
            return Ok(Probe {
                api,
                live,
                dry: Some(dry),
            });
        }
    }

    /// Applies `objects` stage by stage (CRDs, Namespaces and ClusterRoles first, then
    /// classes, then the rest), waiting for each of the first two stages to be ready before
    /// the next. Inside a stage every object is dry-run first, and only when all dry-runs pass
    /// are the objects that would change applied: one invalid object leaves its whole stage
    /// untouched, as in Flux.
    pub async fn apply_staged(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
    ) -> Result<ChangeSet, ApplyError> {
        self.apply_staged_ignoring(objects, opts, &IgnoreRules::default())
            .await
    }

    /// [`Applier::apply_staged`] leaving the fields `ignore` names to the cluster on objects
    /// that exist (a Kustomization's `spec.ignore`, see [`crate::ignore`]).
    pub async fn apply_staged_ignoring(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
        ignore: &IgnoreRules,
    ) -> Result<ChangeSet, ApplyError> {
        let mut objects = objects;
        for (index, obj) in objects.iter_mut().enumerate() {
            object_id(obj, index)?;
            normalize(obj);
        }
        let mut changes = ChangeSet::default();
        for (stage, list) in stages(objects) {
            // Owned objects and a plain iterator of futures keep the stream `Send` for callers
            // that spawn it (closures over borrowed items trip the higher-ranked lifetime check).
            let planning: Vec<_> = list
                .iter()
                .cloned()
                .map(|obj| async move { self.plan_one(obj, opts, ignore).await })
                .collect();
            let plans: Vec<Plan> = stream::iter(planning)
                .buffered(opts.concurrency.max(1))
                .try_collect()
                .await?;
            let applying: Vec<_> = plans
                .into_iter()
                .map(|plan| async move { self.apply_planned(plan, opts).await })
                .collect();
            let results: Vec<(ObjectId, Action)> = stream::iter(applying)
                .buffered(opts.concurrency.max(1))
                .try_collect()
                .await?;
            for (id, action) in results {
                changes.push(id, action);
            }
            if stage != Stage::Resources {
                self.wait_for(&list, opts.stage_timeout).await?;
            }
        }
        Ok(changes)
    }

    /// The dry-run half of applying one object: what would happen to it, without changing
    /// the cluster — except that an object whose immutable fields changed is deleted here
    /// when force is asked for, so the dry-run can be tried again against its absence.
    async fn plan_one(
        &self,
        obj: Value,
        opts: &ApplyOptions,
        ignore: &IgnoreRules,
    ) -> Result<Plan, ApplyError> {
        let mut obj = obj;
        let id = object_id(&obj, 0)?;
        if meta_value(&obj, "annotations", RECONCILE_ANNOTATION)
            .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
            || meta_value(&obj, "annotations", SSA_ANNOTATION).is_some_and(|v| v == "Ignore")
        {
            return Ok(Plan::done(id, Action::Skipped));
        }
        let Probe { api, live, dry } = self.read_and_dry_run(&obj, &id).await?;
        let Some(dry) = dry else {
            return Ok(Plan::done(id, Action::Skipped));
        };
        // As in Flux, a failed read is reported only when the dry-run passes: the dry-run's
        // error (a patch that is forbidden, invalid, refused) is the one that says why.
        let live = match (live, &dry) {
            (Ok(live), _) => live,
            (Err(e), Ok(_)) => return Err(dry_run_error(&id, &e)),
            (Err(_), Err(_)) => None,
        };
        let dry = match dry {
            Ok(d) => Some(d),
            Err(e)
                if is_immutable(&e)
                    && live
                        .as_ref()
                        .is_some_and(|l| self.forced(&obj, Some(l), opts)) =>
            {
                self.delete_and_wait(&api, &id).await?;
                let params = self.apply_params().dry_run();
                api.patch(&id.name, &params, &Patch::Apply(&obj))
                    .await
                    .map_err(|e| dry_run_error(&id, &e))?;
                None
            }
            Err(e) => return Err(dry_run_error(&id, &e)),
        };
        let action = match (&live, &dry) {
            (Some(live), Some(dry)) if !ignore.is_empty() => {
                // As fluxcd/pkg's ssa: the rules select on the dry-run's object, ignored
                // paths are left out of the comparison, and a drifted object keeps the
                // cluster's values of them.
                let live = serde_json::to_value(live).unwrap_or(Value::Null);
                let dry = serde_json::to_value(dry).unwrap_or(Value::Null);
                let paths = ignore.paths_for(&dry);
                if !drifted_values(
                    &ignore::without(&live, &paths),
                    &ignore::without(&dry, &paths),
                ) {
                    Action::Unchanged
                } else {
                    ignore::keep_cluster_values(&mut obj, &live, &dry, &paths, &self.field_manager);
                    Action::Configured
                }
            }
            (Some(live), Some(dry)) if !drifted(live, dry) => Action::Unchanged,
            (Some(_), Some(_)) => Action::Configured,
            _ => Action::Created,
        };
        if action == Action::Unchanged {
            return Ok(Plan::done(id, action));
        }
        Ok(Plan {
            id,
            action,
            apply: Some((api, obj, live)),
        })
    }

    /// The apply half: sends what [`Applier::plan_one`] found would change.
    async fn apply_planned(
        &self,
        plan: Plan,
        opts: &ApplyOptions,
    ) -> Result<(ObjectId, Action), ApplyError> {
        let Plan { id, action, apply } = plan;
        let Some((api, obj, live)) = apply else {
            return Ok((id, action));
        };
        let params = self.apply_params();
        match api.patch(&id.name, &params, &Patch::Apply(&obj)).await {
            Ok(_) => Ok((id, action)),
            // The object changed between the dry-run and now.
            Err(e) if is_immutable(&e) && self.forced(&obj, live.as_ref(), opts) => {
                self.delete_and_wait(&api, &id).await?;
                api.patch(&id.name, &params, &Patch::Apply(&obj))
                    .await
                    .map_err(|e| ApplyError::Apply {
                        id: id.display_name(),
                        reason: message_of(&e),
                    })?;
                Ok((id, Action::Created))
            }
            Err(e) => Err(ApplyError::Apply {
                id: id.display_name(),
                reason: message_of(&e),
            }),
        }
    }

    /// What applying `obj` would do, found by a server-side dry-run (`dryRun=All`) and
    /// Flux's drift rule; nothing in the cluster changes. `live` and `merged` (the dry-run
    /// result) are given for configured objects, without `managedFields`.
    pub async fn dry_run(&self, obj: &Value, opts: &ApplyOptions) -> Result<DryRun, ApplyError> {
        let mut normalized = obj.clone();
        normalize(&mut normalized);
        let obj = &normalized;
        let id = object_id(obj, 0)?;
        let shown = id.display_name();
        let outcome = |action, live, merged| DryRun {
            id: id.clone(),
            action,
            live,
            merged,
        };
        if meta_value(obj, "annotations", RECONCILE_ANNOTATION)
            .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
            || meta_value(obj, "annotations", SSA_ANNOTATION).is_some_and(|v| v == "Ignore")
        {
            return Ok(outcome(Action::Skipped, None, None));
        }
        let probe = match self.read_and_dry_run(obj, &id).await {
            Ok(probe) => probe,
            Err(ApplyError::Discovery { .. }) => {
                let api_version = str_at(obj, &["apiVersion"]).unwrap_or("");
                return Err(ApplyError::DryRun {
                    id: shown,
                    reason: format!(
                        "no matches for kind \"{}\" in version \"{api_version}\"",
                        id.kind
                    ),
                });
            }
            Err(e) => return Err(e),
        };
        let live = probe.live.map_err(|e| dry_run_error(&id, &e))?;
        let Some(dry) = probe.dry else {
            return Ok(outcome(Action::Skipped, None, None));
        };
        let dry = match dry {
            Ok(d) => d,
            Err(e) if is_immutable(&e) && self.forced(obj, live.as_ref(), opts) => {
                return Ok(outcome(Action::Created, None, None));
            }
            Err(e) => return Err(dry_run_error(&id, &e)),
        };
        let Some(live) = live else {
            return Ok(outcome(Action::Created, None, None));
        };
        if !drifted(&live, &dry) {
            return Ok(outcome(Action::Unchanged, None, None));
        }
        let plain = |o: &DynamicObject| {
            let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            v
        };
        Ok(outcome(
            Action::Configured,
            Some(plain(&live)),
            Some(plain(&dry)),
        ))
    }

    /// Whether an immutable-field error recreates the object: `force` for the whole apply, or
    /// the force annotation on the object in Git or in the cluster (Flux's force selector).
    fn forced(&self, obj: &Value, live: Option<&DynamicObject>, opts: &ApplyOptions) -> bool {
        let enabled = |v: &String| v.eq_ignore_ascii_case("enabled");
        opts.force
            || meta_value(obj, "annotations", FORCE_ANNOTATION)
                .is_some_and(|v| v.eq_ignore_ascii_case("enabled"))
            || live
                .and_then(|l| l.metadata.annotations.as_ref())
                .and_then(|a| a.get(FORCE_ANNOTATION))
                .is_some_and(enabled)
    }

    /// Deletes an object whose immutable fields changed and waits for it to be gone (its
    /// finalizers may hold it), so that applying it again creates it anew.
    async fn delete_and_wait(
        &self,
        api: &Api<DynamicObject>,
        id: &ObjectId,
    ) -> Result<(), ApplyError> {
        let shown = id.display_name();
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        match api.delete(&id.name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                return Err(ApplyError::Recreate {
                    id: shown,
                    reason: message_of(&e),
                });
            }
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match api.get_opt(&id.name).await {
                Ok(None) => return Ok(()),
                Ok(Some(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(self.poll_interval).await;
                }
                Ok(Some(_)) => {
                    return Err(ApplyError::Recreate {
                        id: shown,
                        reason: "still terminating after 60s".into(),
                    });
                }
                Err(e) => {
                    return Err(ApplyError::Delete {
                        id: shown,
                        reason: message_of(&e),
                    });
                }
            }
        }
    }

    /// Deletes stale inventory entries that still carry `owner` labels (Flux's
    /// `kustomize.toolkit.fluxcd.io/name` and `/namespace`), in the order given, skipping
    /// objects annotated `kustomize.toolkit.fluxcd.io/prune: disabled` (or `reconcile:
    /// disabled`) and objects already gone. Deletion propagates in the background, as in Flux.
    pub async fn prune(
        &self,
        stale: &[InventoryObject],
        owner: &[(&str, &str)],
    ) -> Result<ChangeSet, ApplyError> {
        let mut changes = ChangeSet::default();
        for entry in stale {
            let shown = entry.id.display_name();
            let namespace = (!entry.id.namespace.is_empty()).then_some(entry.id.namespace.as_str());
            let (api, _) = match self
                .api_for(&entry.api_version(), &entry.id.kind, namespace)
                .await
            {
                Ok(found) => found,
                // A kind no longer served (its CRD was removed) has nothing left to delete.
                Err(ApplyError::Discovery { .. }) => continue,
                Err(e) => return Err(e),
            };
            let live = api
                .get_opt(&entry.id.name)
                .await
                .map_err(|e| ApplyError::Delete {
                    id: shown.clone(),
                    reason: message_of(&e),
                })?;
            let Some(live) = live else {
                continue;
            };
            let labels = live.metadata.labels.clone().unwrap_or_default();
            let ours = owner
                .iter()
                .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v));
            let annotations = live.metadata.annotations.clone().unwrap_or_default();
            let keep = [PRUNE_ANNOTATION, RECONCILE_ANNOTATION].iter().any(|key| {
                annotations
                    .get(*key)
                    .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
            });
            if !ours || keep {
                changes.push(entry.id.clone(), Action::Skipped);
                continue;
            }
            let dp = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..Default::default()
            };
            match api.delete(&entry.id.name, &dp).await {
                Ok(_) => changes.push(entry.id.clone(), Action::Deleted),
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(ApplyError::Delete {
                        id: shown,
                        reason: message_of(&e),
                    });
                }
            }
        }
        Ok(changes)
    }

    /// Polls the given objects until every one is healthy. Fails as soon as one is `Failed`,
    /// or when `timeout` passes, naming the objects that are not ready.
    pub async fn wait_for(&self, objects: &[Value], timeout: Duration) -> Result<(), ApplyError> {
        self.wait_for_with(objects, timeout, &CustomHealth::default())
            .await
    }

    /// [`Applier::wait_for`], the health of the kinds `custom` names told by its expressions
    /// (`healthCheckExprs`) instead of the built-in rules.
    pub async fn wait_for_with(
        &self,
        objects: &[Value],
        timeout: Duration,
        custom: &CustomHealth,
    ) -> Result<(), ApplyError> {
        let deadline = Instant::now() + timeout;
        let started = Instant::now();
        loop {
            let mut pending = Vec::new();
            for (index, obj) in objects.iter().enumerate() {
                let id = object_id(obj, index)?;
                let api_version = str_at(obj, &["apiVersion"]).unwrap_or("");
                let namespace = str_at(obj, &["metadata", "namespace"]);
                let status = match self.api_for(api_version, &id.kind, namespace).await {
                    Ok((api, _)) => match api.get_opt(&id.name).await {
                        Ok(Some(live)) => {
                            let value = serde_json::to_value(&live).unwrap_or(Value::Null);
                            custom
                                .assess(&value)
                                .unwrap_or_else(|| health::assess(&value))
                        }
                        Ok(None) => health::Health {
                            status: Status::NotFound,
                            message: "not found".into(),
                        },
                        Err(e) => health::Health {
                            status: Status::InProgress,
                            message: message_of(&e),
                        },
                    },
                    Err(e) => health::Health {
                        status: Status::InProgress,
                        message: e.to_string(),
                    },
                };
                match status.status {
                    Status::Current => {}
                    Status::Failed => {
                        return Err(ApplyError::Health(format!(
                            "health check failed for {}: {}",
                            id.display_name(),
                            status.message
                        )));
                    }
                    other => pending.push(format!(
                        "{} status: '{}'",
                        id.display_name(),
                        status_word(other)
                    )),
                }
            }
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ApplyError::Health(health_timeout(
                    started.elapsed(),
                    &pending,
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }
}

impl Applier {
    /// Polls until none of `objects` exists any more, or `timeout` passes.
    pub async fn wait_deleted(
        &self,
        objects: &[Value],
        timeout: Duration,
    ) -> Result<(), ApplyError> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut remaining = Vec::new();
            for (index, obj) in objects.iter().enumerate() {
                let id = object_id(obj, index)?;
                let api_version = str_at(obj, &["apiVersion"]).unwrap_or("");
                let namespace = str_at(obj, &["metadata", "namespace"]).filter(|n| !n.is_empty());
                let Ok((api, _)) = self.api_for(api_version, &id.kind, namespace).await else {
                    continue;
                };
                if let Ok(Some(_)) = api.get_opt(&id.name).await {
                    remaining.push(id.display_name());
                }
            }
            if remaining.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ApplyError::Health(format!(
                    "timeout waiting for termination of: [{}]",
                    remaining.join(", ")
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Current => "Current",
        Status::InProgress => "InProgress",
        Status::Failed => "Failed",
        Status::Terminating => "Terminating",
        Status::NotFound => "NotFound",
        Status::Unknown => "Unknown",
    }
}

/// Flux's drift rule: labels, annotations, or the object without metadata and status differ.
/// [`drifted`] over plain JSON objects (both with their metadata).
fn drifted_values(live: &Value, dry_run: &Value) -> bool {
    if dry_run.pointer("/metadata/resourceVersion").is_none() {
        return true;
    }
    let meta = |o: &Value, k: &str| o.pointer(&format!("/metadata/{k}")).cloned();
    if meta(live, "labels") != meta(dry_run, "labels")
        || meta(live, "annotations") != meta(dry_run, "annotations")
    {
        return true;
    }
    let strip = |o: &Value| {
        let mut v = o.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(live) != strip(dry_run)
}

fn drifted(live: &DynamicObject, dry_run: &DynamicObject) -> bool {
    if dry_run.metadata.resource_version.is_none() {
        return true;
    }
    if live.metadata.labels != dry_run.metadata.labels
        || live.metadata.annotations != dry_run.metadata.annotations
    {
        return true;
    }
    let strip = |o: &DynamicObject| {
        let mut v = o.data.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(live) != strip(dry_run)
}

#[cfg(test)]
mod tests {
    use super::is_immutable;
    use kube::core::Status;

    fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
    }

    #[test]
    fn force_recreates_on_the_errors_flux_recreates_on() {
        assert!(is_immutable(&api_error(
            422,
            "Invalid",
            "spec.selector: field is immutable"
        )));
        assert!(is_immutable(&api_error(
            422,
            "Invalid",
            "spec.ports[0].port: Invalid value"
        )));
        assert!(is_immutable(&api_error(
            409,
            "Conflict",
            "the object has been modified"
        )));
        assert!(is_immutable(&api_error(
            403,
            "Forbidden",
            "admission webhook \"guard\" denied the request: spec.size is\nimmutable"
        )));
        assert!(is_immutable(&api_error(
            400,
            "BadRequest",
            "cannot change immutable field"
        )));
        assert!(!is_immutable(&api_error(
            403,
            "Forbidden",
            "user cannot patch"
        )));
        assert!(!is_immutable(&api_error(
            404,
            "NotFound",
            "namespaces \"x\" not found"
        )));
    }
}

/// kustomize-controller's message for a health check that timed out: the elapsed time as Go
/// prints a duration (`5m0.1s`, not `300.1s`).
fn health_timeout(elapsed: Duration, pending: &[String]) -> String {
    format!(
        "health check failed after {}: timeout waiting for: [{}]",
        ferroflux_api::duration::format_duration(elapsed),
        pending.join(", ")
    )
}

#[cfg(test)]
mod health_message_tests {
    use super::*;

    #[test]
    fn elapsed_time_is_printed_as_go_prints_a_duration() {
        let pending = ["HelmRelease/ns/app status: 'InProgress'".to_string()];
        assert_eq!(
            health_timeout(Duration::from_millis(300_100), &pending),
            "health check failed after 5m0.1s: timeout waiting for: [HelmRelease/ns/app status: 'InProgress']"
        );
        assert_eq!(
            health_timeout(Duration::from_millis(20_250), &pending[..0]),
            "health check failed after 20.25s: timeout waiting for: []"
        );
    }
}
