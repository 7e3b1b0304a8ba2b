//! The list-then-watch loop behind `get --watch` and `events --watch`, made to outlive what
//! real API servers do to a watch: close it (their own time limit, a restart, a proxy), break
//! its connection, or answer `410 Gone` ("Expired") because the version it resumes from was
//! compacted away.
//!
//! `kubectl get -w`, `kubectl events -w`, `flux get --watch` and `flux events --watch` all read
//! one watch and stop when it ends. kubectl (client-go's `UntilWithoutRetry`) exits 0 without a
//! word, every later change missed (crates/devcluster/tests/devcluster/kubectl.rs shows it); `flux events
//! --watch` does the same; `flux get --watch` fails with `✗ watch closed before
//! UntilWithoutRetry timeout`, or on a 410 with `✗ Impossible to cast type &v1.Status{…}`. We
//! keep going the way client-go's informers (its reflector) and `RetryWatcher` do, printing
//! nothing about it, as they print nothing at the default log level: a closed or broken watch
//! resumes from the last version seen (bookmarks keep it fresh), retrying with a growing pause
//! while the server is unreachable; a 410 lists again from the newest state and reports only
//! what differs from what was already reported, so an object that did not change is never
//! printed twice.
//!
//! The loop ends, with `Ok`, at `--timeout` or on Ctrl-C (SIGINT), listened for from before
//! the first row: a row is written whole by the caller before the loop looks at the signal
//! again, so no line is ever cut in half.

use crate::cluster::Cluster;
use anyhow::anyhow;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::signal::unix::Signal;
use tokio::time::Sleep;

/// What the caller is told about one object.
#[derive(Debug)]
pub enum Change<K> {
    /// New, or changed since it was last reported.
    Applied(K),
    /// Gone (its last known state).
    Deleted(K),
}

/// The pause before trying again after a failed watch or list: client-go's `RetryWatcher`
/// starts at 800 ms and doubles; a terminal user is capped sooner than its 30 s.
struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MAX: Duration = Duration::from_secs(8);

    fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
    fn take(&mut self, at_least: Duration) -> Duration {
        let wait = self.next.max(at_least);
        self.next = (self.next * 2).min(Self::MAX);
        wait
    }
}

/// How long a watch may stay silent before it is taken for dead: kube asks the server to end
/// every watch after 290 s (`timeoutSeconds`), so a watch still open and silent well past that
/// sits on a connection whose server went away without closing it (a partition, a host that
/// died); it is opened again like any watch that ended.
const SILENCE: Duration = Duration::from_secs(290 + 60);

/// Why the loop stops waiting.
struct Stop;

/// The deadline and Ctrl-C, checked around every wait of the loop.
struct Guard {
    deadline: Pin<Box<Sleep>>,
    interrupt: Option<Signal>,
}

impl Guard {
    async fn run<T>(&mut self, work: impl Future<Output = T>) -> Result<T, Stop> {
        let interrupt = &mut self.interrupt;
        let interrupted = async {
            match interrupt.as_mut() {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            Some(()) = interrupted => Err(Stop),
            _ = self.deadline.as_mut() => Err(Stop),
            v = work => Ok(v),
        }
    }

    /// Waits the backoff's next pause (at least `at_least`) before trying again.
    async fn back_off(&mut self, backoff: &mut Backoff, at_least: Duration) -> Result<(), Stop> {
        let wait = backoff.take(at_least);
        self.run(tokio::time::sleep(wait)).await
    }
}

/// The key an object is remembered by: its uid (a re-created object is a new one), else its
/// namespace and name.
fn key<K: ResourceExt>(obj: &K) -> String {
    match obj.uid() {
        Some(uid) if !uid.is_empty() => uid,
        _ => format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()),
    }
}

/// Whether `known` already holds `obj` at its current version (reported, nothing new).
fn unchanged<K: kube::Resource>(known: &HashMap<String, K>, k: &str, obj: &K) -> bool {
    known
        .get(k)
        .is_some_and(|old| old.resource_version() == obj.resource_version())
}

/// What a fresh list says changed since `known` was last reported: objects new or at another
/// version, then the ones no longer listed. `known` becomes the list.
fn relist<K: kube::Resource + Clone>(
    known: &mut HashMap<String, K>,
    items: Vec<K>,
) -> Vec<Change<K>> {
    let mut changes = Vec::new();
    let mut present = HashMap::with_capacity(items.len());
    for obj in items {
        let k = key(&obj);
        if !unchanged(known, &k, &obj) {
            changes.push(Change::Applied(obj.clone()));
        }
        present.insert(k, obj);
    }
    for (k, old) in known.drain() {
        if !present.contains_key(&k) {
            changes.push(Change::Deleted(old));
        }
    }
    *known = present;
    changes
}

/// Whether a list or watch failure is one retrying cannot help: not allowed (any more), or the
/// kind is gone.
fn hopeless(status: &kube::core::Status) -> bool {
    matches!(status.code, 401 | 403 | 404)
}

/// Whether a watch or list failure means "start over from a new list": the version is too
/// old (410), or newer than the server knows (its state was restored or lost), as client-go's
/// reflector decides.
fn expired(status: &kube::core::Status) -> bool {
    let too_large = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "ResourceVersionTooLarge")
    });
    status.code == 410 || status.reason == "Expired" || status.reason == "Gone" || too_large
}

/// Writes `text` to stdout at once: a reader of a pipe sees each row as it arrives, not when a
/// buffer fills.
pub fn write_now(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Lists `api` (narrowed by `fields`), hands every object to `report` as
/// [`Change::Applied`], then every change until `cluster.timeout` or Ctrl-C, surviving closed
/// and broken watches and 410s as the module says. `report` gets a batch at a time (the first
/// list, a re-list's differences, or one watch event) and writes it out.
/// `what` names the objects in errors ("Kustomization objects").
pub async fn list_and_watch<K, F>(
    cluster: &Cluster,
    api: &Api<K>,
    fields: Option<&str>,
    what: &str,
    interrupt: Option<Signal>,
    mut report: F,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Vec<Change<K>>) -> anyhow::Result<()>,
{
    let mut guard = Guard {
        deadline: Box::pin(tokio::time::sleep(cluster.timeout)),
        interrupt,
    };
    let mut lp = ListParams::default();
    let mut wp = WatchParams::default();
    if let Some(f) = fields {
        lp = lp.fields(f);
        wp = wp.fields(f);
    }
    let mut known: HashMap<String, K> = HashMap::new();
    let mut version = String::new();
    let mut need_list = true;
    let mut listed_once = false;
    let mut backoff = Backoff::new();
    loop {
        if need_list {
            let listing = format!("listing {what}");
            let listed = if listed_once {
                guard.run(api.list(&lp)).await.map(|r| {
                    r.map_err(|e| match e {
                        kube::Error::Api(s) if hopeless(&s) => {
                            Some(anyhow!("{listing}: {}", s.message))
                        }
                        _ => None,
                    })
                })
            } else {
                // The first list says whether the command can work at all, in the words
                // every command uses for an unreachable cluster.
                guard
                    .run(cluster.call(&listing, api.list(&lp)))
                    .await
                    .map(|r| r.map_err(Some))
            };
            let list = match listed {
                Err(Stop) => return Ok(()),
                Ok(Ok(list)) => list,
                Ok(Err(Some(fatal))) => return Err(fatal),
                // Unreachable for now (a restart): try again after a pause.
                Ok(Err(None)) => {
                    if guard.back_off(&mut backoff, Duration::ZERO).await.is_err() {
                        return Ok(());
                    }
                    continue;
                }
            };
            listed_once = true;
            need_list = false;
            version = list.metadata.resource_version.unwrap_or_default();
            let changes = relist(&mut known, list.items);
            if !changes.is_empty() {
                report(changes)?;
            }
        }

        let opened = match guard.run(api.watch(&wp, &version)).await {
            Err(Stop) => return Ok(()),
            Ok(opened) => opened,
        };
        let stream = match opened {
            Ok(stream) => stream,
            Err(kube::Error::Api(status)) if expired(&status) => {
                need_list = true;
                continue;
            }
            Err(kube::Error::Api(status)) if hopeless(&status) => {
                return Err(anyhow!("watching {what}: {}", status.message));
            }
            // Unreachable (a restart), or an error the client did not retry itself.
            Err(_) => {
                if guard.back_off(&mut backoff, Duration::ZERO).await.is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        let mut pause = None;
        let mut heard = false;
        loop {
            let event = match guard
                .run(tokio::time::timeout(SILENCE, stream.next()))
                .await
            {
                Err(Stop) => return Ok(()),
                Ok(Ok(event)) => event,
                Ok(Err(_silent)) => {
                    pause = Some(Duration::ZERO);
                    break;
                }
            };
            let quiet = !heard;
            heard = true;
            match event {
                // Closed by the server (its time limit, a restart): resume from the last
                // version seen, at once unless it closed without a word (then it may close
                // the next one alike: pause first).
                None => {
                    if quiet {
                        pause = Some(Duration::ZERO);
                    }
                    break;
                }
                // The connection broke mid-stream: the same.
                Some(Err(_)) => {
                    pause = Some(Duration::ZERO);
                    break;
                }
                Some(Ok(WatchEvent::Added(obj))) | Some(Ok(WatchEvent::Modified(obj))) => {
                    backoff.reset();
                    if let Some(v) = obj.resource_version() {
                        version = v;
                    }
                    let k = key(&obj);
                    if unchanged(&known, &k, &obj) {
                        continue;
                    }
                    known.insert(k, obj.clone());
                    report(vec![Change::Applied(obj)])?;
                }
                Some(Ok(WatchEvent::Deleted(obj))) => {
                    backoff.reset();
                    if let Some(v) = obj.resource_version() {
                        version = v;
                    }
                    known.remove(&key(&obj));
                    report(vec![Change::Deleted(obj)])?;
                }
                Some(Ok(WatchEvent::Bookmark(b))) => {
                    backoff.reset();
                    version = b.metadata.resource_version;
                }
                Some(Ok(WatchEvent::Error(status))) if expired(&status) => {
                    need_list = true;
                    break;
                }
                // Any other error the server ends a watch with (a timeout, an internal error):
                // try again after the pause it asks for, as client-go's RetryWatcher does.
                Some(Ok(WatchEvent::Error(status))) => {
                    let asked = status
                        .details
                        .as_ref()
                        .map(|d| Duration::from_secs(u64::from(d.retry_after_seconds)))
                        .unwrap_or_default();
                    pause = Some(asked);
                    break;
                }
            }
        }
        if let Some(at_least) = pause
            && guard.back_off(&mut backoff, at_least).await.is_err()
        {
            return Ok(());
        }
    }
}
