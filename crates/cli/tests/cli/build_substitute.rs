//! `ferroflux build kustomization --dry-run` substitutes as the controller does: a quoted
//! `"${n}"` stays a string, a plain `${n}` becomes a number, an unset variable becomes empty;
//! with `--strict-substitute` the unset variable fails the build, naming it and the object.

use std::process::Command;

const MANIFESTS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: vars
  namespace: apps
data:
  count: "${n}"
  unset: "${missing}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  replicas: ${n}
"#;

const KUSTOMIZATION: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: vars
  namespace: flux-system
spec:
  interval: 10m
  prune: true
  path: ./dir
  sourceRef: {kind: GitRepository, name: repo}
  postBuild:
    substitute: {n: \"5\"}
";

fn build(dir: &std::path::Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["build", "kustomization", "vars", "--path"])
        .arg(dir.join("dir"))
        .arg("--kustomization-file")
        .arg(dir.join("ks.yaml"))
        .arg("--dry-run")
        .args(extra)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn lenient_by_default_strict_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("dir")).unwrap();
    std::fs::write(tmp.path().join("dir/manifests.yaml"), MANIFESTS).unwrap();
    std::fs::write(tmp.path().join("ks.yaml"), KUSTOMIZATION).unwrap();

    let (code, stdout, stderr) = build(tmp.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("  count: \"5\"\n"), "{stdout}");
    assert!(stdout.contains("  unset: \"\"\n"), "{stdout}");
    assert!(stdout.contains("  replicas: 5\n"), "{stdout}");

    let (code, stdout, stderr) = build(tmp.path(), &["--strict-substitute"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.is_empty(), "nothing built: {stdout}");
    assert!(
        stderr.contains(
            "ConfigMap/apps/vars: variable substitution failed: variable not set (strict mode): \"missing\""
        ),
        "{stderr}"
    );
}
