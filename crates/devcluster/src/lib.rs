//! `ferroflux-devcluster`: a Kubernetes-API-compatible server for local use and tests.
//!
//! It owns the HTTPS endpoint (rustls with a CA of its own per cluster, one bearer token per
//! cluster; a file-backed cluster keeps both, and its address, across restarts), the Kubernetes REST semantics the real `kubectl` and kube-rs rely on (discovery, CRUD, watch,
//! patch, CRDs, Status errors), impersonation with RBAC for impersonated users, fault injection
//! (errors and broken connections) and object storage (in memory, or SQLite that survives
//! SIGKILL).
//! It stores and serves objects and simulates what controllers and kubelets would write (a
//! kwok-style data plane: Nodes, ReplicaSets, Pods; see `dataplane`); it runs no containers.
//! It must know nothing of GitOps: no Flux kinds, no reconcilers, no Git.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferroflux_devcluster::Error> {
//! use ferroflux_devcluster::{Config, DevCluster};
//! let cluster = DevCluster::start(Config::memory("test")).await?;
//! let client = cluster.client().await?;
//! # drop(client);
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```

// Request errors carry a full Status object; they are the cold path and boxing them would only
// add noise to every handler.
#![allow(clippy::result_large_err)]

mod authz;
mod dataplane;
mod discovery;
mod error;
mod events;
mod faults;
mod hpa;
mod identity;
mod immutable;
mod objects;
mod podlogs;
mod protobuf;
mod resources;
mod selector;
mod server;
mod ssa;
mod store;
mod structural;
mod table;
mod tls;
mod util;
mod validate;
mod workloads;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub use error::Error;
pub use faults::{FaultAction, FaultConfig, FaultRule, RequestMatch};
pub use podlogs::LogWriter;

/// The Kubernetes version the clusters report (kubectl's dispatcher picks its client by it).
pub const SERVER_VERSION: &str = "v1.33.1";

/// Where a cluster keeps its objects.
#[derive(Clone, Debug)]
pub enum Storage {
    /// Lost at shutdown; the fastest, for tests.
    Memory,
    /// A SQLite database file (created when missing); every acknowledged write survives a crash.
    /// The cluster's address, token and CA are kept beside it in `<name>.identity.json`.
    File(PathBuf),
}

/// How to start one cluster.
#[derive(Clone, Debug)]
pub struct Config {
    /// The cluster's name (used in its certificate and kubeconfig entries).
    pub name: String,
    /// Where the objects are kept.
    pub storage: Storage,
    /// Address to listen on; `None` picks a free port on 127.0.0.1, or for a file-backed cluster
    /// the address it had before when that is free.
    pub bind: Option<SocketAddr>,
    /// Bearer token clients must present; `None` generates a random one (a file-backed cluster
    /// keeps the one it had).
    pub token: Option<String>,
}

impl Config {
    /// A cluster named `name` that keeps its objects in memory.
    pub fn memory(name: impl Into<String>) -> Config {
        Config {
            name: name.into(),
            storage: Storage::Memory,
            bind: None,
            token: None,
        }
    }

    /// A cluster named `name` whose objects survive restarts in the SQLite file `path`.
    pub fn file(name: impl Into<String>, path: impl Into<PathBuf>) -> Config {
        Config {
            name: name.into(),
            storage: Storage::File(path.into()),
            bind: None,
            token: None,
        }
    }
}

/// Entry point: `DevCluster::start(config)`.
pub struct DevCluster;

struct Serving {
    stop: signal::Sender<bool>,
    task: JoinHandle<()>,
}

/// A cluster that is serving (or stopped, between [`RunningCluster::stop`] and
/// [`RunningCluster::restart`]).
pub struct RunningCluster {
    name: String,
    addr: SocketAddr,
    url: String,
    token: String,
    ca_pem: String,
    ca_der: Vec<u8>,
    tls: Arc<rustls::ServerConfig>,
    store: Arc<store::Store>,
    faults: Arc<faults::Faults>,
    logs: Arc<podlogs::PodLogs>,
    serving: Option<Serving>,
}

const DEFAULT_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl DevCluster {
    /// Opens the storage, creates the default namespaces if missing, binds and starts serving.
    /// The cluster accepts requests as soon as this returns.
    pub async fn start(config: Config) -> Result<RunningCluster, Error> {
        if config.name.is_empty() {
            return Err(Error::Config("a cluster needs a name".into()));
        }
        let store = match &config.storage {
            Storage::Memory => store::Store::memory(),
            Storage::File(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || store::Store::open(&path))
                    .await
                    .map_err(|e| Error::Config(format!("storage open task failed: {e}")))??
            }
        };
        let store = Arc::new(store);
        ensure_namespaces(&store).await?;
        let cluster = config.name.clone();
        store
            .write(|st| {
                dataplane::ensure_nodes(st, &cluster);
                Ok(())
            })
            .await
            .map_err(|e| Error::Config(format!("cannot create the simulated nodes: {e}")))?;
        // A file-backed cluster comes back with the address, token and CA it had, so that
        // kubeconfigs and clients survive its restarts.
        let identity_path = match &config.storage {
            Storage::File(db) => Some(identity::path_for(db)),
            Storage::Memory => None,
        };
        let saved = match &identity_path {
            Some(path) => identity::load(path)?,
            None => None,
        };
        let keys = match &saved {
            Some(saved) => saved.keys.clone(),
            None => tls::generate(&config.name)?,
        };
        let tls = tls::server(&keys)?;
        let listener = match (config.bind, &saved) {
            (Some(bind), _) => bind_to(bind).await?,
            // The saved address may have been taken while the cluster was down: a new port
            // then, rather than no cluster (the kubeconfig is rewritten by whoever owns it).
            (None, Some(saved)) => match TcpListener::bind(saved.address).await {
                Ok(listener) => listener,
                Err(_) => bind_to(SocketAddr::from(([127, 0, 0, 1], 0))).await?,
            },
            (None, None) => bind_to(SocketAddr::from(([127, 0, 0, 1], 0))).await?,
        };
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: "127.0.0.1".to_string(),
            source,
        })?;
        let token = config
            .token
            .clone()
            .or_else(|| saved.as_ref().map(|s| s.token.clone()))
            .unwrap_or_else(util::new_token);
        if let Some(path) = &identity_path {
            identity::save(
                path,
                &identity::Identity {
                    address: addr,
                    token: token.clone(),
                    keys,
                },
            )?;
        }
        let mut c = RunningCluster {
            name: config.name.clone(),
            addr,
            url: format!("https://{addr}"),
            token,
            ca_pem: tls.ca_pem,
            ca_der: tls.ca_der,
            tls: tls.server,
            store,
            faults: Arc::new(faults::Faults::default()),
            logs: Arc::default(),
            serving: None,
        };
        c.serve(listener);
        Ok(c)
    }
}

async fn bind_to(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr).await.map_err(|source| Error::Bind {
        addr: addr.to_string(),
        source,
    })
}

async fn ensure_namespaces(store: &store::Store) -> Result<(), Error> {
    let missing: Vec<&str> = {
        let st = store.lock();
        DEFAULT_NAMESPACES
            .iter()
            .copied()
            .filter(|n| st.get(store::NAMESPACE_KEY, "", n).is_none())
            .collect()
    };
    if missing.is_empty() {
        return Ok(());
    }
    store
        .write(|st| {
            let res = st
                .registry
                .lookup("", "v1", "namespaces")
                .ok_or_else(|| error::ApiError::internal("namespaces are not registered"))?;
            for n in missing {
                let obj =
                    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": n } });
                let obj = objects::admit(st, &res, "v1", None, None, obj, objects::Mode::Create)?;
                st.put(store::NAMESPACE_KEY, obj);
            }
            Ok(())
        })
        .await
        .map_err(|e| Error::Config(format!("cannot create the default namespaces: {e}")))
}

impl RunningCluster {
    fn serve(&mut self, listener: TcpListener) {
        let (stop, rx) = signal::channel(false);
        let app = Arc::new(server::App {
            token: self.token.clone(),
            store: self.store.clone(),
            addr: self.addr.to_string(),
            faults: self.faults.clone(),
            logs: self.logs.clone(),
            shutdown: rx.clone(),
        });
        let task = tokio::spawn(server::serve(
            listener,
            self.tls.clone(),
            server::router(app),
            rx,
            self.faults.resets.subscribe(),
        ));
        self.serving = Some(Serving { stop, task });
    }

    /// The name it was started with.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// The bearer token clients present.
    pub fn token(&self) -> &str {
        &self.token
    }
    /// The cluster CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
    /// The cluster CA certificate, DER.
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }
    /// The database file, for durable clusters.
    pub fn database(&self) -> Option<&Path> {
        self.store.path.as_deref()
    }
    /// Whether the cluster is accepting connections.
    pub fn is_serving(&self) -> bool {
        self.serving.is_some()
    }

    /// A kubeconfig with only this cluster (context, cluster and user named after it).
    pub fn kubeconfig(&self) -> String {
        kubeconfig(&[self], Some(&self.name))
    }

    /// The kube-rs configuration of this cluster: its URL, trusting its CA, sending its token
    /// (and installing the ring TLS provider kube-rs needs). kube-rs's own retry layer is off:
    /// build clients from it with [`ferroflux_kubeclient::client`], which retries as client-go.
    pub async fn kube_config(&self) -> Result<kube::Config, Error> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cerr = |message: String| Error::Client {
            cluster: self.name.clone(),
            message,
        };
        let kc = kube::config::Kubeconfig::from_yaml(&self.kubeconfig())
            .map_err(|e| cerr(e.to_string()))?;
        let mut config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| cerr(e.to_string()))?;
        config.default_retry = false;
        Ok(config)
    }

    /// A kube-rs client for this cluster, trusting its CA and sending its token, retrying as
    /// client-go does.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let cfg = self.kube_config().await?;
        ferroflux_kubeclient::client(cfg).map_err(|e| Error::Client {
            cluster: self.name.clone(),
            message: e.to_string(),
        })
    }

    /// Attaches a log to the Pods of `namespace` carrying every one of `labels`: what is
    /// written to the returned writer is what `GET pods/NAME/log` (`kubectl logs`) serves for
    /// them, as a kubelet serves a container's output. For a process standing for those Pods'
    /// containers, as `ferroflux dev up` runs its controllers.
    pub fn attach_log(&self, namespace: &str, labels: BTreeMap<String, String>) -> LogWriter {
        self.logs.attach(namespace, labels)
    }

    /// Sets the faults the server injects from now on (see [`FaultConfig`]).
    pub fn set_faults(&self, faults: FaultConfig) -> Result<(), Error> {
        self.faults.set(faults).map_err(Error::Config)
    }

    /// Replaces the [`FaultRule`]s in force (an empty list clears them). For each API request
    /// the first rule that matches and has not reached its limit acts.
    pub fn set_fault_rules(&self, rules: Vec<FaultRule>) -> Result<(), Error> {
        self.faults.rules.set(rules).map_err(Error::Config)
    }

    /// Closes every connection open now, without answering what is in flight: watches end
    /// mid-stream and requests in progress see their connection reset (the server goes on
    /// serving new connections).
    pub fn reset_connections(&self) {
        self.faults.resets.reset_all();
    }

    /// How many requests [`FaultRule`]s have acted on since the cluster started: a test waits
    /// on it to know a fault was met.
    pub fn faults_injected(&self) -> u64 {
        self.faults.rules.injected()
    }

    /// Forgets the change history up to the current resourceVersion, as etcd's periodic
    /// compaction does: a watch from an older resourceVersion is answered `410 Gone`
    /// ("Expired") from now on, and a client must list again. Open watches go on.
    pub fn compact_history(&self) {
        self.store.compact();
    }

    /// Stops accepting connections and drops the open ones (watches end); objects are kept.
    pub async fn stop(&mut self) {
        if let Some(s) = self.serving.take() {
            let _ = s.stop.send(true);
            let _ = s.task.await;
        }
    }

    /// Serves again at the same address with the same CA and token, after [`stop`](Self::stop).
    /// Like a restarted API server, whose watch cache starts from the current state, it keeps
    /// no change history: a watch resuming from before the restart is answered `410 Gone` when
    /// anything changed since.
    pub async fn restart(&mut self) -> Result<(), Error> {
        if self.serving.is_some() {
            return Ok(());
        }
        self.store.compact();
        let listener = TcpListener::bind(self.addr)
            .await
            .map_err(|source| Error::Bind {
                addr: self.addr.to_string(),
                source,
            })?;
        self.serve(listener);
        Ok(())
    }

    /// Stops serving and waits until the storage has committed everything acknowledged.
    pub async fn shutdown(mut self) {
        self.stop().await;
    }
}

/// A kube-rs client for one context of a kubeconfig file (such as the one `ferroflux dev up`
/// writes), using the ring TLS provider and retrying as client-go does.
pub async fn client_from_kubeconfig(path: &Path, context: &str) -> Result<kube::Client, Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cerr = |message: String| Error::Client {
        cluster: context.to_string(),
        message,
    };
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| cerr(e.to_string()))?;
    let opts = kube::config::KubeConfigOptions {
        context: Some(context.to_string()),
        ..Default::default()
    };
    let cfg = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| cerr(e.to_string()))?;
    ferroflux_kubeclient::client(cfg).map_err(|e| cerr(e.to_string()))
}

fn b64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A kubeconfig naming one cluster, user and context after each cluster, with the given current
/// context (the first cluster when `None`).
pub fn kubeconfig(clusters: &[&RunningCluster], current: Option<&str>) -> String {
    let q = |s: &str| json!(s).to_string();
    let mut out = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for c in clusters {
        out += &format!(
            "- name: {}\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n",
            q(&c.name),
            q(&c.url),
            b64(c.ca_pem.as_bytes())
        );
    }
    out += "users:\n";
    for c in clusters {
        out += &format!(
            "- name: {}\n  user:\n    token: {}\n",
            q(&c.name),
            q(&c.token)
        );
    }
    out += "contexts:\n";
    for c in clusters {
        out += &format!(
            "- name: {}\n  context:\n    cluster: {}\n    user: {}\n",
            q(&c.name),
            q(&c.name),
            q(&c.name)
        );
    }
    let current = current
        .map(String::from)
        .or_else(|| clusters.first().map(|c| c.name.clone()))
        .unwrap_or_default();
    out += &format!("current-context: {}\n", q(&current));
    out
}

/// Writes [`kubeconfig`] to `path` atomically (temporary file and rename), readable only by
/// the owner since it holds the tokens.
pub fn write_kubeconfig(
    path: &Path,
    clusters: &[&RunningCluster],
    current: Option<&str>,
) -> Result<(), Error> {
    let werr = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp).map_err(werr)?;
        f.write_all(kubeconfig(clusters, current).as_bytes())
            .map_err(werr)?;
        f.sync_all().map_err(werr)?;
    }
    std::fs::rename(&tmp, path).map_err(werr)
}
