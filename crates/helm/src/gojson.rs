//! Go's `encoding/json.Marshal` output for a JSON value: object keys sorted (Go marshals maps
//! in key order), `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`…, and float64 in Go's
//! notation (`1e+21`, `1e-7`). Used by `toJson` and `mustToJson`.

use serde_json::Value;

/// `json.Marshal(v)` as text.
pub fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                write(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// Go's float64 JSON form: `%f`-like between 1e-6 and 1e21, else `%e` with a short exponent.
fn number(n: &serde_json::Number) -> String {
    if !n.is_f64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let g = ferroflux_kustomize::yaml::emit::go_format_g(f);
        // Go writes e-07 as e-7 in JSON.
        if let Some(i) = g.find("e-0") {
            return format!("{}e-{}", &g[..i], &g[i + 3..]);
        }
        return g;
    }
    if f.fract() == 0.0 {
        return format!("{f:.0}");
    }
    // Shortest representation that reads back the same, in plain decimal notation.
    let s = format!("{f}");
    if s.contains('e') {
        format!("{f:.20}").trim_end_matches('0').to_string()
    } else {
        s
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    // A Go string's bytes that are not UTF-8 (gotemplate's `gostr` form) each become `\ufffd`.
    let bytes = ferroflux_gotemplate::gostr::to_bytes(s);
    for chunk in bytes.utf8_chunks() {
        chars(chunk.valid(), out);
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

fn chars(s: &str, out: &mut String) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn like_go() {
        assert_eq!(
            marshal(&json!({"b": 1.5, "a": "<x&y>"})),
            r#"{"a":"\u003cx\u0026y\u003e","b":1.5}"#
        );
        assert_eq!(marshal(&json!(1e21)), "1e+21");
        assert_eq!(marshal(&json!(0.0000001)), "1e-7");
        assert_eq!(marshal(&json!(3.0)), "3");
    }
}
