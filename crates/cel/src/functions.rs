//! The operators and functions: arithmetic with overflow checks, comparisons, `in`, indexing,
//! type conversions, `size`, the string functions (CEL's and cel-go's strings extension), the
//! optional-value functions, cel-go's sets and base64 extensions. The parser asks `is_global` /
//! `is_method` so an unknown name is refused when the expression is parsed.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::parser::BinOp;
use crate::time;
use crate::value::{Value, compare, equals};

type R = Result<Value, String>;

const GLOBALS: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "dyn",
    "type",
    "duration",
    "timestamp",
    "matches",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "base64.encode",
    "base64.decode",
];

const METHODS: &[&str] = &[
    "size",
    "startsWith",
    "endsWith",
    "contains",
    "matches",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "reverse",
    "hasValue",
    "value",
    "orValue",
    "or",
    "first",
    "last",
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

/// Whether `name(...)` is a function we implement.
pub(crate) fn is_global(name: &str) -> bool {
    GLOBALS.contains(&name)
}

/// Whether `x.name(...)` is a method we implement.
pub(crate) fn is_method(name: &str) -> bool {
    METHODS.contains(&name)
}

/// cel-go's `no such overload` error, naming the function and the argument types.
pub(crate) fn no_overload(name: &str, args: &[&Value]) -> String {
    let types: Vec<&str> = args.iter().map(|a| a.type_name()).collect();
    format!("no such overload: {name}({})", types.join(", "))
}

/// A map key as an error message shows it.
pub(crate) fn display_key(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => to_string(other).unwrap_or_else(|_| other.type_name().to_string()),
    }
}

/// The operators other than `&&`, `||`, `!`, unary `-` and `?:`.
pub(crate) fn binary(op: BinOp, l: Value, r: Value) -> R {
    use Value::*;
    let overflow = || "integer overflow".to_string();
    let uoverflow = || "unsigned integer overflow".to_string();
    match op {
        BinOp::Eq => Ok(Bool(equals(&l, &r))),
        BinOp::Ne => Ok(Bool(!equals(&l, &r))),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => match compare(&l, &r) {
            Ok(Some(o)) => Ok(Bool(match op {
                BinOp::Lt => o == Ordering::Less,
                BinOp::Le => o != Ordering::Greater,
                BinOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })),
            Ok(None) => Ok(Bool(false)),
            Err(()) => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::In => match &r {
            List(items) => Ok(Bool(items.iter().any(|x| equals(x, &l)))),
            Map(m) => Ok(Bool(Value::map_get(m, &l).is_some())),
            _ => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::Add => match (l, r) {
            (Int(a), Int(b)) => a.checked_add(b).map(Int).ok_or_else(overflow),
            (Uint(a), Uint(b)) => a.checked_add(b).map(Uint).ok_or_else(uoverflow),
            (Double(a), Double(b)) => Ok(Double(a + b)),
            (String(a), String(b)) => Ok(String(a + &b)),
            (Bytes(mut a), Bytes(b)) => {
                a.extend_from_slice(&b);
                Ok(Bytes(a))
            }
            (List(a), List(b)) => Ok(List(Arc::new(a.iter().chain(b.iter()).cloned().collect()))),
            (Duration(a), Duration(b)) => time::duration(a + b),
            (Timestamp(a), Duration(b)) | (Duration(b), Timestamp(a)) => time::timestamp(a + b),
            (l, r) => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::Sub => match (l, r) {
            (Int(a), Int(b)) => a.checked_sub(b).map(Int).ok_or_else(overflow),
            (Uint(a), Uint(b)) => a.checked_sub(b).map(Uint).ok_or_else(uoverflow),
            (Double(a), Double(b)) => Ok(Double(a - b)),
            (Duration(a), Duration(b)) => time::duration(a - b),
            (Timestamp(a), Duration(b)) => time::timestamp(a - b),
            (Timestamp(a), Timestamp(b)) => time::duration(a - b),
            (l, r) => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::Mul => match (l, r) {
            (Int(a), Int(b)) => a.checked_mul(b).map(Int).ok_or_else(overflow),
            (Uint(a), Uint(b)) => a.checked_mul(b).map(Uint).ok_or_else(uoverflow),
            (Double(a), Double(b)) => Ok(Double(a * b)),
            (l, r) => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::Div => match (l, r) {
            (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err("division by zero".into()),
            (Int(a), Int(b)) => a.checked_div(b).map(Int).ok_or_else(overflow),
            (Uint(a), Uint(b)) => Ok(Uint(a / b)),
            (Double(a), Double(b)) => Ok(Double(a / b)),
            (l, r) => Err(no_overload(op.name(), &[&l, &r])),
        },
        BinOp::Rem => match (l, r) {
            (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err("modulus by zero".into()),
            (Int(a), Int(b)) => a.checked_rem(b).map(Int).ok_or_else(overflow),
            (Uint(a), Uint(b)) => Ok(Uint(a % b)),
            (l, r) => Err(no_overload(op.name(), &[&l, &r])),
        },
    }
}

/// An integral index into a list: ints, uints, and doubles without a fraction.
fn list_index(i: &Value) -> Option<i128> {
    match i {
        Value::Int(n) => Some(i128::from(*n)),
        Value::Uint(n) => Some(i128::from(*n)),
        Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => Some(*d as i128),
        _ => None,
    }
}

/// `v[i]` (or `v[?i]` when `optional`).
pub(crate) fn index(v: Value, i: &Value, optional: bool) -> R {
    match v {
        Value::List(l) => {
            let Some(n) = list_index(i) else {
                return Err(format!(
                    "unsupported index type '{}' in list",
                    i.type_name()
                ));
            };
            let got = usize::try_from(n).ok().and_then(|n| l.get(n));
            match got {
                Some(x) if optional => Ok(Value::Optional(Some(Box::new(x.clone())))),
                Some(x) => Ok(x.clone()),
                None if optional => Ok(Value::Optional(None)),
                None => Err(format!(
                    "index '{n}' out of range in list size '{}'",
                    l.len()
                )),
            }
        }
        Value::Map(m) => match Value::map_get(&m, i) {
            Some(x) if optional => Ok(Value::Optional(Some(Box::new(x.clone())))),
            Some(x) => Ok(x.clone()),
            None if optional => Ok(Value::Optional(None)),
            None => Err(format!("no such key: {}", display_key(i))),
        },
        // Indexing into an optional stays optional (a missing element is none), as selection.
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => match *inner {
            Value::Null => Ok(Value::Optional(None)),
            inner => index(inner, i, true),
        },
        other => Err(no_overload("_[_]", &[&other, i])),
    }
}

/// Formats a double as Go's `%g` does (cel-go's `string(double)`): shortest digits that
/// round-trip, in exponent form when the exponent is below -4 or at least 6 (`1e+06`).
fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "1.5e3", "-2e-7".
    let e = format!("{d:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    // Plain notation: Rust's `{}` prints the same shortest digits without an exponent.
    format!("{d}")
}

/// `string(v)`.
pub(crate) fn to_string(v: &Value) -> Result<String, String> {
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => String::from_utf8(b.clone())
            .map_err(|_| "invalid UTF-8 in bytes, cannot convert to string".to_string())?,
        Value::Duration(d) => time::format_duration(*d),
        Value::Timestamp(t) => time::format_timestamp(*t)?,
        Value::Type(t) => t.to_string(),
        other => return Err(no_overload("string", &[other])),
    })
}

fn range_error(v: &Value, to: &str) -> String {
    format!(
        "range error converting {} to {to}",
        to_string(v).unwrap_or_default()
    )
}

/// Whether `v` is its type's zero value (for `optional.ofNonZeroValue`).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Duration(d) => *d == 0,
        Value::Timestamp(t) => *t == 0,
        Value::Type(_) => false,
        Value::Optional(o) => o.is_none(),
    }
}

fn string_list(v: &Value, func: &str) -> Result<Vec<String>, String> {
    match v {
        Value::List(l) => l
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                other => Err(no_overload(func, &[other])),
            })
            .collect(),
        other => Err(no_overload(func, &[other])),
    }
}

/// A code point offset as an index into `chars`, checked against `0..=len`.
fn char_offset(i: i64, len: usize) -> Result<usize, String> {
    usize::try_from(i)
        .ok()
        .filter(|n| *n <= len)
        .ok_or_else(|| format!("index out of range: {i}"))
}

/// The strings extension's `indexOf`: the code point index of `sub` at or after `offset`.
fn index_of(s: &str, sub: &str, offset: i64) -> Result<i64, String> {
    let chars: Vec<char> = s.chars().collect();
    let sub: Vec<char> = sub.chars().collect();
    let off = usize::try_from(offset).map_err(|_| format!("index out of range: {offset}"))?;
    if sub.is_empty() {
        return Ok(off.min(chars.len()) as i64);
    }
    if off >= chars.len() || sub.len() > chars.len() {
        return Ok(-1);
    }
    Ok((off..=chars.len() - sub.len())
        .find(|&i| chars[i..i + sub.len()] == sub[..])
        .map_or(-1, |i| i as i64))
}

/// The strings extension's `lastIndexOf`: the last code point index of `sub` starting at or
/// before `offset`.
fn last_index_of(s: &str, sub: &str, offset: i64) -> Result<i64, String> {
    let chars: Vec<char> = s.chars().collect();
    let sub: Vec<char> = sub.chars().collect();
    let off = usize::try_from(offset).map_err(|_| format!("index out of range: {offset}"))?;
    if sub.is_empty() {
        return Ok(off.min(chars.len()) as i64);
    }
    if off >= chars.len() || sub.len() > chars.len() {
        return Ok(-1);
    }
    let off = off.min(chars.len() - sub.len());
    Ok((0..=off)
        .rev()
        .find(|&i| chars[i..i + sub.len()] == sub[..])
        .map_or(-1, |i| i as i64))
}

/// Go's `strings.SplitN` over code points and strings (n < 0: no limit).
fn split(s: &str, sep: &str, n: i64) -> Vec<Value> {
    if n == 0 {
        return Vec::new();
    }
    let limit = usize::try_from(n).ok();
    let parts: Vec<String> = if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        match limit {
            Some(k) if k < chars.len() => {
                let mut out: Vec<String> = chars[..k - 1].iter().map(|c| c.to_string()).collect();
                out.push(chars[k - 1..].iter().collect());
                out
            }
            _ => chars.iter().map(|c| c.to_string()).collect(),
        }
    } else {
        match limit {
            Some(k) => s.splitn(k, sep).map(str::to_string).collect(),
            None => s.split(sep).map(str::to_string).collect(),
        }
    };
    parts.into_iter().map(Value::String).collect()
}

/// Calls a function: `target` is the receiver of a method call (`x.size()`), `None` for a
/// global call (`size(x)`).
pub(crate) fn call(name: &str, target: Option<Value>, args: Vec<Value>) -> R {
    use Value::*;
    let bad = |target: &Option<Value>, args: &[Value]| {
        let all: Vec<&Value> = target.iter().chain(args.iter()).collect();
        no_overload(name, &all)
    };
    // Methods and globals that take their subject first are handled alike.
    let (subject, rest): (Option<&Value>, &[Value]) = match &target {
        Some(t) => (Some(t), &args[..]),
        None => match args.split_first() {
            Some((first, rest)) => (Some(first), rest),
            None => (None, &args[..]),
        },
    };
    match (name, target.is_some(), subject, rest) {
        ("size", _, Some(v), []) => Ok(Int(match v {
            String(s) => s.chars().count() as i64,
            Bytes(b) => b.len() as i64,
            List(l) => l.len() as i64,
            Map(m) => m.len() as i64,
            _ => return Err(bad(&target, &args)),
        })),
        ("int", false, Some(v), []) => match v {
            Int(i) => Ok(Int(*i)),
            Uint(u) => i64::try_from(*u)
                .map(Int)
                .map_err(|_| range_error(v, "int")),
            Double(d) => {
                if d.is_nan()
                    || *d <= -9_223_372_036_854_775_808.0
                    || *d >= 9_223_372_036_854_775_808.0
                {
                    Err(range_error(v, "int"))
                } else {
                    Ok(Int(d.trunc() as i64))
                }
            }
            String(s) => s
                .parse()
                .map(Int)
                .map_err(|_| format!("cannot convert '{s}' to int")),
            Bool(b) => Ok(Int(i64::from(*b))),
            Timestamp(t) => Ok(Int(t.div_euclid(1_000_000_000) as i64)),
            Duration(d) => Ok(Int(*d as i64)),
            _ => Err(bad(&target, &args)),
        },
        ("uint", false, Some(v), []) => match v {
            Uint(u) => Ok(Uint(*u)),
            Int(i) => u64::try_from(*i)
                .map(Uint)
                .map_err(|_| range_error(v, "uint")),
            Double(d) => {
                if d.is_nan() || *d < 0.0 || *d >= 18_446_744_073_709_551_616.0 {
                    Err(range_error(v, "uint"))
                } else {
                    Ok(Uint(d.trunc() as u64))
                }
            }
            String(s) => s
                .parse()
                .map(Uint)
                .map_err(|_| format!("cannot convert '{s}' to uint")),
            _ => Err(bad(&target, &args)),
        },
        ("double", false, Some(v), []) => match v {
            Double(d) => Ok(Double(*d)),
            Int(i) => Ok(Double(*i as f64)),
            Uint(u) => Ok(Double(*u as f64)),
            String(s) => s
                .parse()
                .map(Double)
                .map_err(|_| format!("cannot convert '{s}' to double")),
            _ => Err(bad(&target, &args)),
        },
        ("string", false, Some(v), []) => to_string(v).map(String),
        ("bool", false, Some(v), []) => match v {
            Bool(b) => Ok(Bool(*b)),
            String(s) => match s.as_str() {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Bool(true)),
                "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Bool(false)),
                _ => Err(format!("cannot convert '{s}' to bool")),
            },
            _ => Err(bad(&target, &args)),
        },
        ("bytes", false, Some(v), []) => match v {
            Bytes(b) => Ok(Bytes(b.clone())),
            String(s) => Ok(Bytes(s.as_bytes().to_vec())),
            _ => Err(bad(&target, &args)),
        },
        ("dyn", false, Some(v), []) => Ok(v.clone()),
        ("type", false, Some(v), []) => Ok(Type(v.type_name())),
        ("duration", false, Some(v), []) => match v {
            String(s) => time::parse_duration(s),
            Duration(d) => Ok(Duration(*d)),
            _ => Err(bad(&target, &args)),
        },
        ("timestamp", false, Some(v), []) => match v {
            String(s) => time::parse_timestamp(s),
            Timestamp(t) => Ok(Timestamp(*t)),
            Int(i) => time::timestamp(i128::from(*i) * 1_000_000_000),
            _ => Err(bad(&target, &args)),
        },
        ("startsWith", true, Some(String(s)), [String(p)]) => Ok(Bool(s.starts_with(p.as_str()))),
        ("endsWith", true, Some(String(s)), [String(p)]) => Ok(Bool(s.ends_with(p.as_str()))),
        ("contains", true, Some(String(s)), [String(p)]) => Ok(Bool(s.contains(p.as_str()))),
        ("matches", _, Some(String(s)), [String(re)]) => {
            let re = regex::Regex::new(re)
                .map_err(|e| format!("invalid regular expression '{re}': {e}"))?;
            Ok(Bool(re.is_match(s)))
        }
        ("charAt", true, Some(String(s)), [Int(i)]) => {
            let chars: Vec<char> = s.chars().collect();
            let at = char_offset(*i, chars.len())?;
            Ok(String(
                chars.get(at).map(|c| c.to_string()).unwrap_or_default(),
            ))
        }
        ("indexOf", true, Some(String(s)), [String(sub), rest @ ..]) if rest.len() <= 1 => {
            let offset = match rest {
                [Int(i)] => *i,
                [] => 0,
                _ => return Err(bad(&target, &args)),
            };
            index_of(s, sub, offset).map(Int)
        }
        ("lastIndexOf", true, Some(String(s)), [String(sub), rest @ ..]) if rest.len() <= 1 => {
            let len = s.chars().count() as i64;
            let offset = match rest {
                [Int(i)] => *i,
                [] if sub.is_empty() => return Ok(Int(len)),
                [] => len - 1,
                _ => return Err(bad(&target, &args)),
            };
            last_index_of(s, sub, offset).map(Int)
        }
        ("lowerAscii", true, Some(String(s)), []) => Ok(String(s.to_ascii_lowercase())),
        ("upperAscii", true, Some(String(s)), []) => Ok(String(s.to_ascii_uppercase())),
        ("trim", true, Some(String(s)), []) => Ok(String(s.trim().to_string())),
        ("reverse", true, Some(String(s)), []) => Ok(String(s.chars().rev().collect())),
        ("replace", true, Some(String(s)), [String(old), String(new), rest @ ..])
            if rest.len() <= 1 =>
        {
            Ok(String(match rest {
                [Int(n)] if *n >= 0 => {
                    s.replacen(old.as_str(), new, usize::try_from(*n).unwrap_or(usize::MAX))
                }
                [Int(_)] | [] => s.replace(old.as_str(), new),
                _ => return Err(bad(&target, &args)),
            }))
        }
        ("split", true, Some(String(s)), [String(sep), rest @ ..]) if rest.len() <= 1 => {
            let n = match rest {
                [Int(n)] => *n,
                [] => -1,
                _ => return Err(bad(&target, &args)),
            };
            Ok(List(Arc::new(split(s, sep, n))))
        }
        ("substring", true, Some(String(s)), [Int(start), rest @ ..]) if rest.len() <= 1 => {
            let chars: Vec<char> = s.chars().collect();
            let end = match rest {
                [Int(e)] => *e,
                [] => {
                    let from = char_offset(*start, chars.len())?;
                    return Ok(String(chars[from..].iter().collect()));
                }
                _ => return Err(bad(&target, &args)),
            };
            if start > &end {
                return Err(format!(
                    "invalid substring range. start: {start}, end: {end}"
                ));
            }
            let from = char_offset(*start, chars.len())?;
            let to = char_offset(end, chars.len())?;
            Ok(String(chars[from..to].iter().collect()))
        }
        ("join", true, Some(l @ List(_)), rest) if rest.len() <= 1 => {
            let parts = string_list(l, name)?;
            let sep = match rest {
                [String(sep)] => sep.as_str(),
                [] => "",
                _ => return Err(bad(&target, &args)),
            };
            Ok(String(parts.join(sep)))
        }
        ("hasValue", true, Some(Optional(o)), []) => Ok(Bool(o.is_some())),
        ("value", true, Some(Optional(o)), []) => o
            .as_deref()
            .cloned()
            .ok_or_else(|| "optional.none() dereference".to_string()),
        ("orValue", true, Some(Optional(o)), [alt]) => {
            Ok(o.as_deref().cloned().unwrap_or_else(|| alt.clone()))
        }
        ("or", true, Some(Optional(o)), [alt @ Optional(_)]) => Ok(match o {
            Some(v) => Optional(Some(v.clone())),
            None => alt.clone(),
        }),
        ("first", true, Some(List(l)), []) => Ok(Optional(l.first().cloned().map(Box::new))),
        ("last", true, Some(List(l)), []) => Ok(Optional(l.last().cloned().map(Box::new))),
        ("optional.of", false, Some(v), []) => Ok(Optional(Some(Box::new(v.clone())))),
        ("optional.none", false, None, []) => Ok(Optional(None)),
        ("optional.ofNonZeroValue", false, Some(v), []) => {
            Ok(Optional((!is_zero(v)).then(|| Box::new(v.clone()))))
        }
        (
            "sets.contains" | "sets.equivalent" | "sets.intersects",
            false,
            Some(List(a)),
            [List(b)],
        ) => {
            let contains =
                |x: &[Value], y: &[Value]| y.iter().all(|e| x.iter().any(|f| equals(e, f)));
            Ok(Bool(match name {
                "sets.contains" => contains(a, b),
                "sets.equivalent" => contains(a, b) && contains(b, a),
                _ => a.iter().any(|e| b.iter().any(|f| equals(e, f))),
            }))
        }
        ("base64.encode", false, Some(Bytes(b)), []) => {
            use base64::Engine as _;
            Ok(String(base64::engine::general_purpose::STANDARD.encode(b)))
        }
        ("base64.decode", false, Some(String(s)), []) => {
            use base64::Engine as _;
            use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
            STANDARD
                .decode(s)
                .or_else(|_| STANDARD_NO_PAD.decode(s))
                .map(Bytes)
                .map_err(|e| format!("illegal base64 data: {e}"))
        }
        (
            "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
            | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            true,
            Some(v @ (Timestamp(_) | Duration(_))),
            rest,
        ) if rest.len() <= 1 => {
            time::accessor(name, v, rest.first()).ok_or_else(|| bad(&target, &args))?
        }
        _ => Err(bad(&target, &args)),
    }
}
