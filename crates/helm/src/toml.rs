//! `toToml` as Helm runs it (BurntSushi/toml's encoder over a template value): keys sorted,
//! plain keys first, then each table under its `[dotted.header]` with its contents indented by
//! two spaces a level; arrays inline, arrays of tables as `[[header]]`. Errors come back as the
//! function's text, as Helm's `toToml` returns `err.Error()`.
//!
//! `fromToml` (BurntSushi/toml's decoder into `map[string]interface{}`) reads with the `toml`
//! crate: integers become `int64`, floats `float64`, tables maps, arrays lists, as in Helm.
//! Date-times become `time.Time` as BurntSushi's decoder makes them: an offset date-time in
//! `Local` (or UTC for `Z`, or a fixed zone for another offset), and the local kinds at offset 0
//! in zones named `datetime-local`, `date-local` and `time-local` (a time alone on January 1 of
//! year 0); `toToml` writes those back in their TOML form. A syntax error's text, under the
//! `Error` key, is BurntSushi's for the common mistakes (`tomlerr`).

use ferroflux_gotemplate::Value;
use ferroflux_sprig::GoTime;
use ferroflux_sprig::gotime::{self, Time};

/// BurntSushi's zones for TOML's local date-time kinds, with the layout each is read and
/// written with (Go's reference-time layouts).
const LOCAL_KINDS: [(&str, &str); 3] = [
    ("datetime-local", "2006-01-02T15:04:05.999999999"),
    ("date-local", "2006-01-02"),
    ("time-local", "15:04:05.999999999"),
];

/// The TOML text of `v` (a map), or BurntSushi's error text.
pub fn to_toml(v: &Value) -> String {
    let Value::Map(m) = v else {
        return "toml: top-level values must be Go maps or structs".into();
    };
    let mut out = String::new();
    match table(m, &[], &mut out) {
        Ok(()) => out,
        Err(e) => e,
    }
}

/// Helm's `fromToml`: the document as a map, or a map holding the error text under `Error`.
pub fn from_toml(text: &str) -> Value {
    let m = ferroflux_gotemplate::Map::new();
    if let Some(e) = crate::tomlerr::utf8_message(text) {
        m.insert("Error", e);
        return Value::Map(m);
    }
    match text.parse::<toml::Value>() {
        Ok(toml::Value::Table(t)) => {
            for (k, v) in t {
                m.insert(k, from_toml_value(v));
            }
        }
        Ok(_) => {}
        Err(e) => m.insert("Error", crate::tomlerr::message(text, &e)),
    }
    Value::Map(m)
}

fn from_toml_value(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::from(s),
        toml::Value::Integer(i) => Value::Int64(i),
        toml::Value::Float(f) => Value::Float(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => from_toml_datetime(&d),
        toml::Value::Array(items) => Value::list(items.into_iter().map(from_toml_value).collect()),
        toml::Value::Table(t) => {
            let m = ferroflux_gotemplate::Map::new();
            for (k, v) in t {
                m.insert(k, from_toml_value(v));
            }
            Value::Map(m)
        }
    }
}

/// A TOML date-time as the `time.Time` BurntSushi's decoder gives (its text if the `toml`
/// crate ever hands over one Go's layouts cannot read, which a parsed document cannot hold).
fn from_toml_datetime(d: &toml::value::Datetime) -> Value {
    let text = d.to_string();
    let local = match (&d.date, &d.time) {
        _ if d.offset.is_some() => None,
        (Some(_), Some(_)) => Some(LOCAL_KINDS[0]),
        (Some(_), None) => Some(LOCAL_KINDS[1]),
        _ => Some(LOCAL_KINDS[2]),
    };
    let (layout, location) = match local {
        None => ("2006-01-02T15:04:05.999999999Z07:00", "Local"),
        // A wall clock at offset 0, then named as BurntSushi names its zone.
        Some((_, layout)) => (layout, "UTC"),
    };
    let parsed = gotime::load_location(location)
        .and_then(|(name, tz)| gotime::parse_in_location(layout, &text, &name, &tz))
        .map(|t| match local {
            Some((zone, _)) => t.in_fixed_zone(zone, 0),
            None => t,
        });
    parsed.map_or_else(|_| Value::from(text), GoTime::value)
}

/// The TOML text of a `time.Time`: the local kinds in their own form, others as RFC 3339 with
/// nanoseconds (BurntSushi's encoder).
fn toml_time(t: &Time) -> String {
    match LOCAL_KINDS.iter().find(|(zone, _)| t.location == *zone) {
        Some((_, layout)) => t.utc().format(layout),
        None => t.format("2006-01-02T15:04:05.999999999Z07:00"),
    }
}

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn is_table_array(v: &Value) -> bool {
    matches!(v, Value::List(l) if !l.is_empty() && l.iter().all(is_table))
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        quote(k)
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scalar(v: &Value) -> Result<String, String> {
    Ok(match v {
        Value::Nil => return Err("toml: cannot encode a nil value".into()),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        Value::Float(f) => {
            if f.is_nan() {
                "nan".into()
            } else if f.is_infinite() {
                if *f > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            } else if f.fract() == 0.0 && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                format!("{f}")
            }
        }
        Value::String(s) => quote(s),
        Value::Bytes(b) => quote(&String::from_utf8_lossy(b)),
        Value::List(items) => {
            let parts: Result<Vec<String>, String> = items.iter().map(scalar).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Map(_) => return Err("toml: cannot encode a map inside an array".into()),
        Value::Object(o) => match (GoTime::from_value(v), o.as_value()) {
            (Some(t), _) => toml_time(&t),
            (None, Some(inner)) => scalar(&inner)?,
            (None, None) => quote(&o.format()),
        },
    })
}

fn table(m: &ferroflux_gotemplate::Map, path: &[String], out: &mut String) -> Result<(), String> {
    let indent = "  ".repeat(path.len().saturating_sub(1));
    let body_indent = "  ".repeat(path.len());
    let entries = m.entries();
    for (k, v) in &entries {
        if is_table(v) || is_table_array(v) || v.is_nil() {
            continue;
        }
        out.push_str(&format!("{body_indent}{} = {}\n", key(k), scalar(v)?));
    }
    let _ = indent;
    for (k, v) in &entries {
        let mut sub = path.to_vec();
        sub.push(k.clone());
        let header: Vec<String> = sub.iter().map(|s| key(s)).collect();
        let header_indent = "  ".repeat(path.len());
        match v {
            Value::Map(child) => {
                out.push_str(&format!("\n{header_indent}[{}]\n", header.join(".")));
                table(child, &sub, out)?;
            }
            Value::List(items) if is_table_array(v) => {
                for item in items.iter() {
                    if let Value::Map(child) = item {
                        out.push_str(&format!("\n{header_indent}[[{}]]\n", header.join(".")));
                        table(child, &sub, out)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}
