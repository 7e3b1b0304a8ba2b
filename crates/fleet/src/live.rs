//! The fleet kept current by watches: per cluster, one reflector per Flux kind (list, then
//! watch, resuming and relisting as kube's watcher does, with its backoff while a cluster is
//! down), and one counter every change bumps. `fleet status --watch` and `fleet serve` redraw
//! from it; neither polls. [`Live::start_with_events`] also watches each cluster's Events (what
//! the page's "last events" shows); [`Live::start`] does not, so the status and promotion
//! watches cost what they did.

use crate::report::{ClusterReport, Objects, recent_events};
use ferroflux_api::{
    GitRepository, HelmChart, HelmRelease, HelmRepository, Kustomization, OCIRepository,
};
use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A cluster to watch.
#[derive(Clone)]
pub struct Target {
    /// Its kubeconfig context.
    pub context: String,
    /// Its API server's URL (for messages).
    pub server: String,
    /// A client without a read timeout (a quiet watch is not a dead one).
    pub client: kube::Client,
}

/// What is known of a cluster's connection.
#[derive(Clone, Debug, Default)]
struct Health {
    /// Kinds whose first list completed.
    listed: usize,
    /// The Kustomization watch's last error, cleared by its next event.
    error: Option<String>,
}

struct Stores {
    kustomizations: Store<Kustomization>,
    helm_releases: Store<HelmRelease>,
    git_repositories: Store<GitRepository>,
    oci_repositories: Store<OCIRepository>,
    helm_repositories: Store<HelmRepository>,
    helm_charts: Store<HelmChart>,
    events: Option<Store<k8s_openapi::api::core::v1::Event>>,
}

struct Watched {
    context: String,
    server: String,
    stores: Stores,
    health: Arc<Mutex<Health>>,
    /// The number of kinds watched.
    kinds: usize,
}

/// Every watched cluster; dropping it stops the watches.
pub struct Live {
    clusters: Vec<Watched>,
    changes: watch::Receiver<u64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The number of Flux kinds watched per cluster.
const KINDS: usize = 6;

/// How many Events per cluster a report carries.
pub const EVENTS_PER_CLUSTER: usize = 10;

fn spawn_kind<K>(
    client: &kube::Client,
    primary: bool,
    health: &Arc<Mutex<Health>>,
    changed: &Arc<watch::Sender<u64>>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let api: Api<K> = Api::all(client.clone());
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    let health = health.clone();
    let changed = changed.clone();
    tasks.push(tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut listed = false;
        while let Some(event) = stream.next().await {
            {
                let mut h = match health.lock() {
                    Ok(h) => h,
                    Err(poisoned) => poisoned.into_inner(),
                };
                match event {
                    Ok(watcher::Event::InitDone) if !listed => {
                        listed = true;
                        h.listed += 1;
                        if primary {
                            h.error = None;
                        }
                    }
                    Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => continue,
                    Ok(_) => {
                        if primary {
                            h.error = None;
                        }
                    }
                    // Only the Kustomization watch speaks for the cluster: a cluster
                    // without the HelmRelease or OCIRepository API still has
                    // Kustomizations worth showing, as `fleet status` lists them.
                    Err(e) if primary => h.error = Some(chain(&e)),
                    Err(_) => {
                        if !listed {
                            listed = true;
                            h.listed += 1;
                        }
                    }
                }
            }
            changed.send_modify(|n| *n += 1);
        }
    }));
    reader
}

/// An error and its causes on one line, repeated messages dropped.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(e);
    while let Some(err) = current {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        current = err.source();
    }
    parts.join(": ")
}

impl Live {
    /// Starts watching every target (on the current tokio runtime).
    pub fn start(targets: Vec<Target>) -> Live {
        Live::watch(targets, false)
    }

    /// As [`Live::start`], and each cluster's Events too: every report carries the newest
    /// [`EVENTS_PER_CLUSTER`] Events about Flux objects.
    pub fn start_with_events(targets: Vec<Target>) -> Live {
        Live::watch(targets, true)
    }

    fn watch(targets: Vec<Target>, events: bool) -> Live {
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let mut tasks = Vec::new();
        let mut clusters = Vec::new();
        for t in targets {
            let health = Arc::new(Mutex::new(Health::default()));
            let c = &t.client;
            let stores = Stores {
                kustomizations: spawn_kind(c, true, &health, &tx, &mut tasks),
                helm_releases: spawn_kind(c, false, &health, &tx, &mut tasks),
                git_repositories: spawn_kind(c, false, &health, &tx, &mut tasks),
                oci_repositories: spawn_kind(c, false, &health, &tx, &mut tasks),
                helm_repositories: spawn_kind(c, false, &health, &tx, &mut tasks),
                helm_charts: spawn_kind(c, false, &health, &tx, &mut tasks),
                events: events.then(|| spawn_kind(c, false, &health, &tx, &mut tasks)),
            };
            clusters.push(Watched {
                context: t.context,
                server: t.server,
                stores,
                health,
                kinds: KINDS + usize::from(events),
            });
        }
        Live {
            clusters,
            changes: rx,
            tasks,
        }
    }

    /// A receiver whose value changes with every change seen on any cluster.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Whether every cluster has either listed every kind or failed to.
    pub fn settled(&self) -> bool {
        self.clusters.iter().all(|c| {
            let h = match c.health.lock() {
                Ok(h) => h.clone(),
                Err(p) => p.into_inner().clone(),
            };
            h.listed == c.kinds || h.error.is_some()
        })
    }

    /// Each cluster's report as the watches know it now.
    pub fn reports(&self) -> Vec<ClusterReport> {
        self.clusters
            .iter()
            .map(|c| {
                let h = match c.health.lock() {
                    Ok(h) => h.clone(),
                    Err(p) => p.into_inner().clone(),
                };
                if let Some(e) = h.error {
                    return ClusterReport::unreachable(
                        &c.context,
                        &c.server,
                        "unreachable",
                        format!("cannot watch the cluster ({}): {e}", c.server),
                    );
                }
                if h.listed < c.kinds {
                    return ClusterReport::unreachable(
                        &c.context,
                        &c.server,
                        "connecting",
                        format!("connecting to {}", c.server),
                    );
                }
                let s = &c.stores;
                fn all<K>(store: &Store<K>) -> Vec<K>
                where
                    K: Resource + Clone + 'static,
                    K::DynamicType: std::hash::Hash + Eq + Clone,
                {
                    store.state().iter().map(|o| (**o).clone()).collect()
                }
                let objects = Objects {
                    kustomizations: all(&s.kustomizations),
                    helm_releases: all(&s.helm_releases),
                    git_repositories: all(&s.git_repositories),
                    oci_repositories: all(&s.oci_repositories),
                    helm_repositories: all(&s.helm_repositories),
                    helm_charts: all(&s.helm_charts),
                };
                let mut report = ClusterReport::from_objects(&c.context, &c.server, &objects);
                if let Some(events) = &s.events {
                    let events = events.state();
                    report.events = recent_events(events.iter().map(|e| &**e), EVENTS_PER_CLUSTER);
                }
                report
            })
            .collect()
    }
}
