//! Prometheus metrics under Flux's names, so existing Flux dashboards and alerts keep working,
//! plus `ferroflux_kube_request_retries_total{verb,code}`: the API requests the process's
//! clients sent again (the counter lives in `ferroflux-kubeclient`, which owns the retry rule).
//!
//! Durations and counters are recorded as reconciles finish. The per-object gauges
//! (`gotk_resource_info`, `gotk_suspend_status`, `workqueue_depth`) are recomputed from the
//! controllers' caches at every scrape instead of being updated on events: a deleted object then
//! disappears from the next scrape without bookkeeping, and a scrape never shows a label set that
//! no object has any more.

use ferroflux_api::conditions::{READY, Status as CondStatus};
use ferroflux_api::{GitRepository, HelmRelease, Kustomization, RECONCILE_REQUESTED_AT};
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

/// The labels of Flux's kube-state-metrics `gotk_resource_info` series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    customresource_group: String,
    customresource_kind: String,
    customresource_version: String,
    exported_namespace: String,
    name: String,
    ready: String,
    suspended: String,
    revision: String,
    source_name: String,
}

/// The controllers' metrics. Cheap to share behind an `Arc`.
pub struct Metrics {
    registry: Registry,
    durations: Family<ObjectLabels, Histogram>,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    active: Family<ControllerLabels, Gauge>,
    depth: Family<QueueLabels, Gauge>,
    info: Family<InfoLabels, Gauge>,
    suspended: Family<ObjectLabels, Gauge>,
    caches: Mutex<Caches>,
    /// The notification channel of this manager: the per-manager handle every controller
    /// already receives carries it to their Recorders.
    notifier: Option<crate::notification::Notifier>,
}

#[derive(Default)]
struct Caches {
    kustomizations: Option<Store<Kustomization>>,
    repositories: Option<Store<GitRepository>>,
    helmreleases: Option<Store<HelmRelease>>,
}

/// How a reconcile ended, for `controller_runtime_reconcile_total{result}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The object is Ready (or the reconcile had nothing to do).
    Success,
    /// The pipeline failed and recorded why in the object's status; it will be retried.
    Requeue,
    /// The reconcile itself failed (API errors writing status).
    Error,
}

/// The GitRepository controller's name in the metrics, as Flux labels it.
pub const SOURCE_CONTROLLER: &str = "gitrepository";
/// The Kustomization controller's name in the metrics.
pub const KUSTOMIZE_CONTROLLER: &str = "kustomization";
/// The HelmRelease controller's name in the metrics.
pub const HELM_CONTROLLER: &str = "helmrelease";

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered in a registry of their own.
    pub fn new() -> Self {
        Metrics::for_cluster(None, None)
    }

    /// Metrics whose every series carries `cluster="<name>"` when the cluster's name is known,
    /// and whose controllers post their events to `notifier`.
    pub fn for_cluster(
        cluster: Option<&str>,
        notifier: Option<crate::notification::Notifier>,
    ) -> Self {
        let mut registry = match cluster.filter(|c| !c.is_empty()) {
            Some(c) => Registry::with_labels(
                [(
                    std::borrow::Cow::Borrowed("cluster"),
                    std::borrow::Cow::Owned(c.to_string()),
                )]
                .into_iter(),
            ),
            None => Registry::default(),
        };
        let durations = Family::<ObjectLabels, Histogram>::new_with_constructor(|| {
            // 10 ms to ~5.5 min: a no-op poll up to a large apply that waits for health.
            Histogram::new(exponential_buckets(0.01, 2.0, 16))
        });
        registry.register(
            "gotk_reconcile_duration_seconds",
            "The duration in seconds of a GitOps Toolkit resource reconciliation",
            durations.clone(),
        );
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        let errors = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        let active = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active.clone(),
        );
        let depth = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Objects waiting for a reconcile: a new generation not yet observed or a \
             reconcile.fluxcd.io/requestedAt not yet handled, excluding those in progress",
            depth.clone(),
        );
        let info = Family::<InfoLabels, Gauge>::default();
        registry.register(
            "gotk_resource_info",
            "The current state of a GitOps Toolkit resource",
            info.clone(),
        );
        let suspended = Family::<ObjectLabels, Gauge>::default();
        registry.register(
            "gotk_suspend_status",
            "The current suspend status of a GitOps Toolkit resource",
            suspended.clone(),
        );
        // Counted by the API clients of the whole process (kubeclient owns the retry rule).
        registry.register(
            "ferroflux_kube_request_retries",
            "Kubernetes API requests sent again after a transient failure or a Retry-After, by \
             HTTP verb and the status code (or <error> for a broken connection) that caused it",
            ferroflux_kubeclient::retries().clone(),
        );
        Metrics {
            registry,
            durations,
            reconciles,
            errors,
            active,
            depth,
            info,
            suspended,
            caches: Mutex::new(Caches::default()),
            notifier,
        }
    }

    /// Lets scrapes read the Kustomization controller's cache.
    pub fn watch_kustomizations(&self, store: Store<Kustomization>) {
        if let Ok(mut c) = self.caches.lock() {
            c.kustomizations = Some(store);
        }
    }

    /// Lets scrapes read the GitRepository controller's cache.
    pub fn watch_repositories(&self, store: Store<GitRepository>) {
        if let Ok(mut c) = self.caches.lock() {
            c.repositories = Some(store);
        }
    }

    /// Lets scrapes read the HelmRelease controller's cache.
    pub fn watch_helmreleases(&self, store: Store<HelmRelease>) {
        if let Ok(mut c) = self.caches.lock() {
            c.helmreleases = Some(store);
        }
    }

    /// Marks a reconcile as started; the returned guard records it when dropped, so a reconcile
    /// cancelled at shutdown still leaves the active-workers gauge right.
    pub fn start(&self, controller: &'static str) -> ActiveGuard<'_> {
        let labels = ControllerLabels {
            controller: controller.into(),
        };
        self.active.get_or_create(&labels).inc();
        ActiveGuard {
            metrics: self,
            labels,
        }
    }

    /// Records one finished reconcile of `kind` `namespace/name`.
    pub fn record(
        &self,
        controller: &'static str,
        kind: &str,
        namespace: &str,
        name: &str,
        elapsed: Duration,
        outcome: Outcome,
    ) {
        self.durations
            .get_or_create(&ObjectLabels {
                kind: kind.into(),
                name: name.into(),
                namespace: namespace.into(),
            })
            .observe(elapsed.as_secs_f64());
        let result = match outcome {
            Outcome::Success => "success",
            Outcome::Requeue => "requeue",
            Outcome::Error => "error",
        };
        self.reconciles
            .get_or_create(&ResultLabels {
                controller: controller.into(),
                result: result.into(),
            })
            .inc();
        if outcome == Outcome::Error {
            self.errors
                .get_or_create(&ControllerLabels {
                    controller: controller.into(),
                })
                .inc();
        }
    }

    fn refresh_object_gauges(&self) {
        let (kustomizations, repositories, helmreleases) = match self.caches.lock() {
            Ok(c) => (
                c.kustomizations.as_ref().map(|s| s.state()),
                c.repositories.as_ref().map(|s| s.state()),
                c.helmreleases.as_ref().map(|s| s.state()),
            ),
            Err(_) => (None, None, None),
        };
        self.info.clear();
        self.suspended.clear();
        let mut depth_ks = 0;
        for ks in kustomizations.iter().flatten() {
            let status = ks.status.as_ref();
            let object = ObjectState {
                kind: "Kustomization",
                group: "kustomize.toolkit.fluxcd.io",
                version: "v1",
                namespace: ks.namespace().unwrap_or_default(),
                name: ks.name_any(),
                suspended: ks.spec.suspend == Some(true),
                ready: ready_of(status.and_then(|s| s.conditions.as_deref())),
                revision: status
                    .and_then(|s| s.last_applied_revision.clone())
                    .unwrap_or_default(),
                source_name: ks.spec.source_ref.name.clone(),
            };
            self.set_object(&object);
            if pending(
                ks.metadata.generation,
                status.and_then(|s| s.observed_generation),
                ks.annotations().get(RECONCILE_REQUESTED_AT),
                status.and_then(|s| s.last_handled_reconcile_at.as_ref()),
            ) && !object.suspended
            {
                depth_ks += 1;
            }
        }
        let mut depth_repo = 0;
        for repo in repositories.iter().flatten() {
            let status = repo.status.as_ref();
            let object = ObjectState {
                kind: "GitRepository",
                group: "source.toolkit.fluxcd.io",
                version: "v1",
                namespace: repo.namespace().unwrap_or_default(),
                name: repo.name_any(),
                suspended: repo.spec.suspend == Some(true),
                ready: ready_of(status.and_then(|s| s.conditions.as_deref())),
                revision: status
                    .and_then(|s| s.artifact.as_ref())
                    .map(|a| a.revision.clone())
                    .unwrap_or_default(),
                source_name: String::new(),
            };
            self.set_object(&object);
            if pending(
                repo.metadata.generation,
                status.and_then(|s| s.observed_generation),
                repo.annotations().get(RECONCILE_REQUESTED_AT),
                status.and_then(|s| s.last_handled_reconcile_at.as_ref()),
            ) && !object.suspended
            {
                depth_repo += 1;
            }
        }
        let mut depth_hr = 0;
        for hr in helmreleases.iter().flatten() {
            let status = hr.status.as_ref();
            let object = ObjectState {
                kind: "HelmRelease",
                group: "helm.toolkit.fluxcd.io",
                version: "v2",
                namespace: hr.namespace().unwrap_or_default(),
                name: hr.name_any(),
                suspended: hr.spec.suspend == Some(true),
                ready: ready_of(status.and_then(|s| s.conditions.as_deref())),
                revision: status
                    .and_then(|s| s.history.as_ref())
                    .and_then(|h| h.first())
                    .map(|s| s.chart_version.clone())
                    .unwrap_or_default(),
                source_name: hr
                    .spec
                    .chart_ref
                    .as_ref()
                    .map(|r| r.name.clone())
                    .or_else(|| {
                        hr.spec
                            .chart
                            .as_ref()
                            .map(|c| c.spec.source_ref.name.clone())
                    })
                    .unwrap_or_default(),
            };
            self.set_object(&object);
            if pending(
                hr.metadata.generation,
                status.and_then(|s| s.observed_generation),
                hr.annotations().get(RECONCILE_REQUESTED_AT),
                status.and_then(|s| s.last_handled_reconcile_at.as_ref()),
            ) && !object.suspended
            {
                depth_hr += 1;
            }
        }
        let active = |c: &str| {
            self.active
                .get_or_create(&ControllerLabels {
                    controller: c.into(),
                })
                .get()
        };
        self.depth
            .get_or_create(&QueueLabels {
                name: KUSTOMIZE_CONTROLLER.into(),
            })
            .set((depth_ks - active(KUSTOMIZE_CONTROLLER)).max(0));
        self.depth
            .get_or_create(&QueueLabels {
                name: SOURCE_CONTROLLER.into(),
            })
            .set((depth_repo - active(SOURCE_CONTROLLER)).max(0));
        if helmreleases.is_some() {
            self.depth
                .get_or_create(&QueueLabels {
                    name: HELM_CONTROLLER.into(),
                })
                .set((depth_hr - active(HELM_CONTROLLER)).max(0));
        }
    }

    fn set_object(&self, o: &ObjectState) {
        self.info
            .get_or_create(&InfoLabels {
                customresource_group: o.group.into(),
                customresource_kind: o.kind.into(),
                customresource_version: o.version.into(),
                exported_namespace: o.namespace.clone(),
                name: o.name.clone(),
                ready: o.ready.clone(),
                suspended: o.suspended.to_string(),
                revision: o.revision.clone(),
                source_name: o.source_name.clone(),
            })
            .set(1);
        self.suspended
            .get_or_create(&ObjectLabels {
                kind: o.kind.into(),
                name: o.name.clone(),
                namespace: o.namespace.clone(),
            })
            .set(i64::from(o.suspended));
    }

    /// The notification channel the controllers' Recorders post to.
    pub fn notifier(&self) -> Option<crate::notification::Notifier> {
        self.notifier.clone()
    }

    /// The Prometheus text exposition of every metric, per-object gauges freshly computed.
    pub fn render(&self) -> String {
        self.refresh_object_gauges();
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            // Encoding into a String only fails on a formatter error, which String never raises.
            out.clear();
        }
        out
    }
}

/// Decrements the active-workers gauge when a reconcile ends (or is cancelled).
pub struct ActiveGuard<'a> {
    metrics: &'a Metrics,
    labels: ControllerLabels,
}

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.metrics.active.get_or_create(&self.labels).dec();
    }
}

struct ObjectState {
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    namespace: String,
    name: String,
    suspended: bool,
    ready: String,
    revision: String,
    source_name: String,
}

fn ready_of(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
) -> String {
    match conditions.and_then(|c| c.iter().find(|c| c.type_ == READY)) {
        Some(c) if c.status == CondStatus::True.as_str() => "True".into(),
        Some(c) if c.status == CondStatus::False.as_str() => "False".into(),
        _ => "Unknown".into(),
    }
}

fn pending(
    generation: Option<i64>,
    observed: Option<i64>,
    requested: Option<&String>,
    handled: Option<&String>,
) -> bool {
    let new_generation = match (generation, observed) {
        (Some(g), Some(o)) => g > o,
        (Some(_), None) => true,
        _ => false,
    };
    let new_request = requested.is_some() && requested != handled;
    new_generation || new_request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_durations_under_flux_names() {
        let m = Metrics::new();
        m.record(
            KUSTOMIZE_CONTROLLER,
            "Kustomization",
            "flux-system",
            "apps",
            Duration::from_millis(250),
            Outcome::Success,
        );
        m.record(
            KUSTOMIZE_CONTROLLER,
            "Kustomization",
            "flux-system",
            "apps",
            Duration::from_millis(10),
            Outcome::Error,
        );
        let text = m.render();
        assert!(
            text.contains(
                "gotk_reconcile_duration_seconds_count{kind=\"Kustomization\",name=\"apps\",namespace=\"flux-system\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains(
            "controller_runtime_reconcile_total{controller=\"kustomization\",result=\"success\"} 1"
        ));
        assert!(
            text.contains(
                "controller_runtime_reconcile_errors_total{controller=\"kustomization\"} 1"
            )
        );
    }

    #[test]
    fn active_workers_follow_guards() {
        let m = Metrics::new();
        {
            let _a = m.start(SOURCE_CONTROLLER);
            let _b = m.start(SOURCE_CONTROLLER);
            assert!(
                m.render()
                    .contains("controller_runtime_active_workers{controller=\"gitrepository\"} 2")
            );
        }
        assert!(
            m.render()
                .contains("controller_runtime_active_workers{controller=\"gitrepository\"} 0")
        );
    }

    #[test]
    fn pending_means_unobserved_generation_or_unhandled_request() {
        let at = "2026-11-30T00:00:00Z".to_string();
        let other = "2026-11-30T00:00:01Z".to_string();
        assert!(pending(Some(2), Some(1), None, None));
        assert!(pending(Some(1), None, None, None));
        assert!(!pending(Some(1), Some(1), None, None));
        assert!(pending(Some(1), Some(1), Some(&at), None));
        assert!(pending(Some(1), Some(1), Some(&other), Some(&at)));
        assert!(!pending(Some(1), Some(1), Some(&at), Some(&at)));
    }
}
