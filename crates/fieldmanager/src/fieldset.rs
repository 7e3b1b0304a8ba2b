//! Sets of field paths, and their `FieldsV1` encoding in `metadata.managedFields`.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of a struct or a key of a map: `f:name`.
    Field(String),
    /// An element of a list-map, by its key fields: `k:{"name":"app"}` (JSON, keys sorted).
    Key(String),
    /// An element of a set, by its value: `v:"a"` (JSON).
    Value(String),
    /// An element of a list by position: `i:0` (lists with no identity).
    Index(usize),
}

impl PathElement {
    fn encode(&self) -> String {
        match self {
            PathElement::Field(f) => format!("f:{f}"),
            PathElement::Key(k) => format!("k:{k}"),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Option<PathElement> {
        let (tag, rest) = s.split_once(':')?;
        Some(match tag {
            "f" => PathElement::Field(rest.to_string()),
            "k" => PathElement::Key(canonical_json(rest)?),
            "v" => PathElement::Value(canonical_json(rest)?),
            "i" => PathElement::Index(rest.parse().ok()?),
            _ => return None,
        })
    }

    /// The key element of a list-map item: its key fields, sorted, as compact JSON.
    pub fn key_of(item: &Value, keys: &[String]) -> Option<PathElement> {
        let mut fields = BTreeMap::new();
        for k in keys {
            // A missing key field is allowed when it has a default (e.g. `protocol`); the item
            // is then identified by the keys it has, as Kubernetes does.
            if let Some(v) = item.get(k) {
                fields.insert(k.clone(), v.clone());
            }
        }
        if fields.is_empty() {
            return None;
        }
        serde_json::to_string(&fields).ok().map(PathElement::Key)
    }

    /// The element naming a set item (a `v:` entry) by its value.
    pub fn value_of(item: &Value) -> PathElement {
        PathElement::Value(serde_json::to_string(item).unwrap_or_default())
    }
}

/// Re-encodes JSON with sorted keys so equal keys compare equal whatever their spelling.
fn canonical_json(s: &str) -> Option<String> {
    let v: Value = serde_json::from_str(s).ok()?;
    fn sort(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let sorted: BTreeMap<String, Value> =
                    m.into_iter().map(|(k, v)| (k, sort(v))).collect();
                Value::Object(sorted.into_iter().collect())
            }
            other => other,
        }
    }
    serde_json::to_string(&sort(v)).ok()
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(n) => write!(f, ".{n}"),
            PathElement::Key(k) => {
                let parsed: BTreeMap<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = parsed.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object root.
pub type Path = Vec<PathElement>;

/// Renders a path the way the API server names fields in conflict messages
/// (`.spec.template.spec.containers[name="app"].image`).
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, stored as a trie. A node is a member when the path to it is in the set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// True when the set holds no field.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds the field at `path`.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path.split_first() {
            None => self.member = true,
            Some((head, rest)) => self.children.entry(head.clone()).or_default().insert(rest),
        }
    }

    /// Whether the field at `path` is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((head, rest)) => self.children.get(head).is_some_and(|c| c.contains(rest)),
        }
    }

    /// True when the set holds `path` or anything below it.
    pub fn has_any_at_or_below(&self, path: &[PathElement]) -> bool {
        match path.split_first() {
            None => !self.is_empty(),
            Some((head, rest)) => self
                .children
                .get(head)
                .is_some_and(|c| c.has_any_at_or_below(rest)),
        }
    }

    /// Every member path, depth first.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (el, child) in &self.children {
            prefix.push(el.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The fields in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    /// Adds every field of `other` to this set.
    pub fn union_in_place(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (el, child) in &other.children {
            self.children
                .entry(el.clone())
                .or_default()
                .union_in_place(child);
        }
    }

    /// The fields in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (el, child) in &self.children {
            if let Some(o) = other.children.get(el) {
                let both = child.intersection(o);
                if !both.is_empty() {
                    out.children.insert(el.clone(), both);
                }
            }
        }
        out
    }

    /// The fields of this set that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (el, child) in &self.children {
            let rest = match other.children.get(el) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(el.clone(), rest);
            }
        }
        out
    }

    /// The `FieldsV1` JSON form: `{"f:spec": {"f:replicas": {}}}`, `.` marking a member that
    /// also has children.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (el, child) in &self.children {
            if child.is_empty() {
                continue;
            }
            map.insert(el.encode(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Parses `FieldsV1`; None when it is not an object of path elements.
    pub fn from_fields_v1(value: &Value) -> Option<FieldSet> {
        let obj = value.as_object()?;
        let mut set = FieldSet {
            member: obj.is_empty(),
            children: BTreeMap::new(),
        };
        for (k, v) in obj {
            if k == "." {
                set.member = true;
                continue;
            }
            let el = PathElement::decode(k)?;
            set.children.insert(el, FieldSet::from_fields_v1(v)?);
        }
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}},
                       "f:finalizers": {"v:\"a\"": {}}}
        });
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert!(set.contains(&[f("metadata"), f("labels"), f("app")]));
        assert!(set.contains(&[
            f("spec"),
            f("containers"),
            PathElement::Key("{\"name\":\"app\"}".into())
        ]));
        assert!(!set.contains(&[f("spec")]));
        assert_eq!(set.to_fields_v1(), v);
        assert!(FieldSet::from_fields_v1(&json!({"x:bad": {}})).is_none());
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        let mut b = FieldSet::new();
        b.insert(&[f("spec"), f("replicas")]);
        b.insert(&[f("metadata"), f("labels"), f("x")]);
        assert_eq!(
            a.intersection(&b).paths(),
            vec![vec![f("spec"), f("replicas")]]
        );
        assert_eq!(a.difference(&b).paths(), vec![vec![f("spec"), f("paused")]]);
        assert_eq!(a.union(&b).paths().len(), 3);
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn paths_read_like_the_api_server() {
        let key =
            PathElement::key_of(&json!({"name": "app", "image": "x"}), &["name".into()]).unwrap();
        let p = vec![f("spec"), f("containers"), key, f("image")];
        assert_eq!(path_string(&p), ".spec.containers[name=\"app\"].image");
    }
}
