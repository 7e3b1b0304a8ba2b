//! Go's `%v` printing and type names for decoded values (`map[string]interface {}` and
//! friends), used in Helm's messages.

use serde_json::Value;

/// Go's `fmt.Sprint` of a value decoded from JSON/YAML: maps as `map[k:v ...]` with sorted keys,
/// lists as `[a b]`, nil as `<nil>`, float64 with `%g`'s shortest form.
pub fn go_print(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write(&map[k], out);
            }
            out.push(']');
        }
    }
}

/// A number as Go prints it: int64 in decimal, float64 with `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn go_number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(0.0);
        if f.is_infinite() {
            return if f > 0.0 {
                "+Inf".into()
            } else {
                "-Inf".into()
            };
        }
        if f.is_nan() {
            return "NaN".into();
        }
        ferroflux_kustomize::yaml::emit::go_format_g(f)
    } else {
        n.to_string()
    }
}

/// Go's type name of a decoded value (`%T`).
pub fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
