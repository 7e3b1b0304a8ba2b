//! Object storage: an in-memory index for reads and watches, written through to SQLite when the
//! cluster is durable. A write is acknowledged only after its SQLite transaction committed with
//! `synchronous=FULL`, so whatever a client was told survives a SIGKILL; concurrent writers share
//! one commit (group commit) so durability does not cost one fsync per request.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use crate::error::{ApiError, Error};
use crate::resources::{Registry, resource_from_crd};

/// How many past events a watch can resume from before it gets `410 Gone`.
const HISTORY: usize = 100_000;
const BROADCAST: usize = 65_536;
pub const CRD_KEY: &str = "apiextensions.k8s.io/customresourcedefinitions";
pub const NAMESPACE_KEY: &str = "/namespaces";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// A stored object and its JSON, serialised once when written: reads, lists, watches and the
/// SQLite writer send these bytes instead of serialising the object again.
#[derive(Clone, Debug)]
pub struct Stored {
    pub obj: Arc<Value>,
    pub json: Bytes,
}

impl Stored {
    fn new(obj: Arc<Value>) -> Stored {
        let json = Bytes::from(serde_json::to_vec(obj.as_ref()).unwrap_or_default());
        Stored { obj, json }
    }
}

/// One change, as watches see it.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub key: String,
    pub namespace: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    /// `object` as JSON, when it is the stored object (not for deletions).
    pub json: Option<Bytes>,
    /// The object before the change (for selector transitions).
    pub prev: Option<Arc<Value>>,
}

pub type ObjKey = (String, String);
type Ref = (String, String, String);

enum Op {
    Put {
        key: String,
        ns: String,
        name: String,
        rv: u64,
        body: Bytes,
    },
    Delete {
        key: String,
        ns: String,
        name: String,
    },
}

/// Everything under the store's lock.
pub struct State {
    pub rv: u64,
    pub registry: Registry,
    objects: HashMap<String, BTreeMap<ObjKey, Stored>>,
    /// owner uid → dependents, for garbage collection.
    dependents: HashMap<String, HashSet<Ref>>,
    /// uid → object, to find owners.
    uids: HashMap<String, Ref>,
    history: VecDeque<Arc<Event>>,
    history_floor: u64,
    pending_ops: Vec<Op>,
    /// Whether writes go to SQLite (an in-memory store skips serialising them).
    durable: bool,
    pending_events: Vec<Arc<Event>>,
    /// Delayed readiness the simulated controllers owe, started after the transaction.
    pub pending_ready: Vec<crate::workloads::Pending>,
    /// The simulated data plane's counters.
    pub sim: crate::dataplane::Sim,
}

pub fn meta_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn owner_uids(v: &Value) -> Vec<String> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

impl State {
    fn new(registry: Registry) -> State {
        State {
            rv: 0,
            registry,
            objects: HashMap::new(),
            dependents: HashMap::new(),
            uids: HashMap::new(),
            history: VecDeque::new(),
            history_floor: 0,
            pending_ops: Vec::new(),
            durable: false,
            pending_events: Vec::new(),
            pending_ready: Vec::new(),
            sim: Default::default(),
        }
    }

    pub fn get(&self, key: &str, ns: &str, name: &str) -> Option<&Arc<Value>> {
        self.get_stored(key, ns, name).map(|s| &s.obj)
    }

    pub fn get_stored(&self, key: &str, ns: &str, name: &str) -> Option<&Stored> {
        self.objects
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Objects of one resource in key order, optionally in one namespace, starting after `after`.
    pub fn list<'a>(
        &'a self,
        key: &str,
        ns: Option<&'a str>,
        after: Option<ObjKey>,
    ) -> Box<dyn Iterator<Item = &'a Arc<Value>> + 'a> {
        Box::new(self.list_stored(key, ns, after).map(|s| &s.obj))
    }

    /// Like [`State::list`], with each object's JSON.
    pub fn list_stored<'a>(
        &'a self,
        key: &str,
        ns: Option<&'a str>,
        after: Option<ObjKey>,
    ) -> Box<dyn Iterator<Item = &'a Stored> + 'a> {
        let Some(map) = self.objects.get(key) else {
            return Box::new(std::iter::empty());
        };
        range_of(map, ns, after)
    }

    /// The oldest resourceVersion whose state can still be read or watched from: what came
    /// before it was compacted away.
    pub fn history_floor(&self) -> u64 {
        self.history_floor
    }

    /// Whether the state at resourceVersion `rv` can be read or watched from: not one the
    /// server has not reached (its state was lost, or the client made it up: the API server's
    /// watch cache waits a moment for it, then answers 504), nor one compacted away (410 Gone,
    /// saying `too_old`).
    pub fn readable_at(&self, rv: u64, too_old: impl FnOnce() -> String) -> Result<(), ApiError> {
        if rv > self.rv {
            return Err(ApiError::too_large_rv(rv, self.rv));
        }
        if rv < self.history_floor {
            return Err(ApiError::gone(too_old()));
        }
        Ok(())
    }

    /// The objects of resource `key` as they were at resourceVersion `rv` (between
    /// [`State::history_floor`] and the current version), rebuilt from the current ones by
    /// undoing every change made after it, as an `Exact` read from etcd's history returns them.
    pub fn snapshot(&self, key: &str, rv: u64) -> Snapshot {
        let mut map: Snapshot = self.objects.get(key).cloned().unwrap_or_default();
        for e in self.history.iter().rev() {
            if e.rv <= rv {
                break;
            }
            if e.key != key {
                continue;
            }
            let k = (e.namespace.clone(), meta_str(&e.object, "name").to_string());
            match (&e.kind, &e.prev) {
                (EventType::Added, _) => {
                    map.remove(&k);
                }
                (EventType::Modified | EventType::Deleted, Some(prev)) => {
                    map.insert(k, Stored::new(prev.clone()));
                }
                (_, None) => {}
            }
        }
        map
    }
}

/// One resource's objects at some resourceVersion, in key order.
pub type Snapshot = BTreeMap<ObjKey, Stored>;

/// The objects of `map` in key order, optionally in one namespace, starting after `after`.
pub fn range_of<'a>(
    map: &'a BTreeMap<ObjKey, Stored>,
    ns: Option<&'a str>,
    after: Option<ObjKey>,
) -> Box<dyn Iterator<Item = &'a Stored> + 'a> {
    use std::ops::Bound;
    let start = match (&after, ns) {
        (Some(a), _) => Bound::Excluded(a.clone()),
        (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
        (None, None) => Bound::Unbounded,
    };
    let it = map.range((start, Bound::Unbounded));
    match ns {
        Some(ns) => Box::new(it.take_while(move |((n, _), _)| n == ns).map(|(_, v)| v)),
        None => Box::new(it.map(|(_, v)| v)),
    }
}

impl State {
    /// Keys of every resource that has objects in namespace `ns`.
    pub fn namespaced_refs(&self, ns: &str) -> Vec<Ref> {
        let mut out = Vec::new();
        for (key, map) in &self.objects {
            for ((n, name), _) in map.range((ns.to_string(), String::new())..) {
                if n != ns {
                    break;
                }
                out.push((key.clone(), n.clone(), name.clone()));
            }
        }
        out
    }

    pub fn dependents_of(&self, uid: &str) -> Vec<Ref> {
        let mut v: Vec<Ref> = self
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    pub fn by_uid(&self, uid: &str) -> Option<Ref> {
        self.uids.get(uid).cloned()
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn index_owners(
        &mut self,
        key: &str,
        ns: &str,
        name: &str,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let r: Ref = (key.to_string(), ns.to_string(), name.to_string());
        if let Some(o) = old {
            let uid = meta_str(o, "uid");
            if self.uids.get(uid) == Some(&r) {
                self.uids.remove(uid);
            }
            for u in owner_uids(o) {
                if let Some(s) = self.dependents.get_mut(&u) {
                    s.remove(&r);
                    if s.is_empty() {
                        self.dependents.remove(&u);
                    }
                }
            }
        }
        if let Some(n) = new {
            let uid = meta_str(n, "uid");
            if !uid.is_empty() {
                self.uids.insert(uid.to_string(), r.clone());
            }
            for u in owner_uids(n) {
                self.dependents.entry(u).or_default().insert(r.clone());
            }
        }
    }

    /// Stores `value` (its namespace and name taken from its metadata), giving it the next
    /// resourceVersion. Returns the stored object.
    pub fn put(&mut self, key: &str, value: Value) -> Arc<Value> {
        self.put_stored(key, value).obj
    }

    /// [`State::put`], returning the stored object with its JSON.
    pub fn put_stored(&mut self, key: &str, mut value: Value) -> Stored {
        let rv = self.next_rv();
        if let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let ns = meta_str(&value, "namespace").to_string();
        let name = meta_str(&value, "name").to_string();
        let stored = Stored::new(Arc::new(value));
        let obj = stored.obj.clone();
        let prev = self
            .objects
            .entry(key.to_string())
            .or_default()
            .insert((ns.clone(), name.clone()), stored.clone())
            .map(|s| s.obj);
        self.index_owners(key, &ns, &name, prev.as_deref(), Some(&obj));
        if key == CRD_KEY {
            let crd_name = name.clone();
            self.registry
                .set_crd(&crd_name, resource_from_crd(&obj).ok());
        }
        if self.durable {
            self.pending_ops.push(Op::Put {
                key: key.to_string(),
                ns: ns.clone(),
                name,
                rv,
                body: stored.json.clone(),
            });
        }
        self.pending_events.push(Arc::new(Event {
            rv,
            key: key.to_string(),
            namespace: ns,
            kind: if prev.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            },
            object: obj,
            json: Some(stored.json.clone()),
            prev,
        }));
        stored
    }

    /// Removes an object for good; the DELETED event carries it with a fresh resourceVersion.
    pub fn remove(&mut self, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        let map = self.objects.get_mut(key)?;
        let prev = map.remove(&(ns.to_string(), name.to_string()))?.obj;
        let rv = self.next_rv();
        let mut last = (*prev).clone();
        if let Some(m) = last.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let last = Arc::new(last);
        self.index_owners(key, ns, name, Some(&prev), None);
        if key == CRD_KEY {
            self.registry.set_crd(name, None);
        }
        if self.durable {
            self.pending_ops.push(Op::Delete {
                key: key.to_string(),
                ns: ns.to_string(),
                name: name.to_string(),
            });
        }
        self.pending_events.push(Arc::new(Event {
            rv,
            key: key.to_string(),
            namespace: ns.to_string(),
            kind: EventType::Deleted,
            object: last.clone(),
            json: None,
            prev: Some(prev),
        }));
        Some(last)
    }

    /// Drops every object of one resource (a deleted CRD's custom resources).
    pub fn remove_all(&mut self, key: &str) -> usize {
        let refs: Vec<ObjKey> = self
            .objects
            .get(key)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for (ns, name) in &refs {
            self.remove(key, ns, name);
        }
        refs.len()
    }
}

struct Batch {
    ops: Vec<Op>,
    rv: u64,
    ack: oneshot::Sender<Result<(), String>>,
}

/// The store of one cluster.
pub struct Store {
    state: Mutex<State>,
    persist: Option<mpsc::Sender<Batch>>,
    events: broadcast::Sender<Arc<Event>>,
    pub path: Option<PathBuf>,
}

/// What a watch starts from.
pub struct WatchStart {
    pub backlog: Vec<Arc<Event>>,
    pub rx: broadcast::Receiver<Arc<Event>>,
    pub rv: u64,
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| Error::Database {
        path: path.display().to_string(),
        source,
    }
}

impl Store {
    pub fn memory() -> Store {
        Store::from_state(State::new(Registry::new()), None, None)
    }

    fn from_state(
        mut st: State,
        persist: Option<mpsc::Sender<Batch>>,
        path: Option<PathBuf>,
    ) -> Store {
        st.history_floor = st.rv;
        let (events, _) = broadcast::channel(BROADCAST);
        Store {
            state: Mutex::new(st),
            persist,
            events,
            path,
        }
    }

    /// Opens (or creates) a durable store at `path`, loading every object into memory.
    pub fn open(path: &Path) -> Result<Store, Error> {
        let err = db_err(path);
        let conn = rusqlite::Connection::open(path).map_err(&err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(&err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS objects (
                res TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,
                rv INTEGER NOT NULL, body TEXT NOT NULL,
                PRIMARY KEY (res, ns, name)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);",
        )
        .map_err(&err)?;
        let mut st = State::new(Registry::new());
        st.durable = true;
        st.rv = conn
            .query_row("SELECT v FROM meta WHERE k = 'rv'", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_or(0) as u64;
        let mut rows: Vec<(String, String, String, String)> = Vec::new();
        {
            let mut q = conn
                .prepare("SELECT res, ns, name, body FROM objects")
                .map_err(&err)?;
            let it = q
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(&err)?;
            for row in it {
                rows.push(row.map_err(&err)?);
            }
        }
        for (key, ns, name, body) in rows {
            let value: Value = serde_json::from_str(&body).map_err(|e| Error::Corrupt {
                path: path.display().to_string(),
                message: format!("object {key} {ns}/{name}: {e}"),
            })?;
            if key == CRD_KEY {
                st.registry.set_crd(&name, resource_from_crd(&value).ok());
            }
            let obj = Arc::new(value);
            st.index_owners(&key, &ns, &name, None, Some(&obj));
            let stored = Stored {
                obj,
                json: Bytes::from(body),
            };
            st.objects
                .entry(key)
                .or_default()
                .insert((ns, name), stored);
        }
        let (tx, rx) = mpsc::channel::<Batch>();
        std::thread::Builder::new()
            .name("devcluster-sqlite".into())
            .spawn(move || writer(conn, rx))
            .map_err(|e| Error::Write {
                path: path.display().to_string(),
                source: e,
            })?;
        Ok(Store::from_state(st, Some(tx), Some(path.to_path_buf())))
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A handler that panicked mid-transaction leaves the index as it was at the panic; the
        // next request still sees a consistent map, so a poisoned lock is taken over.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` as one transaction: its changes are published to watches and, for a durable
    /// store, committed to disk before this returns.
    pub async fn write<T>(
        &self,
        f: impl FnOnce(&mut State) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let (result, ack) = {
            let mut st = self.lock();
            let result = f(&mut st);
            let ops = std::mem::take(&mut st.pending_ops);
            let events = std::mem::take(&mut st.pending_events);
            for e in events {
                st.history.push_back(e.clone());
                if st.history.len() > HISTORY
                    && let Some(old) = st.history.pop_front()
                {
                    st.history_floor = old.rv;
                }
                let _ = self.events.send(e);
            }
            let ack = match (&self.persist, ops.is_empty()) {
                (Some(tx), false) => {
                    let (ack, rx) = oneshot::channel();
                    let rv = st.rv;
                    if tx.send(Batch { ops, rv, ack }).is_err() {
                        return Err(ApiError::internal("the storage writer has stopped"));
                    }
                    Some(rx)
                }
                _ => None,
            };
            (result, ack)
        };
        if let Some(rx) = ack {
            match rx.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(ApiError::internal(format!("storage write failed: {e}"))),
                Err(_) => return Err(ApiError::internal("the storage writer has stopped")),
            }
        }
        result
    }

    /// Forgets the change history up to now, as etcd's compaction (and an API server's watch
    /// cache, which starts empty after a restart) do: a watch from an older resourceVersion gets
    /// `410 Gone` from now on. Watches already open keep going.
    pub fn compact(&self) {
        let mut st = self.lock();
        st.history.clear();
        st.history_floor = st.rv;
    }

    /// Starts a watch of resource `key` (all namespaces when `ns` is `None`) from `from`:
    /// `None` replays the current objects as ADDED, `Some(rv)` replays history after rv.
    pub fn watch(
        &self,
        key: &str,
        ns: Option<&str>,
        from: Option<u64>,
    ) -> Result<WatchStart, ApiError> {
        let st = self.lock();
        let rx = self.events.subscribe();
        let backlog = match from {
            Some(rv) => {
                st.readable_at(rv, || {
                    format!("too old resource version: {rv} ({})", st.history_floor)
                })?;
                st.history
                    .iter()
                    .filter(|e| e.rv > rv && e.key == key && ns.is_none_or(|n| e.namespace == n))
                    .cloned()
                    .collect()
            }
            None => st
                .list_stored(key, ns, None)
                .map(|s| {
                    Arc::new(Event {
                        rv: st.rv,
                        key: key.to_string(),
                        namespace: meta_str(&s.obj, "namespace").to_string(),
                        kind: EventType::Added,
                        object: s.obj.clone(),
                        json: Some(s.json.clone()),
                        prev: None,
                    })
                })
                .collect(),
        };
        Ok(WatchStart {
            backlog,
            rx,
            rv: st.rv,
        })
    }
}

fn writer(mut conn: rusqlite::Connection, rx: mpsc::Receiver<Batch>) {
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        while batches.len() < 512 {
            match rx.try_recv() {
                Ok(b) => batches.push(b),
                Err(_) => break,
            }
        }
        let result = commit(&mut conn, &batches).map_err(|e| e.to_string());
        for b in batches {
            let _ = b.ack.send(result.clone());
        }
    }
}

fn commit(conn: &mut rusqlite::Connection, batches: &[Batch]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO objects (res, ns, name, rv, body) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (res, ns, name) DO UPDATE SET rv = excluded.rv, body = excluded.body",
        )?;
        let mut del =
            tx.prepare_cached("DELETE FROM objects WHERE res = ?1 AND ns = ?2 AND name = ?3")?;
        for b in batches {
            for op in &b.ops {
                match op {
                    Op::Put {
                        key,
                        ns,
                        name,
                        rv,
                        body,
                    } => {
                        let body = std::str::from_utf8(body)
                            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                        put.execute(rusqlite::params![key, ns, name, *rv as i64, body])?;
                    }
                    Op::Delete { key, ns, name } => {
                        del.execute(rusqlite::params![key, ns, name])?;
                    }
                }
            }
        }
        let rv = batches.iter().map(|b| b.rv).max().unwrap_or(0);
        tx.execute(
            "INSERT INTO meta (k, v) VALUES ('rv', ?1) ON CONFLICT (k) DO UPDATE SET v = max(v, excluded.v)",
            [rv as i64],
        )?;
    }
    tx.commit()
}
