//! Plain-scalar resolution the way go-yaml reads YAML (the rules kustomize inherits): YAML 1.2
//! booleans and nulls, Go's integer syntax (so `0644` is octal and `0x1F` hex), floats and
//! timestamps.

use serde_json::{Number, Value};

/// A plain scalar resolved like go-yaml v3 does when decoding into a generic value.
pub enum Resolved {
    /// A null, boolean, number or string.
    Value(Value),
    /// `.nan` / `.inf`: JSON cannot carry them.
    NonFinite,
    /// The `<<` merge key.
    Merge,
}

/// What go-yaml v3 makes of the plain (unquoted) scalar `s`.
pub fn resolve_plain(s: &str) -> Resolved {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Value(Value::Null),
        "true" | "True" | "TRUE" => return Resolved::Value(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Resolved::Value(Value::Bool(false)),
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Resolved::NonFinite,
        "<<" => return Resolved::Merge,
        _ => {}
    }
    let first = s.as_bytes()[0];
    match first {
        b'.' => {
            if is_yaml_style_float(s)
                && let Ok(f) = s.parse::<f64>()
            {
                return float_value(f);
            }
        }
        b'0'..=b'9' | b'+' | b'-' => {
            if let Some(ts) = parse_timestamp(s) {
                return Resolved::Value(Value::String(ts));
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if let Some(n) = go_parse_int(&plain) {
                return Resolved::Value(Value::Number(n));
            }
            if is_yaml_style_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return float_value(f);
            }
            if let Some(rest) = plain.strip_prefix("0b")
                && let Ok(v) = i64::from_str_radix(rest, 2)
            {
                return Resolved::Value(Value::Number(v.into()));
            }
            if let Some(rest) = plain.strip_prefix("-0b")
                && let Ok(v) = i64::from_str_radix(rest, 2)
            {
                return Resolved::Value(Value::Number((-v).into()));
            }
        }
        _ => {}
    }
    Resolved::Value(Value::String(s.to_string()))
}

fn float_value(f: f64) -> Resolved {
    if !f.is_finite() {
        return Resolved::NonFinite;
    }
    // Go's JSON encoding writes integral floats without a fraction; kustomize's output then
    // reads them back as integers, so keep them as integers when they fit.
    if f == f.trunc() && f.abs() < 9.0e15 {
        return Resolved::Value(Value::Number((f as i64).into()));
    }
    match Number::from_f64(f) {
        Some(n) => Resolved::Value(Value::Number(n)),
        None => Resolved::NonFinite,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
pub fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    } else {
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseInt(s, 0, 64)` then `ParseUint(s, 0, 64)`.
pub fn go_parse_int(s: &str) -> Option<Number> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let (radix, digits) = if let Some(r) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, r)
    } else if let Some(r) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, r)
    } else if let Some(r) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, r)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mag = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if mag <= i64::MAX as u64 + 1 {
            return Some(((mag as i128).wrapping_neg() as i64).into());
        }
        return None;
    }
    if mag <= i64::MAX as u64 {
        Some((mag as i64).into())
    } else {
        Some(mag.into())
    }
}

/// YAML timestamps go-yaml accepts (`2006-1-2`, `2006-1-2T15:4:5.999Z07:00`,
/// `2006-1-2 15:4:5`), rendered like Go's JSON encoding of `time.Time` (RFC 3339 with
/// nanoseconds trimmed).
pub fn parse_timestamp(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(|c| c.is_ascii_digit()) || b[4] != b'-' {
        return None;
    }
    let mut p = Cursor { b, i: 0 };
    let year = p.num(4, 4)?;
    p.expect(b'-')?;
    let month = p.num(1, 2)?;
    p.expect(b'-')?;
    let day = p.num(1, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if p.i == b.len() {
        return Some(format!("{year:04}-{month:02}-{day:02}T00:00:00Z"));
    }
    let sep = b[p.i];
    if sep != b'T' && sep != b't' && sep != b' ' {
        return None;
    }
    p.i += 1;
    let hour = p.num(1, 2)?;
    p.expect(b':')?;
    let min = p.num(1, 2)?;
    p.expect(b':')?;
    let sec = p.num(1, 2)?;
    if hour > 23 || min > 59 || sec > 59 {
        return None;
    }
    let mut frac = String::new();
    if p.i < b.len() && b[p.i] == b'.' {
        p.i += 1;
        let st = p.i;
        while p.i < b.len() && b[p.i].is_ascii_digit() {
            p.i += 1;
        }
        if p.i == st || p.i - st > 9 {
            return None;
        }
        frac = s[st..p.i].trim_end_matches('0').to_string();
    }
    let zone = if p.i == b.len() {
        if sep != b' ' {
            return None;
        }
        "Z".to_string()
    } else if b[p.i] == b'Z' && p.i + 1 == b.len() {
        if sep == b' ' {
            return None;
        }
        "Z".to_string()
    } else if (b[p.i] == b'+' || b[p.i] == b'-') && sep != b' ' {
        let rest = &s[p.i..];
        let rb = rest.as_bytes();
        if rb.len() != 6 || rb[3] != b':' {
            return None;
        }
        if !rb[1..3].iter().chain(&rb[4..6]).all(|c| c.is_ascii_digit()) {
            return None;
        }
        if &rest[1..] == "00:00" {
            "Z".to_string()
        } else {
            rest.to_string()
        }
    } else {
        return None;
    };
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{min:02}:{sec:02}{frac}{zone}"
    ))
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) {
                29
            } else {
                28
            }
        }
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn num(&mut self, min: usize, max: usize) -> Option<u32> {
        let st = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() && self.i - st < max {
            self.i += 1;
        }
        if self.i - st < min {
            return None;
        }
        std::str::from_utf8(&self.b[st..self.i]).ok()?.parse().ok()
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        if self.i < self.b.len() && self.b[self.i] == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }
}
