//! `ferroflux dev up` as a user runs it: the ready line, the kubeconfig contexts, restarts, and a
//! SIGKILL in the middle of a burst of writes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferroflux_testkit::{Kubectl, git};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};

/// Starts `dev up` and waits for its `ready` line; returns the child and the lines before it.
fn dev_up(dir: &Path, extra: &[&str]) -> (Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["dev", "up", "--state-dir", dir.to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    loop {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dev up printed no ready line: {lines:?}");
        };
        let done = line.starts_with("ready");
        lines.push(line);
        if done {
            return (child, lines);
        }
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    Kubectl::at(kubeconfig).ok(args, "")
}

fn stop(mut child: Child) {
    // SIGTERM is the normal way to stop it; kill -9 is tested separately.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "dev up exited with {status}");
}

#[test]
fn up_writes_contexts_and_keeps_objects_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (child, lines) = dev_up(dir.path(), &["--no-controllers"]);
    let kc = dir.path().join("kubeconfig");
    assert!(
        lines.last().unwrap().contains(kc.to_str().unwrap()),
        "{lines:?}"
    );
    assert!(kubectl(&kc, &["--context", "staging", "get", "ns"]).contains("default"));
    let ns = dir.path().join("ns.yaml");
    std::fs::write(
        &ns,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod-only\n",
    )
    .unwrap();
    kubectl(
        &kc,
        &[
            "--context",
            "production",
            "create",
            "-f",
            ns.to_str().unwrap(),
        ],
    );
    assert!(kubectl(&kc, &["--context", "production", "get", "ns"]).contains("prod-only"));
    assert!(!kubectl(&kc, &["--context", "staging", "get", "ns"]).contains("prod-only"));
    stop(child);

    let (child, _) = dev_up(dir.path(), &["--no-controllers"]);
    assert!(kubectl(&kc, &["--context", "production", "get", "ns"]).contains("prod-only"));
    stop(child);
}

/// Polls `kubectl` until `check` accepts its output; the bound only stops a broken test.
fn kubectl_until(kubeconfig: &Path, args: &[&str], check: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..300 {
        let o = Kubectl::at(kubeconfig).run(args, "");
        last = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if o.status.success() && check(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("kubectl {args:?} never matched; last output:\n{last}");
}

#[test]
fn up_runs_controllers_that_follow_a_file_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("fleet");
    std::fs::create_dir_all(repo.join("clusters/staging")).unwrap();
    std::fs::write(
        repo.join("clusters/staging/app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\n  namespace: default\ndata:\n  color: blue\n",
    )
    .unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "staging app"]);

    let state = dir.path().join("state");
    let (child, lines) = dev_up(&state, &[]);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cluster staging") && l.contains("controllers running")),
        "{lines:?}"
    );
    // Each cluster's Receivers answer on a loopback port, printed on its line.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cluster staging") && l.contains(" receiver=http://127.0.0.1:")),
        "{lines:?}"
    );
    let kc = state.join("kubeconfig");
    let sync = dir.path().join("sync.yaml");
    std::fs::write(
        &sync,
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: flux-system
spec:
  interval: 1m
  url: file://{}
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/staging
  prune: true
  sourceRef:
    kind: GitRepository
    name: fleet
",
            repo.display()
        ),
    )
    .unwrap();
    kubectl(
        &kc,
        &[
            "--context",
            "staging",
            "apply",
            "-f",
            sync.to_str().unwrap(),
        ],
    );
    let out = kubectl_until(
        &kc,
        &[
            "--context",
            "staging",
            "get",
            "configmap",
            "app-settings",
            "-o",
            "jsonpath={.data.color}",
        ],
        |o| o == "blue",
    );
    assert_eq!(out, "blue");
    kubectl_until(
        &kc,
        &[
            "--context",
            "staging",
            "get",
            "kustomizations",
            "-n",
            "flux-system",
            "apps",
        ],
        |o| o.contains("True") && o.contains("Applied revision: main@sha1:"),
    );
    // The other cluster has its own controllers and follows nothing yet.
    let other = kubectl(
        &kc,
        &[
            "--context",
            "production",
            "get",
            "configmaps",
            "-n",
            "default",
        ],
    );
    assert!(!other.contains("app-settings"), "{other}");
    stop(child);
}

#[test]
fn refuses_bad_names_and_fault_flags() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "dev",
            "up",
            "--no-controllers",
            "--clusters",
            "Bad_Name",
            "--state-dir",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("invalid cluster name \"Bad_Name\""));
    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "dev",
            "up",
            "--no-controllers",
            "--fault-rate",
            "0.5",
            "--fault-code",
            "404",
            "--state-dir",
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("error code 404 is not one of 500, 503, 429"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

async fn client(kubeconfig: &Path, context: &str) -> kube::Client {
    ferroflux_devcluster::client_from_kubeconfig(kubeconfig, context)
        .await
        .unwrap()
}

#[test]
fn sigkill_during_a_burst_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut child, _) = dev_up(dir.path(), &["--clusters", "solo"]);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    rt.block_on(async {
        let c = client(&kc, "solo").await;
        let mut tasks = Vec::new();
        for w in 0..8 {
            let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
            let acked = acked.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..100_000 {
                    let name = format!("burst-{w}-{i}");
                    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                        "metadata": { "name": name }, "data": { "i": i.to_string() }
                    }))
                    .unwrap();
                    match api.create(&PostParams::default(), &cm).await {
                        Ok(_) => acked.lock().unwrap().push(name),
                        Err(_) => return,
                    }
                }
            }));
        }
        // Kill once a good number of writes are acknowledged, while the burst goes on.
        loop {
            if acked.lock().unwrap().len() >= 400 {
                break;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        for t in tasks {
            let _ = t.await;
        }
    });
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 400);

    let (child, _) = dev_up(dir.path(), &["--clusters", "solo"]);
    rt.block_on(async {
        let c = client(&kc, "solo").await;
        let api: Api<ConfigMap> = Api::namespaced(c, "default");
        let items = api.list(&ListParams::default()).await.unwrap().items;
        let present: std::collections::HashSet<String> = items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        let missing: Vec<&String> = acked.iter().filter(|n| !present.contains(*n)).collect();
        assert!(
            missing.is_empty(),
            "{} acknowledged writes lost, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        // Every stored object is whole.
        for o in &items {
            assert!(o.data.as_ref().is_some_and(|d| d.contains_key("i")));
        }
        // And the cluster takes writes again.
        let cm: ConfigMap =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": "after-crash" } }))
                .unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    });
    stop(child);
}
