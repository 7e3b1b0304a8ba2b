//! Strategic merge patch with the semantics of `kubectl kustomize` (kustomize v5.5.0).
//!
//! kustomize merges with its own tree walker, not with the API server's algorithm, and its
//! results differ in ways users see (patch elements come first in merged lists, multi-key lists
//! re-order, `$setElementOrder` is not understood, …). Byte-identical builds need those results,
//! so this module reproduces the walker's behaviour on a small tree of shared nodes: the walker
//! mutates elements in place and later steps observe those mutations, which plain owned values
//! cannot express.
//!
//! Where kustomize silently destroys data (a patch list element without its merge key empties
//! the whole list) we return an error instead; that is the only intended divergence.

use crate::MergeError;
use crate::schema::{Field, ListStrategy, ShapeRef};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

type N = Rc<RefCell<Node>>;

enum Node {
    /// An explicit null. `keep` marks a null of the original that must survive the merge.
    Null {
        keep: bool,
    },
    Scalar(Value),
    Map(Vec<(String, N)>),
    Seq(Vec<N>),
}

fn new(n: Node) -> N {
    Rc::new(RefCell::new(n))
}

fn from_value(v: &Value) -> N {
    new(match v {
        Value::Null => Node::Null { keep: false },
        Value::Object(m) => Node::Map(m.iter().map(|(k, v)| (k.clone(), from_value(v))).collect()),
        Value::Array(a) => Node::Seq(a.iter().map(from_value).collect()),
        other => Node::Scalar(other.clone()),
    })
}

/// Converts back, sorting map keys: kustomize emits every object with sorted keys.
fn to_value(n: &N) -> Value {
    match &*n.borrow() {
        Node::Null { .. } => Value::Null,
        Node::Scalar(v) => v.clone(),
        Node::Seq(items) => Value::Array(items.iter().map(to_value).collect()),
        Node::Map(fields) => {
            let mut sorted: Vec<&(String, N)> = fields.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let mut m = Map::with_capacity(sorted.len());
            for (k, v) in sorted {
                m.insert(k.clone(), to_value(v));
            }
            Value::Object(m)
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Map,
    Seq,
    Scalar,
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Map => "map",
        Kind::Seq => "list",
        Kind::Scalar => "scalar",
    }
}

fn is_null(n: &Option<N>) -> bool {
    match n {
        None => true,
        Some(n) => matches!(&*n.borrow(), Node::Null { .. }),
    }
}

fn kind_of(n: &N) -> Option<Kind> {
    match &*n.borrow() {
        Node::Null { .. } => None,
        Node::Scalar(_) => Some(Kind::Scalar),
        Node::Map(_) => Some(Kind::Map),
        Node::Seq(_) => Some(Kind::Seq),
    }
}

/// The text kustomize compares scalars by (a YAML scalar's value; empty for collections).
fn text(n: &N) -> String {
    match &*n.borrow() {
        Node::Null { .. } => "null".to_string(),
        Node::Scalar(Value::String(s)) => s.clone(),
        Node::Scalar(v) => v.to_string(),
        Node::Map(_) | Node::Seq(_) => String::new(),
    }
}

/// `text(n) == want` without allocating for strings (the common merge-key type).
fn text_is(n: &N, want: &str) -> bool {
    match &*n.borrow() {
        Node::Scalar(Value::String(s)) => s == want,
        Node::Scalar(Value::Bool(b)) => want == if *b { "true" } else { "false" },
        Node::Scalar(v) => {
            // Numbers compare by their JSON text, as kustomize compares YAML scalars.
            let t = v.to_string();
            t == want
        }
        Node::Null { .. } => want == "null",
        Node::Map(_) | Node::Seq(_) => want.is_empty(),
    }
}

fn get_field(n: &N, name: &str) -> Option<N> {
    match &*n.borrow() {
        Node::Map(fields) => fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone()),
        _ => None,
    }
}

fn is_empty_map(n: &N) -> bool {
    matches!(&*n.borrow(), Node::Map(f) if f.is_empty())
}

/// Whether a key's value counts as absent (null, empty map, empty list).
fn nil_or_empty(n: &N) -> bool {
    match &*n.borrow() {
        Node::Null { .. } => true,
        Node::Map(f) => f.is_empty(),
        Node::Seq(s) => s.is_empty(),
        Node::Scalar(_) => false,
    }
}

fn seq_items(n: &N) -> Vec<N> {
    match &*n.borrow() {
        Node::Seq(items) => items.clone(),
        _ => Vec::new(),
    }
}

fn set_seq_items(n: &N, items: Vec<N>) {
    if let Node::Seq(s) = &mut *n.borrow_mut() {
        *s = items;
    }
}

/// Sets or removes a field the way kustomize's field setter does: a missing value or an
/// unkept null removes it, an existing key keeps its position, a new key is appended.
fn set_field(map: &N, name: &str, value: Option<N>) {
    let remove = match &value {
        None => true,
        Some(v) => matches!(&*v.borrow(), Node::Null { keep: false }),
    };
    if let Node::Map(fields) = &mut *map.borrow_mut() {
        if remove {
            fields.retain(|(k, _)| k != name);
            return;
        }
        let Some(value) = value else { return };
        if let Some(slot) = fields.iter_mut().find(|(k, _)| k == name) {
            slot.1 = value;
        } else {
            fields.push((name.to_string(), value));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

const DIRECTIVE: &str = "$patch";

fn parse_directive(v: &str, path: &Path) -> Result<Directive, MergeError> {
    match v {
        "merge" => Ok(Directive::Merge),
        "replace" => Ok(Directive::Replace),
        "delete" => Ok(Directive::Delete),
        other => Err(MergeError::UnknownDirective {
            path: path.render(),
            value: other.to_string(),
        }),
    }
}

/// Reads the `$patch` directive of a patch node and removes it from the node.
fn take_directive(patch: &Option<N>, path: &Path) -> Result<Directive, MergeError> {
    let Some(p) = patch else {
        return Ok(Directive::Merge);
    };
    let kind = kind_of(p);
    match kind {
        Some(Kind::Map) => {
            let Some(v) = get_field(p, DIRECTIVE) else {
                return Ok(Directive::Merge);
            };
            let d = parse_directive(&text(&v), path)?;
            set_field(p, DIRECTIVE, None);
            Ok(d)
        }
        Some(Kind::Seq) => {
            // A list directive is an element holding nothing but `$patch`.
            let found = seq_items(p)
                .into_iter()
                .find(|e| get_field(e, DIRECTIVE).is_some());
            let Some(elem) = found else {
                return Ok(Directive::Merge);
            };
            if matches!(&*elem.borrow(), Node::Map(f) if f.len() > 1) {
                return Ok(Directive::Merge);
            }
            let Some(v) = get_field(&elem, DIRECTIVE) else {
                return Ok(Directive::Merge);
            };
            let value = text(&v);
            let d = parse_directive(&value, path)?;
            element_setter(p, None, &[DIRECTIVE.to_string()], &[value])?;
            Ok(d)
        }
        _ => Err(MergeError::KindMismatch {
            path: path.render(),
            expected: "map or list".to_string(),
            found: "scalar".to_string(),
        }),
    }
}

/// A field path for error messages.
struct Path(Vec<String>);

impl Path {
    fn render(&self) -> String {
        if self.0.is_empty() {
            return "<root>".to_string();
        }
        let mut s = String::new();
        for seg in &self.0 {
            if !seg.starts_with('[') && !s.is_empty() {
                s.push('.');
            }
            s.push_str(seg);
        }
        s
    }
}

/// The schema of an object that names its own kind (the root, or an embedded object).
fn schema_from_meta(sources: &[Option<N>; 2]) -> Option<ShapeRef> {
    for n in sources.iter().flatten() {
        let (Some(a), Some(k)) = (get_field(n, "apiVersion"), get_field(n, "kind")) else {
            continue;
        };
        if nil_or_empty(&a) || nil_or_empty(&k) {
            continue;
        }
        if let Some(f) = Field::root(&text(&a), &text(&k)) {
            return Some(f.shape);
        }
    }
    None
}

struct Walker {
    path: Path,
    /// Use the linear-time merge for regular lists (always, except to test it against the
    /// element-by-element path).
    fast_lists: bool,
}

impl Walker {
    /// Merges `patch` into `dest`; None means the value is removed.
    fn walk(
        &mut self,
        dest: Option<N>,
        patch: Option<N>,
        schema: Option<ShapeRef>,
    ) -> Result<Option<N>, MergeError> {
        // Most of an object is not mentioned by the patch; skip the walk where it provably
        // returns the value as it is.
        if patch.is_none()
            && let Some(d) = &dest
            && unchanged_without_patch(d, schema)
        {
            if matches!(&*d.borrow(), Node::Null { .. }) {
                // A null the original spells out survives a patch that does not mention it.
                return Ok(Some(new(Node::Null { keep: true })));
            }
            return Ok(dest);
        }
        let sources = [dest, patch];
        let schema = schema.or_else(|| schema_from_meta(&sources));
        let [dest, patch] = sources;
        let kind = dest
            .as_ref()
            .and_then(kind_of)
            .or_else(|| patch.as_ref().and_then(kind_of));
        if let Some(expected) = kind {
            for n in [&dest, &patch].into_iter().flatten() {
                if let Some(found) = kind_of(n)
                    && found != expected
                {
                    return Err(MergeError::KindMismatch {
                        path: self.path.render(),
                        expected: kind_name(expected).to_string(),
                        found: kind_name(found).to_string(),
                    });
                }
            }
        }
        match kind {
            Some(Kind::Scalar) => Ok(patch.or(dest)),
            Some(Kind::Seq) => self.walk_seq(dest, patch, schema),
            Some(Kind::Map) | None => self.walk_map(dest, patch, schema),
        }
    }

    fn walk_map(
        &mut self,
        dest: Option<N>,
        patch: Option<N>,
        schema: Option<ShapeRef>,
    ) -> Result<Option<N>, MergeError> {
        let new_dest = if is_null(&dest) {
            // A directive error cannot surface here: kustomize ignores it on this path.
            let d = take_directive(&patch, &self.path).unwrap_or(Directive::Merge);
            if d == Directive::Delete {
                return Ok(None);
            }
            if patch.is_none() && dest.is_some() {
                // A null the original spells out survives a patch that does not mention it.
                return Ok(Some(new(Node::Null { keep: true })));
            }
            patch.clone()
        } else if matches!(&patch, Some(p) if matches!(&*p.borrow(), Node::Null { .. })) {
            return Ok(None);
        } else {
            match take_directive(&patch, &self.path)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => patch.clone(),
                Directive::Merge => dest.clone(),
            }
        };
        let Some(d) = new_dest else {
            return Ok(None);
        };
        let fields_of = |n: Option<&N>| -> Vec<(String, N)> {
            match n.map(|n| n.borrow()) {
                Some(b) => match &*b {
                    Node::Map(f) => f.clone(),
                    _ => Vec::new(),
                },
                None => Vec::new(),
            }
        };
        let d_fields = fields_of(Some(&d));
        let p_fields = fields_of(patch.as_ref());
        let d_index: HashMap<&str, &N> = d_fields.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let p_index: HashMap<&str, &N> = p_fields.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut names: Vec<&str> = d_index.keys().chain(p_index.keys()).copied().collect();
        names.sort_unstable();
        names.dedup();
        // Children are independent subtrees, so merging them all before writing any back is
        // the same as kustomize's field-by-field setting, without its quadratic lookups.
        let mut results: HashMap<&str, Option<N>> = HashMap::with_capacity(names.len());
        for name in &names {
            let child_schema = schema.and_then(|s| s.field(name));
            let dv = d_index.get(name).map(|n| (*n).clone());
            let pv = p_index.get(name).map(|n| (*n).clone());
            self.path.0.push(name.to_string());
            let val = self.walk(dv, pv, child_schema)?;
            self.path.0.pop();
            results.insert(name, val);
        }
        let keep = |v: &Option<N>| match v {
            None => false,
            Some(v) => !matches!(&*v.borrow(), Node::Null { keep: false }),
        };
        if let Node::Map(fields) = &mut *d.borrow_mut() {
            let mut out = Vec::with_capacity(names.len());
            for (k, _) in &d_fields {
                if let Some(v) = results
                    .get(k.as_str())
                    .filter(|v| keep(v))
                    .cloned()
                    .flatten()
                {
                    out.push((k.clone(), v));
                }
            }
            for name in &names {
                if d_index.contains_key(name) {
                    continue;
                }
                if let Some(v) = results.get(name).filter(|v| keep(v)).cloned().flatten() {
                    out.push((name.to_string(), v));
                }
            }
            *fields = out;
        }
        Ok(Some(d))
    }

    fn walk_seq(
        &mut self,
        dest: Option<N>,
        patch: Option<N>,
        schema: Option<ShapeRef>,
    ) -> Result<Option<N>, MergeError> {
        let list = schema.and_then(|s| s.list());
        let Some((strategy, patch_keys, ssa_keys)) =
            list.filter(|(s, _, _)| *s != ListStrategy::Atomic)
        else {
            // Lists without a merge strategy are replaced by the patch.
            return Ok(patch.or(dest));
        };
        let d = if is_null(&dest) {
            patch.clone()
        } else if is_null(&patch) && patch.is_some() {
            return Ok(None);
        } else {
            match take_directive(&patch, &self.path)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => patch.clone(),
                Directive::Merge => dest.clone(),
            }
        };
        let Some(d) = d else {
            return Ok(None);
        };
        // kustomize prefers the list-map keys over the patch merge key.
        let keys: Vec<String> = match strategy {
            ListStrategy::Map => ssa_keys.unwrap_or(patch_keys).to_vec(),
            _ => Vec::new(),
        };
        if let (Some(first), Some(p)) = (keys.first(), &patch) {
            self.check_merge_keys(p, first)?;
        }
        let item_schema = schema.and_then(|s| s.item());
        if self.fast_lists
            && let Some(merged) = self.merge_regular(&d, patch.as_ref(), &keys, item_schema)?
        {
            return Ok(merged);
        }
        // Irregular lists take kustomize's element-by-element path, which is quadratic.
        let total = seq_len(&d) + patch.as_ref().map(seq_len).unwrap_or(0);
        if total > MAX_IRREGULAR_LIST {
            return Err(MergeError::UnsupportedList {
                path: self.path.render(),
                reason: format!(
                    "{total} elements with duplicate, missing or empty merge keys: more than the {MAX_IRREGULAR_LIST} such a list may hold"
                ),
            });
        }
        // Patch elements first: kustomize merges with "prepend" list direction.
        let order = [patch.clone(), Some(d.clone())];
        if !keys.is_empty() {
            let mut values: Vec<Vec<String>> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for src in order.iter().flatten() {
                for elem in seq_items(src) {
                    let tuple: Vec<String> = keys
                        .iter()
                        .map(|k| match get_field(&elem, k) {
                            Some(v) if !nil_or_empty(&v) => text(&v),
                            _ => String::new(),
                        })
                        .collect();
                    if seen.insert(tuple.clone()) {
                        values.push(tuple);
                    }
                }
            }
            return self.set_elements(values, &keys, d, patch, item_schema);
        }
        let mut values: Vec<Vec<String>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for src in order.iter().flatten() {
            for elem in seq_items(src) {
                let t = vec![text(&elem)];
                if seen.insert(t.clone()) {
                    values.push(t);
                }
            }
        }
        self.set_elements(values, &[String::new()], d, patch, item_schema)
    }

    fn check_merge_keys(&self, patch: &N, key: &str) -> Result<(), MergeError> {
        for elem in seq_items(patch) {
            let ok = match &*elem.borrow() {
                Node::Map(fields) => fields.iter().any(|(k, _)| k == key || k == DIRECTIVE),
                _ => false,
            };
            if !ok {
                let mut shown = to_value(&elem).to_string();
                if shown.len() > 120 {
                    let mut cut = 117;
                    while !shown.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    shown.truncate(cut);
                    shown.push_str("...");
                }
                return Err(MergeError::MissingMergeKey {
                    path: self.path.render(),
                    key: key.to_string(),
                    element: shown,
                });
            }
        }
        Ok(())
    }

    /// The same merge as `set_elements`, in linear time, for lists where it is simple: every
    /// element an object with the keys (each key present in all elements or in none, unique
    /// key values), or for sets every element a distinct scalar. None for other lists.
    fn merge_regular(
        &mut self,
        dest: &N,
        patch: Option<&N>,
        keys: &[String],
        item_schema: Option<ShapeRef>,
    ) -> Result<Option<Option<N>>, MergeError> {
        let set = keys.is_empty();
        let mut present: Vec<Option<bool>> = vec![None; keys.len()];
        let Some(dest_items) = regular_tuples(dest, keys, &mut present) else {
            return Ok(None);
        };
        let patch_items = match patch {
            Some(p) => match regular_tuples(p, keys, &mut present) {
                Some(t) => t,
                None => return Ok(None),
            },
            None => Vec::new(),
        };
        // Keys no element has drop out, as kustomize's key validation drops them.
        let used: Vec<usize> = (0..keys.len())
            .filter(|i| present[*i] == Some(true))
            .collect();
        if !set && used.is_empty() {
            return Ok(None);
        }
        let restrict = |t: &Vec<String>| -> Vec<String> {
            if set {
                t.clone()
            } else {
                used.iter().map(|i| t[*i].clone()).collect()
            }
        };
        let vk: Vec<String> = if set {
            vec![String::new()]
        } else {
            used.iter().map(|i| keys[*i].clone()).collect()
        };
        let dest_items: Vec<(Vec<String>, N)> = dest_items
            .into_iter()
            .map(|(t, n)| (restrict(&t), n))
            .collect();
        let patch_items: Vec<(Vec<String>, N)> = patch_items
            .into_iter()
            .map(|(t, n)| (restrict(&t), n))
            .collect();
        if dest_items.is_empty() && patch_items.is_empty() {
            return Ok(Some(Some(dest.clone())));
        }
        let dest_index: HashMap<&Vec<String>, &N> =
            dest_items.iter().map(|(t, n)| (t, n)).collect();
        let patch_index: HashMap<&Vec<String>, &N> =
            patch_items.iter().map(|(t, n)| (t, n)).collect();
        let mut order: Vec<&Vec<String>> = Vec::with_capacity(dest_items.len() + patch_items.len());
        let mut seen = std::collections::HashSet::new();
        for (t, _) in patch_items.iter().chain(&dest_items) {
            if seen.insert(t) {
                order.push(t);
            }
        }
        let mut removed = std::collections::HashSet::new();
        let mut items: Vec<(&Vec<String>, N)> = Vec::with_capacity(order.len());
        for t in order {
            let de = dest_index.get(t).map(|n| (*n).clone());
            let pe = patch_index.get(t).map(|n| (*n).clone());
            self.path.0.push(element_label(&vk, t));
            let val = self.walk(de, pe, item_schema)?;
            self.path.0.pop();
            let val = match val {
                Some(v) if !is_null(&Some(v.clone())) && !is_empty_map(&v) => v,
                _ => {
                    removed.insert(t);
                    continue;
                }
            };
            if !set && matches!(&*val.borrow(), Node::Map(_)) {
                for (k, want) in vk.iter().zip(t.iter()) {
                    if get_field(&val, k).is_none() && !want.is_empty() {
                        set_field(
                            &val,
                            k,
                            Some(new(Node::Scalar(Value::String(want.clone())))),
                        );
                    }
                }
            }
            items.push((t, val));
        }
        // The original's elements then take their places (single key: in place; several keys:
        // moved after the patch's new elements, in the original's order).
        let remaining: Vec<&(Vec<String>, N)> = dest_items
            .iter()
            .filter(|(t, _)| !removed.contains(t))
            .collect();
        let out: Vec<N> = if vk.len() > 1 {
            let in_dest: std::collections::HashSet<&Vec<String>> =
                remaining.iter().map(|(t, _)| t).collect();
            items
                .into_iter()
                .filter(|(t, _)| !in_dest.contains(t))
                .map(|(_, n)| n)
                .chain(remaining.iter().map(|(_, n)| n.clone()))
                .collect()
        } else {
            let originals: HashMap<&Vec<String>, &N> =
                remaining.iter().map(|(t, n)| (t, n)).collect();
            items
                .into_iter()
                .map(|(t, n)| originals.get(t).map(|o| (*o).clone()).unwrap_or(n))
                .collect()
        };
        Ok(Some(Some(new(Node::Seq(out)))))
    }

    fn set_elements(
        &mut self,
        mut values_list: Vec<Vec<String>>,
        keys: &[String],
        dest: N,
        patch: Option<N>,
        item_schema: Option<ShapeRef>,
    ) -> Result<Option<N>, MergeError> {
        let items = new(Node::Seq(Vec::new()));
        if keys.len() > 1 {
            merge_values(&mut values_list);
        }
        let mut valid_keys: Vec<String> = keys.to_vec();
        for values in &values_list {
            if values.is_empty() {
                continue;
            }
            let (vk, vv) = validate_keys(&values_list, values, keys);
            valid_keys = vk.clone();
            let (lk, lv) = validate_keys(std::slice::from_ref(&vv), &vv, &vk);
            let de = element_list(&dest, &lk, &lv);
            let pe = patch.as_ref().and_then(|p| element_list(p, &lk, &lv));
            self.path.0.push(element_label(&vk, &vv));
            let val = self.walk(de, pe, item_schema)?;
            self.path.0.pop();
            let mut removed = false;
            for (i, key) in vk.iter().enumerate() {
                match &val {
                    Some(v) if !is_null(&val) && !is_empty_map(v) => {
                        if matches!(&*v.borrow(), Node::Map(_))
                            && get_field(v, key).is_none()
                            && !vv[i].is_empty()
                        {
                            set_field(
                                v,
                                key,
                                Some(new(Node::Scalar(Value::String(vv[i].clone())))),
                            );
                        }
                    }
                    _ => {
                        element_setter(&dest, None, &vk, &vv)?;
                        removed = true;
                    }
                }
            }
            if removed {
                continue;
            }
            element_setter(&items, val, &vk, &vv)?;
        }
        if values_list.is_empty() {
            return Ok(Some(dest));
        }
        append_list(&items, &dest, &valid_keys)?;
        Ok(Some(items))
    }
}

/// Whether walking `n` with no patch gives `n` back unchanged. It does unless a merged list is
/// irregular (duplicate or missing keys, empty or null elements), where kustomize's list
/// handling rewrites the list even when the patch does not mention it.
fn unchanged_without_patch(n: &N, schema: Option<ShapeRef>) -> bool {
    let schema = schema.or_else(|| schema_from_meta(&[Some(n.clone()), None]));
    match &*n.borrow() {
        Node::Null { .. } | Node::Scalar(_) => true,
        Node::Map(fields) => fields
            .iter()
            .all(|(k, v)| unchanged_without_patch(v, schema.and_then(|s| s.field(k)))),
        Node::Seq(items) => {
            let Some((strategy, patch_keys, ssa_keys)) = schema.and_then(|s| s.list()) else {
                return true;
            };
            match strategy {
                ListStrategy::Atomic => true,
                ListStrategy::Set => {
                    let mut seen = Vec::with_capacity(items.len());
                    for e in items {
                        if !matches!(&*e.borrow(), Node::Scalar(_)) {
                            return false;
                        }
                        let t = text(e);
                        if seen.contains(&t) {
                            return false;
                        }
                        seen.push(t);
                    }
                    true
                }
                ListStrategy::Map => {
                    let keys = ssa_keys.unwrap_or(patch_keys);
                    let item_schema = schema.and_then(|s| s.item());
                    // Each key must be present in every element or in none.
                    let mut present: Vec<Option<bool>> = vec![None; keys.len()];
                    let mut seen: Vec<Vec<String>> = Vec::with_capacity(items.len());
                    for e in items {
                        let tuple = match &*e.borrow() {
                            Node::Map(f) if !f.is_empty() => {
                                let mut tuple = Vec::with_capacity(keys.len());
                                for (i, k) in keys.iter().enumerate() {
                                    let v = f
                                        .iter()
                                        .find(|(fk, _)| fk == k)
                                        .map(|(_, v)| v)
                                        .filter(|v| !nil_or_empty(v));
                                    let has = v.is_some();
                                    if *present[i].get_or_insert(has) != has {
                                        return false;
                                    }
                                    tuple.push(v.map(text).unwrap_or_default());
                                }
                                tuple
                            }
                            _ => return false,
                        };
                        if seen.contains(&tuple) || tuple.iter().all(String::is_empty) {
                            return false;
                        }
                        seen.push(tuple);
                        if !unchanged_without_patch(e, item_schema) {
                            return false;
                        }
                    }
                    true
                }
            }
        }
    }
}

/// Lists larger than this are merged only when regular (see `merge_regular`).
const MAX_IRREGULAR_LIST: usize = 5000;

fn seq_len(n: &N) -> usize {
    match &*n.borrow() {
        Node::Seq(items) => items.len(),
        _ => 0,
    }
}

/// Each element with its key tuple, when the list is regular (see `merge_regular`); `present`
/// records, per key, whether the elements seen so far have it.
fn regular_tuples(
    list: &N,
    keys: &[String],
    present: &mut [Option<bool>],
) -> Option<Vec<(Vec<String>, N)>> {
    let items = match &*list.borrow() {
        Node::Seq(items) => items.clone(),
        _ => return None,
    };
    let mut out = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for e in items {
        let tuple = if keys.is_empty() {
            if !matches!(&*e.borrow(), Node::Scalar(_)) {
                return None;
            }
            vec![text(&e)]
        } else {
            let b = e.borrow();
            let Node::Map(fields) = &*b else {
                return None;
            };
            if fields.is_empty() {
                return None;
            }
            let mut tuple = Vec::with_capacity(keys.len());
            for (i, k) in keys.iter().enumerate() {
                let v = fields
                    .iter()
                    .find(|(fk, _)| fk == k)
                    .map(|(_, v)| v)
                    .filter(|v| !nil_or_empty(v));
                let has = v.is_some();
                if *present[i].get_or_insert(has) != has {
                    return None;
                }
                tuple.push(v.map(text).unwrap_or_default());
            }
            tuple
        };
        if tuple.iter().all(String::is_empty) || !seen.insert(tuple.clone()) {
            return None;
        }
        out.push((tuple, e));
    }
    Some(out)
}

fn element_label(keys: &[String], values: &[String]) -> String {
    if keys.len() == 1 && keys[0].is_empty() {
        return format!("[{}]", values.first().map(String::as_str).unwrap_or(""));
    }
    let parts: Vec<String> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("[{}]", parts.join(","))
}

/// Treats key tuples that differ only where one side is empty as the same element (a port
/// without a protocol matches the same port with one).
fn merge_values(list: &mut [Vec<String>]) {
    for i in 0..list.len() {
        for j in 0..list.len() {
            if let Some(m) = match_values(&list[i], &list[j]) {
                list[i] = m.clone();
                list[j] = m;
            }
        }
    }
}

fn match_values(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        if x == y {
            common = true;
            out.push(x.clone());
        } else if !x.is_empty() && !y.is_empty() {
            return None;
        } else if !x.is_empty() {
            out.push(x.clone());
        } else {
            out.push(y.clone());
        }
    }
    common.then_some(out)
}

/// Keeps the keys some element has a value for (secondary keys may be missing everywhere).
fn validate_keys(
    values_list: &[Vec<String>],
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut valid: Vec<&String> = Vec::new();
    for vals in values_list {
        for (i, v) in vals.iter().enumerate() {
            if !v.is_empty()
                && let Some(k) = keys.get(i)
                && !valid.contains(&k)
            {
                valid.push(k);
            }
        }
    }
    if valid.is_empty() {
        return (keys.to_vec(), values.to_vec());
    }
    let vk: Vec<String> = keys.iter().filter(|k| valid.contains(k)).cloned().collect();
    let vv: Vec<String> = values
        .iter()
        .enumerate()
        .filter(|(i, v)| !v.is_empty() || keys.get(*i).is_some_and(|k| valid.contains(&k)))
        .map(|(_, v)| v.clone())
        .collect();
    (vk, vv)
}

/// The first element of `list` whose keys have exactly these values.
fn element_list(list: &N, keys: &[String], values: &[String]) -> Option<N> {
    if kind_of(list) != Some(Kind::Seq) {
        return None;
    }
    let items = seq_items(list);
    if keys.first().is_none_or(|k| k.is_empty()) {
        let want = values.first().map(String::as_str).unwrap_or("");
        return items.into_iter().find(|e| text_is(e, want));
    }
    if keys.len() != values.len() {
        return None;
    }
    items.into_iter().find(|e| {
        kind_of(e) == Some(Kind::Map)
            && keys
                .iter()
                .zip(values)
                .all(|(k, v)| get_field(e, k).is_some_and(|f| text_is(&f, v)))
    })
}

/// Whether `elem` has field `name` (with value `value`, unless `value` is empty).
fn field_matches(elem: &N, name: &str, value: &str) -> Result<bool, MergeError> {
    if is_null(&Some(elem.clone())) {
        return Ok(false);
    }
    if name.is_empty() {
        if kind_of(elem) != Some(Kind::Scalar) {
            return Err(MergeError::KindMismatch {
                path: String::from("list element"),
                expected: "scalar".to_string(),
                found: kind_of(elem).map(kind_name).unwrap_or("null").to_string(),
            });
        }
        return Ok(text_is(elem, value));
    }
    if kind_of(elem) != Some(Kind::Map) {
        return Err(MergeError::KindMismatch {
            path: String::from("list element"),
            expected: "map".to_string(),
            found: kind_of(elem).map(kind_name).unwrap_or("null").to_string(),
        });
    }
    Ok(match get_field(elem, name) {
        None => false,
        Some(f) => value.is_empty() || text_is(&f, value),
    })
}

/// Replaces (or with `element` None, removes) the elements of `list` matching the key values,
/// appending `element` when nothing matched. Like kustomize, it also drops null and empty-map
/// elements it walks past.
fn element_setter(
    list: &N,
    element: Option<N>,
    keys: &[String],
    values: &[String],
) -> Result<(), MergeError> {
    let keys: Vec<String> = if keys.is_empty() {
        vec![String::new()]
    } else {
        keys.to_vec()
    };
    let mapping_setter = !keys[0].is_empty() && values.first().is_some_and(|v| !v.is_empty());
    let mut out = Vec::new();
    let mut matched = false;
    for elem in seq_items(list) {
        if is_null(&Some(elem.clone())) || is_empty_map(&elem) {
            continue;
        }
        if kind_of(&elem) != Some(Kind::Map) && mapping_setter {
            out.push(elem);
            continue;
        }
        let mut found = true;
        let mut last = false;
        for (j, key) in keys.iter().enumerate() {
            if let Some(v) = values.get(j) {
                last = field_matches(&elem, key, v)?;
            }
            if !last {
                found = false;
                break;
            }
        }
        if !found {
            if !values.is_empty() {
                out.push(elem);
            }
            continue;
        }
        matched = true;
        if let Some(e) = &element {
            out.push(e.clone());
        }
    }
    let append = match &element {
        Some(e) if !is_null(&Some(e.clone())) && !matched => Some(e.clone()),
        _ => None,
    };
    if let Some(e) = append {
        out.push(e);
    }
    set_seq_items(list, out);
    Ok(())
}

/// Adds the original list's elements after the patch's, each replacing its merged twin.
fn append_list(dst: &N, src: &N, keys: &[String]) -> Result<(), MergeError> {
    for elem in seq_items(src) {
        if keys.first().is_none_or(|k| k.is_empty()) {
            let v = text(&elem);
            element_setter(dst, Some(elem), &[String::new()], &[v])?;
            continue;
        }
        let mut v = Vec::new();
        for key in keys {
            let field = match &*elem.borrow() {
                Node::Map(_) => None,
                Node::Null { .. } => Some(None),
                _ => {
                    return Err(MergeError::KindMismatch {
                        path: String::from("list element"),
                        expected: "map".to_string(),
                        found: "scalar".to_string(),
                    });
                }
            };
            let field = field.unwrap_or_else(|| get_field(&elem, key));
            match field {
                // Elements without the key are appended as they are.
                None => {
                    if let Node::Seq(items) = &mut *dst.borrow_mut() {
                        items.push(elem.clone());
                    }
                }
                Some(f) => v.push(text(&f)),
            }
        }
        if keys.len() > 1 {
            element_setter(dst, None, keys, &v)?;
        }
        element_setter(dst, Some(elem), keys, &v)?;
    }
    Ok(())
}

/// Applies a strategic merge patch the way `kubectl kustomize` does.
pub(crate) fn strategic_merge(original: &Value, patch: &Value) -> Result<Value, MergeError> {
    if !original.is_object() {
        return Err(MergeError::OriginalNotObject {
            found: json_kind(original),
        });
    }
    if !patch.is_object() {
        return Err(MergeError::PatchNotObject {
            found: json_kind(patch),
        });
    }
    merge_with(original, patch, true)
}

fn merge_with(original: &Value, patch: &Value, fast_lists: bool) -> Result<Value, MergeError> {
    let mut w = Walker {
        path: Path(Vec::new()),
        fast_lists,
    };
    let root = from_value(original);
    let result = w.walk(Some(root.clone()), Some(from_value(patch)), None)?;
    // kustomize keeps the resource node it merged into in place and only looks at the walk's
    // result to see whether the resource was deleted: a top-level `$patch: replace` is a no-op.
    Ok(match result {
        Some(_) => to_value(&root),
        None => Value::Null,
    })
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A small deterministic generator (xorshift), so the test needs no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn env(rng: &mut Rng, patch: bool) -> Value {
        let n = rng.below(6);
        let mut names: Vec<u64> = (0..n).map(|_| rng.below(8)).collect();
        names.sort_unstable();
        names.dedup();
        let mut out: Vec<Value> = names
            .into_iter()
            .map(|i| {
                let mut e = json!({"name": format!("E{i}"), "value": format!("{}", rng.below(3))});
                if patch && rng.below(5) == 0 {
                    e["$patch"] = json!("delete");
                } else if patch && rng.below(6) == 0 {
                    e["$patch"] = json!("replace");
                    e["valueFrom"] = json!({"fieldRef": {"fieldPath": "metadata.name"}});
                }
                e
            })
            .collect();
        if patch && rng.below(8) == 0 {
            out.push(json!({"$patch": "replace"}));
        }
        Value::Array(out)
    }

    fn ports(rng: &mut Rng, with_protocol: bool) -> Value {
        let n = rng.below(5);
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for _ in 0..n {
            let port = 80 + rng.below(4);
            let proto = if rng.below(2) == 0 { "TCP" } else { "UDP" };
            if seen.contains(&(port, proto)) || (!with_protocol && seen.iter().any(|s| s.0 == port))
            {
                continue;
            }
            seen.push((port, proto));
            let mut p = json!({"containerPort": port, "name": format!("p{}", rng.below(9))});
            if rng.below(7) == 0 {
                p["$patch"] = json!("delete");
            }
            if with_protocol {
                p["protocol"] = json!(proto);
            }
            out.push(p);
        }
        Value::Array(out)
    }

    fn finalizers(rng: &mut Rng) -> Value {
        let mut v: Vec<String> = (0..rng.below(5))
            .map(|_| format!("f{}", rng.below(6)))
            .collect();
        v.dedup();
        let mut out = Vec::new();
        for f in v {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        json!(out)
    }

    fn pod(rng: &mut Rng, patch: bool) -> Value {
        let with_protocol = rng.below(2) == 0;
        let mut containers = Vec::new();
        let mut names: Vec<u64> = (0..1 + rng.below(3)).map(|_| rng.below(4)).collect();
        names.dedup();
        names.sort_unstable();
        names.dedup();
        for i in names {
            let mut c = json!({"name": format!("c{i}")});
            if !patch || rng.below(2) == 0 {
                c["image"] = json!(format!("img{}", rng.below(3)));
            }
            if rng.below(3) != 0 {
                c["env"] = env(rng, patch);
            }
            if rng.below(2) == 0 {
                c["ports"] = ports(rng, with_protocol);
            }
            containers.push(c);
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "finalizers": finalizers(rng)},
            "spec": {"containers": containers},
        })
    }

    #[test]
    fn linear_list_merge_equals_element_by_element_merge() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for _ in 0..3000 {
            let original = pod(&mut rng, false);
            let patch = pod(&mut rng, true);
            let fast = merge_with(&original, &patch, true);
            let slow = merge_with(&original, &patch, false);
            match (fast, slow) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        serde_json::to_string(&a).unwrap(),
                        serde_json::to_string(&b).unwrap(),
                        "original {original}\npatch {patch}"
                    );
                    compared += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("fast {a:?} slow {b:?}\noriginal {original}\npatch {patch}"),
            }
        }
        assert!(compared > 2500);
    }
}
