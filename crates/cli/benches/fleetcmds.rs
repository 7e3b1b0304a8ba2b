//! Issue 18's benchmarks: the `ferroflux fleet` commands against many devclusters, each beside
//! the peer a Flux user runs today for the same answer, in the same run.
//!
//! The clusters (`crates/devcluster`, in memory, serving Flux's CRDs) run in this process; the
//! commands run as the real `ferroflux` binary (`FERROFLUX_BIN`, default
//! `$CARGO_TARGET_DIR/release/ferroflux`), one process per run, so a run's wall time includes
//! what a user pays: process start, reading the kubeconfig, TLS to every cluster.
//!
//! `status`: N clusters of K Kustomizations each (issue 18: 50 × 20), the objects created with
//! the status a controller writes (Ready, applied revision, an inventory), since the benchmark
//! is of the status command, not of reconciling. Timed: `ferroflux fleet status` over all of
//! them (its answer checked: every cluster ready); the peer is `kubectl get kustomizations -A
//! --context C` for every context, one after the other as a user types them, and the same
//! with all of them started at once.
//!
//! `diff`: a fleet repository of N cluster folders (2 staging, 2 canary, the rest production)
//! with K Kustomizations each (issue 18: 14 × 30; each an overlay of its own base, the
//! cluster's name substituted), and a commit that changes every base's image tag and one app's
//! memory. Timed: `ferroflux fleet diff --ref HEAD --against HEAD~1`, then against N live
//! devclusters running HEAD~1 (applied by the bench as kustomize-controller would), its answer
//! checked (every cluster changes, every app's Deployment). The peers, cluster by cluster:
//! `kubectl kustomize` of every Kustomization's path with the variables substituted (what
//! `flux build kustomization` does) piped into one `kubectl diff --server-side` per cluster;
//! and against the other ref, both revisions built so and compared.
//!
//! `serve`: `ferroflux fleet serve` over the status benchmark's clusters, warm (every cluster
//! listed). Timed: `GET /` on a new connection (first byte and whole page); the page in
//! Debian's headless chromium driven over the DevTools protocol (`--remote-debugging-pipe`),
//! navigation start to `first-contentful-paint` as the page's Performance API reports it (and,
//! first, the same of a tiny static page served by the bench: the floor of this harness); and
//! a change — a Kustomization's status written on a cluster — until its text arrives in an
//! event of `/events` (Server-Sent Events) and until it is in the DOM of the page loaded once
//! in chromium (a MutationObserver's promise, awaited over the protocol). No peer: Flux has no
//! web page.
//!
//! Run (numbers go to BENCHMARKS.md):
//! `cargo build --release -p ferroflux && cargo bench -p ferroflux --bench fleetcmds`
//! Flags: `--only status,diff,serve` (default: every benchmark), `--clusters N`, `--per-cluster K`,
//! `--runs R` (timed runs of our command, after one warm-up; default 5), `--no-peer`, `--page
//! FILE` (only the first paint of that file, served as it is: to try a page's shape).

mod common;
use common::{ferroflux_bin, load_average, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_devcluster::RunningCluster;
use ferroflux_testkit::cdp::Browser;
use futures_util::future::join_all;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const NAMESPACE: &str = "flux-system";
const SHA: &str = "5e1f0c2a9d3b4e6f7a8b9c0d1e2f3a4b5c6d7e8f";

struct Options {
    only: Vec<String>,
    clusters: Option<usize>,
    per_cluster: Option<usize>,
    runs: usize,
    peer: bool,
    page: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        only: Vec::new(),
        clusters: None,
        per_cluster: None,
        runs: 5,
        peer: true,
        page: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |what: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{what} needs a number"))
        };
        match a.as_str() {
            "--clusters" => o.clusters = Some(number("--clusters")),
            "--per-cluster" => o.per_cluster = Some(number("--per-cluster")),
            "--runs" => o.runs = number("--runs").max(1),
            "--no-peer" => o.peer = false,
            "--page" => o.page = Some(PathBuf::from(args.next().expect("--page needs a file"))),
            "--only" => {
                let v = args.next().expect("--only needs status, diff or serve");
                o.only = v.split(',').map(str::to_string).collect();
            }
            // cargo bench passes --bench.
            _ => {}
        }
    }
    o
}

impl Options {
    fn wants(&self, what: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == what)
    }
}

/// Min, median and max of some durations, in ms.
fn spread(times: &[Duration]) -> String {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let median = ms[ms.len() / 2];
    format!(
        "min {:.1} ms, median {median:.1} ms, max {:.1} ms ({} runs)",
        ms[0],
        ms[ms.len() - 1],
        ms.len()
    )
}

/// CPU seconds (user + system) used so far by this process (the devclusters serving) and by
/// its waited-for children (the commands measured).
fn cpu() -> (f64, f64) {
    let of = |who| {
        // SAFETY: getrusage(2) fills the zeroed struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
        t(u.ru_utime) + t(u.ru_stime)
    };
    (of(libc::RUSAGE_SELF), of(libc::RUSAGE_CHILDREN))
}

/// CPU used between two [`cpu`] readings: (the commands', the clusters'), in ms.
fn cpu_since(before: (f64, f64)) -> (f64, f64) {
    let now = cpu();
    ((now.1 - before.1) * 1000.0, (now.0 - before.0) * 1000.0)
}

/// The median CPU of some runs, the commands' and the clusters'.
fn cpu_spread(samples: &[(f64, f64)]) -> String {
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    format!(
        "CPU median {:.0} ms in the command(s), {:.0} ms in the clusters",
        median(samples.iter().map(|s| s.0).collect()),
        median(samples.iter().map(|s| s.1).collect())
    )
}

/// Runs a command, timing it; panics with its stderr when it fails to start.
fn timed(cmd: &mut Command) -> (Output, Duration) {
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (out, started.elapsed())
}

fn cond(status: &str, message: &str, generation: i64) -> Value {
    json!({"type": "Ready", "status": status, "reason": "ReconciliationSucceeded",
           "message": message, "observedGeneration": generation,
           "lastTransitionTime": "2026-12-01T00:00:00Z"})
}

fn revision() -> String {
    format!("main@sha1:{SHA}")
}

/// The cluster's `flux-system` GitRepository, with the status of a fetched artifact.
async fn git_repository(client: &kube::Client, cluster: &str) {
    let api: Api<GitRepository> = Api::namespaced(client.clone(), NAMESPACE);
    let obj: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "flux-system", "namespace": NAMESPACE},
        "spec": {"interval": "1m", "url": "ssh://git@github.example/acme/fleet-infra.git",
                 "ref": {"branch": "main"}, "secretRef": {"name": "flux-system"}},
    }))
    .expect("a GitRepository");
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let generation = created.metadata.generation.unwrap_or(1);
    let rev = revision();
    let status = json!({"status": {
        "observedGeneration": generation,
        "conditions": [cond("True", &format!("stored artifact for revision '{rev}'"), generation)],
        "artifact": {"digest": "sha256:2c1b7c6f0e0a6f3e8f2d4b3a1c9e8d7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d",
            "lastUpdateTime": "2026-12-01T00:00:00Z",
            "path": format!("gitrepository/flux-system/flux-system/{SHA}.tar.gz"), "revision": rev,
            "url": format!("http://source-controller.flux-system.svc.cluster.local./gitrepository/flux-system/flux-system/{SHA}.tar.gz"),
            "size": 48213},
    }});
    api.patch_status(
        "flux-system",
        &PatchParams::default(),
        &Patch::Merge(status),
    )
    .await
    .unwrap_or_else(|e| panic!("{cluster}: GitRepository status: {e}"));
}

/// Kustomization `app-NN`, Ready at [`SHA`], with the inventory of the four objects it applied
/// (a real controller's status carries one; it is most of the object's size).
async fn kustomization(client: &kube::Client, cluster: &str, i: usize) {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), NAMESPACE);
    let name = format!("app-{i:02}");
    let obj: Kustomization = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"interval": "10m", "retryInterval": "1m", "timeout": "5m", "prune": true,
                 "wait": true, "path": format!("./apps/production/{name}"),
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
                 "postBuild": {"substitute": {"cluster_name": cluster}}},
    }))
    .expect("a Kustomization");
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let generation = created.metadata.generation.unwrap_or(1);
    let rev = revision();
    let entries: Vec<Value> = [
        ("", "Namespace", "v1", "_".to_string()),
        ("apps", "Deployment", "v1", name.clone()),
        ("", "Service", "v1", name.clone()),
        ("", "ConfigMap", "v1", format!("{name}-config")),
    ]
    .iter()
    .map(|(group, kind, version, object)| {
        let id = if *kind == "Namespace" {
            format!("_{name}__{group}_{kind}")
        } else {
            format!("{name}_{object}_{group}_{kind}")
        };
        json!({"id": id, "v": version})
    })
    .collect();
    let status = json!({"status": {
        "observedGeneration": generation,
        "conditions": [cond("True", &format!("Applied revision: {rev}"), generation)],
        "lastAppliedRevision": rev, "lastAttemptedRevision": rev,
        "lastHandledReconcileAt": "2026-12-01T00:00:00Z",
        "inventory": {"entries": entries},
    }});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap_or_else(|e| panic!("{cluster}: Kustomization {name} status: {e}"));
}

/// `n` devclusters named `prefix-NN`, each with the `flux-system` GitRepository and `per`
/// Kustomizations, all Ready.
async fn status_fleet(prefix: &str, n: usize, per: usize) -> Vec<RunningCluster> {
    join_all((0..n).map(|c| async move {
        let name = format!("{prefix}-{c:02}");
        let (cluster, client) = ferroflux_testkit::flux_cluster(&name).await;
        git_repository(&client, &name).await;
        join_all((0..per).map(|i| kustomization(&client, &name, i))).await;
        cluster
    }))
    .await
}

/// The kubeconfig naming every cluster of `clusters`.
fn kubeconfig(dir: &Path, clusters: &[RunningCluster]) -> PathBuf {
    ferroflux_testkit::kubeconfig(dir, &clusters.iter().collect::<Vec<_>>())
}

/// Issue 18's first target: `fleet status` over 50 clusters of 20 Kustomizations under 1 s.
fn bench_status(bin: &Path, o: &Options, clusters: &[RunningCluster], kc: &Path, per: usize) {
    let n = clusters.len();
    let expect = format!("{n} clusters: {n} ready");
    let run = || {
        let before = cpu();
        let (out, took) = timed(
            Command::new(bin)
                .args(["fleet", "status", "--kubeconfig"])
                .arg(kc),
        );
        let used = cpu_since(before);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(&expect),
            "fleet status: {}\n{text}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = text.lines().filter(|l| l.contains("\tapp-")).count();
        assert_eq!(rows, n * per, "one row per Kustomization:\n{text}");
        (took, used)
    };
    run();
    let (ours, used): (Vec<Duration>, Vec<(f64, f64)>) = (0..o.runs).map(|_| run()).unzip();
    println!(
        "status: ferroflux fleet status, {n} clusters × {per}: {}; {} (load {})",
        spread(&ours),
        cpu_spread(&used),
        load_average()
    );
    if !o.peer {
        return;
    }
    let contexts: Vec<String> = clusters.iter().map(|c| c.name().to_string()).collect();
    let kubectl = |context: &str| {
        let mut cmd = Command::new("kubectl");
        cmd.args(["get", "kustomizations", "-A", "--context", context])
            .env("KUBECONFIG", kc);
        cmd
    };
    let check = |out: &Output, context: &str| {
        let rows = String::from_utf8_lossy(&out.stdout).lines().count();
        assert!(
            out.status.success() && rows == per + 1,
            "kubectl --context {context}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (mut sequential, mut used) = (Vec::new(), Vec::new());
    for _ in 0..o.runs.min(3) {
        let started = Instant::now();
        let before = cpu();
        for c in &contexts {
            let (out, _) = timed(&mut kubectl(c));
            check(&out, c);
        }
        sequential.push(started.elapsed());
        used.push(cpu_since(before));
    }
    println!(
        "status: peer, kubectl get kustomizations -A --context C for the {n} contexts in sequence: {}; {} (load {})",
        spread(&sequential),
        cpu_spread(&used),
        load_average()
    );
    let (mut parallel, mut used) = (Vec::new(), Vec::new());
    for _ in 0..o.runs.min(3) {
        let started = Instant::now();
        let before = cpu();
        let children: Vec<_> = contexts
            .iter()
            .map(|c| {
                (
                    c,
                    kubectl(c)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("kubectl runs"),
                )
            })
            .collect();
        for (c, child) in children {
            let out = child.wait_with_output().expect("kubectl ends");
            check(&out, c);
        }
        parallel.push(started.elapsed());
        used.push(cpu_since(before));
    }
    println!(
        "status: peer, the same {n} kubectl processes started at once: {}; {} (load {})",
        spread(&parallel),
        cpu_spread(&used),
        load_average()
    );
}

/// The fleet repository of the diff benchmark: `clusters` cluster folders (2 staging, 2
/// canary, the rest production), each with its `flux-system` sync and `apps` Kustomizations
/// (`apps.yaml`), each Kustomization building `apps/<env>/app-NN` (an overlay of
/// `apps/base/app-NN`: Namespace, Deployment, Service, ConfigMap; replicas and image tag per
/// environment) with the cluster's name substituted.
struct FleetRepo {
    dir: tempfile::TempDir,
    clusters: Vec<(String, &'static str)>,
    apps: usize,
}

fn env_of(i: usize) -> &'static str {
    match i {
        0 | 1 => "staging",
        2 | 3 => "canary",
        _ => "production",
    }
}

impl FleetRepo {
    fn new(clusters: usize, apps: usize) -> FleetRepo {
        let dir = tempfile::tempdir().unwrap();
        let clusters = (0..clusters)
            .map(|i| (format!("{}-{i:02}", env_of(i)), env_of(i)))
            .collect();
        let repo = FleetRepo {
            dir,
            clusters,
            apps,
        };
        ferroflux_testkit::git(repo.path(), &["init", "-q"]);
        repo.write_tree("v1", "16Mi");
        repo.commit("fleet");
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every file; `base_tag` is the base image tag, `memory` app-03's memory request (the
    /// "pull request" changes both).
    fn write_tree(&self, base_tag: &str, memory: &str) {
        let root = self.path();
        for a in 0..self.apps {
            let app = format!("app-{a:02}");
            let base = root.join("apps/base").join(&app);
            write(
                &base.join("kustomization.yaml"),
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- namespace.yaml\n- deployment.yaml\n- service.yaml\n- configmap.yaml\n",
            );
            write(
                &base.join("namespace.yaml"),
                &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {app}\n"),
            );
            let mem = if a == 3 { memory } else { "16Mi" };
            write(
                &base.join("deployment.yaml"),
                &format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {app}\n  namespace: {app}\n  labels:\n    app.kubernetes.io/name: {app}\n    cluster: ${{cluster_name}}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {app}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: {app}\n    spec:\n      containers:\n      - name: app\n        image: ghcr.io/acme/{app}:{base_tag}\n        env:\n        - name: CLUSTER\n          value: ${{cluster_name}}\n        ports:\n        - name: http\n          containerPort: 8080\n        resources:\n          requests:\n            cpu: 10m\n            memory: {mem}\n"
                ),
            );
            write(
                &base.join("service.yaml"),
                &format!(
                    "apiVersion: v1\nkind: Service\nmetadata:\n  name: {app}\n  namespace: {app}\nspec:\n  selector:\n    app.kubernetes.io/name: {app}\n  ports:\n  - name: http\n    port: 80\n    targetPort: http\n"
                ),
            );
            write(
                &base.join("configmap.yaml"),
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-config\n  namespace: {app}\ndata:\n  cluster: ${{cluster_name}}\n  log-level: info\n  feature-flags: \"search,checkout,recommendations\"\n"
                ),
            );
            for (env, replicas) in [("staging", 1), ("canary", 2), ("production", 3)] {
                write(
                    &root
                        .join("apps")
                        .join(env)
                        .join(&app)
                        .join("kustomization.yaml"),
                    &format!(
                        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base/{app}\nlabels:\n- pairs:\n    env: {env}\n  includeSelectors: false\nreplicas:\n- name: {app}\n  count: {replicas}\n"
                    ),
                );
            }
        }
        for (name, env) in &self.clusters {
            let dir = root.join("clusters").join(name);
            write(
                &dir.join("flux-system/gotk-sync.yaml"),
                &format!(
                    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: ssh://git@github.example/acme/fleet-infra.git\n  ref:\n    branch: main\n  secretRef:\n    name: flux-system\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/{name}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
                ),
            );
            let docs: Vec<String> = (0..self.apps)
                .map(|a| {
                    format!(
                        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app-{a:02}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps/{env}/app-{a:02}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substitute:\n      cluster_name: {name}\n"
                    )
                })
                .collect();
            write(&dir.join("apps.yaml"), &docs.join("---\n"));
        }
    }

    fn commit(&self, message: &str) {
        ferroflux_testkit::git(self.path(), &["add", "-A"]);
        ferroflux_testkit::git(self.path(), &["commit", "-q", "-m", message]);
    }
}

/// Applies what each cluster folder builds to at `rev` (the offline build `fleet diff` uses,
/// applied as kustomize-controller does, stage by stage), so that the live clusters run that
/// commit.
async fn apply_at(repo: &FleetRepo, rev: &str, clients: &[kube::Client]) {
    use ferroflux_controller::kustomization::build::Cluster as BuildCluster;
    use ferroflux_fleet::repo::{Tree, build_cluster};
    let tree = Tree::at(repo.path(), rev).expect("a revision of the repository");
    join_all(
        repo.clusters
            .iter()
            .zip(clients)
            .map(|((name, _), client)| {
                let tree = &tree;
                async move {
                    let built = build_cluster(tree, name, BuildCluster::Offline)
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let objects: Vec<Value> =
                        built.objects.into_values().map(|b| b.object).collect();
                    let applier = ferroflux_apply::applier::Applier::new(
                        client.clone(),
                        ferroflux_controller::kustomization::reconciler::FIELD_MANAGER,
                    );
                    applier
                        .apply_staged(objects, &ferroflux_apply::applier::ApplyOptions::default())
                        .await
                        .unwrap_or_else(|e| panic!("{name}: applying {rev}: {e}"));
                }
            }),
    )
    .await;
}

/// The peer's build of one cluster at the tree `root`: `kubectl kustomize` of each
/// Kustomization's path with the cluster's name substituted (as `flux build kustomization`
/// does), and the cluster folder's own manifests; one YAML stream.
fn peer_build(root: &Path, name: &str, env: &str, apps: usize) -> String {
    let mut out = String::new();
    for f in ["flux-system/gotk-sync.yaml", "apps.yaml"] {
        let text = std::fs::read_to_string(root.join("clusters").join(name).join(f)).unwrap();
        out.push_str(&text);
        out.push_str("---\n");
    }
    for a in 0..apps {
        let path = root.join(format!("apps/{env}/app-{a:02}"));
        let built = Command::new("kubectl")
            .arg("kustomize")
            .arg(&path)
            .output()
            .expect("kubectl runs");
        assert!(
            built.status.success(),
            "kubectl kustomize {}: {}",
            path.display(),
            String::from_utf8_lossy(&built.stderr)
        );
        out.push_str(&String::from_utf8_lossy(&built.stdout).replace("${cluster_name}", name));
        out.push_str("---\n");
    }
    out
}

/// Issue 18's second target: `fleet diff` of 14 clusters × 30 Kustomizations under 5 s,
/// against another ref and against the live clusters.
fn bench_diff(rt: &tokio::runtime::Runtime, bin: &Path, o: &Options) {
    let n = o.clusters.unwrap_or(14);
    let apps = o.per_cluster.unwrap_or(30);
    let repo = FleetRepo::new(n, apps);
    // The pull request: a new base image tag (every cluster's every app) and app-03's memory.
    repo.write_tree("v2", "32Mi");
    repo.commit("v2, app-03 gets 32Mi");
    let files = ferroflux_testkit::git(repo.path(), &["ls-files"])
        .lines()
        .count();
    println!("diff: {n} clusters × {apps} Kustomizations, {files} files in the repository");

    let expect = format!("{n} of {n} clusters would change");
    let run = |extra: &[&str]| {
        let before = cpu();
        let (out, took) = timed(
            Command::new(bin)
                .args(["fleet", "diff", "--repo"])
                .arg(repo.path())
                .args(["--ref", "HEAD"])
                .args(extra),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.code() == Some(1) && text.contains(&expect),
            "fleet diff {extra:?}: {}\n{}\n{}",
            out.status,
            text.lines().last().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr)
        );
        // Every app's Deployment changes on every cluster.
        let changed = text
            .matches(" changed (by Kustomization/flux-system/app-")
            .count();
        assert!(changed >= n * apps, "{changed} objects changed:\n{text}");
        (took, cpu_since(before))
    };
    run(&["--against", "HEAD~1"]);
    let (ours, used): (Vec<Duration>, Vec<(f64, f64)>) =
        (0..o.runs).map(|_| run(&["--against", "HEAD~1"])).unzip();
    println!(
        "diff: ferroflux fleet diff --ref HEAD --against HEAD~1: {}; {} (load {})",
        spread(&ours),
        cpu_spread(&used),
        load_average()
    );

    // The live clusters at HEAD~1.
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let clusters: Vec<(RunningCluster, kube::Client)> = rt.block_on(join_all(
        repo.clusters
            .iter()
            .map(|(name, _)| ferroflux_testkit::flux_cluster(name)),
    ));
    let clients: Vec<kube::Client> = clusters.iter().map(|(_, c)| c.clone()).collect();
    let running: Vec<RunningCluster> = clusters.into_iter().map(|(c, _)| c).collect();
    let kc = kubeconfig(dir.path(), &running);
    rt.block_on(apply_at(&repo, "HEAD~1", &clients));
    println!(
        "diff: {n} live clusters at HEAD~1 in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let live = ["--kubeconfig", kc.to_str().expect("a UTF-8 path")];
    run(&live);
    let (ours, used): (Vec<Duration>, Vec<(f64, f64)>) = (0..o.runs).map(|_| run(&live)).unzip();
    println!(
        "diff: ferroflux fleet diff --ref HEAD (against live): {}; {} (load {})",
        spread(&ours),
        cpu_spread(&used),
        load_average()
    );
    if !o.peer {
        return;
    }
    // The peer against live, cluster by cluster: what `flux diff kustomization` does per
    // Kustomization (build, substitute, server-side dry-run diff), here one kubectl diff per
    // cluster of every Kustomization's build.
    let started = Instant::now();
    let before = cpu();
    let mut changed = 0;
    for (name, env) in &repo.clusters {
        let stream = peer_build(repo.path(), name, env, apps);
        let mut child = Command::new("kubectl")
            .args([
                "diff",
                "--server-side",
                "--field-manager",
                ferroflux_controller::kustomization::reconciler::FIELD_MANAGER,
                "--force-conflicts",
                "--context",
                name,
                "-f",
                "-",
            ])
            .env("KUBECONFIG", &kc)
            .env("KUBECTL_EXTERNAL_DIFF", "diff -u -N")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(stream.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        // kubectl diff: 0 no change, 1 changes, >1 an error.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "kubectl diff --context {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        changed += usize::from(out.status.code() == Some(1));
    }
    assert_eq!(changed, n, "kubectl diff: every cluster changes");
    println!(
        "diff: peer, per cluster kubectl kustomize of each Kustomization + kubectl diff --server-side, in sequence: {:.1} ms; {} (load {})",
        started.elapsed().as_secs_f64() * 1000.0,
        cpu_spread(&[cpu_since(before)]),
        load_average()
    );
    // The peer against the other ref: both revisions' builds, compared per cluster.
    let started = Instant::now();
    let before = cpu();
    let old = tempfile::tempdir().unwrap();
    ferroflux_testkit::git(
        repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            old.path().to_str().expect("a UTF-8 path"),
            "HEAD~1",
        ],
    );
    let mut changed = 0;
    for (name, env) in &repo.clusters {
        let new = peer_build(repo.path(), name, env, apps);
        let before = peer_build(old.path(), name, env, apps);
        changed += usize::from(new != before);
    }
    assert_eq!(changed, n, "every cluster's build changes");
    println!(
        "diff: peer, per cluster kubectl kustomize of each Kustomization at both revisions, compared, in sequence: {:.1} ms; {} (load {})",
        started.elapsed().as_secs_f64() * 1000.0,
        cpu_spread(&[cpu_since(before)]),
        load_average()
    );
    drop(running);
}

/// `fleet serve` as a child process, stopped when dropped.
struct Server {
    child: std::process::Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Killed: a graceful stop would wait for the open event streams.
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One GET on a new connection: time to the first byte of the answer, time to its end, the
/// answer.
fn get(addr: &str, path: &str) -> (Duration, Duration, String) {
    use std::io::{Read, Write};
    let started = Instant::now();
    let mut s = std::net::TcpStream::connect(addr).expect("the server listens");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 1];
    s.read_exact(&mut first).expect("an answer");
    let ttfb = started.elapsed();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).expect("the whole answer");
    let all = started.elapsed();
    let mut text = vec![first[0]];
    text.extend(rest);
    (ttfb, all, String::from_utf8_lossy(&text).into_owned())
}

/// A Kustomization's Ready condition rewritten with `message` (status False: a failure the
/// page shows in its row and among the laggards).
async fn break_kustomization(client: &kube::Client, name: &str, message: &str) {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), NAMESPACE);
    let status = json!({"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "BuildFailed", "message": message,
        "observedGeneration": 1, "lastTransitionTime": "2026-12-01T00:00:00Z"}]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap_or_else(|e| panic!("Kustomization {name} status: {e}"));
}

/// A page with a heading and a line of text: what a first paint costs in this harness when
/// the page costs nothing.
const TINY_PAGE: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>floor</title></head><body><h1>Fleet</h1><p>a tiny page</p></body></html>";

/// A page served as it is to every request (HTTP/1.1, one answer per connection), on a free
/// port, by a thread that ends with the process.
struct StaticPage {
    addr: String,
}

impl StaticPage {
    fn serve(body: Vec<u8>) -> StaticPage {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().expect("its address").to_string();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                // The request's head, then the page (whatever was asked).
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match conn.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(&body);
            }
        });
        StaticPage { addr }
    }
}

/// `runs` navigations of `page` to `url`: for each, navigation start to the page received and
/// to its first contentful paint, as the page's Performance API reports them.
fn first_paints(
    browser: &mut Browser,
    page: &ferroflux_testkit::cdp::Page,
    url: &str,
    runs: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut response, mut fcp) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        browser.navigate(page, url);
        let v = browser.eval(
            page,
            "new Promise(r => { const f = () => { const p = performance.getEntriesByName('first-contentful-paint')[0]; if (p) { r([p.startTime, performance.getEntriesByType('navigation')[0].responseEnd]); } else { requestAnimationFrame(f); } }; f(); })",
        );
        let ms = |i: usize| {
            v[i].as_f64()
                .unwrap_or_else(|| panic!("paint entries: {v}"))
        };
        fcp.push(Duration::from_secs_f64(ms(0) / 1000.0));
        response.push(Duration::from_secs_f64(ms(1) / 1000.0));
    }
    (response, fcp)
}

/// `runs` navigations to `url`: for each, navigation start until the DOM holds the sections of
/// all `clusters` clusters (the first page's, then those the page's script asks for).
fn whole_fleet_times(
    browser: &mut Browser,
    page: &ferroflux_testkit::cdp::Page,
    url: &str,
    runs: usize,
    clusters: usize,
) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..runs {
        browser.navigate(page, url);
        let v = browser.eval(
            page,
            &format!("new Promise(r => {{ const f = () => {{ if (document.querySelectorAll('#fleet section[id^=k]').length === {clusters}) {{ r(performance.now()); }} else {{ requestAnimationFrame(f); }} }}; f(); }})"),
        );
        let ms = v
            .as_f64()
            .unwrap_or_else(|| panic!("the whole fleet's time: {v}"));
        times.push(Duration::from_secs_f64(ms / 1000.0));
    }
    times
}

/// `--page FILE`: the first paint of that file served as it is (to try a page's shape
/// without a server build).
fn bench_page(file: &Path, runs: usize) {
    let body = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let size = body.len();
    let served = StaticPage::serve(body);
    let url = format!("http://{}/", served.addr);
    let mut browser = Browser::launch();
    let page = browser.open(&url, 1280, 900);
    let (response, fcp) = first_paints(&mut browser, &page, &url, runs);
    println!(
        "page {} ({} KiB): navigation start to the page received {}; to first-contentful-paint {} (load {})",
        file.display(),
        size / 1024,
        spread(&response),
        spread(&fcp),
        load_average()
    );
}

/// Issue 18's third and fourth targets: the page's first paint under 100 ms from a warm
/// server, and a change on a cluster visible on the page under 1 s.
fn bench_serve(
    rt: &tokio::runtime::Runtime,
    bin: &Path,
    o: &Options,
    clusters: &[RunningCluster],
    kc: &Path,
) {
    use std::io::{BufRead, BufReader, Read, Write};
    let n = clusters.len();
    let mut child = Command::new(bin)
        .args(["fleet", "serve", "--addr", "127.0.0.1:0", "--kubeconfig"])
        .arg(kc)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("ferroflux runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the address line");
    let addr = line
        .trim()
        .strip_prefix("serving the fleet on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("fleet serve said {line:?}"))
        .to_string();
    let server = Server { child, addr };
    // Warm: every cluster listed (the page says so), then a few loads.
    let expect = format!("{n} clusters: {n} ready");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, _, page) = get(&server.addr, "/");
        if page.contains(&expect) {
            break;
        }
        assert!(Instant::now() < deadline, "the page never showed {expect}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..3 {
        get(&server.addr, "/");
    }
    let runs = (o.runs * 4).max(10);
    let (mut ttfb, mut full) = (Vec::new(), Vec::new());
    let mut size = 0;
    for _ in 0..runs {
        let (first, all, page) = get(&server.addr, "/");
        assert!(page.starts_with("HTTP/1.1 200") && page.contains(&expect));
        size = page.len();
        ttfb.push(first);
        full.push(all);
    }
    println!(
        "serve: GET / ({n} clusters; its first page {} KiB): first byte {}; whole page {} (load {})",
        size / 1024,
        spread(&ttfb),
        spread(&full),
        load_average()
    );

    // The page in chromium: its first contentful paint, then changes seen in its DOM.
    let mut browser = Browser::launch();
    // The floor: a tiny static page in the same browser and harness.
    let tiny = StaticPage::serve(TINY_PAGE.as_bytes().to_vec());
    let tiny_url = format!("http://{}/", tiny.addr);
    let tiny_page = browser.open(&tiny_url, 1280, 900);
    let (response, fcp) = first_paints(&mut browser, &tiny_page, &tiny_url, runs);
    println!(
        "serve: chromium, a tiny static page ({} bytes, the floor): navigation start to the page received {}; to first-contentful-paint {} (load {})",
        TINY_PAGE.len(),
        spread(&response),
        spread(&fcp),
        load_average()
    );
    let url = format!("http://{}/", server.addr);
    let page = browser.open(&url, 1280, 900);
    let (response, fcp) = first_paints(&mut browser, &page, &url, runs);
    println!(
        "serve: chromium, navigation start to the page received {}; to first-contentful-paint {} (load {})",
        spread(&response),
        spread(&fcp),
        load_average()
    );
    let whole = whole_fleet_times(&mut browser, &page, &url, runs, n);
    println!(
        "serve: chromium, navigation start to every cluster's rows in the DOM (the first page's, then the rest over /events) {} (load {})",
        spread(&whole),
        load_average()
    );

    // Changes: a status written on a cluster, until its text is in an SSE event and in the
    // page's DOM (the page loaded once, never reloaded).
    let mut sse = std::net::TcpStream::connect(&server.addr).expect("the server listens");
    write!(
        sse,
        "GET /events HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        server.addr
    )
    .unwrap();
    let (seen_tx, seen) = std::sync::mpsc::channel::<(String, Instant)>();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        while let Ok(n) = sse.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            // Markers are `bench-change-<n>;`: report each the first time it arrives.
            let text = String::from_utf8_lossy(&buf).into_owned();
            let mut rest = text.as_str();
            let mut last_end = 0;
            while let Some(at) = rest.find("bench-change-") {
                let tail = &rest[at..];
                let Some(end) = tail.find(';') else { break };
                if seen_tx
                    .send((tail[..end].to_string(), Instant::now()))
                    .is_err()
                {
                    return;
                }
                let consumed = text.len() - rest.len() + at + end;
                last_end = consumed;
                rest = &tail[end..];
            }
            buf.drain(..last_end.min(buf.len()));
        }
    });
    let client = rt.block_on(clusters[0].client()).expect("a client");
    let (mut to_sse, mut to_dom) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let marker = format!("bench-change-{i}");
        let watch = format!(
            "new Promise(r => {{ const el = document.getElementById('fleet'); const ok = () => el.textContent.includes('{marker};'); if (ok()) {{ r(true); return; }} new MutationObserver((_, o) => {{ if (ok()) {{ o.disconnect(); r(true); }} }}).observe(document.body, {{childList: true, subtree: true, characterData: true}}); }})"
        );
        let evaluation = browser.start_eval(&page, &watch);
        let written = Instant::now();
        rt.block_on(break_kustomization(
            &client,
            "app-00",
            &format!("kustomize build failed: {marker}; the bench's change"),
        ));
        let answer = browser.finish(evaluation, Duration::from_secs(60));
        to_dom.push(written.elapsed());
        assert_eq!(answer, json!(true), "{answer}");
        loop {
            let (got, at) = seen
                .recv_timeout(Duration::from_secs(60))
                .expect("the change in an SSE event");
            if got == marker {
                to_sse.push(at.duration_since(written));
                break;
            }
        }
    }
    println!(
        "serve: a status written on a cluster until its SSE event is read {}; until the text is in chromium's DOM {} (load {})",
        spread(&to_sse),
        spread(&to_dom),
        load_average()
    );
    drop(browser);
    drop(server);
}

fn main() {
    let o = options();
    if let Some(file) = &o.page {
        bench_page(file, (o.runs * 4).max(10));
        return;
    }
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
        "fleet commands bench with {}, load average {}",
        bin.display(),
        load_average()
    );
    if o.wants("status") || o.wants("serve") {
        let n = o.clusters.unwrap_or(50);
        let per = o.per_cluster.unwrap_or(20);
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let clusters = rt.block_on(status_fleet("prod", n, per));
        let kc = kubeconfig(dir.path(), &clusters);
        println!(
            "status: {n} clusters × {per} Kustomizations created in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        if o.wants("status") {
            bench_status(&bin, &o, &clusters, &kc, per);
        }
        if o.wants("serve") {
            bench_serve(&rt, &bin, &o, &clusters, &kc);
        }
    }
    if o.wants("diff") {
        bench_diff(&rt, &bin, &o);
    }
}
