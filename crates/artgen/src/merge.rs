//! The `Merge` strategy: YAML deep merge as Helm merges values files (maps merged key by key,
//! lists and scalars replaced), written back with sorted keys as source-watcher's
//! `sigs.k8s.io/yaml` does. Every document of a multi-document file is merged into one map.

use serde_json::{Map, Value};

/// Merges the YAML `overlay` into `base` and returns the merged YAML.
pub fn merge_yaml(base: &[u8], overlay: &[u8]) -> Result<String, String> {
    let merged = merge_maps(load(base, "destination")?, load(overlay, "source")?);
    serde_saphyr::to_string(&Value::Object(sorted(merged))).map_err(|e| e.to_string())
}

fn load(bytes: &[u8], what: &str) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("{what} is not UTF-8: {e}"))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| format!("cannot unmarshal {what} YAML document: {e}"))?;
    let mut out = Map::new();
    for doc in docs {
        match doc {
            Value::Object(m) => out = merge_maps(out, m),
            Value::Null => {}
            other => {
                return Err(format!(
                    "cannot unmarshal {what} YAML document: a map is expected, got {}",
                    kind(&other)
                ));
            }
        }
    }
    Ok(out)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        _ => "a value",
    }
}

fn merge_maps(mut base: Map<String, Value>, overlay: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in overlay {
        match (base.remove(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => {
                base.insert(k, Value::Object(merge_maps(b, o)));
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
    base
}

fn sorted(m: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = m.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
        .into_iter()
        .map(|(k, v)| (k, sort_value(v)))
        .collect()
}

fn sort_value(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(sorted(m)),
        Value::Array(a) => Value::Array(a.into_iter().map(sort_value).collect()),
        v => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_merge_and_lists_are_replaced() {
        let base = b"replicas: 1\nimage:\n  tag: 1.0\n  repo: podinfo\nports: [80, 443]\n";
        let overlay = b"image:\n  tag: '2.0'\nports: [8080]\nenv: prod\n";
        let out = merge_yaml(base, overlay).unwrap();
        let v: Value = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"env": "prod", "image": {"repo": "podinfo", "tag": "2.0"},
                "ports": [8080], "replicas": 1})
        );
        assert!(
            out.find("env").unwrap() < out.find("image").unwrap(),
            "{out}"
        );
    }

    #[test]
    fn a_list_document_is_refused() {
        let err = merge_yaml(b"a: 1\n", b"- x\n").unwrap_err();
        assert!(err.contains("a map is expected, got a list"), "{err}");
    }
}
