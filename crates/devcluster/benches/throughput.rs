//! Throughput of a devcluster through kube-rs: 10,000 creates, a list and a watch of them
//! (in memory and with SQLite), and server-side apply of 4,000 objects (first and no-op);
//! with `BENCH_ONLY=pods`, whether 10,000 simulated Pods slow the API down (`pods_load`).
//! Run: `cargo bench -p ferroflux-devcluster --bench throughput`. Numbers go to BENCHMARKS.md.

use std::time::{Duration, Instant};

use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const CREATES: usize = 10_000;
const APPLIES: usize = 4_000;

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time (user + system) this process has used so far, in seconds. The machine the numbers
/// come from is shared, so wall time alone says more about the neighbours than about the code.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

async fn creates(c: &RunningCluster, label: &str) {
    let client = c.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let concurrency = 32;
    let cpu = cpu_secs();
    let t = Instant::now();
    futures_util::stream::iter(0..CREATES)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": { "name": format!("cm-{i:05}"), "labels": { "bench": "yes" } },
                    "data": { "index": i.to_string(), "payload": "x".repeat(200) },
                }))
                .unwrap();
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        })
        .buffer_unordered(concurrency)
        .collect::<Vec<_>>()
        .await;
    let create_time = t.elapsed();
    let create_cpu = cpu_secs() - cpu;

    // The first list, then the median of five more: a single request's wall time on a shared
    // machine says as much about the neighbours as about the server.
    let mut lists = Vec::new();
    for _ in 0..6 {
        let cpu = cpu_secs();
        let t = Instant::now();
        let list = api.list(&ListParams::default()).await.unwrap();
        lists.push((t.elapsed(), cpu_secs() - cpu));
        assert_eq!(list.items.len(), CREATES);
    }
    let (list_time, list_cpu) = lists[0];
    let mut later: Vec<_> = lists[1..].to_vec();
    later.sort_by_key(|(wall, _)| *wall);
    let (median_time, median_cpu) = later[later.len() / 2];
    // The same list as bytes: the server's share (and TLS), without kube-rs' typed decoding.
    let cpu = cpu_secs();
    let t = Instant::now();
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .unwrap();
    let raw = client.request_text(req).await.unwrap();
    let raw_time = t.elapsed();
    let raw_cpu = cpu_secs() - cpu;
    assert!(raw.len() > CREATES * 100);

    let t = Instant::now();
    let mut stream = Box::pin(api.watch(&WatchParams::default(), "0").await.unwrap());
    let mut added = 0;
    while added < CREATES {
        if let Some(Ok(WatchEvent::Added(_))) = stream.next().await {
            added += 1;
        }
    }
    let watch_time = t.elapsed();
    println!(
        "{label}: {CREATES} creates (concurrency {concurrency}) in {:.2}s = {:.0} writes/s (CPU {:.2}s = {:.0} writes per CPU-second, client and server); list of {CREATES} in {} ms (CPU {} ms; median of 5 more {} ms, CPU {} ms; as raw bytes {} ms, CPU {} ms, {:.1} MB); watch replay of {CREATES} in {} ms; RSS {:.0} MiB",
        create_time.as_secs_f64(),
        CREATES as f64 / create_time.as_secs_f64(),
        create_cpu,
        CREATES as f64 / create_cpu.max(0.01),
        list_time.as_millis(),
        (list_cpu * 1000.0) as u64,
        median_time.as_millis(),
        (median_cpu * 1000.0) as u64,
        raw_time.as_millis(),
        (raw_cpu * 1000.0) as u64,
        raw.len() as f64 / 1e6,
        watch_time.as_millis(),
        rss_mib()
    );
}

/// What the project's client stack (`ferroflux_kubeclient::client`: client-go's retry rule, a
/// retry layer behind one more request buffer) costs against kube-rs's default client, on the
/// same 10,000 creates, alternating three times. `BENCH_ONLY=client` runs only this.
async fn client_layers() {
    for round in 1..=3 {
        for ours in [false, true] {
            let c = DevCluster::start(Config::memory("bench-client"))
                .await
                .unwrap();
            let mut config = c.kube_config().await.unwrap();
            let (label, client) = if ours {
                (
                    "ferroflux_kubeclient::client",
                    ferroflux_kubeclient::client(config).unwrap(),
                )
            } else {
                config.default_retry = true;
                (
                    "kube-rs default client",
                    kube::Client::try_from(config).unwrap(),
                )
            };
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let cpu = cpu_secs();
            let t = Instant::now();
            futures_util::stream::iter(0..CREATES)
                .map(|i| {
                    let api = api.clone();
                    async move {
                        let cm: ConfigMap = serde_json::from_value(json!({
                            "metadata": { "name": format!("cm-{i:05}") },
                            "data": { "payload": "x".repeat(200) },
                        }))
                        .unwrap();
                        api.create(&PostParams::default(), &cm).await.unwrap();
                    }
                })
                .buffer_unordered(32)
                .collect::<Vec<_>>()
                .await;
            let wall = t.elapsed().as_secs_f64();
            let cpu = cpu_secs() - cpu;
            println!(
                "round {round}, {label}: {CREATES} creates in {wall:.2}s wall, CPU {cpu:.2}s (client and server) = {:.1} µs per create",
                cpu * 1e6 / CREATES as f64
            );
            c.shutdown().await;
        }
    }
}

async fn applies(c: &RunningCluster) {
    let client = c.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let run = |label: &'static str| {
        let api = api.clone();
        async move {
            let t = Instant::now();
            futures_util::stream::iter(0..APPLIES)
                .map(|i| {
                    let api = api.clone();
                    async move {
                        let name = format!("ssa-{i:05}");
                        let cm = json!({
                            "apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": { "name": name, "labels": { "app": "bench" } },
                            "data": { "index": i.to_string(), "a": "1", "b": "2" },
                        });
                        api.patch(
                            &name,
                            &PatchParams::apply("bench").force(),
                            &Patch::Apply(&cm),
                        )
                        .await
                        .unwrap();
                    }
                })
                .buffer_unordered(4)
                .collect::<Vec<_>>()
                .await;
            let d: Duration = t.elapsed();
            println!(
                "memory: server-side apply of {APPLIES} (concurrency 4), {label}: {:.2}s = {:.0} applies/s; RSS {:.0} MiB",
                d.as_secs_f64(),
                APPLIES as f64 / d.as_secs_f64(),
                rss_mib()
            );
        }
    };
    run("first apply").await;
    run("no-op re-apply").await;
}

/// Latencies (sorted, µs) of `n` sequential requests made by `op`.
async fn latencies<F, Fut>(n: usize, mut op: F) -> Vec<u128>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        op(i).await;
        out.push(t.elapsed().as_micros());
    }
    out.sort_unstable();
    out
}

fn pct(v: &[u128], p: f64) -> u128 {
    v[((v.len() as f64 - 1.0) * p) as usize]
}

/// The same everyday requests (GET of a ConfigMap, list of a namespace's 100 ConfigMaps,
/// create) before and after a Deployment of 10,000 replicas filled the simulated data plane with
/// 10,000 Pods (and their ReplicaSet): the Pods must not slow the API down measurably.
async fn pods_load() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    const PODS: i64 = 10_000;
    let c = DevCluster::start(Config::memory("bench-pods"))
        .await
        .unwrap();
    let client = c.client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..100 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": format!("base-{i:03}") }, "data": { "a": "1" },
        }))
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let measure = |label: &'static str, round: usize| {
        let cms = cms.clone();
        async move {
            let get = latencies(2000, |i| {
                let cms = cms.clone();
                async move {
                    cms.get(&format!("base-{:03}", i % 100)).await.unwrap();
                }
            })
            .await;
            let list = latencies(200, |_| {
                let cms = cms.clone();
                async move {
                    assert_eq!(
                        cms.list(&ListParams::default()).await.unwrap().items.len() % 100,
                        0
                    );
                }
            })
            .await;
            let create = latencies(500, |i| {
                let cms = cms.clone();
                async move {
                    let cm: ConfigMap = serde_json::from_value(json!({
                        "metadata": { "name": format!("new-{round}-{i:04}") }, "data": { "a": "1" },
                    }))
                    .unwrap();
                    cms.create(&PostParams::default(), &cm).await.unwrap();
                    cms.delete(&format!("new-{round}-{i:04}"), &Default::default())
                        .await
                        .unwrap();
                }
            })
            .await;
            println!(
                "{label}: GET p50 {} µs p99 {} µs; list of 100 p50 {} µs p99 {} µs; create+delete p50 {} µs p99 {} µs; RSS {:.0} MiB",
                pct(&get, 0.5),
                pct(&get, 0.99),
                pct(&list, 0.5),
                pct(&list, 0.99),
                pct(&create, 0.5),
                pct(&create, 0.99),
                rss_mib()
            );
        }
    };
    measure("without pods", 0).await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "load" },
        "spec": { "replicas": PODS, "selector": { "matchLabels": { "app": "load" } },
                  "template": { "metadata": { "labels": { "app": "load" } },
                                "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } },
    }))
    .unwrap();
    let cpu = cpu_secs();
    let t = Instant::now();
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let created = t.elapsed();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let listed = pods
        .list(&ListParams::default().labels("app=load"))
        .await
        .unwrap();
    assert_eq!(listed.items.len() as i64, PODS);
    assert!(
        listed
            .items
            .iter()
            .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    );
    println!(
        "a Deployment of {PODS} replicas: its ReplicaSet and {PODS} Running Pods (two writes each) in {} ms (CPU {:.2} s, client and server); RSS {:.0} MiB",
        created.as_millis(),
        cpu_secs() - cpu,
        rss_mib()
    );
    measure("with 10,000 pods", 1).await;
    c.shutdown().await;
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if std::env::var("BENCH_ONLY").as_deref() == Ok("client") {
            client_layers().await;
            return;
        }
        if std::env::var("BENCH_ONLY").as_deref() == Ok("pods") {
            pods_load().await;
            return;
        }
        let mem = DevCluster::start(Config::memory("bench-mem"))
            .await
            .unwrap();
        creates(&mem, "memory").await;
        mem.shutdown().await;
        // `BENCH_ONLY=memory` stops here (for quick profiling runs).
        if std::env::var("BENCH_ONLY").as_deref() == Ok("memory") {
            return;
        }

        let dir = tempfile::tempdir().unwrap();
        let disk = DevCluster::start(Config::file("bench-sqlite", dir.path().join("c.db")))
            .await
            .unwrap();
        creates(&disk, "sqlite").await;
        disk.shutdown().await;

        let mem = DevCluster::start(Config::memory("bench-ssa"))
            .await
            .unwrap();
        applies(&mem).await;
        mem.shutdown().await;
    });
}
