//! Just enough of the Kubernetes protobuf encoding to accept what kubectl 1.32+ sends for its
//! imperative `create namespace|configmap|secret|serviceaccount` commands (typed clients send
//! protobuf bodies for built-in kinds). Anything else in protobuf is refused with 415 and a
//! message saying to send JSON or YAML.
//!
//! The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown` message (field 1 TypeMeta
//! {1 apiVersion, 2 kind}, field 2 raw bytes of the object). Field numbers below are those of the
//! Kubernetes `generated.proto` files.

use serde_json::{Map, Value, json};

use crate::error::ApiError;

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn unsupported(what: &str) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "this devcluster decodes protobuf only for Namespace, ConfigMap, Secret and ServiceAccount and found {what}; send the object as application/json or application/yaml (for example `kubectl create -f manifest.yaml`)"
    ))
}

fn malformed() -> ApiError {
    ApiError::bad_request("the protobuf request body is malformed")
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, ApiError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or_else(malformed)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(malformed())
}

fn fields(b: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, ApiError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (num, wt) = (key >> 3, key & 7);
        let w = match wt {
            0 => Wire::Varint(varint(b, &mut i)?),
            2 => {
                let len = varint(b, &mut i)? as usize;
                let end = i
                    .checked_add(len)
                    .filter(|e| *e <= b.len())
                    .ok_or_else(malformed)?;
                let s = &b[i..end];
                i = end;
                Wire::Bytes(s)
            }
            1 => {
                i += 8;
                Wire::Fixed
            }
            5 => {
                i += 4;
                Wire::Fixed
            }
            _ => return Err(malformed()),
        };
        if i > b.len() {
            return Err(malformed());
        }
        out.push((num, w));
    }
    Ok(out)
}

fn text(w: &Wire) -> Result<String, ApiError> {
    match w {
        Wire::Bytes(b) => String::from_utf8(b.to_vec()).map_err(|_| malformed()),
        _ => Err(malformed()),
    }
}

fn bytes<'a>(w: &Wire<'a>) -> Result<&'a [u8], ApiError> {
    match w {
        Wire::Bytes(b) => Ok(b),
        _ => Err(malformed()),
    }
}

fn b64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// A map entry (key = 1, value = 2); `binary` values become base64 as JSON carries them.
fn map_entry(w: &Wire, binary: bool, into: &mut Map<String, Value>) -> Result<(), ApiError> {
    let mut k = String::new();
    let mut v = Value::String(String::new());
    for (n, f) in fields(bytes(w)?)? {
        match n {
            1 => k = text(&f)?,
            2 if binary => v = json!(b64(bytes(&f)?)),
            2 => v = json!(text(&f)?),
            _ => {}
        }
    }
    into.insert(k, v);
    Ok(())
}

fn object_meta(b: &[u8]) -> Result<Value, ApiError> {
    let mut m = Map::new();
    let (mut labels, mut annotations, mut finalizers) = (Map::new(), Map::new(), Vec::new());
    for (n, f) in fields(b)? {
        match n {
            1 => drop(m.insert("name".into(), json!(text(&f)?))),
            2 => drop(m.insert("generateName".into(), json!(text(&f)?))),
            3 => drop(m.insert("namespace".into(), json!(text(&f)?))),
            // selfLink, uid, resourceVersion, generation, timestamps: server-owned, ignored.
            4..=10 => {}
            11 => map_entry(&f, false, &mut labels)?,
            12 => map_entry(&f, false, &mut annotations)?,
            14 => finalizers.push(json!(text(&f)?)),
            other => return Err(unsupported(&format!("metadata field {other}"))),
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Ok(Value::Object(m))
}

/// The spec of a SelfSubjectAccessReview (`kubectl auth can-i`): field 2 of the review, with
/// ResourceAttributes (1) or NonResourceAttributes (2).
fn access_review_spec(raw: &[u8]) -> Result<Value, ApiError> {
    const RESOURCE: [&str; 7] = [
        "namespace",
        "verb",
        "group",
        "version",
        "resource",
        "subresource",
        "name",
    ];
    const NON_RESOURCE: [&str; 2] = ["path", "verb"];
    let mut spec = Map::new();
    for (n, f) in fields(raw)? {
        if n != 2 {
            continue;
        }
        for (m, g) in fields(bytes(&f)?)? {
            let (key, names): (&str, &[&str]) = match m {
                1 => ("resourceAttributes", &RESOURCE),
                2 => ("nonResourceAttributes", &NON_RESOURCE),
                _ => continue,
            };
            let mut attrs = Map::new();
            for (k, h) in fields(bytes(&g)?)? {
                // Field and label selectors (8, 9) do not narrow RBAC; they are left out.
                if let Some(name) = usize::try_from(k)
                    .ok()
                    .and_then(|k| names.get(k.wrapping_sub(1)))
                {
                    attrs.insert(name.to_string(), json!(text(&h)?));
                }
            }
            spec.insert(key.into(), Value::Object(attrs));
        }
    }
    Ok(Value::Object(spec))
}

/// Decodes a `k8s\0`-enveloped protobuf body into the JSON object it encodes.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let rest = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| ApiError::bad_request("a protobuf body must start with the k8s envelope"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, f) in fields(rest)? {
        match n {
            1 => {
                for (m, g) in fields(bytes(&f)?)? {
                    match m {
                        1 => api_version = text(&g)?,
                        2 => kind = text(&g)?,
                        _ => {}
                    }
                }
            }
            2 => raw = bytes(&f)?,
            _ => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    if api_version == "authorization.k8s.io/v1" && kind == "SelfSubjectAccessReview" {
        obj.insert("spec".into(), access_review_spec(raw)?);
        return Ok(Value::Object(obj));
    }
    if api_version != "v1"
        || !matches!(
            kind.as_str(),
            "Namespace" | "ConfigMap" | "Secret" | "ServiceAccount"
        )
    {
        return Err(unsupported(&format!("{api_version} {kind}")));
    }
    let (mut data, mut binary, mut string_data) = (Map::new(), Map::new(), Map::new());
    for (n, f) in fields(raw)? {
        match (kind.as_str(), n) {
            (_, 1) => drop(obj.insert("metadata".into(), object_meta(bytes(&f)?)?)),
            ("ConfigMap", 2) => map_entry(&f, false, &mut data)?,
            ("ConfigMap", 3) => map_entry(&f, true, &mut binary)?,
            ("ConfigMap", 4) | ("Secret", 5) => {
                if let Wire::Varint(v) = f {
                    obj.insert("immutable".into(), json!(v != 0));
                }
            }
            ("Secret", 2) => map_entry(&f, true, &mut data)?,
            ("Secret", 3) => drop(obj.insert("type".into(), json!(text(&f)?))),
            ("Secret", 4) => map_entry(&f, false, &mut string_data)?,
            ("ServiceAccount", 4) => {
                if let Wire::Varint(v) = f {
                    obj.insert("automountServiceAccountToken".into(), json!(v != 0));
                }
            }
            ("Namespace", 2) => {
                let mut fins = Vec::new();
                for (m, g) in fields(bytes(&f)?)? {
                    if m == 1 {
                        fins.push(json!(text(&g)?));
                    }
                }
                if !fins.is_empty() {
                    obj.insert("spec".into(), json!({ "finalizers": fins }));
                }
            }
            ("Namespace", 3) => {}
            (k, other) => return Err(unsupported(&format!("{k} field {other}"))),
        }
    }
    if !data.is_empty() {
        obj.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        obj.insert("binaryData".into(), Value::Object(binary));
    }
    if !string_data.is_empty() {
        obj.insert("stringData".into(), Value::Object(string_data));
    }
    Ok(Value::Object(obj))
}
