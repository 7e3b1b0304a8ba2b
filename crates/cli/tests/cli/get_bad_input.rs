//! `ferroflux get` with contexts that do not exist or clusters that do not answer.

use std::process::Command;

const KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
clusters:
- name: staging
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
- name: production
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: not-a-secret
contexts:
- name: staging
  context: {cluster: staging, user: admin}
- name: production
  context: {cluster: production, user: admin}
current-context: staging
"#;

fn ferroflux(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        .output()
        .expect("run ferroflux")
}

#[test]
fn unknown_context_lists_the_available_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, KUBECONFIG).unwrap();
    let out = ferroflux(&[
        "get",
        "ks",
        "--kubeconfig",
        path.to_str().unwrap(),
        "--context",
        "qa",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "context \"qa\" not found in the kubeconfig; available contexts: staging, production"
        ),
        "{stderr}"
    );
}

#[test]
fn unreachable_cluster_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, KUBECONFIG).unwrap();
    let out = ferroflux(&[
        "get",
        "kustomizations",
        "--kubeconfig",
        path.to_str().unwrap(),
        "--timeout",
        "5s",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("listing Kustomization objects"), "{stderr}");
    assert!(
        !stderr.contains("not-a-secret"),
        "the token leaked: {stderr}"
    );
}

/// A watch that cannot even list (the cluster is down when it starts) fails like the list
/// does, instead of retrying until --timeout: only a watch that is under way waits for its
/// cluster to come back.
#[test]
fn watching_an_unreachable_cluster_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, KUBECONFIG).unwrap();
    let kc = path.to_str().unwrap();
    for (args, what) in [
        (
            vec![
                "get",
                "ks",
                "--watch",
                "--kubeconfig",
                kc,
                "--timeout",
                "5m",
            ],
            "listing Kustomization objects",
        ),
        (
            vec!["events", "--watch", "--kubeconfig", kc, "--timeout", "5m"],
            "listing events",
        ),
    ] {
        let out = ferroflux(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{what}: cannot reach the cluster of context \"staging\" (https://127.0.0.1:1)"
            )),
            "{stderr}"
        );
        assert!(
            !stderr.contains("not-a-secret"),
            "the token leaked: {stderr}"
        );
    }
}
