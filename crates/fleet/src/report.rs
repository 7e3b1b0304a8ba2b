//! One cluster's report: its Kustomizations, HelmReleases and sources (Git, OCI, Helm
//! repositories and charts) with readiness, revisions and, for what is not ready, why. Built
//! from objects already read (a list or a watch's store); it never talks to a cluster.

use ferroflux_api::conditions::{READY, find_condition};
use ferroflux_api::kustomization::SourceKind;
use ferroflux_api::{
    FluxObject, GitRepository, HelmChart, HelmRelease, HelmRepository, Kustomization, OCIRepository,
};
use kube::ResourceExt;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The Flux objects of one cluster, as listed or watched.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    /// Every Kustomization of every namespace.
    pub kustomizations: Vec<Kustomization>,
    /// Every HelmRelease.
    pub helm_releases: Vec<HelmRelease>,
    /// Every GitRepository.
    pub git_repositories: Vec<GitRepository>,
    /// Every OCIRepository.
    pub oci_repositories: Vec<OCIRepository>,
    /// Every HelmRepository.
    pub helm_repositories: Vec<HelmRepository>,
    /// Every HelmChart.
    pub helm_charts: Vec<HelmChart>,
}

/// One Kustomization as the fleet view reports it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationReport {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `status.lastAppliedRevision`.
    pub applied_revision: Option<String>,
    /// `status.lastAttemptedRevision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempted_revision: Option<String>,
    /// `Kind/namespace/name` of the source.
    pub source: String,
    /// The revision of the artifact the source controller fetched.
    pub source_revision: Option<String>,
    /// The source has a revision this Kustomization has not applied.
    pub behind: bool,
    /// `True`, `False` or `Unknown` (`False` when no Ready condition, as flux prints it).
    pub ready: String,
    /// The Ready condition's reason (empty without one).
    pub reason: String,
    /// Whether `spec.suspend` is set.
    pub suspended: bool,
    /// The Ready condition's message.
    pub message: String,
    /// `namespace/name` of each Kustomization it depends on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// One HelmRelease as the fleet view reports it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseReport {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The chart version of the newest release (flux's REVISION).
    pub revision: Option<String>,
    /// `True`, `False` or `Unknown` (`False` when no Ready condition).
    pub ready: String,
    /// The Ready condition's reason (empty without one).
    pub reason: String,
    /// Whether `spec.suspend` is set.
    pub suspended: bool,
    /// The Ready condition's message.
    pub message: String,
    /// `namespace/name` of each HelmRelease it depends on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// One source (GitRepository, OCIRepository, HelmRepository or HelmChart).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceReport {
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// What it follows: the URL and ref (`https://host/repo.git branch main`), or for a chart
    /// the chart name and version.
    pub origin: String,
    /// The revision of the artifact in storage.
    pub revision: Option<String>,
    /// When that artifact was stored (RFC 3339), as the source controller wrote it.
    pub updated: Option<String>,
    /// `True`, `False` or `Unknown` (`False` when no Ready condition).
    pub ready: String,
    /// Whether `spec.suspend` is set.
    pub suspended: bool,
    /// The Ready condition's message.
    pub message: String,
}

impl SourceReport {
    /// `Kind/namespace/name`, as Kustomizations name their source.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// A Kubernetes Event about a Flux object, as the fleet page lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventReport {
    /// `Kind/namespace/name` of the object it is about.
    pub object: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Its reason (`ReconciliationSucceeded`, `HealthCheckFailed`…).
    pub reason: String,
    /// Its message.
    pub message: String,
    /// When it was last seen (RFC 3339), as kubectl picks it: the series' last observation,
    /// else `lastTimestamp`, else `eventTime`, else the object's creation.
    pub last_seen: Option<String>,
    /// How many times it happened (1 for a single one).
    pub count: i64,
}

/// The kinds whose Events the fleet page lists: those of Flux's APIs.
const FLUX_GROUP: &str = ".toolkit.fluxcd.io/";

impl EventReport {
    /// The report of a `core/v1` Event, when it is about a Flux object.
    pub fn from_event(e: &k8s_openapi::api::core::v1::Event) -> Option<EventReport> {
        Self::seen(e).map(|(_, r)| r)
    }

    /// The report with the time it was last seen.
    fn seen(
        e: &k8s_openapi::api::core::v1::Event,
    ) -> Option<(Option<k8s_openapi::jiff::Timestamp>, EventReport)> {
        let o = &e.involved_object;
        if !o
            .api_version
            .as_deref()
            .is_some_and(|v| v.contains(FLUX_GROUP))
        {
            return None;
        }
        let last_seen = e
            .series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
            .or(e.last_timestamp.as_ref().map(|t| t.0))
            .or(e.event_time.as_ref().map(|t| t.0))
            .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let report = EventReport {
            object: format!(
                "{}/{}/{}",
                o.kind.as_deref().unwrap_or(""),
                o.namespace.as_deref().unwrap_or(""),
                o.name.as_deref().unwrap_or("")
            ),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            last_seen: last_seen.map(|t| t.to_string()),
            count: e
                .series
                .as_ref()
                .and_then(|s| s.count.map(i64::from))
                .or(e.count.map(i64::from))
                .unwrap_or(1)
                .max(1),
        };
        Some((last_seen, report))
    }
}

/// The `limit` newest Events about Flux objects, newest first.
pub fn recent_events<'a>(
    events: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::Event>,
    limit: usize,
) -> Vec<EventReport> {
    let mut seen: Vec<(Option<k8s_openapi::jiff::Timestamp>, EventReport)> =
        events.into_iter().filter_map(EventReport::seen).collect();
    // The object and reason keep events of the same time in a stable order.
    seen.sort_by(|(at, a), (bt, b)| {
        bt.cmp(at)
            .then_with(|| a.object.cmp(&b.object))
            .then_with(|| a.reason.cmp(&b.reason))
    });
    seen.truncate(limit);
    seen.into_iter().map(|(_, r)| r).collect()
}

/// One cluster: reachable with its objects, or why not.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReport {
    /// The kubeconfig context.
    pub context: String,
    /// The API server's URL.
    pub server: String,
    /// `ready`, `progressing`, `behind`, `failing`, `unreachable` or `error`.
    pub status: String,
    /// Why the cluster could not be read.
    pub error: Option<String>,
    /// Kustomizations Ready.
    pub ready: usize,
    /// Kustomizations and HelmReleases not Ready (and not suspended).
    pub failing: usize,
    /// Kustomizations being reconciled.
    pub progressing: usize,
    /// Kustomizations suspended.
    pub suspended: usize,
    /// Kustomizations whose source has a revision they have not applied.
    pub behind: usize,
    /// The revisions the Kustomizations' Git sources fetched.
    pub source_revisions: Vec<String>,
    /// The revisions the Kustomizations applied.
    pub applied_revisions: Vec<String>,
    /// Every Kustomization.
    pub kustomizations: Vec<KustomizationReport>,
    /// Present when the cluster has HelmReleases.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helm_releases: Vec<HelmReleaseReport>,
    /// Every source.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceReport>,
    /// The newest Events about Flux objects, newest first (only where they are watched:
    /// `fleet serve`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventReport>,
}

impl ClusterReport {
    /// Failing, unreachable, or not readable: what makes `fleet status` exit 1.
    pub fn unhealthy(&self) -> bool {
        matches!(self.status.as_str(), "failing" | "unreachable" | "error")
    }

    /// The source of this id (`Kind/namespace/name`), when the cluster has it.
    pub fn source(&self, id: &str) -> Option<&SourceReport> {
        self.sources.iter().find(|s| s.id() == id)
    }

    /// A cluster that could not be read: `status` is `unreachable` or `error`.
    pub fn unreachable(context: &str, server: &str, status: &str, error: String) -> ClusterReport {
        ClusterReport {
            context: context.to_string(),
            server: server.to_string(),
            status: status.to_string(),
            error: Some(error),
            ready: 0,
            failing: 0,
            progressing: 0,
            suspended: 0,
            behind: 0,
            source_revisions: vec![],
            applied_revisions: vec![],
            kustomizations: vec![],
            helm_releases: vec![],
            sources: vec![],
            events: vec![],
        }
    }

    /// The report of one reachable cluster from its objects.
    pub fn from_objects(context: &str, server: &str, objects: &Objects) -> ClusterReport {
        let mut report = ClusterReport::unreachable(context, server, "", String::new());
        report.error = None;
        report.sources = sources(objects);
        let artifacts: BTreeMap<String, String> = report
            .sources
            .iter()
            .filter_map(|s| Some((s.id(), s.revision.clone()?)))
            .collect();
        let mut fetched = BTreeSet::new();
        let mut applied = BTreeSet::new();
        let mut items: Vec<&Kustomization> = objects.kustomizations.iter().collect();
        items.sort_by_key(|k| (k.namespace(), k.name_any()));
        for k in items {
            let ns = k.namespace().unwrap_or_default();
            let src = &k.spec.source_ref;
            let src_ns = src.namespace.clone().unwrap_or_else(|| ns.clone());
            let source = format!("{}/{src_ns}/{}", src.kind.as_str(), src.name);
            let source_revision = artifacts.get(&source).cloned();
            let applied_revision = k
                .status
                .as_ref()
                .and_then(|s| s.last_applied_revision.clone());
            let behind = source_revision
                .as_ref()
                .is_some_and(|s| applied_revision.as_ref() != Some(s));
            let ready = find_condition(k.conditions(), READY);
            let suspended = k.suspended();
            if suspended {
                report.suspended += 1;
            } else {
                match ready.map(|c| c.status.as_str()) {
                    Some("True") => report.ready += 1,
                    Some("False") => report.failing += 1,
                    _ => report.progressing += 1,
                }
            }
            // A suspended Kustomization is frozen on purpose: reported, not counted.
            if behind && !suspended {
                report.behind += 1;
            }
            // The Git revisions only: the table's FETCHED column has always meant those.
            if src.kind == SourceKind::GitRepository
                && let Some(s) = &source_revision
            {
                fetched.insert(s.clone());
            }
            if let Some(a) = &applied_revision {
                applied.insert(a.clone());
            }
            report.kustomizations.push(KustomizationReport {
                namespace: ns.clone(),
                name: k.name_any(),
                applied_revision,
                attempted_revision: k
                    .status
                    .as_ref()
                    .and_then(|s| s.last_attempted_revision.clone()),
                source,
                source_revision,
                behind,
                ready: ready.map_or("False".to_string(), |c| c.status.clone()),
                reason: ready.map(|c| c.reason.clone()).unwrap_or_default(),
                suspended,
                message: ready.map_or("waiting to be reconciled".to_string(), |c| {
                    c.message.clone()
                }),
                depends_on: k
                    .spec
                    .depends_on
                    .iter()
                    .flatten()
                    .map(|d| format!("{}/{}", d.namespace.as_deref().unwrap_or(&ns), d.name))
                    .collect(),
            });
        }
        report.source_revisions = fetched.into_iter().collect();
        report.applied_revisions = applied.into_iter().collect();
        report.status = if report.failing > 0 {
            "failing"
        } else if report.progressing > 0 {
            "progressing"
        } else if report.behind > 0 {
            "behind"
        } else {
            "ready"
        }
        .to_string();
        add_helm_releases(&mut report, &objects.helm_releases);
        report
    }
}

/// The HelmReleases of a reachable cluster: listed, and a failing or progressing one makes
/// the cluster's status so (after Kustomizations, which decide first).
fn add_helm_releases(report: &mut ClusterReport, releases: &[HelmRelease]) {
    let mut items: Vec<&HelmRelease> = releases.iter().collect();
    items.sort_by_key(|h| (h.namespace(), h.name_any()));
    let (mut failing, mut progressing) = (0, 0);
    for h in items {
        let ns = h.namespace().unwrap_or_default();
        let ready = find_condition(h.conditions(), READY);
        let suspended = h.suspended();
        if !suspended {
            match ready.map(|c| c.status.as_str()) {
                Some("True") => {}
                Some("False") => failing += 1,
                _ => progressing += 1,
            }
        }
        let status = h.status.as_ref();
        report.helm_releases.push(HelmReleaseReport {
            namespace: ns.clone(),
            name: h.name_any(),
            revision: status
                .and_then(|s| s.history.as_ref())
                .and_then(|history| history.first())
                .map(|s| s.chart_version.clone())
                .or_else(|| status.and_then(|s| s.last_attempted_revision.clone())),
            ready: ready.map_or("False".to_string(), |c| c.status.clone()),
            reason: ready.map(|c| c.reason.clone()).unwrap_or_default(),
            suspended,
            message: ready.map_or("waiting to be reconciled".to_string(), |c| {
                c.message.clone()
            }),
            depends_on: h
                .spec
                .depends_on
                .iter()
                .flatten()
                .map(|d| format!("{}/{}", d.namespace.as_deref().unwrap_or(&ns), d.name))
                .collect(),
        });
    }
    report.failing += failing;
    if failing > 0 {
        report.status = "failing".into();
    } else if progressing > 0 && report.status != "failing" {
        report.status = "progressing".into();
    }
}

fn source_report<K: FluxObject + ResourceExt>(
    kind: &str,
    obj: &K,
    origin: String,
    artifact: Option<&ferroflux_api::Artifact>,
) -> SourceReport {
    let ready = find_condition(obj.conditions(), READY);
    SourceReport {
        kind: kind.to_string(),
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
        origin,
        revision: artifact.map(|a| a.revision.clone()),
        updated: artifact
            .map(|a| a.last_update_time.clone())
            .filter(|t| !t.is_empty()),
        ready: ready.map_or("False".to_string(), |c| c.status.clone()),
        suspended: obj.suspended(),
        message: ready.map_or("waiting to be reconciled".to_string(), |c| {
            c.message.clone()
        }),
    }
}

fn sources(objects: &Objects) -> Vec<SourceReport> {
    let mut out = Vec::new();
    for g in &objects.git_repositories {
        let r = g.spec.r#ref.as_ref();
        let follows = r
            .and_then(|r| {
                r.commit
                    .as_ref()
                    .map(|c| format!("commit {c}"))
                    .or_else(|| r.name.as_ref().map(|n| format!("ref {n}")))
                    .or_else(|| r.semver.as_ref().map(|s| format!("semver {s}")))
                    .or_else(|| r.tag.as_ref().map(|t| format!("tag {t}")))
                    .or_else(|| r.branch.as_ref().map(|b| format!("branch {b}")))
            })
            .unwrap_or_else(|| "branch master".to_string());
        let artifact = g.status.as_ref().and_then(|s| s.artifact.as_ref());
        out.push(source_report(
            "GitRepository",
            g,
            format!("{} {follows}", g.spec.url),
            artifact,
        ));
    }
    for o in &objects.oci_repositories {
        let r = o.spec.r#ref.as_ref();
        let follows = r
            .and_then(|r| {
                r.digest
                    .as_ref()
                    .map(|d| format!("digest {d}"))
                    .or_else(|| r.semver.as_ref().map(|s| format!("semver {s}")))
                    .or_else(|| r.tag.as_ref().map(|t| format!("tag {t}")))
            })
            .unwrap_or_else(|| "tag latest".to_string());
        let artifact = o.status.as_ref().and_then(|s| s.artifact.as_ref());
        out.push(source_report(
            "OCIRepository",
            o,
            format!("{} {follows}", o.spec.url),
            artifact,
        ));
    }
    for h in &objects.helm_repositories {
        let artifact = h.status.as_ref().and_then(|s| s.artifact.as_ref());
        out.push(source_report(
            "HelmRepository",
            h,
            h.spec.url.clone(),
            artifact,
        ));
    }
    for c in &objects.helm_charts {
        let artifact = c.status.as_ref().and_then(|s| s.artifact.as_ref());
        let version = c.spec.version.as_deref().unwrap_or("*");
        out.push(source_report(
            "HelmChart",
            c,
            format!("{} {version}", c.spec.chart),
            artifact,
        ));
    }
    out.sort_by_key(|s| (s.kind.clone(), s.namespace.clone(), s.name.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Event;

    fn event(kind: &str, api_version: &str, reason: &str, last: &str, count: i32) -> Event {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{kind}.{reason}"), "namespace": "flux-system"},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": "apps", "namespace": "flux-system"},
            "reason": reason, "message": format!("{reason} happened"), "type": "Normal",
            "lastTimestamp": last, "count": count,
        }))
        .unwrap()
    }

    #[test]
    fn recent_events_are_flux_ones_newest_first_and_bounded() {
        let ks = "kustomize.toolkit.fluxcd.io/v1";
        let events = [
            event("Kustomization", ks, "Old", "2026-01-01T10:00:00Z", 1),
            event("Pod", "v1", "Scheduled", "2026-01-01T12:00:00Z", 1),
            // A fraction of a second later than Newer: the time, not its text, orders them.
            event("Kustomization", ks, "Newest", "2026-01-01T11:00:00.5Z", 3),
            event("Kustomization", ks, "Newer", "2026-01-01T11:00:00Z", 1),
            event(
                "GitRepository",
                "source.toolkit.fluxcd.io/v1",
                "Fetched",
                "2026-01-01T09:00:00Z",
                1,
            ),
        ];
        let recent = recent_events(&events, 3);
        let reasons: Vec<&str> = recent.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(reasons, ["Newest", "Newer", "Old"]);
        assert_eq!(recent[0].object, "Kustomization/flux-system/apps");
        assert_eq!(recent[0].count, 3);
        assert_eq!(recent[0].message, "Newest happened");
        assert_eq!(
            recent[0].last_seen.as_deref(),
            Some("2026-01-01T11:00:00.5Z")
        );
    }
}
