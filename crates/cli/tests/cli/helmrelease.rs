//! get, suspend, resume, reconcile and create of HelmReleases against an in-process cluster,
//! compared with flux's goldens (`tests/fixtures/goldens/helmrelease/`). Where the controller
//! would answer, the test writes the status it would write once it sees the request.

use crate::run::*;
use ferroflux_api::HelmRelease;
use ferroflux_testkit::{eventually, flux_cluster, kubeconfig};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

const NS: &str = "thrfg-1";

fn golden(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/goldens/helmrelease/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .replace("{{ .ns }}", NS)
}

async fn namespace(c: &kube::Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

async fn create_hr(c: &kube::Client) -> HelmRelease {
    let api: Api<HelmRelease> = Api::namespaced(c.clone(), NS);
    let hr: HelmRelease = serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "thrfg", "namespace": NS},
        "spec": {"interval": "1m", "chart": {"spec": {"chart": "./charts/podinfo",
            "sourceRef": {"kind": "GitRepository", "name": "thrfg"}}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &hr).await.unwrap()
}

/// The status helm-controller writes after installing podinfo 6.3.5.
async fn installed(c: &kube::Client, handled: Option<&str>) {
    let api: Api<HelmRelease> = Api::namespaced(c.clone(), NS);
    let generation = api.get("thrfg").await.unwrap().metadata.generation;
    let message =
        format!("Helm install succeeded for release {NS}/thrfg.v1 with chart podinfo@6.3.5");
    let mut status = json!({
        "observedGeneration": generation,
        "lastAttemptedRevision": "6.3.5",
        "helmChart": format!("{NS}/{NS}-thrfg"),
        "history": [{"chartName": "podinfo", "chartVersion": "6.3.5", "configDigest": "sha256:00",
            "digest": "sha256:11", "firstDeployed": "2026-01-01T00:00:00Z",
            "lastDeployed": "2026-01-01T00:00:00Z", "name": "thrfg", "namespace": NS,
            "status": "deployed", "version": 1}],
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "InstallSucceeded", "message": message,
             "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Released", "status": "True", "reason": "InstallSucceeded", "message": message,
             "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"},
        ],
    });
    if let Some(h) = handled {
        status["lastHandledReconcileAt"] = json!(h);
    }
    api.patch_status(
        "thrfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

fn spawn(kc: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn get_suspend_resume_and_reconcile_print_what_flux_prints() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        namespace(&c, NS).await;
        create_hr(&c).await;
        installed(&c, None).await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);

    let out = ferroflux(&kc, &["get", "helmreleases", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), golden("get_helmrelease_from_git.golden"));
    let out = ferroflux(&kc, &["get", "hr", "thrfg", "-n", NS]);
    assert_eq!(stdout(&out), golden("get_helmrelease_from_git.golden"));

    let out = ferroflux(&kc, &["suspend", "hr", "thrfg", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), golden("suspend_helmrelease_from_git.golden"));
    let api: Api<HelmRelease> = Api::namespaced(c.clone(), NS);
    assert_eq!(
        rt.block_on(api.get("thrfg")).unwrap().spec.suspend,
        Some(true)
    );

    let child = spawn(&kc, &["resume", "helmrelease", "thrfg", "-n", NS]);
    rt.block_on(async {
        eventually("thrfg resumed", || async {
            let hr = api.get("thrfg").await.ok()?;
            (hr.spec.suspend.is_none()).then_some(())
        })
        .await;
        installed(&c, None).await;
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), golden("resume_helmrelease_from_git.golden"));

    // --force and --reset ride on the same token as requestedAt, as the controller expects.
    let child = spawn(
        &kc,
        &["reconcile", "hr", "thrfg", "-n", NS, "--force", "--reset"],
    );
    let token = rt.block_on(async {
        let token = eventually("request annotated", || async {
            let hr = api.get("thrfg").await.ok()?;
            hr.metadata
                .annotations?
                .get("reconcile.fluxcd.io/requestedAt")
                .cloned()
        })
        .await;
        installed(&c, Some(&token)).await;
        token
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The last four lines of flux's reconcile --with-source golden are the HelmRelease's own.
    let reconcile = golden("reconcile_helmrelease_from_git.golden");
    let lines: Vec<&str> = reconcile.lines().collect();
    let expected = lines[lines.len() - 4..].to_vec();
    assert_eq!(stderr(&out), format!("{}\n", expected.join("\n")));
    let annotations = rt
        .block_on(api.get("thrfg"))
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert_eq!(annotations["reconcile.fluxcd.io/forceAt"], token);
    assert_eq!(annotations["reconcile.fluxcd.io/resetAt"], token);
    rt.block_on(cl.shutdown());
}

#[test]
fn create_helmrelease_applies_and_waits_or_exports() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(namespace(&c, NS));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let args = [
        "create",
        "hr",
        "thrfg",
        "-n",
        NS,
        "--source",
        "GitRepository/thrfg",
        "--chart",
        "./charts/podinfo",
    ];
    let child = spawn(&kc, &args);
    let api: Api<HelmRelease> = Api::namespaced(c.clone(), NS);
    rt.block_on(async {
        eventually("thrfg created", || async {
            api.get_opt("thrfg").await.ok()?
        })
        .await;
        installed(&c, None).await;
    });
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), golden("create_helmrelease_from_git.golden"));
    let hr = rt.block_on(api.get("thrfg")).unwrap();
    let spec: Value = serde_json::to_value(&hr.spec).unwrap();
    assert_eq!(spec["chart"]["spec"]["chart"], "./charts/podinfo");
    assert_eq!(spec["interval"], "1m0s");

    // --export prints without a cluster call.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "hr",
            "x",
            "--chart-ref",
            "HelmChart/x",
            "--export",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("---\napiVersion: helm.toolkit.fluxcd.io/v2\n"));
    rt.block_on(cl.shutdown());
}

#[test]
fn build_and_diff_helmrelease_render_a_local_chart_with_the_cluster_s_values() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(c.clone(), "flux-system");
        let cm = serde_json::from_value(json!({
            "metadata": {"name": "web-values", "namespace": "flux-system"},
            "data": {"values.yaml": "replicaCount: 4\n"},
        }))
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let api: Api<HelmRelease> = Api::namespaced(c.clone(), "flux-system");
        let hr: HelmRelease = serde_json::from_value(json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "web", "namespace": "flux-system"},
            "spec": {"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "app"},
                "valuesFrom": [{"kind": "ConfigMap", "name": "web-values"}],
                "values": {"image": {"tag": "v9"}}},
        }))
        .unwrap();
        api.create(&PostParams::default(), &hr).await.unwrap();
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let chart = format!(
        "{}/../helm/tests/corpus/app-basic/chart",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = ferroflux(&kc, &["build", "hr", "web", "--path", &chart]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("kind: Deployment"), "{text}");
    assert!(text.contains("replicas: 4"), "{text}");
    assert!(text.contains("ghcr.io/example/app:v9"), "{text}");
    assert!(text.contains("helm.toolkit.fluxcd.io/name: web"), "{text}");

    // Nothing installed yet: every object would be created, exit 1 as flux diff.
    let out = ferroflux(&kc, &["diff", "hr", "web", "--path", &chart]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("► Deployment/flux-system/web-app created"),
        "{}",
        stdout(&out)
    );
    rt.block_on(cl.shutdown());
}
