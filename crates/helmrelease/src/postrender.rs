//! Post-rendering a release's documents, for each of helm-controller's `postRenderStrategy`
//! values.
//!
//! Helm 3 post-rendered only the manifests, after the hooks were split off, and stored the
//! post-renderer's output as the manifest (`nohooks`). Helm 4 hands every rendered document,
//! hooks included, to the post-renderer in one stream (`combined`, Flux's default), and Helm 4.2
//! can hand manifests and hooks over as two streams (`separate`). In both, each document carries
//! the template it came from in an annotation while it is post-rendered. The output is regrouped
//! by that annotation and split into hooks and manifests again, as a fresh render is, so a
//! post-renderer may patch a hook, and the stored manifest keeps its `# Source:` lines.

use std::sync::Arc;

use ferroflux_helm::{Hook, Manifest};
use serde_json::Value;

use crate::manifest::{objects_of_manifest, release_manifest};

/// Rewrites rendered objects before they are applied and stored, as Helm's post-renderers do
/// (Flux's `postRenderers`, `commonMetadata`, owner labels).
pub type PostRenderer = dyn Fn(Vec<Value>) -> Result<Vec<Value>, String> + Send + Sync;

/// Which of a release's documents a post-renderer sees (helm-controller's `postRenderStrategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PostRenderStrategy {
    /// The manifests only (Helm 3); the stored manifest is the post-renderer's output.
    NoHooks,
    /// Manifests and hooks in one stream (Helm 4's default, and Flux's).
    #[default]
    Combined,
    /// Manifests in one stream, hooks in another (Helm 4.2).
    Separate,
}

/// A post-renderer and what it sees.
#[derive(Clone)]
pub struct PostRender {
    /// The post-renderer.
    pub run: Arc<PostRenderer>,
    /// Which documents it is given.
    pub strategy: PostRenderStrategy,
}

/// The annotation holding a document's template path while it is post-rendered (Helm 4's).
const FILENAME_ANNOTATION: &str = "postrenderer.helm.sh/postrender-filename";

/// The release's manifest text and hooks after `post` ran over the render's `manifests` and
/// `hooks`. Errors carry Helm's wording.
pub(crate) fn post_render(
    post: &PostRender,
    manifests: &[Manifest],
    hooks: &[Hook],
) -> Result<(String, Vec<Hook>), String> {
    let run = |files: Vec<(String, String)>| -> Result<Vec<(String, String)>, String> {
        let objects =
            annotated_stream(&files).map_err(|e| format!("error merging manifests: {e}"))?;
        let objects = (post.run)(objects)
            .map_err(|e| format!("error while running post render on files: {e}"))?;
        Ok(files_by_annotation(objects))
    };
    let manifest_files = || -> Vec<(String, String)> {
        manifests
            .iter()
            .map(|m| (m.path.clone(), m.content.clone()))
            .collect()
    };
    let hook_files = || -> Vec<(String, String)> {
        hooks
            .iter()
            .map(|h| (h.path.clone(), h.manifest.clone()))
            .collect()
    };
    let files = match post.strategy {
        PostRenderStrategy::NoHooks => {
            let objects = objects_of_manifest(&release_manifest(manifests))
                .map_err(|e| format!("error while running post render on files: {e}"))?;
            let objects = (post.run)(objects)
                .map_err(|e| format!("error while running post render on files: {e}"))?;
            return Ok((ferroflux_kustomize::render_yaml(&objects), hooks.to_vec()));
        }
        PostRenderStrategy::Combined => {
            let mut files = manifest_files();
            files.extend(hook_files());
            run(files)?
        }
        PostRenderStrategy::Separate => {
            let mut files = run(manifest_files())?;
            files.extend(run(hook_files())?);
            files
        }
    };
    let (hooks, manifests) = ferroflux_helm::sort_manifests(&files)?;
    Ok((release_manifest(&manifests), hooks))
}

/// The objects of `files` (path, documents) as one stream in path order, each annotated with
/// its path.
fn annotated_stream(files: &[(String, String)]) -> Result<Vec<Value>, String> {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    // Stable: the documents of one path keep their order.
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (path, text) in sorted {
        let objects = objects_of_manifest(text).map_err(|e| format!("parsing {path}: {e}"))?;
        for mut object in objects {
            if let Some(meta) = object.as_object_mut().map(|o| {
                o.entry("metadata")
                    .or_insert_with(|| Value::Object(Default::default()))
            }) && let Some(meta) = meta.as_object_mut()
            {
                let annotations = meta
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(annotations) = annotations.as_object_mut() {
                    annotations.insert(FILENAME_ANNOTATION.into(), Value::String(path.clone()));
                }
            }
            out.push(object);
        }
    }
    Ok(out)
}

/// The post-rendered `objects` grouped back into files by their path annotation, which is
/// removed (with the annotations map when nothing else is in it); an object without one (the
/// post-renderer made it) is a file of its own, `generated-by-postrender-<index>.yaml`.
fn files_by_annotation(objects: Vec<Value>) -> Vec<(String, String)> {
    let mut files: Vec<(String, Vec<Value>)> = Vec::new();
    for (i, mut object) in objects.into_iter().enumerate() {
        let mut path = None;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            && let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut)
        {
            path = annotations
                .remove(FILENAME_ANNOTATION)
                .and_then(|v| v.as_str().map(str::to_string));
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
        let path = path
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| format!("generated-by-postrender-{i}.yaml"));
        match files.iter_mut().find(|(p, _)| *p == path) {
            Some((_, docs)) => docs.push(object),
            None => files.push((path, vec![object])),
        }
    }
    files
        .into_iter()
        .map(|(path, docs)| (path, ferroflux_kustomize::render_yaml(&docs)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered() -> (Vec<Manifest>, Vec<Hook>) {
        let files = vec![
            (
                "web/templates/cm.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n".to_string(),
            ),
            (
                "web/templates/job.yaml".to_string(),
                "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"-1\"\nspec:\n  template:\n    spec:\n      containers:\n      - name: m\n        image: old\n".to_string(),
            ),
        ];
        let (hooks, manifests) = ferroflux_helm::sort_manifests(&files).unwrap();
        (manifests, hooks)
    }

    /// Labels every object it sees with `seen: yes` and rewrites the hook's image.
    fn labeller(strategy: PostRenderStrategy) -> (PostRender, Arc<std::sync::Mutex<Vec<usize>>>) {
        let batches = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = batches.clone();
        let run: Arc<PostRenderer> = Arc::new(move |mut objects: Vec<Value>| {
            seen.lock().map_err(|e| e.to_string())?.push(objects.len());
            for o in &mut objects {
                o["metadata"]["labels"] = json!({"seen": "yes"});
                if let Some(c) = o.pointer_mut("/spec/template/spec/containers/0/image") {
                    *c = json!("new");
                }
            }
            Ok(objects)
        });
        (PostRender { run, strategy }, batches)
    }

    #[test]
    fn combined_post_renders_hooks_with_the_manifests_in_one_stream() {
        let (manifests, hooks) = rendered();
        let (post, batches) = labeller(PostRenderStrategy::Combined);
        let (manifest, hooks) = post_render(&post, &manifests, &hooks).unwrap();
        assert_eq!(*batches.lock().unwrap(), vec![2]);
        assert_eq!(
            manifest,
            "---\n# Source: web/templates/cm.yaml\napiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  labels:\n    seen: \"yes\"\n  name: a\n\n"
        );
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].path, "web/templates/job.yaml");
        assert_eq!(hooks[0].weight, -1);
        assert!(
            hooks[0].manifest.contains("image: new"),
            "{}",
            hooks[0].manifest
        );
        assert!(hooks[0].manifest.contains("seen: \"yes\""));
        assert!(!hooks[0].manifest.contains(FILENAME_ANNOTATION));
    }

    #[test]
    fn separate_post_renders_hooks_in_a_stream_of_their_own() {
        let (manifests, hooks) = rendered();
        let (post, batches) = labeller(PostRenderStrategy::Separate);
        let (_, hooks) = post_render(&post, &manifests, &hooks).unwrap();
        assert_eq!(*batches.lock().unwrap(), vec![1, 1]);
        assert!(hooks[0].manifest.contains("image: new"));
    }

    #[test]
    fn nohooks_leaves_hooks_as_rendered() {
        let (manifests, rendered_hooks) = rendered();
        let (post, batches) = labeller(PostRenderStrategy::NoHooks);
        let (manifest, hooks) = post_render(&post, &manifests, &rendered_hooks).unwrap();
        assert_eq!(*batches.lock().unwrap(), vec![1]);
        assert!(!manifest.contains("# Source:"), "{manifest}");
        assert!(manifest.contains("seen: \"yes\""));
        assert_eq!(hooks, rendered_hooks);
    }

    #[test]
    fn a_post_renderer_can_turn_a_manifest_into_a_hook_and_add_objects() {
        let (manifests, hooks) = rendered();
        let run: Arc<PostRenderer> = Arc::new(|mut objects: Vec<Value>| {
            for o in &mut objects {
                if o["kind"] == "ConfigMap" {
                    o["metadata"]["annotations"]["helm.sh/hook"] = json!("post-install");
                }
            }
            objects.push(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}}),
            );
            Ok(objects)
        });
        let post = PostRender {
            run,
            strategy: PostRenderStrategy::Combined,
        };
        let (manifest, hooks) = post_render(&post, &manifests, &hooks).unwrap();
        assert_eq!(
            manifest,
            "---\n# Source: generated-by-postrender-2.yaml\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n\n"
        );
        let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["a", "migrate"]);
    }

    #[test]
    fn a_failing_post_renderer_is_named_as_helm_names_it() {
        let (manifests, hooks) = rendered();
        let post = PostRender {
            run: Arc::new(|_| Err("patch target not found".to_string())),
            strategy: PostRenderStrategy::Combined,
        };
        let err = post_render(&post, &manifests, &hooks).unwrap_err();
        assert_eq!(
            err,
            "error while running post render on files: patch target not found"
        );
    }
}
