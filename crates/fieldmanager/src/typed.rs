//! Walking objects with the list and map types of the Kubernetes schema.

use crate::SsaError;
use crate::fieldset::{FieldSet, Path, PathElement};
use ferroflux_schema::{Field, ListType, MapType};
use serde_json::{Map, Value};

/// Where a value sits in the schema. `None` is untyped data (custom resources, unknown
/// fields): maps merge key by key and lists are atomic, as the API server treats them.
#[derive(Clone, Copy)]
pub(crate) struct Ty(Option<Field>);

impl Ty {
    pub(crate) fn root(api_version: &str, kind: &str) -> Ty {
        Ty(Field::root(api_version, kind))
    }

    fn field(self, name: &str) -> Ty {
        Ty(self.0.and_then(|f| f.field(name)))
    }

    fn item(self) -> Ty {
        Ty(self.0.and_then(|f| f.item()))
    }

    fn list(self) -> ListType {
        self.0
            .and_then(|f| f.list_type())
            .unwrap_or(ListType::Atomic)
    }

    fn atomic_map(self) -> bool {
        let Some(field) = self.0 else {
            return false;
        };
        field.map_type() == Some(MapType::Atomic)
            || field
                .type_name()
                .is_some_and(|name| ATOMIC_STRUCTS.contains(&name))
    }
}

/// Struct types Kubernetes marks `+structType=atomic`. k8s-openapi, where the rest of the
/// schema data comes from, does not carry struct-level atomicity, so these are listed from the
/// Kubernetes API markers; without them a Deployment's `spec.selector` would be owned key by key.
const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
];

/// Fields the API server never attributes to a manager.
const STRIPPED_TOP: &[&str] = &["apiVersion", "kind", "status"];
const STRIPPED_META: &[&str] = &[
    "name",
    "namespace",
    "generateName",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "uid",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// True for paths that name a list element (its identity, not a value).
pub(crate) fn is_item(path: &[PathElement]) -> bool {
    matches!(
        path.last(),
        Some(PathElement::Key(_) | PathElement::Value(_) | PathElement::Index(_))
    )
}

/// The paths an object sets.
pub(crate) fn field_set(obj: &Value, ty: Ty) -> Result<FieldSet, SsaError> {
    let mut set = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return Err(SsaError::BadRequest("the object must be a map".into()));
    };
    let mut path = Vec::new();
    for (k, v) in map {
        if STRIPPED_TOP.contains(&k.as_str()) {
            continue;
        }
        path.push(PathElement::Field(k.clone()));
        if k == "metadata" {
            if let Some(meta) = v.as_object() {
                for (mk, mv) in meta {
                    if STRIPPED_META.contains(&mk.as_str()) {
                        continue;
                    }
                    path.push(PathElement::Field(mk.clone()));
                    walk(mv, ty.field("metadata").field(mk), &mut path, &mut set)?;
                    path.pop();
                }
            }
        } else {
            walk(v, ty.field(k), &mut path, &mut set)?;
        }
        path.pop();
    }
    Ok(set)
}

fn walk(v: &Value, ty: Ty, path: &mut Path, set: &mut FieldSet) -> Result<(), SsaError> {
    match v {
        Value::Object(m) if !ty.atomic_map() && !m.is_empty() => {
            for (k, child) in m {
                path.push(PathElement::Field(k.clone()));
                walk(child, ty.field(k), path, set)?;
                path.pop();
            }
        }
        Value::Array(items) => match ty.list() {
            ListType::Atomic => set.insert(path),
            ListType::Set => {
                for item in items {
                    let el = PathElement::value_of(item);
                    path.push(el);
                    if set.contains(path) {
                        return Err(duplicate(path));
                    }
                    set.insert(path);
                    path.pop();
                }
            }
            ListType::Map(keys) => {
                for (i, item) in items.iter().enumerate() {
                    let el = PathElement::key_of(item, &keys).unwrap_or(PathElement::Index(i));
                    path.push(el);
                    if set.contains(path) {
                        return Err(duplicate(path));
                    }
                    set.insert(path);
                    if let Some(fields) = item.as_object() {
                        for (k, child) in fields {
                            path.push(PathElement::Field(k.clone()));
                            walk(child, ty.item().field(k), path, set)?;
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
        },
        _ => set.insert(path),
    }
    Ok(())
}

fn duplicate(path: &[PathElement]) -> SsaError {
    SsaError::BadRequest(format!(
        "{}: Duplicate value: {}",
        crate::fieldset::path_string(&path[..path.len() - 1]),
        path.last().map(ToString::to_string).unwrap_or_default()
    ))
}

fn find_item(items: &[Value], el: &PathElement, ty: Ty) -> Option<usize> {
    match el {
        PathElement::Index(i) => (*i < items.len()).then_some(*i),
        PathElement::Value(_) => items.iter().position(|it| &PathElement::value_of(it) == el),
        PathElement::Key(_) => match ty.list() {
            ListType::Map(keys) => items
                .iter()
                .position(|it| PathElement::key_of(it, &keys).as_ref() == Some(el)),
            _ => None,
        },
        PathElement::Field(_) => None,
    }
}

/// The value at `path`, if the object has one.
pub(crate) fn get_at<'a>(obj: &'a Value, path: &[PathElement], ty: Ty) -> Option<&'a Value> {
    let mut cur = obj;
    let mut ty = ty;
    for el in path {
        match el {
            PathElement::Field(k) => {
                cur = cur.as_object()?.get(k)?;
                ty = ty.field(k);
            }
            _ => {
                let items = cur.as_array()?;
                let i = find_item(items, el, ty)?;
                cur = &items[i];
                ty = ty.item();
            }
        }
    }
    Some(cur)
}

/// Removes the value at `path`; a missing path is left as it is.
pub(crate) fn remove_at(obj: &mut Value, path: &[PathElement], ty: Ty) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    let mut ty = ty;
    for el in parents {
        let next = match el {
            PathElement::Field(k) => {
                ty = ty.field(k);
                cur.as_object_mut().and_then(|m| m.get_mut(k))
            }
            _ => {
                let Some(items) = cur.as_array_mut() else {
                    return;
                };
                let Some(i) = find_item(items, el, ty) else {
                    return;
                };
                ty = ty.item();
                items.get_mut(i)
            }
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last {
        PathElement::Field(k) => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(k);
            }
        }
        _ => {
            if let Some(items) = cur.as_array_mut()
                && let Some(i) = find_item(items, last, ty)
            {
                items.remove(i);
            }
        }
    }
}

/// Merges the items of an associative list (or set) in the order the API server gives them:
/// the configuration's items in its order, items only the live list has kept where they stood
/// among them, and an item both have placed where the configuration places it. Appending new
/// items at the end instead would reorder a list whose item changed its key (a Service port
/// renumbered moves behind the others), which a diff then reports as an order change.
fn merge_ordered<K: PartialEq>(
    live: &[Value],
    config: &[Value],
    key: impl Fn(&Value) -> Option<K>,
    merge: impl Fn(&Value, &Value) -> Value,
) -> Vec<Value> {
    let live_keys: Vec<Option<K>> = live.iter().map(&key).collect();
    let config_keys: Vec<Option<K>> = config.iter().map(&key).collect();
    let in_config = |k: &Option<K>| k.is_some() && config_keys.contains(k);
    let in_live = |k: &Option<K>| {
        k.as_ref()
            .and_then(|k| live_keys.iter().position(|l| l.as_ref() == Some(k)))
    };
    // The items both lists hold, in the configuration's order.
    let shared: Vec<&Option<K>> = config_keys
        .iter()
        .filter(|k| in_live(k).is_some())
        .collect();
    let mut next_shared = 0;
    let mut emitted: Vec<&Option<K>> = Vec::new();
    let mut out = Vec::with_capacity(live.len() + config.len());
    let (mut li, mut ci) = (0, 0);
    while li < live.len() || ci < config.len() {
        if li < live.len() && ci < config.len() {
            if live_keys[li].is_some() && live_keys[li] == config_keys[ci] {
                out.push(merge(&live[li], &config[ci]));
                emitted.push(&config_keys[ci]);
                if shared.get(next_shared) == Some(&&config_keys[ci]) {
                    next_shared += 1;
                }
                li += 1;
                ci += 1;
                continue;
            }
            // A shared item that is not the next one due waits for the configuration to reach it.
            if in_config(&live_keys[li])
                && shared
                    .get(next_shared)
                    .is_some_and(|n| **n != live_keys[li])
            {
                li += 1;
                continue;
            }
        }
        if li < live.len() {
            if !in_config(&live_keys[li]) {
                out.push(live[li].clone());
                li += 1;
                continue;
            }
            if emitted.contains(&&live_keys[li]) {
                li += 1;
                continue;
            }
        }
        if ci < config.len() {
            let k = &config_keys[ci];
            out.push(match in_live(k) {
                Some(i) => merge(&live[i], &config[ci]),
                None => config[ci].clone(),
            });
            emitted.push(k);
            if shared.get(next_shared) == Some(&k) {
                next_shared += 1;
            }
            ci += 1;
        }
    }
    out
}

/// Merges an apply configuration into the live object: maps key by key, list-maps item by
/// key, sets by value, atomic values replaced. The status of the live object is kept.
pub(crate) fn merge(live: &Value, config: &Value, ty: Ty) -> Value {
    let mut config = config.clone();
    if let Some(m) = config.as_object_mut() {
        m.remove("status");
    }
    merge_value(live, &config, ty)
}

fn merge_value(live: &Value, config: &Value, ty: Ty) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !ty.atomic_map() => {
            let mut out: Map<String, Value> = l.clone();
            for (k, cv) in c {
                let merged = match l.get(k) {
                    Some(lv) => merge_value(lv, cv, ty.field(k)),
                    None => cv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) => match ty.list() {
            ListType::Atomic => config.clone(),
            ListType::Set => {
                Value::Array(merge_ordered(l, c, |v| Some(v.clone()), |_, cv| cv.clone()))
            }
            ListType::Map(keys) => Value::Array(merge_ordered(
                l,
                c,
                |v| PathElement::key_of(v, &keys),
                |lv, cv| merge_value(lv, cv, ty.item()),
            )),
        },
        _ => config.clone(),
    }
}
