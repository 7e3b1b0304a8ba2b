//! The typed checks the API server makes on ConfigMaps and Secrets: values must decode as the Go
//! types (`map[string]string`, `map[string][]byte`), keys must be valid config keys, and a
//! Secret's `stringData` is folded into `data` so it is never stored or returned.
//!
//! Decoding failures are what the real server answers before validation runs: 400 BadRequest
//! "<Kind> in version "v1" cannot be handled as a <Kind>: …". Key and size problems are 422 Invalid
//! naming the field, like its validation.

use base64::Engine;
use serde_json::{Map, Value};

use crate::error::{ApiError, Cause, Target};

/// Go's `base64.StdEncoding`: padded, lenient about the unused bits of the last symbol.
const GO_STD: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
);

/// The most a ConfigMap's or Secret's data may hold in total.
const MAX_DATA: usize = 1024 * 1024;

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn undecodable(kind: &str, detail: String) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"v1\" cannot be handled as a {kind}: {detail}"
    ))
}

fn wrong_type(kind: &str, field: &str, got: &Value, go_type: &str) -> ApiError {
    undecodable(
        kind,
        format!(
            "json: cannot unmarshal {} into Go struct field {kind}.{field} of type {go_type}",
            json_type(got)
        ),
    )
}

/// Decodes base64 like Go's encoding/json does for `[]byte` (which skips CR and LF).
pub fn decode_go_base64(s: &str) -> Result<Vec<u8>, String> {
    let cleaned: String;
    let input = if s.contains(['\r', '\n']) {
        cleaned = s.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        cleaned.as_str()
    } else {
        s
    };
    GO_STD.decode(input).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(at, _)
            | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            base64::DecodeError::InvalidLength(len) => len - len % 4,
            // Go reports where the unfinished quantum starts.
            base64::DecodeError::InvalidPadding if input.len() % 4 != 0 => {
                input.len() - input.len() % 4
            }
            base64::DecodeError::InvalidPadding => input.len().saturating_sub(1),
        };
        format!("illegal base64 data at input byte {at}")
    })
}

pub fn encode_base64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Kubernetes' `IsConfigMapKey`.
fn config_key_problem(key: &str) -> Option<String> {
    if key.is_empty() || key.len() > 253 {
        return Some(if key.is_empty() {
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".into()
        } else {
            "must be no more than 253 characters".into()
        });
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Some("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".into());
    }
    match key {
        "." => Some("must not be '.'".into()),
        ".." => Some("must not be '..'".into()),
        k if k.starts_with("..") => Some("must not start with '..'".into()),
        _ => None,
    }
}

fn map_field<'a>(
    obj: &'a Map<String, Value>,
    kind: &str,
    field: &str,
    go_type: &str,
) -> Result<Option<&'a Map<String, Value>>, ApiError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(wrong_type(kind, field, other, go_type)),
    }
}

/// Checks a ConfigMap: `data` values are strings, `binaryData` values base64 (stored in
/// canonical form), keys valid and not repeated across the two maps, size within 1 MiB.
pub fn config_map(obj: &mut Value, t: &Target) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Ok(());
    };
    let kind = "ConfigMap";
    let mut causes = Vec::new();
    let mut size = 0usize;
    let mut data_keys = Vec::new();
    if let Some(data) = map_field(map, kind, "data", "map[string]string")? {
        for (k, v) in data {
            match v {
                Value::String(s) => size += k.len() + s.len(),
                Value::Null => {}
                other => return Err(wrong_type(kind, "data", other, "string")),
            }
            data_keys.push(k.clone());
        }
    }
    let mut binary: Option<Map<String, Value>> = None;
    if let Some(bin) = map_field(map, kind, "binaryData", "map[string][]uint8")? {
        let mut canonical = Map::new();
        for (k, v) in bin {
            let bytes = match v {
                Value::String(s) => {
                    decode_go_base64(s).map_err(|e| undecodable(kind, e.to_string()))?
                }
                Value::Null => Vec::new(),
                other => return Err(wrong_type(kind, "binaryData", other, "[]uint8")),
            };
            size += k.len() + bytes.len();
            if data_keys.contains(k) {
                causes.push(Cause::invalid(
                    format!("data[{k}]"),
                    k,
                    "duplicate of key present in binaryData",
                ));
            }
            if let Some(p) = config_key_problem(k) {
                causes.push(Cause::invalid(format!("binaryData[{k}]"), k, &p));
            }
            canonical.insert(k.clone(), Value::String(encode_base64(&bytes)));
        }
        binary = Some(canonical);
    }
    for k in &data_keys {
        if let Some(p) = config_key_problem(k) {
            causes.push(Cause::invalid(format!("data[{k}]"), k, &p));
        }
    }
    if size > MAX_DATA {
        causes.push(too_long("data"));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(t, causes));
    }
    // null values decode to "" in Go.
    if let Some(Value::Object(data)) = map.get_mut("data") {
        for v in data.values_mut() {
            if v.is_null() {
                *v = Value::String(String::new());
            }
        }
    }
    if let Some(b) = binary {
        map.insert("binaryData".into(), Value::Object(b));
    }
    Ok(())
}

fn too_long(field: &str) -> Cause {
    Cause {
        field: field.into(),
        reason: "FieldValueTooLong",
        message: format!("Too long: may not be more than {MAX_DATA} bytes"),
    }
}

/// Checks a Secret and folds `stringData` into `data` (its keys win), as the API server does
/// before storing: `stringData` is write-only and never stored or returned.
pub fn secret(obj: &mut Value, t: &Target) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Ok(());
    };
    let kind = "Secret";
    let mut data: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(d) = map_field(map, kind, "data", "map[string][]uint8")? {
        for (k, v) in d {
            let bytes = match v {
                Value::String(s) => {
                    decode_go_base64(s).map_err(|e| undecodable(kind, e.to_string()))?
                }
                Value::Null => Vec::new(),
                other => return Err(wrong_type(kind, "data", other, "[]uint8")),
            };
            data.push((k.clone(), bytes));
        }
    }
    if let Some(sd) = map_field(map, kind, "stringData", "map[string]string")? {
        for (k, v) in sd {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => return Err(wrong_type(kind, "stringData", other, "string")),
            };
            match data.iter_mut().find(|(dk, _)| dk == k) {
                Some(slot) => slot.1 = s.into_bytes(),
                None => data.push((k.clone(), s.into_bytes())),
            }
        }
    }
    let mut causes = Vec::new();
    let mut size = 0usize;
    for (k, v) in &data {
        size += k.len() + v.len();
        if let Some(p) = config_key_problem(k) {
            causes.push(Cause::invalid(format!("data[{k}]"), k, &p));
        }
    }
    if size > MAX_DATA {
        causes.push(too_long("data"));
    }
    let has = |key: &str| data.iter().any(|(k, _)| k == key);
    let required = |causes: &mut Vec<Cause>, key: &str| {
        if !has(key) {
            causes.push(Cause::required(format!("data[{key}]"), ""));
        }
    };
    match map.get("type").and_then(Value::as_str).unwrap_or("Opaque") {
        "kubernetes.io/tls" => {
            required(&mut causes, "tls.crt");
            required(&mut causes, "tls.key");
        }
        "kubernetes.io/dockerconfigjson" => required(&mut causes, ".dockerconfigjson"),
        "kubernetes.io/dockercfg" => required(&mut causes, ".dockercfg"),
        "kubernetes.io/ssh-auth" => required(&mut causes, "ssh-privatekey"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(Cause::required(
                "data[username]",
                "either username or password is required",
            ));
        }
        _ => {}
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(t, causes));
    }
    map.remove("stringData");
    if data.is_empty() && !map.contains_key("data") {
        return Ok(());
    }
    let encoded: Map<String, Value> = data
        .into_iter()
        .map(|(k, v)| (k, Value::String(encode_base64(&v))))
        .collect();
    map.insert("data".into(), Value::Object(encoded));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_base64_rules() {
        assert_eq!(decode_go_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_go_base64("aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(
            decode_go_base64("aGVsbG8").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            decode_go_base64("not base64!").unwrap_err(),
            "illegal base64 data at input byte 3"
        );
    }

    #[test]
    fn config_keys() {
        assert!(config_key_problem("app.properties").is_none());
        assert!(config_key_problem("bad key").is_some());
        assert!(config_key_problem("..x").is_some());
        assert!(config_key_problem("").is_some());
    }
}
