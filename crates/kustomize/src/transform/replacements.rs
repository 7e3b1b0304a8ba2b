//! `replacements`: copy a field of one object (the source) into fields of others (the
//! targets), with kustomize's selectors, `[name=x]` list selectors, and delimiter / index /
//! create options.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::select::Compiled;
use super::vars::split_dots;
use crate::build::Ctx;
use crate::error::{BuildError, Result};
use crate::kustomization::Selector;
use crate::resource::{Res, effective_namespace};
use crate::yaml::parse::parse_documents;

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Replacement {
    path: Option<String>,
    source: Option<Source>,
    #[serde(default)]
    targets: Option<Vec<Target>>,
}

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Source {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    field_path: String,
    options: Option<Options>,
}

#[derive(Debug, Deserialize, Clone, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    #[serde(default)]
    delimiter: String,
    #[serde(default)]
    index: i64,
    #[serde(default)]
    create: bool,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Target {
    select: Option<Selector>,
    #[serde(default)]
    reject: Vec<Selector>,
    #[serde(default)]
    field_paths: Vec<String>,
    options: Option<Options>,
}

/// kustomize's `ResId.IsSelectedBy`: exact match on every field the selector sets.
fn id_selected(
    (g, v, k, n, ns): (&str, &str, &str, &str, &str),
    s: (&str, &str, &str, &str, &str),
) -> bool {
    (s.0.is_empty() || s.0 == g)
        && (s.1.is_empty() || s.1 == v)
        && (s.2.is_empty() || s.2 == k)
        && (s.3.is_empty() || s.3 == n)
        && (s.4.is_empty() || effective_namespace(false, s.4) == effective_namespace(false, ns))
}

fn ids_selected(r: &Res, s: (&str, &str, &str, &str, &str)) -> bool {
    let (g, v) = r.group_version();
    if id_selected((g, v, r.kind(), r.name(), r.namespace()), s) {
        return true;
    }
    r.prev.iter().any(|p| {
        let ns = if p.namespace == crate::resource::NOT_NAMESPACEABLE {
            ""
        } else {
            p.namespace.as_str()
        };
        id_selected((g, v, &p.kind, &p.name, ns), s)
    })
}

fn sel_tuple(s: &Selector) -> (&str, &str, &str, &str, &str) {
    (&s.group, &s.version, &s.kind, &s.name, &s.namespace)
}

pub fn run(ctx: &Ctx, dir: &Path, shown: &Path, list: &[Value], res: &mut [Res]) -> Result<()> {
    let mut all = Vec::new();
    for v in list {
        let r: Replacement = serde_json::from_value(v.clone())
            .map_err(|e| BuildError::invalid(shown, format!("invalid replacement: {e}")))?;
        if let Some(p) = &r.path {
            let (bytes, real) = ctx.read_local(dir, p)?;
            let file = ctx.fs.display(&real);
            let text =
                String::from_utf8(bytes).map_err(|_| BuildError::invalid(&file, "not UTF-8"))?;
            let docs = parse_documents(&text).map_err(|error| BuildError::Yaml {
                path: file.clone(),
                error,
            })?;
            for d in docs {
                let items = match d {
                    Value::Array(a) => a,
                    o => vec![o],
                };
                for it in items {
                    let r: Replacement = serde_json::from_value(it).map_err(|e| {
                        BuildError::invalid(&file, format!("invalid replacement: {e}"))
                    })?;
                    all.push((r, file.clone()));
                }
            }
        } else {
            all.push((r, shown.to_path_buf()));
        }
    }
    for (r, file) in all {
        apply(&r, res).map_err(|m| BuildError::invalid(&file, m))?;
    }
    Ok(())
}

fn apply(r: &Replacement, res: &mut [Res]) -> std::result::Result<(), String> {
    let (Some(src), Some(targets)) = (&r.source, &r.targets) else {
        return Err("replacements must specify a source and at least one target".into());
    };
    let st = (
        src.group.as_str(),
        src.version.as_str(),
        src.kind.as_str(),
        src.name.as_str(),
        src.namespace.as_str(),
    );
    let mut matches = res.iter().filter(|x| ids_selected(x, st));
    let describe = || {
        format!(
            "{}.{}.{}/{}.{}",
            src.kind, src.version, src.group, src.name, src.namespace
        )
    };
    let Some(source) = matches.next() else {
        return Err(format!("nothing selected by {}", describe()));
    };
    if matches.next().is_some() {
        return Err(format!("multiple matches for selector {}", describe()));
    }
    let fp = if src.field_path.is_empty() {
        "metadata.name"
    } else {
        &src.field_path
    };
    let value = super::vars::lookup(&source.obj, &split_dots(fp)).cloned();
    let value = match value {
        None | Some(Value::Null) => {
            return Err(format!(
                "fieldPath `{fp}` is missing for replacement source {}",
                describe()
            ));
        }
        Some(v) => v,
    };
    let value = match &src.options {
        Some(o) if !o.delimiter.is_empty() => {
            let text =
                scalar_text(&value).ok_or("delimiter option can only be used with scalar nodes")?;
            let parts: Vec<&str> = text.split(o.delimiter.as_str()).collect();
            if o.index < 0 || o.index as usize >= parts.len() {
                return Err(format!(
                    "options.index {} is out of bounds for value {text}",
                    o.index
                ));
            }
            Value::String(parts[o.index as usize].to_string())
        }
        _ => value,
    };
    for t in targets {
        let Some(select) = &t.select else {
            return Err("target must specify resources to select".into());
        };
        let label_sel = Compiled::new(&Selector {
            label_selector: select.label_selector.clone(),
            annotation_selector: select.annotation_selector.clone(),
            ..Default::default()
        })?;
        let mut rejects = Vec::new();
        for rj in &t.reject {
            rejects.push((
                rj.clone(),
                Compiled::new(&Selector {
                    label_selector: rj.label_selector.clone(),
                    annotation_selector: rj.annotation_selector.clone(),
                    ..Default::default()
                })?,
            ));
        }
        let paths: Vec<String> = if t.field_paths.is_empty() {
            vec!["metadata.name".into()]
        } else {
            t.field_paths.clone()
        };
        for target in res.iter_mut() {
            if !label_sel.matches(target) {
                continue;
            }
            if rejects.iter().any(|(rj, c)| {
                (!rj.label_selector.is_empty() || !rj.annotation_selector.is_empty())
                    && c.matches(target)
            }) {
                continue;
            }
            if !ids_selected(target, sel_tuple(select)) {
                continue;
            }
            if rejects.iter().any(|(rj, _)| {
                let t = sel_tuple(rj);
                !(t.0.is_empty()
                    && t.1.is_empty()
                    && t.2.is_empty()
                    && t.3.is_empty()
                    && t.4.is_empty())
                    && ids_selected(target, t)
            }) {
                continue;
            }
            for p in &paths {
                let segs = split_dots(p);
                let create = t.options.as_ref().is_some_and(|o| o.create);
                let mut hits = 0;
                set_path(&mut target.obj, &segs, create, &mut |field| {
                    hits += 1;
                    set_value(t.options.as_ref(), field, &value)
                })?;
                if hits == 0 {
                    return Err(if create {
                        format!("unable to find or create field {p:?} in replacement target")
                    } else {
                        format!("unable to find field {p:?} in replacement target")
                    });
                }
            }
        }
    }
    Ok(())
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The target keeps its own type: kustomize only swaps the scalar's text.
fn set_value(
    opts: Option<&Options>,
    field: &mut Value,
    value: &Value,
) -> std::result::Result<(), String> {
    let mut value = value.clone();
    if let Some(o) = opts
        && !o.delimiter.is_empty()
    {
        let cur = match &*field {
            Value::Null => String::new(),
            f => scalar_text(f).ok_or("delimiter option can only be used with scalar nodes")?,
        };
        let mut tv: Vec<String> = cur.split(o.delimiter.as_str()).map(String::from).collect();
        let v = scalar_text(&value).unwrap_or_default();
        if o.index < 0 {
            tv.insert(0, v);
        } else if o.index as usize >= tv.len() {
            tv.push(v);
        } else {
            tv[o.index as usize] = v;
        }
        value = Value::String(tv.join(&o.delimiter));
    }
    let text = scalar_text(&value);
    *field = match (&*field, text) {
        (Value::String(_), Some(t)) => Value::String(t),
        (Value::Number(_), Some(t)) => match crate::yaml::resolve::resolve_plain(&t) {
            crate::yaml::resolve::Resolved::Value(v @ Value::Number(_)) => v,
            _ => Value::String(t),
        },
        (Value::Bool(_), Some(t)) => match t.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(t),
        },
        (Value::Null, Some(t)) => match crate::yaml::resolve::resolve_plain(&t) {
            crate::yaml::resolve::Resolved::Value(v) => v,
            _ => Value::String(t),
        },
        _ => value,
    };
    Ok(())
}

fn set_path(
    node: &mut Value,
    path: &[String],
    create: bool,
    set: &mut dyn FnMut(&mut Value) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let Some(seg) = path.first() else {
        return set(node);
    };
    let rest = &path[1..];
    match node {
        Value::Object(m) => {
            if seg == "*" {
                for (_, v) in m.iter_mut() {
                    set_path(v, rest, create, set)?;
                }
                return Ok(());
            }
            if !m.contains_key(seg.as_str()) {
                if !create {
                    return Ok(());
                }
                let fresh = match rest.first() {
                    None => Value::Null,
                    Some(n) if n.starts_with('[') || n.parse::<usize>().is_ok() => {
                        Value::Array(Vec::new())
                    }
                    Some(_) => Value::Object(Map::new()),
                };
                m.insert(seg.clone(), fresh);
            }
            match m.get_mut(seg.as_str()) {
                Some(v) => set_path(v, rest, create, set),
                None => Ok(()),
            }
        }
        Value::Array(items) => {
            let inner = seg
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .unwrap_or(seg);
            if seg == "*" || inner == "*" {
                for it in items.iter_mut() {
                    set_path(it, rest, create, set)?;
                }
                return Ok(());
            }
            if let Ok(i) = inner.parse::<usize>() {
                return match items.get_mut(i) {
                    Some(it) => set_path(it, rest, create, set),
                    None => Ok(()),
                };
            }
            if let Some((k, val)) = inner.split_once('=') {
                let mut found = false;
                for it in items.iter_mut() {
                    if it.get(k).and_then(scalar_text) == Some(val.to_string()) {
                        found = true;
                        set_path(it, rest, create, set)?;
                    }
                }
                if !found && create {
                    let mut m = Map::new();
                    m.insert(k.to_string(), Value::String(val.to_string()));
                    items.push(Value::Object(m));
                    if let Some(last) = items.last_mut() {
                        set_path(last, rest, create, set)?;
                    }
                }
                return Ok(());
            }
            Ok(())
        }
        Value::Null if create => {
            *node = Value::Object(Map::new());
            set_path(node, path, create, set)
        }
        _ => Ok(()),
    }
}
