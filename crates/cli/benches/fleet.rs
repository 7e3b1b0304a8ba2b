//! Issue 6's benchmark, in the shape of Flux's published one: N Kustomizations built from one
//! GitRepository, each applying a ServiceAccount, a Service, an Ingress and a Deployment with
//! `wait: true` and `postBuild` substitution (each Kustomization substitutes its own name, so
//! the N apply 4·N distinct objects), onto a local cluster.
//!
//! The cluster (`crates/devcluster`, SQLite file storage as `ferroflux dev up` uses, or memory)
//! runs in this process; the controllers run as the real `ferroflux controller` process
//! (`FERROFLUX_BIN`, default `$CARGO_TARGET_DIR/release/ferroflux`), so its peak RSS (`VmHWM`)
//! and CPU time are its own. The Git repository is a real repository on disk, served over
//! `file://`.
//!
//! Two phases per N, each ending when every Kustomization is Ready=True with
//! `lastAppliedRevision` at the expected commit (watched, never slept on):
//! "create", Flux's own shape: the N Kustomizations are created at once while the repository
//! holds the app (4·N objects created, health-checked), timed from the first create request;
//! "commit": a commit changes the Deployment's image and a label on every object (4·N
//! updates, a new Deployment generation each), timed from the moment the commit is written
//! (the GitRepository is then asked to reconcile, as a Git webhook through Flux's
//! notification receiver would).
//!
//! With `--kind helmrelease`, issue 15's benchmark in the shape of Flux's HelmRelease one: N
//! HelmReleases of the podinfo chart from one source (the chart in the Git repository, each
//! HelmRelease's chart template becoming its own HelmChart as in Flux), installed into `apps`;
//! "create" ends when all N are Ready with the chart's version released, "commit" is a chart
//! version bump (a commit of `Chart.yaml`) until all N are upgraded to it. `--chart DIR` takes
//! another chart (such as the public podinfo chart, read in place, never committed); the
//! default is examples/fleet-infra's podinfo chart.
//!
//! Run (numbers go to BENCHMARKS.md):
//! `cargo build --release -p ferroflux && cargo bench -p ferroflux --bench fleet -- --sizes 100,500,1000 --concurrent 20`
//! `cargo bench -p ferroflux --bench fleet -- --kind helmrelease --sizes 1000 --concurrent 20`
//! Flags: `--sizes` (default 100), `--concurrent` (the controller's `--concurrent`, default 4),
//! `--storage sqlite|memory` (default sqlite), `--keep` (leave the work directory),
//! `--kind kustomization|helmrelease` (default kustomization), `--chart DIR`.

mod common;
use common::{ferroflux_bin, load_average, write};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferroflux_api::{FluxObject, GitRepository, HelmRelease, Kustomization};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::git;
use futures_util::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

const NAMESPACE: &str = "flux-system";
const APPS_NAMESPACE: &str = "apps";

struct Options {
    sizes: Vec<usize>,
    concurrent: u16,
    memory: bool,
    keep: bool,
    /// Seconds a phase may take before the run fails.
    limit: u64,
    /// HelmReleases instead of Kustomizations.
    helm: bool,
    /// The chart the HelmReleases install.
    chart: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        sizes: vec![100],
        concurrent: 4,
        memory: false,
        keep: false,
        limit: 600,
        helm: false,
        chart: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/fleet-infra/charts/podinfo/6.7.1"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sizes" => {
                let v = args
                    .next()
                    .expect("--sizes needs a list such as 100,500,1000");
                o.sizes = v
                    .split(',')
                    .map(|s| s.trim().parse().expect("--sizes: numbers"))
                    .collect();
            }
            "--concurrent" => {
                let v = args.next().expect("--concurrent needs a number");
                o.concurrent = v.parse().expect("--concurrent: a number");
            }
            "--storage" => match args.next().as_deref() {
                Some("memory") => o.memory = true,
                Some("sqlite") => o.memory = false,
                other => panic!("--storage memory|sqlite, not {other:?}"),
            },
            "--keep" => o.keep = true,
            "--kind" => match args.next().as_deref() {
                Some("helmrelease") => o.helm = true,
                Some("kustomization") => o.helm = false,
                other => panic!("--kind kustomization|helmrelease, not {other:?}"),
            },
            "--chart" => o.chart = PathBuf::from(args.next().expect("--chart needs a directory")),
            "--limit" => {
                let v = args.next().expect("--limit needs seconds");
                o.limit = v.parse().expect("--limit: seconds");
            }
            // cargo bench passes --bench; libtest-style filters are not used here.
            _ => {}
        }
    }
    o
}

/// A field of `/proc/<pid>/status` in kB.
fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse().ok())
}

/// User + system CPU seconds of a process (`self` or a pid).
fn cpu_secs(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The app every Kustomization applies; `${APP_NAME}` and `${APP_NAMESPACE}` come from each
/// Kustomization's `postBuild.substitute`. `tag` and `tier` change between the commits.
fn write_app(repo: &Path, tag: &str, tier: &str) {
    let app = repo.join("app");
    write(
        &app.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- serviceaccount.yaml\n- service.yaml\n- ingress.yaml\n- deployment.yaml\n",
    );
    let labels = format!("    app.kubernetes.io/name: ${{APP_NAME}}\n    tier: {tier}\n");
    write(
        &app.join("serviceaccount.yaml"),
        &format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${{APP_NAME}}\n  namespace: ${{APP_NAMESPACE}}\n  labels:\n{labels}"
        ),
    );
    write(
        &app.join("service.yaml"),
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: ${{APP_NAME}}\n  namespace: ${{APP_NAMESPACE}}\n  labels:\n{labels}spec:\n  type: ClusterIP\n  selector:\n    app.kubernetes.io/name: ${{APP_NAME}}\n  ports:\n  - name: http\n    port: 9898\n    protocol: TCP\n    targetPort: http\n"
        ),
    );
    write(
        &app.join("ingress.yaml"),
        &format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: ${{APP_NAME}}\n  namespace: ${{APP_NAMESPACE}}\n  labels:\n{labels}spec:\n  rules:\n  - host: ${{APP_NAME}}.example.com\n    http:\n      paths:\n      - path: /\n        pathType: Prefix\n        backend:\n          service:\n            name: ${{APP_NAME}}\n            port:\n              name: http\n"
        ),
    );
    write(
        &app.join("deployment.yaml"),
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${{APP_NAME}}\n  namespace: ${{APP_NAMESPACE}}\n  labels:\n{labels}spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: ${{APP_NAME}}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: ${{APP_NAME}}\n    spec:\n      serviceAccountName: ${{APP_NAME}}\n      containers:\n      - name: podinfo\n        image: ghcr.io/stefanprodan/podinfo:{tag}\n        ports:\n        - name: http\n          containerPort: 9898\n          protocol: TCP\n        resources:\n          requests:\n            cpu: 10m\n            memory: 16Mi\n"
        ),
    );
}

/// The chart every HelmRelease installs, at `charts/podinfo`, copied from `from` with its
/// `version` set to `version`.
fn write_chart(repo: &Path, from: &Path, version: &str) {
    let to = repo.join("charts/podinfo");
    let mut stack = vec![from.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(from).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            if rel == Path::new("Chart.yaml") {
                let text = String::from_utf8(bytes).unwrap();
                let lines: Vec<String> = text
                    .lines()
                    .map(|l| {
                        if l.starts_with("version:") {
                            format!("version: {version}")
                        } else {
                            l.to_string()
                        }
                    })
                    .collect();
                bytes = format!("{}\n", lines.join("\n")).into_bytes();
            }
            std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
            std::fs::write(to.join(rel), bytes).unwrap();
        }
    }
}

/// What the bench creates N of and waits for.
trait Fleet: FluxObject {
    /// Object `i` as applied.
    fn object(i: usize) -> Value;
    /// Ready for what the phase expects: the commit (Kustomization) or the chart version
    /// released (HelmRelease).
    fn ready_for(&self, want: &str) -> bool;
}

impl Fleet for Kustomization {
    fn object(i: usize) -> Value {
        let name = format!("app-{i:04}");
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "interval": "1h",
                "retryInterval": "10s",
                "timeout": "5m",
                "sourceRef": {"kind": "GitRepository", "name": "fleet"},
                "path": "./app",
                "prune": true,
                "wait": true,
                "postBuild": {"substitute": {
                    "APP_NAME": name,
                    "APP_NAMESPACE": APPS_NAMESPACE,
                }},
            },
        })
    }
    fn ready_for(&self, want: &str) -> bool {
        ready_at(self, want)
    }
}

impl Fleet for HelmRelease {
    fn object(i: usize) -> Value {
        let name = format!("app-{i:04}");
        json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "interval": "1h",
                "timeout": "5m",
                "releaseName": name,
                "targetNamespace": APPS_NAMESPACE,
                "chart": {"spec": {
                    "chart": "./charts/podinfo",
                    "interval": "1h",
                    "sourceRef": {"kind": "GitRepository", "name": "fleet"},
                }},
            },
        })
    }
    fn ready_for(&self, want: &str) -> bool {
        let Some(status) = &self.status else {
            return false;
        };
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready
            && status.observed_generation == self.metadata.generation
            && status
                .history
                .as_ref()
                .and_then(|h| h.first())
                .is_some_and(|s| s.chart_version == want)
    }
}

fn commit(repo: &Path, message: &str) -> String {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

/// A free loopback port for the controller's metrics.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Controller {
    child: Child,
    metrics: String,
}

impl Controller {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The controller's `/metrics` page over plain HTTP/1.0.
    fn scrape(&self) -> String {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(&self.metrics) else {
            return String::new();
        };
        let _ = write!(s, "GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", self.metrics);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }
}

/// Stops the process (SIGTERM) and waits for it, also when a failed run unwinds.
impl Drop for Controller {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid, which has not been waited for yet.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// Sums a metric's samples whose line contains every one of `filters`.
fn metric_sum(page: &str, name: &str, filters: &[&str]) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(name) && filters.iter().all(|f| l.contains(f)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Ready=True with `lastAppliedRevision` at `sha`.
fn ready_at(k: &Kustomization, sha: &str) -> bool {
    let Some(status) = &k.status else {
        return false;
    };
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    ready
        && status
            .last_applied_revision
            .as_deref()
            .is_some_and(|r| r.ends_with(sha))
}

struct Phase {
    first_ready: Duration,
    all_ready: Duration,
    controller_cpu: f64,
    cluster_cpu: f64,
    reconciles: f64,
}

/// Watches the Kustomizations until all `n` are Ready at `sha`; `started` is the commit.
async fn wait_all_ready<K: Fleet>(
    controller: &Controller,
    api: &Api<K>,
    n: usize,
    sha: &str,
    started: Instant,
    limit: Duration,
) -> (Duration, Duration) {
    // Name → (ready at `sha`, the Ready condition's message for a failure report).
    let mut seen: HashMap<String, (bool, String)> = HashMap::new();
    let mut first = None;
    // One page: the devcluster serves a list's continuation pages at the current
    // resourceVersion instead of the first page's, so a watch resumed from a paged list can
    // miss updates to objects of the first page (found by this bench; see BENCHMARKS.md).
    let stream = watcher(api.clone(), watcher::Config::default().page_size(100_000));
    let mut stream = std::pin::pin!(stream);
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let ready = seen.values().filter(|(r, _)| *r).count();
        if ready > 0 && first.is_none() {
            first = Some(started.elapsed());
        }
        if ready == n {
            return (first.unwrap_or_default(), started.elapsed());
        }
        let event = tokio::time::timeout_at(deadline, stream.next()).await;
        let Ok(Some(event)) = event else {
            // What the API says now, against what the watch delivered.
            for (name, (ready, _)) in seen.iter().filter(|(_, (r, _))| !*r).take(3) {
                if let Ok(k) = api.get(name).await {
                    eprintln!(
                        "{name}: watched ready={ready}, a fresh GET says ready={} (resourceVersion {:?}, conditions {:?})",
                        k.ready_for(sha),
                        k.meta().resource_version,
                        k.conditions()
                            .iter()
                            .map(|c| format!("{}={} {}", c.type_, c.status, c.reason))
                            .collect::<Vec<_>>()
                    );
                }
            }
            let page = controller.scrape();
            eprintln!(
                "controller: {} {} reconciles recorded, {} running now",
                metric_sum(
                    &page,
                    "gotk_reconcile_duration_seconds_count",
                    &[&format!("kind=\"{}\"", K::KIND)]
                ),
                K::KIND,
                metric_sum(
                    &page,
                    "controller_runtime_active_workers",
                    &[&format!("controller=\"{}\"", K::KIND.to_lowercase())]
                ),
            );
            panic!(
                "only {ready} of {n} {} objects Ready at {sha} after {:?}; not ready: {:?}",
                K::KIND,
                limit,
                seen.iter()
                    .filter(|(_, (r, _))| !*r)
                    .map(|(k, (_, m))| format!("{k}: {m}"))
                    .take(5)
                    .collect::<Vec<_>>()
            );
        };
        match event {
            Ok(watcher::Event::Apply(k) | watcher::Event::InitApply(k)) => {
                let name = k.meta().name.clone().unwrap_or_default();
                let message = k
                    .conditions()
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .map(|c| format!("{} {}: {}", c.status, c.reason, c.message))
                    .unwrap_or_else(|| "no Ready condition".into());
                seen.insert(name, (k.ready_for(sha), message));
            }
            Ok(watcher::Event::Delete(k)) => {
                seen.remove(&k.meta().name.clone().unwrap_or_default());
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
            Err(e) => eprintln!("watch error (retried): {e}"),
        }
    }
}

/// Commits with `change`, asks the GitRepository to reconcile, waits for all Ready for
/// `want` (`None`: the commit).
#[allow(clippy::too_many_arguments)]
async fn measure<K: Fleet>(
    repo: &Path,
    change: impl FnOnce(&Path),
    message: &str,
    repos: &Api<GitRepository>,
    objects: &Api<K>,
    controller: &Controller,
    n: usize,
    limit: Duration,
    want: Option<&str>,
) -> Phase {
    let reconciles_before = reconciles::<K>(controller);
    let controller_cpu = cpu_secs(&controller.pid().to_string());
    let cluster_cpu = cpu_secs("self");
    change(repo);
    let sha = commit(repo, message);
    let started = Instant::now();
    // What a Git push webhook does through Flux's notification receiver.
    repos
        .patch(
            "fleet",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "reconcile.fluxcd.io/requestedAt": format!("{message}-{sha}")
            }}})),
        )
        .await
        .expect("annotate the GitRepository");
    let want = want.unwrap_or(&sha);
    let (first_ready, all_ready) =
        wait_all_ready(controller, objects, n, want, started, limit).await;
    let reconciles_after = reconciles::<K>(controller);
    Phase {
        first_ready,
        all_ready,
        controller_cpu: cpu_secs(&controller.pid().to_string()) - controller_cpu,
        cluster_cpu: cpu_secs("self") - cluster_cpu,
        reconciles: reconciles_after - reconciles_before,
    }
}

/// The reconciles of kind `K` the controller's `/metrics` counts.
fn reconciles<K: Fleet>(controller: &Controller) -> f64 {
    metric_sum(
        &controller.scrape(),
        "gotk_reconcile_duration_seconds_count",
        &[&format!("kind=\"{}\"", K::KIND)],
    )
}

async fn start_cluster(dir: &Path, memory: bool) -> RunningCluster {
    let config = if memory {
        Config::memory("bench")
    } else {
        Config::file("bench", dir.join("bench.db"))
    };
    let cluster = DevCluster::start(config).await.expect("devcluster starts");
    let client = cluster.client().await.unwrap();
    ferroflux_controller::manager::install_crds(&client)
        .await
        .expect("CRDs installed");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    for ns in [NAMESPACE, APPS_NAMESPACE] {
        namespaces
            .patch(
                ns,
                &PatchParams::apply("bench").force(),
                &Patch::Apply(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                ),
            )
            .await
            .unwrap();
    }
    cluster
}

fn start_controller(dir: &Path, concurrent: u16) -> Controller {
    let metrics = format!("127.0.0.1:{}", free_port());
    let health = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join("controller.log")).unwrap();
    let child = Command::new(ferroflux_bin())
        .arg("controller")
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .args(["--context", "bench"])
        .arg("--storage-path")
        .arg(dir.join("artifacts"))
        .args(["--storage-addr", "127.0.0.1:0"])
        .args(["--metrics-addr", &metrics, "--health-addr", &health])
        .arg("--allow-file-urls")
        .args(["--concurrent", &concurrent.to_string()])
        .arg("--log-level")
        .arg(std::env::var("FLEET_LOG_LEVEL").unwrap_or_else(|_| "warn".into()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} (build it: cargo build --release -p ferroflux, or set FERROFLUX_BIN): {e}",
                ferroflux_bin().display()
            )
        });
    Controller { child, metrics }
}

async fn run_size<K: Fleet>(n: usize, opts: &Options) {
    let work = tempfile::Builder::new()
        .prefix("fleet-bench-")
        .tempdir()
        .unwrap();
    let dir = work.path().to_path_buf();
    // Kept from the start with --keep, so a failed run leaves the controller's log behind.
    let work = if opts.keep {
        println!("work directory (kept): {}", dir.display());
        let _ = work.keep();
        None
    } else {
        Some(work)
    };
    let cluster = start_cluster(&dir, opts.memory).await;
    ferroflux_devcluster::write_kubeconfig(&dir.join("kubeconfig"), &[&cluster], None).unwrap();
    let client = cluster.client().await.unwrap();

    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    // The HelmReleases' chart versions: the first, then the bump.
    let (v1, v2) = ("1.0.0", "1.0.1");
    if opts.helm {
        write_chart(&repo, &opts.chart, v1);
    } else {
        write_app(&repo, "6.9.0", "frontend");
    }
    let first = commit(&repo, "app");
    let first_want = if opts.helm { v1 } else { first.as_str() };

    let controller = start_controller(&dir, opts.concurrent);
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), NAMESPACE);
    let objects: Api<K> = Api::namespaced(client.clone(), NAMESPACE);
    let apply = PatchParams::apply("bench").force();
    repos
        .patch(
            "fleet",
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": "fleet", "namespace": NAMESPACE},
                "spec": {
                    "url": format!("file://{}", repo.display()),
                    "ref": {"branch": "main"},
                    "interval": "10m",
                },
            })),
        )
        .await
        .unwrap();
    let limit = Duration::from_secs(opts.limit);

    // Phase 1, Flux's own shape: N objects created at once, the app at the first commit.
    let reconciles_before = reconciles::<K>(&controller);
    let controller_cpu = cpu_secs(&controller.pid().to_string());
    let cluster_cpu = cpu_secs("self");
    let started = Instant::now();
    futures_util::stream::iter(0..n)
        .map(|i| {
            let api = objects.clone();
            let apply = apply.clone();
            async move {
                let name = format!("app-{i:04}");
                api.patch(&name, &apply, &Patch::Apply(K::object(i)))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let (first_ready, all_ready) =
        wait_all_ready(&controller, &objects, n, first_want, started, limit).await;
    let create = Phase {
        first_ready,
        all_ready,
        controller_cpu: cpu_secs(&controller.pid().to_string()) - controller_cpu,
        cluster_cpu: cpu_secs("self") - cluster_cpu,
        reconciles: reconciles::<K>(&controller) - reconciles_before,
    };
    let rss_after_create = proc_status_kb(controller.pid(), "VmHWM:").unwrap_or(0);

    // Phase 2: a commit changing every object (image, label; or the chart's version),
    // measured from the commit.
    let chart = opts.chart.clone();
    let update = measure(
        &repo,
        |r| {
            if opts.helm {
                write_chart(r, &chart, v2);
            } else {
                write_app(r, "6.9.1", "web");
            }
        },
        "update",
        &repos,
        &objects,
        &controller,
        n,
        limit,
        opts.helm.then_some(v2),
    )
    .await;
    let hwm = proc_status_kb(controller.pid(), "VmHWM:").unwrap_or(0);
    let rss = proc_status_kb(controller.pid(), "VmRSS:").unwrap_or(0);
    for (label, p) in [
        (
            format!("create (from the first {} created)", K::KIND),
            &create,
        ),
        ("commit (from the commit)".to_string(), &update),
    ] {
        println!(
            "N={n} concurrent={} {label}: all Ready in {:.1} s (first Ready {:.2} s); \
             {:.0} {} reconciles ({:.1}/s); CPU: controller {:.1} s, cluster+bench {:.1} s",
            opts.concurrent,
            p.all_ready.as_secs_f64(),
            p.first_ready.as_secs_f64(),
            p.reconciles,
            K::KIND,
            p.reconciles / p.all_ready.as_secs_f64(),
            p.controller_cpu,
            p.cluster_cpu,
        );
    }
    println!(
        "N={n}: controller peak RSS (VmHWM) {:.1} MiB (after create {:.1} MiB), RSS at the end {:.1} MiB; load average {}",
        hwm as f64 / 1024.0,
        rss_after_create as f64 / 1024.0,
        rss as f64 / 1024.0,
        load_average()
    );
    drop(controller);
    drop(client);
    cluster.shutdown().await;
    drop(work);
}

fn main() {
    let opts = options();
    let bin = ferroflux_bin();
    if !bin.is_file() {
        eprintln!(
            "{} not found: build it first (cargo build --release -p ferroflux) or set FERROFLUX_BIN",
            bin.display()
        );
        std::process::exit(2);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "fleet bench: {}s with {} (storage {}), load average {}",
        if opts.helm {
            "HelmRelease"
        } else {
            "Kustomization"
        },
        bin.display(),
        if opts.memory { "memory" } else { "sqlite" },
        load_average()
    );
    for &n in &opts.sizes {
        if opts.helm {
            rt.block_on(run_size::<HelmRelease>(n, &opts));
        } else {
            rt.block_on(run_size::<Kustomization>(n, &opts));
        }
    }
}
