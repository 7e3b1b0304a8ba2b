//! Patches: strategic merge (delegated to the schema-aware merge of `ferroflux-schema`) and
//! JSON 6902, inline or from files, with or without targets.

use std::path::Path;

use serde_json::Value;

use super::select::Compiled;
use crate::build::Ctx;
use crate::error::{BuildError, Result};
use crate::kustomization::PatchArgs;
use crate::resource::{Res, effective_namespace, split_api_version};
use crate::yaml::parse::{Document, parse_documents_with_raw};

fn looks_like_path(s: &str) -> bool {
    !s.contains('\n') && !s.contains(": ")
}

/// Legacy `patchesStrategicMerge`: each entry a file or an inline patch.
pub fn strategic_merge_list(
    ctx: &Ctx,
    dir: &Path,
    shown: &Path,
    entries: &[String],
    res: &mut Vec<Res>,
) -> Result<()> {
    for e in entries {
        let (text, src) = if looks_like_path(e) {
            let (bytes, real) = ctx.read_local(dir, e.trim())?;
            let text = String::from_utf8(bytes)
                .map_err(|_| BuildError::invalid(ctx.fs.display(&real), "patch is not UTF-8"))?;
            (text, ctx.fs.display(&real))
        } else {
            (e.clone(), shown.to_path_buf())
        };
        let docs = parse_documents_with_raw(&text).map_err(|error| BuildError::Yaml {
            path: src.clone(),
            error,
        })?;
        for d in docs {
            apply_smp_by_id(res, &d.value, &d.quoted_placeholders, &src)?;
        }
    }
    Ok(())
}

fn patch_id(p: &Value) -> (String, String, String, String) {
    let s = |a: &str, b: Option<&str>| -> String {
        let v = match b {
            None => p.get(a),
            Some(b) => p.get(a).and_then(|x| x.get(b)),
        };
        v.and_then(Value::as_str).unwrap_or("").to_string()
    };
    (
        s("apiVersion", None),
        s("kind", None),
        s("metadata", Some("name")),
        s("metadata", Some("namespace")),
    )
}

fn apply_smp_by_id(res: &mut Vec<Res>, patch: &Value, quoted: &[String], src: &Path) -> Result<()> {
    let (av, kind, name, ns) = patch_id(patch);
    let pns = effective_namespace(false, &ns);
    let hits: Vec<usize> = res
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            if r.api_version() != av {
                return false;
            }
            let cur = r.kind() == kind
                && r.name() == name
                && (r.effective_namespace() == pns || (r.is_cluster_scoped() && ns.is_empty()));
            cur || r.prev.iter().any(|p| {
                p.kind == kind
                    && p.name == name
                    && (p.namespace == pns
                        || (p.namespace == crate::resource::NOT_NAMESPACEABLE && ns.is_empty()))
            })
        })
        .map(|(i, _)| i)
        .collect();
    let (g, v) = split_api_version(&av);
    let id = format!(
        "{}.{}.{}/{}.{}",
        if kind.is_empty() { "[noKind]" } else { &kind },
        if v.is_empty() { "[noVer]" } else { v },
        if g.is_empty() { "[noGrp]" } else { g },
        if name.is_empty() { "[noName]" } else { &name },
        if ns.is_empty() { "[noNs]" } else { &ns }
    );
    match hits.len() {
        0 => Err(BuildError::invalid(
            src,
            format!("no resource matches strategic merge patch {id:?}"),
        )),
        1 => apply_smp(res, hits[0], patch, quoted, src),
        _ => Err(BuildError::invalid(
            src,
            format!("multiple resources match strategic merge patch {id:?}"),
        )),
    }
}

/// Merges `patch` into `res[i]`. `quoted` are the patch's quoted placeholders: a value the
/// patch wrote keeps the patch's quoting, a value it replaced loses the object's.
fn apply_smp(
    res: &mut Vec<Res>,
    i: usize,
    patch: &Value,
    quoted: &[String],
    src: &Path,
) -> Result<()> {
    let merged = crate::smp::merge(&res[i].obj, patch).map_err(|m| {
        BuildError::invalid(
            src,
            format!("applying patch to {}: {m}", res[i].id_string()),
        )
    })?;
    match merged {
        None => {
            res.remove(i);
        }
        Some(v) => {
            let r = &mut res[i];
            let before = std::mem::replace(&mut r.obj, v);
            let obj = &r.obj;
            // List items merged by key may sit at other indices than in the patch: only a
            // pointer that finds the patch's own value there is one the patch wrote.
            let written = |p: &str| {
                patch.pointer(p).is_some_and(Value::is_string) && patch.pointer(p) == obj.pointer(p)
            };
            r.quoted_placeholders.retain(|p| {
                before.pointer(p).is_some() && before.pointer(p) == obj.pointer(p) && !written(p)
            });
            for p in quoted {
                if written(p) {
                    r.quoted_placeholders.push(p.clone());
                }
            }
        }
    }
    Ok(())
}

enum Parsed {
    Smp(Vec<Document>),
    Json(Value),
}

fn parse_patch(text: &str, src: &Path) -> Result<Parsed> {
    let docs = parse_documents_with_raw(text).map_err(|error| BuildError::Yaml {
        path: src.to_path_buf(),
        error,
    })?;
    if docs.len() == 1 && docs[0].value.is_array() {
        return Ok(Parsed::Json(
            docs.into_iter().next().map(|d| d.value).unwrap_or_default(),
        ));
    }
    if docs.iter().all(|d| d.value.is_object()) {
        return Ok(Parsed::Smp(docs));
    }
    Err(BuildError::invalid(
        src,
        "patch is neither a strategic merge patch nor a JSON 6902 patch",
    ))
}

/// `patches` entries (and legacy `patchesJson6902`, which always have targets).
pub fn patches(
    ctx: &Ctx,
    dir: &Path,
    shown: &Path,
    list: &[PatchArgs],
    res: &mut Vec<Res>,
) -> Result<()> {
    for p in list {
        let (text, src) = match (&p.path, &p.patch) {
            (Some(_), Some(_)) => {
                return Err(BuildError::invalid(
                    shown,
                    "patch and path can't be set at the same time",
                ));
            }
            (None, None) => {
                return Err(BuildError::invalid(
                    shown,
                    "must specify one of patch and path",
                ));
            }
            (Some(path), None) => {
                let (bytes, real) = ctx.read_local(dir, path)?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    BuildError::invalid(ctx.fs.display(&real), "patch is not UTF-8")
                })?;
                (text, ctx.fs.display(&real))
            }
            (None, Some(t)) => (t.trim().to_string(), shown.to_path_buf()),
        };
        for (k, v) in &p.options {
            if !matches!(k.as_str(), "allowNameChange" | "allowKindChange") || !v.is_boolean() {
                return Err(BuildError::invalid(
                    shown,
                    format!("unknown patch option {k:?}"),
                ));
            }
        }
        let allow_name = p.options.get("allowNameChange").and_then(Value::as_bool) == Some(true);
        let allow_kind = p.options.get("allowKindChange").and_then(Value::as_bool) == Some(true);
        match parse_patch(&text, &src)? {
            Parsed::Json(ops) => {
                let Some(target) = &p.target else {
                    return Err(BuildError::invalid(
                        &src,
                        "must specify a target for JSON patch",
                    ));
                };
                let sel = Compiled::new(target).map_err(|m| BuildError::invalid(shown, m))?;
                let patch: json_patch::Patch = serde_json::from_value(ops).map_err(|e| {
                    BuildError::invalid(&src, format!("invalid JSON 6902 patch: {e}"))
                })?;
                for r in res.iter_mut().filter(|r| sel.matches(r)) {
                    r.store_previous_id();
                    r.json_roundtripped = true;
                    json_patch::patch(&mut r.obj, &patch).map_err(|e| {
                        BuildError::invalid(
                            &src,
                            format!("applying JSON 6902 patch to {}: {e}", r.id_string()),
                        )
                    })?;
                }
            }
            Parsed::Smp(docs) => match &p.target {
                None => {
                    for d in docs {
                        apply_smp_by_id(res, &d.value, &d.quoted_placeholders, &src)?;
                    }
                }
                Some(target) => {
                    if docs.len() > 1 {
                        return Err(BuildError::invalid(
                            &src,
                            "Multiple Strategic-Merge Patches in one `patches` entry is not allowed to set `patches.target` field",
                        ));
                    }
                    let sel = Compiled::new(target).map_err(|m| BuildError::invalid(shown, m))?;
                    let Some(Document {
                        value: patch,
                        quoted_placeholders: quoted,
                        ..
                    }) = docs.into_iter().next()
                    else {
                        continue;
                    };
                    let mut i = 0;
                    while i < res.len() {
                        if !sel.matches(&res[i]) {
                            i += 1;
                            continue;
                        }
                        let mut pc = patch.clone();
                        let patch_name = patch_id(&patch).2;
                        let patch_kind = patch_id(&patch).1;
                        if let Some(m) = pc.as_object_mut() {
                            let r = &res[i];
                            let md = m
                                .entry("metadata")
                                .or_insert_with(|| Value::Object(Default::default()));
                            if let Some(md) = md.as_object_mut() {
                                if !allow_name || patch_name.is_empty() {
                                    md.insert("name".into(), Value::String(r.name().into()));
                                }
                                if r.namespace().is_empty() {
                                    md.remove("namespace");
                                } else {
                                    md.insert(
                                        "namespace".into(),
                                        Value::String(r.namespace().into()),
                                    );
                                }
                            }
                            if !allow_kind || patch_kind.is_empty() {
                                m.insert("kind".into(), Value::String(r.kind().into()));
                            }
                            m.insert("apiVersion".into(), Value::String(r.api_version().into()));
                        }
                        let before = res.len();
                        if allow_name || allow_kind {
                            res[i].store_previous_id();
                        }
                        apply_smp(res, i, &pc, &quoted, &src)?;
                        if res.len() == before {
                            i += 1;
                        }
                    }
                }
            },
        }
    }
    Ok(())
}

/// Legacy `patchesJson6902`: target plus a path or inline ops.
pub fn json6902_list(
    ctx: &Ctx,
    dir: &Path,
    shown: &Path,
    list: &[PatchArgs],
    res: &mut Vec<Res>,
) -> Result<()> {
    for p in list {
        if p.target.is_none() {
            return Err(BuildError::invalid(
                shown,
                "patchesJson6902 entry needs a target",
            ));
        }
    }
    patches(ctx, dir, shown, list, res)
}
