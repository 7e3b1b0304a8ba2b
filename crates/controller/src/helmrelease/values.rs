//! A HelmRelease's values, composed in Flux's order (fluxcd/pkg `chartutil`'s
//! `ChartValuesFromReferences`): each `valuesFrom` entry in turn (a YAML document merged over
//! what came before, or, with `targetPath`, one value set at that path in `--set` syntax), then
//! the inline `spec.values` over everything; and the digest Flux records of
//! the result (`lastAttemptedConfigDigest`, a snapshot's `configDigest`).

use ferroflux_api::helmrelease::{ValuesKind, ValuesReference};
use ferroflux_helm::{ValueOptions, load_values, merge_maps};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The key read when a reference names none.
pub const DEFAULT_VALUES_KEY: &str = "values.yaml";

/// Why a `valuesFrom` entry could not be used; the message reads as Flux's
/// (`could not resolve ConfigMap chart values reference 'apps/podinfo-values' with key
/// 'values.yaml': resource not found`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesError {
    /// `ConfigMap` or `Secret`, as the reference names it.
    pub kind: &'static str,
    /// The HelmRelease's namespace, where the referenced object is looked up.
    pub namespace: String,
    /// The referenced object's name.
    pub name: String,
    /// The data key read ([`DEFAULT_VALUES_KEY`] when the reference names none).
    pub key: String,
    /// The reference is `optional`: the message says so, as Flux's does.
    pub optional: bool,
    /// What went wrong: not found, key missing, YAML that does not parse...
    pub reason: String,
}

impl std::fmt::Display for ValuesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let optional = if self.optional { " optional" } else { "" };
        write!(
            f,
            "could not resolve{optional} {} chart values reference '{}/{}' with key '{}': {}",
            self.kind, self.namespace, self.name, self.key, self.reason
        )
    }
}

impl std::error::Error for ValuesError {}

/// The data of a ConfigMap or Secret a reference names, as fetched: `None` when it does not
/// exist.
pub type Fetched = Option<BTreeMap<String, Vec<u8>>>;

/// Composes the values from the fetched objects (looked up by `(kind, name)`) and the inline
/// values. Pure: the caller fetches (see [`fetch`]).
pub fn compose(
    namespace: &str,
    refs: &[ValuesReference],
    objects: &BTreeMap<(ValuesKind, String), Fetched>,
    inline: Option<&Value>,
) -> Result<Map<String, Value>, ValuesError> {
    let inline: Map<String, Value> = match inline {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let mut result = Map::new();
    for r in refs {
        let key = r
            .values_key
            .clone()
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| DEFAULT_VALUES_KEY.into());
        let optional = r.optional.unwrap_or(false);
        let error = |reason: String| ValuesError {
            kind: r.kind.as_str(),
            namespace: namespace.to_string(),
            name: r.name.clone(),
            key: key.clone(),
            optional,
            reason,
        };
        let Some(Some(data)) = objects.get(&(r.kind, r.name.clone())) else {
            if optional {
                tracing::info!("{}", error("resource not found".into()));
                continue;
            }
            return Err(error("resource not found".into()));
        };
        let Some(bytes) = data.get(&key) else {
            if optional {
                tracing::info!("{}", error("key not found".into()));
                continue;
            }
            return Err(error("key not found".into()));
        };
        let text = String::from_utf8_lossy(bytes).into_owned();
        match r.target_path.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => {
                // As Flux: the inline values are merged in before the value is set (and once
                // more at the end, so they still win where they set the same path).
                result = merge_maps(result, inline.clone());
                let set = set_path(path, &text, r.literal.unwrap_or(false))
                    .map_err(|e| error(format!("failed to merge value: {e}")))?;
                result = merge_maps(result, set);
            }
            None => {
                let values = load_values(&text)
                    .map_err(|e| error(format!("failed to read values data: {e}")))?;
                result = merge_maps(result, values);
            }
        }
    }
    Ok(merge_maps(result, inline))
}

/// One value at `path` as `--set path=value` reads it (`--set-string` when the value is quoted,
/// as Flux's `ReplacePathValue` does; `--set-literal` for `literal: true`).
fn set_path(path: &str, value: &str, literal: bool) -> Result<Map<String, Value>, String> {
    let mut options = ValueOptions::default();
    let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
    if literal {
        options.literal_values.push(format!("{path}={value}"));
    } else if quoted('\'') || quoted('"') {
        let inner = value.trim_matches(|c| c == '\'' || c == '"');
        options.string_values.push(format!("{path}={inner}"));
    } else {
        options.values.push(format!("{path}={value}"));
    }
    options.merge()
}

/// Reads every ConfigMap and Secret `refs` name from `namespace`, once each.
pub async fn fetch(
    client: &kube::Client,
    namespace: &str,
    refs: &[ValuesReference],
) -> Result<BTreeMap<(ValuesKind, String), Fetched>, kube::Error> {
    let mut out = BTreeMap::new();
    for r in refs {
        let index = (r.kind, r.name.clone());
        if out.contains_key(&index) {
            continue;
        }
        let data: Fetched = match r.kind {
            ValuesKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
                api.get_opt(&r.name).await?.map(|cm| {
                    let mut data: BTreeMap<String, Vec<u8>> = cm
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.into_bytes()))
                        .collect();
                    for (k, v) in cm.binary_data.unwrap_or_default() {
                        data.entry(k).or_insert(v.0);
                    }
                    data
                })
            }
            ValuesKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
                api.get_opt(&r.name).await?.map(|s| {
                    let mut data: BTreeMap<String, Vec<u8>> = s
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0))
                        .collect();
                    for (k, v) in s.string_data.unwrap_or_default() {
                        data.insert(k, v.into_bytes());
                    }
                    data
                })
            }
        };
        out.insert(index, data);
    }
    Ok(out)
}

/// Flux's digest of values: `sha256:` and the hex SHA-256 of their JSON as Go's encoder writes
/// it (map keys sorted, `<`, `>` and `&` escaped).
pub fn digest(values: &Map<String, Value>) -> String {
    let mut json = String::new();
    go_json(&Value::Object(values.clone()), &mut json);
    let sum = Sha256::digest(json.as_bytes());
    let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn go_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(k, out);
                out.push(':');
                go_json(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(v, out);
            }
            out.push(']');
        }
        Value::String(s) => go_string(s, out),
        // Go's encoder writes a whole float64 below 1e21 without a fraction or exponent.
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                out.push_str(&format!("{f:.0}"))
            }
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

fn go_string(s: &str, out: &mut String) {
    // serde_json escapes what JSON requires; Go also escapes HTML's three characters and the
    // two line separators JavaScript refuses.
    let quoted = Value::String(s.to_string()).to_string();
    for c in quoted.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests;
