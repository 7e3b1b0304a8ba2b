//! Objects as flux prints them for `create --export`, `export` and `debug`: YAML with every
//! map's keys sorted (flux marshals Go structs through JSON, and sigs.k8s.io/yaml writes the
//! keys of each map in order), each document after a `---` line.

use serde_json::Value;

/// `v` with the keys of every map sorted; lists keep their order.
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// One document: `---`, then `object`'s YAML as given (callers sort with [`sorted`]).
pub fn document(object: &Value) -> String {
    format!(
        "---\n{}",
        ferroflux_kustomize::render_yaml(std::slice::from_ref(object))
    )
}
