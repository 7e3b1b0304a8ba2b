//! configMapGenerator and secretGenerator: literals, files (`key=path`), env files, options,
//! and the create / merge / replace behaviors.

use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::build::{Ctx, append_all};
use crate::error::{BuildError, Result};
use crate::kustomization::{GeneratorArgs, GeneratorOptions, Kustomization, string_map};
use crate::origin;
use crate::resource::Res;

pub fn run(
    ctx: &Ctx,
    dir: &Path,
    kfile: &Path,
    k: &Kustomization,
    res: &mut Vec<Res>,
) -> Result<()> {
    let configured_in = ctx.origin.borrow().as_deref().map(|base| {
        let file = kfile
            .file_name()
            .map(|f| f.to_string_lossy())
            .unwrap_or_default();
        origin::join(base, &file)
    });
    for g in &k.config_map_generator {
        let mut r = generate(ctx, dir, kfile, g, k.generator_options.as_ref(), false)?;
        if let Some(c) = &configured_in {
            origin::annotate(&mut r, &origin::of_generator(c, "ConfigMapGenerator"));
        }
        absorb(ctx, kfile, g, r, res)?;
    }
    for g in &k.secret_generator {
        let mut r = generate(ctx, dir, kfile, g, k.generator_options.as_ref(), true)?;
        if let Some(c) = &configured_in {
            origin::annotate(&mut r, &origin::of_generator(c, "SecretGenerator"));
        }
        absorb(ctx, kfile, g, r, res)?;
    }
    Ok(())
}

fn absorb(ctx: &Ctx, kfile: &Path, g: &GeneratorArgs, new: Res, res: &mut Vec<Res>) -> Result<()> {
    let shown = ctx.fs.display(kfile);
    let behavior = if g.behavior.is_empty() {
        "create"
    } else {
        g.behavior.as_str()
    };
    if behavior == "create" {
        return append_all(res, vec![new], ctx.fs);
    }
    if behavior != "merge" && behavior != "replace" {
        return Err(BuildError::invalid(
            shown,
            format!(
                "generator {:?}: unknown behavior {behavior:?} (create, merge or replace)",
                g.name
            ),
        ));
    }
    let ns_new = crate::resource::effective_namespace(false, new.namespace());
    let matches: Vec<usize> = res
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.kind() == new.kind()
                && r.org_name() == new.name()
                && (crate::resource::effective_namespace(false, &r.org_namespace()) == ns_new
                    || r.effective_namespace() == ns_new)
        })
        .map(|(i, _)| i)
        .collect();
    if matches.len() != 1 {
        return Err(BuildError::invalid(
            shown,
            format!(
                "generator {:?} with behavior {behavior}: found {} objects to {behavior} with (expected exactly one {} named {:?})",
                g.name,
                matches.len(),
                new.kind(),
                g.name
            ),
        ));
    }
    let old = &mut res[matches[0]];
    // A merge keeps where the object came from; a replace takes the generator's origin.
    let kept_origin = if behavior == "merge" {
        origin::get(old)
    } else {
        None
    };
    if behavior == "replace" {
        for field in ["data", "binaryData", "type", "immutable"] {
            match new.obj.get(field) {
                Some(v) => {
                    if let Some(m) = old.obj.as_object_mut() {
                        m.insert(field.into(), v.clone());
                    }
                }
                None => {
                    if let Some(m) = old.obj.as_object_mut() {
                        m.remove(field);
                    }
                }
            }
        }
    } else {
        for field in ["data", "binaryData"] {
            if let Some(Value::Object(add)) = new.obj.get(field) {
                let Some(m) = old.obj.as_object_mut() else {
                    continue;
                };
                let target = m.entry(field).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(t) = target {
                    for (k, v) in add {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    for which in ["labels", "annotations"] {
        if let Some(Value::Object(add)) = new.obj.get("metadata").and_then(|m| m.get(which)) {
            let add = add.clone();
            if let Some(md) = old.metadata_mut() {
                let t = md.entry(which).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(t) = t {
                    for (k, v) in add {
                        t.insert(k, v);
                    }
                }
            }
        }
    }
    if let Some(Value::String(o)) = kept_origin {
        origin::annotate(old, &o);
    }
    // Whether the name gets a hash suffix is a build annotation, and kustomize's
    // CopyMergeMetaDataFieldsFrom takes build annotations from the object merged into only:
    // the generator that first made it decides, whatever the merging generator's options.
    old.generated = true;
    Ok(())
}

fn merged_options(
    local: Option<&GeneratorOptions>,
    global: Option<&GeneratorOptions>,
) -> GeneratorOptions {
    let mut out = GeneratorOptions::default();
    let merge_map = |a: Option<&crate::kustomization::StrMap>,
                     b: Option<&crate::kustomization::StrMap>| {
        if a.is_none() && b.is_none() {
            return None;
        }
        let mut m = Map::new();
        if let Some(g) = a {
            for (k, v) in g {
                m.insert(k.clone(), v.clone());
            }
        }
        if let Some(l) = b {
            for (k, v) in l {
                m.insert(k.clone(), v.clone());
            }
        }
        Some(m)
    };
    out.labels = merge_map(
        global.and_then(|g| g.labels.as_ref()),
        local.and_then(|l| l.labels.as_ref()),
    );
    out.annotations = merge_map(
        global.and_then(|g| g.annotations.as_ref()),
        local.and_then(|l| l.annotations.as_ref()),
    );
    out.disable_name_suffix_hash = match (
        global.and_then(|g| g.disable_name_suffix_hash),
        local.and_then(|l| l.disable_name_suffix_hash),
    ) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (a, b) => b.or(a),
    };
    out.immutable = match (
        global.and_then(|g| g.immutable),
        local.and_then(|l| l.immutable),
    ) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (a, b) => b.or(a),
    };
    out
}

fn generate(
    ctx: &Ctx,
    dir: &Path,
    kfile: &Path,
    g: &GeneratorArgs,
    global: Option<&GeneratorOptions>,
    secret: bool,
) -> Result<Res> {
    let shown = ctx.fs.display(kfile);
    let inv = |m: String| BuildError::invalid(shown.clone(), m);
    if g.name.is_empty() {
        return Err(inv("a generator needs a name".into()));
    }
    let mut pairs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut envs = g.envs.clone();
    if !g.env.is_empty() {
        envs.push(g.env.clone());
    }
    for e in &envs {
        let (bytes, _) = ctx.read_local(dir, e)?;
        let text =
            String::from_utf8(bytes).map_err(|_| inv(format!("env file {e:?} is not UTF-8")))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start_matches('\u{feff}');
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((key, val)) = line.split_once('=') else {
                return Err(inv(format!(
                    "env file {e:?} line {}: {trimmed:?} has no '=' (reading values from the process environment is not supported)",
                    n + 1
                )));
            };
            let key = key.trim_start();
            if key.contains(char::is_whitespace) || key.is_empty() {
                return Err(inv(format!(
                    "env file {e:?} line {}: invalid key {key:?}",
                    n + 1
                )));
            }
            pairs.push((key.to_string(), val.as_bytes().to_vec()));
        }
    }
    for l in &g.literals {
        let Some((k, v)) = l.split_once('=') else {
            return Err(inv(format!("literal {l:?} must be key=value")));
        };
        let v = unquote(v);
        pairs.push((k.to_string(), v.into_bytes()));
    }
    for f in &g.files {
        let (key, path) = match f.split_once('=') {
            Some((k, p)) => {
                if k.is_empty() {
                    return Err(inv(format!("file source {f:?}: empty key")));
                }
                (k.to_string(), p.to_string())
            }
            None => {
                let base = Path::new(f)
                    .file_name()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default();
                (base, f.clone())
            }
        };
        let (bytes, _) = ctx.read_local(dir, &path)?;
        pairs.push((key, bytes));
    }
    let mut data = Map::new();
    let mut binary = Map::new();
    for (k, v) in pairs {
        if data.contains_key(&k) || binary.contains_key(&k) {
            return Err(inv(format!(
                "generator {:?}: key {k:?} appears more than once",
                g.name
            )));
        }
        if secret {
            data.insert(k, Value::String(encode_base64_wrapped(&v)));
        } else {
            match String::from_utf8(v) {
                Ok(s) => {
                    data.insert(k, Value::String(s));
                }
                Err(e) => {
                    binary.insert(k, Value::String(encode_base64_wrapped(e.as_bytes())));
                }
            }
        }
    }
    let opts = merged_options(g.options.as_ref(), global);
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(g.name.clone()));
    if !g.namespace.is_empty() {
        metadata.insert("namespace".into(), Value::String(g.namespace.clone()));
    }
    if let Some(l) = &opts.labels {
        let pairs = string_map(l, "generatorOptions.labels").map_err(&inv)?;
        if !pairs.is_empty() {
            metadata.insert(
                "labels".into(),
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                ),
            );
        }
    }
    if let Some(a) = &opts.annotations {
        let pairs = string_map(a, "generatorOptions.annotations").map_err(&inv)?;
        if !pairs.is_empty() {
            metadata.insert(
                "annotations".into(),
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                ),
            );
        }
    }
    let mut obj = json!({
        "apiVersion": "v1",
        "kind": if secret { "Secret" } else { "ConfigMap" },
        "metadata": Value::Object(metadata),
    });
    let m = obj.as_object_mut().ok_or_else(|| inv("internal".into()))?;
    if secret {
        let t = if g.type_.is_empty() {
            "Opaque"
        } else {
            g.type_.as_str()
        };
        m.insert("type".into(), Value::String(t.into()));
    }
    if !data.is_empty() {
        m.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        m.insert("binaryData".into(), Value::Object(binary));
    }
    if opts.immutable == Some(true) {
        m.insert("immutable".into(), Value::Bool(true));
    }
    let mut r = Res::new(obj, shown);
    r.needs_hash = opts.disable_name_suffix_hash != Some(true);
    r.generated = true;
    Ok(r)
}

/// kustomize strips one pair of matching quotes around a literal's value.
fn unquote(v: &str) -> String {
    let b = v.as_bytes();
    if b.len() >= 2
        && ((b[0] == b'"' && b[b.len() - 1] == b'"') || (b[0] == b'\'' && b[b.len() - 1] == b'\''))
    {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}

/// kustomize's generator encoding: base64 broken into 70-character lines, each followed by a
/// newline once there is more than one line.
fn encode_base64_wrapped(data: &[u8]) -> String {
    const LINE: usize = 70;
    let enc = base64::engine::general_purpose::STANDARD.encode(data);
    let lines = enc.len() / LINE + 1;
    if lines <= 1 {
        return enc;
    }
    let mut out = String::with_capacity(enc.len() + lines);
    let mut i = 0;
    while i < enc.len() {
        let j = (i + LINE).min(enc.len());
        out.push_str(&enc[i..j]);
        out.push('\n');
        i = j;
    }
    out
}
