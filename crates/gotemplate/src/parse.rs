//! The parser of Go's text/template (`text/template/parse/parse.go` and `node.go` of Go 1.24):
//! parse trees, one per template name (a file's text, and each `define`/`block` in it), with
//! Go's parse errors (`template: NAME:LINE: unexpected "}" in operand`, `function "x" not
//! defined`, `undefined variable "$x"`, `{{break}} outside {{range}}`, …) and Go's `String()`
//! forms of nodes, which execution errors quote (`at <.Values.a.b>`).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::error::ParseError;
use crate::lex::{self, Item, Kind, LexOptions};

/// Deep nesting (parentheses, `if` in `if`) recurses; below this much stack left, recursion
/// continues on a new heap-allocated stack segment of `STACK_GROWTH` bytes.
pub(crate) const RED_ZONE: usize = 64 * 1024;
pub(crate) const STACK_GROWTH: usize = 1024 * 1024;

/// The source of one parsed file, shared by the trees it defines (for error positions).
#[derive(Debug)]
pub(crate) struct Source {
    /// The name the file was parsed under (Go's `ParseName`).
    pub parse_name: String,
    pub line_starts: Vec<usize>,
}

impl Source {
    /// Go's `ErrorContext` location: `NAME:LINE:COL` (the column counts bytes from 0 after
    /// the line's start, or is the byte offset on the first line).
    pub fn location(&self, pos: usize) -> String {
        let line = lex::line_of(&self.line_starts, pos);
        let col = pos - self.line_starts[line - 1];
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

/// A named template's parse tree.
#[derive(Debug)]
pub(crate) struct Tree {
    pub name: String,
    pub source: Arc<Source>,
    pub root: Vec<Node>,
}

impl Tree {
    /// Go's `parse.IsEmptyTree`: only blank text and comments.
    pub fn is_empty(&self) -> bool {
        self.root.iter().all(|n| match n {
            Node::Text { text, .. } => text.trim_ascii().is_empty(),
            _ => false,
        })
    }
}

/// A statement-level node.
#[derive(Debug)]
pub(crate) enum Node {
    Text {
        text: String,
    },
    Action {
        pos: usize,
        pipe: Pipe,
    },
    If(Branch),
    With(Branch),
    Range(Branch),
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

/// The shared shape of `if`, `with` and `range`.
#[derive(Debug)]
pub(crate) struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

/// A pipeline, possibly declaring or assigning variables.
#[derive(Debug)]
pub(crate) struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<Variable>,
    pub cmds: Vec<Command>,
}

/// Deeply nested trees are dropped level by level on a growing stack (the derived drop would
/// recurse once per nesting level).
impl Drop for Pipe {
    fn drop(&mut self) {
        let cmds = std::mem::take(&mut self.cmds);
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, move || drop(cmds));
    }
}

impl Drop for Branch {
    fn drop(&mut self) {
        let lists = (std::mem::take(&mut self.list), self.else_list.take());
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, move || drop(lists));
    }
}

/// A variable reference `$x.a.b` (idents: `$x`, `a`, `b`).
#[derive(Debug)]
pub(crate) struct Variable {
    pub pos: usize,
    pub idents: Vec<String>,
}

/// One command of a pipeline: an operand and its arguments.
#[derive(Debug)]
pub(crate) struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

/// An operand.
#[derive(Debug)]
pub(crate) enum Arg {
    Field {
        pos: usize,
        idents: Vec<String>,
    },
    Variable(Variable),
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    Identifier {
        pos: usize,
        name: String,
    },
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Bool {
        pos: usize,
        val: bool,
    },
    Number(Box<Number>),
    String {
        pos: usize,
        quoted: String,
        text: String,
    },
    Pipe(Box<Pipe>),
}

/// A numeric constant with every Go type it can take.
#[derive(Debug)]
pub(crate) struct Number {
    pub pos: usize,
    pub text: String,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int: i64,
    pub float: f64,
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Bool { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Variable(v) => v.pos,
            Arg::Number(n) => n.pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

impl fmt::Display for Arg {
    /// Go's `Node.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field { idents, .. } => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Variable(v) => write!(f, "{v}"),
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(p) = node.as_ref() {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for field in fields {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Dot { .. } => f.write_str("."),
            Arg::Nil { .. } => f.write_str("nil"),
            Arg::Bool { val, .. } => write!(f, "{val}"),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for Variable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.idents.join("."))
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.write(f))
    }
}

impl Pipe {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, list: &[Node]) -> fmt::Result {
    for n in list {
        write!(f, "{n}")?;
    }
    Ok(())
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.write(f))
    }
}

impl Node {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let branch = |f: &mut fmt::Formatter<'_>, word: &str, b: &Branch| {
            write!(f, "{{{{{word} {}}}}}", b.pipe)?;
            write_list(f, &b.list)?;
            if let Some(e) = &b.else_list {
                f.write_str("{{else}}")?;
                write_list(f, e)?;
            }
            f.write_str("{{end}}")
        };
        match self {
            Node::Text { text } => f.write_str(text),
            Node::Action { pipe, .. } => write!(f, "{{{{{pipe}}}}}"),
            Node::If(b) => branch(f, "if", b),
            Node::With(b) => branch(f, "with", b),
            Node::Range(b) => branch(f, "range", b),
            Node::Template { name, pipe, .. } => match pipe {
                Some(p) => write!(f, "{{{{template {} {p}}}}}", crate::fmt::quote(name)),
                None => write!(f, "{{{{template {}}}}}", crate::fmt::quote(name)),
            },
            Node::Break => f.write_str("{{break}}"),
            Node::Continue => f.write_str("{{continue}}"),
        }
    }
}

/// What ended an item list.
enum End {
    End,
    Else,
}

/// Parses `text` under `name`: the trees it defines, by name (the file's own tree under
/// `name` first). `has_func` says whether a function name exists (host or builtin).
pub(crate) fn parse(
    name: &str,
    text: &str,
    has_func: &dyn Fn(&str) -> bool,
) -> Result<Vec<Tree>, ParseError> {
    let source = Arc::new(Source {
        parse_name: name.to_string(),
        line_starts: lex::line_starts(text),
    });
    let items = lex::lex(
        text,
        LexOptions {
            break_ok: !has_func("break"),
            continue_ok: !has_func("continue"),
        },
        &source.line_starts,
    );
    let mut p = Parser {
        items,
        cursor: 0,
        furthest: 0,
        source: source.clone(),
        has_func,
        vars: vec!["$".into()],
        range_depth: 0,
        action_line: 0,
        trees: Vec::new(),
        names: HashMap::new(),
    };
    let root = p.parse_top()?;
    let tree = Tree {
        name: name.to_string(),
        source,
        root,
    };
    p.add(tree)?;
    Ok(p.trees)
}

struct Parser<'a> {
    items: Vec<Item>,
    cursor: usize,
    /// The furthest token read: Go reports the line of its last lexed token.
    furthest: usize,
    source: Arc<Source>,
    has_func: &'a dyn Fn(&str) -> bool,
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
    trees: Vec<Tree>,
    names: HashMap<String, usize>,
}

type PResult<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn item(&self, i: usize) -> &Item {
        // The lexer always ends with Eof or Error; reading stops there.
        &self.items[i.min(self.items.len() - 1)]
    }

    fn next(&mut self) -> Item {
        let it = self.item(self.cursor).clone();
        // Reading past the end keeps returning the last token (Eof or Error); the cursor
        // still moves, so a backup after it returns to that same token.
        self.furthest = self.furthest.max(self.cursor);
        self.cursor += 1;
        it
    }

    fn backup(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    fn peek(&mut self) -> Item {
        let it = self.item(self.cursor).clone();
        self.furthest = self.furthest.max(self.cursor);
        it
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let t = self.next();
            if t.kind != Kind::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn errorf(&self, msg: impl fmt::Display) -> ParseError {
        let line = self.item(self.furthest).line;
        ParseError {
            name: self.source.parse_name.clone(),
            line,
            message: format!("template: {}:{}: {}", self.source.parse_name, line, msg),
        }
    }

    fn unexpected(&self, token: &Item, context: &str) -> ParseError {
        if token.kind == Kind::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != token.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.source.parse_name, self.action_line
                );
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format_args!("{token}{extra}"));
        }
        self.errorf(format_args!("unexpected {token} in {context}"))
    }

    fn expect(&mut self, kind: Kind, context: &str) -> PResult<Item> {
        let t = self.next_non_space();
        if t.kind != kind {
            return Err(self.unexpected(&t, context));
        }
        Ok(t)
    }

    /// Adds a tree to this parse's set; a second non-empty definition of a name is an error.
    fn add(&mut self, tree: Tree) -> PResult<()> {
        match self.names.get(&tree.name) {
            None => {
                self.names.insert(tree.name.clone(), self.trees.len());
                self.trees.push(tree);
            }
            Some(&i) => {
                if self.trees[i].is_empty() {
                    self.trees[i] = tree;
                } else if !tree.is_empty() {
                    return Err(self.errorf(format_args!(
                        "template: multiple definition of template {}",
                        crate::fmt::quote(&tree.name)
                    )));
                }
            }
        }
        Ok(())
    }

    fn parse_top(&mut self) -> PResult<Vec<Node>> {
        let mut root = Vec::new();
        while self.peek().kind != Kind::Eof {
            if self.peek().kind == Kind::LeftDelim {
                let save = self.cursor;
                self.next();
                if self.next_non_space().kind == Kind::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.cursor = save;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.push(n),
                Parsed::End => return Err(self.errorf("unexpected {{end}}")),
                Parsed::Else => return Err(self.errorf("unexpected {{else}}")),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let t = self.next_non_space();
        if t.kind != Kind::String && t.kind != Kind::RawString {
            return Err(self.unexpected(&t, context));
        }
        let name = unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))?;
        self.expect(Kind::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if !matches!(end, End::End) {
            return Err(self.errorf(format_args!("unexpected {{{{else}}}} in {context}")));
        }
        self.add(Tree {
            name,
            source: self.source.clone(),
            root: list,
        })
    }

    fn item_list(&mut self) -> PResult<(Vec<Node>, End)> {
        let mut list = Vec::new();
        while self.peek_non_space().kind != Kind::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.push(n),
                Parsed::End => return Ok((list, End::End)),
                Parsed::Else => return Ok((list, End::Else)),
            }
        }
        Err(self.errorf("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Text => Ok(Parsed::Node(Node::Text { text: t.val })),
            Kind::LeftDelim => {
                self.action_line = t.line;
                let r = self.action();
                self.action_line = 0;
                r
            }
            _ => Err(self.unexpected(&t, "input")),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Block => return self.block_control().map(Parsed::Node),
            Kind::Break | Kind::Continue => {
                let word = if t.kind == Kind::Break {
                    "break"
                } else {
                    "continue"
                };
                let n = self.next_non_space();
                if n.kind != Kind::RightDelim {
                    return Err(self.unexpected(&n, &format!("{{{{{word}}}}}")));
                }
                if self.range_depth == 0 {
                    return Err(self.errorf(format_args!("{{{{{word}}}}} outside {{{{range}}}}")));
                }
                return Ok(Parsed::Node(if t.kind == Kind::Break {
                    Node::Break
                } else {
                    Node::Continue
                }));
            }
            Kind::Else => return self.else_control(),
            Kind::End => {
                self.expect(Kind::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            Kind::If => return self.branch_control("if").map(|b| Parsed::Node(Node::If(b))),
            Kind::Range => {
                return self
                    .branch_control("range")
                    .map(|b| Parsed::Node(Node::Range(b)));
            }
            Kind::Template => return self.template_control().map(Parsed::Node),
            Kind::With => {
                return self
                    .branch_control("with")
                    .map(|b| Parsed::Node(Node::With(b)));
            }
            _ => {}
        }
        self.backup();
        let pos = self.peek().pos;
        let pipe = self.pipeline("command", Kind::RightDelim)?;
        Ok(Parsed::Node(Node::Action { pos, pipe }))
    }

    fn else_control(&mut self) -> PResult<Parsed> {
        let peek = self.peek_non_space();
        if peek.kind == Kind::If || peek.kind == Kind::With {
            return Ok(Parsed::Else);
        }
        self.expect(Kind::RightDelim, "else")?;
        Ok(Parsed::Else)
    }

    fn branch_control(&mut self, context: &str) -> PResult<Branch> {
        let mark = self.vars.len();
        let r = stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
            self.branch_control_inner(context)
        });
        self.vars.truncate(mark);
        r
    }

    fn branch_control_inner(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = r?;
        let mut else_list = None;
        if let End::Else = end {
            if context == "if" && self.peek().kind == Kind::If {
                self.next();
                else_list = Some(vec![Node::If(self.branch_control("if")?)]);
            } else if context == "with" && self.peek().kind == Kind::With {
                self.next();
                else_list = Some(vec![Node::With(self.branch_control("with")?)]);
            } else {
                let (l, end) = self.item_list()?;
                if !matches!(end, End::End) {
                    return Err(self.errorf("expected end; found {{else}}"));
                }
                else_list = Some(l);
            }
        }
        Ok(Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn template_name(&mut self, t: &Item, context: &str) -> PResult<String> {
        match t.kind {
            Kind::String | Kind::RawString => {
                unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))
            }
            _ => Err(self.unexpected(t, context)),
        }
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, context)?;
        let mut pipe = None;
        if self.next_non_space().kind != Kind::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, Kind::RightDelim)?);
        }
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, context)?;
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let r = self.item_list();
        self.vars = saved_vars;
        self.range_depth = saved_range;
        let (list, end) = r?;
        if !matches!(end, End::End) {
            return Err(self.errorf(format_args!("unexpected {{{{else}}}} in {context}")));
        }
        self.add(Tree {
            name: name.clone(),
            source: self.source.clone(),
            root: list,
        })?;
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn pipeline(&mut self, context: &str, end: Kind) -> PResult<Pipe> {
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.pipeline_inner(context, end))
    }

    fn pipeline_inner(&mut self, context: &str, end: Kind) -> PResult<Pipe> {
        let pos = self.peek_non_space().pos;
        let mut pipe = Pipe {
            pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        loop {
            let v = self.peek_non_space();
            if v.kind != Kind::Variable {
                break;
            }
            let save = self.cursor;
            self.next_non_space();
            let after = self.peek();
            let next = self.peek_non_space();
            match next.kind {
                Kind::Assign | Kind::Declare => {
                    pipe.is_assign = next.kind == Kind::Assign;
                    self.next_non_space();
                    pipe.decl.push(Variable {
                        pos: v.pos,
                        idents: split_var(&v.val),
                    });
                    self.vars.push(v.val.clone());
                }
                Kind::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(Variable {
                        pos: v.pos,
                        idents: split_var(&v.val),
                    });
                    self.vars.push(v.val.clone());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().kind {
                            Kind::Variable | Kind::RightDelim | Kind::RightParen => continue,
                            _ => return Err(self.errorf("range can only initialize variables")),
                        }
                    }
                    return Err(self.errorf(format_args!("too many declarations in {context}")));
                }
                _ => {
                    let _ = after;
                    self.cursor = save;
                }
            }
            break;
        }
        loop {
            let t = self.next_non_space();
            if t.kind == end {
                self.check_pipeline(&pipe, context)?;
                return Ok(pipe);
            }
            match t.kind {
                Kind::Bool
                | Kind::CharConstant
                | Kind::Complex
                | Kind::Dot
                | Kind::Field
                | Kind::Identifier
                | Kind::Number
                | Kind::Nil
                | Kind::RawString
                | Kind::String
                | Kind::Variable
                | Kind::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&t, context)),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.errorf(format_args!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args.first(),
                Some(
                    Arg::Bool { .. }
                        | Arg::Dot { .. }
                        | Arg::Nil { .. }
                        | Arg::Number(_)
                        | Arg::String { .. }
                )
            ) {
                return Err(self.errorf(format_args!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command {
            pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let t = self.next();
            match t.kind {
                Kind::Space => continue,
                Kind::RightDelim | Kind::RightParen => self.backup(),
                Kind::Pipe => {}
                _ => return Err(self.unexpected(&t, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.errorf("empty command"));
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().kind != Kind::Field {
            return Ok(Some(node));
        }
        let chain_pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().kind == Kind::Field {
            let f = self.next();
            fields.push(f.val[1..].to_string());
        }
        Ok(Some(match node {
            Arg::Field { mut idents, .. } => {
                idents.extend(fields);
                Arg::Field {
                    pos: chain_pos,
                    idents,
                }
            }
            Arg::Variable(mut v) => {
                v.idents.extend(fields);
                v.pos = chain_pos;
                Arg::Variable(v)
            }
            Arg::Bool { .. }
            | Arg::String { .. }
            | Arg::Number(_)
            | Arg::Nil { .. }
            | Arg::Dot { .. } => {
                return Err(self.errorf(format_args!(
                    "unexpected . after term {}",
                    crate::fmt::quote(&node.to_string())
                )));
            }
            other => Arg::Chain {
                pos: chain_pos,
                node: Box::new(other),
                fields,
            },
        }))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let t = self.next_non_space();
        let pos = t.pos;
        Ok(Some(match t.kind {
            Kind::Identifier => {
                if !(self.has_func)(&t.val) {
                    return Err(self.errorf(format_args!(
                        "function {} not defined",
                        crate::fmt::quote(&t.val)
                    )));
                }
                Arg::Identifier { pos, name: t.val }
            }
            Kind::Dot => Arg::Dot { pos },
            Kind::Nil => Arg::Nil { pos },
            Kind::Variable => {
                let idents = split_var(&t.val);
                if !self.vars.iter().any(|v| *v == idents[0]) {
                    return Err(self.errorf(format_args!(
                        "undefined variable {}",
                        crate::fmt::quote(&idents[0])
                    )));
                }
                Arg::Variable(Variable { pos, idents })
            }
            Kind::Field => Arg::Field {
                pos,
                idents: t.val[1..].split('.').map(str::to_string).collect(),
            },
            Kind::Bool => Arg::Bool {
                pos,
                val: t.val == "true",
            },
            Kind::CharConstant | Kind::Complex | Kind::Number => {
                let n = number(pos, &t.val, t.kind).map_err(|e| self.errorf(e))?;
                Arg::Number(Box::new(n))
            }
            Kind::LeftParen => Arg::Pipe(Box::new(
                self.pipeline("parenthesized pipeline", Kind::RightParen)?,
            )),
            Kind::String | Kind::RawString => {
                let text = unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))?;
                Arg::String {
                    pos,
                    quoted: t.val,
                    text,
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

enum Parsed {
    Node(Node),
    End,
    Else,
}

fn split_var(s: &str) -> Vec<String> {
    s.split('.').map(str::to_string).collect()
}

/// Go's `strconv.Unquote` for `"…"` and `` `…` `` literals.
pub(crate) fn unquote(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return None;
    }
    let q = b[0];
    if b[b.len() - 1] != q {
        return None;
    }
    let body = &s[1..s.len() - 1];
    match q {
        b'`' => {
            if body.contains('`') {
                return None;
            }
            Some(body.replace('\r', ""))
        }
        b'"' => {
            let mut out = Vec::with_capacity(body.len());
            let mut raw = false;
            let mut rest = body;
            while !rest.is_empty() {
                let (c, tail) = unquote_char(rest, '"')?;
                match c {
                    Unquoted::Char(c) => {
                        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes())
                    }
                    Unquoted::Byte(b) => {
                        raw |= b >= 0x80;
                        out.push(b);
                    }
                }
                rest = tail;
            }
            // A `\xNN` or octal escape is one byte of Go's string, whatever the bytes around it
            // make of it: kept exactly through gostr's escapes when they are not UTF-8.
            if raw {
                Some(crate::gostr::from_bytes(&out))
            } else {
                String::from_utf8(out).ok()
            }
        }
        _ => None,
    }
}

/// One unit of a quoted literal, as Go's `strconv.UnquoteChar` returns it: a character, or
/// the single byte of a `\xNN` or octal escape (Go's `multibyte == false`), which in a string
/// is that byte even when it is not UTF-8 alone, and in a character constant is its value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unquoted {
    Char(char),
    Byte(u8),
}

/// Go's `strconv.UnquoteChar`: one (possibly escaped) character or byte.
fn unquote_char(s: &str, quote: char) -> Option<(Unquoted, &str)> {
    let c = s.chars().next()?;
    if c == quote && (quote == '\'' || quote == '"') {
        return None;
    }
    if c != '\\' {
        if c == '\n' {
            return None;
        }
        return Some((Unquoted::Char(c), &s[c.len_utf8()..]));
    }
    let rest = &s[1..];
    let e = rest.chars().next()?;
    let rest = &rest[e.len_utf8()..];
    let simple = match e {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' => {
            if e != quote {
                return None;
            }
            Some(e)
        }
        _ => None,
    };
    if let Some(c) = simple {
        return Some((Unquoted::Char(c), rest));
    }
    let (n, radix) = match e {
        'x' => (2, 16),
        'u' => (4, 16),
        'U' => (8, 16),
        '0'..='7' => (2, 8),
        _ => return None,
    };
    if radix == 8 {
        let digits = format!("{e}{}", rest.get(..2)?);
        let v = u8::try_from(u32::from_str_radix(&digits, 8).ok()?).ok()?;
        return Some((Unquoted::Byte(v), &rest[2..]));
    }
    let digits = rest.get(..n)?;
    // from_str_radix takes a leading sign, Go's escapes do not.
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u32::from_str_radix(digits, 16).ok()?;
    if e == 'x' {
        return Some((Unquoted::Byte(u8::try_from(v).ok()?), &rest[n..]));
    }
    Some((Unquoted::Char(char::from_u32(v)?), &rest[n..]))
}

/// Go's `newNumber`: which Go types the constant can take.
fn number(pos: usize, text: &str, kind: Kind) -> Result<Number, String> {
    let mut n = Number {
        pos,
        text: text.to_string(),
        is_int: false,
        is_uint: false,
        is_float: false,
        is_complex: false,
        int: 0,
        float: 0.0,
    };
    if kind == Kind::CharConstant {
        let (c, tail) = unquote_char(&text[1..], '\'').ok_or("invalid syntax")?;
        if tail != "'" {
            return Err(format!("malformed character constant: {text}"));
        }
        let r = match c {
            Unquoted::Char(c) => u32::from(c),
            Unquoted::Byte(b) => u32::from(b),
        };
        n.is_int = true;
        n.is_uint = true;
        n.is_float = true;
        n.int = i64::from(r);
        n.float = f64::from(r);
        return Ok(n);
    }
    if kind == Kind::Complex || text.ends_with('i') {
        n.is_complex = true;
        return Ok(n);
    }
    let u = parse_int(text, false);
    if let Some(u) = u {
        n.is_uint = true;
        if u <= i64::MAX as u128 {
            n.int = u as i64;
        }
    }
    if let Some(i) = parse_int(text, true) {
        let neg = text.starts_with('-');
        if (neg && i <= 1u128 << 63) || (!neg && i <= i64::MAX as u128) {
            n.is_int = true;
            n.int = if neg {
                (i as i128).wrapping_neg() as i64
            } else {
                i as i64
            };
            if n.int == 0 {
                n.is_uint = true;
            }
        }
    }
    if n.is_uint && parse_int(text, false).is_some_and(|u| u > u64::MAX as u128) {
        n.is_uint = false;
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = parse_int(text, false).unwrap_or(0) as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", crate::fmt::quote(text)));
        }
        n.is_float = true;
        n.float = f;
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            n.is_int = true;
            n.int = f as i64;
        }
        if f.fract() == 0.0 && (0.0..1.8e19).contains(&f) {
            n.is_uint = true;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!(
            "illegal number syntax: {}",
            crate::fmt::quote(text)
        ));
    }
    Ok(n)
}

/// Go's underscore rule for number literals: each `_` separates digits (or follows a base
/// prefix).
fn underscores_ok(s: &str) -> bool {
    if !s.contains('_') {
        return true;
    }
    let b = s.trim_start_matches(['+', '-']).as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let hex = b.len() >= 2 && b[0] == b'0' && matches!(b[1] | 0x20, b'x' | b'b' | b'o');
    if hex {
        i = 2;
        saw = b'0';
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

/// Go's `strconv.ParseInt`/`ParseUint` with base 0 (prefixes `0x`, `0o`, `0b`, `0`, and
/// underscores); the magnitude, when it fits 128 bits.
fn parse_int(text: &str, signed: bool) -> Option<u128> {
    let mut s = text;
    if signed {
        s = s.strip_prefix(['+', '-']).unwrap_or(s);
    } else if s.starts_with(['+', '-']) {
        return None;
    }
    if !underscores_ok(s) {
        return None;
    }
    let (digits, radix) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (r, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    if digits.is_empty() {
        return None;
    }
    u128::from_str_radix(&digits, radix).ok()
}

/// Go's `strconv.ParseFloat` for the forms the lexer lets through (decimal with `_`, hex
/// floats with `p`).
fn parse_float(text: &str) -> Option<f64> {
    if !underscores_ok(text) {
        return None;
    }
    let s: String = text.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, s.strip_prefix('+').unwrap_or(&s).to_string()),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let (mant, exp) = h.split_once(['p', 'P'])?;
        let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = 0f64;
        for c in ip.chars().chain(fp.chars()) {
            v = v * 16.0 + f64::from(c.to_digit(16)?);
        }
        let e: i32 = exp.parse().ok()?;
        v * 2f64.powi(e - 4 * fp.len() as i32)
    } else {
        if body.contains(['p', 'P']) || body.is_empty() {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn funcs(name: &str) -> bool {
        matches!(name, "printf" | "len" | "eq" | "include")
    }

    fn one(text: &str) -> Vec<Node> {
        parse("t", text, &funcs).unwrap().remove(0).root
    }

    fn err(text: &str) -> String {
        parse("t", text, &funcs).unwrap_err().message
    }

    #[test]
    fn nodes_print_like_go() {
        let n = one(
            "{{ $x := .a.b | printf \"%d\" (len $) }}{{if eq 1 2}}a{{else if .c}}b{{else}}c{{end}}",
        );
        assert_eq!(n[0].to_string(), "{{$x := .a.b | printf \"%d\" (len $)}}");
        assert_eq!(
            n[1].to_string(),
            "{{if eq 1 2}}a{{else}}{{if .c}}b{{else}}c{{end}}{{end}}"
        );
        let n = one("{{ (.a).b.c }}{{range $i, $v := .}}{{break}}{{end}}{{template \"x\" .}}");
        assert_eq!(n[0].to_string(), "{{(.a).b.c}}");
        assert_eq!(n[1].to_string(), "{{range $i, $v := .}}{{break}}{{end}}");
        assert_eq!(n[2].to_string(), "{{template \"x\" .}}");
    }

    #[test]
    fn field_chains_take_the_position_of_the_second_field() {
        let n = one("{{ .Values.a.b }}");
        let Node::Action { pipe, .. } = &n[0] else {
            panic!()
        };
        assert_eq!(pipe.cmds[0].args[0].pos(), 10);
    }

    #[test]
    fn defines_become_trees() {
        let trees = parse(
            "f",
            "a{{define \"x\"}}X{{end}}{{block \"y\" .}}Y{{end}}",
            &funcs,
        )
        .unwrap();
        let names: Vec<&str> = trees.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["x", "y", "f"]);
    }

    #[test]
    fn errors_read_like_go() {
        assert_eq!(err("{{ .x"), "template: t:1: unclosed action");
        assert_eq!(err("{{ .x }"), "template: t:1: unexpected \"}\" in operand");
        assert_eq!(
            err("a\n{{ .x }\n}}"),
            "template: t:2: unexpected \"}\" in operand"
        );
        assert_eq!(
            err("{{ foo }}"),
            "template: t:1: function \"foo\" not defined"
        );
        assert_eq!(err("{{ $x }}"), "template: t:1: undefined variable \"$x\"");
        assert_eq!(err("{{ end }}"), "template: t:1: unexpected {{end}}");
        assert_eq!(err("{{ if .x }}"), "template: t:1: unexpected EOF");
        assert_eq!(
            err("{{ break }}"),
            "template: t:1: {{break}} outside {{range}}"
        );
        assert_eq!(err("{{ }}"), "template: t:1: missing value for command");
        assert_eq!(
            err("{{ .x | 3 }}"),
            "template: t:1: non executable command in pipeline stage 2"
        );
        assert_eq!(
            err("{{ 3.x }}"),
            "template: t:1: bad number syntax: \"3.x\""
        );
        assert_eq!(
            err("{{ \"a\".x }}"),
            "template: t:1: unexpected . after term \"\\\"a\\\"\""
        );
        assert_eq!(
            err("{{define \"a\"}}1{{end}}{{define \"a\"}}2{{end}}"),
            "template: t:1: template: multiple definition of template \"a\""
        );
        assert_eq!(
            err("{{ if .x }}{{ else }}{{ else }}{{ end }}"),
            "template: t:1: expected end; found {{else}}"
        );
        assert_eq!(
            err("{{ range $a, $b, $c := . }}{{end}}"),
            "template: t:1: too many declarations in range"
        );
        assert_eq!(
            err("{{ 99999999999999999999 }}"),
            "template: t:1: integer overflow: \"99999999999999999999\""
        );
        assert_eq!(err("{{ \"\\q\" }}"), "template: t:1: invalid syntax");
        // Found by the fuzz test: a lexical error right after a space once looped forever.
        assert_eq!(
            err("{{.a.b\t3k"),
            "template: t:1: bad number syntax: \"3k\""
        );
    }

    #[test]
    fn numbers_take_gos_types() {
        let n = number(0, "0x1F", Kind::Number).unwrap();
        assert!(n.is_int && n.int == 31);
        let n = number(0, "1_000", Kind::Number).unwrap();
        assert_eq!(n.int, 1000);
        let n = number(0, "3.0", Kind::Number).unwrap();
        assert!(n.is_float && n.is_int);
        let n = number(0, "0o17", Kind::Number).unwrap();
        assert_eq!(n.int, 15);
        let n = number(0, "017", Kind::Number).unwrap();
        assert_eq!(n.int, 15);
        let n = number(0, "'a'", Kind::CharConstant).unwrap();
        assert_eq!(n.int, 97);
        let n = number(0, "-5", Kind::Number).unwrap();
        assert!(n.is_int && !n.is_uint && n.int == -5);
        assert!(number(0, "1__0", Kind::Number).is_err());
        assert_eq!(number(0, "0x1p-2", Kind::Number).unwrap().float, 0.25);
    }

    #[test]
    fn unquote_follows_go() {
        assert_eq!(unquote("\"a\\n\\\"b\\u00e9\"").unwrap(), "a\n\"bé");
        assert_eq!(unquote("`a\\n`").unwrap(), "a\\n");
        assert!(unquote("\"\\'\"").is_none());
        // `\xNN` and octal escapes are bytes: UTF-8 when they make it, gostr's escapes if not.
        assert_eq!(unquote("\"\\xc3\\xa9\\101\"").unwrap(), "éA");
        let raw = unquote("\"a\\xff\\200\"").unwrap();
        assert_eq!(&*crate::gostr::to_bytes(&raw), b"a\xff\x80");
        assert!(unquote("\"\\x4\"").is_none());
        assert!(unquote("\"\\x+f\"").is_none());
        assert!(unquote("\"\\400\"").is_none());
        assert!(unquote("\"\\ud800\"").is_none());
    }
}
