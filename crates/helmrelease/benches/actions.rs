//! Release actions on a devcluster, timed: N releases of the corpus chart `app-basic`
//! installed, then all upgraded, `CONCURRENCY` at a time (wait on, hooks on), and the storage
//! codec alone. `BENCH_RELEASES` (default 100) and `BENCH_CONCURRENCY` (default 8) choose the
//! sizes. Run: `cargo bench -p ferroflux-helmrelease --bench actions`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferroflux_helmrelease::{
    Actions, InstallOptions, ReleaseRef, UpgradeOptions, decode_release, encode_release,
};
use ferroflux_testkit::Cluster;
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn timed<F, Fut>(what: &str, n: usize, concurrency: usize, f: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for i in 0..n {
        if running.len() >= concurrency {
            running.join_next().await.unwrap().unwrap();
        }
        running.spawn(f(i));
    }
    while let Some(done) = running.join_next().await {
        done.unwrap();
    }
    let took = started.elapsed();
    println!(
        "{what}: {n} releases in {:.2} s ({:.1} ms a release, {concurrency} at a time)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1000.0 / n as f64
    );
}

#[tokio::main]
async fn main() {
    let n = env_usize("BENCH_RELEASES", 100);
    let concurrency = env_usize("BENCH_CONCURRENCY", 8);
    let chart_dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../helm/tests/corpus/app-basic/chart");
    let chart = Arc::new(ferroflux_helm::load(&chart_dir).unwrap());
    let cluster = Cluster::start("bench").await;
    let client = cluster.client().await;
    let actions = Arc::new(Actions::new(client, "helm-controller"));
    let wait = ferroflux_helmrelease::WaitOptions {
        timeout: Duration::from_secs(120),
        ..Default::default()
    };
    {
        let (a, c, w) = (actions.clone(), chart.clone(), wait.clone());
        timed("install", n, concurrency, move |i| {
            let (a, c, w) = (a.clone(), c.clone(), w.clone());
            async move {
                let t = ReleaseRef::new(&format!("r{i}"), "bench", "bench");
                let opts = InstallOptions {
                    create_namespace: true,
                    wait: w,
                    ..Default::default()
                };
                a.install(&t, c, serde_json::Map::new(), &opts)
                    .await
                    .unwrap();
            }
        })
        .await;
    }
    {
        let (a, c, w) = (actions.clone(), chart.clone(), wait.clone());
        timed("upgrade", n, concurrency, move |i| {
            let (a, c, w) = (a.clone(), c.clone(), w.clone());
            async move {
                let t = ReleaseRef::new(&format!("r{i}"), "bench", "bench");
                let values = json!({"replicaCount": 2, "image": {"tag": "2.1"}});
                let values = values.as_object().cloned().unwrap_or_default();
                let opts = UpgradeOptions {
                    wait: w,
                    max_history: 5,
                    ..Default::default()
                };
                a.upgrade(&t, c, values, &opts).await.unwrap();
            }
        })
        .await;
    }
    let rel = actions.storage("bench").last("r0").await.unwrap().unwrap();
    let rounds = 1000;
    let started = Instant::now();
    let mut size = 0;
    for _ in 0..rounds {
        let enc = encode_release(&rel).unwrap();
        size = enc.len();
        decode_release(enc.as_bytes()).unwrap();
    }
    println!(
        "storage codec: {:.3} ms to encode and decode one record ({size} bytes of base64)",
        started.elapsed().as_secs_f64() * 1000.0 / rounds as f64
    );
}
