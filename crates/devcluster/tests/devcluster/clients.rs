//! Clients no one here wrote, against the API server: the official Python client (PyPI
//! `kubernetes`, in `tests/py/venv`) and Helm's Go SDK (PyPI `helm-python-sdk`, the Helm
//! oracle's venv in crates/helm). `./test.sh` installs both; the scripts live in `tests/py`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_devcluster::{Config, DevCluster};

fn here(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn python(venv_python: PathBuf, what: &str) -> PathBuf {
    assert!(
        venv_python.is_file(),
        "{what} is not installed at {}: run ./test.sh (it installs it there)",
        venv_python.display()
    );
    venv_python
}

fn run(python: &Path, script: &Path, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{stdout}\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_typed_dynamic_watch_apply_subresources() {
    let py = python(
        here("tests/py/venv/bin/python"),
        "the Python kubernetes client",
    );
    let c = DevCluster::start(Config::memory("py")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = ferroflux_testkit::kubeconfig(dir.path(), &[&c]);
    let out = run(
        &py,
        &here("tests/py/python_client.py"),
        &[kubeconfig.to_str().unwrap()],
    );
    for step in [
        "typed create_namespace without kind or apiVersion",
        "nodes are Ready with capacity",
        "typed deployment create and pods watched to readiness",
        "scale subresource read and patched",
        "status subresource",
        "pod log says it is simulated",
        "delete of a ConfigMap answers Status Success",
        "delete of a running Pod answers the terminating Pod, and it is replaced",
        "a Job completes",
        "dynamic client create, server-side apply, get",
        "scale of a kind without the subresource is 404",
        "kinds of a later Kubernetes version are 404",
        "namespace delete answers the terminating namespace",
    ] {
        assert!(out.contains(&format!("ok {step}\n")), "{step}: {out}");
    }
    c.shutdown().await;
}

/// The Helm oracle's venv (helm-python-sdk), or `HELM_PYTHON`.
fn helm_python() -> PathBuf {
    if let Some(p) = std::env::var_os("HELM_PYTHON") {
        return PathBuf::from(p);
    }
    python(
        here("../helm/tests/oracle/venv/bin/python"),
        "helm-python-sdk (the Helm oracle)",
    )
}

/// Install, `helm test`, upgrade, rollback and uninstall, each with `--wait` (Helm's kstatus
/// watcher), of `tests/py/chart` (CRDs in `crds/` and a custom resource of them, hooks: Jobs
/// before install/upgrade/rollback and delete, a ConfigMap after, a test Pod; a subchart with a
/// StatefulSet and its claims) and of the Helm corpus's `app-basic`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_sdk_install_upgrade_rollback_uninstall() {
    let py = helm_python();
    let c = DevCluster::start(Config::memory("helm")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = ferroflux_testkit::kubeconfig(dir.path(), &[&c]);
    for (chart, release, ns, expected, test_hooks) in [
        (
            here("tests/py/chart"),
            "life",
            "life",
            &[
                "Deployment/life-web",
                "StatefulSet/life-cache",
                "Widget/life-widget",
            ][..],
            true,
        ),
        (
            here("../helm/tests/corpus/app-basic/chart"),
            "my-app",
            "apps",
            &["Deployment/my-app", "Service/my-app"][..],
            false,
        ),
    ] {
        let mut args = vec![
            kubeconfig.to_str().unwrap(),
            chart.to_str().unwrap(),
            release,
            ns,
        ];
        args.extend(expected);
        let out = Command::new(&py)
            .arg(here("tests/py/helm_lifecycle.py"))
            .args(&args)
            .env("HELM_LIFECYCLE_TEST", if test_hooks { "1" } else { "0" })
            .output()
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{release}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for step in [
            "install --wait",
            "test hooks",
            "upgrade --wait",
            "rollback to revision 1",
            "uninstall --wait",
        ] {
            assert!(
                stdout.contains(&format!("ok {step}\n")),
                "{release}: {step}: {stdout}"
            );
        }
    }
    c.shutdown().await;
}
