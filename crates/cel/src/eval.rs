//! The evaluator: walks the AST over the variables, with CEL's error absorption in `&&`, `||`,
//! `all` and `exists`, and a step budget so that no expression runs unbounded.

use std::collections::HashMap;
use std::sync::Arc;

use crate::functions::{self, no_overload};
use crate::parser::{BinOp, Expr, Kind, Macro};
use crate::value::Value;

/// How many AST nodes one evaluation may visit (comprehension bodies count once per element).
pub(crate) const MAX_STEPS: u64 = 1_000_000;

type R = Result<Value, String>;

/// cel-go's error for a variable that is not there.
const NO_ATTRIBUTE: &str = "no such attribute(s): ";

/// `a.b.c` when `e` is a chain of plain selections on an identifier.
fn dotted(e: &Expr) -> Option<String> {
    match &e.kind {
        Kind::Ident(name) => Some(name.clone()),
        Kind::Select {
            operand,
            field,
            optional: false,
        } => dotted(operand).map(|p| format!("{p}.{field}")),
        _ => None,
    }
}

/// The names that denote types when no variable shadows them (`type(x) == string`).
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

pub(crate) struct Env<'a> {
    vars: &'a serde_json::Map<String, serde_json::Value>,
    /// Top-level variables converted from JSON, on first use.
    cache: HashMap<&'a str, Value>,
    /// Comprehension variables, innermost last.
    locals: Vec<(String, Value)>,
    steps: u64,
}

impl<'a> Env<'a> {
    pub(crate) fn new(vars: &'a serde_json::Map<String, serde_json::Value>) -> Env<'a> {
        Env {
            vars,
            cache: HashMap::new(),
            locals: Vec::new(),
            steps: 0,
        }
    }

    fn budget_error(&self) -> Option<String> {
        (self.steps > MAX_STEPS)
            .then(|| format!("operation cancelled: evaluation exceeded {MAX_STEPS} steps"))
    }

    fn lookup(&mut self, name: &str) -> R {
        if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return Ok(v.clone());
        }
        if let Some(v) = self.cache.get(name) {
            return Ok(v.clone());
        }
        if let Some((k, j)) = self.vars.get_key_value(name) {
            let v = Value::from_json(j);
            self.cache.insert(k.as_str(), v.clone());
            return Ok(v);
        }
        if let Some(t) = TYPE_NAMES.iter().find(|t| **t == name) {
            return Ok(Value::Type(t));
        }
        Err(format!("{NO_ATTRIBUTE}{name}"))
    }

    /// Evaluates `body` with `var` bound to `item`.
    fn with_local(&mut self, var: &str, item: Value, body: &Expr) -> R {
        self.locals.push((var.to_string(), item));
        let out = self.eval(body);
        self.locals.pop();
        out
    }

    /// Evaluates `e`. This is the recursion of evaluation, so its frame is kept small: each
    /// kind of node is a function of its own and only one of them is on the stack per level.
    pub(crate) fn eval(&mut self, e: &Expr) -> R {
        self.steps += 1;
        if let Some(err) = self.budget_error() {
            return Err(err);
        }
        match &e.kind {
            Kind::Lit(v) => Ok(v.clone()),
            Kind::Ident(name) => self.lookup(name),
            Kind::Select {
                operand,
                field,
                optional,
            } => self.eval_select(e, operand, field, *optional),
            Kind::Has { operand, field } => {
                let v = self.eval(operand)?;
                has(v, field)
            }
            Kind::Index {
                operand,
                index,
                optional,
            } => self.eval_index(operand, index, *optional),
            Kind::Call { target, name, args } => self.eval_call(target.as_deref(), name, args),
            Kind::List(items) => self.eval_list(items),
            Kind::Map(entries) => self.eval_map(entries),
            Kind::Not(inner) => self.eval_not(inner),
            Kind::Neg(inner) => self.eval_neg(inner),
            Kind::And(a, b) => self.logic(a, b, false),
            Kind::Or(a, b) => self.logic(a, b, true),
            Kind::Cond(c, yes, no) => self.eval_cond(c, yes, no),
            Kind::Binary(op, a, b) => self.eval_binary(*op, a, b),
            Kind::Comprehension {
                kind,
                range,
                var,
                pred,
                transform,
            } => self.comprehension(*kind, range, var, pred.as_deref(), transform.as_deref()),
        }
    }

    #[inline(never)]
    fn eval_select(&mut self, e: &Expr, operand: &Expr, field: &str, optional: bool) -> R {
        let v = match self.eval(operand) {
            // cel-go names the whole dotted path when its root variable is missing.
            Err(err) if err.starts_with(NO_ATTRIBUTE) && !optional => {
                return Err(match dotted(e) {
                    Some(path) => format!("{NO_ATTRIBUTE}{path}"),
                    None => err,
                });
            }
            v => v?,
        };
        select(v, field, optional)
    }

    #[inline(never)]
    fn eval_index(&mut self, operand: &Expr, index: &Expr, optional: bool) -> R {
        let v = self.eval(operand)?;
        let i = self.eval(index)?;
        functions::index(v, &i, optional)
    }

    #[inline(never)]
    fn eval_call(&mut self, target: Option<&Expr>, name: &str, args: &[Expr]) -> R {
        let t = match target {
            Some(t) => Some(self.eval(t)?),
            None => None,
        };
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.eval(a)?);
        }
        functions::call(name, t, vals)
    }

    #[inline(never)]
    fn eval_list(&mut self, items: &[(Expr, bool)]) -> R {
        let mut out = Vec::with_capacity(items.len());
        for (item, optional) in items {
            let v = self.eval(item)?;
            if *optional {
                match v {
                    Value::Optional(Some(inner)) => out.push(*inner),
                    Value::Optional(None) => {}
                    other => return Err(no_overload("optional list element", &[&other])),
                }
            } else {
                out.push(v);
            }
        }
        Ok(Value::List(Arc::new(out)))
    }

    #[inline(never)]
    fn eval_map(&mut self, entries: &[(Expr, Expr, bool)]) -> R {
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
        for (k, v, optional) in entries {
            let key = self.eval(k)?;
            if !matches!(
                key,
                Value::String(_) | Value::Int(_) | Value::Uint(_) | Value::Bool(_)
            ) {
                return Err(format!("unsupported key type: {}", key.type_name()));
            }
            let val = self.eval(v)?;
            let val = if *optional {
                match val {
                    Value::Optional(Some(inner)) => *inner,
                    Value::Optional(None) => continue,
                    other => return Err(no_overload("optional map entry", &[&other])),
                }
            } else {
                val
            };
            if Value::map_get(&out, &key).is_some() {
                return Err(format!(
                    "Failed with repeated key: {}",
                    functions::display_key(&key)
                ));
            }
            out.push((key, val));
        }
        Ok(Value::Map(Arc::new(out)))
    }

    #[inline(never)]
    fn eval_not(&mut self, inner: &Expr) -> R {
        match self.eval(inner)? {
            Value::Bool(b) => Ok(Value::Bool(!b)),
            other => Err(no_overload("!_", &[&other])),
        }
    }

    #[inline(never)]
    fn eval_neg(&mut self, inner: &Expr) -> R {
        match self.eval(inner)? {
            Value::Int(i) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| "integer overflow".to_string()),
            Value::Double(d) => Ok(Value::Double(-d)),
            Value::Duration(d) => Ok(Value::Duration(-d)),
            other => Err(no_overload("-_", &[&other])),
        }
    }

    #[inline(never)]
    fn eval_cond(&mut self, c: &Expr, yes: &Expr, no: &Expr) -> R {
        match self.eval(c)? {
            Value::Bool(true) => self.eval(yes),
            Value::Bool(false) => self.eval(no),
            other => Err(no_overload("_?_:_", &[&other])),
        }
    }

    #[inline(never)]
    fn eval_binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R {
        let l = self.eval(a)?;
        let r = self.eval(b)?;
        functions::binary(op, l, r)
    }

    /// `&&` (`absorbing` false) and `||` (`absorbing` true): the absorbing value on either side
    /// wins over an error or a non-bool on the other, as in cel-go; otherwise the left error first.
    #[inline(never)]
    fn logic(&mut self, a: &Expr, b: &Expr, absorbing: bool) -> R {
        let l = self.eval(a);
        if let Ok(Value::Bool(x)) = l
            && x == absorbing
        {
            return Ok(Value::Bool(absorbing));
        }
        let r = self.eval(b);
        if let Some(err) = self.budget_error() {
            return Err(err);
        }
        let op = if absorbing { "_||_" } else { "_&&_" };
        match (l, r) {
            (_, Ok(Value::Bool(y))) if y == absorbing => Ok(Value::Bool(absorbing)),
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!absorbing)),
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(x), Ok(y)) => Err(no_overload(op, &[&x, &y])),
        }
    }

    #[inline(never)]
    fn comprehension(
        &mut self,
        kind: Macro,
        range: &Expr,
        var: &str,
        pred: Option<&Expr>,
        transform: Option<&Expr>,
    ) -> R {
        let items: Vec<Value> = match self.eval(range)? {
            Value::List(l) => l.iter().cloned().collect(),
            Value::Map(m) => m.iter().map(|(k, _)| k.clone()).collect(),
            other => {
                return Err(format!(
                    "expression of type '{}' cannot be range of a comprehension (must be list or map)",
                    other.type_name()
                ));
            }
        };
        let name = match kind {
            Macro::All => "all",
            Macro::Exists => "exists",
            Macro::ExistsOne => "exists_one",
            Macro::Filter => "filter",
            Macro::Map => "map",
        };
        // The predicate's result: a bool, else no such overload (the parser always sets `pred`
        // for the macros that need it; `map` without a filter keeps every element).
        let test = |env: &mut Self, item: &Value| -> Result<bool, String> {
            let Some(p) = pred else { return Ok(true) };
            match env.with_local(var, item.clone(), p)? {
                Value::Bool(b) => Ok(b),
                other => Err(no_overload(name, &[&other])),
            }
        };
        match kind {
            Macro::All | Macro::Exists => {
                // all: a false wins over errors; exists: a true wins over errors.
                let decisive = kind == Macro::Exists;
                let mut first_err = None;
                for item in &items {
                    match test(self, item) {
                        Ok(b) if b == decisive => return Ok(Value::Bool(decisive)),
                        Ok(_) => {}
                        Err(e) => {
                            if let Some(err) = self.budget_error() {
                                return Err(err);
                            }
                            first_err.get_or_insert(e);
                        }
                    }
                }
                match first_err {
                    Some(e) => Err(e),
                    None => Ok(Value::Bool(!decisive)),
                }
            }
            Macro::ExistsOne => {
                let mut n = 0usize;
                for item in &items {
                    if test(self, item)? {
                        n += 1;
                    }
                }
                Ok(Value::Bool(n == 1))
            }
            Macro::Filter => {
                let mut out = Vec::new();
                for item in items {
                    if test(self, &item)? {
                        out.push(item);
                    }
                }
                Ok(Value::List(Arc::new(out)))
            }
            Macro::Map => {
                let t = transform.ok_or_else(|| "map() macro without a transform".to_string())?;
                let mut out = Vec::new();
                for item in items {
                    if test(self, &item)? {
                        out.push(self.with_local(var, item, t)?);
                    }
                }
                Ok(Value::List(Arc::new(out)))
            }
        }
    }
}

/// `v.field` (or `v.?field` when `optional`).
fn select(v: Value, field: &str, optional: bool) -> R {
    match v {
        Value::Map(m) => match Value::map_get(&m, &Value::String(field.to_string())) {
            Some(x) if optional => Ok(Value::Optional(Some(Box::new(x.clone())))),
            Some(x) => Ok(x.clone()),
            None if optional => Ok(Value::Optional(None)),
            None => Err(format!("no such key: {field}")),
        },
        // Selecting into an optional stays optional, as in cel-go: `m.?c.missing` is none when
        // `c` has no `missing`, and selecting into a null there is none too.
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => match *inner {
            Value::Null => Ok(Value::Optional(None)),
            inner => select(inner, field, true),
        },
        other => Err(format!(
            "no such overload: field selection '.{field}' on {}",
            other.type_name()
        )),
    }
}

/// `has(v.field)`: whether the map has the key; an error on other types.
fn has(v: Value, field: &str) -> R {
    match v {
        Value::Map(m) => Ok(Value::Bool(
            Value::map_get(&m, &Value::String(field.to_string())).is_some(),
        )),
        Value::Optional(None) => Ok(Value::Bool(false)),
        Value::Optional(Some(inner)) => has(*inner, field),
        other => Err(format!(
            "no such overload: has() of '.{field}' on {}",
            other.type_name()
        )),
    }
}
