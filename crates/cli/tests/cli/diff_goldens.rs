//! flux's own `diff kustomization` cases (cmd/flux/diff_kustomization_test.go), run against a
//! local cluster and compared with its goldens: the objects each case puts in the cluster
//! first, the command's flags as flux's test passes them, and what flux prints (or the error
//! it fails with).

use crate::build_diff::{Env, copy_dir, start};
use ferroflux_apply::applier::{Applier, ApplyOptions};
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

const BUILD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/build");
const DIFF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/goldens/diff-kustomization"
);
const NS: &str = "flux-system";

/// A fixture with flux's template placeholder filled in.
fn fixture(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .replace("{{ .fluxns }}", NS)
}

fn documents(text: &str) -> Vec<Value> {
    text.split("\n---")
        .map(|d| d.trim_start_matches("---"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect()
}

/// What flux's test does before a case: the objects applied server-side.
async fn apply(env: &Env, file: &str) {
    let applier = Applier::new(env.client.clone(), "kustomize-controller");
    applier
        .apply_staged(documents(&fixture(file)), &ApplyOptions::default())
        .await
        .unwrap();
}

/// And after it: the same objects deleted, by kubectl, waiting until they are gone.
fn delete(env: &Env, file: &str) {
    let mut child = Command::new("kubectl")
        .args(["delete", "--wait", "--ignore-not-found", "-f", "-"])
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(fixture(file).as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "kubectl delete {file}");
}

/// `diff kustomization NAME --path build/DIR --progress-bar=false -n flux-system` plus `extra`,
/// DIR copied out of this repository first (a build reads the Git work tree DIR is in).
async fn diff(env: &Env, name: &str, dir: &str, extra: &[&str]) -> (i32, String, String) {
    let work = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(BUILD).join(dir), work.path());
    let path = work.path().display().to_string();
    let mut args = vec![
        "diff",
        "kustomization",
        name,
        "--path",
        &path,
        "--progress-bar=false",
        "-n",
        NS,
    ];
    args.extend_from_slice(extra);
    env.ferroflux(&args).await
}

fn golden(name: &str) -> String {
    fixture(&format!("{DIFF}/{name}"))
}

/// One deliberate difference from flux: when the Kustomization file names no namespace, flux
/// labels the objects with that empty namespace; the Kustomization will live in `-n`'s
/// namespace and the controller labels them with it, so that is what ferroflux's diff shows.
fn with_namespace_label(golden: String) -> String {
    golden.replace(
        "kustomize.toolkit.fluxcd.io/namespace:\n",
        &format!("kustomize.toolkit.fluxcd.io/namespace: {NS}\n"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_matches_flux_goldens() {
    let env = start("diff-golden").await;
    // flux's setup(): the GitRepository and the Kustomization `podinfo` in the cluster.
    for doc in documents(&fixture(&format!("{BUILD}/podinfo-source.yaml")))
        .into_iter()
        .chain(documents(&fixture(&format!(
            "{BUILD}/podinfo-kustomization.yaml"
        ))))
    {
        if doc["kind"] == "Kustomization" {
            env.create_kustomization(doc).await;
        } else if doc["kind"] != "Namespace" {
            let applier = Applier::new(env.client.clone(), "test");
            applier
                .apply_staged(vec![doc], &ApplyOptions::default())
                .await
                .unwrap();
        }
    }

    let (code, _, stderr) = env.ferroflux(&["diff", "kustomization", "podinfo"]).await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("invalid resource path \"\""),
        "no args: {stderr}"
    );

    let cases: [(&str, Option<&str>, &str, &[&str]); 9] = [
        (
            "nothing deployed",
            None,
            "diff-new-kustomization.golden",
            &[],
        ),
        (
            "a deployment object",
            Some("deployment.yaml"),
            "diff-with-deployment.golden",
            &[],
        ),
        (
            "a drifted service",
            Some("service.yaml"),
            "diff-with-drifted-service.golden",
            &[],
        ),
        (
            "a drifted secret",
            Some("secret.yaml"),
            "diff-with-drifted-secret.golden",
            &[],
        ),
        (
            "a drifted key in a sops secret",
            Some("key-sops-secret.yaml"),
            "diff-with-drifted-key-sops-secret.golden",
            &[],
        ),
        (
            "a drifted value in a sops secret",
            Some("value-sops-secret.yaml"),
            "diff-with-drifted-value-sops-secret.golden",
            &[],
        ),
        (
            "a sops dockerconfigjson secret",
            Some("dockerconfigjson-sops-secret.yaml"),
            "diff-with-dockerconfigjson-sops-secret.golden",
            &[],
        ),
        (
            "a sops stringData secret",
            Some("stringdata-sops-secret.yaml"),
            "diff-with-drifted-stringdata-sops-secret.golden",
            &[],
        ),
        (
            "a kustomization file with several objects of one name",
            None,
            "diff-new-kustomization.golden",
            &[
                "--kustomization-file",
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/goldens/diff-kustomization/flux-kustomization-multiobj.yaml"
                ),
            ],
        ),
    ];
    for (case, object, expected, extra) in cases {
        let object = object.map(|o| format!("{DIFF}/{o}"));
        if let Some(o) = &object {
            apply(&env, o).await;
        }
        let (code, stdout, stderr) = diff(&env, "podinfo", "podinfo", extra).await;
        assert_eq!(code, 1, "{case}: {stderr}");
        assert_eq!(stdout, golden(expected), "{case}");
        if let Some(o) = &object {
            delete(&env, o);
        }
    }
}

/// The Kustomization is not in the cluster: flux's error, unless `--ignore-not-found` with a
/// `--kustomization-file` (flux issue 5439); then taking ownership of an object the cluster
/// already has, drift ignore rules, and a new namespace with and without objects in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_of_a_kustomization_not_deployed_matches_flux_goldens() {
    let env = start("diff-golden-local").await;
    let local_only = format!("{DIFF}/flux-kustomization-local-only.yaml");
    let (code, _, stderr) = diff(
        &env,
        "podinfo",
        "podinfo",
        &["--kustomization-file", &local_only],
    )
    .await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "failed to get kustomization object: kustomizations.kustomize.toolkit.fluxcd.io \"podinfo\" not found"
        ),
        "{stderr}"
    );
    let (code, stdout, stderr) = diff(
        &env,
        "podinfo",
        "podinfo",
        &["--kustomization-file", &local_only, "--ignore-not-found"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, golden("diff-new-kustomization.golden"));

    apply(&env, &format!("{DIFF}/existing-configmap.yaml")).await;
    let file = format!("{DIFF}/flux-kustomization-configmaps.yaml");
    let (code, stdout, stderr) = diff(
        &env,
        "configmaps",
        "configmaps",
        &["--kustomization-file", &file, "--ignore-not-found"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        with_namespace_label(golden("diff-taking-ownership.golden"))
    );

    let drifted = format!("{DIFF}/drifted-service-no-labels.yaml");
    apply(&env, &drifted).await;
    let file = format!("{DIFF}/flux-kustomization-drift-ignore.yaml");
    let (code, stdout, stderr) = diff(
        &env,
        "podinfo",
        "podinfo",
        &["--kustomization-file", &file, "--ignore-not-found"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        with_namespace_label(golden("diff-with-drift-ignore.golden"))
    );
    delete(&env, &drifted);

    let file = format!("{DIFF}/flux-kustomization-new-namespace-and-configmap.yaml");
    let (code, _, stderr) = diff(
        &env,
        "new-namespace-and-configmap",
        "new-namespace-and-configmap",
        &["--kustomization-file", &file, "--ignore-not-found"],
    )
    .await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("ConfigMap/new-ns/app-config not found: namespaces \"new-ns\" not found"),
        "{stderr}"
    );
    let file = format!("{DIFF}/flux-kustomization-new-namespace-only.yaml");
    let (code, stdout, stderr) = diff(
        &env,
        "new-namespace-only",
        "new-namespace-only",
        &["--kustomization-file", &file, "--ignore-not-found"],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, golden("diff-new-namespace-only.golden"));
}
