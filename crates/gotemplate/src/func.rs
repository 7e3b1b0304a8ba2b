//! The host-function interface: what a function map entry looks like and what it may ask of the
//! running template.
//!
//! Owns [`FuncMap`], [`Func`] with its Go-shaped [`Signature`] (fixed parameters plus an optional
//! variadic tail, each with a Go [`Type`] that arguments are checked and converted against, with
//! Go's messages), [`FuncError`] (the executor wraps it as `error calling NAME: MSG`), and
//! [`CallContext`], through which a function runs another template of the same set (Helm's
//! `include`), parses and runs new text in a copy of the set (Helm's `tpl`), learns the name of the
//! template being executed, and reaches the per-execution host state.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::value::Value;
use crate::{ExecError, Template};

/// A Go parameter type that a host function declares; the executor checks and converts each
/// argument against it as Go's reflection-based call does, with Go's messages
/// (`wrong type for value; expected string; got float64`, `invalid value; expected string`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// `interface{}`: anything; a missing value arrives as [`Value::Nil`].
    Any,
    /// `bool`.
    Bool,
    /// `int`: an `int` value or an integer constant.
    Int,
    /// `int64`: an `int64` value or an integer constant.
    Int64,
    /// `float64`: a `float64` value or a numeric constant.
    Float64,
    /// `string`.
    String,
    /// `[]byte`; a missing value arrives as [`Value::Nil`].
    Bytes,
    /// `[]interface{}`; a missing value arrives as [`Value::Nil`].
    List,
    /// `map[string]interface{}`; a missing value arrives as [`Value::Nil`].
    Map,
    /// A host type by its Go name (`time.Time`, `*semver.Version`): accepts a
    /// [`Value::Object`] whose [`crate::Object::type_name`] is this name. Pointer, slice and map
    /// types (`*…`, `[]…`, `map[…`) accept no value as [`Value::Nil`].
    Object(&'static str),
}

impl Type {
    /// Go's spelling of the type, as error messages print it.
    pub fn go_name(self) -> &'static str {
        match self {
            Type::Any => "interface {}",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Int64 => "int64",
            Type::Float64 => "float64",
            Type::String => "string",
            Type::Bytes => "[]uint8",
            Type::List => "[]interface {}",
            Type::Map => "map[string]interface {}",
            Type::Object(name) => name,
        }
    }

    /// Whether Go's nil converts to this type (`reflect.Zero` of a slice, map or interface).
    pub fn can_be_nil(self) -> bool {
        match self {
            Type::Any | Type::Bytes | Type::List | Type::Map => true,
            Type::Object(name) => name.starts_with(['*', '[']) || name.starts_with("map["),
            _ => false,
        }
    }

    /// Whether a value of this dynamic type is assignable to the parameter.
    pub fn accepts(self, v: &Value) -> bool {
        match self {
            Type::Any => true,
            Type::Bool => matches!(v, Value::Bool(_)),
            Type::Int => matches!(v, Value::Int(_)),
            Type::Int64 => matches!(v, Value::Int64(_)),
            Type::Float64 => matches!(v, Value::Float(_)),
            Type::String => matches!(v, Value::String(_)),
            Type::Bytes => matches!(v, Value::Bytes(_)),
            Type::List => matches!(v, Value::List(_)),
            Type::Map => matches!(v, Value::Map(_)),
            Type::Object(name) => matches!(v, Value::Object(o) if o.type_name() == name),
        }
    }
}

/// A Go function's parameter list: fixed parameters, then optionally `...T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The fixed parameters.
    pub params: Vec<Type>,
    /// The element type of the variadic tail, if the function is variadic.
    pub variadic: Option<Type>,
}

impl Signature {
    /// `func(p1, p2, …)`.
    pub fn fixed(params: &[Type]) -> Signature {
        Signature {
            params: params.to_vec(),
            variadic: None,
        }
    }

    /// `func(p1, …, rest ...T)`.
    pub fn variadic(params: &[Type], rest: Type) -> Signature {
        Signature {
            params: params.to_vec(),
            variadic: Some(rest),
        }
    }

    /// Go's check of the argument count: `wrong number of args for NAME: want N got M` (or
    /// `want at least N`).
    pub fn check_count(&self, name: &str, got: usize) -> Result<(), String> {
        let want = self.params.len();
        match self.variadic {
            Some(_) if got < want => Err(format!(
                "wrong number of args for {name}: want at least {want} got {got}"
            )),
            None if got != want => Err(format!(
                "wrong number of args for {name}: want {want} got {got}"
            )),
            _ => Ok(()),
        }
    }

    /// The declared type of argument `i`.
    pub fn param(&self, i: usize) -> Type {
        self.params
            .get(i)
            .copied()
            .or(self.variadic)
            .unwrap_or(Type::Any)
    }
}

/// The failure of a host function. The executor reports it as Go does:
/// `template: NAME:LINE:COL: executing "NAME" at <CALL>: error calling FN: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FuncError(pub String);

impl FuncError {
    /// An error with Go's message text.
    pub fn new(msg: impl Into<String>) -> FuncError {
        FuncError(msg.into())
    }
}

impl From<ExecError> for FuncError {
    /// A nested execution's error becomes the function's error with the same text, as Go's
    /// `%w` wrapping prints it.
    fn from(e: ExecError) -> FuncError {
        FuncError(e.to_string())
    }
}

/// What a host function runs: the context, then the arguments already checked and converted
/// against its [`Signature`].
pub type FuncImpl =
    dyn Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError> + Send + Sync;

/// A host function: its Go signature and its body. Cheap to clone.
#[derive(Clone)]
pub struct Func {
    sig: Arc<Signature>,
    body: Arc<FuncImpl>,
}

impl Func {
    /// A function with the given signature.
    pub fn new(
        sig: Signature,
        body: impl Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError>
        + Send
        + Sync
        + 'static,
    ) -> Func {
        Func {
            sig: Arc::new(sig),
            body: Arc::new(body),
        }
    }

    /// `func(params…)`.
    pub fn fixed(
        params: &[Type],
        body: impl Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError>
        + Send
        + Sync
        + 'static,
    ) -> Func {
        Func::new(Signature::fixed(params), body)
    }

    /// `func(params…, rest ...T)`.
    pub fn variadic(
        params: &[Type],
        rest: Type,
        body: impl Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError>
        + Send
        + Sync
        + 'static,
    ) -> Func {
        Func::new(Signature::variadic(params, rest), body)
    }

    /// The function's signature.
    pub fn signature(&self) -> &Signature {
        &self.sig
    }

    /// Runs the body with arguments already converted to the signature.
    pub fn call(&self, ctx: &mut CallContext<'_>, args: &[Value]) -> Result<Value, FuncError> {
        (self.body)(ctx, args)
    }
}

impl fmt::Debug for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Func{:?}", self.sig)
    }
}

/// The functions a template set may call, by name. Names here take precedence over the
/// builtins (`and`, `eq`, `print`, …), as in Go.
#[derive(Clone, Debug, Default)]
pub struct FuncMap {
    funcs: HashMap<String, Func>,
}

impl FuncMap {
    /// An empty map.
    pub fn new() -> FuncMap {
        FuncMap::default()
    }

    /// Adds or replaces `name`.
    pub fn insert(&mut self, name: impl Into<String>, f: Func) {
        self.funcs.insert(name.into(), f);
    }

    /// The function called `name`.
    pub fn get(&self, name: &str) -> Option<&Func> {
        self.funcs.get(name)
    }

    /// Whether `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// Adds every function of `other`, replacing those with the same name.
    pub fn extend(&mut self, other: &FuncMap) {
        for (k, v) in &other.funcs {
            self.funcs.insert(k.clone(), v.clone());
        }
    }

    /// The defined names (unordered).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.keys().map(String::as_str)
    }
}

/// What the executor offers a running host function (implemented by the executor's state).
pub(crate) trait Host {
    /// The name of the template being executed.
    fn template_name(&self) -> &str;
    /// The template set being executed.
    fn templates(&self) -> &Template;
    /// Runs template `name` of `set` with `data`, sharing this execution's depth and state.
    fn execute_in(&mut self, set: &Template, name: &str, data: Value) -> Result<String, ExecError>;
    /// The host state given to the execution, if any.
    fn state(&mut self) -> Option<&mut (dyn Any + Send)>;
}

/// The running template, as a host function sees it.
pub struct CallContext<'a> {
    pub(crate) host: &'a mut dyn Host,
}

impl CallContext<'_> {
    /// The name of the template being executed (the `define`d name inside a `define`, else
    /// the file's name), Go's `Template.Name()` of the running template.
    pub fn template_name(&self) -> &str {
        self.host.template_name()
    }

    /// The template set being executed. Clone it (cheap: parse trees are shared) and
    /// [`Template::parse`] new text into the clone to run text the way Helm's `tpl` does.
    pub fn templates(&self) -> &Template {
        self.host.templates()
    }

    /// Executes the template `name` of the running set with `data` into a string (Helm's
    /// `include`), with the same functions, options and host state. Depth counts on from the
    /// caller's, so runaway recursion stops with Go's depth error, never a stack overflow.
    pub fn execute_template(&mut self, name: &str, data: Value) -> Result<String, ExecError> {
        let set = self.host.templates().clone();
        self.host.execute_in(&set, name, data)
    }

    /// Executes the template `name` of another set (typically a clone of
    /// [`CallContext::templates`] with new text parsed in) with `data`, sharing this
    /// execution's functions, host state and depth. Functions called inside see `set` as
    /// their running set, so an `include` inside `tpl` text finds the `define`s of that text.
    pub fn execute_in(
        &mut self,
        set: &Template,
        name: &str,
        data: Value,
    ) -> Result<String, ExecError> {
        self.host.execute_in(set, name, data)
    }

    /// The host's per-execution state passed to [`Template::execute_with_state`], if it has
    /// type `T` (Helm keeps its include counters there).
    pub fn state<T: Any + Send>(&mut self) -> Option<&mut T> {
        self.host.state().and_then(|s| s.downcast_mut::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked_with_gos_words() {
        let s = Signature::fixed(&[Type::String]);
        assert_eq!(
            s.check_count("upper", 2).unwrap_err(),
            "wrong number of args for upper: want 1 got 2"
        );
        let v = Signature::variadic(&[Type::String], Type::Any);
        assert!(v.check_count("printf", 3).is_ok());
        assert_eq!(
            v.check_count("printf", 0).unwrap_err(),
            "wrong number of args for printf: want at least 1 got 0"
        );
        assert_eq!(v.param(5), Type::Any);
        assert_eq!(v.param(0), Type::String);
    }

    #[test]
    fn types_accept_their_go_values() {
        assert!(Type::String.accepts(&Value::from("x")));
        assert!(!Type::String.accepts(&Value::Float(1.0)));
        assert!(!Type::Int.accepts(&Value::Int64(1)));
        assert!(Type::Any.accepts(&Value::Nil));
        assert!(Type::Map.can_be_nil() && !Type::Int.can_be_nil());
        assert_eq!(Type::Map.go_name(), "map[string]interface {}");
        assert_eq!(Type::Object("time.Time").go_name(), "time.Time");
        assert!(!Type::Object("time.Time").can_be_nil());
        assert!(Type::Object("*semver.Version").can_be_nil());
        assert!(!Type::Object("time.Time").accepts(&Value::from("x")));
    }

    #[test]
    fn func_map_replaces_by_name() {
        let mut m = FuncMap::new();
        m.insert("f", Func::fixed(&[], |_, _| Ok(Value::Int(1))));
        m.insert("f", Func::fixed(&[Type::Any], |_, a| Ok(a[0].clone())));
        assert_eq!(m.get("f").unwrap().signature().params.len(), 1);
        assert!(!m.contains("g"));
    }
}
