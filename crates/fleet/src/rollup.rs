//! The fleet as one thing: which revision each cohort of clusters (those following one source:
//! a repository URL and ref) is at, how many clusters are at each revision and for how long,
//! and every laggard with the reasons it lags. Pure: built from [`ClusterReport`]s and a clock.

use crate::report::{ClusterReport, SourceReport};
use ferroflux_api::conditions::reason;
use ferroflux_api::short_revision;
use serde::Serialize;
use std::collections::BTreeMap;

/// The clusters at one revision of a cohort.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionGroup {
    /// The revision the clusters' Kustomizations applied.
    pub revision: String,
    /// The contexts at it.
    pub clusters: Vec<String>,
    /// When the first cluster's source stored it (RFC 3339), when known.
    pub since: Option<String>,
    /// Seconds from `since` to the rollup's clock.
    pub age_seconds: Option<i64>,
}

/// The clusters following one source (same kind, URL and ref).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cohort {
    /// `GitRepository` or `OCIRepository`.
    pub kind: String,
    /// The URL and ref followed.
    pub origin: String,
    /// The clusters following it, and the unreachable ones (they may be: not known).
    pub total: usize,
    /// The newest revision any cluster's source fetched (by the time it was stored).
    pub newest: Option<String>,
    /// The applied revisions, newest first.
    pub revisions: Vec<RevisionGroup>,
}

/// A cluster behind or unhealthy, and why.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Laggard {
    /// The context.
    pub context: String,
    /// The cluster's status (`failing`, `unreachable`, …).
    pub status: String,
    /// One line per cause: the object and what holds it back.
    pub reasons: Vec<String>,
}

/// How many objects of a kind, and how many of them are ready, failing or suspended.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Count {
    /// All of them.
    pub total: usize,
    /// Ready=True.
    pub ready: usize,
    /// Ready=False, not suspended.
    pub failing: usize,
    /// Suspended.
    pub suspended: usize,
}

impl Count {
    fn add(&mut self, ready: &str, suspended: bool) {
        self.total += 1;
        if suspended {
            self.suspended += 1;
        } else if ready == "True" {
            self.ready += 1;
        } else if ready == "False" {
            self.failing += 1;
        }
    }
}

/// The fleet's rollup.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rollup {
    /// Clusters asked.
    pub clusters: usize,
    /// Clusters per status (`ready`, `failing`, …).
    pub statuses: BTreeMap<String, usize>,
    /// One per source followed.
    pub cohorts: Vec<Cohort>,
    /// Every cluster behind or unhealthy, in the order asked.
    pub laggards: Vec<Laggard>,
    /// Kustomizations of every cluster.
    pub kustomizations: Count,
    /// HelmReleases of every cluster.
    pub helm_releases: Count,
    /// Sources per kind.
    pub sources: BTreeMap<String, Count>,
}

/// Seconds since the epoch of an RFC 3339 timestamp.
fn epoch(t: &str) -> Option<i64> {
    t.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// `now` in seconds since the epoch.
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A short age: `40 s`, `3 min`, `5 h`, `2 d`.
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 86400 {
        format!("{} h", s / 3600)
    } else {
        format!("{} d", s / 86400)
    }
}

/// What a Kustomization or HelmRelease that is not Ready waits for, in a few words.
fn why(kind: &str, id: &str, ready: &str, reason_: &str, suspended: bool, message: &str) -> String {
    if suspended {
        return format!("{kind} {id} suspended");
    }
    match (ready, reason_) {
        (_, reason::DEPENDENCY_NOT_READY) => {
            format!("{kind} {id} dependency not ready: {message}")
        }
        ("False", r) if !r.is_empty() => format!("{kind} {id} failing ({r}): {message}"),
        ("False", _) => format!("{kind} {id} failing: {message}"),
        _ => format!("{kind} {id} progressing: {message}"),
    }
}

/// The rollup of `reports` at `now` (seconds since the epoch).
pub fn rollup(reports: &[ClusterReport], now: i64) -> Rollup {
    let mut statuses = BTreeMap::new();
    let mut kustomizations = Count::default();
    let mut helm_releases = Count::default();
    let mut sources: BTreeMap<String, Count> = BTreeMap::new();
    for r in reports {
        *statuses.entry(r.status.clone()).or_insert(0) += 1;
        for k in &r.kustomizations {
            kustomizations.add(&k.ready, k.suspended);
        }
        for h in &r.helm_releases {
            helm_releases.add(&h.ready, h.suspended);
        }
        for s in &r.sources {
            sources
                .entry(s.kind.clone())
                .or_default()
                .add(&s.ready, s.suspended);
        }
    }
    let unknown = reports.iter().filter(|r| r.error.is_some()).count();
    let cohorts = cohorts(reports, unknown, now);
    let laggards = reports
        .iter()
        .filter_map(|r| laggard(r, &cohorts))
        .collect();
    Rollup {
        clusters: reports.len(),
        statuses,
        cohorts,
        laggards,
        kustomizations,
        helm_releases,
        sources,
    }
}

/// `Kind origin` of the sources Kustomizations use: the cohorts a cluster is in.
fn followed(r: &ClusterReport) -> Vec<(&SourceReport, String)> {
    let mut out: Vec<(&SourceReport, String)> = Vec::new();
    for k in &r.kustomizations {
        if let Some(s) = r.source(&k.source)
            && !out.iter().any(|(o, _)| o.id() == s.id())
        {
            out.push((s, format!("{} {}", s.kind, s.origin)));
        }
    }
    out
}

/// The revision most of a cluster's Kustomizations of this cohort applied (ties: the first by
/// name), or None when none applied anything yet.
fn cluster_revision(r: &ClusterReport, key: &str) -> Option<String> {
    let ids: Vec<String> = followed(r)
        .into_iter()
        .filter(|(_, k)| k == key)
        .map(|(s, _)| s.id())
        .collect();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for k in r.kustomizations.iter().filter(|k| ids.contains(&k.source)) {
        if let Some(a) = &k.applied_revision {
            match counts.iter_mut().find(|(rev, _)| rev == a) {
                Some((_, n)) => *n += 1,
                None => counts.push((a.clone(), 1)),
            }
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(r, _)| r)
}

/// A cohort while it is gathered: kind, origin, the indexes of its clusters, and when each
/// revision was first stored.
type Gathering = (String, String, Vec<usize>, BTreeMap<String, i64>);

fn cohorts(reports: &[ClusterReport], unknown: usize, now: i64) -> Vec<Cohort> {
    let mut by_key: BTreeMap<String, Gathering> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        for (s, key) in followed(r) {
            let entry = by_key
                .entry(key)
                .or_insert_with(|| (s.kind.clone(), s.origin.clone(), vec![], BTreeMap::new()));
            if !entry.2.contains(&i) {
                entry.2.push(i);
            }
            if let Some(rev) = &s.revision {
                let at = s.updated.as_deref().and_then(epoch).unwrap_or(i64::MAX);
                let first = entry.3.entry(rev.clone()).or_insert(at);
                *first = (*first).min(at);
            }
        }
    }
    let mut out = Vec::new();
    for (key, (kind, origin, members, stored)) in by_key {
        // Newest by the time its artifact was first stored; a revision without a time only
        // wins when no revision has one.
        let newest = stored
            .iter()
            .max_by_key(|(_, at)| if **at == i64::MAX { i64::MIN } else { **at })
            .map(|(rev, _)| rev.clone());
        let mut groups: Vec<RevisionGroup> = Vec::new();
        for &i in &members {
            let Some(rev) = cluster_revision(&reports[i], &key) else {
                continue;
            };
            match groups.iter_mut().find(|g| g.revision == rev) {
                Some(g) => g.clusters.push(reports[i].context.clone()),
                None => {
                    let at = stored.get(&rev).copied().filter(|a| *a != i64::MAX);
                    groups.push(RevisionGroup {
                        since: at.and_then(|a| {
                            jiff::Timestamp::from_second(a).ok().map(|t| t.to_string())
                        }),
                        age_seconds: at.map(|a| now - a),
                        revision: rev,
                        clusters: vec![reports[i].context.clone()],
                    })
                }
            }
        }
        // Newest first: the youngest age; unknown ages last, then most clusters first.
        groups.sort_by_key(|g| {
            (
                g.age_seconds.unwrap_or(i64::MAX),
                std::cmp::Reverse(g.clusters.len()),
            )
        });
        out.push(Cohort {
            kind,
            origin,
            total: members.len() + unknown,
            newest,
            revisions: groups,
        });
    }
    out
}

fn laggard(r: &ClusterReport, cohorts: &[Cohort]) -> Option<Laggard> {
    let mut reasons = Vec::new();
    if let Some(e) = &r.error {
        reasons.push(e.clone());
        return Some(Laggard {
            context: r.context.clone(),
            status: r.status.clone(),
            reasons,
        });
    }
    // Sources first: a source that cannot fetch explains everything built from it.
    for (s, key) in followed(r) {
        let id = format!("{} {}/{}", s.kind, s.namespace, s.name);
        if s.suspended {
            reasons.push(format!("{id} suspended"));
        } else if s.revision.is_none() {
            reasons.push(format!("{id} source not fetched yet: {}", s.message));
        } else if s.ready == "False" {
            reasons.push(format!("{id} failing to fetch: {}", s.message));
        }
        let newest = cohorts
            .iter()
            .find(|c| format!("{} {}", c.kind, c.origin) == key)
            .and_then(|c| c.newest.as_ref());
        if let (Some(newest), Some(rev)) = (newest, &s.revision)
            && newest != rev
        {
            reasons.push(format!(
                "{id} source not fetched yet: has {}, the fleet's newest is {}",
                short_revision(rev),
                short_revision(newest)
            ));
        }
    }
    for k in &r.kustomizations {
        let id = format!("{}/{}", k.namespace, k.name);
        if k.suspended || k.ready != "True" {
            reasons.push(why(
                "Kustomization",
                &id,
                &k.ready,
                &k.reason,
                k.suspended,
                &k.message,
            ));
        } else if k.behind {
            reasons.push(format!(
                "Kustomization {id} behind: applied {}, its source has {}",
                short_revision(k.applied_revision.as_deref().unwrap_or("nothing")),
                short_revision(k.source_revision.as_deref().unwrap_or(""))
            ));
        }
    }
    for h in &r.helm_releases {
        if h.suspended || h.ready != "True" {
            let id = format!("{}/{}", h.namespace, h.name);
            reasons.push(why(
                "HelmRelease",
                &id,
                &h.ready,
                &h.reason,
                h.suspended,
                &h.message,
            ));
        }
    }
    if reasons.is_empty() {
        return None;
    }
    Some(Laggard {
        context: r.context.clone(),
        status: r.status.clone(),
        reasons,
    })
}

impl Rollup {
    /// The summary lines: the fleet, one line per cohort revision ("3 of 4 clusters at
    /// main@sha1:abc12345 (3 min)"), HelmReleases and sources counted.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        out.push(format!(
            "{} clusters: {}",
            self.clusters,
            statuses.join(", ")
        ));
        for c in &self.cohorts {
            out.push(format!("{} {}", c.kind, c.origin));
            for g in &c.revisions {
                let age = g
                    .age_seconds
                    .map(|a| format!(" ({})", age(a)))
                    .unwrap_or_default();
                let newest = if c.newest.as_ref() == Some(&g.revision) {
                    ""
                } else {
                    ", not the newest"
                };
                out.push(format!(
                    "  {} of {} clusters at {}{age}{newest}",
                    g.clusters.len(),
                    c.total,
                    short_revision(&g.revision)
                ));
            }
            let at: usize = c.revisions.iter().map(|g| g.clusters.len()).sum();
            if at < c.total {
                out.push(format!(
                    "  {} of {} clusters at no known revision",
                    c.total - at,
                    c.total
                ));
            }
        }
        let count = |what: &str, c: &Count| {
            format!(
                "{what}: {} of {} ready, {} failing, {} suspended",
                c.ready, c.total, c.failing, c.suspended
            )
        };
        out.push(count("Kustomizations", &self.kustomizations));
        if self.helm_releases.total > 0 {
            out.push(count("HelmReleases", &self.helm_releases));
        }
        if !self.sources.is_empty() {
            let parts: Vec<String> = self
                .sources
                .iter()
                .map(|(kind, c)| format!("{} {kind} ({} ready)", c.total, c.ready))
                .collect();
            out.push(format!("Sources: {}", parts.join(", ")));
        }
        out
    }
}
