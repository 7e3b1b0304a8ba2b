//! get, suspend, resume and create of HelmRepositories and HelmCharts against an in-process
//! cluster: the statuses are the ones the Helm source controllers write (written here, so no
//! controller runs), the tables read as flux's.

use crate::run::*;
use ferroflux_api::{HelmChart, HelmRepository};
use ferroflux_testkit::{flux_cluster, kubeconfig};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const NS: &str = "helm-sources";
const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

async fn setup(c: &kube::Client) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
    let repos: Api<HelmRepository> = Api::namespaced(c.clone(), NS);
    let charts: Api<HelmChart> = Api::namespaced(c.clone(), NS);
    let ready = |message: &str| {
        json!([{"type": "Ready", "status": "True", "reason": "Succeeded", "message": message,
                "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}])
    };
    for (name, spec, status) in [
        (
            "podinfo",
            json!({"url": "https://stefanprodan.github.io/podinfo", "interval": "5m"}),
            json!({"observedGeneration": 1,
                   "artifact": {"revision": DIGEST, "digest": DIGEST, "path": "helmrepository/x/podinfo/index.yaml",
                                "url": "http://h/x", "lastUpdateTime": "2026-01-01T00:00:00Z"},
                   "conditions": ready(&format!("stored artifact: revision '{DIGEST}'"))}),
        ),
        (
            "ghcr",
            json!({"url": "oci://ghcr.io/stefanprodan/charts", "type": "oci", "interval": "5m"}),
            json!({"observedGeneration": 1, "conditions": ready("Helm repository is Ready")}),
        ),
    ] {
        let obj: HelmRepository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}))
        .unwrap();
        repos.create(&PostParams::default(), &obj).await.unwrap();
        repos
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap();
    }
    let chart: HelmChart = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
        "metadata": {"name": "podinfo", "namespace": NS},
        "spec": {"chart": "podinfo", "interval": "5m", "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}}))
    .unwrap();
    charts.create(&PostParams::default(), &chart).await.unwrap();
    let status = json!({"observedGeneration": 1,
        "artifact": {"revision": "6.1.0", "digest": DIGEST, "path": "helmchart/x/podinfo/podinfo-6.1.0.tgz",
                     "url": "http://h/y", "lastUpdateTime": "2026-01-01T00:00:00Z"},
        "conditions": ready("pulled 'podinfo' chart with version '6.1.0'")});
    charts
        .patch_status(
            "podinfo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
}

#[test]
fn get_suspend_and_create_helm_sources() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(setup(&c));
    let kc = kubeconfig(dir.path(), &[&cl]);

    let out = ferroflux(&kc, &["get", "sources", "helm", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        cells(&stdout(&out)),
        [
            vec!["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"],
            vec!["ghcr", "", "False", "True", "Helm repository is Ready"],
            vec![
                "podinfo",
                "sha256:01234567",
                "False",
                "True",
                &format!("stored artifact: revision '{}'", &DIGEST[..15])
            ],
        ]
    );
    let out = ferroflux(&kc, &["get", "sources", "chart", "-n", NS]);
    assert_eq!(
        cells(&stdout(&out)),
        [
            vec!["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"],
            vec![
                "podinfo",
                "6.1.0",
                "False",
                "True",
                "pulled 'podinfo' chart with version '6.1.0'"
            ],
        ]
    );
    let out = ferroflux(&kc, &["get", "sources", "all", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names: Vec<String> = cells(&stdout(&out))
        .into_iter()
        .filter_map(|r| r.first().cloned())
        .filter(|n| !n.is_empty() && n != "NAME")
        .collect();
    assert_eq!(
        names,
        [
            "helmrepository/ghcr",
            "helmrepository/podinfo",
            "helmchart/podinfo"
        ]
    );

    let out = ferroflux(&kc, &["suspend", "source", "chart", "podinfo", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let charts: Api<HelmChart> = Api::namespaced(c.clone(), NS);
    assert_eq!(
        rt.block_on(charts.get("podinfo")).unwrap().spec.suspend,
        Some(true)
    );
    let out = ferroflux(&kc, &["get", "sources", "chart", "podinfo", "-n", NS]);
    assert_eq!(cells(&stdout(&out))[1][2], "True");

    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "helm",
            "podinfo",
            "--url",
            "oci://ghcr.io/stefanprodan/charts/podinfo",
            "--interval",
            "5m",
            "--export",
            "-n",
            NS,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let golden = std::fs::read_to_string(format!(
        "{}/tests/fixtures/goldens/create_source_helm/oci.golden",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("{{ .fluxns }}", NS);
    assert_eq!(stdout(&out), golden);
    drop(cl);
}
