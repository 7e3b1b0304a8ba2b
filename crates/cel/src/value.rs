//! CEL values: the JSON conversion in and out, CEL's (heterogeneous) equality, and ordering with
//! cross-type numeric comparison.

use std::cmp::Ordering;
use std::sync::Arc;

/// A CEL value.
#[derive(Debug, Clone)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A signed 64-bit integer (JSON integers that fit).
    Int(i64),
    /// An unsigned 64-bit integer (`1u`; JSON integers that only fit here).
    Uint(u64),
    /// A 64-bit float (JSON numbers with a fraction or exponent).
    Double(f64),
    /// A UTF-8 string.
    String(String),
    /// A byte string (`b'...'`).
    Bytes(Vec<u8>),
    /// A list.
    List(Arc<Vec<Value>>),
    /// A map, in insertion order (JSON objects keep their order). Keys are strings, ints, uints
    /// or bools; other key types are refused.
    Map(Arc<Vec<(Value, Value)>>),
    /// A duration in nanoseconds.
    Duration(i128),
    /// A timestamp in nanoseconds since the Unix epoch (UTC).
    Timestamp(i128),
    /// A type, as `type(x)` returns it or as written (`int`, `string`, ...): its CEL name.
    Type(&'static str),
    /// An optional value (`a.?b`, `optional.of(x)`, `optional.none()`).
    Optional(Option<Box<Value>>),
}

impl Value {
    /// CEL's name of the value's type (`int`, `string`, `map`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
        }
    }

    /// Converts JSON into a CEL value: integers become `Int` (or `Uint` when they only fit
    /// there), other numbers `Double`, objects maps with string keys.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::Uint(u)
                } else {
                    Value::Double(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::List(Arc::new(a.iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(m) => Value::Map(Arc::new(
                m.iter()
                    .map(|(k, v)| (Value::String(k.clone()), Value::from_json(v)))
                    .collect(),
            )),
        }
    }

    /// Converts back to JSON: bytes become base64 (as protobuf's JSON mapping does), durations
    /// `"<seconds>s"`, timestamps RFC 3339, map keys strings; `None` for a non-finite double,
    /// a type or an empty optional, which JSON cannot hold.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use base64::Engine as _;
        Some(match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => (*i).into(),
            Value::Uint(u) => (*u).into(),
            Value::Double(d) => serde_json::Value::Number(serde_json::Number::from_f64(*d)?),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b).into(),
            Value::List(l) => {
                serde_json::Value::Array(l.iter().map(Value::to_json).collect::<Option<_>>()?)
            }
            Value::Map(m) => {
                let mut out = serde_json::Map::new();
                for (k, v) in m.iter() {
                    let key = match k {
                        Value::String(s) => s.clone(),
                        Value::Int(i) => i.to_string(),
                        Value::Uint(u) => u.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => return None,
                    };
                    out.insert(key, v.to_json()?);
                }
                serde_json::Value::Object(out)
            }
            Value::Duration(_) | Value::Timestamp(_) => {
                serde_json::Value::String(crate::functions::to_string(self).ok()?)
            }
            Value::Type(_) => return None,
            Value::Optional(o) => return o.as_ref()?.to_json(),
        })
    }

    /// Looks `key` up in a map value (numeric keys compare by value, as CEL does).
    pub(crate) fn map_get<'a>(entries: &'a [(Value, Value)], key: &Value) -> Option<&'a Value> {
        entries.iter().find(|(k, _)| equals(k, key)).map(|(_, v)| v)
    }
}

impl PartialEq for Value {
    /// CEL's `==`.
    fn eq(&self, other: &Value) -> bool {
        equals(self, other)
    }
}

/// Compares an int with a double exactly (no rounding of large ints); `None` for NaN.
fn cmp_int_double(i: i64, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    // 2^63 is exactly representable; every double at or above it exceeds any i64.
    if d >= 9_223_372_036_854_775_808.0 {
        return Some(Ordering::Less);
    }
    if d < -9_223_372_036_854_775_808.0 {
        return Some(Ordering::Greater);
    }
    let t = d.trunc();
    match i.cmp(&(t as i64)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(d - t)),
        o => Some(o),
    }
}

/// Compares a uint with a double exactly; `None` for NaN.
fn cmp_uint_double(u: u64, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d >= 18_446_744_073_709_551_616.0 {
        return Some(Ordering::Less);
    }
    if d < 0.0 {
        return Some(Ordering::Greater);
    }
    let t = d.trunc();
    match u.cmp(&(t as u64)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(d - t)),
        o => Some(o),
    }
}

/// Orders two numbers of any numeric types (Flux enables cross-type numeric comparisons);
/// `None` when either is not a number or a double is NaN.
pub(crate) fn cmp_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Uint(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Int(x), Value::Double(y)) => cmp_int_double(*x, *y),
        (Value::Double(x), Value::Int(y)) => cmp_int_double(*y, *x).map(Ordering::reverse),
        (Value::Uint(x), Value::Double(y)) => cmp_uint_double(*x, *y),
        (Value::Double(x), Value::Uint(y)) => cmp_uint_double(*y, *x).map(Ordering::reverse),
        _ => None,
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Uint(_) | Value::Double(_))
}

/// CEL's heterogeneous equality: numbers compare by value across int, uint and double; values
/// of different types are unequal (not an error); lists and maps compare element by element.
pub(crate) fn equals(a: &Value, b: &Value) -> bool {
    if is_number(a) && is_number(b) {
        return cmp_numbers(a, b) == Some(Ordering::Equal);
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| equals(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| Value::map_get(y, k).is_some_and(|w| equals(v, w)))
        }
        (Value::Duration(x), Value::Duration(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        (Value::Type(x), Value::Type(y)) => x == y,
        (Value::Optional(x), Value::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(p), Some(q)) => equals(p, q),
            _ => false,
        },
        _ => false,
    }
}

/// Orders two values for `<`, `<=`, `>`, `>=`: numbers across types, strings (by code point),
/// bytes, bools, durations, timestamps. `Err` for other pairs (no such overload); `Ok(None)` when
/// a NaN makes them unordered (every comparison is then false).
pub(crate) fn compare(a: &Value, b: &Value) -> Result<Option<Ordering>, ()> {
    if is_number(a) && is_number(b) {
        return Ok(cmp_numbers(a, b));
    }
    Ok(Some(match (a, b) {
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Duration(x), Value::Duration(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        _ => return Err(()),
    }))
}
