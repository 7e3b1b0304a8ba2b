//! Helm itself as the other client of the same release storage: Helm 4's Go SDK (PyPI
//! `helm-python-sdk`, installed by ./test.sh into crates/helm/tests/oracle/venv) driven by
//! `tests/helm_client.py` against the devcluster. What ferroflux installs and upgrades, Helm
//! lists, shows and rolls back; what Helm installs, ferroflux upgrades.

use std::path::PathBuf;
use std::process::Command;

use ferroflux_helmrelease::{RollbackOptions, Status};
use ferroflux_testkit::Cluster;
use serde_json::{Value, json};

use crate::support::{cluster, corpus_chart, install_opts, namespace, target, values};

fn python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let py = root.join("crates/helm/tests/oracle/venv/bin/python");
    assert!(
        py.exists(),
        "Helm's SDK is not installed at {}: run ./test.sh, which installs PyPI helm-python-sdk 0.2.2 there",
        py.display()
    );
    py
}

/// Runs Helm's SDK; `Err` carries Helm's error line.
pub fn helm(cluster: &Cluster, ns: &str, args: &[&str]) -> Result<Value, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/helm_client.py");
    let out = Command::new(python())
        .arg(script)
        .arg(&cluster.kubeconfig)
        .arg(ns)
        .args(args)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "helm_client.py printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        }))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn corpus_dir(case: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus")
        .join(case)
        .join("chart")
        .display()
        .to_string()
}

fn replicas(cluster: &Cluster, ns: &str, name: &str) -> i64 {
    let out = cluster.kubectl(&["get", "deployment", name, "-n", ns, "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["spec"]["replicas"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_sees_and_rolls_back_what_ferroflux_released() {
    let (cluster, client, actions) = cluster("interop-ff-first").await;
    namespace(&client, "apps").await;
    let t = target("web", "apps");
    let chart = corpus_chart("app-basic");
    actions
        .install(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 2})),
            &install_opts(),
        )
        .await
        .unwrap();
    actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 3})),
            &Default::default(),
        )
        .await
        .unwrap();

    // Helm lists it with the same revision, status and chart version.
    let list = helm(&cluster, "apps", &["list"]).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let summary = |v: &Value| {
        (
            v["name"].as_str().unwrap_or("").to_string(),
            v["revision"].as_i64().unwrap_or(0),
            v["status"].as_str().unwrap_or("").to_string(),
            v["chart_name"].as_str().unwrap_or("").to_string(),
            v["chart_version"].as_str().unwrap_or("").to_string(),
            v["app_version"].as_str().unwrap_or("").to_string(),
        )
    };
    let row = |rev: i64, status: &str| {
        (
            "web".to_string(),
            rev,
            status.to_string(),
            "app".to_string(),
            "1.2.3".to_string(),
            "2.0".to_string(),
        )
    };
    assert_eq!(summary(&list[0]), row(2, "deployed"));
    // Its history and values.
    let history = helm(&cluster, "apps", &["history", "web"]).unwrap();
    let history: Vec<_> = history.as_array().unwrap().iter().map(summary).collect();
    assert_eq!(history, vec![row(1, "superseded"), row(2, "deployed")]);
    assert_eq!(
        helm(&cluster, "apps", &["values", "web"]).unwrap(),
        json!({"replicaCount": 3})
    );
    let status = helm(&cluster, "apps", &["status", "web"]).unwrap();
    let ours = actions.storage("apps").last("web").await.unwrap().unwrap();
    assert_eq!(status["manifest"].as_str().unwrap(), ours.manifest);

    // Helm 4 applies server-side without taking over fields another manager owns, so a plain
    // rollback that changes a field the controller applied conflicts, as it does with Flux's
    // helm-controller or after a `kubectl scale`; Helm's --force-conflicts takes them over.
    let refused = helm(&cluster, "apps", &["rollback", "web", "1"]).unwrap_err();
    assert!(
        refused.contains("Apply failed with 1 conflict: conflict with \"helm-controller\"")
            && refused.contains(".spec.replicas"),
        "{refused}"
    );
    let history = helm(
        &cluster,
        "apps",
        &["rollback", "web", "1", "--force-conflicts"],
    )
    .unwrap();
    let last_row = summary(history.as_array().unwrap().last().unwrap());
    assert_eq!((last_row.1, last_row.2.as_str()), (4, "deployed"));
    let storage = actions.storage("apps");
    let last = storage.last("web").await.unwrap().unwrap();
    assert_eq!((last.version, last.info.status), (4, Status::Deployed));
    assert_eq!(last.info.description, "Rollback to 1");
    assert_eq!(last.config["replicaCount"], 2);
    assert_eq!(replicas(&cluster, "apps", "web-app"), 2);
    // The refused rollback is recorded as Helm records it: revision 3 failed.
    let failed = storage.get("web", 3).await.unwrap().unwrap();
    assert_eq!(failed.info.status, Status::Failed);
    assert!(
        failed
            .info
            .description
            .starts_with("Rollback \"web\" failed: "),
        "{}",
        failed.info.description
    );
    // And ferroflux carries on from Helm's revisions.
    let rel = actions
        .rollback(
            &t,
            &RollbackOptions {
                version: 2,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(rel.version, 5);
    assert_eq!(replicas(&cluster, "apps", "web-app"), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn ferroflux_upgrades_what_helm_installed() {
    let (cluster, client, actions) = cluster("interop-helm-first").await;
    namespace(&client, "apps").await;
    helm(
        &cluster,
        "apps",
        &[
            "install",
            &corpus_dir("app-basic"),
            "legacy",
            r#"{"replicaCount": 1}"#,
        ],
    )
    .unwrap();
    let storage = actions.storage("apps");
    let helms = storage.last("legacy").await.unwrap().unwrap();
    assert_eq!((helms.version, helms.info.status), (1, Status::Deployed));
    assert_eq!(helms.chart_version(), "1.2.3");
    let t = target("legacy", "apps");
    let rel = actions
        .upgrade(
            &t,
            corpus_chart("app-basic"),
            values(json!({"replicaCount": 4})),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!((rel.version, rel.info.status), (2, Status::Deployed));
    assert_eq!(replicas(&cluster, "apps", "legacy-app"), 4);
    let history = helm(&cluster, "apps", &["history", "legacy"]).unwrap();
    let revs: Vec<(i64, String)> = history
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
        revs,
        vec![(1, "superseded".to_string()), (2, "deployed".to_string())]
    );
    assert_eq!(
        helm(&cluster, "apps", &["values", "legacy"]).unwrap(),
        json!({"replicaCount": 4})
    );
    // Helm uninstalls what ferroflux upgraded.
    helm(&cluster, "apps", &["uninstall", "legacy"]).unwrap();
    assert!(storage.history("legacy").await.unwrap().is_empty());
    assert!(!crate::support::exists(
        &cluster,
        "apps",
        "deployment",
        "legacy-app"
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_runs_the_tests_of_a_ferroflux_release() {
    let (cluster, client, actions) = cluster("interop-test").await;
    namespace(&client, "apps").await;
    let t = target("hk", "apps");
    actions
        .install(
            &t,
            crate::support::fixture_chart("hooked"),
            values(json!({})),
            &install_opts(),
        )
        .await
        .unwrap();
    helm(&cluster, "apps", &["test", "hk"]).unwrap();
    // Helm recorded the run in the release; we read it.
    let stored = actions.storage("apps").last("hk").await.unwrap().unwrap();
    let hook = stored.hooks.iter().find(|h| h.name == "hk-test").unwrap();
    assert_eq!(hook.last_run.phase, "Succeeded");
    assert_eq!(stored.info.status, Status::Deployed);
    // And ours runs after Helm's (its before-hook-creation deletes Helm's Pod first).
    let ours = actions.test(&t, &Default::default()).await.unwrap();
    let hook = ours.hooks.iter().find(|h| h.name == "hk-test").unwrap();
    assert_eq!(hook.last_run.phase, "Succeeded");
}
