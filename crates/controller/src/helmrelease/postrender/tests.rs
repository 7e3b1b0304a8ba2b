use super::*;

fn release(spec: Value) -> HelmRelease {
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps"},
        "spec": spec,
    }))
    .unwrap()
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "podinfo", "labels": {"app": "podinfo"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "podinfo", "image": "ghcr.io/stefanprodan/podinfo:6.3.5"}]}}},
    })
}

#[test]
fn owner_labels_and_common_metadata_go_on_every_object() {
    let hr = release(json!({
        "interval": "1m",
        "chartRef": {"kind": "HelmChart", "name": "c"},
        "commonMetadata": {"labels": {"team": "web"}, "annotations": {"owner": "me"}},
    }));
    let out = post_render(
        &hr,
        vec![
            deployment(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        ],
    )
    .unwrap();
    for object in &out {
        assert_eq!(
            object["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"],
            "podinfo"
        );
        assert_eq!(
            object["metadata"]["labels"]["helm.toolkit.fluxcd.io/namespace"],
            "apps"
        );
        assert_eq!(object["metadata"]["labels"]["team"], "web");
        assert_eq!(object["metadata"]["annotations"]["owner"], "me");
    }
    assert_eq!(out[0]["metadata"]["labels"]["app"], "podinfo");
}

#[test]
fn kustomize_patches_and_images_apply_in_order() {
    let hr = release(json!({
        "interval": "1m",
        "chartRef": {"kind": "HelmChart", "name": "c"},
        "postRenderers": [
            {"kustomize": {
                "patches": [{
                    "target": {"kind": "Deployment", "name": "podinfo"},
                    "patch": "- op: replace\n  path: /spec/replicas\n  value: 3\n",
                }],
                "images": [{"name": "ghcr.io/stefanprodan/podinfo", "newTag": "6.4.0"}],
            }},
            {"kustomize": {
                "patches": [{"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  replicas: 5\n"}],
            }},
        ],
    }));
    let out = post_render(&hr, vec![deployment()]).unwrap();
    assert_eq!(out[0]["spec"]["replicas"], 5);
    assert_eq!(
        out[0]["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/stefanprodan/podinfo:6.4.0"
    );
}

#[test]
fn a_broken_patch_fails_with_a_message() {
    let hr = release(json!({
        "interval": "1m",
        "chartRef": {"kind": "HelmChart", "name": "c"},
        "postRenderers": [{"kustomize": {"patches": [{"patch": "- op: replace\n  path: /spec/nothing/here\n  value: 3\n",
            "target": {"kind": "Deployment"}}]}}],
    }));
    let err = post_render(&hr, vec![deployment()]).unwrap_err();
    assert!(err.starts_with("kustomize post-renderer failed: "), "{err}");
}
