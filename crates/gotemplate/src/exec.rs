//! The executor of Go's text/template (`text/template/exec.go` of Go 1.24): walks parse trees
//! with a dot and variables, evaluates pipelines, fields, methods and function calls with Go's
//! argument rules, and reports errors with Go's text and position
//! (`template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`).
//!
//! Go distinguishes "no value" (an invalid `reflect.Value`), a nil `interface{}` (a null in a
//! map) and a concrete value; its messages depend on which (`nil pointer evaluating
//! interface {}.x`, `can't evaluate field x in type interface {}`, `invalid value; expected
//! string`), so [`Val`] keeps the three apart.
//!
//! Recursion (template calls, nested pipelines, `include`) runs through `stacker`: when less
//! than 64 KiB of stack remains, execution continues on a fresh 1 MiB heap segment, so Go's own
//! limit (`exceeded maximum template depth (100000)`) is what stops runaway recursion, on any
//! thread, never a stack overflow.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::builtins;
use crate::error::ExecError;
use crate::func::{CallContext, Func, Host, Signature, Type};
use crate::parse::{Arg, Branch, Command, Node, Pipe, RED_ZONE, STACK_GROWTH, Tree, Variable};
use crate::template::{MissingKey, Template};
use crate::value::{Object, Value};

/// Go's `maxExecDepth`.
pub(crate) const MAX_EXEC_DEPTH: usize = 100_000;

/// A value during execution, as Go's `reflect.Value` distinguishes it.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// No value (an invalid `reflect.Value`): a missing map key, nil data.
    Missing,
    /// A value whose static type is `interface{}` (an element of a map or list), possibly nil.
    Iface(Value),
    /// A value of a concrete type.
    Concrete(Value),
}

impl Val {
    /// Go's "dig down one level" after each pipeline command: an `interface{}` becomes its
    /// content, a nil one becomes no value.
    fn dig(self) -> Val {
        match self {
            Val::Iface(Value::Nil) => Val::Missing,
            Val::Iface(v) => Val::Concrete(v),
            v => v,
        }
    }

    /// The dynamic value, if there is one (nil for a nil interface).
    pub(crate) fn value(&self) -> Option<&Value> {
        match self {
            Val::Missing => None,
            Val::Iface(v) | Val::Concrete(v) => Some(v),
        }
    }

    /// Go's `indirectInterface`: a nil interface is no value.
    pub(crate) fn indirect(&self) -> Option<&Value> {
        match self {
            Val::Missing | Val::Iface(Value::Nil) | Val::Concrete(Value::Nil) => None,
            Val::Iface(v) | Val::Concrete(v) => Some(v),
        }
    }

    /// Go's `truth`: `isTrue(indirectInterface(v))`.
    pub(crate) fn truth(&self) -> bool {
        self.indirect().is_some_and(Value::truth)
    }

    /// The static type's name, as field errors print it.
    fn static_type(&self) -> String {
        match self {
            Val::Missing => "<nil>".into(),
            Val::Iface(_) => "interface {}".into(),
            Val::Concrete(v) => v.type_name(),
        }
    }

    /// The value a host function receives (no value becomes nil).
    fn into_value(self) -> Value {
        match self {
            Val::Missing => Value::Nil,
            Val::Iface(v) | Val::Concrete(v) => v,
        }
    }

    /// A function's result: nil means a nil `interface{}`.
    fn from_result(v: Value) -> Val {
        if v.is_nil() {
            Val::Iface(v)
        } else {
            Val::Concrete(v)
        }
    }
}

/// The node execution is at, for error messages.
#[derive(Clone, Copy)]
enum At<'t> {
    None,
    Node(&'t Node, usize),
    Pipe(&'t Pipe),
    Cmd(&'t Command),
    Arg(&'t Arg),
}

impl At<'_> {
    fn context(&self) -> Option<(usize, String)> {
        match self {
            At::None => None,
            At::Node(n, pos) => Some((*pos, n.to_string())),
            At::Pipe(p) => Some((p.pos, p.to_string())),
            At::Cmd(c) => Some((c.pos, c.to_string())),
            At::Arg(a) => Some((a.pos(), a.to_string())),
        }
    }
}

/// What a walk ends with: normally, or by `{{break}}`/`{{continue}}` on the way to its range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

type R<T> = Result<T, ExecError>;

/// The parameter type an argument is evaluated against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgType {
    /// A builtin's `reflect.Value` parameter: anything, unconverted, even no value.
    Raw,
    /// No type (the receiver of a chain).
    Untyped,
    /// A host function's declared type.
    Typed(Type),
}

/// Something callable.
enum Callee<'c> {
    Builtin(builtins::Builtin),
    Host(&'c Func),
    Method(Arc<dyn Object>, Signature),
}

/// Whether `name` is one of Go's builtin functions.
pub(crate) fn is_builtin(name: &str) -> bool {
    builtins::Builtin::by_name(name).is_some()
}

/// Executes template `name` of `set`.
pub(crate) fn execute(
    set: &Template,
    name: &str,
    data: &Value,
    host_state: Option<&mut (dyn Any + Send)>,
    depth: usize,
) -> R<String> {
    let Some(tree) = set.trees.get(name) else {
        return Err(ExecError::new(
            name,
            format!(
                "template: no template {} associated with template {}",
                crate::fmt::quote(name),
                crate::fmt::quote(&set.name)
            ),
        ));
    };
    let dot = if data.is_nil() {
        Val::Missing
    } else {
        Val::Concrete(data.clone())
    };
    let mut out = String::new();
    let mut st = State {
        set,
        tree,
        vars: vec![("$", dot.clone())],
        at: At::None,
        out: &mut out,
        host_state,
        depth,
    };
    stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || st.walk_list(&dot, &tree.root))?;
    Ok(out)
}

struct State<'t, 's> {
    set: &'t Template,
    tree: &'t Tree,
    vars: Vec<(&'t str, Val)>,
    at: At<'t>,
    out: &'s mut String,
    host_state: Option<&'s mut (dyn Any + Send)>,
    depth: usize,
}

impl<'t> State<'t, '_> {
    fn at(&mut self, at: At<'t>) {
        self.at = at;
    }

    /// Go's `state.errorf`.
    fn errorf(&self, msg: impl std::fmt::Display) -> ExecError {
        let name = &self.tree.name;
        let message = match self.at.context() {
            None => format!("template: {name}: {msg}"),
            Some((pos, context)) => format!(
                "template: {}: executing {} at <{}>: {}",
                self.tree.source.location(pos),
                crate::fmt::quote(name),
                context,
                msg
            ),
        };
        ExecError::new(name.clone(), message)
    }

    fn var_value(&self, name: &str) -> R<Val> {
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => Err(self.errorf(format_args!("undefined variable: {name}"))),
        }
    }

    fn set_var(&mut self, name: &str, v: Val) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = v;
                Ok(())
            }
            None => Err(self.errorf(format_args!("undefined variable: {name}"))),
        }
    }

    fn set_top_var(&mut self, n: usize, v: Val) {
        let len = self.vars.len();
        self.vars[len - n].1 = v;
    }

    fn walk_list(&mut self, dot: &Val, list: &'t [Node]) -> R<Flow> {
        for n in list {
            let f = self.walk(dot, n)?;
            if f != Flow::Normal {
                return Ok(f);
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, dot: &Val, node: &'t Node) -> R<Flow> {
        match node {
            Node::Text { text } => self.out.push_str(text),
            Node::Action { pos, pipe } => {
                self.at(At::Node(node, *pos));
                let val = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at(At::Node(node, *pos));
                    self.print_value(&val);
                }
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
            Node::If(b) => {
                self.at(At::Node(node, b.pos));
                return stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                    self.walk_if_or_with(false, dot, b)
                });
            }
            Node::With(b) => {
                self.at(At::Node(node, b.pos));
                return stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                    self.walk_if_or_with(true, dot, b)
                });
            }
            Node::Range(b) => {
                self.at(At::Node(node, b.pos));
                return stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.walk_range(dot, b));
            }
            Node::Template { pos, name, pipe } => {
                self.at(At::Node(node, *pos));
                stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                    self.walk_template(dot, name, pipe.as_ref())
                })?;
            }
        }
        Ok(Flow::Normal)
    }

    fn print_value(&mut self, v: &Val) {
        match v {
            Val::Missing => self.out.push_str("<no value>"),
            Val::Iface(Value::String(s)) | Val::Concrete(Value::String(s)) => self.out.push_str(s),
            Val::Iface(v) | Val::Concrete(v) => self
                .out
                .push_str(&crate::fmt::sprint(std::slice::from_ref(v))),
        }
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Val, b: &'t Branch) -> R<Flow> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if val.truth() {
                if with {
                    self.walk_list(&val, &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(Flow::Normal)
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Val, r: &'t Branch) -> R<Flow> {
        let mark0 = self.vars.len();
        let res = self.walk_range_inner(dot, r);
        self.vars.truncate(mark0);
        res.map(|_| Flow::Normal)
    }

    fn walk_range_inner(&mut self, dot: &Val, r: &'t Branch) -> R<()> {
        let val = self.eval_pipeline(dot, &r.pipe)?;
        let mark = self.vars.len();
        let mut v = val.indirect().cloned();
        if let Some(Value::Object(o)) = &v
            && let Some(entries) = o.map_entries()
        {
            // A Go map with non-string keys, already in Go's key order.
            let ran = self.iterate(
                r,
                mark,
                entries
                    .into_iter()
                    .map(|(k, item)| (Val::Concrete(k), Val::Iface(item))),
            )?;
            if !ran && let Some(e) = &r.else_list {
                self.walk_list(dot, e)?;
            }
            return Ok(());
        }
        if let Some(Value::Object(o)) = &v
            && let Some(inner) = o.as_value()
        {
            v = Some(inner);
        }
        let index = |i: usize| Val::Concrete(Value::Int(i as i64));
        let ran = match &v {
            None => false,
            Some(Value::List(items)) => self.iterate(
                r,
                mark,
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (index(i), Val::Iface(item.clone()))),
            )?,
            Some(Value::Bytes(b)) => self.iterate(
                r,
                mark,
                b.iter()
                    .enumerate()
                    .map(|(i, byte)| (index(i), Val::Concrete(Value::Int(i64::from(*byte))))),
            )?,
            Some(Value::Map(m)) => self.iterate(
                r,
                mark,
                m.entries()
                    .into_iter()
                    .map(|(k, item)| (Val::Concrete(Value::from(k)), Val::Iface(item))),
            )?,
            Some(n @ (Value::Int(_) | Value::Int64(_))) => {
                if r.pipe.decl.len() > 1 {
                    return Err(self.errorf(format_args!(
                        "can't use {} to iterate over more than one variable",
                        crate::fmt::sprint(std::slice::from_ref(n))
                    )));
                }
                // Go 1.22+: range over an integer n yields 0..n of the same type.
                let (is64, n) = match n {
                    Value::Int64(n) => (true, *n),
                    Value::Int(n) => (false, *n),
                    _ => (false, 0),
                };
                let elem =
                    move |i| Val::Concrete(if is64 { Value::Int64(i) } else { Value::Int(i) });
                self.iterate(r, mark, (0..n).map(|i| (Val::Missing, elem(i))))?
            }
            Some(other) => {
                return Err(self.errorf(format_args!(
                    "range can't iterate over {}",
                    crate::fmt::sprint(std::slice::from_ref(other))
                )));
            }
        };
        if !ran && let Some(e) = &r.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    /// Runs the range body once per (index, element) until a `{{break}}`; whether it ran.
    fn iterate(
        &mut self,
        r: &'t Branch,
        mark: usize,
        items: impl Iterator<Item = (Val, Val)>,
    ) -> R<bool> {
        let mut ran = false;
        for (index, elem) in items {
            ran = true;
            if self.one_iteration(r, mark, index, elem)? == Flow::Break {
                break;
            }
        }
        Ok(ran)
    }

    fn one_iteration(&mut self, r: &'t Branch, mark: usize, index: Val, elem: Val) -> R<Flow> {
        let decl = &r.pipe.decl;
        if !decl.is_empty() {
            if r.pipe.is_assign {
                if decl.len() > 1 {
                    self.set_var(&decl[0].idents[0], index.clone())?;
                } else {
                    self.set_var(&decl[0].idents[0], elem.clone())?;
                }
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if r.pipe.is_assign {
                self.set_var(&decl[1].idents[0], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let f = self.walk_list(&elem, &r.list);
        self.vars.truncate(mark);
        match f? {
            Flow::Break => Ok(Flow::Break),
            _ => Ok(Flow::Normal),
        }
    }

    fn walk_template(&mut self, dot: &Val, name: &str, pipe: Option<&'t Pipe>) -> R<()> {
        let Some(tree) = self.set.trees.get(name) else {
            return Err(self.errorf(format_args!(
                "template {} not defined",
                crate::fmt::quote(name)
            )));
        };
        if self.depth >= MAX_EXEC_DEPTH {
            return Err(self.errorf(format_args!(
                "exceeded maximum template depth ({MAX_EXEC_DEPTH})"
            )));
        }
        let dot = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Val::Missing,
        };
        let mut st = State {
            set: self.set,
            tree,
            vars: vec![("$", dot.clone())],
            at: At::None,
            out: &mut *self.out,
            host_state: self.host_state.as_deref_mut(),
            depth: self.depth + 1,
        };
        st.walk_list(&dot, &tree.root)?;
        Ok(())
    }

    fn eval_pipeline(&mut self, dot: &Val, pipe: &'t Pipe) -> R<Val> {
        self.at(At::Pipe(pipe));
        let mut value: Option<Val> = None;
        for cmd in &pipe.cmds {
            let v = stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                self.eval_command(dot, cmd, value.take())
            })?;
            value = Some(v.dig());
        }
        let value = value.unwrap_or(Val::Missing);
        for v in &pipe.decl {
            if pipe.is_assign {
                self.set_var(&v.idents[0], value.clone())?;
            } else {
                self.vars.push((&v.idents[0], value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], final_: &Option<Val>) -> R<()> {
        if args.len() > 1 || final_.is_some() {
            return Err(self.errorf(format_args!(
                "can't give argument to non-function {}",
                args[0]
            )));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Val, cmd: &'t Command, final_: Option<Val>) -> R<Val> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { idents, .. } => {
                self.at(At::Arg(first));
                return self.eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, final_);
            }
            Arg::Chain { .. } => return self.eval_chain_node(dot, first, &cmd.args, final_),
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, At::Cmd(cmd), &cmd.args, final_);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &final_)?;
                return self.eval_pipeline(dot, p);
            }
            Arg::Variable(v) => return self.eval_variable_node(dot, first, v, &cmd.args, final_),
            _ => {}
        }
        self.at(At::Arg(first));
        self.not_a_function(&cmd.args, &final_)?;
        match first {
            Arg::Bool { val, .. } => Ok(Val::Concrete(Value::Bool(*val))),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Nil { .. } => Err(self.errorf("nil is not a command")),
            Arg::Number(_) => self.ideal_constant(first),
            Arg::String { text, .. } => Ok(Val::Concrete(Value::from(text.as_str()))),
            _ => Err(self.errorf(format_args!(
                "can't evaluate command {}",
                crate::fmt::quote(&first.to_string())
            ))),
        }
    }

    /// A number whose type the context does not give: Go's syntax rules pick int or float64.
    fn ideal_constant(&mut self, arg: &'t Arg) -> R<Val> {
        self.at(At::Arg(arg));
        let Arg::Number(n) = arg else {
            return Ok(Val::Missing);
        };
        let is_hex_int = n.text.len() > 2
            && n.text.starts_with('0')
            && matches!(n.text.as_bytes()[1], b'x' | b'X')
            && !n.text.contains(['p', 'P']);
        let is_rune = n.text.starts_with('\'');
        if n.is_complex {
            return Err(self.errorf(format_args!("complex constant {} is not supported", n.text)));
        }
        if n.is_float && !is_hex_int && !is_rune && n.text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Val::Concrete(Value::Float(n.float)));
        }
        if n.is_int {
            return Ok(Val::Concrete(Value::Int(n.int)));
        }
        if n.is_uint {
            return Err(self.errorf(format_args!("{} overflows int", n.text)));
        }
        Ok(Val::Missing)
    }

    fn eval_chain_node(
        &mut self,
        dot: &Val,
        chain: &'t Arg,
        args: &'t [Arg],
        final_: Option<Val>,
    ) -> R<Val> {
        self.at(At::Arg(chain));
        let Arg::Chain { node, fields, .. } = chain else {
            return Ok(Val::Missing);
        };
        if let Arg::Nil { .. } = node.as_ref() {
            return Err(self.errorf(format_args!("indirection through explicit nil in {chain}")));
        }
        let pipe = self.eval_arg(dot, ArgType::Untyped, node)?;
        self.eval_field_chain(dot, pipe, chain, fields, args, final_)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Val,
        node: &'t Arg,
        v: &'t Variable,
        args: &'t [Arg],
        final_: Option<Val>,
    ) -> R<Val> {
        self.at(At::Arg(node));
        let value = self.var_value(&v.idents[0])?;
        if v.idents.len() == 1 {
            self.not_a_function(args, &final_)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, node, &v.idents[1..], args, final_)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Val,
        mut receiver: Val,
        node: &'t Arg,
        idents: &[String],
        args: &'t [Arg],
        final_: Option<Val>,
    ) -> R<Val> {
        let n = idents.len();
        for ident in &idents[..n - 1] {
            receiver = self.eval_field(dot, ident, node, &[], None, receiver)?;
        }
        self.eval_field(dot, &idents[n - 1], node, args, final_, receiver)
    }

    fn eval_field(
        &mut self,
        dot: &Val,
        name: &str,
        node: &'t Arg,
        args: &'t [Arg],
        final_: Option<Val>,
        receiver: Val,
    ) -> R<Val> {
        let v = match &receiver {
            Val::Missing => {
                if self.set.missing_key == MissingKey::Error {
                    return Err(self.errorf(format_args!(
                        "nil data; no entry for key {}",
                        crate::fmt::quote(name)
                    )));
                }
                return Ok(Val::Missing);
            }
            Val::Iface(Value::Nil) | Val::Concrete(Value::Nil) => {
                return Err(
                    self.errorf(format_args!("nil pointer evaluating interface {{}}.{name}"))
                );
            }
            Val::Iface(v) | Val::Concrete(v) => v,
        };
        let has_args = args.len() > 1 || final_.is_some();
        let map = match v {
            Value::Object(o) => {
                if let Some(sig) = o.method(name) {
                    let callee = Callee::Method(o.clone(), sig);
                    return self.eval_call(dot, callee, At::Arg(node), name, args, final_);
                }
                if let Some(f) = o.field(name) {
                    if has_args {
                        return Err(self.errorf(format_args!(
                            "{name} has arguments but cannot be invoked as function"
                        )));
                    }
                    return Ok(Val::from_result(f));
                }
                o.as_value().as_ref().and_then(Value::as_map).cloned()
            }
            Value::Map(m) => Some(m.clone()),
            _ => None,
        };
        let Some(m) = map else {
            return Err(self.errorf(format_args!(
                "can't evaluate field {name} in type {}",
                receiver.static_type()
            )));
        };
        if has_args {
            return Err(self.errorf(format_args!("{name} is not a method but has arguments")));
        }
        match m.get(name) {
            Some(v) => Ok(Val::Iface(v)),
            None => match self.set.missing_key {
                MissingKey::Invalid => Ok(Val::Missing),
                MissingKey::Zero => Ok(Val::Iface(Value::Nil)),
                MissingKey::Error => Err(self.errorf(format_args!(
                    "map has no entry for key {}",
                    crate::fmt::quote(name)
                ))),
            },
        }
    }

    fn eval_function(
        &mut self,
        dot: &Val,
        ident: &'t Arg,
        name: &str,
        cmd: At<'t>,
        args: &'t [Arg],
        final_: Option<Val>,
    ) -> R<Val> {
        self.at(At::Arg(ident));
        let set = self.set;
        let callee = if let Some(f) = set.funcs.get(name) {
            Callee::Host(f)
        } else if let Some(b) = builtins::Builtin::by_name(name) {
            Callee::Builtin(b)
        } else {
            return Err(self.errorf(format_args!(
                "{} is not a defined function",
                crate::fmt::quote(name)
            )));
        };
        self.eval_call(dot, callee, cmd, name, args, final_)
    }

    /// Go's `evalCall`: checks the argument count, evaluates and converts the arguments
    /// (`and`/`or` lazily), calls, and wraps a failure as `error calling NAME: MSG`.
    fn eval_call(
        &mut self,
        dot: &Val,
        callee: Callee<'t>,
        node: At<'t>,
        name: &str,
        args: &'t [Arg],
        final_: Option<Val>,
    ) -> R<Val> {
        let args = if args.is_empty() { args } else { &args[1..] };
        let sig = match &callee {
            Callee::Builtin(b) => b.signature(),
            Callee::Host(f) => f.signature().clone(),
            Callee::Method(_, s) => s.clone(),
        };
        let num_in = args.len() + usize::from(final_.is_some());
        self.check_count(&sig, name, args.len(), num_in)?;
        if let Callee::Builtin(b @ (builtins::Builtin::And | builtins::Builtin::Or)) = &callee {
            return self.and_or(dot, *b == builtins::Builtin::Or, args, final_);
        }
        let raw = matches!(&callee, Callee::Builtin(b) if b.raw_args());
        let arg_type = |i: usize| {
            if raw {
                ArgType::Raw
            } else {
                ArgType::Typed(sig.param(i))
            }
        };
        let mut argv: Vec<Val> = Vec::with_capacity(num_in);
        for (i, arg) in args.iter().enumerate() {
            argv.push(self.eval_arg(dot, arg_type(i), arg)?);
        }
        if let Some(f) = final_ {
            argv.push(self.validate(f, arg_type(num_in - 1))?);
        }
        self.invoke(&callee, name, args, argv).map_err(|msg| {
            self.at(node);
            self.errorf(format_args!("error calling {name}: {msg}"))
        })
    }

    /// Go's argument count check. (Its variadic message counts the arguments without the
    /// piped one, as Go's does.)
    fn check_count(&self, sig: &Signature, name: &str, given: usize, num_in: usize) -> R<()> {
        let num_fixed = sig.params.len();
        if sig.variadic.is_some() {
            if num_in < num_fixed {
                return Err(self.errorf(format_args!(
                    "wrong number of args for {name}: want at least {num_fixed} got {given}"
                )));
            }
        } else if num_in != num_fixed {
            return Err(self.errorf(format_args!(
                "wrong number of args for {name}: want {num_fixed} got {num_in}"
            )));
        }
        Ok(())
    }

    /// `and`/`or` (Go 1.18+): arguments are evaluated left to right only until one decides.
    fn and_or(&mut self, dot: &Val, is_or: bool, args: &'t [Arg], final_: Option<Val>) -> R<Val> {
        let mut v = Val::Missing;
        for arg in args {
            v = self.eval_arg(dot, ArgType::Raw, arg)?;
            if v.truth() == is_or {
                return Ok(v);
            }
        }
        Ok(final_.unwrap_or(v))
    }

    /// Calls a builtin, host function or method with evaluated arguments; the error is the
    /// callee's message (a panic's text for a host that panicked, as Go's `safeCall`).
    fn invoke(
        &mut self,
        callee: &Callee<'t>,
        name: &str,
        args: &'t [Arg],
        argv: Vec<Val>,
    ) -> Result<Val, String> {
        if let Callee::Builtin(b) = callee {
            // Only `call` names its argument in errors; the others need no text.
            let first = match (b, args.first()) {
                (builtins::Builtin::Call, Some(a)) => a.to_string(),
                _ => String::new(),
            };
            return b.call(&argv, &first);
        }
        let values: Vec<Value> = argv.into_iter().map(Val::into_value).collect();
        let mut ctx = CallContext { host: self };
        let result = catch_unwind(AssertUnwindSafe(|| match callee {
            Callee::Host(f) => f.call(&mut ctx, &values),
            Callee::Method(o, _) => o.call_method(name, &mut ctx, &values),
            // Builtins returned above.
            Callee::Builtin(_) => Ok(Value::Nil),
        }));
        result
            .unwrap_or_else(|p| Err(crate::FuncError::new(panic_text(&p))))
            .map(Val::from_result)
            .map_err(|e| e.0)
    }

    /// Go's `validateType`: checks (and for no value, converts) an evaluated argument.
    fn validate(&self, v: Val, t: ArgType) -> R<Val> {
        let t = match t {
            ArgType::Raw | ArgType::Untyped => return Ok(v),
            ArgType::Typed(t) => t,
        };
        match &v {
            Val::Missing => {
                if t.can_be_nil() {
                    Ok(Val::Iface(Value::Nil))
                } else {
                    Err(self.errorf(format_args!("invalid value; expected {}", t.go_name())))
                }
            }
            Val::Iface(Value::Nil) | Val::Concrete(Value::Nil) => {
                if t == Type::Any {
                    Ok(v)
                } else {
                    Err(self.errorf(format_args!(
                        "wrong type for value; expected {}; got interface {{}}",
                        t.go_name()
                    )))
                }
            }
            Val::Iface(x) | Val::Concrete(x) => {
                if t.accepts(x) {
                    Ok(v)
                } else if let Value::Object(o) = x
                    && o.assignable_to(t)
                    && let Some(inner) = o.as_value()
                    && t.accepts(&inner)
                {
                    Ok(Val::Concrete(inner))
                } else {
                    Err(self.errorf(format_args!(
                        "wrong type for value; expected {}; got {}",
                        t.go_name(),
                        x.type_name()
                    )))
                }
            }
        }
    }

    /// Go's `evalArg`.
    fn eval_arg(&mut self, dot: &Val, t: ArgType, n: &'t Arg) -> R<Val> {
        self.at(At::Arg(n));
        match n {
            Arg::Dot { .. } => return self.validate(dot.clone(), t),
            Arg::Nil { .. } => {
                return match t {
                    ArgType::Raw | ArgType::Untyped => Ok(Val::Missing),
                    ArgType::Typed(ty) if ty.can_be_nil() => Ok(Val::Iface(Value::Nil)),
                    ArgType::Typed(ty) => {
                        Err(self.errorf(format_args!("cannot assign nil to {}", ty.go_name())))
                    }
                };
            }
            Arg::Field { idents, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    n,
                    idents,
                    std::slice::from_ref(n),
                    None,
                )?;
                return self.validate(v, t);
            }
            Arg::Variable(var) => {
                let v = self.eval_variable_node(dot, n, var, &[], None)?;
                return self.validate(v, t);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                return self.validate(v, t);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, At::Arg(n), &[], None)?;
                return self.validate(v, t);
            }
            Arg::Chain { .. } => {
                let v = self.eval_chain_node(dot, n, &[], None)?;
                return self.validate(v, t);
            }
            _ => {}
        }
        let ty = match t {
            ArgType::Raw | ArgType::Untyped | ArgType::Typed(Type::Any) => {
                return match n {
                    Arg::Bool { val, .. } => Ok(Val::Concrete(Value::Bool(*val))),
                    Arg::Number(_) => self.ideal_constant(n),
                    Arg::String { text, .. } => Ok(Val::Concrete(Value::from(text.as_str()))),
                    _ => Err(self.errorf(format_args!(
                        "can't handle assignment of {n} to empty interface argument"
                    ))),
                };
            }
            ArgType::Typed(ty) => ty,
        };
        match (ty, n) {
            (Type::Bool, Arg::Bool { val, .. }) => Ok(Val::Concrete(Value::Bool(*val))),
            (Type::Bool, _) => Err(self.errorf(format_args!("expected bool; found {n}"))),
            (Type::Float64, Arg::Number(num)) if num.is_float => {
                Ok(Val::Concrete(Value::Float(num.float)))
            }
            (Type::Float64, _) => Err(self.errorf(format_args!("expected float; found {n}"))),
            (Type::Int, Arg::Number(num)) if num.is_int => Ok(Val::Concrete(Value::Int(num.int))),
            (Type::Int64, Arg::Number(num)) if num.is_int => {
                Ok(Val::Concrete(Value::Int64(num.int)))
            }
            (Type::Int | Type::Int64, _) => {
                Err(self.errorf(format_args!("expected integer; found {n}")))
            }
            (Type::String, Arg::String { text, .. }) => {
                Ok(Val::Concrete(Value::from(text.as_str())))
            }
            (Type::String, _) => Err(self.errorf(format_args!("expected string; found {n}"))),
            (ty, _) => Err(self.errorf(format_args!(
                "can't handle {n} for arg of type {}",
                ty.go_name()
            ))),
        }
    }
}

/// The text of a panic payload.
fn panic_text(p: &Box<dyn Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

impl Host for State<'_, '_> {
    fn template_name(&self) -> &str {
        &self.tree.name
    }

    fn templates(&self) -> &Template {
        self.set
    }

    fn execute_in(&mut self, set: &Template, name: &str, data: Value) -> R<String> {
        if self.depth >= MAX_EXEC_DEPTH {
            return Err(self.errorf(format_args!(
                "exceeded maximum template depth ({MAX_EXEC_DEPTH})"
            )));
        }
        let depth = self.depth + 1;
        let state = self.host_state.as_deref_mut();
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
            execute(set, name, &data, state, depth)
        })
    }

    fn state(&mut self) -> Option<&mut (dyn Any + Send)> {
        match &mut self.host_state {
            Some(s) => Some(&mut **s),
            None => None,
        }
    }
}
