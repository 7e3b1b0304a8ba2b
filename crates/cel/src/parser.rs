//! The parser: tokens into an AST, with CEL's precedence, macro expansion (`has`, `all`,
//! `exists`, `exists_one`, `filter`, `map`) and the checks that need no data: known function
//! names, integer literal ranges, reserved words and the nesting bound.

use crate::functions;
use crate::lexer::{Tok, Token};
use crate::value::Value;

/// How deep the AST may nest. Evaluation recurses once per level, so this bounds the stack a
/// hostile expression can take; `&&`/`||` chains are balanced and do not count linearly.
pub(crate) const MAX_DEPTH: u32 = 100;

/// A parsed expression node and its byte offset in the source.
#[derive(Debug)]
pub(crate) struct Expr {
    pub kind: Kind,
    depth: u32,
}

/// The binary operators other than `&&` and `||` (which absorb errors and are nodes of their own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

impl BinOp {
    /// cel-go's name for the operator, used in `no such overload` messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BinOp::Add => "_+_",
            BinOp::Sub => "_-_",
            BinOp::Mul => "_*_",
            BinOp::Div => "_/_",
            BinOp::Rem => "_%_",
            BinOp::Eq => "_==_",
            BinOp::Ne => "_!=_",
            BinOp::Lt => "_<_",
            BinOp::Le => "_<=_",
            BinOp::Gt => "_>_",
            BinOp::Ge => "_>=_",
            BinOp::In => "@in",
        }
    }
}

/// The comprehension macros.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Macro {
    All,
    Exists,
    ExistsOne,
    Filter,
    /// `map(x, t)`, or `map(x, p, t)` with a filter.
    Map,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Lit(Value),
    Ident(String),
    Select {
        operand: Box<Expr>,
        field: String,
        optional: bool,
    },
    /// `has(operand.field)`.
    Has {
        operand: Box<Expr>,
        field: String,
    },
    Index {
        operand: Box<Expr>,
        index: Box<Expr>,
        optional: bool,
    },
    /// A function call; `name` is qualified for namespaced functions (`optional.of`).
    Call {
        target: Option<Box<Expr>>,
        name: String,
        args: Vec<Expr>,
    },
    /// List literal; `true` marks an optional element (`[?x]`).
    List(Vec<(Expr, bool)>),
    /// Map literal; `true` marks an optional entry (`{?k: v}`).
    Map(Vec<(Expr, Expr, bool)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Comprehension {
        kind: Macro,
        range: Box<Expr>,
        var: String,
        /// The predicate (`all`, `exists`, `exists_one`, `filter`, and `map`'s filter).
        pred: Option<Box<Expr>>,
        /// `map`'s transform.
        transform: Option<Box<Expr>>,
    },
}

/// A parse failure: byte offset and reason.
pub(crate) type ParseError = (usize, String);

/// Words CEL reserves: never identifiers.
const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Namespaces of the qualified functions we know (`optional.of(x)`).
const NAMESPACES: &[&str] = &["optional", "sets", "base64", "strings"];

fn node(kind: Kind) -> Result<Expr, String> {
    let child = |e: &Expr| e.depth;
    let max = |it: &mut dyn Iterator<Item = u32>| it.max().unwrap_or(0);
    let d = match &kind {
        Kind::Lit(_) | Kind::Ident(_) => 0,
        Kind::Select { operand, .. } | Kind::Has { operand, .. } => child(operand),
        Kind::Index { operand, index, .. } => child(operand).max(child(index)),
        Kind::Call { target, args, .. } => max(&mut target
            .iter()
            .map(|t| child(t))
            .chain(args.iter().map(child))),
        Kind::List(items) => max(&mut items.iter().map(|(e, _)| child(e))),
        Kind::Map(entries) => max(&mut entries.iter().map(|(k, v, _)| child(k).max(child(v)))),
        Kind::Not(e) | Kind::Neg(e) => child(e),
        Kind::And(a, b) | Kind::Or(a, b) | Kind::Binary(_, a, b) => child(a).max(child(b)),
        Kind::Cond(a, b, c) => child(a).max(child(b)).max(child(c)),
        Kind::Comprehension {
            range,
            pred,
            transform,
            ..
        } => max(&mut std::iter::once(child(range))
            .chain(pred.iter().map(|p| child(p)))
            .chain(transform.iter().map(|t| child(t)))),
    } + 1;
    if d > MAX_DEPTH {
        return Err(format!("expression nested deeper than {MAX_DEPTH} levels"));
    }
    Ok(Expr { kind, depth: d })
}

pub(crate) struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Current recursion depth of `expr()`, bounded by MAX_DEPTH.
    nesting: u32,
}

/// Parses a whole expression.
pub(crate) fn parse(toks: Vec<Token>) -> Result<Expr, ParseError> {
    let mut p = Parser {
        toks,
        pos: 0,
        nesting: 0,
    };
    let e = p.expr()?;
    if p.peek() != &Tok::Eof {
        return Err(p.unexpected());
    }
    Ok(e)
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }
    fn at(&self) -> usize {
        self.toks[self.pos.min(self.toks.len() - 1)].at
    }
    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == t {
            self.bump();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, t: Tok) -> Result<(), ParseError> {
        if self.eat(&t) {
            Ok(())
        } else {
            Err((
                self.at(),
                format!("expected '{}', found {}", t.describe(), self.found()),
            ))
        }
    }
    fn found(&self) -> String {
        match self.peek() {
            Tok::Eof => "end of input".to_string(),
            t => format!("'{}'", t.describe()),
        }
    }
    fn unexpected(&self) -> ParseError {
        match self.peek() {
            Tok::Eof => (self.at(), "unexpected end of input".to_string()),
            t => (self.at(), format!("unexpected '{}'", t.describe())),
        }
    }
    fn mk(&self, at: usize, kind: Kind) -> Result<Expr, ParseError> {
        node(kind).map_err(|r| (at, r))
    }

    /// Expr = Or ["?" Or ":" Expr]
    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err((
                self.at(),
                format!("expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let at = self.at();
        let cond = self.or()?;
        let out = if self.eat(&Tok::Question) {
            let yes = self.or()?;
            self.expect(Tok::Colon)?;
            let no = self.expr()?;
            self.mk(at, Kind::Cond(Box::new(cond), Box::new(yes), Box::new(no)))?
        } else {
            cond
        };
        self.nesting -= 1;
        Ok(out)
    }

    /// Balances a chain of `&&` or `||` operands: the operators are commutative in CEL, so a
    /// long chain nests logarithmically instead of linearly.
    #[inline(never)]
    fn balance(&self, at: usize, mut items: Vec<Expr>, and: bool) -> Result<Expr, ParseError> {
        if items.len() == 1 {
            return items.pop().ok_or((at, "empty operand list".to_string()));
        }
        let right = items.split_off(items.len() / 2);
        let l = self.balance(at, items, and)?;
        let r = self.balance(at, right, and)?;
        let kind = if and {
            Kind::And(Box::new(l), Box::new(r))
        } else {
            Kind::Or(Box::new(l), Box::new(r))
        };
        self.mk(at, kind)
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let at = self.at();
        let mut items = vec![self.and()?];
        while self.eat(&Tok::Or) {
            items.push(self.and()?);
        }
        self.balance(at, items, false)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let at = self.at();
        let mut items = vec![self.relation()?];
        while self.eat(&Tok::And) {
            items.push(self.relation()?);
        }
        self.balance(at, items, true)
    }

    fn relation(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.addition()?;
        loop {
            let op = match self.peek() {
                Tok::Eq => BinOp::Eq,
                Tok::Ne => BinOp::Ne,
                Tok::Lt => BinOp::Lt,
                Tok::Le => BinOp::Le,
                Tok::Gt => BinOp::Gt,
                Tok::Ge => BinOp::Ge,
                Tok::Ident(w) if w == "in" => BinOp::In,
                _ => return Ok(lhs),
            };
            let at = self.at();
            self.bump();
            let rhs = self.addition()?;
            lhs = self.mk(at, Kind::Binary(op, Box::new(lhs), Box::new(rhs)))?;
        }
    }

    fn addition(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.multiplication()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            let at = self.at();
            self.bump();
            let rhs = self.multiplication()?;
            lhs = self.mk(at, Kind::Binary(op, Box::new(lhs), Box::new(rhs)))?;
        }
    }

    fn multiplication(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(lhs),
            };
            let at = self.at();
            self.bump();
            let rhs = self.unary()?;
            lhs = self.mk(at, Kind::Binary(op, Box::new(lhs), Box::new(rhs)))?;
        }
    }

    /// Unary = Member | "!"+ Member | "-"+ Member. Runs of operators are counted, not recursed.
    fn unary(&mut self) -> Result<Expr, ParseError> {
        let at = self.at();
        match self.peek() {
            Tok::Bang => {
                let mut n = 0usize;
                while self.eat(&Tok::Bang) {
                    n += 1;
                }
                let mut e = self.member()?;
                for _ in 0..n {
                    e = self.mk(at, Kind::Not(Box::new(e)))?;
                }
                Ok(e)
            }
            Tok::Minus => {
                let mut n = 0usize;
                while self.eat(&Tok::Minus) {
                    n += 1;
                }
                // A negative integer literal is one literal (so i64::MIN is writable), provided
                // no member access follows it.
                let mut e = if let Tok::Int(v) = *self.peek()
                    && !matches!(self.peek_at(1), Tok::Dot | Tok::LBracket)
                {
                    let lit_at = self.at();
                    self.bump();
                    n -= 1;
                    let neg = if v == 1u64 << 63 {
                        i64::MIN
                    } else {
                        let p = i64::try_from(v)
                            .map_err(|_| (lit_at, format!("invalid int literal '{v}'")))?;
                        -p
                    };
                    self.mk(lit_at, Kind::Lit(Value::Int(neg)))?
                } else {
                    self.member()?
                };
                for _ in 0..n {
                    e = self.mk(at, Kind::Neg(Box::new(e)))?;
                }
                Ok(e)
            }
            _ => self.member(),
        }
    }

    fn ident(&mut self) -> Result<String, ParseError> {
        match self.peek().clone() {
            Tok::Ident(w) => {
                if RESERVED.contains(&w.as_str()) || w == "in" {
                    return Err((self.at(), format!("reserved identifier '{w}'")));
                }
                self.bump();
                Ok(w)
            }
            _ => Err((
                self.at(),
                format!("expected an identifier, found {}", self.found()),
            )),
        }
    }

    /// A field or method name after `.`: CEL's reserved words are allowed there (cel-go only
    /// refuses them as variables), so `metadata.namespace` is a selection; the keywords `in`,
    /// `true`, `false` and `null` are not.
    fn field_name(&mut self) -> Result<String, ParseError> {
        match self.peek().clone() {
            Tok::Ident(w) if !matches!(w.as_str(), "in" | "true" | "false" | "null") => {
                self.bump();
                Ok(w)
            }
            _ => Err((
                self.at(),
                format!("expected a field name, found {}", self.found()),
            )),
        }
    }

    /// Member = Primary { "." ["?"] IDENT [ "(" args ")" ] | "[" ["?"] Expr "]" }
    fn member(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.primary()?;
        loop {
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    let optional = self.eat(&Tok::Question);
                    let at = self.at();
                    let name = self.field_name()?;
                    if !optional && self.peek() == &Tok::LParen {
                        self.bump();
                        let args = self.args(Tok::RParen)?;
                        e = self.member_call(at, e, name, args)?;
                    } else {
                        e = self.mk(
                            at,
                            Kind::Select {
                                operand: Box::new(e),
                                field: name,
                                optional,
                            },
                        )?;
                    }
                }
                Tok::LBracket => {
                    let at = self.at();
                    self.bump();
                    let optional = self.eat(&Tok::Question);
                    let index = self.expr()?;
                    self.expect(Tok::RBracket)?;
                    e = self.mk(
                        at,
                        Kind::Index {
                            operand: Box::new(e),
                            index: Box::new(index),
                            optional,
                        },
                    )?;
                }
                _ => return Ok(e),
            }
        }
    }

    /// Comma-separated expressions up to `close` (a trailing comma is allowed in lists).
    fn args(&mut self, close: Tok) -> Result<Vec<Expr>, ParseError> {
        let mut out = Vec::new();
        if self.eat(&close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.eat(&close) {
                return Ok(out);
            }
            self.expect(Tok::Comma)?;
        }
    }

    /// `target.name(args)`: a comprehension macro, a namespaced function, or a method.
    #[inline(never)]
    fn member_call(
        &mut self,
        at: usize,
        target: Expr,
        name: String,
        mut args: Vec<Expr>,
    ) -> Result<Expr, ParseError> {
        let kind = match (name.as_str(), args.len()) {
            ("all", 2) => Some(Macro::All),
            ("exists", 2) => Some(Macro::Exists),
            ("exists_one" | "existsOne", 2) => Some(Macro::ExistsOne),
            ("filter", 2) => Some(Macro::Filter),
            ("map", 2 | 3) => Some(Macro::Map),
            _ => None,
        };
        if let Some(kind) = kind {
            let var = match &args[0].kind {
                Kind::Ident(v) => v.clone(),
                _ => {
                    return Err((
                        at,
                        format!("{name}() macro: the first argument must be a simple name"),
                    ));
                }
            };
            let mut rest = args.split_off(1);
            let (pred, transform) = match (kind, rest.len()) {
                (Macro::Map, 1) => (None, rest.pop()),
                (Macro::Map, _) => {
                    let t = rest.pop();
                    (rest.pop(), t)
                }
                _ => (rest.pop(), None),
            };
            return self.mk(
                at,
                Kind::Comprehension {
                    kind,
                    range: Box::new(target),
                    var,
                    pred: pred.map(Box::new),
                    transform: transform.map(Box::new),
                },
            );
        }
        if let Kind::Ident(ns) = &target.kind
            && NAMESPACES.contains(&ns.as_str())
        {
            let qualified = format!("{ns}.{name}");
            if functions::is_global(&qualified) {
                return self.mk(
                    at,
                    Kind::Call {
                        target: None,
                        name: qualified,
                        args,
                    },
                );
            }
            return Err((at, format!("unknown function '{qualified}'")));
        }
        if !functions::is_method(&name) {
            return Err((at, format!("unknown function '{name}'")));
        }
        self.mk(
            at,
            Kind::Call {
                target: Some(Box::new(target)),
                name,
                args,
            },
        )
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let at = self.at();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                let i = i64::try_from(v).map_err(|_| (at, format!("invalid int literal '{v}'")))?;
                self.mk(at, Kind::Lit(Value::Int(i)))
            }
            Tok::Uint(v) => {
                self.bump();
                self.mk(at, Kind::Lit(Value::Uint(v)))
            }
            Tok::Double(v) => {
                self.bump();
                self.mk(at, Kind::Lit(Value::Double(v)))
            }
            Tok::Str(s) => {
                self.bump();
                self.mk(at, Kind::Lit(Value::String(s)))
            }
            Tok::Bytes(b) => {
                self.bump();
                self.mk(at, Kind::Lit(Value::Bytes(b)))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(Tok::RParen)?;
                Ok(e)
            }
            Tok::LBracket => self.list_literal(at),
            Tok::LBrace => self.map_literal(at),
            Tok::Dot => Err((
                at,
                "unsupported: leading '.' (root-qualified names)".to_string(),
            )),
            Tok::Ident(w) => self.ident_or_call(at, w),
            _ => Err(self.unexpected()),
        }
    }

    #[inline(never)]
    fn list_literal(&mut self, at: usize) -> Result<Expr, ParseError> {
        self.bump();
        let mut items = Vec::new();
        while !self.eat(&Tok::RBracket) {
            let optional = self.eat(&Tok::Question);
            items.push((self.expr()?, optional));
            if !self.eat(&Tok::Comma) {
                self.expect(Tok::RBracket)?;
                break;
            }
        }
        self.mk(at, Kind::List(items))
    }

    #[inline(never)]
    fn map_literal(&mut self, at: usize) -> Result<Expr, ParseError> {
        self.bump();
        let mut entries = Vec::new();
        while !self.eat(&Tok::RBrace) {
            let optional = self.eat(&Tok::Question);
            let k = self.expr()?;
            self.expect(Tok::Colon)?;
            let v = self.expr()?;
            entries.push((k, v, optional));
            if !self.eat(&Tok::Comma) {
                self.expect(Tok::RBrace)?;
                break;
            }
        }
        self.mk(at, Kind::Map(entries))
    }

    #[inline(never)]
    fn ident_or_call(&mut self, at: usize, w: String) -> Result<Expr, ParseError> {
        match w.as_str() {
            "true" | "false" => {
                self.bump();
                return self.mk(at, Kind::Lit(Value::Bool(w == "true")));
            }
            "null" => {
                self.bump();
                return self.mk(at, Kind::Lit(Value::Null));
            }
            _ => {}
        }
        let name = self.ident()?;
        if self.peek() == &Tok::LParen {
            self.bump();
            let args = self.args(Tok::RParen)?;
            return self.global_call(at, name, args);
        }
        if self.peek() == &Tok::LBrace {
            return Err((
                at,
                format!("unsupported: message construction '{name}{{...}}'"),
            ));
        }
        self.mk(at, Kind::Ident(name))
    }

    /// `name(args)`: the `has` macro or a global function.
    #[inline(never)]
    fn global_call(
        &mut self,
        at: usize,
        name: String,
        mut args: Vec<Expr>,
    ) -> Result<Expr, ParseError> {
        if name == "has" {
            if args.len() != 1 {
                return Err((at, "has() macro takes exactly one argument".to_string()));
            }
            let arg = args
                .pop()
                .ok_or((at, "has() macro takes exactly one argument".to_string()))?;
            return match arg.kind {
                Kind::Select {
                    operand,
                    field,
                    optional: false,
                } => self.mk(at, Kind::Has { operand, field }),
                _ => Err((
                    at,
                    "invalid argument to has() macro: it must be a field selection".to_string(),
                )),
            };
        }
        if !functions::is_global(&name) {
            return Err((at, format!("unknown function '{name}'")));
        }
        self.mk(
            at,
            Kind::Call {
                target: None,
                name,
                args,
            },
        )
    }
}
