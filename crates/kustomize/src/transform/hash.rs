//! The content-hash name suffix of generated ConfigMaps and Secrets: SHA-256 over a JSON
//! encoding of kind, name, data (and type for Secrets), first ten hex digits with a few letters
//! substituted, exactly as kustomize computes it.

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::fsys::Fs;
use crate::resource::Res;

pub fn add_hashes(res: &mut [Res], _kfile: &Path, _fs: &Fs) -> Result<()> {
    for r in res.iter_mut() {
        if !r.needs_hash {
            continue;
        }
        let h = hash_of(r);
        r.store_previous_id();
        let name = format!("{}-{}", r.name(), h);
        r.set_name(&name);
        r.needs_hash = false;
    }
    Ok(())
}

fn field(obj: &Value, name: &str) -> Value {
    match obj.get(name) {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(v) => v.clone(),
    }
}

pub fn hash_of(r: &Res) -> String {
    // kustomize looks the name up with a single path segment "metadata/name", which never
    // matches, so the name always hashes as "".
    let name = Value::String(String::new());
    // Keys in Go's sorted map order.
    let mut entries: Vec<(&str, Value)> = Vec::new();
    if r.kind() == "Secret" {
        entries.push(("data", field(&r.obj, "data")));
        entries.push(("kind", Value::String("Secret".into())));
        entries.push(("name", name));
        if let Some(v @ Value::Object(_)) = r.obj.get("stringData") {
            entries.push(("stringData", v.clone()));
        }
        entries.push(("type", field(&r.obj, "type")));
    } else if r.kind() == "ConfigMap" {
        if let Some(v @ Value::Object(_)) = r.obj.get("binaryData") {
            entries.push(("binaryData", v.clone()));
        }
        entries.push(("data", field(&r.obj, "data")));
        entries.push(("kind", Value::String("ConfigMap".into())));
        entries.push(("name", name));
    } else {
        let mut s = String::new();
        go_json(&r.obj, &mut s);
        return encode(&s);
    }
    let mut s = String::from("{");
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        go_json_str(k, &mut s);
        s.push(':');
        go_json(v, &mut s);
    }
    s.push('}');
    encode(&s)
}

fn encode(s: &str) -> String {
    let digest = Sha256::digest(s.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..10]
        .chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            o => o,
        })
        .collect()
}

/// Go's `encoding/json` output: sorted keys, HTML-safe escaping.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => go_json_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_str(k, out);
                out.push(':');
                go_json(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn go_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
