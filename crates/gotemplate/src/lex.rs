//! The lexer of Go's text/template (`text/template/parse/lex.go` of Go 1.24): text, actions
//! with `{{- -}}` trim markers, comments, and the tokens inside an action, with Go's error
//! texts (`unclosed action`, `unterminated quoted string`, `bad character U+002B '+'`, …).
//!
//! Tokens are produced all at once into a vector; a lexical error is the last token, so the
//! parser meets it exactly where Go's would.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords come after this marker, as in Go (item.String prints them as <word>).
    Keyword,
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

/// One token: its kind, byte position, text (the error message for `Error`) and line.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub kind: Kind,
    pub pos: usize,
    pub val: String,
    pub line: usize,
}

impl std::fmt::Display for Item {
    /// Go's `item.String`, as parse errors quote tokens.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            Kind::Eof => f.write_str("EOF"),
            Kind::Error => f.write_str(&self.val),
            k if k > Kind::Keyword => write!(f, "<{}>", self.val),
            _ => {
                if self.val.chars().count() > 10 {
                    let head: String = self.val.chars().take(10).collect();
                    write!(f, "{}...", crate::fmt::quote(&head))
                } else {
                    f.write_str(&crate::fmt::quote(&self.val))
                }
            }
        }
    }
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(char::from(b[1]))
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(char::from(b[0])) && b[1] == b'-'
}

/// Options that change lexing: `break`/`continue` are identifiers when the host defines
/// functions with those names (Go's rule).
#[derive(Clone, Copy, Default)]
pub(crate) struct LexOptions {
    pub break_ok: bool,
    pub continue_ok: bool,
}

struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    paren_depth: usize,
    items: Vec<Item>,
    opts: LexOptions,
    line_starts: &'a [usize],
}

/// Byte offsets at which each line starts.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The one-based line of byte `pos`.
pub(crate) fn line_of(line_starts: &[usize], pos: usize) -> usize {
    line_starts.partition_point(|&s| s <= pos)
}

/// Lexes a whole template text.
pub(crate) fn lex(input: &str, opts: LexOptions, line_starts: &[usize]) -> Vec<Item> {
    let mut l = Lexer {
        input,
        pos: 0,
        start: 0,
        paren_depth: 0,
        items: Vec::new(),
        opts,
        line_starts,
    };
    l.run();
    l.items
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }

    fn emit(&mut self, kind: Kind) {
        let val = self.input[self.start..self.pos].to_string();
        self.emit_val(kind, val);
    }

    fn emit_val(&mut self, kind: Kind, val: String) {
        let line = line_of(self.line_starts, self.start);
        self.items.push(Item {
            kind,
            pos: self.start,
            val,
            line,
        });
        self.start = self.pos;
    }

    fn ignore(&mut self) {
        self.start = self.pos;
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    /// Records a lexical error; lexing stops.
    fn error(&mut self, msg: String) -> State {
        self.emit_val(Kind::Error, msg);
        State::Done
    }

    fn run(&mut self) {
        let mut state = State::Text;
        loop {
            state = match state {
                State::Text => self.lex_text(),
                State::LeftDelim => self.lex_left_delim(),
                State::Comment => self.lex_comment(),
                State::RightDelim => self.lex_right_delim(),
                State::Inside => self.lex_inside(),
                State::Done => return,
            }
        }
    }

    fn lex_text(&mut self) -> State {
        if let Some(x) = self.rest().find(LEFT) {
            if x > 0 {
                self.pos += x;
                let mut trim = 0;
                if has_left_trim(&self.input[self.pos + LEFT.len()..]) {
                    let text = &self.input[self.start..self.pos];
                    trim = text.len() - text.trim_end_matches(is_space).len();
                }
                self.pos -= trim;
                if self.pos > self.start {
                    self.emit(Kind::Text);
                }
                self.pos += trim;
                self.ignore();
            }
            return State::LeftDelim;
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.emit(Kind::Text);
        }
        self.emit(Kind::Eof);
        State::Done
    }

    fn lex_left_delim(&mut self) -> State {
        self.pos += LEFT.len();
        let trim = has_left_trim(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return State::Comment;
        }
        self.emit(Kind::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        State::Inside
    }

    fn lex_comment(&mut self) -> State {
        self.pos += LEFT_COMMENT.len();
        let Some(i) = self.rest().find(RIGHT_COMMENT) else {
            return self.error("unclosed comment".into());
        };
        self.pos += i + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
        }
        self.ignore();
        State::Text
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if has_right_trim(rest) && rest[2..].starts_with(RIGHT) {
            return (true, true);
        }
        (rest.starts_with(RIGHT), false)
    }

    fn lex_right_delim(&mut self) -> State {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(Kind::RightDelim);
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
            self.ignore();
        }
        State::Text
    }

    fn lex_inside(&mut self) -> State {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return State::RightDelim;
            }
            return self.error("unclosed left paren".into());
        }
        let Some(r) = self.next() else {
            return self.error("unclosed action".into());
        };
        match r {
            c if is_space(c) => {
                self.backup(Some(c));
                return self.lex_space();
            }
            '=' => self.emit(Kind::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(Kind::Declare);
            }
            '|' => self.emit(Kind::Pipe),
            '"' => return self.lex_quote(),
            '`' => return self.lex_raw_quote(),
            '$' => return self.lex_variable(),
            '\'' => return self.lex_char(),
            '.' => {
                match self.rest().as_bytes().first() {
                    Some(b) if !b.is_ascii_digit() => {
                        return self.lex_field_or_variable(Kind::Field);
                    }
                    _ => {}
                }
                self.backup(Some('.'));
                return self.lex_number();
            }
            '+' | '-' | '0'..='9' => {
                self.backup(Some(r));
                return self.lex_number();
            }
            c if is_alnum(c) => {
                self.backup(Some(c));
                return self.lex_identifier();
            }
            '(' => {
                self.emit(Kind::LeftParen);
                self.paren_depth += 1;
            }
            ')' => {
                self.emit(Kind::RightParen);
                if self.paren_depth == 0 {
                    return self.error(format!("unexpected right paren {}", unicode_repr(r)));
                }
                self.paren_depth -= 1;
            }
            c if c.is_ascii() && (' '..='~').contains(&c) => self.emit(Kind::Char),
            c => {
                return self.error(format!(
                    "unrecognized character in action: {}",
                    unicode_repr(c)
                ));
            }
        }
        State::Inside
    }

    fn lex_space(&mut self) -> State {
        let mut n = 0;
        while let Some(c) = self.peek() {
            if !is_space(c) {
                break;
            }
            self.pos += c.len_utf8();
            n += 1;
        }
        let back = &self.input[self.pos - 1..];
        if has_right_trim(back) && back[2..].starts_with(RIGHT) {
            self.pos -= 1;
            if n == 1 {
                return State::RightDelim;
            }
        }
        self.emit(Kind::Space);
        State::Inside
    }

    fn lex_identifier(&mut self) -> State {
        loop {
            match self.next() {
                Some(c) if is_alnum(c) => {}
                r => {
                    self.backup(r);
                    let word = &self.input[self.start..self.pos];
                    if !self.at_terminator() {
                        return self.error(format!("bad character {}", unicode_repr_opt(r)));
                    }
                    let kind = match word {
                        "block" => Kind::Block,
                        "break" if self.opts.break_ok => Kind::Break,
                        "continue" if self.opts.continue_ok => Kind::Continue,
                        "define" => Kind::Define,
                        "else" => Kind::Else,
                        "end" => Kind::End,
                        "if" => Kind::If,
                        "range" => Kind::Range,
                        "nil" => Kind::Nil,
                        "template" => Kind::Template,
                        "with" => Kind::With,
                        "true" | "false" => Kind::Bool,
                        _ => Kind::Identifier,
                    };
                    self.emit(kind);
                    return State::Inside;
                }
            }
        }
    }

    fn lex_variable(&mut self) -> State {
        if self.at_terminator() {
            self.emit(Kind::Variable);
            return State::Inside;
        }
        self.lex_field_or_variable(Kind::Variable)
    }

    fn lex_field_or_variable(&mut self, kind: Kind) -> State {
        if self.at_terminator() {
            self.emit(if kind == Kind::Variable {
                Kind::Variable
            } else {
                Kind::Dot
            });
            return State::Inside;
        }
        let mut r;
        loop {
            r = self.next();
            match r {
                Some(c) if is_alnum(c) => {}
                _ => {
                    self.backup(r);
                    break;
                }
            }
        }
        if !self.at_terminator() {
            return self.error(format!("bad character {}", unicode_repr_opt(r)));
        }
        self.emit(kind);
        State::Inside
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with(RIGHT),
        }
    }

    fn lex_char(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.error("unterminated character constant".into()),
                },
                None | Some('\n') => {
                    return self.error("unterminated character constant".into());
                }
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(Kind::CharConstant);
        State::Inside
    }

    fn lex_number(&mut self) -> State {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_string();
            return self.error(format!("bad number syntax: {}", crate::fmt::quote(&text)));
        }
        if let Some('+' | '-') = self.peek() {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let text = self.input[self.start..self.pos].to_string();
                return self.error(format!("bad number syntax: {}", crate::fmt::quote(&text)));
            }
            self.emit(Kind::Complex);
        } else {
            self.emit(Kind::Number);
        }
        State::Inside
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek()
            && is_alnum(c)
        {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.error("unterminated quoted string".into()),
                },
                None | Some('\n') => return self.error("unterminated quoted string".into()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(Kind::String);
        State::Inside
    }

    fn lex_raw_quote(&mut self) -> State {
        loop {
            match self.next() {
                None => return self.error("unterminated raw quoted string".into()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(Kind::RawString);
        State::Inside
    }
}

enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    Inside,
    Done,
}

/// Go's `%#U`: `U+0041 'A'`.
pub(crate) fn unicode_repr(c: char) -> String {
    crate::fmt::sprintf("%#U", &[crate::Value::Int(i64::from(u32::from(c)))])
}

fn unicode_repr_opt(c: Option<char>) -> String {
    match c {
        Some(c) => unicode_repr(c),
        // Go prints eof (-1) with %#U as U+FFFFFFFFFFFFFFFF.
        None => "U+FFFFFFFFFFFFFFFF".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        let ls = line_starts(text);
        lex(
            text,
            LexOptions {
                break_ok: true,
                continue_ok: true,
            },
            &ls,
        )
        .into_iter()
        .map(|i| (i.kind, i.val))
        .collect()
    }

    #[test]
    fn trim_markers_eat_surrounding_space() {
        let k = kinds("a \n{{- .x -}}\n b");
        assert_eq!(k[0], (Kind::Text, "a".into()));
        assert_eq!(k[2], (Kind::Field, ".x".into()));
        assert_eq!(k[4], (Kind::Text, "b".into()));
    }

    #[test]
    fn comments_vanish_and_trim() {
        let k = kinds("a {{- /* c */ -}} b");
        assert_eq!(
            k,
            vec![
                (Kind::Text, "a".into()),
                (Kind::Text, "b".into()),
                (Kind::Eof, "".into())
            ]
        );
    }

    #[test]
    fn numbers_and_words() {
        let k = kinds("{{ 0x1F 1_000 -2.5e3 'a' nil true .a.b $x $ break }}");
        let got: Vec<Kind> = k
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| *k != Kind::Space)
            .collect();
        assert_eq!(
            got,
            vec![
                Kind::LeftDelim,
                Kind::Number,
                Kind::Number,
                Kind::Number,
                Kind::CharConstant,
                Kind::Nil,
                Kind::Bool,
                Kind::Field,
                Kind::Field,
                Kind::Variable,
                Kind::Variable,
                Kind::Break,
                Kind::RightDelim,
                Kind::Eof
            ]
        );
    }

    #[test]
    fn errors_read_like_go() {
        let last = |t: &str| kinds(t).pop().unwrap().1;
        assert_eq!(last("{{ .x"), "unclosed action");
        assert_eq!(last("{{ \"abc }}"), "unterminated quoted string");
        assert_eq!(last("{{ 3k }}"), "bad number syntax: \"3k\"");
        assert_eq!(last("{{ .x+ }}"), "bad character U+002B '+'");
        assert_eq!(last("{{ ) }}"), "unexpected right paren U+0029 ')'");
        assert_eq!(last("{{ ( }}"), "unclosed left paren");
        assert_eq!(last("{{/* x }}"), "unclosed comment");
        assert_eq!(
            last("{{/* x */ }}"),
            "comment ends before closing delimiter"
        );
    }
}
