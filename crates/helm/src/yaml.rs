//! YAML as Helm reads it: `sigs.k8s.io/yaml` over go-yaml v2 (YAML 1.1 booleans, the first
//! document only), converted to JSON and decoded with `encoding/json`, so every number becomes
//! a float64. The parser and the go-yaml v2 emitter are crates/kustomize's `yaml` module.

use ferroflux_kustomize::yaml::{emit, parse};
use serde_json::{Map, Number, Value};

/// Parses the first YAML document of `text` as `yaml.Unmarshal` into `interface{}` does
/// (`Null` for an empty document), numbers as float64.
pub fn unmarshal(text: &str) -> Result<Value, String> {
    Ok(floats(unmarshal_typed(text)?))
}

/// The first document as go-yaml v2 resolves it (integers stay integers), before the JSON
/// step: what sigs.k8s.io/yaml sees when it decodes into a Go struct, where a number or a bool
/// meant for a string field becomes its text ([`scalar_as_string`]).
pub fn unmarshal_typed(text: &str) -> Result<Value, String> {
    if let Some(message) = crate::goyamlerr::refused_start(text) {
        return Err(message);
    }
    let docs = parse::parse_documents_yaml11_last_key_wins_with_depth(text, GO_JSON_MAX_DEPTH)
        .map_err(|e| crate::goyamlerr::message(text, &e))?;
    Ok(docs.into_iter().next().unwrap_or(Value::Null))
}

/// `encoding/json`'s nesting limit, the deepest a value Helm reads from YAML can be (YAML goes
/// through JSON on its way in). The reader keeps its own stack; the recursive walks over values
/// run on a grown stack ([`crate::util::deep`]).
pub const GO_JSON_MAX_DEPTH: usize = 10_000;

/// sigs.k8s.io/yaml's coercion of a YAML scalar decoded into a Go `string`: integers in
/// decimal, floats with `strconv.FormatFloat(f, 'g', -1, 32)` (so `1.10` is `"1.1"`), bools as
/// `true`/`false`. `None` for maps, lists and null.
pub fn scalar_as_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0) as f32;
            let abs = f.abs();
            Some(if abs == 0.0 || (1e-4..1e21).contains(&abs) {
                // Rust's shortest f32 text, without exponent in this range, as Go's %g.
                format!("{f}")
            } else {
                ferroflux_kustomize::yaml::emit::go_format_g(f as f64)
            })
        }
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
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
pub fn floats(mut v: Value) -> Value {
    floats_in_place(&mut v);
    v
}

/// [`floats`] without rebuilding the containers (a 10,000-deep values file is one map per level).
fn floats_in_place(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().and_then(Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(floats_in_place),
        Value::Object(map) => map.values_mut().for_each(floats_in_place),
        _ => {}
    }
}

/// `yaml.Marshal` of sigs.k8s.io/yaml: JSON first (so map keys sorted, whole float64s as
/// integers), then go-yaml v2's emitter (the emitter's number formatting does the JSON step).
pub fn marshal(v: &Value) -> String {
    emit::render_document(v)
}

/// Helm's `toYamlPretty` (goyaml.v3 with a 2-space indent): like [`marshal`], but a list under
/// a mapping key is indented under it (`l:\n  - 1`). Scalars use go-yaml v2's formatting; a
/// document with a multi-line string falls back to [`marshal`]'s layout.
pub fn marshal_pretty(v: &Value) -> String {
    let mut out = String::new();
    if pretty(v, 0, &mut out).is_none() {
        return marshal(v);
    }
    out
}

fn pretty_scalar(v: &Value) -> Option<String> {
    let text = emit::render_document(v);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    (!text.contains('\n')).then(|| text.to_string())
}

fn pretty(v: &Value, indent: usize, out: &mut String) -> Option<()> {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by(|a, b| emit::natural_cmp(a, b));
            for k in keys {
                let key = pretty_scalar(&Value::String(k.clone()))?;
                match &m[k] {
                    Value::Object(c) if !c.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        pretty(&m[k], indent + 2, out)?;
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        pretty(&m[k], indent + 2, out)?;
                    }
                    other => out.push_str(&format!("{pad}{key}: {}\n", pretty_scalar(other)?)),
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                match item {
                    Value::Object(c) if !c.is_empty() => {
                        let mut inner = String::new();
                        pretty(item, indent + 2, &mut inner)?;
                        out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                    }
                    Value::Array(a) if !a.is_empty() => {
                        let mut inner = String::new();
                        pretty(item, indent + 2, &mut inner)?;
                        out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                    }
                    other => out.push_str(&format!("{pad}- {}\n", pretty_scalar(other)?)),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", pretty_scalar(other)?)),
    }
    Some(())
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
    fn pretty_indents_lists_under_keys() {
        let v = serde_json::json!({"m": {"a": 1}, "l": [1, 2]});
        assert_eq!(marshal_pretty(&v), "l:\n  - 1\n  - 2\nm:\n  a: 1\n");
    }

    #[test]
    fn non_map_document_is_an_error() {
        let e = unmarshal_map("- a\n").err().unwrap_or_default();
        assert!(e.contains("cannot unmarshal array into Go value of type map[string]interface {}"));
    }
}
