//! The release actions, step by step as Helm 4's `pkg/action` runs them (install.go,
//! upgrade.go, rollback.go, uninstall.go, release_testing.go): the same checks in the same
//! order, the same statuses and descriptions at each step, the same revisions in storage.
//! Objects are applied with crates/apply's staged server-side apply (Helm 4 applies
//! server-side too; the release records `apply_method: ssa`) and waited for with its kstatus
//! rules.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use ferroflux_apply::health::CustomHealth;
use ferroflux_apply::{Applier, ApplyOptions};
use ferroflux_helm::{Chart, Engine, ReleaseOptions, RenderOptions};
use serde_json::{Map, Value, json};

use crate::cluster::Cluster;
use crate::error::Error;
use crate::hooks;
use crate::manifest::{
    keeps, object_key, objects_of_manifest, ownership_error, release_manifest, resource_string,
    set_ownership,
};
use crate::postrender::{PostRender, post_render};
use crate::release::{Hook, Info, Release, Status, chart_record, now};
use crate::storage::{SYSTEM_LABELS, Storage};

/// Which release, where its objects go and where its records are kept (Flux's
/// `targetNamespace` and `storageNamespace`; Helm uses one namespace for both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseRef {
    /// The release name.
    pub name: String,
    /// The namespace of the release's objects (`.Release.Namespace`).
    pub namespace: String,
    /// The namespace of the storage Secrets.
    pub storage_namespace: String,
}

impl ReleaseRef {
    /// A release `name` in `namespace`, stored in `storage_namespace`.
    pub fn new(name: &str, namespace: &str, storage_namespace: &str) -> ReleaseRef {
        ReleaseRef {
            name: name.into(),
            namespace: namespace.into(),
            storage_namespace: storage_namespace.into(),
        }
    }
}

/// What to do with the chart's `crds/` (Flux's `install.crds` / `upgrade.crds`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrdPolicy {
    /// Leave CRDs alone.
    Skip,
    /// Create CRDs that do not exist; leave existing ones unchanged (Flux's install default).
    #[default]
    Create,
    /// Create CRDs or replace existing ones.
    CreateReplace,
}

/// Waiting after an action (Helm's `--wait`, `--wait-for-jobs`, `--timeout`; the timeout also
/// bounds each hook).
#[derive(Clone, Debug)]
pub struct WaitOptions {
    /// Wait until every object is ready (kstatus rules) before the post hooks.
    pub wait: bool,
    /// Also wait for Jobs to complete.
    pub wait_for_jobs: bool,
    /// How long waits and hooks may take.
    pub timeout: Duration,
    /// The health of the kinds `healthCheckExprs` names, told by its expressions.
    pub health: Arc<CustomHealth>,
}

impl Default for WaitOptions {
    /// Wait, not for Jobs, 5 minutes (Flux's defaults).
    fn default() -> Self {
        WaitOptions {
            wait: true,
            wait_for_jobs: false,
            timeout: Duration::from_secs(300),
            health: Default::default(),
        }
    }
}

/// How to install.
#[derive(Clone, Default)]
pub struct InstallOptions {
    /// Waiting and timeout.
    pub wait: WaitOptions,
    /// Run no hooks.
    pub disable_hooks: bool,
    /// The chart's CRDs.
    pub crds: CrdPolicy,
    /// Create the release namespace when it is missing.
    pub create_namespace: bool,
    /// Do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
    /// Install over a release whose latest revision is `uninstalled` or `failed`, as the next
    /// revision (Helm's `--replace`).
    pub replace: bool,
    /// Adopt objects that already exist, whoever made them (Helm's `--take-ownership`; Flux's
    /// default); otherwise such an object refuses the install.
    pub take_ownership: bool,
    /// The description of a successful install (default `Install complete`).
    pub description: Option<String>,
    /// Labels of the storage Secret (not Helm's own).
    pub labels: BTreeMap<String, String>,
    /// Revisions kept (0: all).
    pub max_history: usize,
    /// Rewrites the manifests before they are applied.
    pub post_renderer: Option<PostRender>,
}

/// How to upgrade.
#[derive(Clone, Default)]
pub struct UpgradeOptions {
    /// Waiting and timeout.
    pub wait: WaitOptions,
    /// Run no hooks.
    pub disable_hooks: bool,
    /// The chart's CRDs (Flux's upgrade default is `Skip`).
    pub crds: CrdPolicy,
    /// Do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
    /// Revisions kept (0: all).
    pub max_history: usize,
    /// Delete the objects this upgrade created when it fails.
    pub cleanup_on_fail: bool,
    /// Recreate objects whose immutable fields changed.
    pub force: bool,
    /// Adopt objects the upgrade adds that already exist, whoever made them (Helm's
    /// `--take-ownership`; Flux's default); otherwise such an object refuses the upgrade.
    pub take_ownership: bool,
    /// The description of a successful upgrade (default `Upgrade complete`).
    pub description: Option<String>,
    /// Labels of the storage Secret, merged over the previous revision's.
    pub labels: BTreeMap<String, String>,
    /// Rewrites the manifests before they are applied.
    pub post_renderer: Option<PostRender>,
    /// Helm's `--reuse-values` (Flux's `upgrade.preserveValues`): the current release's values
    /// are merged under the new ones, and the chart's defaults are the current release's
    /// (its chart's values with its values over them), not the new chart's.
    pub reuse_values: bool,
}

/// How to roll back.
#[derive(Clone, Default)]
pub struct RollbackOptions {
    /// The revision to go back to (0: the one before the latest).
    pub version: i64,
    /// Waiting and timeout.
    pub wait: WaitOptions,
    /// Run no hooks.
    pub disable_hooks: bool,
    /// Revisions kept (0: all).
    pub max_history: usize,
    /// Delete the objects this rollback created when it fails.
    pub cleanup_on_fail: bool,
    /// Recreate objects whose immutable fields changed.
    pub force: bool,
    /// The description (default `Rollback to <N>`).
    pub description: Option<String>,
}

/// How to uninstall.
#[derive(Clone, Default)]
pub struct UninstallOptions {
    /// Waiting and timeout (waits for the objects to be gone).
    pub wait: WaitOptions,
    /// Run no hooks.
    pub disable_hooks: bool,
    /// Keep the revisions, the latest marked `uninstalled`.
    pub keep_history: bool,
    /// The description (default `Uninstallation complete`).
    pub description: Option<String>,
    /// A release that does not exist is no error (returns `None`).
    pub ignore_not_found: bool,
    /// What becomes of the objects' dependents (Helm's `--cascade`, Flux's
    /// `deletionPropagation`); `None` is `Background`, as in both.
    pub deletion_propagation: Option<kube::api::PropagationPolicy>,
}

/// How to run the release's tests.
#[derive(Clone, Default)]
pub struct TestOptions {
    /// How long each test hook may take (0: 5 minutes).
    pub timeout: Duration,
    /// Run only the test hooks of these names (all when empty).
    pub include: Vec<String>,
    /// Skip the test hooks of these names.
    pub exclude: Vec<String>,
}

/// Runs Helm's release actions on one cluster.
pub struct Actions {
    cluster: Arc<Cluster>,
    applier: Applier,
    engine: Arc<Engine>,
    client: kube::Client,
}

/// How one render goes: the revision, install or upgrade, schema check, post-renderer.
#[derive(Clone, Copy)]
struct Pass<'a> {
    revision: i64,
    is_upgrade: bool,
    skip_schema_validation: bool,
    post_renderer: Option<&'a PostRender>,
}

/// A rendered release before anything is applied.
struct Rendered {
    manifest: String,
    hooks: Vec<Hook>,
    notes: String,
    /// The CRDs of the chart and its enabled subcharts.
    crds: Vec<ferroflux_helm::Crd>,
}

impl Actions {
    /// Actions applying as `field_manager` (Flux's helm-controller uses `helm-controller`),
    /// with an engine of their own.
    pub fn new(client: kube::Client, field_manager: &str) -> Actions {
        Actions::with_engine(client, field_manager, Arc::new(Engine::new()))
    }

    /// Actions sharing an engine (its parse cache) with others.
    pub fn with_engine(client: kube::Client, field_manager: &str, engine: Arc<Engine>) -> Actions {
        Actions {
            cluster: Arc::new(Cluster::new(client.clone(), field_manager)),
            applier: Applier::new(client.clone(), field_manager),
            engine,
            client,
        }
    }

    /// The release records of a storage namespace.
    pub fn storage(&self, namespace: &str) -> Storage {
        Storage::new(self.client.clone(), namespace)
    }

    /// The cluster's `.Capabilities` (server version and discovery).
    pub async fn capabilities(&self) -> Result<ferroflux_helm::Capabilities, Error> {
        self.cluster.capabilities().await.map_err(Error::Cluster)
    }

    async fn render(
        &self,
        target: &ReleaseRef,
        chart: &Arc<Chart>,
        values: &Map<String, Value>,
        how: Pass<'_>,
    ) -> Result<Rendered, Error> {
        let Pass {
            revision,
            is_upgrade,
            skip_schema_validation,
            post_renderer,
        } = how;
        let capabilities = self.capabilities().await?;
        let opts = RenderOptions {
            release: ReleaseOptions {
                name: target.name.clone(),
                namespace: target.namespace.clone(),
                revision,
                is_upgrade,
            },
            capabilities,
            lookup: Some(self.cluster.lookup_fn(tokio::runtime::Handle::current())),
            skip_schema_validation,
        };
        let engine = self.engine.clone();
        let chart = chart.clone();
        let values = values.clone();
        // Rendering is synchronous and CPU-bound, and `lookup` blocks on the cluster.
        let out = tokio::task::spawn_blocking(move || engine.render(&chart, &values, &opts))
            .await
            .map_err(|e| Error::Cluster(format!("rendering stopped: {e}")))??;
        let (manifest, hooks) = match post_renderer {
            Some(post) => post_render(post, &out.manifests, &out.hooks).map_err(Error::Refused)?,
            None => (release_manifest(&out.manifests), out.hooks),
        };
        Ok(Rendered {
            manifest,
            hooks: hooks.iter().map(Hook::from_rendered).collect(),
            notes: out.notes,
            crds: out.crds,
        })
    }

    /// The release an install (or, with `is_upgrade`, an upgrade to `revision`) would store,
    /// rendered against the cluster (Capabilities, `lookup`) but neither applied nor stored:
    /// what `build`/`diff helmrelease` show.
    pub async fn template(
        &self,
        target: &ReleaseRef,
        chart: Arc<Chart>,
        values: Map<String, Value>,
        revision: i64,
        is_upgrade: bool,
        post_renderer: Option<PostRender>,
    ) -> Result<Release, Error> {
        let r = self
            .render(
                target,
                &chart,
                &values,
                Pass {
                    revision,
                    is_upgrade,
                    skip_schema_validation: false,
                    post_renderer: post_renderer.as_ref(),
                },
            )
            .await?;
        let ts = now();
        Ok(Release {
            name: target.name.clone(),
            namespace: target.namespace.clone(),
            chart: chart_record(&chart),
            config: values,
            manifest: r.manifest,
            hooks: r.hooks,
            version: revision,
            apply_method: "ssa".into(),
            info: Info {
                first_deployed: ts.clone(),
                last_deployed: ts,
                status: Status::Unknown,
                description: "Dry run complete".into(),
                notes: r.notes,
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// The objects of a stored release as they are applied: namespaced and carrying Helm's
    /// ownership metadata (what drift detection compares with the cluster).
    pub async fn objects(&self, rel: &Release) -> Result<Vec<Value>, Error> {
        self.prepare(&rel.manifest, &rel.name, &rel.namespace)
            .await
            .map_err(Error::Refused)
    }

    async fn prepare(
        &self,
        manifest: &str,
        name: &str,
        namespace: &str,
    ) -> Result<Vec<Value>, String> {
        let mut objects = objects_of_manifest(manifest).map_err(|e| {
            format!("unable to build kubernetes objects from release manifest: {e}")
        })?;
        self.cluster.namespaced(&mut objects, namespace).await?;
        for o in objects.iter_mut() {
            set_ownership(o, name, namespace);
        }
        Ok(objects)
    }

    /// Helm's `existingResourceConflict`: objects that exist and belong to no release of this
    /// name refuse the action.
    async fn check_conflicts(
        &self,
        objects: &[Value],
        name: &str,
        namespace: &str,
    ) -> Result<(), String> {
        for o in objects {
            if let Some(live) = self.cluster.get(o).await?
                && let Some(e) = ownership_error(&live, name, namespace)
            {
                return Err(format!(
                    "{} exists and cannot be imported into the current release: {e}",
                    resource_string(o)
                ));
            }
        }
        Ok(())
    }

    async fn install_crds(
        &self,
        crds: &[ferroflux_helm::Crd],
        policy: CrdPolicy,
        timeout: Duration,
    ) -> Result<(), Error> {
        if policy == CrdPolicy::Skip || crds.is_empty() {
            return Ok(());
        }
        let mut objects = Vec::new();
        for crd in crds {
            let docs = objects_of_manifest(&crd.content).map_err(|e| {
                Error::Refused(format!("failed to install CRD {}: {e}", crd.filename))
            })?;
            objects.extend(docs);
        }
        for o in &objects {
            let done = match policy {
                CrdPolicy::CreateReplace => self.cluster.apply(o).await,
                _ => self.cluster.create(o).await.map(|_| ()),
            };
            done.map_err(|e| {
                Error::Refused(format!("failed to install CRD {}: {e}", resource_string(o)))
            })?;
        }
        self.applier
            .wait_for(&objects, timeout)
            .await
            .map_err(|e| {
                Error::Refused(format!("failed to wait for CRDs to be established: {e}"))
            })?;
        self.cluster.forget_kinds();
        Ok(())
    }

    fn apply_options(&self, wait: &WaitOptions, force: bool) -> ApplyOptions {
        ApplyOptions {
            force,
            stage_timeout: wait.timeout,
            concurrency: 4,
        }
    }

    /// Applies, then waits as asked. The error is what Helm reports.
    async fn apply_and_wait(
        &self,
        objects: &[Value],
        wait: &WaitOptions,
        force: bool,
    ) -> Result<(), String> {
        self.applier
            .apply_staged(objects.to_vec(), &self.apply_options(wait, force))
            .await
            .map_err(|e| e.to_string())?;
        if wait.wait {
            let waited: Vec<Value> = objects
                .iter()
                .filter(|o| {
                    wait.wait_for_jobs || o.get("kind").and_then(Value::as_str) != Some("Job")
                })
                .cloned()
                .collect();
            self.applier
                .wait_for_with(&waited, wait.timeout, &wait.health)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Deletes what `old` has and `new` does not (Helm's three-way update), sparing objects
    /// whose live copy says `helm.sh/resource-policy: keep`.
    async fn delete_dropped(&self, old: &[Value], new: &[Value]) -> Result<(), String> {
        let kept: HashSet<String> = new.iter().map(object_key).collect();
        for o in old.iter().rev() {
            if kept.contains(&object_key(o)) {
                continue;
            }
            match self.cluster.get(o).await {
                Ok(Some(live)) if keeps(&live) => continue,
                Ok(None) => continue,
                _ => {}
            }
            self.cluster
                .delete(o)
                .await
                .map_err(|e| format!("failed to delete resource {e}"))?;
        }
        Ok(())
    }

    async fn record_failure(
        &self,
        storage: &Storage,
        mut rel: Release,
        description: String,
        message: String,
    ) -> Error {
        rel.info.status = Status::Failed;
        rel.info.description = description;
        if let Err(e) = storage.update(&rel).await {
            return Error::Failed {
                message: format!("{message} (recording the failure failed too: {e})"),
                release: Box::new(rel),
            };
        }
        Error::Failed {
            message,
            release: Box::new(rel),
        }
    }

    async fn run_hooks(
        &self,
        storage: &Storage,
        rel: &mut Release,
        event: &str,
        timeout: Duration,
    ) -> Result<(), String> {
        hooks::exec(&self.cluster, storage, rel, event, timeout, &|_: &Hook| {
            true
        })
        .await
    }

    /// Helm's install: CRDs (by policy), render, ownership check, the namespace, the record
    /// (`pending-install`), pre-install hooks, apply, wait, post-install hooks, `deployed`.
    /// A failure after the record is written leaves the revision `failed` with Helm's
    /// description and returns [`Error::Failed`].
    pub async fn install(
        &self,
        target: &ReleaseRef,
        chart: Arc<Chart>,
        values: Map<String, Value>,
        opts: &InstallOptions,
    ) -> Result<Release, Error> {
        ferroflux_helm::validate_release_name(&target.name)?;
        if let Some(l) = opts
            .labels
            .keys()
            .find(|k| SYSTEM_LABELS.contains(&k.as_str()))
        {
            return Err(Error::Refused(format!(
                "user supplied labels contains system reserved label name ({l}). System labels: {SYSTEM_LABELS:?}"
            )));
        }
        let storage = self.storage(&target.storage_namespace);
        let history = storage.history(&target.name).await?;
        let mut version = 1;
        if let Some(last) = history.last() {
            let replaceable = matches!(last.info.status, Status::Uninstalled | Status::Failed);
            if !(opts.replace && replaceable) {
                return Err(Error::Refused(
                    "release name check failed: cannot reuse a name that is still in use".into(),
                ));
            }
            version = last.version + 1;
        }
        let r = self
            .crds_then_render(
                target,
                &chart,
                &values,
                Pass {
                    revision: version,
                    is_upgrade: false,
                    skip_schema_validation: opts.skip_schema_validation,
                    post_renderer: opts.post_renderer.as_ref(),
                },
                opts.crds,
                opts.wait.timeout,
            )
            .await?;
        let objects = self
            .prepare(&r.manifest, &target.name, &target.namespace)
            .await
            .map_err(Error::Refused)?;
        if opts.create_namespace {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": target.namespace, "labels": {"name": target.namespace}}});
            self.cluster.create(&ns).await.map_err(Error::Cluster)?;
        }
        if !opts.take_ownership {
            self.check_conflicts(&objects, &target.name, &target.namespace)
                .await
                .map_err(|e| Error::Refused(format!("unable to continue with install: {e}")))?;
        }
        let ts = now();
        let mut rel = Release {
            name: target.name.clone(),
            namespace: target.namespace.clone(),
            chart: chart_record(&chart),
            config: values,
            manifest: r.manifest,
            hooks: r.hooks,
            version,
            apply_method: "ssa".into(),
            labels: opts.labels.clone(),
            info: Info {
                first_deployed: ts.clone(),
                last_deployed: ts,
                status: Status::PendingInstall,
                description: "Initial install underway".into(),
                notes: r.notes,
                ..Default::default()
            },
            ..Default::default()
        };
        if let Some(last) = history.last().filter(|l| l.info.status != Status::Failed) {
            let mut last = last.clone();
            last.info.status = Status::Superseded;
            last.info.description = "superseded by new release".into();
            storage.update(&last).await?;
        }
        storage.create(&rel, opts.max_history).await?;
        let timeout = opts.wait.timeout;
        let outcome: Result<(), String> = async {
            if !opts.disable_hooks {
                self.run_hooks(&storage, &mut rel, "pre-install", timeout)
                    .await
                    .map_err(|e| format!("failed pre-install: {e}"))?;
            }
            self.apply_and_wait(&objects, &opts.wait, false).await?;
            if !opts.disable_hooks {
                self.run_hooks(&storage, &mut rel, "post-install", timeout)
                    .await
                    .map_err(|e| format!("failed post-install: {e}"))?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = outcome {
            let description = format!("Release {:?} failed: {e}", target.name);
            return Err(self.record_failure(&storage, rel, description, e).await);
        }
        rel.info.status = Status::Deployed;
        rel.info.description = opts
            .description
            .clone()
            .unwrap_or_else(|| "Install complete".into());
        storage.update(&rel).await?;
        Ok(rel)
    }

    /// Installs the chart's CRDs by `policy`, then renders with Capabilities that include
    /// them. Helm takes the CRDs of the chart and its *enabled* subcharts (after dependency
    /// processing); a first render at the current Capabilities says which those are. When that
    /// render fails (a template that needs the CRDs' kinds), every CRD of the chart's tree is
    /// installed.
    async fn crds_then_render(
        &self,
        target: &ReleaseRef,
        chart: &Arc<Chart>,
        values: &Map<String, Value>,
        how: Pass<'_>,
        policy: CrdPolicy,
        timeout: Duration,
    ) -> Result<Rendered, Error> {
        let all = self.engine_dry_crds(chart);
        if policy == CrdPolicy::Skip || all.is_empty() {
            return self.render(target, chart, values, how).await;
        }
        let probe = Pass {
            post_renderer: None,
            ..how
        };
        let crds = match self.render(target, chart, values, probe).await {
            Ok(r) => r.crds,
            Err(_) => all,
        };
        self.install_crds(&crds, policy, timeout).await?;
        self.render(target, chart, values, how).await
    }

    /// The chart's CRDs without rendering (they are never templated).
    fn engine_dry_crds(&self, chart: &Chart) -> Vec<ferroflux_helm::Crd> {
        fn walk(c: &Chart, path: &str, out: &mut Vec<ferroflux_helm::Crd>) {
            for f in c.own_crds() {
                out.push(ferroflux_helm::Crd {
                    filename: format!("{path}/{}", f.name),
                    content: String::from_utf8_lossy(&f.data).into_owned(),
                });
            }
            for d in &c.dependencies {
                walk(d, &format!("{path}/charts/{}", d.name()), out);
            }
        }
        let mut out = Vec::new();
        walk(chart, chart.name(), &mut out);
        out
    }

    /// Helm's upgrade: the latest revision must not be pending; the current one is the latest
    /// deployed (or the latest when it failed or was superseded); render revision N+1, record
    /// it `pending-upgrade`, pre-upgrade hooks, apply, delete what the current one had and the
    /// new one drops, wait, post-upgrade hooks; the current revision becomes `superseded` and
    /// the new one `deployed`. On failure the new revision is `failed` and the current one is
    /// left as it was.
    pub async fn upgrade(
        &self,
        target: &ReleaseRef,
        chart: Arc<Chart>,
        values: Map<String, Value>,
        opts: &UpgradeOptions,
    ) -> Result<Release, Error> {
        ferroflux_helm::validate_release_name(&target.name)?;
        let storage = self.storage(&target.storage_namespace);
        let history = storage.history(&target.name).await?;
        let Some(last) = history.last().cloned() else {
            return Err(Error::Refused(format!(
                "{:?} has no deployed releases",
                target.name
            )));
        };
        if last.info.status.is_pending() {
            return Err(Error::Pending {
                status: last.info.status,
            });
        }
        let current = if last.info.status == Status::Deployed {
            last.clone()
        } else if let Some(d) = history
            .iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed)
        {
            d.clone()
        } else if matches!(last.info.status, Status::Failed | Status::Superseded) {
            last.clone()
        } else {
            return Err(Error::Refused(format!(
                "{:?} has no deployed releases",
                target.name
            )));
        };
        if let Some(l) = opts
            .labels
            .keys()
            .find(|k| SYSTEM_LABELS.contains(&k.as_str()))
        {
            return Err(Error::Refused(format!(
                "user supplied labels contains system reserved label name ({l}). System labels: {SYSTEM_LABELS:?}"
            )));
        }
        let revision = last.version + 1;
        let (chart, values) = if opts.reuse_values {
            reuse_values(&chart, values, &current)
        } else {
            (chart, values)
        };
        let r = self
            .crds_then_render(
                target,
                &chart,
                &values,
                Pass {
                    revision,
                    is_upgrade: true,
                    skip_schema_validation: opts.skip_schema_validation,
                    post_renderer: opts.post_renderer.as_ref(),
                },
                opts.crds,
                opts.wait.timeout,
            )
            .await?;
        let namespace = current.namespace.clone();
        let old_objects = self
            .prepare(&current.manifest, &target.name, &namespace)
            .await
            .map_err(|e| Error::Refused(format!("current release manifest: {e}")))?;
        let new_objects = self
            .prepare(&r.manifest, &target.name, &namespace)
            .await
            .map_err(Error::Refused)?;
        let existing: HashSet<String> = old_objects.iter().map(object_key).collect();
        let created: Vec<Value> = new_objects
            .iter()
            .filter(|o| !existing.contains(&object_key(o)))
            .cloned()
            .collect();
        if !opts.take_ownership {
            self.check_conflicts(&created, &target.name, &namespace)
                .await
                .map_err(|e| Error::Refused(format!("unable to continue with update: {e}")))?;
        }
        let mut labels = last.labels.clone();
        labels.retain(|k, _| !SYSTEM_LABELS.contains(&k.as_str()));
        labels.extend(opts.labels.clone());
        let mut rel = Release {
            name: target.name.clone(),
            namespace: namespace.clone(),
            chart: chart_record(&chart),
            config: values,
            manifest: r.manifest,
            hooks: r.hooks,
            version: revision,
            apply_method: "ssa".into(),
            labels,
            info: Info {
                first_deployed: current.info.first_deployed.clone(),
                last_deployed: now(),
                status: Status::PendingUpgrade,
                description: "Preparing upgrade".into(),
                notes: r.notes,
                ..Default::default()
            },
            ..Default::default()
        };
        storage.create(&rel, opts.max_history).await?;
        let timeout = opts.wait.timeout;
        let outcome: Result<(), String> = async {
            if !opts.disable_hooks {
                self.run_hooks(&storage, &mut rel, "pre-upgrade", timeout)
                    .await
                    .map_err(|e| format!("pre-upgrade hooks failed: {e}"))?;
            }
            self.applier
                .apply_staged(
                    new_objects.clone(),
                    &self.apply_options(&opts.wait, opts.force),
                )
                .await
                .map_err(|e| e.to_string())?;
            self.delete_dropped(&old_objects, &new_objects).await?;
            if opts.wait.wait {
                let waited: Vec<Value> = new_objects
                    .iter()
                    .filter(|o| {
                        opts.wait.wait_for_jobs
                            || o.get("kind").and_then(Value::as_str) != Some("Job")
                    })
                    .cloned()
                    .collect();
                self.applier
                    .wait_for_with(&waited, timeout, &opts.wait.health)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if !opts.disable_hooks {
                self.run_hooks(&storage, &mut rel, "post-upgrade", timeout)
                    .await
                    .map_err(|e| format!("post-upgrade hooks failed: {e}"))?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = outcome {
            if opts.cleanup_on_fail {
                for o in created.iter().rev() {
                    let _ = self.cluster.delete(o).await;
                }
            }
            let description = format!("Upgrade {:?} failed: {e}", target.name);
            return Err(self.record_failure(&storage, rel, description, e).await);
        }
        let mut superseded = current;
        superseded.info.status = Status::Superseded;
        storage.update(&superseded).await?;
        rel.info.status = Status::Deployed;
        rel.info.description = opts
            .description
            .clone()
            .unwrap_or_else(|| "Upgrade complete".into());
        storage.update(&rel).await?;
        Ok(rel)
    }

    /// Helm's rollback: a new revision (latest + 1) copying the chart, values, manifest, hooks
    /// and notes of revision `version` (default: the one before the latest), `pending-rollback`,
    /// pre-rollback hooks, apply (deleting what the latest had and the target does not), wait,
    /// post-rollback hooks; every `deployed` revision becomes `superseded`, the new one
    /// `deployed`.
    pub async fn rollback(
        &self,
        target: &ReleaseRef,
        opts: &RollbackOptions,
    ) -> Result<Release, Error> {
        if ferroflux_helm::validate_release_name(&target.name).is_err() {
            return Err(Error::Refused(format!(
                "prepareRollback: Release name is invalid: {}",
                target.name
            )));
        }
        if opts.version < 0 {
            return Err(Error::Refused("invalid release revision".into()));
        }
        let storage = self.storage(&target.storage_namespace);
        let history = storage.history(&target.name).await?;
        let Some(current) = history.last().cloned() else {
            return Err(Error::Refused("release: not found".into()));
        };
        let wanted = if opts.version == 0 {
            current.version - 1
        } else {
            opts.version
        };
        let Some(previous) = history.iter().find(|r| r.version == wanted).cloned() else {
            return Err(Error::Refused(format!("release has no {wanted} version")));
        };
        let mut rel = Release {
            name: target.name.clone(),
            namespace: current.namespace.clone(),
            chart: previous.chart.clone(),
            config: previous.config.clone(),
            manifest: previous.manifest.clone(),
            hooks: previous.hooks.clone(),
            version: current.version + 1,
            apply_method: "ssa".into(),
            labels: previous
                .labels
                .iter()
                .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            info: Info {
                first_deployed: current.info.first_deployed.clone(),
                last_deployed: now(),
                status: Status::PendingRollback,
                notes: previous.info.notes.clone(),
                rollback_revision: wanted,
                description: opts
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("Rollback to {wanted}")),
                ..Default::default()
            },
            ..Default::default()
        };
        let namespace = rel.namespace.clone();
        let old_objects = self
            .prepare(&current.manifest, &target.name, &namespace)
            .await
            .map_err(|e| {
                Error::Refused(format!(
                    "unable to build kubernetes objects from current release manifest: {e}"
                ))
            })?;
        let new_objects = self
            .prepare(&rel.manifest, &target.name, &namespace)
            .await
            .map_err(|e| {
                Error::Refused(format!(
                    "unable to build kubernetes objects from new release manifest: {e}"
                ))
            })?;
        storage.create(&rel, opts.max_history).await?;
        let timeout = opts.wait.timeout;
        if !opts.disable_hooks
            && let Err(e) = self
                .run_hooks(&storage, &mut rel, "pre-rollback", timeout)
                .await
        {
            let description = format!("Rollback {:?} failed: {e}", target.name);
            return Err(self.record_failure(&storage, rel, description, e).await);
        }
        let applied = self
            .applier
            .apply_staged(
                new_objects.clone(),
                &self.apply_options(&opts.wait, opts.force),
            )
            .await
            .map_err(|e| e.to_string());
        let applied = match applied {
            Ok(_) => self.delete_dropped(&old_objects, &new_objects).await,
            Err(e) => Err(e),
        };
        if let Err(e) = applied {
            // As Helm: the latest revision is superseded even though the rollback failed.
            let mut cur = current.clone();
            cur.info.status = Status::Superseded;
            storage.update(&cur).await?;
            if opts.cleanup_on_fail {
                let existing: HashSet<String> = old_objects.iter().map(object_key).collect();
                for o in new_objects
                    .iter()
                    .filter(|o| !existing.contains(&object_key(o)))
                {
                    let _ = self.cluster.delete(o).await;
                }
            }
            let description = format!("Rollback {:?} failed: {e}", target.name);
            return Err(self.record_failure(&storage, rel, description, e).await);
        }
        if opts.wait.wait {
            let waited: Vec<Value> = new_objects
                .iter()
                .filter(|o| {
                    opts.wait.wait_for_jobs || o.get("kind").and_then(Value::as_str) != Some("Job")
                })
                .cloned()
                .collect();
            if let Err(e) = self
                .applier
                .wait_for_with(&waited, timeout, &opts.wait.health)
                .await
            {
                let e = e.to_string();
                let description = format!("Release {:?} failed: {e}", target.name);
                let message = format!("release {} failed: {e}", target.name);
                return Err(self
                    .record_failure(&storage, rel, description, message)
                    .await);
            }
        }
        if !opts.disable_hooks
            && let Err(e) = self
                .run_hooks(&storage, &mut rel, "post-rollback", timeout)
                .await
        {
            let description = format!("Rollback {:?} failed: {e}", target.name);
            return Err(self.record_failure(&storage, rel, description, e).await);
        }
        for r in storage.history(&target.name).await? {
            if r.info.status == Status::Deployed && r.version != rel.version {
                let mut r = r;
                r.info.status = Status::Superseded;
                storage.update(&r).await?;
            }
        }
        rel.info.status = Status::Deployed;
        storage.update(&rel).await?;
        Ok(rel)
    }

    /// Helm's uninstall: the latest revision becomes `uninstalling`, pre-delete hooks, the
    /// objects are deleted in reverse install order (sparing `helm.sh/resource-policy: keep`),
    /// waited for, post-delete hooks; then every revision is deleted, or with `keep_history`
    /// the latest is kept `uninstalled` and deployed ones become `superseded`.
    pub async fn uninstall(
        &self,
        target: &ReleaseRef,
        opts: &UninstallOptions,
    ) -> Result<Option<Release>, Error> {
        if ferroflux_helm::validate_release_name(&target.name).is_err() {
            return Err(Error::Refused(format!(
                "uninstall: Release name is invalid: {}",
                target.name
            )));
        }
        let storage = self.storage(&target.storage_namespace);
        let history = storage.history(&target.name).await?;
        let Some(mut rel) = history.last().cloned() else {
            if opts.ignore_not_found {
                return Ok(None);
            }
            return Err(Error::Refused(format!(
                "uninstall: Release not loaded: {}: release: not found",
                target.name
            )));
        };
        if rel.info.status == Status::Uninstalled {
            if !opts.keep_history {
                for r in &history {
                    storage.delete(&r.name, r.version).await?;
                }
                return Ok(Some(rel));
            }
            return Err(Error::Refused(format!(
                "the release named {:?} is already deleted",
                target.name
            )));
        }
        rel.info.status = Status::Uninstalling;
        rel.info.deleted = now();
        rel.info.description = "Deletion in progress (or silently failed)".into();
        let timeout = opts.wait.timeout;
        if !opts.disable_hooks {
            self.run_hooks(&storage, &mut rel, "pre-delete", timeout)
                .await
                .map_err(Error::Cluster)?;
        }
        storage.update(&rel).await?;
        let mut objects = objects_of_manifest(&rel.manifest).map_err(|e| {
            Error::Refused(format!(
                "corrupted release record. You must manually delete the resources: {e}"
            ))
        })?;
        objects.retain(|o| !keeps(o));
        // Kinds the cluster no longer serves have nothing left to delete.
        let mut deletable = Vec::new();
        for o in objects {
            let mut one = [o];
            if self
                .cluster
                .namespaced(&mut one, &rel.namespace)
                .await
                .is_ok()
            {
                let [o] = one;
                deletable.push(o);
            }
        }
        let mut errs = Vec::new();
        let propagation = opts
            .deletion_propagation
            .clone()
            .unwrap_or(kube::api::PropagationPolicy::Background);
        for o in deletable.iter().rev() {
            if let Err(e) = self.cluster.delete_with(o, propagation.clone()).await {
                errs.push(e);
            }
        }
        if !errs.is_empty() {
            return Err(Error::Cluster(format!(
                "failed to delete release: {}: {}",
                target.name,
                errs.join("; ")
            )));
        }
        if opts.wait.wait
            && let Err(e) = self.cluster.wait_deleted(&deletable, timeout).await
        {
            errs.push(e);
        }
        if !opts.disable_hooks
            && let Err(e) = self
                .run_hooks(&storage, &mut rel, "post-delete", timeout)
                .await
        {
            errs.push(e);
        }
        rel.info.status = Status::Uninstalled;
        rel.info.description = opts
            .description
            .clone()
            .unwrap_or_else(|| "Uninstallation complete".into());
        if opts.keep_history {
            storage.update(&rel).await?;
            for r in storage.history(&target.name).await? {
                if r.info.status == Status::Deployed {
                    let mut r = r;
                    r.info.status = Status::Superseded;
                    storage.update(&r).await?;
                }
            }
        } else {
            for r in &history {
                if let Err(e) = storage.delete(&r.name, r.version).await {
                    errs.push(format!("uninstall: Failed to purge the release: {e}"));
                }
            }
        }
        if !errs.is_empty() {
            return Err(Error::Cluster(format!(
                "uninstallation completed with {} error(s): {}",
                errs.len(),
                errs.join("; ")
            )));
        }
        Ok(Some(rel))
    }

    /// Helm's `test`: runs the latest revision's `test` hooks (filtered by name), records each
    /// run in the release (`hooks[].last_run`) and fails with the first failing test.
    pub async fn test(&self, target: &ReleaseRef, opts: &TestOptions) -> Result<Release, Error> {
        let storage = self.storage(&target.storage_namespace);
        let Some(mut rel) = storage.last(&target.name).await? else {
            return Err(Error::Refused("release: not found".into()));
        };
        let timeout = if opts.timeout.is_zero() {
            Duration::from_secs(300)
        } else {
            opts.timeout
        };
        let include = opts.include.clone();
        let exclude = opts.exclude.clone();
        let select = move |h: &Hook| {
            (include.is_empty() || include.contains(&h.name)) && !exclude.contains(&h.name)
        };
        let outcome =
            hooks::exec(&self.cluster, &storage, &mut rel, "test", timeout, &select).await;
        storage.update(&rel).await?;
        match outcome {
            Ok(()) => Ok(rel),
            Err(message) => Err(Error::Failed {
                message,
                release: Box::new(rel),
            }),
        }
    }
}

/// Helm's `reuseValues`: the values become the new ones with the current release's under them
/// (`CoalesceTables(new, current.Config)`), and the chart renders with the current release's
/// coalesced values as its defaults (`CoalesceValues(current.Chart, current.Config)`), so the
/// new chart's own defaults are not read, as in Helm.
fn reuse_values(
    chart: &Arc<Chart>,
    values: Map<String, Value>,
    current: &Release,
) -> (Arc<Chart>, Map<String, Value>) {
    let mut warnings = ferroflux_helm::Warnings::new();
    let old_defaults = current
        .chart
        .get("values")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut old_values = current.config.clone();
    ferroflux_helm::coalesce_tables(&mut old_values, old_defaults, "", false, &mut warnings);
    let mut new_values = values;
    ferroflux_helm::coalesce_tables(
        &mut new_values,
        current.config.clone(),
        "",
        false,
        &mut warnings,
    );
    let mut reused = (**chart).clone();
    reused.values = old_values;
    (Arc::new(reused), new_values)
}
