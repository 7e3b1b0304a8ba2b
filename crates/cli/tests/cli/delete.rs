//! `ferroflux delete`: flux's golden for a Kustomization deleted with `--silent`, the
//! confirmation (nothing is deleted when it is refused or stdin is closed), and flux's messages
//! for a missing name and an object that does not exist. Objects are read back with kubectl.

use crate::run::{runtime, stderr};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs the binary with `input` on stdin (closed at once when `None`).
fn delete(kc: &Path, args: &[&str], input: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .arg("delete")
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

const OBJECTS: &str = r#"apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: tkfg
  namespace: flux-system
spec:
  interval: 5m
  path: ./
  prune: true
  sourceRef:
    kind: GitRepository
    name: tkfg
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: tkfg
  namespace: flux-system
spec:
  interval: 5m
  url: https://example.com/fleet
  ref:
    branch: main
"#;

#[test]
fn deletes_only_when_confirmed() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("deletes"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    kubectl.ok(&["create", "-f", "-"], OBJECTS);
    let exists = |kind: &str| {
        kubectl
            .run(&["get", kind, "tkfg", "-n", "flux-system"], "")
            .status
            .success()
    };

    // Refused, or no answer at all: nothing is deleted.
    for input in [None, Some("n\n"), Some("maybe\n")] {
        let out = delete(&kc, &["kustomization", "tkfg"], input);
        assert_eq!(out.status.code(), Some(1), "{input:?}");
        assert_eq!(
            stderr(&out),
            "? Are you sure you want to delete this kustomization [y/N] ✗ aborting\n"
        );
        assert!(exists("kustomization"), "{input:?}");
    }
    // Confirmed.
    let out = delete(&kc, &["source", "git", "tkfg"], Some("y\n"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "? Are you sure you want to delete this source git [y/N] \
         ► deleting source git tkfg in flux-system namespace\n✔ source git deleted\n"
    );
    assert!(!exists("gitrepository"));
    // --silent: flux's golden.
    let out = delete(&kc, &["kustomization", "tkfg", "--silent"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/kustomization/delete_kustomization_from_git.golden"),
    )
    .unwrap()
    .replace("{{ .ns }}", "flux-system");
    assert_eq!(stderr(&out), golden);
    assert!(!exists("kustomization"));

    // Bad input: flux's messages; nothing asked.
    for (args, message) in [
        (vec!["kustomization"], "kustomization name is required"),
        (vec!["hr"], "helmrelease name is required"),
        (vec!["alert-provider"], "alert provider name is required"),
        (
            vec!["kustomization", "tkfg"],
            "kustomizations.kustomize.toolkit.fluxcd.io \"tkfg\" not found",
        ),
        (
            vec!["source", "helm", "nope", "-s"],
            "helmrepositories.source.toolkit.fluxcd.io \"nope\" not found",
        ),
    ] {
        let out = delete(&kc, &args, Some("y\n"));
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
    }
}
