use super::*;

fn release(spec: Value) -> HelmRelease {
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

#[test]
fn a_template_becomes_flux_s_helm_chart() {
    let hr = release(json!({
        "interval": "5m",
        "chart": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {
                "chart": "./charts/podinfo",
                "sourceRef": {"kind": "GitRepository", "name": "fleet", "namespace": "flux-system"},
                "valuesFiles": ["values-prod.yaml"],
            },
        },
    }));
    assert_eq!(
        chart_location(&hr).unwrap(),
        ("flux-system".to_string(), "apps-podinfo".to_string())
    );
    let template = hr.spec.chart.clone().unwrap();
    assert_eq!(
        helm_chart_object(&hr, &template),
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmChart",
            "metadata": {
                "name": "apps-podinfo",
                "namespace": "flux-system",
                "labels": {
                    "team": "a",
                    "helm.toolkit.fluxcd.io/name": "podinfo",
                    "helm.toolkit.fluxcd.io/namespace": "apps",
                },
                "annotations": {"note": "x"},
            },
            "spec": {
                "chart": "./charts/podinfo",
                "version": "*",
                "sourceRef": {"kind": "GitRepository", "name": "fleet"},
                "interval": "5m",
                "reconcileStrategy": "ChartVersion",
                "valuesFiles": ["values-prod.yaml"],
            },
        })
    );
}

#[test]
fn chart_refs_name_their_helm_chart_or_oci_repository() {
    let hr =
        release(json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "shared"}}));
    assert_eq!(
        chart_location(&hr).unwrap(),
        ("apps".to_string(), "shared".to_string())
    );
    let hr = release(json!({"interval": "1m", "chartRef": {"kind": "OCIRepository", "name": "p"}}));
    let (resource, ns, name) = source_location(&hr).unwrap();
    assert_eq!(
        (resource.kind.as_str(), ns.as_str(), name.as_str()),
        ("OCIRepository", "apps", "p")
    );
    let hr =
        release(json!({"interval": "1m", "chartRef": {"kind": "ExternalArtifact", "name": "p"}}));
    assert_eq!(
        chart_location(&hr).unwrap_err(),
        "chartRef of kind ExternalArtifact is not supported yet: only HelmChart and OCIRepository chartRefs and chart templates are"
    );
}

#[test]
fn oci_revisions_become_build_metadata_as_helm_controller_does() {
    let hex = "0123456789abcdef".repeat(4);
    assert_eq!(
        version_with_digest("6.5.0", &format!("6.5.0@sha256:{hex}")).unwrap(),
        ("6.5.0+0123456789ab".to_string(), format!("sha256:{hex}"))
    );
    assert_eq!(
        version_with_digest("1.0.0+old", &format!("sha256:{hex}"))
            .unwrap()
            .0,
        "1.0.0+0123456789ab"
    );
    // A moving non-semver tag is fine; a semver tag must be the chart's version.
    assert_eq!(
        version_with_digest("6.5.0", &format!("latest@sha256:{hex}")).unwrap(),
        (
            "6.5.0+0123456789ab".to_string(),
            format!("latest@sha256:{hex}")
        )
    );
    assert_eq!(
        version_with_digest("6.5.0", &format!("6.4.0@sha256:{hex}")).unwrap_err(),
        "artifact revision 6.4.0 does not match chart version 6.5.0"
    );
    assert_eq!(
        version_with_digest("6.5.0", "6.5.0@sha256:abc").unwrap_err(),
        "invalid artifact revision 6.5.0@sha256:abc"
    );
}

fn source(generation: i64, status: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": {"name": "apps-podinfo", "namespace": "flux-system", "generation": generation},
        "spec": {},
        "status": status,
    }))
    .unwrap()
}

#[test]
fn a_source_is_ready_with_an_artifact_for_its_generation() {
    let artifact = json!({"digest": "sha256:00", "lastUpdateTime": "2026-01-01T00:00:00Z",
        "path": "helmchart/x.tgz", "revision": "6.3.5", "url": "http://h/x.tgz"});
    let ok = source(2, json!({"observedGeneration": 2, "artifact": artifact}));
    assert_eq!(ready_artifact(&ok).unwrap().revision, "6.3.5");
    let old = source(3, json!({"observedGeneration": 2, "artifact": artifact}));
    assert_eq!(
        ready_artifact(&old).unwrap_err(),
        "HelmChart 'flux-system/apps-podinfo' is not ready: latest generation of object has not been reconciled"
    );
    let failing = source(
        3,
        json!({"observedGeneration": 2, "conditions": [
        {"type": "Ready", "status": "False", "message": "no chart version found for podinfo-9.x"}]}),
    );
    assert_eq!(
        ready_artifact(&failing).unwrap_err(),
        "HelmChart 'flux-system/apps-podinfo' is not ready: no chart version found for podinfo-9.x"
    );
    let none = source(1, json!({"observedGeneration": 1}));
    assert_eq!(
        ready_artifact(&none).unwrap_err(),
        "HelmChart 'flux-system/apps-podinfo' is not ready: does not have an artifact"
    );
}
