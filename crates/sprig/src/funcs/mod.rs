//! The function table: every Sprig function Helm v4 registers, by name, with its Go signature and
//! a body over already-converted arguments. One module per group of Sprig's sources.

use ferroflux_gotemplate::{FuncError, Type, Value};

pub(crate) mod dates;
pub(crate) mod defaults;
pub(crate) mod dicts;
pub(crate) mod lists;
pub(crate) mod misc;
pub(crate) mod numeric;
pub(crate) mod strings;

/// A function body: the arguments, converted to the declared types by the executor.
pub(crate) type Body = fn(&[Value]) -> Result<Value, FuncError>;

/// One entry of the table.
pub(crate) struct Def {
    pub name: &'static str,
    pub params: &'static [Type],
    pub variadic: Option<Type>,
    pub body: Body,
}

/// A function with fixed parameters.
pub(crate) fn fixed(name: &'static str, params: &'static [Type], body: Body) -> Def {
    Def {
        name,
        params,
        variadic: None,
        body,
    }
}

/// A function with a variadic tail of type `rest`.
pub(crate) fn variadic(name: &'static str, params: &'static [Type], rest: Type, body: Body) -> Def {
    Def {
        name,
        params,
        variadic: Some(rest),
        body,
    }
}

/// Every definition, in Sprig's groups.
pub(crate) fn all() -> Vec<Def> {
    let mut v = Vec::new();
    v.extend(strings::defs());
    v.extend(numeric::defs());
    v.extend(lists::defs());
    v.extend(dicts::defs());
    v.extend(defaults::defs());
    v.extend(dates::defs());
    v.extend(misc::defs());
    v
}

/// The text of a `string` argument.
pub(crate) fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The value of an `int`/`int64` argument.
pub(crate) fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        _ => 0,
    }
}

/// A `bool` argument.
pub(crate) fn boolean(v: &Value) -> bool {
    matches!(v, Value::Bool(true))
}

/// An error with Go's message.
pub(crate) fn err(msg: impl Into<String>) -> FuncError {
    FuncError::new(msg)
}

/// A string result.
pub(crate) fn text(s: impl Into<String>) -> Result<Value, FuncError> {
    Ok(Value::from(s.into()))
}

/// A Go `[]string`.
pub(crate) fn strings_value(items: Vec<String>) -> Value {
    crate::conv::string_slice(items)
}
