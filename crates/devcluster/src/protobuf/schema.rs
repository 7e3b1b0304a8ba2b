//! The message table of Kubernetes' protobuf encoding (`messages.txt`, field numbers, JSON names
//! and types of every built-in kind, generated from the `generated.proto` files of the release by
//! `protogen/generate.py`) and the generic reader and writer that turn a message into the JSON
//! object the API serves, and back.
//!
//! A few messages are not shown in JSON as objects: `Time`/`MicroTime` (RFC 3339 strings),
//! `Duration` (Go duration strings), `Quantity` (strings), `IntOrString` (a number or a string),
//! `RawExtension` and `FieldsV1` (embedded JSON), and the wrapper messages whose JSON is their one
//! `items` array. Go's JSON omits a zero scalar unless the field is a pointer or not `omitempty`;
//! the table's `k` flag says which, so a decoded object has the fields the API server's would.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

const TABLE: &str = include_str!("messages.txt");

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Card {
    Optional,
    Repeated,
    Map,
}

#[derive(Debug)]
struct Field {
    json: String,
    card: Card,
    ty: String,
    keep_zero: bool,
}

#[derive(Debug, Default)]
struct Message {
    wrapper: bool,
    fields: Vec<(u64, Field)>,
}

impl Message {
    fn field(&self, n: u64) -> Option<&Field> {
        self.fields.iter().find(|(k, _)| *k == n).map(|(_, f)| f)
    }
    fn by_json(&self, name: &str) -> Option<(u64, &Field)> {
        self.fields
            .iter()
            .find(|(_, f)| f.json == name)
            .map(|(n, f)| (*n, f))
    }
}

fn table() -> &'static HashMap<String, Message> {
    static T: OnceLock<HashMap<String, Message>> = OnceLock::new();
    T.get_or_init(|| {
        let mut out: HashMap<String, Message> = HashMap::new();
        let mut current: Option<String> = None;
        for line in TABLE.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["#", ..] | [] => {}
                ["M", name, rest @ ..] => {
                    out.insert(
                        name.to_string(),
                        Message {
                            wrapper: rest.first() == Some(&"wrapper"),
                            fields: Vec::new(),
                        },
                    );
                    current = Some(name.to_string());
                }
                [num, json, card, ty, rest @ ..] => {
                    let (Some(cur), Ok(num)) = (&current, num.parse::<u64>()) else {
                        continue;
                    };
                    let card = match *card {
                        "r" => Card::Repeated,
                        "m" => Card::Map,
                        _ => Card::Optional,
                    };
                    if let Some(m) = out.get_mut(cur) {
                        m.fields.push((
                            num,
                            Field {
                                json: json.to_string(),
                                card,
                                ty: ty.to_string(),
                                keep_zero: rest.first() == Some(&"k"),
                            },
                        ));
                    }
                }
                _ => {}
            }
        }
        out
    })
}

/// Whether the table knows the message `name`.
pub fn has(name: &str) -> bool {
    table().contains_key(name)
}

/// A decoding failure, worded as Go's protobuf reader words it.
#[derive(Debug)]
pub struct DecodeError(pub String);

fn eof() -> DecodeError {
    DecodeError("unexpected EOF".into())
}

/// One field as read from the wire.
pub enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed64(u64),
    Fixed32(u32),
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, DecodeError> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let byte = *b.get(*i).ok_or_else(eof)?;
        *i += 1;
        if shift == 63 && byte > 1 {
            return Err(DecodeError("proto: integer overflow".into()));
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError("proto: integer overflow".into()))
}

/// Splits a message into its fields, in wire order.
pub fn fields(b: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, DecodeError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (num, wt) = (key >> 3, key & 7);
        if num == 0 {
            return Err(DecodeError(format!(
                "proto: illegal tag 0 (wire type {wt})"
            )));
        }
        let take = |i: &mut usize, n: usize| -> Result<&[u8], DecodeError> {
            let end = i.checked_add(n).filter(|e| *e <= b.len()).ok_or_else(eof)?;
            let s = &b[*i..end];
            *i = end;
            Ok(s)
        };
        let w = match wt {
            0 => Wire::Varint(varint(b, &mut i)?),
            1 => {
                let s = take(&mut i, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                Wire::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).map_err(|_| eof())?;
                Wire::Bytes(take(&mut i, len)?)
            }
            5 => {
                let s = take(&mut i, 4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(s);
                Wire::Fixed32(u32::from_le_bytes(a))
            }
            other => {
                return Err(DecodeError(format!("proto: illegal wireType {other}")));
            }
        };
        out.push((num, w));
    }
    Ok(out)
}

fn wrong_wire(field: &Field) -> DecodeError {
    DecodeError(format!("proto: wrong wireType for field {}", field.json))
}

/// A scalar value from one wire field.
fn scalar(ty: &str, w: &Wire, field: &Field) -> Result<Value, DecodeError> {
    Ok(match (ty, w) {
        ("string", Wire::Bytes(b)) => Value::String(
            String::from_utf8(b.to_vec())
                .map_err(|_| DecodeError("proto: invalid UTF-8 in a string field".into()))?,
        ),
        ("bytes", Wire::Bytes(b)) => json!(crate::validate::encode_base64(b)),
        ("bool", Wire::Varint(v)) => json!(*v != 0),
        ("int32", Wire::Varint(v)) => json!(*v as i64 as i32),
        ("int64", Wire::Varint(v)) => json!(*v as i64),
        ("uint32", Wire::Varint(v)) => json!(*v as u32),
        ("uint64", Wire::Varint(v)) => json!(*v),
        ("double", Wire::Fixed64(v)) => json!(f64::from_bits(*v)),
        ("float", Wire::Fixed32(v)) => json!(f32::from_bits(*v)),
        _ => return Err(wrong_wire(field)),
    })
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

fn packed(ty: &str, b: &[u8], field: &Field) -> Result<Vec<Value>, DecodeError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let w = match ty {
            "double" => {
                let s = b.get(i..i + 8).ok_or_else(eof)?;
                i += 8;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                Wire::Fixed64(u64::from_le_bytes(a))
            }
            "float" => {
                let s = b.get(i..i + 4).ok_or_else(eof)?;
                i += 4;
                let mut a = [0u8; 4];
                a.copy_from_slice(s);
                Wire::Fixed32(u32::from_le_bytes(a))
            }
            _ => Wire::Varint(varint(b, &mut i)?),
        };
        out.push(scalar(ty, &w, field)?);
    }
    Ok(out)
}

fn is_scalar(ty: &str) -> bool {
    !ty.contains('.')
}

/// Decodes one message of type `name` into its JSON form.
pub fn decode(name: &str, b: &[u8]) -> Result<Value, DecodeError> {
    decode_depth(name, b, 0)
}

fn decode_depth(name: &str, b: &[u8], depth: usize) -> Result<Value, DecodeError> {
    // Go's reader has no such limit, but a hostile body must not overflow our stack.
    if depth > 100 {
        return Err(DecodeError("proto: the message nests too deeply".into()));
    }
    if let Some(v) = special(name, b)? {
        return Ok(v);
    }
    let Some(msg) = table().get(name) else {
        return Err(DecodeError(format!("proto: no message type {name}")));
    };
    let mut obj = Map::new();
    for (num, w) in fields(b)? {
        // Unknown fields are skipped, as Go's generated readers skip them.
        let Some(f) = msg.field(num) else { continue };
        let value = |w: &Wire| -> Result<Value, DecodeError> {
            if is_scalar(&f.ty) {
                scalar(&f.ty, w, f)
            } else {
                match w {
                    Wire::Bytes(inner) => decode_depth(&f.ty, inner, depth + 1),
                    _ => Err(wrong_wire(f)),
                }
            }
        };
        match f.card {
            Card::Optional => {
                let v = value(&w)?;
                if v.is_null() || (is_scalar(&f.ty) && !f.keep_zero && is_zero(&v)) {
                    obj.remove(&f.json);
                    continue;
                }
                obj.insert(f.json.clone(), v);
            }
            Card::Repeated => {
                let items = match (&w, is_scalar(&f.ty) && f.ty != "string" && f.ty != "bytes") {
                    (Wire::Bytes(p), true) => packed(&f.ty, p, f)?,
                    _ => vec![value(&w)?],
                };
                let entry = obj
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(a) = entry {
                    a.extend(items);
                }
            }
            Card::Map => {
                let Wire::Bytes(entry) = w else {
                    return Err(wrong_wire(f));
                };
                let (mut k, mut v) = (String::new(), None);
                for (n, e) in fields(entry)? {
                    match (n, &e) {
                        (1, Wire::Bytes(s)) => {
                            k = String::from_utf8(s.to_vec()).map_err(|_| {
                                DecodeError("proto: invalid UTF-8 in a map key".into())
                            })?;
                        }
                        (2, _) => v = Some(value(&e)?),
                        _ => {}
                    }
                }
                let v = match v {
                    Some(v) => v,
                    // A missing value is the type's zero value.
                    None if f.ty == "string" || f.ty == "bytes" => json!(""),
                    None if is_scalar(&f.ty) => json!(0),
                    None => decode_depth(&f.ty, &[], depth + 1)?,
                };
                let entry = obj
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = entry {
                    m.insert(k, v);
                }
            }
        }
    }
    if msg.wrapper {
        return Ok(obj.remove("items").unwrap_or(Value::Array(Vec::new())));
    }
    Ok(Value::Object(obj))
}

/// Messages whose JSON is not an object of their fields.
fn special(name: &str, b: &[u8]) -> Result<Option<Value>, DecodeError> {
    const SPECIAL: &[&str] = &[
        "apis.meta.v1.Time",
        "apis.meta.v1.MicroTime",
        "apis.meta.v1.Duration",
        "api.resource.Quantity",
        "api.resource.QuantityValue",
        "util.intstr.IntOrString",
        "runtime.RawExtension",
        "apis.meta.v1.FieldsV1",
    ];
    let Some(short) = name
        .strip_prefix("k8s.io.apimachinery.pkg.")
        .filter(|s| SPECIAL.contains(s))
    else {
        return Ok(None);
    };
    let f = fields(b)?;
    let int = |n: u64| last_int(&f, n);
    let bytes = |n: u64| last_bytes(&f, n);
    let text = |n: u64| -> Result<String, DecodeError> {
        String::from_utf8(last_bytes(&f, n).to_vec())
            .map_err(|_| DecodeError("proto: invalid UTF-8 in a string field".into()))
    };
    let embedded = |raw: &[u8]| -> Result<Value, DecodeError> {
        if raw.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(raw).map_err(|e| DecodeError(format!("embedded JSON: {e}")))
    };
    Ok(Some(match short {
        "apis.meta.v1.Time" => {
            let (s, n) = (int(1), int(2));
            if s == 0 && n == 0 {
                Value::Null
            } else {
                json!(crate::util::format_rfc3339(s))
            }
        }
        "apis.meta.v1.MicroTime" => {
            let (s, n) = (int(1), int(2));
            if s == 0 && n == 0 {
                Value::Null
            } else {
                let base = crate::util::format_rfc3339(s);
                let base = base.trim_end_matches('Z');
                json!(format!("{base}.{:06}Z", (n / 1000).clamp(0, 999_999)))
            }
        }
        "apis.meta.v1.Duration" => json!(go_duration(int(1))),
        "api.resource.Quantity" | "api.resource.QuantityValue" => json!(text(1)?),
        "util.intstr.IntOrString" => {
            if int(1) == 1 {
                json!(text(3)?)
            } else {
                json!(int(2) as i32)
            }
        }
        "runtime.RawExtension" => embedded(bytes(1))?,
        "apis.meta.v1.FieldsV1" => embedded(bytes(1))?,
        _ => return Ok(None),
    }))
}

/// The last varint of field `n` (protobuf's rule for repeated scalars), or 0.
fn last_int(f: &[(u64, Wire<'_>)], n: u64) -> i64 {
    f.iter()
        .rev()
        .find_map(|(k, w)| match w {
            Wire::Varint(v) if *k == n => Some(*v as i64),
            _ => None,
        })
        .unwrap_or(0)
}

/// The last length-delimited value of field `n`, or nothing.
fn last_bytes<'a>(f: &[(u64, Wire<'a>)], n: u64) -> &'a [u8] {
    f.iter()
        .rev()
        .find_map(|(k, w)| match w {
            Wire::Bytes(v) if *k == n => Some(*v),
            _ => None,
        })
        .unwrap_or(&[])
}

/// Go's `time.Duration.String()` for whole nanoseconds.
fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let n = ns.unsigned_abs();
    let mut out = String::new();
    if n < 1_000_000_000 {
        let (v, unit) = if n < 1_000 {
            (n as f64, "ns")
        } else if n < 1_000_000 {
            (n as f64 / 1e3, "µs")
        } else {
            (n as f64 / 1e6, "ms")
        };
        out = format!("{v}{unit}");
    } else {
        let secs = n / 1_000_000_000;
        let frac = n % 1_000_000_000;
        let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
        if h > 0 {
            out += &format!("{h}h");
        }
        if h > 0 || m > 0 {
            out += &format!("{m}m");
        }
        if frac == 0 {
            out += &format!("{s}s");
        } else {
            let f = format!("{frac:09}");
            out += &format!("{s}.{}s", f.trim_end_matches('0'));
        }
    }
    if neg { format!("-{out}") } else { out }
}

// --- writing -------------------------------------------------------------------------------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, num: u64, wire: u64) {
    put_varint(out, (num << 3) | wire);
}

/// Appends field `num` as a length-delimited value.
pub fn put_bytes(out: &mut Vec<u8>, num: u64, b: &[u8]) {
    put_key(out, num, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A value that does not fit its field's type: the object cannot be written as protobuf.
#[derive(Debug)]
pub struct EncodeError(pub String);

fn put_scalar(out: &mut Vec<u8>, num: u64, ty: &str, v: &Value) -> Result<(), EncodeError> {
    let bad = || EncodeError(format!("a {ty} field holds {v}"));
    match ty {
        "string" => put_bytes(out, num, v.as_str().ok_or_else(bad)?.as_bytes()),
        "bytes" => {
            let s = v.as_str().ok_or_else(bad)?;
            let raw = crate::validate::decode_go_base64(s).map_err(|_| bad())?;
            put_bytes(out, num, &raw);
        }
        "bool" => {
            put_key(out, num, 0);
            put_varint(out, u64::from(v.as_bool().ok_or_else(bad)?));
        }
        "int32" | "int64" => {
            put_key(out, num, 0);
            let n = v
                .as_i64()
                .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(bad)?;
            put_varint(out, n as u64);
        }
        "uint32" | "uint64" => {
            put_key(out, num, 0);
            put_varint(out, v.as_u64().ok_or_else(bad)?);
        }
        "double" => {
            put_key(out, num, 1);
            out.extend_from_slice(&v.as_f64().ok_or_else(bad)?.to_bits().to_le_bytes());
        }
        "float" => {
            put_key(out, num, 5);
            out.extend_from_slice(&(v.as_f64().ok_or_else(bad)? as f32).to_bits().to_le_bytes());
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// Encodes the JSON object `v` as the message `name` (fields the message lacks are left out,
/// as Go's JSON reader drops them).
pub fn encode(name: &str, v: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    if encode_special(name, v, &mut out)? {
        return Ok(out);
    }
    let Some(msg) = table().get(name) else {
        return Err(EncodeError(format!("no message type {name}")));
    };
    if msg.wrapper {
        if let Some((num, f)) = msg.by_json("items") {
            for item in v.as_array().into_iter().flatten() {
                put_value(&mut out, num, &f.ty, item)?;
            }
        }
        return Ok(out);
    }
    let Some(obj) = v.as_object() else {
        return Err(EncodeError(format!("{name} is not an object: {v}")));
    };
    let mut numbered: Vec<(u64, &Field, &Value)> = obj
        .iter()
        .filter_map(|(k, val)| msg.by_json(k).map(|(n, f)| (n, f, val)))
        .collect();
    numbered.sort_by_key(|(n, _, _)| *n);
    for (num, f, val) in numbered {
        if val.is_null() {
            continue;
        }
        match f.card {
            Card::Optional => put_value(&mut out, num, &f.ty, val)?,
            Card::Repeated => {
                for item in val.as_array().into_iter().flatten() {
                    put_value(&mut out, num, &f.ty, item)?;
                }
            }
            Card::Map => {
                let mut keys: Vec<(&String, &Value)> =
                    val.as_object().into_iter().flatten().collect();
                keys.sort_by(|a, b| a.0.cmp(b.0));
                for (k, item) in keys {
                    let mut entry = Vec::new();
                    put_bytes(&mut entry, 1, k.as_bytes());
                    put_value(&mut entry, 2, &f.ty, item)?;
                    put_bytes(&mut out, num, &entry);
                }
            }
        }
    }
    Ok(out)
}

fn put_value(out: &mut Vec<u8>, num: u64, ty: &str, v: &Value) -> Result<(), EncodeError> {
    if is_scalar(ty) {
        put_scalar(out, num, ty, v)
    } else {
        let inner = encode(ty, v)?;
        put_bytes(out, num, &inner);
        Ok(())
    }
}

fn encode_special(name: &str, v: &Value, out: &mut Vec<u8>) -> Result<bool, EncodeError> {
    let Some(short) = name.strip_prefix("k8s.io.apimachinery.pkg.") else {
        return Ok(false);
    };
    let bad = || EncodeError(format!("{name} cannot hold {v}"));
    match short {
        "apis.meta.v1.Time" | "apis.meta.v1.MicroTime" => {
            let s = v.as_str().ok_or_else(bad)?;
            let ts: jiff::Timestamp = s.parse().map_err(|_| bad())?;
            put_key(out, 1, 0);
            put_varint(out, ts.as_second() as u64);
            if ts.subsec_nanosecond() != 0 {
                put_key(out, 2, 0);
                put_varint(out, ts.subsec_nanosecond() as i64 as u64);
            }
        }
        "api.resource.Quantity" | "api.resource.QuantityValue" => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(bad()),
            };
            put_bytes(out, 1, s.as_bytes());
        }
        "util.intstr.IntOrString" => match v {
            Value::String(s) => {
                put_key(out, 1, 0);
                put_varint(out, 1);
                put_bytes(out, 3, s.as_bytes());
            }
            Value::Number(n) => {
                put_key(out, 1, 0);
                put_varint(out, 0);
                put_key(out, 2, 0);
                put_varint(out, n.as_i64().ok_or_else(bad)? as u64);
            }
            _ => return Err(bad()),
        },
        "runtime.RawExtension" | "apis.meta.v1.FieldsV1" => {
            put_bytes(out, 1, &serde_json::to_vec(v).unwrap_or_default());
        }
        "apis.meta.v1.Duration" => return Err(EncodeError("Duration is not written".into())),
        _ => return Ok(false),
    }
    Ok(true)
}

/// The message name of `kind` in `api_version` (core `v1`, or `group/version`), if the table has
/// it; request options such as DeleteOptions are meta/v1 messages whatever group sent them.
pub fn message_for(api_version: &str, kind: &str) -> Option<String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let package = match group {
        "" => "core",
        "meta.k8s.io" => return has_meta(kind),
        g => g.split('.').next().unwrap_or(g),
    };
    let name = format!("k8s.io.api.{package}.{version}.{kind}");
    if has(&name) {
        return Some(name);
    }
    has_meta(kind)
}

fn has_meta(kind: &str) -> Option<String> {
    let name = format!("{META}.{kind}");
    (kind.ends_with("Options") || kind == "Status")
        .then_some(name)
        .filter(|n| has(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_of_a_deployment() {
        let d = json!({
            "metadata": { "name": "web", "labels": { "app": "web" },
                          "creationTimestamp": "2024-01-02T03:04:05Z" },
            "spec": {
                "replicas": 0,
                "selector": { "matchLabels": { "app": "web" } },
                "strategy": { "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 1 } },
                "template": {
                    "metadata": { "labels": { "app": "web" } },
                    "spec": { "containers": [{
                        "name": "nginx", "image": "nginx",
                        "ports": [{ "containerPort": 80 }],
                        "resources": { "limits": { "cpu": "500m" } },
                    }] },
                },
            },
        });
        let name = message_for("apps/v1", "Deployment").unwrap();
        let bytes = encode(&name, &d).unwrap();
        let back = decode(&name, &bytes).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn truncated_is_unexpected_eof() {
        let name = message_for("v1", "ConfigMap").unwrap();
        let bytes = encode(&name, &json!({ "data": { "a": "b" } })).unwrap();
        let e = decode(&name, &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(e.0, "unexpected EOF");
    }

    #[test]
    fn durations_as_go_prints_them() {
        assert_eq!(go_duration(90 * 1_000_000_000), "1m30s");
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
    }
}
