//! Values coalescing as Helm's `chart/common/util/coalesce.go` does it: user values over chart
//! defaults (a user `null` deletes a default), subchart values under the subchart's name, and
//! `global` copied down into every subchart (parent globals win). `merge` mode (used while
//! importing values) keeps nulls instead of deleting.
//!
//! Helm prints its warnings (a table over a scalar...) with `log.Printf`; they are collected in
//! [`Warnings`] for the caller to show.

use serde_json::{Map, Value};

use crate::tree::Node;

/// Warnings Helm would log while coalescing.
pub type Warnings = Vec<String>;

/// Helm's `GlobalKey`.
pub const GLOBAL: &str = "global";

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Go's `%v` of a decoded value, close enough for warnings.
fn show(v: &Value) -> String {
    crate::gofmt::go_print(v)
}

/// Go's `%t` of a value that is not a bool: `%!t(string=x)`.
fn percent_t(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Null => "%!t(<nil>)".into(),
        other => format!("%!t({}={})", crate::gofmt::go_type_name(other), show(other)),
    }
}

/// Helm's `CoalesceValues` (merge = false) and `MergeValues` (merge = true).
pub fn coalesce_root(
    node: &Node<'_>,
    vals: &Map<String, Value>,
    merge: bool,
    warnings: &mut Warnings,
) -> Result<Map<String, Value>, String> {
    coalesce(node, vals.clone(), "", merge, warnings)
}

fn coalesce(
    node: &Node<'_>,
    mut dest: Map<String, Value>,
    prefix: &str,
    merge: bool,
    warnings: &mut Warnings,
) -> Result<Map<String, Value>, String> {
    coalesce_chart_values(node, &mut dest, prefix, merge, warnings);
    coalesce_deps(node, dest, prefix, merge, warnings)
}

fn coalesce_deps(
    node: &Node<'_>,
    mut dest: Map<String, Value>,
    prefix: &str,
    merge: bool,
    warnings: &mut Warnings,
) -> Result<Map<String, Value>, String> {
    for sub in &node.deps {
        let name = sub.name();
        let mut dvmap = match dest.get_mut(name) {
            None => Map::new(),
            Some(Value::Object(m)) => std::mem::take(m),
            Some(other) => return Err(format!("type mismatch on {name}: {}", percent_t(other))),
        };
        let sub_prefix = concat_prefix(prefix, node.name());
        coalesce_globals(&mut dvmap, &dest, &sub_prefix, warnings);
        let merged = coalesce(sub, dvmap, &sub_prefix, merge, warnings)?;
        dest.insert(name.to_string(), Value::Object(merged));
    }
    Ok(dest)
}

fn coalesce_globals(
    dest: &mut Map<String, Value>,
    src: &Map<String, Value>,
    prefix: &str,
    warnings: &mut Warnings,
) {
    let mut dg = match dest.get(GLOBAL) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            warnings.push(
                "warning: skipping globals because destination global is not a table.".into(),
            );
            return;
        }
    };
    let sg = match src.get(GLOBAL) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            warnings.push("warning: skipping globals because source global is not a table.".into());
            return;
        }
    };
    for (key, val) in sg {
        match val {
            Value::Object(vv) => match dg.get(&key) {
                None => {
                    dg.insert(key, Value::Object(vv));
                }
                Some(Value::Object(destv)) => {
                    let mut vv = vv;
                    coalesce_tables(
                        &mut vv,
                        destv.clone(),
                        &concat_prefix(prefix, &key),
                        true,
                        warnings,
                    );
                    dg.insert(key, Value::Object(vv));
                }
                Some(_) => warnings.push(format!(
                    "Conflict: cannot merge map onto non-map for {}. Skipping.",
                    crate::util::go_quote(&key)
                )),
            },
            val => {
                if matches!(dg.get(&key), Some(Value::Object(_))) {
                    warnings.push(format!("key {key} is table. Skipping"));
                } else {
                    dg.insert(key, val);
                }
            }
        }
    }
    dest.insert(GLOBAL.to_string(), Value::Object(dg));
}

fn coalesce_chart_values(
    node: &Node<'_>,
    v: &mut Map<String, Value>,
    prefix: &str,
    merge: bool,
    warnings: &mut Warnings,
) {
    let sub_prefix = concat_prefix(prefix, node.name());
    for (key, val) in node.values.iter() {
        match v.get_mut(key) {
            Some(Value::Null) if !merge => {
                v.remove(key);
            }
            Some(Value::Object(dest)) => match val {
                Value::Object(src) => {
                    let mut src = src.clone();
                    let merge = merge || node.deps.iter().any(|d| d.name() == key);
                    if !merge {
                        clean_nil_values(&mut src);
                    }
                    coalesce_tables(dest, src, &concat_prefix(&sub_prefix, key), merge, warnings);
                }
                Value::Null => {}
                _ => warnings.push(format!(
                    "warning: skipped value for {sub_prefix}.{key}: Not a table."
                )),
            },
            Some(_) => {}
            None => {
                let mut val = val.clone();
                if !merge {
                    if val.is_null() {
                        continue;
                    }
                    if let Value::Object(m) = &mut val {
                        clean_nil_values(m);
                    }
                }
                v.insert(key.clone(), val);
            }
        }
    }
}

/// Helm's `CoalesceTables` (merge = false) / `MergeTables` (merge = true): `src` under `dst`.
pub fn coalesce_tables(
    dst: &mut Map<String, Value>,
    mut src: Map<String, Value>,
    prefix: &str,
    merge: bool,
    warnings: &mut Warnings,
) {
    let src_non_nil: Vec<String> = src
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for (k, v) in dst.iter() {
        if v.is_null() {
            src.insert(k.clone(), Value::Null);
        }
    }
    for (key, val) in src {
        let full = concat_prefix(prefix, &key);
        match dst.get_mut(&key) {
            Some(Value::Null) if !merge && src_non_nil.contains(&key) => {
                dst.remove(&key);
            }
            None => {
                dst.insert(key, val);
            }
            Some(dv) => match (dv, val) {
                (Value::Object(dm), Value::Object(sm)) => {
                    coalesce_tables(dm, sm, &full, merge, warnings);
                }
                (_, val @ Value::Object(_)) => warnings.push(format!(
                    "warning: cannot overwrite table with non table for {full} ({})",
                    show(&val)
                )),
                (Value::Object(_), val) if !val.is_null() => warnings.push(format!(
                    "warning: destination for {full} is a table. Ignoring non-table value ({})",
                    show(&val)
                )),
                _ => {}
            },
        }
    }
}

fn clean_nil_values(m: &mut Map<String, Value>) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        if let Value::Object(sub) = v {
            clean_nil_values(sub);
        }
    }
}

/// Helm's `Values.Table`: the map at a dotted path, or None when a step is missing or not a map.
pub fn table<'a>(vals: &'a Map<String, Value>, path: &str) -> Option<&'a Map<String, Value>> {
    let mut cur = vals;
    for part in path.split('.') {
        match cur.get(part) {
            Some(Value::Object(m)) => cur = m,
            _ => return None,
        }
    }
    Some(cur)
}

/// Helm's `Values.PathValue`: the non-table value at a dotted path (`Some(Null)` for a null).
pub fn path_value<'a>(vals: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    let (parent, key) = match path.rsplit_once('.') {
        Some((p, k)) => (table(vals, p)?, k),
        None => (vals, path),
    };
    match parent.get(key) {
        Some(Value::Object(_)) | None => None,
        Some(v) => Some(v),
    }
}
