//! `ferroflux fleet diff` over a real Git repository with `clusters/<name>/` folders: against
//! another revision (a change to one cluster's variables touches that cluster only; a Secret's
//! value is masked), against live devclusters (server-side dry-run; a folder without a
//! context is named and skipped), and a repository without the layout.

use crate::repo::{Repo, fleet_sync};
use crate::run::*;
use ferroflux_testkit::{flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn apps(env: &str, replicas: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      env: {env}
      replicas: \"{replicas}\"
"
    )
}

const APP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo
  namespace: flux-system
data:
  env: ${env}
  replicas: \"${replicas}\"
";

fn secret(password: &str) -> String {
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: flux-system
stringData:
  password: {password}
"
    )
}

fn fleet_repo() -> Repo {
    Repo::with_files(&[
        (
            "clusters/staging/flux-system/gotk-sync.yaml",
            &fleet_sync("staging", None),
        ),
        ("clusters/staging/apps.yaml", &apps("staging", "1")),
        (
            "clusters/production/flux-system/gotk-sync.yaml",
            &fleet_sync("production", None),
        ),
        ("clusters/production/apps.yaml", &apps("production", "3")),
        (
            "apps/kustomization.yaml",
            "resources: [podinfo.yaml, secret.yaml]\n",
        ),
        ("apps/podinfo.yaml", APP),
        ("apps/secret.yaml", &secret("hunter2")),
    ])
}

fn run_in(
    dir: &std::path::Path,
    kc: Option<&std::path::Path>,
    args: &[&str],
) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflux"));
    c.args(args).current_dir(dir);
    if let Some(kc) = kc {
        c.arg("--kubeconfig").arg(kc);
    }
    c.output().unwrap()
}

#[test]
fn fleet_diff_against_another_revision() {
    let repo = fleet_repo();
    repo.write("clusters/staging/apps.yaml", &apps("staging", "2"));
    repo.commit_and_push("staging: two replicas");
    let work = repo.work();

    let out = run_in(
        &work,
        None,
        &["fleet", "diff", "--ref", "HEAD", "--against", "HEAD~1"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("📁 cluster staging: 0 created, 2 changed, 0 deleted against HEAD~1 ("),
        "{text}"
    );
    assert!(
        text.contains(
            "► ConfigMap/flux-system/podinfo changed (by Kustomization/flux-system/apps)"
        ),
        "{text}"
    );
    assert!(
        text.contains("data.replicas\n± value change\n- 1\n+ 2\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "► Kustomization/flux-system/apps changed (by Kustomization/flux-system/flux-system)"
        ),
        "{text}"
    );
    assert!(
        text.contains("✔ cluster production: no change against HEAD~1"),
        "{text}"
    );
    assert!(
        text.ends_with("1 of 2 clusters would change: staging\n"),
        "{text}"
    );

    // Nothing changed between a revision and itself: exit 0.
    let out = run_in(
        &work,
        None,
        &["fleet", "diff", "--ref", "HEAD", "--against", "HEAD"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("0 of 2 clusters would change\n"));

    // A Secret's new value (the work tree, uncommitted) shows masked, never in clear; one
    // file shared by both clusters changes both.
    repo.write("apps/secret.yaml", &secret("correct-horse"));
    let out = run_in(
        &work,
        None,
        &["fleet", "diff", "--against", "HEAD", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("correct-horse") && !text.contains("hunter2"),
        "{text}"
    );
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["changed"], json!(["production", "staging"]));
    let change = &doc["clusters"][0]["changes"][0];
    assert_eq!(change["id"], "Secret/flux-system/db");
    assert_eq!(change["action"], "changed");
    let report = change["report"].as_str().unwrap();
    assert!(
        report.contains("*** (before)") && report.contains("*** (after)"),
        "{report}"
    );

    // --cluster narrows; an unknown one lists the folders.
    let out = run_in(
        &work,
        None,
        &[
            "fleet",
            "diff",
            "--against",
            "HEAD",
            "--cluster",
            "production",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).ends_with("1 of 1 clusters would change: production\n"));
    let out = run_in(
        &work,
        None,
        &["fleet", "diff", "--against", "HEAD", "--cluster", "prod"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "no cluster folder clusters/prod/ in work tree; cluster folders: production, staging"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fleet_diff_without_the_clusters_layout() {
    let repo = Repo::with_files(&[("apps/podinfo.yaml", APP)]);
    let out = run_in(
        &repo.work(),
        None,
        &["fleet", "diff", "--ref", "HEAD", "--against", "HEAD"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("the repository (HEAD (")
            && err.contains(
                " has no clusters/<name>/ layout: expected one folder per cluster under clusters/"
            ),
        "{err}"
    );
}

#[test]
fn fleet_diff_against_live_clusters() {
    let rt = runtime();
    let repo = fleet_repo();
    repo.write(
        "clusters/qa/flux-system/gotk-sync.yaml",
        &fleet_sync("qa", None),
    );
    repo.commit_and_push("qa");
    let dir = tempfile::tempdir().unwrap();
    let (staging, production) = rt.block_on(async {
        let (staging, s) = flux_cluster("staging").await;
        let (production, _) = flux_cluster("production").await;
        // staging runs the app with two replicas already; production has nothing yet.
        let cms: Api<ConfigMap> = Api::namespaced(s.clone(), "flux-system");
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "podinfo", "namespace": "flux-system"},
            "data": {"env": "staging", "replicas": "2"}}))
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        (staging, production)
    });
    let kc = kubeconfig(dir.path(), &[&staging, &production]);
    let out = run_in(
        &repo.work(),
        Some(&kc),
        &["fleet", "diff", "--ref", "HEAD", "--timeout", "30s"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("✗ cluster qa: no kubeconfig context \"qa\" for clusters/qa/: skipped"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("could not compare: qa"),
        "{}",
        stderr(&out)
    );
    let staging_part = text.split("cluster staging").nth(1).unwrap();
    assert!(
        staging_part.contains(
            "► ConfigMap/flux-system/podinfo changed (by Kustomization/flux-system/apps)"
        ),
        "{text}"
    );
    assert!(staging_part.contains("data.replicas"), "{text}");
    assert!(
        staging_part.contains("► Secret/flux-system/db created"),
        "{text}"
    );
    let production_part = text.split("cluster production").nth(1).unwrap();
    assert!(
        production_part.contains("► ConfigMap/flux-system/podinfo created"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.ends_with("2 of 3 clusters would change: production, staging\n"),
        "{text}"
    );
    rt.block_on(async {
        staging.shutdown().await;
        production.shutdown().await;
    });
}
