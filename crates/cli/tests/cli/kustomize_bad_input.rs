//! Bad input to `ferroflux kustomize build`: each case must exit 1, print nothing on stdout and
//! name the file and the cause on stderr.

use std::path::Path;
use std::process::Command;

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Runs `ferroflux kustomize build DIR` with the repository root as working directory.
fn build(root: &Path, dir: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["kustomize", "build", dir])
        .current_dir(root)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_fails(root: &Path, dir: &str, must_contain: &[&str]) {
    let (code, stdout, stderr) = build(root, dir);
    assert_eq!(code, 1, "exit code; stderr: {stderr}");
    assert!(stdout.is_empty(), "stdout must be empty, got: {stdout}");
    for m in must_contain {
        assert!(stderr.contains(m), "stderr {stderr:?} should contain {m:?}");
    }
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: \"1\"\n";

#[test]
fn missing_file() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- nope.yaml\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/nope.yaml", "no such file or directory"],
    );
}

#[test]
fn unknown_field_in_kustomization() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resourcez:\n- cm.yaml\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/kustomization.yaml", "unknown field `resourcez`"],
    );
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- bad.yaml\n",
    );
    write(
        t.path(),
        "app/bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/bad.yaml", "malformed YAML", "line 4"],
    );
}

#[test]
fn duplicate_object_id() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- a.yaml\n- b.yaml\n",
    );
    write(t.path(), "app/a.yaml", CM);
    write(t.path(), "app/b.yaml", CM);
    assert_fails(
        t.path(),
        "app",
        &["app/b.yaml", "duplicate object id ConfigMap.v1.[noGrp]/a"],
    );
}

#[test]
fn patch_that_matches_nothing() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n",
    );
    write(t.path(), "app/cm.yaml", CM);
    write(
        t.path(),
        "app/patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  y: \"2\"\n",
    );
    assert_fails(
        t.path(),
        "app",
        &[
            "app/patch.yaml",
            "no resource matches strategic merge patch",
        ],
    );
}

#[test]
fn resource_cycle() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "a/kustomization.yaml", "resources:\n- ../b\n");
    write(t.path(), "b/kustomization.yaml", "resources:\n- ../a\n");
    assert_fails(t.path(), "a", &["resource cycle: a -> b -> a"]);
}

#[test]
fn file_outside_the_kustomization_root() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "shared.yaml", CM);
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- ../shared.yaml\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["shared.yaml", "outside the kustomization root"],
    );
}

#[test]
fn symlink_escaping_the_repository() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.yaml", CM);
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- link.yaml\n",
    );
    std::os::unix::fs::symlink(
        outside.path().join("secret.yaml"),
        t.path().join("app/link.yaml"),
    )
    .unwrap();
    assert_fails(
        t.path(),
        "app",
        &["app/link.yaml", "outside the repository"],
    );
}

#[test]
fn fifty_megabyte_file_is_refused() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- big.yaml\n",
    );
    let mut big =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: \"");
    big.push_str(&"a".repeat(50 * 1024 * 1024));
    big.push_str("\"\n");
    write(t.path(), "app/big.yaml", &big);
    assert_fails(t.path(), "app", &["app/big.yaml", "larger than the limit"]);
}

#[test]
fn yaml_nested_ten_thousand_levels() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- deep.yaml\n",
    );
    let mut deep =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: ");
    deep.push_str(&"[".repeat(10_000));
    deep.push_str(&"]".repeat(10_000));
    deep.push('\n');
    write(t.path(), "app/deep.yaml", &deep);
    assert_fails(
        t.path(),
        "app",
        &[
            "app/deep.yaml",
            "malformed YAML",
            "recursion limit exceeded",
        ],
    );
    // block-style nesting too
    let mut block =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x:\n  ");
    block.push_str(&"- ".repeat(10_000));
    block.push_str("leaf\n");
    write(t.path(), "app/deep.yaml", &block);
    assert_fails(
        t.path(),
        "app",
        &["app/deep.yaml", "line 7", "recursion limit exceeded"],
    );
}

#[test]
fn invalid_json6902_op() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\npatches:\n- path: ops.yaml\n  target:\n    kind: ConfigMap\n",
    );
    write(t.path(), "app/cm.yaml", CM);
    write(
        t.path(),
        "app/ops.yaml",
        "- op: frobnicate\n  path: /data/x\n  value: y\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/ops.yaml", "invalid JSON 6902 patch", "frobnicate"],
    );
}

#[test]
fn remote_resource_not_supported() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- https://github.com/org/repo//deploy?ref=v1\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/kustomization.yaml", "not supported"],
    );
}

#[test]
fn helm_charts_not_supported() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "helmCharts:\n- name: podinfo\n  repo: https://example.com\n",
    );
    assert_fails(
        t.path(),
        "app",
        &["app/kustomization.yaml", "helmCharts is not supported"],
    );
}

#[test]
fn good_build_prints_yaml() {
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "app/kustomization.yaml",
        "namespace: x\nresources:\n- cm.yaml\n",
    );
    write(t.path(), "app/cm.yaml", CM);
    let (code, stdout, stderr) = build(t.path(), "app");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "apiVersion: v1\ndata:\n  x: \"1\"\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\n"
    );
}

#[test]
fn load_restrictor_root_only_refuses_a_file_outside_the_kustomization_and_none_reads_it() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "shared/cm.yaml", CM);
    write(
        t.path(),
        "app/kustomization.yaml",
        "resources:\n- ../shared/cm.yaml\n",
    );
    // kubectl's default, LoadRestrictionsRootOnly, names the file it refuses.
    assert_fails(t.path(), "app", &["shared/cm.yaml"]);
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "kustomize",
            "build",
            "app",
            "--load-restrictor",
            "LoadRestrictionsNone",
        ])
        .current_dir(t.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // kustomize prints keys sorted.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "apiVersion: v1\ndata:\n  x: \"1\"\nkind: ConfigMap\nmetadata:\n  name: a\n"
    );
    // A value kubectl does not know is refused by the flag parser, naming the valid ones.
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["kustomize", "build", "app", "--load-restrictor", "none"])
        .current_dir(t.path())
        .output()
        .unwrap();
    // Usage errors exit 1, as flux's (cobra's) do.
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("LoadRestrictionsNone"), "{stderr}");
    assert!(out.stdout.is_empty());
}
