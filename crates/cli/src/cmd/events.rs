//! `ferroflux events [--for Kind[/name]] [-A] [--types Normal,Warning] [-w]`: the Kubernetes
//! events of Flux objects, as `flux events` prints them. Events are listed through both
//! `core/v1` and `events.k8s.io/v1` (one store on a real API server, counted once by uid), so the
//! output is the same whichever API the controller wrote with.
//!
//! `--watch` prints the events there are, then each new or updated one as it arrives, until
//! `--timeout` or Ctrl-C, as flux does: the header with the first row only, each later row
//! padded on its own. It watches `core/v1` alone, as flux does; both APIs are views of one
//! store, so nothing is missed and nothing is printed twice.

use crate::cluster::{Cluster, KubeArgs};
use crate::output::progress;
use crate::output::table::{StreamedRows, flux_table};
use anyhow::{anyhow, bail};
use clap::Args;
use ferroflux_api::Kustomization;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Only events of this object (`Kind/name`) or kind (`Kind`); a Kustomization's source's
    /// events are included.
    #[arg(long = "for")]
    for_selector: Option<String>,
    /// Events of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only events of these types (Normal, Warning).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Print the events there are, then stream new ones until --timeout or Ctrl-C.
    #[arg(short = 'w', long)]
    watch: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

/// The kinds `flux events` shows events of.
const FLUX_KINDS: &[&str] = &[
    "Kustomization",
    "HelmRelease",
    "Alert",
    "Receiver",
    "Provider",
    "ImagePolicy",
    "HelmChart",
    "GitRepository",
    "OCIRepository",
    "Bucket",
    "HelmRepository",
    "ImageUpdateAutomation",
    "ImageRepository",
    "ArtifactGenerator",
];

/// An event, whichever API it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub uid: String,
    pub namespace: String,
    pub type_: String,
    pub reason: String,
    pub kind: String,
    pub name: String,
    pub object_namespace: String,
    pub message: String,
    pub count: i64,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
    /// `eventTime` (a micro-time, preferred over `first` when set).
    pub event_time: Option<Timestamp>,
    pub series: Option<(i64, Option<Timestamp>)>,
}

fn ts(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|s| s.parse().ok())
}

impl Event {
    /// From a `core/v1` Event.
    pub fn from_core(v: &Value) -> Event {
        Event {
            uid: v["metadata"]["uid"].as_str().unwrap_or_default().into(),
            namespace: v["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .into(),
            type_: v["type"].as_str().unwrap_or_default().into(),
            reason: v["reason"].as_str().unwrap_or_default().into(),
            kind: v["involvedObject"]["kind"]
                .as_str()
                .unwrap_or_default()
                .into(),
            name: v["involvedObject"]["name"]
                .as_str()
                .unwrap_or_default()
                .into(),
            object_namespace: v["involvedObject"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .into(),
            message: v["message"].as_str().unwrap_or_default().into(),
            count: v["count"].as_i64().unwrap_or(0),
            first: ts(&v["firstTimestamp"]),
            last: ts(&v["lastTimestamp"]),
            event_time: ts(&v["eventTime"]),
            series: v["series"].as_object().map(|s| {
                (
                    s.get("count").and_then(Value::as_i64).unwrap_or(0),
                    s.get("lastObservedTime").and_then(ts),
                )
            }),
        }
    }

    /// From an `events.k8s.io/v1` Event (the API kube-rs's recorder writes).
    pub fn from_events_v1(v: &Value) -> Event {
        Event {
            uid: v["metadata"]["uid"].as_str().unwrap_or_default().into(),
            namespace: v["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .into(),
            type_: v["type"].as_str().unwrap_or_default().into(),
            reason: v["reason"].as_str().unwrap_or_default().into(),
            kind: v["regarding"]["kind"].as_str().unwrap_or_default().into(),
            name: v["regarding"]["name"].as_str().unwrap_or_default().into(),
            object_namespace: v["regarding"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .into(),
            message: v["note"].as_str().unwrap_or_default().into(),
            count: v["deprecatedCount"].as_i64().unwrap_or(0),
            first: ts(&v["deprecatedFirstTimestamp"]),
            last: ts(&v["deprecatedLastTimestamp"]),
            event_time: ts(&v["eventTime"]),
            series: v["series"].as_object().map(|s| {
                (
                    s.get("count").and_then(Value::as_i64).unwrap_or(0),
                    s.get("lastObservedTime").and_then(ts),
                )
            }),
        }
    }

    /// The time events are sorted by, as kubectl and flux pick it.
    fn sort_time(&self) -> Option<Timestamp> {
        if let Some((_, Some(t))) = self.series {
            return Some(t);
        }
        self.last.or(self.event_time)
    }

    /// The LAST SEEN cell: `5m`, or `5m (x3 over 10m)` for repeated events.
    fn last_seen(&self, now: Timestamp) -> String {
        let since = |t: Option<Timestamp>| match t {
            Some(t) => human_duration(now.duration_since(t).as_secs()),
            None => "<unknown>".to_string(),
        };
        let first = if self.event_time.is_some() {
            since(self.event_time)
        } else {
            since(self.first)
        };
        if let Some((count, last)) = self.series {
            format!("{} (x{count} over {first})", since(last))
        } else if self.count > 1 {
            format!("{} (x{} over {first})", since(self.last), self.count)
        } else {
            first
        }
    }
}

/// apimachinery's `HumanDuration`, which kubectl and flux print ages with.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Which events to show: a kind, optionally one object of it, plus the objects it refers to.
#[derive(Debug, Default)]
struct Filter {
    /// (kind, name, namespace); name empty means every object of the kind in the namespaces
    /// listed.
    wanted: Vec<(String, String, Option<String>)>,
    types: Vec<String>,
}

impl Filter {
    fn keeps(&self, e: &Event) -> bool {
        if !FLUX_KINDS.contains(&e.kind.as_str()) {
            return false;
        }
        if !self.types.is_empty() && !self.types.iter().any(|t| t.eq_ignore_ascii_case(&e.type_)) {
            return false;
        }
        if self.wanted.is_empty() {
            return true;
        }
        self.wanted.iter().any(|(kind, name, ns)| {
            kind == &e.kind
                && (name.is_empty() || name == &e.name)
                && ns.as_ref().is_none_or(|ns| ns == &e.namespace)
        })
    }
}

fn headers(show_namespace: bool) -> Vec<&'static str> {
    let mut headers = vec!["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"];
    if show_namespace {
        headers.insert(0, "NAMESPACE");
    }
    headers
}

fn row(e: &Event, show_namespace: bool, now: Timestamp) -> Vec<String> {
    let mut row = vec![
        e.last_seen(now),
        e.type_.clone(),
        e.reason.clone(),
        format!("{}/{}", e.kind, e.name),
        e.message.clone(),
    ];
    if show_namespace {
        row.insert(0, e.namespace.clone());
    }
    row
}

/// Renders events as `flux events` does, sorted oldest first.
pub fn render(mut events: Vec<Event>, show_namespace: bool, now: Timestamp) -> String {
    events.sort_by_key(|e| e.sort_time());
    let rows: Vec<Vec<String>> = events.iter().map(|e| row(e, show_namespace, now)).collect();
    flux_table(&headers(show_namespace), &rows)
}

pub async fn run(args: EventsArgs) -> anyhow::Result<ExitCode> {
    for t in &args.types {
        if !t.eq_ignore_ascii_case("Normal") && !t.eq_ignore_ascii_case("Warning") {
            bail!("type '{t}' not supported. Supported types are Normal, Warning");
        }
    }
    async {
        // One listener for the whole command, from before the first row: a Ctrl-C that answers
        // a row, or comes while one is printed, ends the watch cleanly.
        let interrupt = args
            .watch
            .then(crate::fluxobj::listen_for_interrupt)
            .flatten();
        let cluster = if args.watch {
            Cluster::connect_watching(&args.kube).await?
        } else {
            Cluster::connect(&args.kube).await?
        };
        let ns = args.kube.namespace.clone();
        let mut filter = Filter {
            types: args.types.clone(),
            ..Default::default()
        };
        let mut other_namespace = false;
        if let Some(sel) = &args.for_selector {
            let (kind, name) = match sel.split_once('/') {
                Some((k, n)) => (k.to_string(), n.to_string()),
                None => (sel.clone(), String::new()),
            };
            if kind.is_empty() {
                bail!("--for selector must be of format <kind>[/<name>]");
            }
            let kind = FLUX_KINDS
                .iter()
                .find(|k| k.eq_ignore_ascii_case(&kind))
                .ok_or_else(|| anyhow!("'{kind}' is not a recognized Flux kind"))?
                .to_string();
            let scope = (!args.all_namespaces).then(|| ns.clone());
            if kind == "Kustomization" && !name.is_empty() {
                let ks: Kustomization = crate::fluxobj::get_object(&cluster, &ns, &name).await?;
                let src = &ks.spec.source_ref;
                let src_ns = src.namespace.clone().unwrap_or_else(|| ns.clone());
                other_namespace = src_ns != ns;
                filter.wanted.push((
                    src.kind.as_str().to_string(),
                    src.name.clone(),
                    Some(src_ns),
                ));
            }
            filter.wanted.push((kind, name, scope));
        }
        let list_ns = if args.all_namespaces || other_namespace {
            None
        } else {
            Some(ns.as_str())
        };
        let show_ns = args.all_namespaces || other_namespace;
        if args.watch {
            return watch_events(&cluster, list_ns, &filter, show_ns, interrupt).await;
        }
        let events = list_events(&cluster, list_ns).await?;
        let events: Vec<Event> = events.into_iter().filter(|e| filter.keeps(e)).collect();
        if events.is_empty() {
            if args.all_namespaces {
                progress::failure("No events found.");
            } else {
                progress::failure(format!("No events found in {ns} namespace."));
            }
            return Ok(());
        }
        print!("{}", render(events, show_ns, Timestamp::now()));
        Ok::<_, anyhow::Error>(())
    }
    .await?;
    Ok(ExitCode::SUCCESS)
}

fn core_events(cluster: &Cluster, namespace: Option<&str>) -> Api<DynamicObject> {
    let core = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Event".into(),
        plural: "events".into(),
    };
    match namespace {
        Some(ns) => Api::namespaced_with(cluster.client.clone(), ns, &core),
        None => Api::all_with(cluster.client.clone(), &core),
    }
}

/// Lists, prints, then streams from the list's resourceVersion, so an event created between
/// the two is still seen; the watch outlives closed and broken connections and 410s
/// ([`crate::output::watchloop`]), and a re-list prints only the events that are new or changed.
async fn watch_events(
    cluster: &Cluster,
    namespace: Option<&str>,
    filter: &Filter,
    show_ns: bool,
    interrupt: Option<tokio::signal::unix::Signal>,
) -> anyhow::Result<()> {
    use crate::output::watchloop::{Change, list_and_watch, write_now};
    let api = core_events(cluster, namespace);
    let mut table = StreamedRows::new(headers(show_ns));
    let report = |changes: Vec<Change<DynamicObject>>| -> anyhow::Result<()> {
        let mut batch = Vec::with_capacity(changes.len());
        for change in changes {
            // A deleted event is not news.
            if let Change::Applied(o) = change {
                let e = Event::from_core(&serde_json::to_value(&o)?);
                if filter.keeps(&e) {
                    batch.push(e);
                }
            }
        }
        batch.sort_by_key(|e| e.sort_time());
        let mut text = String::new();
        for e in &batch {
            text.push_str(&table.row(row(e, show_ns, Timestamp::now())));
        }
        write_now(&text)
    };
    // Bounded by --timeout like flux's watch (its context carries the timeout).
    list_and_watch(cluster, &api, None, "events", interrupt, report).await
}

/// Events of both APIs, each counted once.
async fn list_events(cluster: &Cluster, namespace: Option<&str>) -> anyhow::Result<Vec<Event>> {
    let v1 = ApiResource {
        group: "events.k8s.io".into(),
        version: "v1".into(),
        api_version: "events.k8s.io/v1".into(),
        kind: "Event".into(),
        plural: "events".into(),
    };
    let events_v1: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(cluster.client.clone(), ns, &v1),
        None => Api::all_with(cluster.client.clone(), &v1),
    };
    let lp = ListParams::default();
    let core_list = cluster
        .call("listing events", core_events(cluster, namespace).list(&lp))
        .await?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for item in core_list.items {
        let e = Event::from_core(&serde_json::to_value(&item)?);
        if e.uid.is_empty() || seen.insert(e.uid.clone()) {
            out.push(e);
        }
    }
    // A cluster without events.k8s.io/v1 (or that refuses it) still has its core events.
    if let Ok(list) = cluster
        .call("listing events.k8s.io events", events_v1.list(&lp))
        .await
    {
        for item in list.items {
            let e = Event::from_events_v1(&serde_json::to_value(&item)?);
            if e.uid.is_empty() || seen.insert(e.uid.clone()) {
                out.push(e);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_durations_match_apimachinery() {
        let cases = [
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 5, "3h5m"),
            (30 * 3600, "30h"),
            (3 * 86400, "3d"),
            (3 * 86400 + 7200, "3d2h"),
            (100 * 86400, "100d"),
            (3 * 365 * 86400, "3y"),
            (3 * 365 * 86400 + 86400 * 4, "3y4d"),
            (10 * 365 * 86400, "10y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }

    #[test]
    fn renders_like_flux_events() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let a = Event::from_core(&json!({
            "metadata": {"uid": "1", "namespace": "flux-system"},
            "type": "Normal", "reason": "ReconciliationSucceeded",
            "involvedObject": {"kind": "Kustomization", "name": "apps", "namespace": "flux-system"},
            "message": "Reconciliation finished", "count": 3,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:08:00Z",
        }));
        let b = Event::from_events_v1(&json!({
            "metadata": {"uid": "2", "namespace": "flux-system"},
            "type": "Warning", "reason": "GitOperationFailed",
            "regarding": {"kind": "GitRepository", "name": "repo", "namespace": "flux-system"},
            "note": "auth failed", "eventTime": "2026-01-01T00:09:30.000000Z",
        }));
        let out = render(vec![b, a], false, now);
        let want = "LAST SEEN       \tTYPE   \tREASON                 \tOBJECT            \tMESSAGE                 \n\
2m (x3 over 10m)\tNormal \tReconciliationSucceeded\tKustomization/apps\tReconciliation finished\t\n\
30s             \tWarning\tGitOperationFailed     \tGitRepository/repo\tauth failed            \t\n";
        assert_eq!(out, want);
    }

    #[test]
    fn filter_keeps_flux_kinds_and_types() {
        let e = |kind: &str, name: &str, t: &str| Event {
            uid: String::new(),
            namespace: "flux-system".into(),
            type_: t.into(),
            reason: String::new(),
            kind: kind.into(),
            name: name.into(),
            object_namespace: String::new(),
            message: String::new(),
            count: 1,
            first: None,
            last: None,
            event_time: None,
            series: None,
        };
        let all = Filter::default();
        assert!(all.keeps(&e("Kustomization", "a", "Normal")));
        assert!(!all.keeps(&e("Pod", "a", "Normal")));
        let f = Filter {
            wanted: vec![("Kustomization".into(), "a".into(), None)],
            types: vec!["warning".into()],
        };
        assert!(f.keeps(&e("Kustomization", "a", "Warning")));
        assert!(!f.keeps(&e("Kustomization", "a", "Normal")));
        assert!(!f.keeps(&e("Kustomization", "b", "Warning")));
    }
}
