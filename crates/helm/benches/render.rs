//! 1,000 releases of one chart with 1,000 different values, in-process (issue 14's benchmark):
//! the chart is loaded once, each release merges its own values file and renders.
//!
//! `cargo bench -p ferroflux-helm --bench render [CHART_DIR]` (default: the corpus's
//! `app-basic` chart, a typical application chart). Prints the time and the peak memory.

use std::time::Instant;

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/app-basic/chart")
        });
    let t0 = Instant::now();
    let chart = match ferroflux_helm::load(&dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    };
    let load = t0.elapsed();
    // 1,000 values files: replica counts, images, toggles of the optional branches.
    let values: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                "replicaCount: {}\nimage:\n  repository: registry.example/app-{i}\n  tag: \"1.{i}.0\"\ningress:\n  enabled: {}\n  hosts:\n    - host: app{i}.example\n      paths: [{{path: /, pathType: Prefix}}]\nresources:\n  limits:\n    cpu: {}m\nenv:\n  - name: INDEX\n    value: \"{i}\"\nnodeSelector:\n  zone: z{}\n",
                i % 5 + 1,
                i % 2 == 0,
                100 + i,
                i % 3
            )
        })
        .collect();
    let engine = ferroflux_helm::Engine::new();
    let t1 = Instant::now();
    let mut bytes = 0usize;
    let mut docs = 0usize;
    for (i, text) in values.iter().enumerate() {
        let vals = match ferroflux_helm::load_values(text) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("Error: values {i}: {e}");
                std::process::exit(1);
            }
        };
        let opts = ferroflux_helm::RenderOptions {
            release: ferroflux_helm::ReleaseOptions {
                name: format!("rel-{i}"),
                namespace: format!("ns-{}", i % 10),
                ..Default::default()
            },
            ..Default::default()
        };
        match engine.render(&chart, &vals, &opts) {
            Ok(r) => {
                docs += r.manifests.len();
                bytes += r.manifests.iter().map(|m| m.content.len()).sum::<usize>();
            }
            Err(e) => {
                eprintln!("Error: release {i}: {e}");
                std::process::exit(1);
            }
        }
    }
    let render = t1.elapsed();
    println!("chart: {}", dir.display());
    println!("load: {:.2} ms", load.as_secs_f64() * 1e3);
    println!(
        "1000 releases: {:.1} ms ({:.3} ms per release), {docs} manifests, {:.1} MB",
        render.as_secs_f64() * 1e3,
        render.as_secs_f64(),
        bytes as f64 / 1e6
    );
    if let Some(kb) = peak_rss_kb() {
        println!("peak memory (VmHWM): {:.1} MB", kb as f64 / 1024.0);
    }
}
