//! Go's `encoding/json` output for template values, as `toJson`, `toPrettyJson` and `toRawJson`
//! print it: map keys sorted, `<`, `>` and `&` escaped as `\u003c` (unless raw), U+2028/U+2029
//! escaped, floats in Go's form (`1e+21`, `1e-7`, `0.000001`), `[]byte` as base64, NaN and
//! infinities refused with Go's error; and `json.Unmarshal` into `interface{}` (numbers become
//! float64).

use ferroflux_gotemplate::{Value, fmt};

/// How to print: Go's `json.Marshal` (HTML-escaped), `MarshalIndent(v, "", "  ")`, or an
/// `Encoder` with `SetEscapeHTML(false)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// `<`, `>` and `&` written as `\u003c` and friends, as `json.Marshal` does.
    pub escape_html: bool,
    /// Two-space indentation, as `MarshalIndent(v, "", "  ")`.
    pub indent: bool,
}

/// `json.Marshal` of a value.
pub fn marshal(v: &Value, style: Style) -> Result<String, String> {
    let mut out = String::new();
    write_value(&mut out, v, style, 0)?;
    Ok(out)
}

fn newline(out: &mut String, style: Style, depth: usize) {
    if style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

/// Writes `items` between `open` and `close` with Go's separators: a comma between items and,
/// when indenting, each item on a line of its own one level deeper (an empty one stays `[]`).
fn write_seq<T>(
    out: &mut String,
    (open, close): (char, char),
    items: impl IntoIterator<Item = T>,
    style: Style,
    depth: usize,
    mut write_item: impl FnMut(&mut String, T) -> Result<(), String>,
) -> Result<(), String> {
    out.push(open);
    let mut any = false;
    for item in items {
        if any {
            out.push(',');
        }
        any = true;
        newline(out, style, depth + 1);
        write_item(out, item)?;
    }
    if any {
        newline(out, style, depth);
    }
    out.push(close);
    Ok(())
}

/// A map key and its colon (and a space when indenting).
fn write_key(out: &mut String, key: &str, style: Style) {
    write_string(out, key, style.escape_html);
    out.push(':');
    if style.indent {
        out.push(' ');
    }
}

fn write_value(out: &mut String, v: &Value, style: Style, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => out.push_str(&i.to_string()),
        Value::Float(f) => write_float(out, *f)?,
        Value::String(s) => write_string(out, s, style.escape_html),
        Value::Bytes(b) => write_string(out, &crate::encoding::b64enc(b), false),
        Value::List(items) => {
            write_seq(out, ('[', ']'), items.iter(), style, depth, |out, item| {
                write_value(out, item, style, depth + 1)
            })?
        }
        Value::Map(m) => {
            let entries = m.entries();
            write_seq(
                out,
                ('{', '}'),
                entries.iter(),
                style,
                depth,
                |out, (k, item)| {
                    write_key(out, k, style);
                    write_value(out, item, style, depth + 1)
                },
            )?
        }
        Value::Object(o) => write_json(out, &o.to_json(), style, depth)?,
    }
    Ok(())
}

/// A host object's JSON form, printed with the same rules (struct fields keep their order).
fn write_json(
    out: &mut String,
    j: &serde_json::Value,
    style: Style,
    depth: usize,
) -> Result<(), String> {
    match j {
        serde_json::Value::Null => out.push_str("null"),
        serde_json::Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => write_float(out, f)?,
            _ => out.push_str(&n.to_string()),
        },
        serde_json::Value::String(s) => write_string(out, s, style.escape_html),
        serde_json::Value::Array(items) => {
            write_seq(out, ('[', ']'), items, style, depth, |out, item| {
                write_json(out, item, style, depth + 1)
            })?
        }
        serde_json::Value::Object(m) => {
            write_seq(out, ('{', '}'), m, style, depth, |out, (k, item)| {
                write_key(out, k, style);
                write_json(out, item, style, depth + 1)
            })?
        }
    }
    Ok(())
}

/// Go's float encoding: shortest `f` form, or `e` form below 1e-6 and from 1e21 on, with a
/// one-digit negative exponent (`1e-7`, not `1e-07`).
fn write_float(out: &mut String, f: f64) -> Result<(), String> {
    if f.is_nan() || f.is_infinite() {
        return Err(format!(
            "json: unsupported value: {}",
            fmt::format_float(f, 'g', -1)
        ));
    }
    let abs = f.abs();
    let e = abs != 0.0 && !(1e-6..1e21).contains(&abs);
    let mut s = fmt::format_float(f, if e { 'e' } else { 'f' }, -1);
    if e {
        let b = s.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            s.remove(n - 2);
        }
    }
    out.push_str(&s);
    Ok(())
}

fn write_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    // Go's encoding/json writes each byte that is not UTF-8 (gotemplate's `gostr` form) as
    // `\ufffd`.
    let bytes = ferroflux_gotemplate::gostr::to_bytes(s);
    for chunk in bytes.utf8_chunks() {
        write_chars(out, chunk.valid(), escape_html);
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

fn write_chars(out: &mut String, s: &str, escape_html: bool) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// `json.Unmarshal` into `interface{}`: objects become maps, numbers float64. The error texts
/// follow Go's for the common cases (`unexpected end of JSON input`, `invalid character 'x'
/// looking for beginning of value`).
pub fn unmarshal(text: &str) -> Result<Value, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(j) => Ok(Value::from_json(&j)),
        Err(e) => Err(go_json_error(text, &e)),
    }
}

fn go_json_error(text: &str, e: &serde_json::Error) -> String {
    if e.is_eof() {
        return "unexpected end of JSON input".into();
    }
    // Find the offending character from serde's line and column.
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let c = line.chars().nth(e.column().saturating_sub(1));
    let msg = e.to_string();
    if msg.contains("expected ident")
        && let Some(bad) = c
    {
        // Inside `null`, `true` or `false`: Go names the literal and the letter it expected.
        let chars: Vec<char> = line.chars().collect();
        let at = e.column().saturating_sub(1);
        let start = (0..at)
            .rev()
            .take_while(|&i| chars.get(i).is_some_and(char::is_ascii_alphabetic))
            .last()
            .unwrap_or(at);
        let lit = match chars.get(start) {
            Some('n') => "null",
            Some('t') => "true",
            Some('f') => "false",
            _ => "",
        };
        if let Some(want) = lit.chars().nth(at - start) {
            return format!(
                "invalid character {} in literal {lit} (expecting {})",
                quote_char(bad),
                quote_char(want)
            );
        }
    }
    match c {
        Some(c) if msg.contains("trailing characters") => {
            format!("invalid character {} after top-level value", quote_char(c))
        }
        Some(c) if msg.contains("expected value") || msg.contains("expected ident") => {
            format!(
                "invalid character {} looking for beginning of value",
                quote_char(c)
            )
        }
        Some(c) if msg.contains("key must be a string") => format!(
            "invalid character {} looking for beginning of object key string",
            quote_char(c)
        ),
        Some(c) if msg.contains("expected `:`") => {
            format!("invalid character {} after object key", quote_char(c))
        }
        Some(c) if msg.contains("expected `,` or `}`") => format!(
            "invalid character {} after object key:value pair",
            quote_char(c)
        ),
        Some(c) if msg.contains("expected `,` or `]`") => {
            format!("invalid character {} after array element", quote_char(c))
        }
        _ => msg,
    }
}

/// Go's `quoteChar`: `'x'`, with `'\''` and `"\""` special-cased.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = fmt::quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_gotemplate::Map;

    const PLAIN: Style = Style {
        escape_html: true,
        indent: false,
    };

    #[test]
    fn encodes_like_encoding_json() {
        let m = Map::new();
        m.insert("b", Value::Float(1e21));
        m.insert("a", Value::from("<x&y>"));
        m.insert(
            "c",
            Value::list(vec![
                Value::Float(1e-7),
                Value::Float(0.000001),
                Value::Float(3.0),
                Value::Nil,
            ]),
        );
        m.insert("d", Value::Map(Map::new()));
        let v = Value::Map(m);
        assert_eq!(
            marshal(&v, PLAIN).unwrap(),
            r#"{"a":"\u003cx\u0026y\u003e","b":1e+21,"c":[1e-7,0.000001,3,null],"d":{}}"#
        );
        assert_eq!(
            marshal(
                &v,
                Style {
                    escape_html: false,
                    indent: false
                }
            )
            .unwrap(),
            r#"{"a":"<x&y>","b":1e+21,"c":[1e-7,0.000001,3,null],"d":{}}"#
        );
        assert_eq!(
            marshal(
                &v,
                Style {
                    escape_html: true,
                    indent: true
                }
            )
            .unwrap(),
            "{\n  \"a\": \"\\u003cx\\u0026y\\u003e\",\n  \"b\": 1e+21,\n  \"c\": [\n    1e-7,\n    0.000001,\n    3,\n    null\n  ],\n  \"d\": {}\n}"
        );
        assert_eq!(
            marshal(&Value::from("\u{1}\t\u{2028}"), PLAIN).unwrap(),
            r#""\u0001\t\u2028""#
        );
        assert_eq!(
            marshal(&Value::Float(f64::NAN), PLAIN).unwrap_err(),
            "json: unsupported value: NaN"
        );
        assert_eq!(
            marshal(&Value::Float(123456789.0), PLAIN).unwrap(),
            "123456789"
        );
    }

    #[test]
    fn decodes_like_encoding_json() {
        let v = unmarshal(r#"{"a": [1, "x", null, true]}"#).unwrap();
        assert_eq!(v.to_string(), "map[a:[1 x <nil> true]]");
        assert_eq!(
            v.as_map().unwrap().get("a").unwrap().as_list().unwrap()[0],
            Value::Float(1.0)
        );
        assert_eq!(unmarshal("{").unwrap_err(), "unexpected end of JSON input");
        assert_eq!(
            unmarshal("abc").unwrap_err(),
            "invalid character 'a' looking for beginning of value"
        );
        assert_eq!(
            unmarshal("{} x").unwrap_err(),
            "invalid character 'x' after top-level value"
        );
    }
}
