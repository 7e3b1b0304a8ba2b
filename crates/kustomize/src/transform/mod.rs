//! kustomize's built-in transformers, run in kustomize's order.

pub mod basic;
pub mod generators;
pub mod hash;
pub mod nameref;
pub mod patches;
pub mod replacements;
pub mod select;
pub mod sort;
pub mod vars;

use std::path::Path;

use crate::build::Ctx;
use crate::config::TransformerConfig;
use crate::error::{BuildError, Result};
use crate::kustomization::Kustomization;
use crate::resource::Res;

/// Runs the transformers of one kustomization over the objects accumulated so far:
/// patchesStrategicMerge, patches, namespace, namePrefix, nameSuffix, labels, annotations,
/// patchesJson6902, replicas, images, replacements.
pub fn run_all(
    ctx: &Ctx,
    dir: &Path,
    kfile: &Path,
    k: &Kustomization,
    config: &TransformerConfig,
    res: &mut Vec<Res>,
) -> Result<()> {
    let shown = ctx.fs.display(kfile);
    let inv = |m: String| BuildError::invalid(shown.clone(), m);
    patches::strategic_merge_list(ctx, dir, &shown, &k.patches_strategic_merge, res)?;
    patches::patches(ctx, dir, &shown, &k.patches, res)?;
    if let Some(ns) = &k.namespace
        && !ns.is_empty()
    {
        basic::namespace(res, ns).map_err(inv)?;
    }
    if let Some(p) = &k.name_prefix {
        basic::prefix_suffix(res, p, true).map_err(inv)?;
    }
    if let Some(s) = &k.name_suffix {
        basic::prefix_suffix(res, s, false).map_err(inv)?;
    }
    basic::labels(res, k, &config.common_labels).map_err(inv)?;
    if let Some(a) = &k.common_annotations {
        let pairs = crate::kustomization::string_map(a, "commonAnnotations").map_err(inv)?;
        basic::annotations(res, &pairs, &config.common_annotations).map_err(inv)?;
    }
    patches::json6902_list(ctx, dir, &shown, &k.patches_json6902, res)?;
    for r in &k.replicas {
        basic::replicas(res, &r.name, r.count).map_err(inv)?;
    }
    for img in &k.images {
        basic::images(res, img).map_err(inv)?;
    }
    replacements::run(ctx, dir, &shown, &k.replacements, res)?;
    Ok(())
}
