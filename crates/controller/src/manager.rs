//! The controller process for one cluster: the GitRepository, HelmRepository, HelmChart,
//! OCIRepository, Bucket, ArtifactGenerator, ImageRepository, ImagePolicy, Kustomization and
//! HelmRelease controllers, the
//! artifact file server between them, `/metrics`, `/healthz`, `/readyz`, and optional leader
//! election. `ferroflux controller` runs one; `ferroflux dev up` runs one per local cluster.

use crate::gitrepository;
use crate::kustomization::reconciler::{self, Options};
use crate::leader::{self, LeaderElection};
use crate::metrics::Metrics;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_source::Storage;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How one cluster's controllers run (`ferroflux controller`'s flags).
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// `--storage-path`: where artifacts are stored.
    pub storage_path: PathBuf,
    /// `--storage-addr`: where the artifact server listens (port 0 picks a free one).
    pub storage_addr: SocketAddr,
    /// `--storage-adv-addr`: the `host:port` written into artifact URLs; by default the address
    /// the server actually bound.
    pub storage_adv_addr: Option<String>,
    /// `--allow-file-urls`.
    pub allow_file_urls: bool,
    /// `--metrics-addr`: where `/metrics` is served, if anywhere.
    pub metrics_addr: Option<SocketAddr>,
    /// `--health-addr`: where `/healthz` and `/readyz` are served, if anywhere.
    pub health_addr: Option<SocketAddr>,
    /// Leader election, when several replicas may run.
    pub leader_election: Option<LeaderElection>,
    /// The Kustomization controller's settings.
    pub kustomization: Options,
    /// How many GitRepositories are fetched at once.
    pub source_concurrency: u16,
    /// The HelmRelease controller's settings.
    pub helmrelease: crate::helmrelease::reconciler::Options,
    /// `--cluster-name`: stamped on every event (`event.toolkit.fluxcd.io/cluster`), alert,
    /// commit status context and metric (`cluster` label).
    pub cluster_name: Option<String>,
    /// `--events-addr`: where Flux's event JSON is accepted over HTTP, if anywhere.
    pub events_addr: Option<SocketAddr>,
    /// `--receiver-addr`: where Receivers' webhooks (`/hook/<digest>`) are served, if anywhere.
    pub receiver_addr: Option<SocketAddr>,
    /// The notification dispatcher's rate limit, retries and queues.
    pub notification: crate::notification::dispatch::Options,
}

impl ManagerConfig {
    /// A manager for a local cluster or a test: artifacts on a free loopback port, `file://`
    /// allowed, no leader election, no metrics port, and fast dependency and health polling so a
    /// local change shows up at once.
    pub fn local(storage_path: impl Into<PathBuf>) -> Self {
        ManagerConfig {
            storage_path: storage_path.into(),
            storage_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            storage_adv_addr: None,
            allow_file_urls: true,
            metrics_addr: None,
            health_addr: None,
            leader_election: None,
            kustomization: Options {
                requeue_dependency: Duration::from_secs(1),
                health_poll: Duration::from_millis(200),
                ..Options::default()
            },
            source_concurrency: 2,
            helmrelease: crate::helmrelease::reconciler::Options {
                requeue_dependency: Duration::from_secs(1),
                ..Default::default()
            },
            cluster_name: None,
            events_addr: None,
            receiver_addr: None,
            notification: Default::default(),
        }
    }
}

/// Why the manager stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// An HTTP endpoint (artifacts, metrics, health) could not bind its address.
    #[error("cannot listen on {addr} for {what}: {source}")]
    Bind {
        /// Which endpoint, as the message names it (`the artifact server`...).
        what: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The artifact storage directory could not be prepared.
    #[error("artifact storage: {0}")]
    Storage(#[from] ferroflux_source::Error),
    /// This replica lost the Lease; it stops so that only one leader reconciles.
    #[error("leader election lost: another replica holds the Lease or it could not be renewed")]
    LeadershipLost,
    /// A controller's task ended (panicked or returned) while the manager still ran.
    #[error("the controllers stopped unexpectedly: {0}")]
    Task(String),
}

/// What the HTTP endpoints read.
struct State {
    metrics: Arc<Metrics>,
    /// The controllers' caches have synced (or this replica is a standby, which is ready to
    /// take over, as controller-runtime reports it).
    ready: AtomicBool,
    leader: AtomicBool,
}

/// One cluster's running controllers.
pub struct Manager {
    shutdown: watch::Sender<bool>,
    /// `None` once [`Manager::wait`] has seen it end.
    task: Option<JoinHandle<Result<(), ManagerError>>>,
    servers: Vec<JoinHandle<()>>,
    state: Arc<State>,
    storage_url: String,
    metrics_url: Option<String>,
    health_url: Option<String>,
    events_url: Option<String>,
    receiver_url: Option<String>,
    dispatcher: JoinHandle<()>,
}

/// How long a stopping manager waits for reconciles and connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

type BoxedShutdown = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// Resolves once `rx` carries `true` (or its sender is gone).
fn fired(mut rx: watch::Receiver<bool>) -> BoxedShutdown {
    Box::pin(async move {
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    })
}

impl Manager {
    /// Binds the servers, then runs the controllers in the background (after winning the
    /// Lease, with leader election). Returns once every port is listening.
    pub async fn start(
        client: kube::Client,
        kube_config: kube::Config,
        config: ManagerConfig,
    ) -> Result<Manager, ManagerError> {
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut servers = Vec::new();

        let listener = bind("the artifact server", config.storage_addr).await?;
        let bound = listener.local_addr().map_err(|source| ManagerError::Bind {
            what: "the artifact server",
            addr: config.storage_addr,
            source,
        })?;
        let advertised = config
            .storage_adv_addr
            .clone()
            .unwrap_or_else(|| bound.to_string());
        let storage = Storage::new(&config.storage_path, format!("http://{advertised}"))?;
        let storage_url = storage.base_url().to_string();
        let files = ferroflux_source::router(config.storage_path.clone());
        servers.push(serve(listener, files, shutdown_rx.clone()));

        let (notifier, events) =
            crate::notification::Notifier::channel(config.cluster_name.clone());
        let dispatcher = crate::notification::dispatch::spawn(
            client.clone(),
            events,
            config.notification.clone(),
        );
        let mut events_url = None;
        let mut receiver_url = None;
        for (what, addr) in [
            ("the events endpoint", config.events_addr),
            ("the webhook receiver", config.receiver_addr),
        ] {
            let Some(addr) = addr else { continue };
            let listener = bind(what, addr).await?;
            let local = listener.local_addr().map_err(|source| ManagerError::Bind {
                what,
                addr,
                source,
            })?;
            let router = if config.events_addr == Some(addr) && events_url.is_none() {
                events_url = Some(format!("http://{local}"));
                crate::notification::server::events_router(notifier.clone())
            } else {
                receiver_url = Some(format!("http://{local}"));
                crate::notification::receiver::router(
                    client.clone(),
                    config.notification.google_keys_url.clone(),
                )
            };
            servers.push(serve(listener, router, shutdown_rx.clone()));
        }
        let state = Arc::new(State {
            metrics: Arc::new(Metrics::for_cluster(
                config.cluster_name.as_deref(),
                Some(notifier),
            )),
            ready: AtomicBool::new(false),
            leader: AtomicBool::new(config.leader_election.is_none()),
        });
        let mut metrics_url = None;
        let mut health_url = None;
        let mut bound_http: Vec<(SocketAddr, SocketAddr)> = Vec::new();
        for (what, addr) in [
            ("metrics", config.metrics_addr),
            ("health probes", config.health_addr),
        ] {
            let Some(addr) = addr else { continue };
            // The same flag value for both serves both from one listener.
            let local = match bound_http.iter().find(|(asked, _)| *asked == addr) {
                Some((_, local)) => *local,
                None => {
                    let listener = bind(what, addr).await?;
                    let local = listener.local_addr().map_err(|source| ManagerError::Bind {
                        what,
                        addr,
                        source,
                    })?;
                    servers.push(serve(
                        listener,
                        http_router(state.clone()),
                        shutdown_rx.clone(),
                    ));
                    bound_http.push((addr, local));
                    local
                }
            };
            if what == "metrics" {
                metrics_url = Some(format!("http://{local}/metrics"));
            } else {
                health_url = Some(format!("http://{local}"));
            }
        }

        let task = tokio::spawn(run_controllers(
            client,
            kube_config,
            config,
            storage,
            state.clone(),
            shutdown_rx,
        ));
        Ok(Manager {
            shutdown,
            task: Some(task),
            servers,
            state,
            storage_url,
            metrics_url,
            health_url,
            events_url,
            receiver_url,
            dispatcher,
        })
    }

    /// The base URL of the events endpoint, when `events_addr` was set.
    pub fn events_url(&self) -> Option<&str> {
        self.events_url.as_deref()
    }

    /// The base URL of the webhook receiver (`<url>/hook/<digest>`), when `receiver_addr` was
    /// set.
    pub fn receiver_url(&self) -> Option<&str> {
        self.receiver_url.as_deref()
    }

    /// The base URL of the artifact server, as written into `status.artifact.url`.
    pub fn storage_url(&self) -> &str {
        &self.storage_url
    }

    /// The `/metrics` URL, when `metrics_addr` was set.
    pub fn metrics_url(&self) -> Option<&str> {
        self.metrics_url.as_deref()
    }

    /// The base URL of `/healthz` and `/readyz`, when `health_addr` was set.
    pub fn health_url(&self) -> Option<&str> {
        self.health_url.as_deref()
    }

    /// Whether this replica reconciles (always, without leader election).
    pub fn is_leader(&self) -> bool {
        self.state.leader.load(Ordering::SeqCst)
    }

    /// The metrics in Prometheus text format, as `/metrics` serves them.
    pub fn metrics(&self) -> String {
        self.state.metrics.render()
    }

    /// Waits until the controllers stop by themselves: only on lost leadership, which is an
    /// error (the process must exit so a fresh replica can stand by).
    pub async fn wait(&mut self) -> Result<(), ManagerError> {
        let Some(task) = self.task.as_mut() else {
            return Ok(());
        };
        let joined = task.await;
        self.task = None;
        match joined {
            Ok(result) => result,
            Err(e) => Err(ManagerError::Task(e.to_string())),
        }
    }

    /// Stops the controllers (reconciles in progress finish), releases the Lease, closes the
    /// servers.
    pub async fn shutdown(mut self) -> Result<(), ManagerError> {
        let _ = self.shutdown.send(true);
        let result = self.wait().await;
        self.dispatcher.abort();
        for mut server in self.servers.drain(..) {
            // Open keep-alive connections would hold a graceful close forever.
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
                .await
                .is_err()
            {
                server.abort();
            }
        }
        result
    }
}

async fn bind(
    what: &'static str,
    addr: SocketAddr,
) -> Result<tokio::net::TcpListener, ManagerError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ManagerError::Bind { what, addr, source })
}

fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(fired(shutdown))
            .await
        {
            tracing::error!(error = %e, "HTTP server failed");
        }
    })
}

fn http_router(state: Arc<State>) -> axum::Router {
    let metrics = state.clone();
    let ready = state;
    axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let m = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        m.metrics.render(),
                    )
                }
            }),
        )
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route(
            "/readyz",
            axum::routing::get(move || {
                let r = ready.clone();
                async move {
                    if r.ready.load(Ordering::SeqCst) {
                        (StatusCode::OK, "ok").into_response()
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
                    }
                }
            }),
        )
}

async fn run_controllers(
    client: kube::Client,
    kube_config: kube::Config,
    config: ManagerConfig,
    storage: Storage,
    state: Arc<State>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), ManagerError> {
    let leadership = match config.leader_election.clone() {
        Some(election) => {
            // A standby is ready: it serves probes and waits for the Lease.
            state.ready.store(true, Ordering::SeqCst);
            match leader::acquire(client.clone(), election, shutdown.clone()).await {
                Some(l) => Some(l),
                None => return Ok(()),
            }
        }
        None => None,
    };
    state.ready.store(false, Ordering::SeqCst);
    state.leader.store(true, Ordering::SeqCst);

    let (stop, stop_rx) = watch::channel(false);
    let (hr_store, hr_task) = crate::helmrelease::reconciler::controller(
        client.clone(),
        kube_config.clone(),
        config.helmrelease.clone(),
        state.metrics.clone(),
        Some(fired(stop_rx.clone())),
    );
    let (ks_store, ks_task) = reconciler::controller(
        client.clone(),
        kube_config,
        config.kustomization.clone(),
        state.metrics.clone(),
        Some(fired(stop_rx.clone())),
    );
    let helm_sources = crate::helmrepository::Options::new(storage.clone());
    let (_, helmrepo_task) = crate::helmrepository::controller(
        client.clone(),
        helm_sources.clone(),
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    // One HelmChart per HelmRelease (Flux's chart template): the charts are built at least as
    // many at once as the releases reconcile, or a fleet waits on the source concurrency.
    let (_, helmchart_task) = crate::helmchart::controller(
        client.clone(),
        helm_sources,
        config
            .source_concurrency
            .max(config.helmrelease.concurrency),
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (_, oci_task) = crate::ocirepository::controller(
        client.clone(),
        crate::ocirepository::Options {
            storage: storage.clone(),
        },
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let receiver_task =
        crate::notification::receiver::controller(client.clone(), fired(stop_rx.clone()));
    // The image reflector: ImageRepository scans fill the tag store ImagePolicies select from.
    let images = crate::imagerepository::Options::default();
    let (_, image_repo_task) = crate::imagerepository::controller(
        client.clone(),
        images.clone(),
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (_, image_policy_task) = crate::imagepolicy::controller(
        client.clone(),
        images,
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (_, image_update_task) = crate::imageupdateautomation::controller(
        client.clone(),
        crate::imageupdateautomation::Options {
            allow_file_urls: config.allow_file_urls,
        },
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (_, generator_task) = crate::artifactgenerator::controller(
        client.clone(),
        crate::artifactgenerator::Options::new(storage.clone()),
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (_, bucket_task) = crate::bucket::controller(
        client.clone(),
        crate::bucket::Options {
            storage: storage.clone(),
        },
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx.clone()),
    );
    let (repo_store, git_task) = gitrepository::controller(
        client.clone(),
        gitrepository::Options {
            storage,
            allow_file_urls: config.allow_file_urls,
        },
        config.source_concurrency,
        state.metrics.clone(),
        fired(stop_rx),
    );
    // The source controllers (Git, Helm, OCI and ArtifactGenerator), the Receivers' status
    // loop, the image reflector and the image automation run and stop together.
    let repo_task = async move {
        futures::join!(
            git_task,
            helmrepo_task,
            helmchart_task,
            oci_task,
            receiver_task,
            generator_task,
            bucket_task,
            image_repo_task,
            image_policy_task,
            image_update_task
        );
    };
    state.metrics.watch_kustomizations(ks_store);
    state.metrics.watch_repositories(repo_store);
    state.metrics.watch_helmreleases(hr_store);
    // Ready once both kinds can be listed. The stores' own `wait_until_ready` is not used: it
    // is a single-waker oneshot that the controllers already wait on, and a second waiter would
    // steal (or lose) the wake-up.
    let readiness = {
        let state = state.clone();
        let client = client.clone();
        tokio::spawn(async move {
            while !both_kinds_served(&client).await {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            state.ready.store(true, Ordering::SeqCst);
        })
    };
    let mut ks_handle = tokio::spawn(ks_task);
    let mut repo_handle = tokio::spawn(repo_task);
    let mut hr_handle = tokio::spawn(hr_task);

    enum End {
        Stopped,
        Shutdown,
        Lost,
    }
    let (end, first) = {
        let lost = async {
            match &leadership {
                Some(l) => l.lost().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = fired(shutdown) => (End::Shutdown, None),
            _ = lost => (End::Lost, None),
            r = &mut ks_handle => (End::Stopped, Some((0, r))),
            r = &mut repo_handle => (End::Stopped, Some((1, r))),
            r = &mut hr_handle => (End::Stopped, Some((2, r))),
        }
    };
    let _ = stop.send(true);
    // A finished JoinHandle must not be polled again: await only the ones still running.
    let finished = first.as_ref().map(|(i, _)| *i);
    let mut results = Vec::new();
    if let Some((_, r)) = first {
        results.push(r);
    }
    // Reconciles in progress get one grace period to finish, then are cancelled: a reconcile
    // waiting on health or a stuck API call must not keep the process from stopping. While the
    // kinds are not served (CRDs missing) kube-runtime holds its runner until the first list
    // succeeds, so nothing can be in progress and its stream would never end by itself: there
    // is nothing to wait for.
    let grace = if state.ready.load(Ordering::SeqCst) {
        SHUTDOWN_GRACE
    } else {
        Duration::ZERO
    };
    let deadline = tokio::time::Instant::now() + grace;
    for (i, handle) in [
        (0, &mut ks_handle),
        (1, &mut repo_handle),
        (2, &mut hr_handle),
    ] {
        if finished == Some(i) {
            continue;
        }
        match tokio::time::timeout_at(deadline, &mut *handle).await {
            Ok(r) => results.push(r),
            Err(_) if grace.is_zero() => handle.abort(),
            Err(_) => {
                tracing::warn!("reconciles still running after the grace period; cancelling them");
                handle.abort();
            }
        }
    }
    let joined: Result<(), tokio::task::JoinError> = results.into_iter().collect();
    readiness.abort();
    state.leader.store(false, Ordering::SeqCst);
    if let Some(l) = leadership {
        l.release().await;
    }
    match (end, joined) {
        (End::Lost, _) => Err(ManagerError::LeadershipLost),
        (_, Err(e)) => Err(ManagerError::Task(e.to_string())),
        (End::Stopped, Ok(())) => Err(ManagerError::Task("the watch streams ended".into())),
        (End::Shutdown, Ok(())) => Ok(()),
    }
}

/// Creates or updates Flux's CRDs with server-side apply and waits until both kinds are served.
pub async fn install_crds(client: &kube::Client) -> Result<(), kube::Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("ferroflux").force();
    for crd in ferroflux_api::crds() {
        crds.patch(&crd.name_any(), &params, &Patch::Apply(&crd))
            .await?;
    }
    let kustomizations: Api<Kustomization> = Api::all(client.clone());
    let repositories: Api<GitRepository> = Api::all(client.clone());
    let probe = ListParams::default().limit(1);
    // A CRD is served a moment after it is created; give up after ~30 s with the API's error.
    for _ in 0..300 {
        if both_kinds_served(client).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kustomizations.list(&probe).await?;
    repositories.list(&probe).await?;
    Ok(())
}

/// Whether both Flux kinds can be listed (their CRDs are installed and served).
async fn both_kinds_served(client: &kube::Client) -> bool {
    let probe = ListParams::default().limit(1);
    Api::<Kustomization>::all(client.clone())
        .list(&probe)
        .await
        .is_ok()
        && Api::<GitRepository>::all(client.clone())
            .list(&probe)
            .await
            .is_ok()
}
