//! The Go conversions Sprig leans on: `strval` (Sprig's `toString`), spf13/cast v1.7's
//! `ToInt64`/`ToInt`/`ToFloat64` (which Sprig's arithmetic calls and whose errors it ignores, so
//! a bad input is 0), `strconv`'s integer parsing, and Sprig's `empty` rule.

use ferroflux_gotemplate::{Object, Value, fmt};

/// Sprig's `strval`: strings as they are, `[]byte` as text, everything else as `%v` (a host
/// object's `String()` when it has one).
pub fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Bytes(b) => crate::text::go_string(b),
        other => fmt::sprint(std::slice::from_ref(other)),
    }
}

/// Go's conversion of a float64 to int64 on amd64: truncation toward zero, and the "integer
/// indefinite" value for NaN and out-of-range input.
pub fn float_to_int(f: f64) -> i64 {
    // 2^63 as a float: the first value outside i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// cast's `trimZeroDecimal`: `"3.00"` becomes `"3"` (so `int "3.0"` works, `int "3.5"` does not).
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's `strconv.ParseInt(s, base, 64)` for base 0 (prefixes `0x`, `0o`, `0b`, a leading `0`
/// for octal, and `_` separators after a prefix) and explicit bases. On overflow Go returns the
/// clamped value with an error; this returns `Err(Some(clamped))` then, `Err(None)` for syntax.
pub fn parse_int(s: &str, base: u32) -> Result<i64, Option<i64>> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(None);
    }
    let (radix, body) = if base == 0 {
        let lower = digits.to_ascii_lowercase();
        if lower.starts_with("0x") {
            (16, &digits[2..])
        } else if lower.starts_with("0o") {
            (8, &digits[2..])
        } else if lower.starts_with("0b") {
            (2, &digits[2..])
        } else if digits.len() > 1 && digits.starts_with('0') {
            (8, &digits[1..])
        } else {
            (10, digits)
        }
    } else {
        (base, digits)
    };
    // Underscores only with base 0, between digits (Go's literal syntax).
    let body_clean: String = if body.contains('_') {
        if base != 0 || !underscore_ok(s) {
            return Err(None);
        }
        body.replace('_', "")
    } else {
        body.to_string()
    };
    if body_clean.is_empty() {
        return Err(None);
    }
    let mut acc: u128 = 0;
    for c in body_clean.chars() {
        let d = c.to_digit(radix).ok_or(None)?;
        acc = acc * radix as u128 + d as u128;
        if acc > 1u128 << 64 {
            acc = 1u128 << 64;
        }
    }
    let limit = if neg { 1u128 << 63 } else { (1u128 << 63) - 1 };
    if acc > limit {
        return Err(Some(if neg { i64::MIN } else { i64::MAX }));
    }
    Ok(if neg {
        (acc as i128).wrapping_neg() as i64
    } else {
        acc as i64
    })
}

/// Go's `underscoreOK`: each `_` separates digits (a base prefix counts as a digit).
fn underscore_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// cast `ToInt64E`; `None` where cast returns an error.
pub fn to_int64_checked(v: &Value) -> Option<i64> {
    match v {
        Value::Nil => Some(0),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Int(i) | Value::Int64(i) => Some(*i),
        Value::Float(f) => Some(float_to_int(*f)),
        Value::String(s) => parse_int(trim_zero_decimal(s), 0).ok(),
        _ => None,
    }
}

/// cast `ToInt64` (errors are 0).
pub fn to_int64(v: &Value) -> i64 {
    to_int64_checked(v).unwrap_or(0)
}

/// cast `ToFloat64` (errors are 0).
pub fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::String(s) => parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal input, `Inf`/`NaN` spellings and `_`
/// separators included; out of range (`1e400`) is an error, as in Go.
pub fn parse_float(s: &str) -> Option<f64> {
    if s.is_empty() || s.starts_with(char::is_whitespace) {
        return None;
    }
    let lower = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if lower.starts_with("0x") {
        return None;
    }
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return s.parse::<f64>().ok();
    }
    if !lower.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let cleaned;
    let text = if s.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Sprig's `empty`: nil, false, zero numbers and empty strings, lists and maps; a host object
/// (a struct or pointer) is never empty, a typed slice when it has no items.
pub fn empty(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.as_value().is_some_and(|inner| !inner.truth()),
        other => !other.truth(),
    }
}

/// A Go slice with a concrete element type (`[]string`, `[]int`), as Sprig returns from
/// `splitList`, `keys`, `regexFindAll`, `until`…: printed, ranged and indexed as a list, but
/// `typeOf` names its type and `reflect.DeepEqual` tells it from `[]interface {}`.
pub struct TypedSlice {
    elem: &'static str,
    items: Value,
}

impl Object for TypedSlice {
    fn type_name(&self) -> String {
        format!("[]{}", self.elem)
    }
    fn kind_name(&self) -> String {
        "slice".into()
    }
    fn format(&self) -> String {
        fmt::sprint(std::slice::from_ref(&self.items))
    }
    fn truth(&self) -> bool {
        self.items.truth()
    }
    fn to_json(&self) -> serde_json::Value {
        self.items.to_json()
    }
    fn as_value(&self) -> Option<Value> {
        Some(self.items.clone())
    }
}

/// A `[]string`.
pub fn string_slice(items: Vec<String>) -> Value {
    Value::object(TypedSlice {
        elem: "string",
        items: Value::list(items.into_iter().map(Value::from).collect()),
    })
}

/// A `[]int`.
pub fn int_slice(items: Vec<i64>) -> Value {
    Value::object(TypedSlice {
        elem: "int",
        items: Value::list(items.into_iter().map(Value::Int).collect()),
    })
}

/// The items of a list or of a typed slice.
pub fn slice_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.to_vec()),
        Value::Object(o) if o.kind_name() == "slice" => o
            .as_value()
            .and_then(|i| i.as_list().map(<[Value]>::to_vec)),
        _ => None,
    }
}

/// `reflect.DeepEqual`: same Go types and equal contents, typed slices included.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.kind_name() == "slice" => {
            x.type_name() == y.type_name() && slice_items(a) == slice_items(b)
        }
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| deep_equal(p, q))
        }
        _ => a == b,
    }
}

/// Go's `%v` of `reflect.Kind` for Sprig's `Cannot … on type X` errors; nil has no type, and
/// Go dereferences it (the message is the runtime's nil-pointer panic).
pub fn kind_for_error(v: &Value) -> Result<String, String> {
    if v.is_nil() {
        return Err(NIL_DEREF.into());
    }
    Ok(v.kind_name())
}

/// The runtime panic Go raises when Sprig calls a method on the type of a nil value.
pub const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_rules() {
        assert_eq!(to_int64(&Value::from("42")), 42);
        assert_eq!(to_int64(&Value::from("3.00")), 3);
        assert_eq!(to_int64(&Value::from("3.5")), 0);
        assert_eq!(to_int64(&Value::from("0x1F")), 31);
        assert_eq!(to_int64(&Value::from("010")), 8);
        assert_eq!(to_int64(&Value::from("08")), 0);
        assert_eq!(to_int64(&Value::from("1_000")), 1000);
        assert_eq!(to_int64(&Value::from("1__000")), 0);
        assert_eq!(to_int64(&Value::from("_1")), 0);
        assert_eq!(to_float64(&Value::from("1_000.5")), 1000.5);
        assert_eq!(to_float64(&Value::from("1e400")), 0.0);
        assert_eq!(to_int64(&Value::from("0x_1F")), 31);
        assert_eq!(to_int64(&Value::from("-7")), -7);
        assert_eq!(to_int64(&Value::from("abc")), 0);
        assert_eq!(to_int64(&Value::Float(2.9)), 2);
        assert_eq!(to_int64(&Value::Float(-2.9)), -2);
        assert_eq!(to_int64(&Value::Float(1e30)), i64::MIN);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Nil), 0);
        assert_eq!(to_float64(&Value::from("1.5e3")), 1500.0);
        assert_eq!(to_float64(&Value::from("x")), 0.0);
        assert_eq!(to_float64(&Value::Int64(3)), 3.0);
        assert!(to_float64(&Value::from("NaN")).is_nan());
    }

    #[test]
    fn strconv_parse_int() {
        assert_eq!(parse_int("9223372036854775807", 10), Ok(i64::MAX));
        assert_eq!(parse_int("9223372036854775808", 10), Err(Some(i64::MAX)));
        assert_eq!(parse_int("-9223372036854775808", 10), Ok(i64::MIN));
        assert_eq!(parse_int("12a", 10), Err(None));
        assert_eq!(parse_int("777", 8), Ok(511));
    }

    #[test]
    fn strval_and_empty() {
        assert_eq!(strval(&Value::from("x")), "x");
        assert_eq!(strval(&Value::Float(1e6)), "1e+06");
        assert_eq!(strval(&Value::Nil), "<nil>");
        assert!(empty(&Value::Nil) && empty(&Value::Float(0.0)) && empty(&Value::from("")));
        assert!(!empty(&Value::from(" ")) && !empty(&Value::Bool(true)));
    }
}
