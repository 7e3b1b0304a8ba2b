//! `LoadRestrictions::None` (kustomize's `--load-restrictor LoadRestrictionsNone`, what Flux
//! builds with) and `Reorder::None` (Flux's unsorted output), checked against `kubectl
//! kustomize` run with the same options.

use std::path::Path;
use std::process::Command;

use ferroflux_kustomize::{Build, LoadRestrictions, Reorder, render_yaml};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn kubectl_kustomize(dir: &Path, extra: &[&str]) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .args(extra)
        .arg(dir)
        .output()
        .expect("kubectl is installed on every machine of this project");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

/// An overlay whose patch, resource file and generator input live in a sibling directory.
fn sibling_files_tree(root: &Path) {
    write(
        root,
        "apps/shared/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: base\n",
    );
    write(
        root,
        "apps/shared/patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: patched\n",
    );
    write(root, "apps/shared/greeting.txt", "hello from a sibling\n");
    write(
        root,
        "apps/prod/kustomization.yaml",
        "resources:\n- ../shared/configmap.yaml\n- service.yaml\npatches:\n- path: ../shared/patch.yaml\nconfigMapGenerator:\n- name: greeting\n  files:\n  - ../shared/greeting.txt\n",
    );
    write(
        root,
        "apps/prod/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
    );
}

#[test]
fn files_anywhere_in_the_root_load_like_kubectl_with_load_restrictions_none() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    sibling_files_tree(root);
    let overlay = root.join("apps/prod");

    let oracle =
        kubectl_kustomize(&overlay, &["--load-restrictor", "LoadRestrictionsNone"]).unwrap();
    let ours = Build::new(root)
        .unwrap()
        .with_load_restrictions(LoadRestrictions::None)
        .build(Path::new("apps/prod"))
        .unwrap();
    assert_eq!(render_yaml(&ours), oracle);
    assert!(oracle.contains("mode: patched"), "{oracle}");

    // The default stays kustomize's root-only rule, and kubectl agrees that it fails.
    let kubectl_err = kubectl_kustomize(&overlay, &[]).unwrap_err();
    assert!(kubectl_err.contains("security"), "{kubectl_err}");
    let err = Build::new(root)
        .unwrap()
        .build(Path::new("apps/prod"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("outside the kustomization root"),
        "unexpected error: {err}"
    );
}

#[test]
fn the_repository_root_still_bounds_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    sibling_files_tree(&root);
    write(
        dir.path(),
        "secret.txt",
        "outside the repository, never to be read\n",
    );
    // A generator input above the repository root.
    write(
        &root,
        "apps/leak/kustomization.yaml",
        "configMapGenerator:\n- name: leak\n  files:\n  - ../../../secret.txt\n",
    );
    let build = Build::new(&root)
        .unwrap()
        .with_load_restrictions(LoadRestrictions::None);
    let err = build.build(Path::new("apps/leak")).unwrap_err().to_string();
    assert!(err.contains("outside the repository root"), "{err}");

    // A symlink inside the repository that leads out of it.
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("apps/link.txt")).unwrap();
    write(
        &root,
        "apps/linked/kustomization.yaml",
        "configMapGenerator:\n- name: leak\n  files:\n  - ../link.txt\n",
    );
    let err = build
        .build(Path::new("apps/linked"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("through a symlink"), "{err}");
}

#[test]
fn reorder_none_keeps_the_listed_order_like_fifo_sort_options() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let kustomization = "resources:\n- deployment.yaml\n- namespace.yaml\nsecretGenerator:\n- name: token\n  literals:\n  - token=abc\n";
    write(root, "app/kustomization.yaml", kustomization);
    write(
        root,
        "app/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx\n",
    );
    write(
        root,
        "app/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n",
    );
    // The oracle: the same tree with an explicit fifo order.
    write(
        root,
        "fifo/kustomization.yaml",
        &format!("{kustomization}sortOptions:\n  order: fifo\n"),
    );
    for f in ["deployment.yaml", "namespace.yaml"] {
        std::fs::copy(root.join("app").join(f), root.join("fifo").join(f)).unwrap();
    }
    let oracle = kubectl_kustomize(&root.join("fifo"), &[]).unwrap();
    let ours = Build::new(root)
        .unwrap()
        .with_reorder(Reorder::None)
        .build(Path::new("app"))
        .unwrap();
    assert_eq!(render_yaml(&ours), oracle);
    let kinds: Vec<&str> = ours.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Deployment", "Namespace", "Secret"]);

    // The default is kubectl's legacy order.
    let legacy = Build::new(root).unwrap().build(Path::new("app")).unwrap();
    assert_eq!(
        render_yaml(&legacy),
        kubectl_kustomize(&root.join("app"), &[]).unwrap()
    );
}
