//! Go's dynamic values as a Helm chart's templates see them.
//!
//! Owns [`Value`] (nil, bool, `int`, `int64`, `float64`, string, `[]byte`, `[]interface{}`,
//! `map[string]interface{}` and host objects), [`Map`] (a shared, mutable map: Go maps are
//! references, and charts rely on `set $d "k" v` changing `$d`), the [`Object`] trait for host
//! structs with fields and methods (and for Go maps with non-string keys,
//! [`Object::map_entries`]), Go's truth rule, Go's type names, and the conversions from and to
//! `serde_json::Value`. Formatting lives in `fmt`.
//!
//! Containers are behind `Arc`, so cloning a value is cheap whatever its size. Dropping a deeply
//! nested value is iterative, so 10,000-deep values cannot overflow the stack.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::func::{CallContext, FuncError, Signature};

/// A Go value as text/template handles it (the dynamic type behind an `interface{}`).
///
/// Integers keep Go's distinction between `int` (template literals, `len`, `range` indexes) and
/// `int64` (Helm's `--set` numbers, sprig's arithmetic). Numbers read from YAML or JSON are
/// `float64`, as in Helm.
#[derive(Clone, Default)]
pub enum Value {
    /// A nil interface (`nil` in a template, `null` in values).
    #[default]
    Nil,
    /// `bool`.
    Bool(bool),
    /// Go's `int`.
    Int(i64),
    /// Go's `int64`.
    Int64(i64),
    /// `float64`.
    Float(f64),
    /// `string`.
    String(Arc<str>),
    /// `[]byte` (Go names its type `[]uint8`).
    Bytes(Arc<[u8]>),
    /// `[]interface{}`.
    List(Arc<Vec<Value>>),
    /// `map[string]interface{}` (shared and mutable, like a Go map).
    Map(Map),
    /// A host object: a struct or pointer with fields and methods.
    Object(Arc<dyn Object>),
}

impl Value {
    /// A string value.
    pub fn string(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// A host object value.
    pub fn object(o: impl Object + 'static) -> Value {
        Value::Object(Arc::new(o))
    }

    /// The string inside a `String` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The map inside a `Map` value.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items of a `List` value.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// Whether this is the nil interface.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Go's `template.IsTrue`: false for nil, `false`, zero numbers and empty strings, lists,
    /// maps and byte slices; true for everything else (a host object decides for itself).
    pub fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => o.truth(),
        }
    }

    /// Go's name of the dynamic type, as `%T` and error messages print it
    /// (`int`, `float64`, `[]interface {}`, `map[string]interface {}`, `[]uint8`).
    /// Nil is `<nil>`, as `%T` prints it.
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// Go's `reflect.Kind` name of the dynamic type (sprig's `kindOf`): `int`, `float64`,
    /// `string`, `slice`, `map`, `struct`, `ptr`; nil is `invalid`.
    pub fn kind_name(&self) -> String {
        match self {
            Value::Nil => "invalid".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) | Value::List(_) => "slice".into(),
            Value::Map(_) => "map".into(),
            Value::Object(o) => o.kind_name(),
        }
    }

    /// Converts JSON (or YAML read as JSON) as Helm does: every number becomes `float64`,
    /// objects become maps.
    pub fn from_json(json: &serde_json::Value) -> Value {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match json {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::Map(Map::from_iter(
                o.iter().map(|(k, v)| (k.clone(), Value::from_json(v))),
            )),
        })
    }

    /// Converts to JSON the way Go's `encoding/json` sees the value: a float with an integral
    /// value below 1e21 becomes a JSON integer (Go prints `3`, not `3.0`), bytes become their
    /// base64 text, NaN and infinities (which Go refuses) become null, and host objects give
    /// [`Object::to_json`].
    pub fn to_json(&self) -> serde_json::Value {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 1e21 && f.abs() <= i64::MAX as f64 {
                    serde_json::Value::from(*f as i64)
                } else {
                    serde_json::Number::from_f64(*f)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null)
                }
            }
            Value::String(s) => serde_json::Value::String(crate::gostr::lossy(s).into_owned()),
            Value::Bytes(b) => serde_json::Value::String(base64(b)),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => serde_json::Value::Object(
                m.read()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            Value::Object(o) => o.to_json(),
        })
    }

    /// Deep equality: numbers of the same Go type by value, containers item by item, host
    /// objects by identity. (Template `eq` follows Go's own rules, not this.)
    fn deep_eq(&self, other: &Value) -> bool {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) | (Value::Int64(a), Value::Int64(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.deep_eq(y))
            }
            (Value::Map(a), Value::Map(b)) => {
                if a.ptr_eq(b) {
                    return true;
                }
                let (a, b) = (a.read(), b.read());
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .all(|((ka, va), (kb, vb))| ka == kb && va.deep_eq(vb))
            }
            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
            _ => false,
        })
    }
}

/// Standard base64 with padding (Go's `encoding/json` form of `[]byte`).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.deep_eq(other)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}({})",
            self.type_name(),
            crate::fmt::sprint(std::slice::from_ref(self))
        )
    }
}

/// Go's `fmt.Sprint` of the value (`map[a:1]`, `[x y]`, `<nil>`, `1e+06`).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::fmt::sprint(std::slice::from_ref(self)))
    }
}

impl Drop for Value {
    /// Takes apart uniquely owned containers with a heap work list instead of recursion.
    fn drop(&mut self) {
        if !has_nested_containers(self) {
            // The ordinary drop recurses one level at most.
            return;
        }
        let mut work: Vec<Value> = Vec::new();
        take_children(self, &mut work);
        while let Some(mut v) = work.pop() {
            take_children(&mut v, &mut work);
        }
    }
}

/// Whether `v` is the last owner of a container that itself holds containers.
fn has_nested_containers(v: &mut Value) -> bool {
    let container = |v: &Value| matches!(v, Value::List(_) | Value::Map(_));
    match v {
        Value::List(l) => Arc::get_mut(l).is_some_and(|items| items.iter().any(container)),
        Value::Map(m) => Arc::get_mut(&mut m.0).is_some_and(|lock| {
            // A poisoned lock still holds a whole map.
            let map = lock.get_mut().unwrap_or_else(|e| e.into_inner());
            map.values().any(container)
        }),
        _ => false,
    }
}

/// Moves the items of `v` into `work` when `v` is the last owner of its container.
fn take_children(v: &mut Value, work: &mut Vec<Value>) {
    match v {
        Value::List(l) => {
            if let Some(items) = Arc::get_mut(l) {
                work.append(items);
            }
        }
        Value::Map(m) => {
            if let Some(lock) = Arc::get_mut(&mut m.0) {
                // A poisoned lock still holds a whole map.
                let map = lock.get_mut().unwrap_or_else(|e| e.into_inner());
                work.extend(std::mem::take(map).into_values());
            }
        }
        _ => {}
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

/// Go's `int`.
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

/// Go's `int`.
impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::Int(i64::from(i))
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.into())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s.into())
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::list(items)
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Value {
        Value::Map(m)
    }
}

impl From<&serde_json::Value> for Value {
    fn from(j: &serde_json::Value) -> Value {
        Value::from_json(j)
    }
}

/// A Go `map[string]interface{}`: shared by reference (cloning a `Map` gives another handle on
/// the same map, as assigning a Go map does), iterated in sorted key order (as Go's fmt and
/// text/template's `range` do).
#[derive(Clone, Default)]
pub struct Map(Arc<RwLock<BTreeMap<String, Value>>>);

impl Map {
    /// A new empty map.
    pub fn new() -> Map {
        Map::default()
    }

    /// Read access to the entries (sorted by key). Do not hold it across a call that may write
    /// the same map.
    pub fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Value>> {
        // A poisoned lock only means a panic elsewhere; the map itself is still whole.
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Write access to the entries.
    pub fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Value>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The value under `key`, cloned (cheap).
    pub fn get(&self, key: &str) -> Option<Value> {
        self.read().get(key).cloned()
    }

    /// Sets `key` (Go's `m[key] = v`).
    pub fn insert(&self, key: impl Into<String>, v: impl Into<Value>) {
        self.write().insert(key.into(), v.into());
    }

    /// Removes `key`.
    pub fn remove(&self, key: &str) -> Option<Value> {
        self.write().remove(key)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The keys, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// A snapshot of the entries, sorted by key (values cloned cheaply).
    pub fn entries(&self) -> Vec<(String, Value)> {
        self.read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Whether both handles refer to the same Go map.
    pub fn ptr_eq(&self, other: &Map) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A new map with the same entries (a shallow copy: nested maps stay shared).
    pub fn shallow_copy(&self) -> Map {
        Map(Arc::new(RwLock::new(self.read().clone())))
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Map {
        Map(Arc::new(RwLock::new(iter.into_iter().collect())))
    }
}

impl From<BTreeMap<String, Value>> for Map {
    fn from(m: BTreeMap<String, Value>) -> Map {
        Map(Arc::new(RwLock::new(m)))
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::fmt::sprint(&[Value::Map(self.clone())]))
    }
}

/// A host value with Go fields and methods (Helm's `.Capabilities`, `.Files`, `.Chart`, a
/// semver version). Templates read fields with `.Name` and call methods with `.Has "v1"`; a
/// method is looked up before a field, as Go does.
pub trait Object: Send + Sync {
    /// Go's type name for `%T` and error messages, e.g. `*chart.Metadata`.
    fn type_name(&self) -> String;

    /// Go's kind for sprig's `kindOf` (`struct`, `ptr`, `map`, `slice`, …).
    fn kind_name(&self) -> String {
        "ptr".into()
    }

    /// The exported field `name`, if the object has one.
    fn field(&self, name: &str) -> Option<Value> {
        let _ = name;
        None
    }

    /// The signature of the method `name`, if the object has one. Arguments are checked and
    /// converted against it before [`Object::call_method`] sees them.
    fn method(&self, name: &str) -> Option<Signature> {
        let _ = name;
        None
    }

    /// Calls the method `name` (only called for names [`Object::method`] knows).
    fn call_method(
        &self,
        name: &str,
        ctx: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let _ = (ctx, args);
        Err(FuncError::new(format!("no method {name}")))
    }

    /// What `{{ . }}`, `print` and `%v` show: the Go `String()` method's result if the type
    /// has one, else Go's struct form (`{a b}`, or `&{a b}` for a pointer).
    fn format(&self) -> String;

    /// Go's truth of the value (a non-nil pointer or a struct is true).
    fn truth(&self) -> bool {
        true
    }

    /// The value `encoding/json` would produce (used by `toJson`/`toYaml` hosts).
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The items `range` iterates and `len`/`index` see, when the object is a Go slice or
    /// map type with methods (Helm's `VersionSet` is a `[]string`, `.Files` a map).
    fn as_value(&self) -> Option<Value> {
        None
    }

    /// The entries `range` iterates and `len` counts when the object is a Go map whose keys
    /// are not strings (a map keyed by a struct, as Flux's `ObjectChanges`), which [`Map`]
    /// cannot hold. Give them in Go's sorted key order (`range` sorts a map's keys; structs
    /// compare field by field). The key is what `range $k, $v := …` binds to `$k`. Checked
    /// before [`Object::as_value`]. Default: not such a map.
    fn map_entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }

    /// Whether the object may be passed where a parameter of type `t` is declared, as Go
    /// assigns a named type to its unnamed underlying type (Helm's `common.Values` is a
    /// `map[string]interface{}`, so `merge .Values …` accepts it). The function then receives
    /// [`Object::as_value`]. Default: never.
    fn assignable_to(&self, t: crate::func::Type) -> bool {
        let _ = t;
        false
    }

    /// The object itself, for a host that wants its own type back from a [`Value::Object`]
    /// (sprig's `date` reading its `time.Time`). Implement as `Some(self)`.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_follows_go() {
        assert!(!Value::Nil.truth());
        assert!(!Value::Int(0).truth());
        assert!(Value::Int64(-1).truth());
        assert!(!Value::Float(0.0).truth());
        assert!(!Value::from("").truth());
        assert!(Value::from("x").truth());
        assert!(!Value::list(vec![]).truth());
        assert!(Value::list(vec![Value::Nil]).truth());
        assert!(!Value::Map(Map::new()).truth());
    }

    #[test]
    fn type_names_are_gos() {
        assert_eq!(Value::Int(1).type_name(), "int");
        assert_eq!(Value::Int64(1).type_name(), "int64");
        assert_eq!(Value::Float(1.0).type_name(), "float64");
        assert_eq!(Value::list(vec![]).type_name(), "[]interface {}");
        assert_eq!(
            Value::Map(Map::new()).type_name(),
            "map[string]interface {}"
        );
        assert_eq!(Value::Bytes(Arc::from(&b"x"[..])).type_name(), "[]uint8");
        assert_eq!(Value::Map(Map::new()).kind_name(), "map");
    }

    #[test]
    fn json_numbers_become_float64_and_back() {
        let j: serde_json::Value = serde_json::json!({"b": [1, 2.5, null], "a": "x"});
        let v = Value::from_json(&j);
        let m = v.as_map().unwrap();
        assert_eq!(m.keys(), vec!["a", "b"]);
        assert_eq!(m.get("b").unwrap().as_list().unwrap()[0], Value::Float(1.0));
        assert_eq!(
            v.to_json(),
            serde_json::json!({"a": "x", "b": [1, 2.5, null]})
        );
    }

    #[test]
    fn maps_are_shared_like_go_maps() {
        let m = Map::new();
        let v = Value::Map(m.clone());
        m.insert("k", 1);
        assert_eq!(v.as_map().unwrap().get("k"), Some(Value::Int(1)));
        let copy = m.shallow_copy();
        copy.insert("j", 2);
        assert!(!m.contains_key("j"));
    }

    /// A Go map keyed by a struct: `range` binds the host's keys in the order given, `len`
    /// counts them, and an empty one runs `else`.
    struct PairKeyed(Vec<(Value, Value)>);

    impl Object for PairKeyed {
        fn type_name(&self) -> String {
            "main.PairKeyed".into()
        }
        fn kind_name(&self) -> String {
            "map".into()
        }
        fn format(&self) -> String {
            "map[…]".into()
        }
        fn map_entries(&self) -> Option<Vec<(Value, Value)>> {
            Some(self.0.clone())
        }
    }

    #[test]
    fn host_maps_with_non_string_keys_range_and_len() {
        let data = Map::new();
        data.insert(
            "m",
            Value::object(PairKeyed(vec![
                (Value::Int(1), Value::from("one")),
                (Value::Int(2), Value::from("two")),
            ])),
        );
        data.insert("e", Value::object(PairKeyed(vec![])));
        let mut t = crate::Template::named("t");
        t.parse(
            "t",
            "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}{{ len .m }}\
             {{ range .m }}[{{ . }}]{{ end }}{{ range .e }}x{{ else }}empty{{ end }}",
        )
        .unwrap();
        assert_eq!(
            t.execute("t", &Value::Map(data)).unwrap(),
            "1=one;2=two;2[one][two]empty"
        );
    }

    #[test]
    fn deep_values_drop_and_convert_without_overflow() {
        let mut j = serde_json::Value::Null;
        for _ in 0..10_000 {
            let mut o = serde_json::Map::new();
            o.insert("a".into(), serde_json::Value::Array(vec![j]));
            j = serde_json::Value::Object(o);
        }
        let v = Value::from_json(&j);
        let back = v.to_json();
        assert!(v == Value::from_json(&back));
        drop(v);
        // serde_json's own recursive drop is not ours to fix; keep it on a big stack.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || drop((j, back)))
            .unwrap()
            .join()
            .unwrap();
    }
}
