//! Strategic merge patch with the semantics of the Kubernetes API server
//! (`application/strategic-merge-patch+json`, also what `kubectl patch --local` computes).
//!
//! Unlike kustomize, the API server understands `$setElementOrder/<list>`,
//! `$deleteFromPrimitiveList/<list>` and `$retainKeys` (client-side `kubectl apply` sends them),
//! keeps the live object's list order where the patch says nothing, and merges lists by the
//! single patch merge key (`containerPort` for ports, not containerPort+protocol).

use crate::MergeError;
use crate::schema::{Field, ListStrategy, ShapeRef};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// Largest merged list of scalars with duplicates that is de-duplicated (quadratically).
const MAX_SCALAR_DEDUPE: usize = 10_000;

/// Applies a strategic merge patch the way the Kubernetes API server does.
pub(crate) fn strategic_merge_api_server(
    original: &Value,
    patch: &Value,
) -> Result<Value, MergeError> {
    let Value::Object(o) = original else {
        return Err(MergeError::OriginalNotObject {
            found: crate::smp::json_kind(original),
        });
    };
    let Value::Object(p) = patch else {
        return Err(MergeError::PatchNotObject {
            found: crate::smp::json_kind(patch),
        });
    };
    let meta =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    let api_version = meta(o, "apiVersion")
        .or_else(|| meta(p, "apiVersion"))
        .unwrap_or_default();
    let kind = meta(o, "kind")
        .or_else(|| meta(p, "kind"))
        .unwrap_or_default();
    // The API server has no patch metadata for custom resources and refuses the patch type.
    let Some(root) = Field::root(&api_version, &kind) else {
        return Err(MergeError::UnsupportedKind { api_version, kind });
    };
    let mut m = Merger { path: Vec::new() };
    let merged = m.merge_map(o.clone(), p.clone(), Some(root.shape))?;
    Ok(sorted(Value::Object(merged)))
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The patch metadata of a list field: whether it merges, and by which key.
fn slice_meta(schema: Option<ShapeRef>) -> (bool, Option<String>) {
    match schema.and_then(|s| s.list()) {
        // A list-map with several keys and no single patch merge key exists only for
        // server-side apply; strategic merge replaces it.
        Some((ListStrategy::Map, keys, _)) if keys.len() == 1 => (true, Some(keys[0].clone())),
        Some((ListStrategy::Set, _, _)) => (true, None),
        _ => (false, None),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Map,
    Other,
}

/// Scalar equality as Go compares decoded JSON (all numbers are float64).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn type_tag(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            for v in m.values_mut() {
                discard_nulls(v);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Drops every map carrying `$patch` (a directive about a value that does not exist yet).
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 120 {
        let mut cut = 117;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

struct Merger {
    path: Vec<String>,
}

impl Merger {
    fn render(&self) -> String {
        if self.path.is_empty() {
            "<root>".to_string()
        } else {
            self.path.join(".")
        }
    }

    fn invalid(&self, directive: &str, reason: impl Into<String>) -> MergeError {
        MergeError::InvalidDirective {
            path: self.render(),
            directive: directive.to_string(),
            reason: reason.into(),
        }
    }

    fn no_key(&self, elem: &Value, key: &str) -> MergeError {
        MergeError::MissingMergeKey {
            path: self.render(),
            key: key.to_string(),
            element: short(elem),
        }
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        schema: Option<ShapeRef>,
    ) -> Result<Map<String, Value>, MergeError> {
        if let Some(d) = patch.get(DIRECTIVE) {
            return match d.as_str() {
                Some("replace") => {
                    patch.shift_remove(DIRECTIVE);
                    Ok(patch)
                }
                Some("delete") => Ok(Map::new()),
                // `merge` is the default for maps and the API server refuses it spelled out.
                Some("merge") => Err(self.invalid(
                    DIRECTIVE,
                    "the API server accepts only `replace` or `delete` on a map",
                )),
                _ => Err(MergeError::UnknownDirective {
                    path: self.render(),
                    value: d
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| d.to_string()),
                }),
            };
        }
        self.apply_retain_keys(&mut original, &mut patch)?;
        self.apply_set_element_order(&mut original, &mut patch, schema)?;

        for (key, patch_v) in patch {
            let (k, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(rest) => match rest.strip_prefix('/') {
                    Some(k) => (k.to_string(), true),
                    None => {
                        return Err(self.invalid(&key, "expected $deleteFromPrimitiveList/<field>"));
                    }
                },
                None => (key, false),
            };
            if patch_v.is_null() {
                original.shift_remove(&k);
                continue;
            }
            let Some(orig_v) = original.get_mut(&k) else {
                if !delete_list {
                    let mut v = patch_v;
                    discard_nulls(&mut v);
                    if let Some(v) = remove_directives(v) {
                        original.insert(k, v);
                    }
                }
                continue;
            };
            if type_tag(orig_v) != type_tag(&patch_v) {
                if !delete_list {
                    let mut v = patch_v;
                    discard_nulls(&mut v);
                    match remove_directives(v) {
                        Some(v) => *orig_v = v,
                        None => {
                            original.shift_remove(&k);
                        }
                    }
                }
                continue;
            }
            if patch_v.is_object() || patch_v.is_array() {
                // The server looks up how to merge a nested value in its Go struct and fails
                // for a field the struct does not have (also inside free-form JSON).
                if let Some(owner) = schema.map(|shape| Field { shape })
                    && (owner.is_free_form()
                        || (owner.type_name().is_some() && !owner.has_field(&k)))
                {
                    return Err(MergeError::UnknownField {
                        path: self.render(),
                        owner: owner.type_name().unwrap_or("a free-form value").to_string(),
                        field: k,
                    });
                }
            }
            let child = schema.and_then(|s| s.field(&k));
            self.path.push(k.clone());
            let merged = match (orig_v.take(), patch_v) {
                (Value::Object(om), Value::Object(pm)) => {
                    Some(Value::Object(self.merge_map(om, pm, child)?))
                }
                (Value::Array(oa), Value::Array(pa)) => {
                    let (merge, key) = slice_meta(child);
                    Some(Value::Array(self.merge_slice_handler(
                        oa,
                        pa,
                        child,
                        merge,
                        key.as_deref(),
                        delete_list,
                    )?))
                }
                (_, pv) => remove_directives(pv),
            };
            self.path.pop();
            match merged {
                Some(v) => {
                    original.insert(k, v);
                }
                None => {
                    original.shift_remove(&k);
                }
            }
        }
        Ok(original)
    }

    fn apply_retain_keys(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> Result<(), MergeError> {
        let Some(list) = patch.shift_remove(RETAIN_KEYS) else {
            return Ok(());
        };
        let Value::Array(list) = list else {
            return Err(self.invalid(RETAIN_KEYS, "must be a list of field names"));
        };
        let keep: HashSet<String> = list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        for (k, v) in patch.iter() {
            if v.is_null()
                || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                || k.starts_with(SET_ELEMENT_ORDER)
            {
                continue;
            }
            if !keep.contains(k) {
                return Err(self.invalid(
                    RETAIN_KEYS,
                    format!("the patch sets {k:?}, which the list does not retain"),
                ));
            }
        }
        original.retain(|k, _| keep.contains(k));
        Ok(())
    }

    fn apply_set_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        schema: Option<ShapeRef>,
    ) -> Result<(), MergeError> {
        let order_keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for key in order_keys {
            let Some(order) = patch.shift_remove(&key) else {
                continue;
            };
            let Value::Array(order) = order else {
                return Err(self.invalid(&key, "must be a list"));
            };
            let Some(field) = key
                .strip_prefix(SET_ELEMENT_ORDER)
                .and_then(|r| r.strip_prefix('/'))
                .map(str::to_string)
            else {
                return Err(self.invalid(&key, "expected $setElementOrder/<field>"));
            };
            let orig_list = match original.get(&field) {
                None => None,
                Some(Value::Array(a)) => Some(a.clone()),
                Some(_) => return Err(self.invalid(&key, format!("{field} is not a list"))),
            };
            let patch_list = match patch.get(&field) {
                None => None,
                Some(Value::Array(a)) => Some(a.clone()),
                Some(_) => return Err(self.invalid(&key, format!("{field} is not a list"))),
            };
            let child = schema.and_then(|s| s.field(&field));
            let (merge, merge_key) = slice_meta(child);
            self.path.push(field.clone());
            self.validate_order(
                patch_list.as_deref().unwrap_or(&[]),
                &order,
                merge_key.as_deref(),
            )?;
            let merged = match (&orig_list, &patch_list) {
                (Some(o), None) => o.clone(),
                (None, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                },
                (Some(o), Some(p)) => self.merge_slice_handler(
                    o.clone(),
                    p.clone(),
                    child,
                    merge,
                    merge_key.as_deref(),
                    false,
                )?,
                (None, None) => {
                    self.path.pop();
                    continue;
                }
            };
            let kind = self.element_kind(
                orig_list.as_deref().unwrap_or(&[]),
                patch_list.as_deref().unwrap_or(&[]),
            )?;
            let (patch_items, server_only) =
                self.partition(merged, &order, merge_key.as_deref(), kind)?;
            let both = self.normalize_order(
                patch_items,
                server_only,
                &order,
                orig_list.as_deref().unwrap_or(&[]),
                merge_key.as_deref(),
                kind,
            )?;
            self.path.pop();
            original.insert(field.clone(), Value::Array(both));
            patch.shift_remove(&field);
        }
        Ok(())
    }

    /// The patch list must follow the `$setElementOrder` list's relative order.
    fn validate_order(
        &self,
        patch_list: &[Value],
        order: &[Value],
        key: Option<&str>,
    ) -> Result<(), MergeError> {
        if order.is_empty() || patch_list.is_empty() {
            return Ok(());
        }
        let non_delete: Vec<&Value> = match key {
            Some(_) => patch_list
                .iter()
                .filter(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
                .collect(),
            None => patch_list.iter().collect(),
        };
        let (mut pi, mut oi) = (0, 0);
        while pi < non_delete.len() && oi < order.len() {
            if non_delete[pi].get(DIRECTIVE).is_some() {
                pi += 1;
                continue;
            }
            let equal = match key {
                None => same(non_delete[pi], &order[oi]),
                Some(k) => {
                    let a = non_delete[pi]
                        .get(k)
                        .ok_or_else(|| self.no_key(non_delete[pi], k))?;
                    let b = order[oi].get(k).ok_or_else(|| self.no_key(&order[oi], k))?;
                    same(a, b)
                }
            };
            if equal {
                pi += 1;
            }
            oi += 1;
        }
        if pi < non_delete.len() && oi >= order.len() {
            return Err(self.invalid(
                SET_ELEMENT_ORDER,
                "the patch list has elements missing from, or in another order than, $setElementOrder",
            ));
        }
        Ok(())
    }

    fn element_kind(&self, a: &[Value], b: &[Value]) -> Result<ElemKind, MergeError> {
        let mut prev: Option<u8> = None;
        for v in a.iter().chain(b) {
            let t = type_tag(v);
            if t == 4 {
                return Err(MergeError::UnsupportedList {
                    path: self.render(),
                    reason: "lists of lists cannot be merged".to_string(),
                });
            }
            match prev {
                None => prev = Some(t),
                Some(p) if p != t => {
                    return Err(MergeError::UnsupportedList {
                        path: self.render(),
                        reason: "list elements are not all of the same type".to_string(),
                    });
                }
                _ => {}
            }
        }
        match prev {
            Some(5) => Ok(ElemKind::Map),
            Some(_) => Ok(ElemKind::Other),
            None => Err(MergeError::UnsupportedList {
                path: self.render(),
                reason: "no elements in either list".to_string(),
            }),
        }
    }

    fn merge_slice_handler(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        schema: Option<ShapeRef>,
        merge: bool,
        key: Option<&str>,
        delete_list: bool,
    ) -> Result<Vec<Value>, MergeError> {
        if merge || delete_list {
            self.merge_slice(original, patch, schema, key, delete_list)
        } else {
            Ok(patch)
        }
    }

    fn merge_slice(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        schema: Option<ShapeRef>,
        key: Option<&str>,
        delete_list: bool,
    ) -> Result<Vec<Value>, MergeError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = self.element_kind(&original, &patch)?;
        let (original, patch, merged) = if kind != ElemKind::Map {
            if delete_list {
                return Ok(original
                    .into_iter()
                    .filter(|v| !patch.iter().any(|d| same(v, d)))
                    .collect());
            }
            let mut both = original.clone();
            both.extend(patch.iter().cloned());
            let distinct: HashSet<String> = both.iter().map(|v| canonical(Some(v))).collect();
            // apimachinery's de-duplication reorders as it goes and is quadratic; without
            // duplicates it changes nothing, and with them its cost is bounded here.
            let merged = if distinct.len() == both.len() {
                both
            } else if both.len() > MAX_SCALAR_DEDUPE {
                return Err(MergeError::UnsupportedList {
                    path: self.render(),
                    reason: format!(
                        "{} values with duplicates: more than the {MAX_SCALAR_DEDUPE} a merged list of scalars may hold",
                        both.len()
                    ),
                });
            } else {
                dedupe_scalars(both)
            };
            (original, patch, merged)
        } else {
            let Some(key) = key else {
                return Err(MergeError::UnsupportedList {
                    path: self.render(),
                    reason: "a list of objects without a merge key cannot be merged".to_string(),
                });
            };
            let (original, patch) = self.special_elements(original, patch, key)?;
            let merged = self.merge_by_key(original.clone(), patch.clone(), schema, key)?;
            (original, patch, merged)
        };
        let (patch_items, server_only) = self.partition(merged, &patch, key, kind)?;
        self.normalize_order(patch_items, server_only, &patch, &original, key, kind)
    }

    /// Applies `$patch: delete` and `$patch: replace` elements.
    fn special_elements(
        &self,
        mut original: Vec<Value>,
        patch: Vec<Value>,
        key: &str,
    ) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
        let mut rest = Vec::with_capacity(patch.len());
        let mut replace = false;
        let mut deleted: HashSet<String> = HashSet::new();
        for v in patch {
            let Some(d) = v.get(DIRECTIVE) else {
                rest.push(v);
                continue;
            };
            match d.as_str() {
                Some("delete") => {
                    let kv = v.get(key).ok_or_else(|| self.no_key(&v, key))?;
                    if let Some(o) = original.iter().find(|o| !o.is_object()) {
                        return Err(self.not_a_map(o));
                    }
                    deleted.insert(canonical(Some(kv)));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(self.invalid(DIRECTIVE, "`merge` is not supported in lists"));
                }
                _ => {
                    return Err(MergeError::UnknownDirective {
                        path: self.render(),
                        value: d
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| d.to_string()),
                    });
                }
            }
        }
        if !deleted.is_empty() {
            original.retain(|o| {
                o.get(key)
                    .is_none_or(|ov| !deleted.contains(&canonical(Some(ov))))
            });
        }
        if replace {
            return Ok((rest, Vec::new()));
        }
        Ok((original, rest))
    }

    fn not_a_map(&self, v: &Value) -> MergeError {
        MergeError::UnsupportedList {
            path: self.render(),
            reason: format!("element {} is not an object", short(v)),
        }
    }

    fn merge_by_key(
        &mut self,
        mut original: Vec<Value>,
        patch: Vec<Value>,
        schema: Option<ShapeRef>,
        key: &str,
    ) -> Result<Vec<Value>, MergeError> {
        let item = schema.and_then(|s| s.item());
        for o in &original {
            if !o.is_object() {
                return Err(self.not_a_map(o));
            }
        }
        let mut index: HashMap<String, usize> = HashMap::with_capacity(original.len());
        for (i, o) in original.iter().enumerate() {
            if o.get(key).is_some() {
                index.entry(canonical(o.get(key))).or_insert(i);
            }
        }
        for v in patch {
            let kv = v.get(key).cloned().ok_or_else(|| self.no_key(&v, key))?;
            let id = canonical(Some(&kv));
            match (index.get(&id).copied(), v) {
                (Some(i), Value::Object(pm)) => {
                    let om = match original[i].take() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    self.path.push(format!("[{key}={}]", scalar_text(&kv)));
                    let merged = self.merge_map(om, pm, item)?;
                    self.path.pop();
                    original[i] = Value::Object(merged);
                }
                (_, v) => {
                    index.entry(id).or_insert(original.len());
                    original.push(v);
                }
            }
        }
        Ok(original)
    }

    fn partition(
        &self,
        merged: Vec<Value>,
        by: &[Value],
        key: Option<&str>,
        kind: ElemKind,
    ) -> Result<(Vec<Value>, Vec<Value>), MergeError> {
        if let (ElemKind::Map, Some(k)) = (kind, key) {
            for v in merged.iter().chain(by) {
                if !v.is_object() {
                    return Err(self.not_a_map(v));
                }
            }
            for v in &merged {
                if v.get(k).is_none() {
                    return Err(self.no_key(v, k));
                }
            }
        }
        let in_by: HashSet<String> = by
            .iter()
            .filter(|b| kind != ElemKind::Map || key.is_none_or(|k| b.get(k).is_some()))
            .map(|b| identity(b, key, kind))
            .collect();
        let mut in_patch = Vec::new();
        let mut server_only = Vec::new();
        for v in merged {
            if in_by.contains(&identity(&v, key, kind)) {
                in_patch.push(v);
            } else {
                server_only.push(v);
            }
        }
        Ok((in_patch, server_only))
    }

    /// Orders patch items by the patch and server-only items by the live list, then interleaves
    /// them, keeping both relative orders.
    fn normalize_order(
        &self,
        patch_items: Vec<Value>,
        server_only: Vec<Value>,
        patch_order: &[Value],
        server_order: &[Value],
        key: Option<&str>,
        kind: ElemKind,
    ) -> Result<Vec<Value>, MergeError> {
        let patch_items = self.sort_by_order(patch_items, patch_order, key, kind)?;
        let server_only = self.sort_by_order(server_only, server_order, key, kind)?;
        let server_pos = positions(server_order, key, kind);
        let pos = |v: &Value| server_pos.get(&identity(v, key, kind)).copied();
        let left_pos: Vec<Option<usize>> = server_only.iter().map(pos).collect();
        let right_pos: Vec<Option<usize>> = patch_items.iter().map(pos).collect();
        let (left, right) = (server_only, patch_items);
        let mut out = Vec::with_capacity(left.len() + right.len());
        let (mut i, mut j) = (0, 0);
        while i < left.len() || j < right.len() {
            if i >= left.len() {
                out.push(right[j].clone());
                j += 1;
            } else if j >= right.len() {
                out.push(left[i].clone());
                i += 1;
            } else {
                match (left_pos[i], right_pos[j]) {
                    (Some(l), Some(r)) if l < r => {
                        out.push(left[i].clone());
                        i += 1;
                    }
                    _ => {
                        out.push(right[j].clone());
                        j += 1;
                    }
                }
            }
        }
        Ok(out)
    }

    fn sort_by_order(
        &self,
        mut to_sort: Vec<Value>,
        order: &[Value],
        key: Option<&str>,
        kind: ElemKind,
    ) -> Result<Vec<Value>, MergeError> {
        let mut to_delete = Vec::new();
        if kind == ElemKind::Map
            && let Some(k) = key
        {
            for v in to_sort.iter().chain(order) {
                if !v.is_object() {
                    return Err(self.not_a_map(v));
                }
                if v.get(k).is_none() {
                    return Err(self.no_key(v, k));
                }
            }
            let (keep, del): (Vec<Value>, Vec<Value>) = to_sort
                .into_iter()
                .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
            to_sort = keep;
            to_delete = del;
        }
        let order_pos = positions(order, key, kind);
        let mut keyed: Vec<(Option<usize>, Value)> = to_sort
            .into_iter()
            .map(|v| (order_pos.get(&identity(&v, key, kind)).copied(), v))
            .collect();
        keyed.sort_by(|(a, _), (b, _)| match (a, b) {
            (Some(x), Some(y)) => x.cmp(y),
            _ => std::cmp::Ordering::Equal,
        });
        let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
        sorted.extend(to_delete);
        Ok(sorted)
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A hashable identity with the equality of `same` (numbers compare as f64).
fn canonical(v: Option<&Value>) -> String {
    match v {
        None => "\u{0}absent".to_string(),
        Some(Value::Number(n)) => format!("n:{:?}", n.as_f64()),
        Some(Value::String(s)) => format!("s:{s}"),
        Some(other) => format!("j:{other}"),
    }
}

/// The identity an element is looked up by: its merge key's value, or itself.
fn identity(v: &Value, key: Option<&str>, kind: ElemKind) -> String {
    match (kind, key) {
        (ElemKind::Map, Some(k)) => canonical(v.get(k)),
        _ => canonical(Some(v)),
    }
}

/// First position of each identity in `list`.
fn positions(list: &[Value], key: Option<&str>, kind: ElemKind) -> HashMap<String, usize> {
    let mut m = HashMap::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        m.entry(identity(v, key, kind)).or_insert(i);
    }
    m
}

/// Removes duplicates the way apimachinery does (the last element fills each hole).
fn dedupe_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut len = s.len();
    let mut i = 0;
    while i + 1 < len {
        let mut j = i + 1;
        while j < len {
            if same(&s[i], &s[j]) {
                s.swap(j, len - 1);
                len -= 1;
                s.truncate(len);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}
