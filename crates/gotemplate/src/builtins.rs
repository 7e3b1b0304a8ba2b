//! Go's builtin template functions (`text/template/funcs.go`): `and or not len index slice
//! call print printf println html js urlquery eq ne lt le gt ge`, with Go's type rules and error
//! texts (`incompatible types for comparison`, `index out of range: 5`, `len of nil pointer`).
//! `and`/`or` short-circuit in the executor; here they only declare their shape.

use crate::exec::Val;
use crate::func::{Signature, Type};
use crate::value::Value;

/// A builtin function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    And,
    Or,
    Not,
    Len,
    Index,
    Slice,
    Call,
    Print,
    Printf,
    Println,
    Html,
    Js,
    Urlquery,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Builtin {
    pub(crate) fn by_name(name: &str) -> Option<Builtin> {
        Some(match name {
            "and" => Builtin::And,
            "or" => Builtin::Or,
            "not" => Builtin::Not,
            "len" => Builtin::Len,
            "index" => Builtin::Index,
            "slice" => Builtin::Slice,
            "call" => Builtin::Call,
            "print" => Builtin::Print,
            "printf" => Builtin::Printf,
            "println" => Builtin::Println,
            "html" => Builtin::Html,
            "js" => Builtin::Js,
            "urlquery" => Builtin::Urlquery,
            "eq" => Builtin::Eq,
            "ne" => Builtin::Ne,
            "lt" => Builtin::Lt,
            "le" => Builtin::Le,
            "gt" => Builtin::Gt,
            "ge" => Builtin::Ge,
            _ => return None,
        })
    }

    /// Go's parameter shape (reflect.Value parameters are `Any` here; see `raw_args`).
    pub(crate) fn signature(self) -> Signature {
        use Builtin::*;
        match self {
            And | Or | Index | Slice | Call | Eq => Signature::variadic(&[Type::Any], Type::Any),
            Not | Len => Signature::fixed(&[Type::Any]),
            Ne | Lt | Le | Gt | Ge => Signature::fixed(&[Type::Any, Type::Any]),
            Print | Println | Html | Js | Urlquery => Signature::variadic(&[], Type::Any),
            Printf => Signature::variadic(&[Type::String], Type::Any),
        }
    }

    /// Whether the parameters are `reflect.Value`s (seeing "no value" as such) rather than
    /// typed.
    pub(crate) fn raw_args(self) -> bool {
        !matches!(
            self,
            Builtin::Print
                | Builtin::Printf
                | Builtin::Println
                | Builtin::Html
                | Builtin::Js
                | Builtin::Urlquery
        )
    }

    /// Calls the builtin with evaluated arguments; the error is Go's message (the executor
    /// prefixes `error calling NAME: `).
    /// `first_arg` is the text of the first argument's node (Go's `call` names it).
    pub(crate) fn call(self, args: &[Val], first_arg: &str) -> Result<Val, String> {
        let concrete = |v: Value| Ok(Val::Concrete(v));
        let values = || -> Vec<Value> {
            args.iter()
                .map(|a| a.value().cloned().unwrap_or(Value::Nil))
                .collect()
        };
        match self {
            // Short-circuiting happens in the executor; this is the plain rule.
            Builtin::And | Builtin::Or => {
                let is_or = self == Builtin::Or;
                let mut last = Val::Missing;
                for a in args {
                    if a.truth() == is_or {
                        return Ok(a.clone());
                    }
                    last = a.clone();
                }
                Ok(last)
            }
            Builtin::Not => concrete(Value::Bool(!args[0].truth())),
            Builtin::Len => length(&args[0]).map(|n| Val::Concrete(Value::Int(n as i64))),
            Builtin::Index => index(&args[0], &args[1..]),
            Builtin::Slice => slice(&args[0], &args[1..]),
            Builtin::Call => match args[0].indirect() {
                None => Err("call of nil".into()),
                Some(v) => Err(format!(
                    "non-function {first_arg} of type {}",
                    v.type_name()
                )),
            },
            Builtin::Print => concrete(Value::from(crate::fmt::sprint(&values()))),
            Builtin::Println => concrete(Value::from(crate::fmt::sprintln(&values()))),
            Builtin::Printf => {
                let v = values();
                let format = v[0].as_str().unwrap_or_default().to_string();
                concrete(Value::from(crate::fmt::sprintf(&format, &v[1..])))
            }
            Builtin::Html => concrete(Value::from(html_escape(&eval_args(args)))),
            Builtin::Js => concrete(Value::from(js_escape(&eval_args(args)))),
            Builtin::Urlquery => concrete(Value::from(query_escape(&eval_args(args)))),
            Builtin::Eq => eq(&args[0], &args[1..]).map(|b| Val::Concrete(Value::Bool(b))),
            Builtin::Ne => eq(&args[0], &args[1..2]).map(|b| Val::Concrete(Value::Bool(!b))),
            Builtin::Lt => lt(&args[0], &args[1]).map(|b| Val::Concrete(Value::Bool(b))),
            Builtin::Le => le(&args[0], &args[1]).map(|b| Val::Concrete(Value::Bool(b))),
            Builtin::Gt => le(&args[0], &args[1]).map(|b| Val::Concrete(Value::Bool(!b))),
            Builtin::Ge => lt(&args[0], &args[1]).map(|b| Val::Concrete(Value::Bool(!b))),
        }
    }
}

/// Unwraps a host object that stands for a Go slice or map.
fn inner(v: &Value) -> Value {
    match v {
        Value::Object(o) => o.as_value().unwrap_or_else(|| v.clone()),
        _ => v.clone(),
    }
}

fn length(item: &Val) -> Result<usize, String> {
    match item {
        Val::Missing => Err("reflect: call of reflect.Value.Type on zero Value".into()),
        Val::Iface(Value::Nil) | Val::Concrete(Value::Nil) => Err("len of nil pointer".into()),
        Val::Iface(Value::Object(o)) | Val::Concrete(Value::Object(o))
            if o.map_entries().is_some() =>
        {
            Ok(o.map_entries().map_or(0, |e| e.len()))
        }
        Val::Iface(v) | Val::Concrete(v) => match &inner(v) {
            Value::String(s) => Ok(crate::gostr::byte_len(s)),
            Value::Bytes(b) => Ok(b.len()),
            Value::List(l) => Ok(l.len()),
            Value::Map(m) => Ok(m.len()),
            other => Err(format!("len of type {}", other.type_name())),
        },
    }
}

/// Go's `indexArg`: an integer index within `0..=cap`.
fn index_arg(index: &Val, cap: usize) -> Result<usize, String> {
    let x = match index.indirect() {
        Some(Value::Int(i) | Value::Int64(i)) => *i,
        None => return Err("cannot index slice/array with nil".into()),
        Some(other) => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(item: &Val, indexes: &[Val]) -> Result<Val, String> {
    let Some(first) = item.indirect() else {
        return Err("index of untyped nil".into());
    };
    let mut item = Val::Concrete(first.clone());
    for index in indexes {
        let v = match &item {
            Val::Iface(Value::Nil) | Val::Concrete(Value::Nil) | Val::Missing => {
                return Err("index of nil pointer".into());
            }
            Val::Iface(v) | Val::Concrete(v) => inner(v),
        };
        item = match &v {
            Value::List(l) => {
                let x = index_arg(index, l.len())?;
                match l.get(x) {
                    Some(e) => Val::Iface(e.clone()),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::String(s) => {
                let bytes = crate::gostr::to_bytes(s);
                let x = index_arg(index, bytes.len())?;
                match bytes.get(x) {
                    Some(b) => Val::Concrete(Value::Int(i64::from(*b))),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::Bytes(b) => {
                let x = index_arg(index, b.len())?;
                match b.get(x) {
                    Some(b) => Val::Concrete(Value::Int(i64::from(*b))),
                    None => return Err(format!("index out of range: {x}")),
                }
            }
            Value::Map(m) => {
                let key = match index.indirect() {
                    Some(Value::String(k)) => k.clone(),
                    None => return Err("value is nil; should be of type string".into()),
                    Some(other) => {
                        return Err(format!(
                            "value has type {}; should be string",
                            other.type_name()
                        ));
                    }
                };
                Val::Iface(m.get(&key).unwrap_or(Value::Nil))
            }
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

fn slice(item: &Val, indexes: &[Val]) -> Result<Val, String> {
    let Some(v) = item.indirect() else {
        return Err("slice of untyped nil".into());
    };
    let v = inner(v);
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    let len = match &v {
        Value::String(s) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            crate::gostr::byte_len(s)
        }
        Value::List(l) => l.len(),
        Value::Bytes(b) => b.len(),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    let mut idx = [0, len, len];
    for (i, index) in indexes.iter().enumerate() {
        idx[i] = index_arg(index, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    let (i, j) = (idx[0], idx[1]);
    Ok(Val::Concrete(match &v {
        Value::String(s) => Value::from(crate::gostr::from_bytes(&crate::gostr::to_bytes(s)[i..j])),
        Value::List(l) => Value::list(l[i..j].to_vec()),
        Value::Bytes(b) => Value::Bytes(b[i..j].into()),
        _ => Value::Nil,
    }))
}

/// Go's `basicKind` classes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
}

fn basic_kind(v: Option<&Value>) -> (Kind, bool) {
    match v {
        None => (Kind::Invalid, false),
        Some(Value::Bool(_)) => (Kind::Bool, true),
        Some(Value::Int(_) | Value::Int64(_)) => (Kind::Int, true),
        Some(Value::Float(_)) => (Kind::Float, true),
        Some(Value::String(_)) => (Kind::String, true),
        Some(_) => (Kind::Invalid, true),
    }
}

/// Go 1.24's `incompatible types for comparison: float64 and int`.
fn incompatible(x: &Value, y: &Value) -> String {
    format!(
        "incompatible types for comparison: {} and {}",
        x.type_name(),
        y.type_name()
    )
}
const BAD_COMPARISON_TYPE: &str = "invalid type for comparison";

fn eq(arg1: &Val, arg2: &[Val]) -> Result<bool, String> {
    let a = arg1.indirect();
    if arg2.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let (k1, _) = basic_kind(a);
    for arg in arg2 {
        let b = arg.indirect();
        let (k2, _) = basic_kind(b);
        let truth = if k1 != k2 {
            if let (Some(x), Some(y)) = (a, b) {
                return Err(incompatible(x, y));
            }
            false
        } else {
            match (a, b) {
                (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
                (Some(Value::Float(x)), Some(Value::Float(y))) => x == y,
                (Some(Value::Int(x) | Value::Int64(x)), Some(Value::Int(y) | Value::Int64(y))) => {
                    x == y
                }
                (Some(Value::String(x)), Some(Value::String(y))) => x == y,
                (None, None) => true,
                (None, Some(_)) | (Some(_), None) => false,
                (Some(x), Some(y)) => compare_other(x, y)?,
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `eq` of two non-basic values: Go compares comparable types (pointers: host objects by
/// identity) and refuses slices and maps.
fn compare_other(x: &Value, y: &Value) -> Result<bool, String> {
    if x.type_name() != y.type_name() {
        return Err(format!(
            "non-comparable types {}: {}, {}: {}",
            crate::fmt::sprint(std::slice::from_ref(x)),
            x.type_name(),
            y.type_name(),
            crate::fmt::sprint(std::slice::from_ref(y))
        ));
    }
    match (x, y) {
        (Value::Object(a), Value::Object(b)) => Ok(std::sync::Arc::ptr_eq(a, b)),
        _ => Err(format!(
            "non-comparable type {}: {}",
            crate::fmt::sprint(std::slice::from_ref(y)),
            y.type_name()
        )),
    }
}

fn lt(arg1: &Val, arg2: &Val) -> Result<bool, String> {
    let a = arg1.indirect();
    let (k1, ok1) = basic_kind(a);
    if k1 == Kind::Invalid || !ok1 {
        return Err(BAD_COMPARISON_TYPE.into());
    }
    let b = arg2.indirect();
    let (k2, ok2) = basic_kind(b);
    if k2 == Kind::Invalid || !ok2 {
        return Err(BAD_COMPARISON_TYPE.into());
    }
    if k1 != k2
        && let (Some(x), Some(y)) = (a, b)
    {
        return Err(incompatible(x, y));
    }
    match (a, b) {
        (Some(Value::Float(x)), Some(Value::Float(y))) => Ok(x < y),
        (Some(Value::Int(x) | Value::Int64(x)), Some(Value::Int(y) | Value::Int64(y))) => Ok(x < y),
        // Go orders strings by their bytes: the same as UTF-8's order except for the bytes
        // gostr keeps escaped.
        (Some(Value::String(x)), Some(Value::String(y))) => {
            Ok(crate::gostr::to_bytes(x) < crate::gostr::to_bytes(y))
        }
        _ => Err(BAD_COMPARISON_TYPE.into()),
    }
}

fn le(arg1: &Val, arg2: &Val) -> Result<bool, String> {
    if lt(arg1, arg2)? {
        return Ok(true);
    }
    eq(arg1, std::slice::from_ref(arg2))
}

/// Go's `evalArgs`: a lone string as is, else `fmt.Sprint` of the arguments with no value
/// shown as `<no value>`.
fn eval_args(args: &[Val]) -> String {
    if let [v] = args
        && let Some(Value::String(s)) = v.value()
    {
        return s.to_string();
    }
    let vals: Vec<Value> = args
        .iter()
        .map(|a| match a.indirect() {
            None => Value::from("<no value>"),
            Some(v) => v.clone(),
        })
        .collect();
    crate::fmt::sprint(&vals)
}

/// Go's `HTMLEscapeString`.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `JSEscapeString`.
pub(crate) fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if !c.is_ascii() && !crate::fmt::is_print(c) => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: impl Into<Value>) -> Val {
        Val::Concrete(v.into())
    }

    #[test]
    fn eq_follows_gos_kinds() {
        assert_eq!(eq(&c(1), &[c(Value::Int64(1))]), Ok(true));
        assert_eq!(
            eq(&c(1), &[c(1.0)]),
            Err("incompatible types for comparison: int and float64".into())
        );
        assert_eq!(eq(&Val::Missing, &[c("a")]), Ok(false));
        assert_eq!(eq(&Val::Missing, &[Val::Iface(Value::Nil)]), Ok(true));
        assert_eq!(eq(&c("a"), &[c("b"), c("a")]), Ok(true));
        assert!(eq(&c(Value::list(vec![])), &[c(Value::list(vec![]))]).is_err());
    }

    #[test]
    fn ordering_refuses_mixed_and_odd_types() {
        assert_eq!(lt(&c(1), &c(2)), Ok(true));
        assert_eq!(lt(&c("b"), &c("a")), Ok(false));
        assert_eq!(
            lt(&c(1), &c(2.0)),
            Err("incompatible types for comparison: int and float64".into())
        );
        assert_eq!(lt(&Val::Missing, &c(2)), Err(BAD_COMPARISON_TYPE.into()));
        assert_eq!(lt(&c(true), &c(false)), Err(BAD_COMPARISON_TYPE.into()));
        assert_eq!(le(&c(2), &c(2)), Ok(true));
    }

    #[test]
    fn index_and_slice_read_like_go() {
        let l = c(Value::list(vec![Value::from("a"), Value::from("b")]));
        assert!(matches!(index(&l, &[c(1)]), Ok(Val::Iface(ref v)) if v.as_str() == Some("b")));
        assert_eq!(index(&l, &[c(2)]).unwrap_err(), "index out of range: 2");
        assert_eq!(
            index(&l, &[c("x")]).unwrap_err(),
            "cannot index slice/array with type string"
        );
        assert_eq!(
            index(&Val::Missing, &[]).unwrap_err(),
            "index of untyped nil"
        );
        assert!(
            matches!(slice(&c("hello"), &[c(1), c(3)]), Ok(Val::Concrete(ref v)) if v.as_str() == Some("el"))
        );
        assert_eq!(
            slice(&l, &[c(2), c(1)]).unwrap_err(),
            "invalid slice index: 2 > 1"
        );
        assert_eq!(
            length(&Val::Iface(Value::Nil)).unwrap_err(),
            "len of nil pointer"
        );
        assert_eq!(length(&c(3)).unwrap_err(), "len of type int");
    }

    #[test]
    fn escapers_follow_go() {
        assert_eq!(
            html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(
            js_escape("a'b\"<=>\n"),
            "a\\'b\\\"\\u003C\\u003D\\u003E\\u000A"
        );
        assert_eq!(query_escape("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
