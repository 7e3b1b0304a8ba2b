//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), which kubectl 1.32+
//! and client-go's typed clients send for built-in kinds: the 4-byte magic `k8s\0`, then a
//! `runtime.Unknown` message (1: TypeMeta {1 apiVersion, 2 kind}, 2: the object's bytes,
//! 3: contentEncoding, 4: contentType) holding the object as the message `generated.proto`
//! defines for its kind. `schema` holds the messages of every built-in kind of the release.
//!
//! Bodies are decoded into the JSON object the rest of the server works with; answers are
//! encoded back when a client accepts only protobuf. Errors are worded as the API server's
//! decoder words them (`unexpected EOF`; `ConfigMap in version "v1" cannot be handled as a
//! Deployment: …`).

mod schema;

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::resources::Resource;

pub use schema::{DecodeError, EncodeError, put_bytes};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

/// The envelope of a protobuf body.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

fn envelope(body: &[u8]) -> Result<Envelope<'_>, ApiError> {
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        )
    })?;
    let bad = |e: DecodeError| ApiError::bad_request(e.0);
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    for (n, w) in schema::fields(rest).map_err(bad)? {
        match (n, w) {
            (1, schema::Wire::Bytes(tm)) => {
                for (m, g) in schema::fields(tm).map_err(bad)? {
                    let schema::Wire::Bytes(s) = g else { continue };
                    let s = String::from_utf8_lossy(s).into_owned();
                    match m {
                        1 => env.api_version = s,
                        2 => env.kind = s,
                        _ => {}
                    }
                }
            }
            (2, schema::Wire::Bytes(raw)) => env.raw = raw,
            (3, schema::Wire::Bytes(enc)) if !enc.is_empty() => {
                return Err(ApiError::bad_request(format!(
                    "unsupported content encoding {:?} in the protobuf envelope",
                    String::from_utf8_lossy(enc)
                )));
            }
            _ => {}
        }
    }
    Ok(env)
}

/// The version part of an apiVersion (`v1` of `apps/v1`).
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// Decodes a body whose kind the envelope names (request options such as DeleteOptions, and
/// objects posted where the URL says nothing of their kind).
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let env = envelope(body)?;
    let Some(message) = schema::message_for(&env.api_version, &env.kind) else {
        return Err(not_protobuf_kind(&env.api_version, &env.kind));
    };
    let obj = schema::decode(&message, env.raw).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: {}",
            env.kind,
            version_of(&env.api_version),
            env.kind,
            e.0
        ))
    })?;
    Ok(with_type(obj, &env.api_version, &env.kind))
}

/// Decodes the body of a write to `res` at `version`: the envelope's kind must be the
/// resource's (the API server cannot convert one kind into another), and a body without a kind
/// takes the URL's.
pub fn decode_for(body: &[u8], res: &Resource, version: &str) -> Result<Value, ApiError> {
    let env = envelope(body)?;
    let (api_version, kind) = if env.kind.is_empty() {
        (res.api_version(version), res.kind.clone())
    } else {
        (env.api_version.clone(), env.kind.clone())
    };
    if kind != res.kind || schema::message_for(&api_version, &kind).is_none() {
        if res.crd.is_some() || schema::message_for(&res.api_version(version), &res.kind).is_none()
        {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({} {} has no protobuf form)",
                res.api_version(version),
                res.kind
            )));
        }
        let group = if res.group.is_empty() {
            "core"
        } else {
            res.group.split('.').next().unwrap_or(&res.group)
        };
        return Err(ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: converting ({}.{kind}) to ({group}.{}): unknown conversion",
            version_of(&api_version),
            res.kind,
            version_of(&api_version),
            res.kind
        )));
    }
    let message = schema::message_for(&api_version, &kind).unwrap_or_default();
    let obj = schema::decode(&message, env.raw).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {}: {}",
            version_of(&api_version),
            res.kind,
            e.0
        ))
    })?;
    Ok(with_type(obj, &api_version, &kind))
}

fn not_protobuf_kind(api_version: &str, kind: &str) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({api_version} {kind} has no protobuf form)"
    ))
}

/// Puts apiVersion and kind first, as the JSON the API server writes has them.
fn with_type(obj: Value, api_version: &str, kind: &str) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!(kind));
    if let Value::Object(m) = obj {
        for (k, v) in m {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// Whether `accept` takes JSON (or anything); if not and it takes protobuf, answers must be
/// protobuf.
pub fn wants_protobuf(accept: &str) -> bool {
    let mut protobuf = false;
    for part in accept.split(',') {
        let media = part.split(';').next().unwrap_or("").trim();
        match media {
            "application/json" | "*/*" | "application/*" | "application/yaml" => return false,
            CONTENT_TYPE => protobuf = true,
            _ => {}
        }
    }
    protobuf
}

/// Whether a watch with this `Accept` is answered in protobuf frames: protobuf comes before any
/// JSON in it (the API server takes the client's first choice it can serve; client-go's typed
/// clients send `application/vnd.kubernetes.protobuf, application/json`).
pub fn prefers_protobuf(accept: &str) -> bool {
    for part in accept.split(',') {
        let media = part.split(';').next().unwrap_or("").trim();
        match media {
            CONTENT_TYPE => return true,
            "application/json" | "*/*" | "application/*" | "application/yaml" => return false,
            _ => {}
        }
    }
    false
}

/// Whether objects of this apiVersion and kind have a protobuf form.
pub fn has_message(api_version: &str, kind: &str) -> bool {
    schema::message_for(api_version, kind).is_some()
}

/// The media type of a protobuf watch stream.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// One frame of a protobuf watch: a 4-byte big-endian length, then a `meta.v1.WatchEvent`
/// (1: type, 2: a `RawExtension` whose bytes are the object as a whole protobuf body, magic and
/// envelope included), as the API server's length-delimited framer writes it.
pub fn watch_frame(event_type: &str, obj: &Value) -> Result<Vec<u8>, EncodeError> {
    let embedded = encode(obj)?;
    let mut raw = Vec::with_capacity(embedded.len() + 8);
    put_bytes(&mut raw, 1, &embedded);
    let mut event = Vec::with_capacity(raw.len() + event_type.len() + 8);
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw);
    let len = u32::try_from(event.len())
        .map_err(|_| EncodeError("a watch event larger than 4 GiB".into()))?;
    let mut out = Vec::with_capacity(event.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&event);
    Ok(out)
}

/// Encodes an object the server answers with as a protobuf body, if its kind has a message.
pub fn encode(obj: &Value) -> Result<Vec<u8>, EncodeError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let message = match kind {
        // Errors and successes of deletes are meta/v1 Status whatever the group.
        "Status" => "k8s.io.apimachinery.pkg.apis.meta.v1.Status".to_string(),
        _ => schema::message_for(api_version, kind)
            .ok_or_else(|| EncodeError(format!("{api_version} {kind} has no protobuf form")))?,
    };
    let raw = schema::encode(&message, obj)?;
    let mut type_meta = Vec::new();
    schema::put_bytes(&mut type_meta, 1, api_version.as_bytes());
    schema::put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    schema::put_bytes(&mut out, 1, &type_meta);
    schema::put_bytes(&mut out, 2, &raw);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(api_version: &str, kind: &str, obj: &Value) -> Vec<u8> {
        let mut o = obj.clone();
        o["apiVersion"] = json!(api_version);
        o["kind"] = json!(kind);
        encode(&o).unwrap()
    }

    #[test]
    fn a_configmap_decodes_with_its_type() {
        let b = body(
            "v1",
            "ConfigMap",
            &json!({ "metadata": { "name": "c" }, "data": { "k": "v" } }),
        );
        let v = decode(&b).unwrap();
        assert_eq!(
            v,
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" }, "data": { "k": "v" } })
        );
    }

    #[test]
    fn delete_options_are_meta_messages() {
        let b = body(
            "v1",
            "DeleteOptions",
            &json!({ "propagationPolicy": "Foreground", "gracePeriodSeconds": 0 }),
        );
        let v = decode(&b).unwrap();
        assert_eq!(v["propagationPolicy"], "Foreground");
        assert_eq!(v["gracePeriodSeconds"], 0);
    }

    #[test]
    fn accept_headers() {
        assert!(wants_protobuf(CONTENT_TYPE));
        assert!(!wants_protobuf(
            "application/vnd.kubernetes.protobuf,application/json"
        ));
        assert!(!wants_protobuf("*/*"));
    }
}
