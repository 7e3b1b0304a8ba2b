//! Flux's `postBuild` variable substitution language, evaluated over text.
//!
//! Owns: parsing and evaluating the bash-style expansions Flux accepts in manifests —
//! `${var}`, `${var:=default}` / `${var=default}` / `${var:-default}` (and `:+`, `:?`, which Flux
//! evaluates like a default), `${#var}`, `${var^}`, `${var^^}`, `${var,}`, `${var,,}`,
//! `${var:offset[:length]}`, `${var/pattern/repl}` with `//`, `/#`, `/%`, and
//! `${var#glob}`, `${var##glob}`, `${var%glob}`, `${var%%glob}` — with `$$` as the escape of `$`.
//! A bare `$var` is left alone, as in Flux. In strict mode (Flux's default) a variable that is not
//! defined and has no default is an error. It knows nothing of Kubernetes objects: the caller
//! renders an object to YAML, substitutes, and parses the result back.

use std::collections::BTreeMap;

/// Why a text could not be substituted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubstError {
    /// Strict mode and a `${var}` with no value and no default: the variable's name.
    #[error("variable not set (strict mode): {0:?}")]
    VariableNotSet(String),
    /// A `${` expression of a form envsubst does not know, at this byte offset.
    #[error("bad substitution at byte {0}")]
    BadSubstitution(usize),
    /// A `${` with no closing `}`, opened at this byte offset.
    #[error("missing closing brace at byte {0}")]
    MissingClosingBrace(usize),
    /// A `${` not followed by a variable name, at this byte offset.
    #[error("unable to parse variable name at byte {0}")]
    VariableName(usize),
    /// A variable name (from `substitute` or `substituteFrom`) that Flux refuses.
    #[error("'{0}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'")]
    InvalidVarName(String),
}

/// Checks a variable name against Flux's rule, `^[_[:alpha:]][_[:alpha:][:digit:]]*$`.
pub fn validate_var_name(name: &str) -> Result<(), SubstError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(SubstError::InvalidVarName(name.to_string()))
    }
}

/// Substitutes every expansion in `text` with values from `vars`.
///
/// With `strict`, referencing a variable that `vars` does not hold, other than through a
/// default-providing operator, fails with [`SubstError::VariableNotSet`].
pub fn substitute(
    text: &str,
    vars: &BTreeMap<String, String>,
    strict: bool,
) -> Result<String, SubstError> {
    let nodes = Parser::new(text).parse_text()?;
    let mut out = String::with_capacity(text.len());
    eval_nodes(&nodes, vars, strict, &mut out)?;
    Ok(out)
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Expansion(Expansion),
}

#[derive(Debug, Clone, PartialEq)]
struct Expansion {
    name: String,
    op: Op,
    args: Vec<Vec<Node>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Plain,
    Length,
    /// `=`, `:=`, `:-`, `:+`, `:?`: Flux evaluates all of them as "value, or else the default".
    Default,
    UpperFirst,
    UpperAll,
    LowerFirst,
    LowerAll,
    Substring,
    ReplaceFirst,
    ReplaceAll,
    ReplacePrefix,
    ReplaceSuffix,
    TrimShortestPrefix,
    TrimLongestPrefix,
    TrimShortestSuffix,
    TrimLongestSuffix,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser { src, pos: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(offset)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.src[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Top-level text: `${` opens an expansion, `$$` is a literal `$` (so `$${x}` stays `${x}`).
    fn parse_text(&mut self) -> Result<Vec<Node>, SubstError> {
        let mut nodes = Vec::new();
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if self.eat("${") {
                if !text.is_empty() {
                    nodes.push(Node::Text(std::mem::take(&mut text)));
                }
                nodes.push(Node::Expansion(self.parse_expansion()?));
            } else if self.eat("$$") {
                text.push('$');
                // The character after an escaped `$` is literal even when it is `{`.
                if let Some(next) = self.peek()
                    && next == '{'
                {
                    self.bump();
                    text.push('{');
                }
            } else {
                self.bump();
                text.push(c);
            }
        }
        if !text.is_empty() {
            nodes.push(Node::Text(text));
        }
        Ok(nodes)
    }

    fn parse_name(&mut self) -> Result<String, SubstError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_alphanumeric() || c == '_' {
                self.bump();
            } else {
                break;
            }
        }
        if self.pos == start {
            return Err(SubstError::VariableName(start));
        }
        Ok(self.src[start..self.pos].to_string())
    }

    fn close(&mut self) -> Result<(), SubstError> {
        if self.eat("}") {
            Ok(())
        } else {
            Err(SubstError::BadSubstitution(self.pos))
        }
    }

    /// After `${`.
    fn parse_expansion(&mut self) -> Result<Expansion, SubstError> {
        if self.eat("#") {
            let name = self.parse_name()?;
            self.close()?;
            return Ok(Expansion {
                name,
                op: Op::Length,
                args: vec![],
            });
        }
        let name = self.parse_name()?;
        let expansion = |op, args| Expansion {
            name: name.clone(),
            op,
            args,
        };
        match self.peek() {
            Some('}') => {
                self.bump();
                Ok(expansion(Op::Plain, vec![]))
            }
            Some(':') if matches!(self.peek_at(1), Some('=' | '-' | '?' | '+')) => {
                self.pos += 2;
                Ok(expansion(Op::Default, self.parse_default_args()?))
            }
            Some('=') => {
                self.bump();
                Ok(expansion(Op::Default, self.parse_default_args()?))
            }
            Some(':') => {
                self.bump();
                let offset = self.parse_arg(|c| c != ':' && c != '}', false)?;
                let mut args = vec![offset];
                if self.eat(":") {
                    args.push(self.parse_arg(|c| c != '}', false)?);
                }
                self.close()?;
                Ok(expansion(Op::Substring, args))
            }
            Some(c @ ('^' | ',')) => {
                self.bump();
                let double = self.peek() == Some(c);
                if double {
                    self.bump();
                }
                self.close()?;
                let op = match (c, double) {
                    ('^', false) => Op::UpperFirst,
                    ('^', true) => Op::UpperAll,
                    (_, false) => Op::LowerFirst,
                    (_, true) => Op::LowerAll,
                };
                Ok(expansion(op, vec![]))
            }
            Some('/') => {
                self.bump();
                let op = if self.eat("/") {
                    Op::ReplaceAll
                } else if self.eat("#") {
                    Op::ReplacePrefix
                } else if self.eat("%") {
                    Op::ReplaceSuffix
                } else {
                    Op::ReplaceFirst
                };
                let pattern = self.parse_arg(|c| c != '/' && c != '}', true)?;
                if !self.eat("/") {
                    return Err(SubstError::BadSubstitution(self.pos));
                }
                let mut args = vec![pattern];
                if self.peek() != Some('}') {
                    args.push(self.parse_arg(|c| c != '}', true)?);
                }
                self.close()?;
                Ok(expansion(op, args))
            }
            Some(c @ ('#' | '%')) => {
                self.bump();
                let longest = self.eat(if c == '#' { "#" } else { "%" });
                let pattern = self.parse_arg(|c| c != '}', false)?;
                self.close()?;
                let op = match (c, longest) {
                    ('#', false) => Op::TrimShortestPrefix,
                    ('#', true) => Op::TrimLongestPrefix,
                    (_, false) => Op::TrimShortestSuffix,
                    (_, true) => Op::TrimLongestSuffix,
                };
                Ok(expansion(op, vec![pattern]))
            }
            _ => Err(SubstError::MissingClosingBrace(self.pos)),
        }
    }

    fn parse_default_args(&mut self) -> Result<Vec<Vec<Node>>, SubstError> {
        let value = self.parse_arg(|c| c != '}', false)?;
        self.close()?;
        Ok(vec![value])
    }

    /// An argument: text and nested `${...}` up to a stop character. With `escapes`, `\/`,
    /// `\\` and `$$` stand for `/`, `\` and `$` (replacement patterns need them).
    fn parse_arg(
        &mut self,
        accept: impl Fn(char) -> bool,
        escapes: bool,
    ) -> Result<Vec<Node>, SubstError> {
        let mut nodes = Vec::new();
        let mut text = String::new();
        loop {
            if self.eat("${") {
                if !text.is_empty() {
                    nodes.push(Node::Text(std::mem::take(&mut text)));
                }
                nodes.push(Node::Expansion(self.parse_expansion()?));
                continue;
            }
            let Some(c) = self.peek() else {
                return Err(SubstError::MissingClosingBrace(self.pos));
            };
            if escapes
                && ((c == '\\' && matches!(self.peek_at(1), Some('/' | '\\')))
                    || (c == '$' && self.peek_at(1) == Some('$')))
            {
                self.bump();
                if let Some(escaped) = self.bump() {
                    text.push(escaped);
                }
                continue;
            }
            if !accept(c) {
                break;
            }
            self.bump();
            text.push(c);
        }
        if !text.is_empty() {
            nodes.push(Node::Text(text));
        }
        Ok(nodes)
    }
}

fn eval_nodes(
    nodes: &[Node],
    vars: &BTreeMap<String, String>,
    strict: bool,
    out: &mut String,
) -> Result<(), SubstError> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Expansion(e) => out.push_str(&eval_expansion(e, vars, strict)?),
        }
    }
    Ok(())
}

fn eval_expansion(
    e: &Expansion,
    vars: &BTreeMap<String, String>,
    strict: bool,
) -> Result<String, SubstError> {
    let mut args = Vec::with_capacity(e.args.len());
    for arg in &e.args {
        let mut s = String::new();
        eval_nodes(arg, vars, strict, &mut s)?;
        args.push(s);
    }
    let value = match vars.get(&e.name) {
        Some(v) => v.as_str(),
        None if strict && e.op != Op::Default => {
            return Err(SubstError::VariableNotSet(e.name.clone()));
        }
        None => "",
    };
    let arg = |i: usize| args.get(i).map(String::as_str);
    Ok(match e.op {
        Op::Plain => value.to_string(),
        Op::Length => value.len().to_string(),
        Op::Default => {
            if value.is_empty() {
                args.concat()
            } else {
                value.to_string()
            }
        }
        Op::UpperFirst => map_first(value, |c| c.to_uppercase().collect()),
        Op::LowerFirst => map_first(value, |c| c.to_lowercase().collect()),
        Op::UpperAll => value.to_uppercase(),
        Op::LowerAll => value.to_lowercase(),
        Op::Substring => substring(value, arg(0).unwrap_or(""), arg(1)),
        Op::ReplaceFirst => value.replacen(arg(0).unwrap_or(""), arg(1).unwrap_or(""), 1),
        Op::ReplaceAll => value.replace(arg(0).unwrap_or(""), arg(1).unwrap_or("")),
        Op::ReplacePrefix => match (arg(0), arg(1)) {
            (Some(p), Some(r)) if value.starts_with(p) => format!("{r}{}", &value[p.len()..]),
            _ => value.to_string(),
        },
        Op::ReplaceSuffix => match (arg(0), arg(1)) {
            (Some(p), Some(r)) if value.ends_with(p) => {
                format!("{}{r}", &value[..value.len() - p.len()])
            }
            _ => value.to_string(),
        },
        Op::TrimShortestPrefix => trim_prefix(value, arg(0).unwrap_or(""), false),
        Op::TrimLongestPrefix => trim_prefix(value, arg(0).unwrap_or(""), true),
        Op::TrimShortestSuffix => trim_suffix(value, arg(0).unwrap_or(""), false),
        Op::TrimLongestSuffix => trim_suffix(value, arg(0).unwrap_or(""), true),
    })
}

fn map_first(value: &str, f: impl Fn(char) -> String) -> String {
    let mut chars = value.chars();
    match chars.next() {
        Some(c) => f(c) + chars.as_str(),
        None => String::new(),
    }
}

/// `${var:pos[:len]}` on bytes, as Go slices strings; an unparsable number yields the value.
fn substring(value: &str, pos: &str, len: Option<&str>) -> String {
    let n = value.len() as i64;
    let Ok(mut pos) = pos.trim().parse::<i64>() else {
        return value.to_string();
    };
    if pos < 0 {
        pos = (n + pos).max(0);
    }
    let slice = |a: i64, b: i64| -> String {
        let (a, b) = (a.clamp(0, n) as usize, b.clamp(0, n) as usize);
        if a >= b {
            return String::new();
        }
        String::from_utf8_lossy(&value.as_bytes()[a..b]).into_owned()
    };
    match len {
        None => slice(pos, n),
        Some(len) => {
            let Ok(len) = len.trim().parse::<i64>() else {
                return value.to_string();
            };
            if len < 0 {
                let end = n + len;
                if end < pos {
                    String::new()
                } else {
                    slice(pos, end)
                }
            } else {
                slice(pos, pos.saturating_add(len))
            }
        }
    }
}

fn trim_prefix(value: &str, pattern: &str, longest: bool) -> String {
    let ends: Vec<usize> = value
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .collect();
    let matching = |end: &usize| glob_match(pattern, &value[..*end]);
    let cut = if longest {
        ends.iter().rev().find(|e| matching(e))
    } else {
        ends.iter().find(|e| matching(e))
    };
    match cut {
        Some(&end) => value[end..].to_string(),
        None => value.to_string(),
    }
}

fn trim_suffix(value: &str, pattern: &str, longest: bool) -> String {
    let starts: Vec<usize> = value.char_indices().map(|(i, _)| i).collect();
    let matching = |start: &usize| glob_match(pattern, &value[*start..]);
    let cut = if longest {
        starts.iter().find(|s| matching(s))
    } else {
        starts.iter().rev().find(|s| matching(s))
    };
    match cut {
        Some(&start) => value[..start].to_string(),
        None => value.to_string(),
    }
}

/// Shell glob: `*` (any run, `/` included, as in Flux's fork), `?`, `[...]` with ranges and
/// `^`/`!` negation, `\` escaping. A malformed class matches nothing.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with backtracking to the last `*`, linear in practice.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = match_class(&p, pi, t[ti]) {
                        if matched {
                            pi = next;
                            ti += 1;
                            continue;
                        }
                    } else {
                        return false;
                    }
                }
                '\\' if pi + 1 < p.len() => {
                    if p[pi + 1] == t[ti] {
                        pi += 2;
                        ti += 1;
                        continue;
                    }
                }
                c => {
                    if c == t[ti] {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `p[start] == '['`; returns (matched, index after).
fn match_class(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negated = matches!(p.get(i), Some('^' | '!'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        let lo = if lo == '\\' {
            i += 1;
            *p.get(i)?
        } else {
            lo
        };
        i += 1;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|&h| h != ']') {
            let hi = p[i + 1];
            i += 2;
            if lo <= c && c <= hi {
                matched = true;
            }
        } else if lo == c {
            matched = true;
        }
    }
}

#[cfg(test)]
mod tests;
