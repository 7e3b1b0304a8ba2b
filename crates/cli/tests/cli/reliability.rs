//! Reliability of `ferroflux controller` (the real binary, a child process) reconciling a Git
//! repository into a local cluster: chaos scenarios, secrets that must never be written where
//! they do not belong, and the log formats.
//!
//! Chaos: each scenario breaks something in the middle of a reconcile — the moment is picked
//! by what the cluster shows (an object changed, an object deleted), never by a sleep — and
//! then checks the end state object by object: every object of the last commit is there with
//! its content, everything the commit removed is pruned, and an object the Kustomization never
//! owned (`sentinel`) is untouched. The waits are bounded only so a broken test fails instead
//! of hanging.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::repo::Repo;
use ferroflux_api::{GitRepository, Kustomization, OCIRepository};
use ferroflux_devcluster::{
    Config, DevCluster, FaultAction, FaultConfig, FaultRule, RunningCluster,
};
use ferroflux_testkit::{Auth, GitHttpServer, Registry, RegistryOptions, make_tls};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const NS: &str = "chaos";

/// The repository's `apps/` at one commit: the namespace and `count` ConfigMaps
/// `cm-000`… whose `value` is `value`, in one file.
fn apps(count: usize, value: &str) -> String {
    let mut out = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n");
    for i in 0..count {
        out += &format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:03}\n  namespace: {NS}\ndata:\n  value: \"{value}\"\n"
        );
    }
    out
}

/// The ConfigMaps of `count` objects at `value`, as [`Fleet::configmaps`] reads them.
fn expected(count: usize, value: &str) -> BTreeMap<String, String> {
    (0..count)
        .map(|i| (format!("cm-{i:03}"), value.to_string()))
        .chain([("sentinel".to_string(), "kept".to_string())])
        .collect()
}

fn revision(commit: &str) -> String {
    format!("main@sha1:{commit}")
}

/// Polls `f` every 100 ms until it yields something; `bound` only stops a broken test.
async fn wait_for<T, F, Fut>(what: &str, bound: Duration, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + bound;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {bound:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A free port on 127.0.0.1 (the controller's artifact server keeps it across restarts, as a
/// Service keeps an address across Pod restarts).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One GET over plain HTTP; the status code and the body.
fn http_get(url: &str) -> Option<(u16, Vec<u8>)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut s = std::net::TcpStream::connect(host).ok()?;
    write!(s, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, raw[split + 4..].to_vec()))
}

/// A cluster stored in SQLite, Flux's CRDs installed, a fleet repository and the objects that
/// follow it (GitRepository `fleet`, Kustomization `apps` on `./apps`, pruning).
struct Fleet {
    dir: tempfile::TempDir,
    api: ApiServer,
    client: kube::Client,
    kubeconfig: PathBuf,
    repo: Repo,
}

impl Fleet {
    /// A cluster and a repository whose `apps/` holds `objects` ConfigMaps.
    async fn start(name: &str, objects: usize) -> Fleet {
        Fleet::with_repo(
            name,
            Repo::with_files(&[("apps/all.yaml", &apps(objects, "1"))]),
        )
        .await
    }

    async fn with_repo(name: &str, repo: Repo) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let cluster = DevCluster::start(Config::file(name, dir.path().join("cluster.db")))
            .await
            .unwrap();
        let client = cluster.client().await.unwrap();
        ferroflux_controller::manager::install_crds(&client)
            .await
            .unwrap();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], None).unwrap();
        Fleet {
            dir,
            api: ApiServer::InProcess(cluster),
            client,
            kubeconfig,
            repo,
        }
    }

    /// Like [`Fleet::with_repo`], with the API server a process of its own (`ferroflux dev up`
    /// with `dev_up_flags`), which a test can SIGKILL.
    async fn with_api_process(name: &str, repo: Repo, dev_up_flags: &[&str]) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let server = DevUp::start(&dir.path().join("state"), name, dev_up_flags);
        let kubeconfig = server.kubeconfig();
        let client = ferroflux_devcluster::client_from_kubeconfig(&kubeconfig, name)
            .await
            .unwrap();
        ferroflux_controller::manager::install_crds(&client)
            .await
            .unwrap();
        let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        Fleet {
            dir,
            api: ApiServer::Process(server),
            client,
            kubeconfig,
            repo,
        }
    }

    /// The in-process cluster, for the scenarios that set its faults.
    fn cluster(&self) -> &RunningCluster {
        match &self.api {
            ApiServer::InProcess(cluster) => cluster,
            ApiServer::Process(_) => panic!("this fleet's API server is a child process"),
        }
    }

    fn cluster_mut(&mut self) -> &mut RunningCluster {
        match &mut self.api {
            ApiServer::InProcess(cluster) => cluster,
            ApiServer::Process(_) => panic!("this fleet's API server is a child process"),
        }
    }

    fn api_process(&mut self) -> &mut DevUp {
        match &mut self.api {
            ApiServer::Process(server) => server,
            ApiServer::InProcess(_) => panic!("this fleet's API server runs in the test"),
        }
    }

    /// Creates the GitRepository (at `url`, with a Secret of `secret` data when given) and
    /// the Kustomization.
    async fn follow(&self, url: &str, secret: Option<BTreeMap<String, String>>) {
        let flux = |kind: &str, api: &str, spec: serde_json::Value| {
            json!({"apiVersion": api, "kind": kind,
                   "metadata": {"name": if kind == "GitRepository" { "fleet" } else { "apps" },
                                "namespace": "flux-system"},
                   "spec": spec})
        };
        let mut source = json!({"interval": "2s", "url": url, "ref": {"branch": "main"}});
        if let Some(data) = secret {
            let s: Secret = serde_json::from_value(json!({
                "metadata": {"name": "fleet-auth", "namespace": "flux-system"},
                "stringData": data,
            }))
            .unwrap();
            Api::<Secret>::namespaced(self.client.clone(), "flux-system")
                .create(&PostParams::default(), &s)
                .await
                .unwrap();
            source["secretRef"] = json!({"name": "fleet-auth"});
        }
        let repo: GitRepository =
            serde_json::from_value(flux("GitRepository", "source.toolkit.fluxcd.io/v1", source))
                .unwrap();
        Api::<GitRepository>::namespaced(self.client.clone(), "flux-system")
            .create(&PostParams::default(), &repo)
            .await
            .unwrap();
        let ks: Kustomization = serde_json::from_value(flux(
            "Kustomization",
            "kustomize.toolkit.fluxcd.io/v1",
            json!({"interval": "10m", "retryInterval": "1s", "timeout": "2m", "prune": true,
                   "path": "./apps", "sourceRef": {"kind": "GitRepository", "name": "fleet"}}),
        ))
        .unwrap();
        self.kustomizations()
            .create(&PostParams::default(), &ks)
            .await
            .unwrap();
    }

    fn kustomizations(&self) -> Api<Kustomization> {
        Api::namespaced(self.client.clone(), "flux-system")
    }

    fn cms(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Starts a controller child process (artifacts under `storage`, served on `port`).
    fn controller(&self, storage: &str, port: u16, extra: &[&str]) -> Controller {
        Controller::start(self, storage, port, extra)
    }

    /// Commits `apps/all.yaml` with `objects` ConfigMaps at `value`; the new revision.
    fn commit(&self, objects: usize, value: &str) -> String {
        self.repo.write("apps/all.yaml", &apps(objects, value));
        revision(&self.repo.commit_and_push(&format!("{objects} at {value}")))
    }

    /// Waits until the Kustomization is Ready at `rev`.
    async fn applied(&self, rev: &str, bound: Duration) {
        let api = self.kustomizations();
        wait_for(&format!("apps Ready at {rev}"), bound, || async {
            let status = api.get("apps").await.ok()?.status?;
            let ready = status
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (ready.status == "True" && status.last_applied_revision.as_deref() == Some(rev))
                .then_some(())
        })
        .await
    }

    /// The revision the Kustomization last applied.
    async fn last_applied(&self) -> Option<String> {
        self.kustomizations()
            .get("apps")
            .await
            .ok()?
            .status?
            .last_applied_revision
    }

    /// Creates `sentinel`, a ConfigMap in the applied namespace that no Kustomization owns.
    async fn sentinel(&self) {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "sentinel", "namespace": NS}, "data": {"value": "kept"},
        }))
        .unwrap();
        self.cms()
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }

    /// Every ConfigMap of the namespace: name → `value`.
    async fn configmaps(&self) -> BTreeMap<String, String> {
        let list = self.cms().list(&ListParams::default()).await.unwrap();
        list.items
            .into_iter()
            .filter_map(|cm| {
                let value = cm.data?.get("value")?.clone();
                Some((cm.metadata.name?, value))
            })
            .collect()
    }

    /// Asserts the namespace holds exactly `want`: nothing lost, nothing wrongly deleted.
    async fn holds(&self, want: &BTreeMap<String, String>) {
        let got = self.configmaps().await;
        if got != *want {
            let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
            let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            let wrong: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
                .collect();
            panic!("missing {missing:?}, not pruned {extra:?}, wrong value {wrong:?}");
        }
    }

    /// A watch on the namespace's ConfigMaps from now on.
    async fn watch_cms(&self) -> Events {
        let from = self
            .cms()
            .list_metadata(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        self.cms()
            .watch(&WatchParams::default(), &from)
            .await
            .unwrap()
            .boxed()
    }

    /// Slows every API answer, so an apply of hundreds of objects lasts long enough to be
    /// interrupted in its middle (the moment is still chosen by what the cluster shows).
    fn slow(&self, ms: u64) {
        self.cluster()
            .set_faults(FaultConfig {
                delay: Duration::from_millis(ms),
                ..FaultConfig::default()
            })
            .unwrap();
    }
}

/// Where a [`Fleet`]'s API server runs.
enum ApiServer {
    /// In the test process: faults set at will, stopped and restarted in place.
    InProcess(RunningCluster),
    /// `ferroflux dev up` as a child process.
    Process(DevUp),
}

/// `ferroflux dev up --no-controllers` with one cluster stored under a state directory: the API
/// server alone, as a process that can be SIGKILLed and started again on the same directory.
struct DevUp {
    child: Child,
    state: PathBuf,
    name: String,
}

impl DevUp {
    fn start(state: &std::path::Path, name: &str, flags: &[&str]) -> DevUp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args([
                "dev",
                "up",
                "--no-controllers",
                "--clusters",
                name,
                "--state-dir",
            ])
            .arg(state)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("ready ") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("`ferroflux dev up` did not print its ready line");
        DevUp {
            child,
            state: state.to_path_buf(),
            name: name.to_string(),
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.state.join("kubeconfig")
    }

    /// SIGKILL: no shutdown, connections cut, only what SQLite acknowledged kept.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// A new process on the same state directory.
    fn start_again(&mut self, flags: &[&str]) {
        *self = DevUp::start(&self.state.clone(), &self.name.clone(), flags);
    }
}

impl Drop for DevUp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Events = futures_util::stream::BoxStream<'static, Result<WatchEvent<ConfigMap>, kube::Error>>;

/// Waits on `events` until one satisfies `want`.
async fn first_event(events: &mut Events, want: impl Fn(&WatchEvent<ConfigMap>) -> bool) {
    let found = async {
        while let Some(e) = events.try_next().await.unwrap() {
            if want(&e) {
                return;
            }
        }
        panic!("the watch ended");
    };
    tokio::time::timeout(Duration::from_secs(120), found)
        .await
        .expect("the awaited change never came");
}

fn modified_to(value: &'static str) -> impl Fn(&WatchEvent<ConfigMap>) -> bool {
    move |e| {
        matches!(e, WatchEvent::Modified(cm)
            if cm.data.as_ref().and_then(|d| d.get("value")).map(String::as_str) == Some(value))
    }
}

/// `ferroflux controller` as a child process, its JSON log collected line by line.
struct Controller {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    metrics: String,
}

impl Controller {
    fn start(fleet: &Fleet, storage: &str, port: u16, extra: &[&str]) -> Controller {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(["controller", "--kubeconfig"])
            .arg(&fleet.kubeconfig)
            .arg("--storage-path")
            .arg(fleet.dir.path().join(storage))
            .args(["--storage-addr", &format!("127.0.0.1:{port}")])
            .args([
                "--metrics-addr",
                "127.0.0.1:0",
                "--health-addr",
                "127.0.0.1:0",
            ])
            .args([
                "--allow-file-urls",
                "--log-format",
                "json",
                "--log-level",
                "debug",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("\"controllers started\"") {
                    let _ = tx.send(line.clone());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let started = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the controller did not start: {:?}", log.lock().unwrap()));
        let started: serde_json::Value = serde_json::from_str(&started).unwrap();
        Controller {
            child,
            log,
            metrics: started["metrics"].as_str().unwrap().to_string(),
        }
    }

    /// The Lease identity this replica competes under (`<host>_<pid>`).
    fn identity(&self) -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        format!("{}_{}", host.trim(), self.child.id())
    }

    /// SIGKILL: no clean-up, no Lease release, reconciles cut wherever they are.
    fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.log.lock().unwrap().clone()
    }

    fn metrics(&self) -> String {
        let (code, body) = http_get(&self.metrics).expect("/metrics answers");
        assert_eq!(code, 200);
        String::from_utf8(body).unwrap()
    }

    /// The log so far; every line must be a JSON object without colour codes.
    fn log(&self) -> Vec<String> {
        let lines = self.log.lock().unwrap().clone();
        check_json_log(&lines);
        lines
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn check_json_log(lines: &[String]) {
    for line in lines {
        assert!(
            !line.contains('\u{1b}'),
            "a colour code in the JSON log: {line}"
        );
        let entry: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        assert!(
            entry["level"].is_string() && entry["ts"].is_string(),
            "{line}"
        );
    }
}

/// Applies a first commit of `objects` ConfigMaps with a controller on `port`, and creates
/// the sentinel; the running controller and the first revision.
async fn applied_fleet(name: &str, objects: usize, port: u16) -> (Fleet, Controller, String) {
    let fleet = Fleet::start(name, objects).await;
    let controller = fleet.controller("artifacts", port, &[]);
    let url = fleet.repo.url();
    fleet.follow(&url, None).await;
    let rev1 = revision(&fleet.repo.head().unwrap());
    fleet.applied(&rev1, Duration::from_secs(120)).await;
    fleet.sentinel().await;
    (fleet, controller, rev1)
}

/// Issue 20's acceptance: an API server answering one request in ten with 503 (no
/// Retry-After), a new commit on a 300-object Kustomization is applied within 2 minutes. The
/// client retries the idempotent requests (reads, dry-runs, server-side applies); the
/// controller counts them on /metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenth_of_requests_failing_503_still_applies_a_300_object_commit() {
    let (fleet, controller, _) = applied_fleet("faults", 300, free_port()).await;
    fleet
        .cluster()
        .set_faults(FaultConfig {
            error_rate: 0.1,
            error_code: 503,
            delay: Duration::ZERO,
        })
        .unwrap();
    let started = Instant::now();
    let rev2 = fleet.commit(300, "2");
    fleet.applied(&rev2, Duration::from_secs(120)).await;
    let took = started.elapsed();
    fleet.cluster().set_faults(FaultConfig::default()).unwrap();
    fleet.holds(&expected(300, "2")).await;
    let metrics = controller.metrics();
    let retried: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("ferroflux_kube_request_retries_total{") && l.contains("code=\"503\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(retried > 0, "no retry counted:\n{metrics}");
    assert!(
        metrics.contains("ferroflux_kube_request_retries_total{verb=\"PATCH\",code=\"503\"}"),
        "{metrics}"
    );
    // Each retry is logged at debug level, with its verb and code.
    let logged = controller
        .log()
        .iter()
        .filter(|l| l.contains("retrying: transient failure") && l.contains("\"code\":\"503\""))
        .count();
    assert!(logged > 0, "no retry was logged");
    eprintln!("300 objects applied through 10% 503s in {took:?}, {retried} retries");
}

/// The controller SIGKILLed while it applies a commit changing 200 objects: a new controller
/// finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_killed_mid_apply_converges() {
    let port = free_port();
    let (fleet, controller, rev1) = applied_fleet("kill-apply", 200, port).await;
    let mut events = fleet.watch_cms().await;
    fleet.slow(15);
    let rev2 = fleet.commit(200, "2");
    first_event(&mut events, modified_to("2")).await;
    let log = controller.kill();
    check_json_log(&log);
    fleet.slow(0);
    // Killed in the middle: the revision was not recorded and some objects still hold "1".
    assert_eq!(fleet.last_applied().await, Some(rev1));
    let values = fleet.configmaps().await;
    assert!(
        values.values().any(|v| v == "1"),
        "the apply had already finished"
    );
    assert!(
        values.values().any(|v| v == "2"),
        "the apply had not started"
    );

    let _controller = fleet.controller("artifacts", port, &[]);
    fleet.applied(&rev2, Duration::from_secs(120)).await;
    fleet.holds(&expected(200, "2")).await;
}

/// The controller SIGKILLed while it prunes 190 of 200 objects: the next controller prunes
/// the rest (its inventory is still the old one) and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_killed_mid_prune_converges() {
    let port = free_port();
    let (fleet, controller, rev1) = applied_fleet("kill-prune", 200, port).await;
    let mut events = fleet.watch_cms().await;
    fleet.slow(15);
    let rev2 = fleet.commit(10, "1");
    first_event(&mut events, |e| matches!(e, WatchEvent::Deleted(_))).await;
    let log = controller.kill();
    check_json_log(&log);
    fleet.slow(0);
    assert_eq!(fleet.last_applied().await, Some(rev1));
    let left = fleet.configmaps().await.len();
    assert!(left > 11, "the prune had already finished ({left} left)");

    let _controller = fleet.controller("artifacts", port, &[]);
    fleet.applied(&rev2, Duration::from_secs(120)).await;
    fleet.holds(&expected(10, "1")).await;
}

/// The API server goes away in the middle of an apply (every connection dropped, its watch
/// history lost, as at a restart) and comes back with what it had stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_restarted_mid_reconcile_converges() {
    let (mut fleet, _controller, rev1) = applied_fleet("api-restart", 200, free_port()).await;
    let mut events = fleet.watch_cms().await;
    fleet.slow(15);
    let rev2 = fleet.commit(150, "2");
    first_event(&mut events, modified_to("2")).await;
    fleet.cluster_mut().stop().await;
    // While it is down the controller's requests are refused; its reconcile fails.
    fleet.cluster_mut().restart().await.unwrap();
    fleet.slow(0);
    // The server kept the half-applied state: the revision was not recorded.
    assert_eq!(fleet.last_applied().await, Some(rev1));
    fleet.applied(&rev2, Duration::from_secs(120)).await;
    fleet.holds(&expected(150, "2")).await;
}

/// The API server as a process of its own (`ferroflux dev up`, objects in SQLite under its
/// state directory) SIGKILLed in the middle of an apply and started again on the same
/// directory: it is back at the address, and with the CA and token, it had — the controller
/// (a process of its own, its kubeconfig untouched) reaches it again — and with every write it
/// acknowledged; the controller converges on the new commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_process_killed_mid_reconcile_converges() {
    let repo = Repo::with_files(&[("apps/all.yaml", &apps(200, "1"))]);
    // Every answer slowed so that the apply of the second commit is long enough to be cut in
    // its middle (the moment is still chosen by what the cluster shows).
    let mut fleet = Fleet::with_api_process("api-kill", repo, &["--fault-delay-ms", "15"]).await;
    let _controller = fleet.controller("artifacts", free_port(), &[]);
    fleet.follow(&fleet.repo.url(), None).await;
    let rev1 = revision(&fleet.repo.head().unwrap());
    fleet.applied(&rev1, Duration::from_secs(120)).await;
    fleet.sentinel().await;
    let kubeconfig = std::fs::read_to_string(&fleet.kubeconfig).unwrap();

    let mut events = fleet.watch_cms().await;
    let rev2 = fleet.commit(150, "2");
    first_event(&mut events, modified_to("2")).await;
    fleet.api_process().kill();
    drop(events);
    fleet.api_process().start_again(&[]);
    assert_eq!(
        std::fs::read_to_string(&fleet.kubeconfig).unwrap(),
        kubeconfig,
        "the restarted server has another address, CA or token"
    );
    // The cut apply was not recorded as applied.
    assert_eq!(fleet.last_applied().await, Some(rev1));
    fleet.applied(&rev2, Duration::from_secs(120)).await;
    fleet.holds(&expected(150, "2")).await;
}

/// Every open connection reset (the controllers' watches among them) while a commit travels
/// from Git to the cluster, and the next three watches dropped unanswered: the controllers
/// watch again and miss nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_reset_during_watches_lose_no_change() {
    let (fleet, _controller, _) = applied_fleet("watch-resets", 20, free_port()).await;
    let repos: Api<GitRepository> = Api::namespaced(fleet.client.clone(), "flux-system");
    fleet
        .cluster()
        .set_fault_rules(vec![FaultRule::new(FaultAction::Drop).watches().times(3)])
        .unwrap();
    fleet.cluster().reset_connections();
    let rev2 = fleet.commit(15, "2");
    // The source controller fetched it: reset again while the Kustomization controller's
    // watch is delivering that change.
    wait_for("the new artifact", Duration::from_secs(60), || async {
        let artifact = repos.get("fleet").await.ok()?.status?.artifact?;
        (artifact.revision == rev2).then_some(())
    })
    .await;
    fleet.cluster().reset_connections();
    fleet.applied(&rev2, Duration::from_secs(60)).await;
    fleet.holds(&expected(15, "2")).await;
    assert_eq!(
        fleet.cluster().faults_injected(),
        3,
        "the dropped watches were met"
    );
    // And the watches still work after it all: one more commit arrives.
    fleet.cluster().reset_connections();
    let rev3 = fleet.commit(15, "3");
    fleet.applied(&rev3, Duration::from_secs(60)).await;
    fleet.holds(&expected(15, "3")).await;
}

/// The Git server goes away: the GitRepository says so (Ready=False with the reason), keeps
/// its last artifact and serves it; the Kustomization stays at that revision with nothing
/// deleted; when the server is back the new commit goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_server_gone_keeps_the_last_artifact_and_recovers() {
    let fleet = Fleet::start("git-gone", 10).await;
    let tls = make_tls();
    let mut git = GitHttpServer::start(
        fleet.repo.root.path(),
        Auth::Basic("git".into(), "s3cret-pass".into()),
        Some(&tls),
    );
    let _controller = fleet.controller("artifacts", free_port(), &[]);
    let secret = BTreeMap::from([
        ("username".to_string(), "git".to_string()),
        ("password".to_string(), "s3cret-pass".to_string()),
        ("ca.crt".to_string(), tls.ca_pem.clone()),
    ]);
    fleet.follow(&git.url("fleet"), Some(secret)).await;
    let rev1 = revision(&fleet.repo.head().unwrap());
    fleet.applied(&rev1, Duration::from_secs(60)).await;
    fleet.sentinel().await;

    git.stop();
    let rev2 = fleet.commit(5, "2");
    let repos: Api<GitRepository> = Api::namespaced(fleet.client.clone(), "flux-system");
    let (ready, artifact) = wait_for("the source to fail", Duration::from_secs(60), || async {
        let status = repos.get("fleet").await.ok()?.status?;
        let ready = status
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        (ready.status == "False").then_some((ready, status.artifact?))
    })
    .await;
    assert_eq!(ready.reason, "GitOperationFailed", "{ready:?}");
    assert!(
        ready.message.contains("localhost"),
        "says what failed: {ready:?}"
    );
    assert!(!ready.message.contains("s3cret-pass"), "{ready:?}");
    assert_eq!(artifact.revision, rev1, "the last artifact is kept");
    let (code, body) = http_get(&artifact.url).expect("the artifact server answers");
    assert_eq!(code, 200, "the last artifact is still served");
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(artifact.digest, format!("sha256:{digest}"));
    // The Kustomization stays Ready at the last revision, its objects in place.
    fleet.applied(&rev1, Duration::from_secs(10)).await;
    fleet.holds(&expected(10, "1")).await;

    git.restart();
    fleet.applied(&rev2, Duration::from_secs(60)).await;
    fleet.holds(&expected(5, "2")).await;
    let ready = wait_for(
        "the source Ready again",
        Duration::from_secs(30),
        || async {
            let status = repos.get("fleet").await.ok()?.status?;
            let ready = status
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (ready.status == "True").then_some(ready)
        },
    )
    .await;
    assert!(ready.message.contains(&rev2), "{ready:?}");
}

/// Two replicas with leader election; the leader is SIGKILLed (it cannot release the Lease):
/// the standby takes the Lease once it expires (15 s, plus a retry period of 2 s) and
/// reconciles the next commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_takes_over_when_the_leader_is_killed() {
    let fleet = Fleet::start("leader", 10).await;
    let election = [
        "--enable-leader-election",
        "--leader-election-namespace",
        "flux-system",
    ];
    let a = fleet.controller("artifacts-a", free_port(), &election);
    let b = fleet.controller("artifacts-b", free_port(), &election);
    let url = fleet.repo.url();
    fleet.follow(&url, None).await;
    let rev1 = revision(&fleet.repo.head().unwrap());
    fleet.applied(&rev1, Duration::from_secs(60)).await;
    fleet.sentinel().await;
    let leases: Api<Lease> = Api::namespaced(fleet.client.clone(), "flux-system");
    let holder = || async {
        leases
            .get("ferroflux-controller-leader-election")
            .await
            .ok()?
            .spec?
            .holder_identity
    };
    let leader = holder().await.expect("a leader holds the Lease");
    let (leader, standby) = if leader == a.identity() {
        (a, b)
    } else {
        assert_eq!(
            leader,
            b.identity(),
            "the Lease is held by one of the replicas"
        );
        (b, a)
    };
    let standby_id = standby.identity();

    let killed = Instant::now();
    leader.kill();
    let rev2 = fleet.commit(10, "2");
    wait_for(
        "the standby to take the Lease",
        Duration::from_secs(60),
        || async { (holder().await? == standby_id).then_some(()) },
    )
    .await;
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_secs(15 + 2 + 3),
        "the standby took over after {took:?}, more than the lease duration"
    );
    fleet.applied(&rev2, Duration::from_secs(60)).await;
    fleet.holds(&expected(10, "2")).await;
    standby.log();
    eprintln!("the standby took over {took:?} after the leader was killed");
}

/// The controller's text log carries no colour codes when stderr is not a terminal.
#[test]
fn text_logs_have_no_colour_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("controller.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cluster = rt
        .block_on(DevCluster::start(Config::memory("colour")))
        .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], None).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["controller", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--storage-path")
        .arg(dir.path().join("artifacts"))
        .args([
            "--storage-addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .args(["--health-addr", "127.0.0.1:0", "--log-level", "debug"])
        .stderr(log)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !std::fs::read_to_string(&log_path)
        .unwrap()
        .contains("controllers started")
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the controller never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    assert!(text.contains(" INFO "), "{text}");
    rt.block_on(cluster.shutdown());
}

/// A value no test data contains by chance: `prefix` and 16 random hex digits.
fn unique(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    format!("{prefix}{:016x}", h.finish())
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn b64(s: &str) -> String {
    // k8s-openapi's ByteString serializes as standard base64, as Secret data is written.
    serde_json::to_value(k8s_openapi::ByteString(s.as_bytes().to_vec()))
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// Issue 20: no secret in logs, Events, status or metrics. The fleet example (the demo's
/// repository) is served over https with basic auth, with a SOPS-encrypted Secret and a
/// `postBuild.substituteFrom` Secret added to staging's apps, and an OCIRepository pulls from a
/// registry with a password (docker config Secret); the controller runs at debug log level. Once
/// everything is Ready, and again after three failures that handle secrets (a wrong Git
/// password, a wrong age key, a wrong registry password), every line of the controller's log, every Event, every
/// object of every kind (Secrets without their data) and `/metrics` are searched for each
/// secret value, as written and base64-encoded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_logs_events_status_or_metrics() {
    let git_password = unique("git-pass-");
    let db_password = unique("db-pass-");
    let api_token = unique("api-token-");
    let fixtures = format!("{}/../sops/tests/fixtures/keys", env!("CARGO_MANIFEST_DIR"));
    let age_key = std::fs::read_to_string(format!("{fixtures}/age.txt")).unwrap();
    let age_secret = age_key
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY-"))
        .unwrap()
        .to_string();
    let recipient = age_key
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();

    // The fleet example, plus a SOPS-encrypted Secret and a substituted one in staging's apps.
    let repo = Repo::empty();
    ferroflux_testkit::git(repo.root.path(), &["clone", "-q", "fleet.git", "work"]);
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet-infra");
    copy_tree(&example, &repo.work());
    let plain = repo.root.path().join("db.yaml");
    std::fs::write(
        &plain,
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: podinfo\nstringData:\n  password: {db_password}\n"),
    )
    .unwrap();
    let encrypted = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "sops",
            "encrypt",
            "--age",
            &recipient,
            "--encrypted-regex",
            "^(data|stringData)$",
        ])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(
        encrypted.status.success(),
        "{}",
        String::from_utf8_lossy(&encrypted.stderr)
    );
    std::fs::remove_file(&plain).unwrap();
    let encrypted = String::from_utf8(encrypted.stdout).unwrap();
    assert!(!encrypted.contains(&db_password));
    repo.write("apps/staging/db.enc.yaml", &encrypted);
    repo.write(
        "apps/staging/token.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: podinfo\nstringData:\n  token: ${api_token}\n",
    );
    let overlay =
        std::fs::read_to_string(repo.work().join("apps/staging/kustomization.yaml")).unwrap();
    repo.write(
        "apps/staging/kustomization.yaml",
        &overlay.replace(
            "  - ../base\n",
            "  - ../base\n  - db.enc.yaml\n  - token.yaml\n",
        ),
    );
    let apps_ks = std::fs::read_to_string(repo.work().join("clusters/staging/apps.yaml")).unwrap();
    assert!(
        apps_ks.contains("  postBuild:\n    substitute:\n"),
        "{apps_ks}"
    );
    repo.write(
        "clusters/staging/apps.yaml",
        &apps_ks.replace(
            "  postBuild:\n    substitute:\n",
            "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n  postBuild:\n    substituteFrom:\n      - kind: Secret\n        name: app-vars\n    substitute:\n",
        ),
    );
    repo.commit_and_push("fleet with secrets");

    let tls = make_tls();
    let mut git = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("git".into(), git_password.clone()),
        Some(&tls),
    );
    let fleet = Fleet::with_repo("secrets", repo).await;
    let controller = fleet.controller("artifacts", free_port(), &[]);
    let secrets: Api<Secret> = Api::namespaced(fleet.client.clone(), "flux-system");
    let secret = |name: &str, data: serde_json::Value| -> Secret {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "flux-system"},
                                      "stringData": data}),
        )
        .unwrap()
    };
    for s in [
        secret(
            "flux-system",
            json!({"username": "git", "password": git_password, "ca.crt": tls.ca_pem}),
        ),
        secret("sops-age", json!({"age.agekey": age_key})),
        secret("app-vars", json!({"api_token": api_token})),
    ] {
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    let repos: Api<GitRepository> = Api::namespaced(fleet.client.clone(), "flux-system");
    let source: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"interval": "2s", "url": git.url("fleet"), "ref": {"branch": "main"},
                 "secretRef": {"name": "flux-system"}},
    }))
    .unwrap();
    repos.create(&PostParams::default(), &source).await.unwrap();
    let root: Kustomization = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./clusters/staging", "prune": true,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }))
    .unwrap();
    fleet
        .kustomizations()
        .create(&PostParams::default(), &root)
        .await
        .unwrap();
    let ks = fleet.kustomizations();
    let ready = |name: &'static str| {
        let ks = ks.clone();
        async move {
            wait_for(
                &format!("{name} Ready"),
                Duration::from_secs(120),
                || async {
                    let status = ks.get(name).await.ok()?.status?;
                    let ready = status
                        .conditions?
                        .into_iter()
                        .find(|c| c.type_ == "Ready")?;
                    (ready.status == "True").then_some(())
                },
            )
            .await
        }
    };
    for name in ["flux-system", "infrastructure", "apps"] {
        ready(name).await;
    }

    // Registry credentials: an OCIRepository pulling, with a docker config Secret, from a
    // registry that wants a password.
    let registry_password = unique("registry-pass-");
    let registry = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), registry_password.clone())),
        ..Default::default()
    });
    let artifact = tempfile::tempdir().unwrap();
    std::fs::write(
        artifact.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci\ndata:\n  k: v\n",
    )
    .unwrap();
    let oci_url = format!("oci://{}/fleet/extra", registry.host());
    let pushed = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["push", "artifact", &format!("{oci_url}:v1"), "--path"])
        .arg(artifact.path())
        .args(["--source", "test", "--revision", "v1", "--creds"])
        .arg(format!("flux:{registry_password}"))
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let docker_config = |password: &str| {
        json!({"auths": {registry.host(): {"username": "flux", "password": password}}}).to_string()
    };
    let regcred: Secret = serde_json::from_value(json!({
        "metadata": {"name": "regcred", "namespace": "flux-system"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": docker_config(&registry_password)},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &regcred)
        .await
        .unwrap();
    let ocis: Api<OCIRepository> = Api::namespaced(fleet.client.clone(), "flux-system");
    let oci: OCIRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
        "metadata": {"name": "extra", "namespace": "flux-system"},
        "spec": {"interval": "2s", "url": oci_url, "ref": {"tag": "v1"},
                 "secretRef": {"name": "regcred"}},
    }))
    .unwrap();
    ocis.create(&PostParams::default(), &oci).await.unwrap();
    let oci_ready = |want: &'static str| {
        let ocis = ocis.clone();
        async move {
            wait_for(
                &format!("OCIRepository Ready={want}"),
                Duration::from_secs(60),
                || async {
                    let value = serde_json::to_value(ocis.get("extra").await.ok()?).ok()?;
                    let ready = value["status"]["conditions"]
                        .as_array()?
                        .iter()
                        .find(|c| c["type"] == "Ready")?
                        .clone();
                    (ready["status"] == want).then_some(())
                },
            )
            .await
        }
    };
    oci_ready("True").await;
    // The secrets reached the cluster decrypted and substituted: they were really handled.
    let podinfo: Api<Secret> = Api::namespaced(fleet.client.clone(), "podinfo");
    let value = |s: Secret, key: &str| String::from_utf8(s.data.unwrap()[key].0.clone()).unwrap();
    assert_eq!(
        value(podinfo.get("db").await.unwrap(), "password"),
        db_password
    );
    assert_eq!(
        value(podinfo.get("token").await.unwrap(), "token"),
        api_token
    );

    // Two failures that carry secrets near their messages: a wrong Git password, a wrong
    // age key.
    let wrong_password = format!("wrong-{git_password}");
    secrets
        .patch(
            "flux-system",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": wrong_password}})),
        )
        .await
        .unwrap();
    let other_key = std::fs::read_to_string(format!("{fixtures}/age-global.txt")).unwrap();
    secrets
        .patch(
            "sops-age",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"age.agekey": other_key}})),
        )
        .await
        .unwrap();
    secrets
        .patch(
            "regcred",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {
                ".dockerconfigjson": docker_config(&format!("wrong-{registry_password}"))}})),
        )
        .await
        .unwrap();
    ks.patch(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "now"}}}),
        ),
    )
    .await
    .unwrap();
    let failed = |ready: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
                  reason: &str| {
        ready.is_some_and(|c| c.status == "False" && c.reason == reason)
    };
    wait_for(
        "the wrong Git password reported",
        Duration::from_secs(60),
        || async {
            let status = repos.get("flux-system").await.ok()?.status?;
            failed(
                status.conditions?.into_iter().find(|c| c.type_ == "Ready"),
                "AuthenticationFailed",
            )
            .then_some(())
        },
    )
    .await;
    wait_for(
        "the wrong age key reported",
        Duration::from_secs(60),
        || async {
            let status = ks.get("apps").await.ok()?.status?;
            let ready = status
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (ready.status == "False" && ready.message.contains("decrypt")).then_some(())
        },
    )
    .await;

    oci_ready("False").await;

    // Everything written, searched for every secret, as is and base64-encoded.
    let mut written: Vec<(String, String)> = Vec::new();
    for (i, line) in controller.log().into_iter().enumerate() {
        written.push((format!("controller log line {}", i + 1), line));
    }
    written.push(("/metrics".into(), controller.metrics()));
    let discovery = kube::discovery::Discovery::new(fleet.client.clone())
        .run()
        .await
        .unwrap();
    let mut kinds = 0;
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if !caps.supports_operation(kube::discovery::verbs::LIST) {
                continue;
            }
            let api: Api<kube::api::DynamicObject> = Api::all_with(fleet.client.clone(), &ar);
            let list = api.list(&ListParams::default()).await.unwrap();
            kinds += 1;
            for mut obj in list.items {
                if ar.kind == "Secret" {
                    // A Secret's own data is where secrets belong; its metadata is not.
                    obj.data.as_object_mut().unwrap().remove("data");
                    obj.data.as_object_mut().unwrap().remove("stringData");
                }
                let what = format!(
                    "{} {}/{}",
                    ar.kind,
                    obj.metadata.namespace.clone().unwrap_or_default(),
                    obj.metadata.name.clone().unwrap_or_default()
                );
                written.push((what, serde_json::to_string(&obj).unwrap()));
            }
        }
    }
    assert!(kinds > 20, "discovery listed {kinds} kinds");
    assert!(
        written.iter().any(|(w, _)| w.starts_with("Event ")),
        "Events were searched"
    );
    assert!(
        controller
            .log()
            .iter()
            .any(|l| l.contains("\"level\":\"debug\"")),
        "the log is at debug level"
    );
    let mut leaks = Vec::new();
    // The form a docker config's `auth` field takes.
    let registry_login = format!("flux:{registry_password}");
    for secret in [
        &git_password,
        &db_password,
        &api_token,
        &age_secret,
        &registry_password,
        &registry_login,
    ] {
        for form in [secret.clone(), b64(secret)] {
            for (what, text) in &written {
                if text.contains(&form) {
                    leaks.push(format!("{what} holds {form:?}: {text}"));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "secrets written:\n{}", leaks.join("\n"));
    git.stop();
}
