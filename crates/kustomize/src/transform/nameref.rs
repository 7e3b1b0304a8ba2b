//! Name references: after prefixes, suffixes, namespaces and hash suffixes changed names, every
//! field that names another object of the build (ConfigMap volumes, env sources, Service names,
//! roleRefs, ServiceAccount subjects, …) is rewritten to the new name, choosing among candidates
//! the way kustomize does.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{BuildError, Result};
use crate::fieldspec::{self, NameRef};
use crate::resource::{PrevId, Res, split_api_version};

struct Info {
    name: String,
    namespace: String,
    eff_ns: String,
    cluster: bool,
    kind: String,
    group: String,
    version: String,
    prev: Vec<PrevId>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    id: String,
}

fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() > b.len() { (b, a) } else { (a, b) };
    let diff = long.len() - short.len();
    if short.is_empty() {
        return diff == 0;
    }
    (0..short.len()).all(|i| long[i + diff] == short[i])
}

fn ps_equal(a: &Info, b: &Info, allow_empty: bool) -> bool {
    if allow_empty {
        let pe = a.prefixes.is_empty() || b.prefixes.is_empty();
        let se = a.suffixes.is_empty() || b.suffixes.is_empty();
        (pe || same_ending(&a.prefixes, &b.prefixes))
            && (se || same_ending(&a.suffixes, &b.suffixes))
    } else {
        same_ending(&a.prefixes, &b.prefixes) && same_ending(&a.suffixes, &b.suffixes)
    }
}

fn gvk_selected(info: &Info, kind: &str, group: &str, version: &str) -> bool {
    info.prev.iter().any(|p| {
        (group.is_empty() || info.group == group)
            && (version.is_empty() || info.version == version)
            && (kind.is_empty() || p.kind == kind)
    })
}

/// `extra`: the `nameReference` rules of custom transformer configurations.
pub fn fix_back_references(res: &mut [Res], extra: &[NameRef]) -> Result<()> {
    let infos: Vec<Info> = res
        .iter()
        .map(|r| {
            let (g, v) = split_api_version(r.api_version());
            Info {
                name: r.name().to_string(),
                namespace: r.namespace().to_string(),
                eff_ns: r.effective_namespace(),
                cluster: r.is_cluster_scoped(),
                kind: r.kind().to_string(),
                group: g.to_string(),
                version: v.to_string(),
                prev: r.prev.clone(),
                prefixes: r.prefixes.clone(),
                suffixes: r.suffixes.clone(),
                id: r.id_string(),
            }
        })
        .collect();
    let mut by_prev_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, info) in infos.iter().enumerate() {
        let mut names: Vec<&str> = info.prev.iter().map(|p| p.name.as_str()).collect();
        names.dedup();
        for n in names {
            let e = by_prev_name.entry(n).or_default();
            if e.last() != Some(&i) {
                e.push(i);
            }
        }
    }
    let mut rules = fieldspec::name_references();
    rules.extend(extra.iter().cloned());
    for i in 0..res.len() {
        let referrer = &infos[i];
        let org_kind = res[i].org_kind().to_string();
        let av = res[i].api_version().to_string();
        let role_binding_ns: Vec<String> = if referrer.kind == "RoleBinding" {
            match res[i].obj.get("subjects") {
                Some(Value::Array(s)) => s
                    .iter()
                    .filter(|x| x.get("kind").and_then(Value::as_str) == Some("ServiceAccount"))
                    .filter_map(|x| x.get("namespace").and_then(Value::as_str).map(String::from))
                    .collect(),
                _ => Vec::new(),
            }
        } else {
            Vec::new()
        };
        let could_reference = |c: usize| -> bool {
            if referrer.cluster {
                return true;
            }
            let t = &infos[c];
            t.cluster || t.eff_ns == referrer.eff_ns || role_binding_ns.contains(&t.namespace)
        };
        let role_ref: Option<(String, String)> = res[i].obj.get("roleRef").and_then(|rr| {
            Some((
                rr.get("apiGroup")?.as_str()?.to_string(),
                rr.get("kind")?.as_str()?.to_string(),
            ))
        });
        for rule in &rules {
            if !rule.referrer.matches(&av, &org_kind) {
                continue;
            }
            let select = |old: &str,
                          ns_filter: Option<&str>,
                          with_ns: bool|
             -> std::result::Result<Option<usize>, String> {
                let Some(list) = by_prev_name.get(old) else {
                    return Ok(None);
                };
                let mut c: Vec<usize> = list
                    .iter()
                    .copied()
                    .filter(|&c| could_reference(c))
                    .filter(|&c| match ns_filter {
                        None => true,
                        Some(ns) => {
                            let t = &infos[c];
                            t.prev.first().map(|p| p.namespace.as_str()) == Some(ns)
                                || t.namespace == ns
                                || (t.prev.first().is_some_and(|p| p.namespace == "default")
                                    && ns.is_empty())
                        }
                    })
                    .filter(|&c| gvk_selected(&infos[c], &rule.kind, &rule.group, &rule.version))
                    .filter(|&c| {
                        match (&role_ref, rule.referrer.raw_path.ends_with("roleRef/name")) {
                            (Some((g, k)), true) => gvk_selected(&infos[c], k, g, ""),
                            _ => true,
                        }
                    })
                    .filter(|&c| {
                        if referrer.cluster {
                            return true;
                        }
                        let t = &infos[c];
                        t.cluster || t.kind == "ServiceAccount" || t.eff_ns == referrer.eff_ns
                    })
                    .collect();
                if c.len() == 1 {
                    return Ok(Some(c[0]));
                }
                c.retain(|&x| ps_equal(&infos[x], referrer, true));
                if c.len() > 1 {
                    c.retain(|&x| ps_equal(&infos[x], referrer, false));
                }
                match c.len() {
                    0 => Ok(None),
                    1 => Ok(Some(c[0])),
                    _ => {
                        let first = &infos[c[0]];
                        let identical = c.iter().all(|&x| {
                            infos[x].name == first.name
                                && (!with_ns || infos[x].namespace == first.namespace)
                        });
                        if identical {
                            Ok(Some(c[0]))
                        } else {
                            let ids: Vec<&str> = c.iter().map(|&x| infos[x].id.as_str()).collect();
                            Err(format!(
                                "found multiple possible referrals: {}",
                                ids.join(", ")
                            ))
                        }
                    }
                }
            };
            let mut set_scalar = |v: &mut Value| -> std::result::Result<(), String> {
                let Some(old) = v.as_str() else { return Ok(()) };
                if let Some(t) = select(old, None, false)? {
                    *v = Value::String(infos[t].name.clone());
                }
                Ok(())
            };
            let path = &rule.referrer.path;
            let r = fieldspec::apply(&mut res[i].obj, path, None, &mut |v: &mut Value| {
                set_node(v, &mut set_scalar, &select, &infos)
            });
            r.map_err(|e| {
                BuildError::Other(format!(
                    "updating name reference in '{}' field of '{}': {e}",
                    rule.referrer.raw_path, referrer.id
                ))
            })?;
            let _ = NameRef::clone(rule);
        }
    }
    Ok(())
}

type Select<'a> =
    dyn Fn(&str, Option<&str>, bool) -> std::result::Result<Option<usize>, String> + 'a;

fn set_node(
    v: &mut Value,
    set_scalar: &mut dyn FnMut(&mut Value) -> std::result::Result<(), String>,
    select: &Select,
    infos: &[Info],
) -> std::result::Result<(), String> {
    match v {
        Value::Null => Ok(()),
        Value::String(_) => set_scalar(v),
        Value::Object(_) => set_mapping(v, select, infos),
        Value::Array(items) => {
            for it in items {
                match it {
                    Value::String(_) => set_scalar(it)?,
                    Value::Object(_) => set_mapping(it, select, infos)?,
                    _ => {}
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn set_mapping(v: &mut Value, select: &Select, infos: &[Info]) -> std::result::Result<(), String> {
    let Value::Object(m) = v else { return Ok(()) };
    let Some(old) = m.get("name").and_then(Value::as_str).map(String::from) else {
        return Err("path config error; no 'name' field in node".into());
    };
    let ns = m.get("namespace").and_then(Value::as_str).map(String::from);
    let Some(t) = select(&old, ns.as_deref(), true)? else {
        return Ok(());
    };
    let target = &infos[t];
    if target.name == old && target.namespace.is_empty() {
        return Ok(());
    }
    m.insert("name".into(), Value::String(target.name.clone()));
    if !target.namespace.is_empty() {
        m.insert("namespace".into(), Value::String(target.namespace.clone()));
    }
    Ok(())
}
