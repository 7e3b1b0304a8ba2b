//! The deprecated `vars`: `$(NAME)` in the fields kustomize lists (container commands, args,
//! env values, …) replaced by a field of the object a var names.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{BuildError, Result};
use crate::fieldspec;
use crate::kustomization::VarArgs;
use crate::resource::{Res, split_api_version};

fn gvk_of(v: &VarArgs) -> (String, String, String) {
    let o = &v.obj_ref;
    let (g, ver) = if !o.api_version.is_empty() {
        let (g, ver) = split_api_version(&o.api_version);
        (g.to_string(), ver.to_string())
    } else {
        (o.group.clone(), o.version.clone())
    };
    (g, ver, o.kind.clone())
}

/// Attaches each var of one kustomization to the object it names (kustomize's MergeVars).
pub fn merge(
    res: &mut [Res],
    vars: &[VarArgs],
    known: &mut Vec<VarArgs>,
    shown: &Path,
) -> Result<()> {
    for v in vars {
        if known.iter().any(|k| k.name == v.name) {
            return Err(BuildError::invalid(
                shown,
                format!("var '{}' already encountered", v.name),
            ));
        }
        let (g, ver, kind) = gvk_of(v);
        let ns = &v.obj_ref.namespace;
        let cluster = crate::resource::is_cluster_scoped(&g, &kind);
        let want_ns = crate::resource::effective_namespace(cluster, ns);
        let matched: Vec<usize> = res
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                let (rg, rv) = r.group_version();
                if rg != g || rv != ver {
                    return false;
                }
                let cur = r.kind() == kind
                    && r.name() == v.obj_ref.name
                    && (ns.is_empty() && !cluster || r.effective_namespace() == want_ns);
                cur || r.prev.iter().any(|p| {
                    p.kind == kind
                        && p.name == v.obj_ref.name
                        && (ns.is_empty() && !cluster || p.namespace == want_ns)
                })
            })
            .map(|(i, _)| i)
            .collect();
        if matched.len() > 1 {
            return Err(BuildError::invalid(
                shown,
                format!(
                    "found {} resId matches for var {} (unable to disambiguate)",
                    matched.len(),
                    v.name
                ),
            ));
        }
        if let Some(&i) = matched.first() {
            res[i].var_names.push(v.name.clone());
        }
        known.push(v.clone());
    }
    Ok(())
}

/// Splits `a.b[0].c` / `a.[name=x].b` on dots outside brackets.
pub fn split_dots(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in p.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c)
            }
            ']' => {
                depth -= 1;
                cur.push(c)
            }
            '.' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    // `ports[0]` means field then index
    let mut fields = Vec::new();
    for s in out {
        if let Some(open) = s.find('[')
            && open > 0
            && s.ends_with(']')
        {
            fields.push(s[..open].to_string());
            fields.push(s[open..].to_string());
        } else {
            fields.push(s);
        }
    }
    fields
}

/// Looks up a dotted field path (`spec.ports[0].port`, `spec.containers.[name=x].image`).
pub fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path {
        cur = match cur {
            Value::Object(m) => m.get(seg.as_str())?,
            Value::Array(items) => {
                let inner = seg
                    .strip_prefix('[')
                    .and_then(|s| s.strip_suffix(']'))
                    .unwrap_or(seg);
                if let Ok(i) = inner.parse::<usize>() {
                    items.get(i)?
                } else if let Some((k, val)) = inner.split_once('=') {
                    items
                        .iter()
                        .find(|it| scalar_text(it.get(k)) == Some(val.to_string()))?
                } else {
                    return None;
                }
            }
            _ => return None,
        };
    }
    Some(cur)
}

pub fn scalar_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn expand(
    input: &str,
    vars: &HashMap<String, Value>,
    counts: &mut HashMap<String, usize>,
) -> Value {
    let b = input.as_bytes();
    let mut out = String::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let (read, is_var, advance) = match rest.as_bytes()[0] {
                b'$' => ("$".to_string(), false, 1),
                b'(' => match rest[1..].find(')') {
                    Some(end) => (rest[1..1 + end].to_string(), true, end + 2),
                    None => ("$(".to_string(), false, 1),
                },
                _ => {
                    let ch = rest.chars().next().unwrap_or_default();
                    (format!("${ch}"), false, ch.len_utf8())
                }
            };
            if is_var {
                let mapped = match vars.get(&read) {
                    Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                        *counts.entry(read.clone()).or_default() += 1;
                        v.clone()
                    }
                    _ => Value::String(format!("$({read})")),
                };
                if input == format!("$({read})") {
                    return mapped;
                }
                match &mapped {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
            } else {
                out.push_str(&read);
            }
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    if checkpoint < input.len() {
        out.push_str(&input[checkpoint..]);
    }
    Value::String(out)
}

/// `extra`: the `varReference` field specs of custom transformer configurations.
pub fn resolve(
    res: &mut [Res],
    vars: &[VarArgs],
    extra: &[fieldspec::FieldSpec],
    shown: &Path,
) -> Result<()> {
    if vars.is_empty() {
        return Ok(());
    }
    let mut values: HashMap<String, Value> = HashMap::new();
    for v in vars {
        let owner = res
            .iter()
            .find(|r| r.var_names.iter().any(|n| n == &v.name));
        let Some(owner) = owner else {
            return Err(BuildError::invalid(
                shown,
                format!(
                    "var '{}' cannot be mapped to a field in the set of known resources",
                    v.name
                ),
            ));
        };
        let fp = v
            .field_ref
            .as_ref()
            .map(|f| f.field_path.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "metadata.name".into());
        let found = lookup(&owner.obj, &split_dots(&fp)).cloned();
        let Some(found) = found else {
            return Err(BuildError::invalid(
                shown,
                format!(
                    "field specified in var '{}' not found in corresponding resource",
                    v.name
                ),
            ));
        };
        values.insert(v.name.clone(), found);
    }
    let mut specs = fieldspec::var_references();
    specs.extend(extra.iter().cloned());
    let mut counts = HashMap::new();
    for r in res.iter_mut() {
        let av = r.api_version().to_string();
        let kind = r.kind().to_string();
        for fs in &specs {
            if !fs.matches(&av, &kind) {
                continue;
            }
            fieldspec::apply(&mut r.obj, &fs.path, None, &mut |node| {
                match node {
                    Value::String(s) => {
                        *node = expand(s, &values, &mut counts);
                    }
                    Value::Object(m) => {
                        for (_, val) in m.iter_mut() {
                            if let Value::String(s) = val {
                                *val = expand(s, &values, &mut counts);
                            }
                        }
                    }
                    Value::Array(items) => {
                        for it in items.iter_mut() {
                            match it {
                                Value::String(s) => *it = expand(s, &values, &mut counts),
                                _ => return Err("invalid value type expect a string".into()),
                            }
                        }
                    }
                    _ => {}
                }
                Ok(())
            })
            .map_err(|e| BuildError::invalid(shown, format!("{}: {e}", r.id_string())))?;
        }
    }
    Ok(())
}
