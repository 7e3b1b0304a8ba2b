//! YAML as Helm reads it: `sigs.k8s.io/yaml` over go-yaml v2 (YAML 1.1 booleans, the first
//! document only), converted to JSON and decoded with `encoding/json`, so every number becomes
//! a float64. The parser and the go-yaml v2 emitter are crates/kustomize's `yaml` module.

use ferroflux_kustomize::yaml::{emit, parse};
use serde_json::{Map, Number, Value};

/// Parses the first YAML document of `text` as `yaml.Unmarshal` into `interface{}` does
/// (`Null` for an empty document), numbers as float64.
pub fn unmarshal(text: &str) -> Result<Value, String> {
    let docs = parse::parse_documents_yaml11(text).map_err(|e| {
        format!(
            "error converting YAML to JSON: yaml: line {}: {}",
            e.line, e.message
        )
    })?;
    Ok(docs.into_iter().next().map(floats).unwrap_or(Value::Null))
}

/// Parses `text` as one YAML document into a map, as `yaml.Unmarshal(data, &map[string]any{})`
/// does: `null` or empty gives an empty map, anything else but a mapping is an error.
pub fn unmarshal_map(text: &str) -> Result<Map<String, Value>, String> {
    match unmarshal(text)? {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m),
        other => Err(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        )),
    }
}

/// The word `encoding/json` uses for a JSON value's kind in "cannot unmarshal X" errors.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every number as a float64, as `encoding/json` decodes numbers into `interface{}`.
pub fn floats(v: Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::Number(n)),
        Value::Array(items) => Value::Array(items.into_iter().map(floats).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, floats(v))).collect()),
        other => other,
    }
}

/// `yaml.Marshal` of sigs.k8s.io/yaml: JSON first (so map keys sorted, whole float64s as
/// integers), then go-yaml v2's emitter (the emitter's number formatting does the JSON step).
pub fn marshal(v: &Value) -> String {
    emit::render_document(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_floats_and_yaml11_booleans() {
        let v = unmarshal("a: 3\nb: yes\nc: '3'\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(v["a"].as_number().is_some_and(|n| n.is_f64()));
        assert_eq!(v["b"], Value::Bool(true));
        assert_eq!(v["c"], Value::String("3".into()));
    }

    #[test]
    fn marshal_sorts_and_prints_whole_floats_as_ints() {
        let v = unmarshal("b: 3\na: 1.5\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(marshal(&v), "a: 1.5\nb: 3\n");
    }

    #[test]
    fn non_map_document_is_an_error() {
        let e = unmarshal_map("- a\n").err().unwrap_or_default();
        assert!(e.contains("cannot unmarshal array into Go value of type map[string]interface {}"));
    }
}
