//! Flux's post-renderers, run on a release's rendered manifests before they are stored and
//! applied (helm-controller's `postrender.BuildPostRenderers`): each `spec.postRenderers`
//! kustomize entry in order (its `patches` and `images`, built by crates/kustomize over the
//! manifests as one resource file, as Flux's in-memory kustomization does), then the owner
//! labels `helm.toolkit.fluxcd.io/name|namespace` on every object, then `spec.commonMetadata`.

use std::sync::Arc;

use super::chart::{OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL};
use ferroflux_api::HelmRelease;
use ferroflux_api::helmrelease::{KustomizePostRenderer, PostRenderStrategy};
use ferroflux_helmrelease::{PostRender, PostRenderStrategy as Strategy};
use kube::ResourceExt;
use serde_json::{Map, Value, json};

/// The post-render of `hr`'s release: [`post_render`], given the documents
/// `spec.postRenderStrategy` names (`combined`, hooks included, by default, as in Flux on Helm 4).
pub fn for_release(hr: &HelmRelease) -> PostRender {
    let strategy = match hr
        .spec
        .post_render_strategy
        .unwrap_or(PostRenderStrategy::Combined)
    {
        PostRenderStrategy::Nohooks => Strategy::NoHooks,
        PostRenderStrategy::Combined => Strategy::Combined,
        PostRenderStrategy::Separate => Strategy::Separate,
    };
    let hr = hr.clone();
    PostRender {
        run: Arc::new(move |objects| post_render(&hr, objects)),
        strategy,
    }
}

/// Runs every post-renderer of `hr` over `objects`, in Flux's order.
pub fn post_render(hr: &HelmRelease, objects: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut objects = objects;
    for renderer in hr.spec.post_renderers.iter().flatten() {
        if let Some(kustomize) = &renderer.kustomize {
            objects = kustomize_render(kustomize, objects)?;
        }
    }
    let name = hr.name_any();
    let namespace = hr.namespace().unwrap_or_else(|| "default".into());
    let mut labels = vec![
        (OWNER_NAME_LABEL.to_string(), name),
        (OWNER_NAMESPACE_LABEL.to_string(), namespace),
    ];
    let mut annotations = Vec::new();
    if let Some(common) = &hr.spec.common_metadata {
        labels.extend(common.labels.clone().unwrap_or_default());
        annotations.extend(common.annotations.clone().unwrap_or_default());
    }
    for object in &mut objects {
        set_metadata(object, "labels", &labels);
        set_metadata(object, "annotations", &annotations);
    }
    Ok(objects)
}

fn set_metadata(object: &mut Value, field: &str, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        return;
    }
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    let metadata = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let map = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    if let Some(map) = map.as_object_mut() {
        for (k, v) in pairs {
            map.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// One kustomize post-renderer: the manifests as `resources.yaml` of a kustomization that holds
/// the renderer's patches and images, built in a private directory.
fn kustomize_render(
    renderer: &KustomizePostRenderer,
    objects: Vec<Value>,
) -> Result<Vec<Value>, String> {
    let patches = renderer.patches.clone().unwrap_or_default();
    let images = renderer.images.clone().unwrap_or_default();
    if patches.is_empty() && images.is_empty() {
        return Ok(objects);
    }
    let dir = tempfile::tempdir().map_err(|e| format!("post-render: {e}"))?;
    let resources = ferroflux_kustomize::render_yaml(&objects);
    std::fs::write(dir.path().join("resources.yaml"), resources)
        .map_err(|e| format!("post-render: {e}"))?;
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["resources.yaml"],
        "patches": patches,
        "images": images,
    });
    let text = serde_json::to_string(&kustomization).map_err(|e| format!("post-render: {e}"))?;
    std::fs::write(dir.path().join("kustomization.yaml"), text)
        .map_err(|e| format!("post-render: {e}"))?;
    ferroflux_kustomize::Build::new(dir.path())
        .map(|b| b.with_reorder(ferroflux_kustomize::Reorder::None))
        .and_then(|b| b.build(dir.path()))
        .map_err(|e| format!("kustomize post-renderer failed: {e}"))
}

#[cfg(test)]
mod tests;
