//! Notification throughput and webhook latency on a devcluster (issue 17):
//!
//! 1. `BENCH_EVENTS` (default 20000) distinct events posted through the in-process channel, as
//!    the controllers post them, `BENCH_RATE` per second (default 1000; 0 = as fast as the
//!    channel takes them), dispatched to a `generic` Provider (a local HTTP endpoint): the rate
//!    at which they arrive, that every one arrives, and the process's memory before and after.
//! 2. A GitHub-signed Receiver call after a commit, to the ConfigMap of the new commit applied by
//!    the Kustomization (the GitRepository annotated, fetched, the Kustomization re-applied):
//!    `BENCH_RECEIVER_RUNS` (default 5) runs, each a new commit.
//!
//! Run: `cargo bench --profile dev -p ferroflux-controller --bench notifications`.

use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_controller::notification::{Notifier, dispatch, flux_event};
use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_notification::payload::hmac_sha256_hex;
use ferroflux_testkit::{WebhookSink, git};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ObjectReference};
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::events::EventType;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

async fn create(client: &kube::Client, object: Value) {
    let api_version = object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    let ar = kube::api::ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.clone(),
        plural: match kind.as_str() {
            "Secret" => "secrets".into(),
            "GitRepository" => "gitrepositories".into(),
            k => format!("{}s", k.to_lowercase()),
        },
        kind,
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "flux-system", &ar);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).expect("an object"),
    )
    .await
    .expect("created");
}

async fn poll<T, F, Fut>(f: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    loop {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let cluster = DevCluster::start(Config::memory("bench-notify"))
        .await
        .expect("devcluster");
    let client = cluster.client().await.expect("client");
    install_crds(&client).await.expect("CRDs");
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");

    // 1. Throughput to a generic provider.
    let sink = std::sync::Arc::new(WebhookSink::start());
    create(
        &client,
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
        "metadata": {"name": "generic", "namespace": "flux-system"},
        "spec": {"type": "generic", "address": sink.url()}}),
    )
    .await;
    create(
        &client,
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
        "metadata": {"name": "all", "namespace": "flux-system"},
        "spec": {"providerRef": {"name": "generic"},
                 "eventSources": [{"kind": "Kustomization", "name": "*"}]}}),
    )
    .await;
    let n = env("BENCH_EVENTS", 20_000);
    let (notifier, rx): (Notifier, _) = Notifier::channel(Some("bench".into()));
    let dispatcher = dispatch::spawn(client.clone(), rx, dispatch::Options::default());
    let regarding = ObjectReference {
        api_version: Some("kustomize.toolkit.fluxcd.io/v1".into()),
        kind: Some("Kustomization".into()),
        name: Some("apps".into()),
        namespace: Some("flux-system".into()),
        ..Default::default()
    };
    // One event first: the dispatcher's caches are filled before the clock starts.
    notifier
        .post(flux_event(
            "kustomize-controller",
            EventType::Normal,
            "Warmup",
            "warm-up",
            &regarding,
            BTreeMap::new(),
        ))
        .await;
    let warm = sink.clone();
    tokio::task::spawn_blocking(move || warm.wait_for(1, Duration::from_secs(60)))
        .await
        .expect("warm-up");
    sink.drain();
    let rate = env("BENCH_RATE", 1000);
    let rss_before = proc_status_kib("VmRSS");
    let started = Instant::now();
    for i in 0..n {
        if rate > 0 {
            // Paced: event i goes out at i/rate seconds.
            let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
            tokio::time::sleep_until(due.into()).await;
        }
        let metadata = BTreeMap::from([(
            "kustomize.toolkit.fluxcd.io/revision".to_string(),
            format!("main@sha1:{i:040x}"),
        )]);
        notifier
            .post(flux_event(
                "kustomize-controller",
                EventType::Normal,
                "ReconciliationSucceeded",
                &format!("event {i}"),
                &regarding,
                metadata,
            ))
            .await;
    }
    let posted = started.elapsed();
    // Read in batches, each taken out of the sink, so that what the process holds at the end
    // is the dispatcher's (and the rate limiter's keys), not the requests recorded.
    let counter = sink.clone();
    let seen = tokio::task::spawn_blocking(move || {
        let mut seen = std::collections::HashSet::new();
        let deadline = Instant::now() + Duration::from_secs(600);
        while seen.len() < n && Instant::now() < deadline {
            counter.wait_for(1, Duration::from_secs(600));
            for r in counter.drain() {
                let number = serde_json::from_slice::<Value>(&r.body)
                    .ok()
                    .and_then(|v| v["message"].as_str()?.strip_prefix("event ")?.parse().ok());
                if let Some(i) = number {
                    seen.insert(i);
                }
            }
        }
        seen
    })
    .await
    .expect("all events");
    let elapsed = started.elapsed();
    let seen: Vec<u64> = seen.into_iter().collect();
    println!(
        "events: {n} posted (rate {rate}/s) in {:.2?}, {} delivered in {:.2?}: {:.0} events/s, lost {}",
        posted,
        seen.len(),
        elapsed,
        n as f64 / elapsed.as_secs_f64(),
        n - seen.len()
    );
    let rss_after = proc_status_kib("VmRSS");
    println!(
        "memory: RSS {} MiB before, {} MiB after, peak {} MiB (the whole process: devcluster, dispatcher, rate limiter; the sink's requests read and dropped in batches)",
        rss_before / 1024,
        rss_after / 1024,
        proc_status_kib("VmHWM") / 1024,
    );
    dispatcher.abort();

    // 2. Receiver call to re-applied.
    let work = tempfile::tempdir().expect("tempdir");
    let repo = work.path().join("fleet");
    std::fs::create_dir_all(repo.join("apps")).expect("mkdir");
    let manifest = |n: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  run: \"{n}\"\n"
        )
    };
    std::fs::write(repo.join("apps/settings.yaml"), manifest(0)).expect("write");
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "0"]);
    let token = "bench-token";
    create(
        &client,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "webhook-token", "namespace": "flux-system"},
        "stringData": {"token": token}}),
    )
    .await;
    create(
        &client,
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
        "metadata": {"name": "github", "namespace": "flux-system"},
        "spec": {"type": "github", "events": ["push"], "secretRef": {"name": "webhook-token"},
                 "resources": [{"kind": "GitRepository", "name": "fleet"}]}}),
    )
    .await;
    create(&client, json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "flux-system"},
        "spec": {"url": format!("file://{}", repo.display()), "interval": "1h", "ref": {"branch": "main"}}})).await;
    create(
        &client,
        json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"interval": "1h", "prune": true, "path": "./apps",
                 "sourceRef": {"kind": "GitRepository", "name": "fleet"}}}),
    )
    .await;
    let config = cluster.kube_config().await.expect("config");
    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .expect("manager");
    let base = manager.receiver_url().expect("receiver").to_string();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let applied = |run: usize| {
        let configmaps = configmaps.clone();
        async move {
            let cm = configmaps.get_opt("settings").await.ok().flatten()?;
            (cm.data?.get("run").map(String::as_str) == Some(run.to_string().as_str()))
                .then_some(())
        }
    };
    poll(|| applied(0)).await;
    let receivers: Api<ferroflux_api::notification::Receiver> =
        Api::namespaced(client.clone(), "flux-system");
    let path = poll(|| async { receivers.get("github").await.ok()?.status?.webhook_path }).await;
    let agent = ureq_free_post;
    let mut times = Vec::new();
    for run in 1..=env("BENCH_RECEIVER_RUNS", 5) {
        std::fs::write(repo.join("apps/settings.yaml"), manifest(run)).expect("write");
        git(&repo, &["commit", "-qam", &run.to_string()]);
        let body = format!("{{\"ref\":\"refs/heads/main\",\"run\":{run}}}");
        let sig = format!(
            "sha256={}",
            hmac_sha256_hex(token.as_bytes(), body.as_bytes())
        );
        let started = Instant::now();
        let status = agent(&format!("{base}{path}"), &sig, body.as_bytes()).await;
        assert_eq!(status, 200);
        poll(|| applied(run)).await;
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "receiver call to re-applied ConfigMap: runs {}, median {:.0?}, max {:.0?}",
        times.len(),
        times[times.len() / 2],
        times[times.len() - 1]
    );
    let _ = manager.shutdown().await;
    cluster.shutdown().await;
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM); 0 where there is none.
fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// A GitHub push call over plain HTTP/1.0; the status code.
async fn ureq_free_post(url: &str, signature: &str, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url.strip_prefix("http://").unwrap_or(url);
    let (host, path) = url.split_once('/').unwrap_or((url, ""));
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let head = format!(
        "POST /{path} HTTP/1.0\r\nHost: {host}\r\nX-GitHub-Event: push\r\nX-Hub-Signature-256: {signature}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body).await.expect("write");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}
