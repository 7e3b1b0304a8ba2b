//! Public charts, run side by side (never committed): every chart directory under
//! `$HELMRELEASE_REAL_CHARTS` is installed with its default values and upgraded on one
//! devcluster, and Helm's SDK must show both revisions. A chart that refuses its default values
//! (a schema's `required`, a `fail`) must fail before anything is recorded, as with Helm.
//! `HELMRELEASE_REAL_CHARTS=/path/to/charts cargo test -p ferroflux-helmrelease --test
//! helmrelease real_charts -- --ignored --nocapture`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferroflux_helmrelease::{Error, InstallOptions, UpgradeOptions, WaitOptions};
use serde_json::json;

use crate::support::{cluster, target, values};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs public charts in $HELMRELEASE_REAL_CHARTS"]
async fn real_charts() {
    let root = PathBuf::from(
        std::env::var("HELMRELEASE_REAL_CHARTS")
            .expect("set HELMRELEASE_REAL_CHARTS to a directory of chart directories"),
    );
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Chart.yaml").exists())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no chart directories in {}",
        root.display()
    );
    let (cluster, _client, actions) = cluster("real-charts").await;
    let wait = WaitOptions {
        timeout: Duration::from_secs(120),
        ..Default::default()
    };
    let mut installed = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let chart = Arc::new(ferroflux_helm::load(dir).unwrap());
        let t = target(&name, &name);
        let opts = InstallOptions {
            create_namespace: true,
            wait: wait.clone(),
            ..Default::default()
        };
        let started = Instant::now();
        match actions
            .install(&t, chart.clone(), values(json!({})), &opts)
            .await
        {
            Ok(rel) => {
                let up = UpgradeOptions {
                    wait: wait.clone(),
                    ..Default::default()
                };
                let next = actions
                    .upgrade(&t, chart.clone(), values(json!({})), &up)
                    .await
                    .unwrap_or_else(|e| panic!("{name}: upgrade: {e}"));
                assert_eq!(next.version, 2);
                eprintln!(
                    "{name} {}: installed and upgraded in {:.1} s ({} objects, {} hooks)",
                    rel.chart_version(),
                    started.elapsed().as_secs_f64(),
                    actions.objects(&rel).await.map(|o| o.len()).unwrap_or(0),
                    rel.hooks.len()
                );
                installed.push(name);
            }
            Err(e @ Error::Chart(_)) => {
                assert!(
                    actions
                        .storage(&name)
                        .history(&name)
                        .await
                        .unwrap()
                        .is_empty()
                );
                let first = e.to_string().lines().collect::<Vec<_>>().join(" ");
                eprintln!("{name}: refuses its default values: {first}");
            }
            Err(e) => panic!("{name}: install: {e}"),
        }
    }
    for name in &installed {
        let history = crate::helm_interop::helm(&cluster, name, &["history", name]).unwrap();
        let revisions: Vec<(i64, String)> = history
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["revision"].as_i64().unwrap_or(0),
                    v["status"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            revisions,
            vec![(1, "superseded".into()), (2, "deployed".into())],
            "{name}"
        );
    }
}
