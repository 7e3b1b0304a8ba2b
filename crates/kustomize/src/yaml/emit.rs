//! YAML emitter reproducing the bytes `kubectl kustomize` prints.
//!
//! kustomize turns every resource into JSON and then through the go-yaml v2 encoder (the libyaml
//! emitter port), so this module follows that emitter's observable rules: map keys in go-yaml v2's
//! "natural" order, 2-space indentation with sequences not indented under a mapping key, plain
//! scalars folded at column 80, the same choice between plain, single-quoted, double-quoted and
//! literal styles, and the same numeric formatting.

use serde_json::Value;

const BEST_INDENT: i32 = 2;
const BEST_WIDTH: usize = 80;

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// Renders a stream of objects the way `kubectl kustomize` prints them: documents separated by
/// `---` lines.
pub fn render_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for (i, obj) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&render_document(obj));
    }
    out
}

/// Renders one value as a single YAML document (without a `---` marker).
pub fn render_document(value: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
        mapping_context: false,
        simple_key_context: false,
        root_context: false,
    };
    e.node(value, true, false, false, false);
    // document end: an implicit end still breaks the last line
    e.write_indent();
    e.out
}

struct Emitter {
    out: String,
    column: usize,
    indent: i32,
    indents: Vec<i32>,
    whitespace: bool,
    indention: bool,
    mapping_context: bool,
    simple_key_context: bool,
    root_context: bool,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn node(&mut self, v: &Value, root: bool, _seq: bool, mapping: bool, simple_key: bool) {
        self.root_context = root;
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match v {
            Value::Object(m) if m.is_empty() => self.flow_empty("{", "}"),
            Value::Array(a) if a.is_empty() => self.flow_empty("[", "]"),
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| natural_cmp(a, b));
                self.increase_indent(false, false);
                for k in keys {
                    self.write_indent();
                    let an = analyze(k);
                    let key_val = Value::String(k.clone());
                    if !an.multiline && k.len() <= 128 {
                        self.node(&key_val, false, false, true, true);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.node(&key_val, false, false, true, false);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.node(&m[k.as_str()], false, false, true, false);
                }
                self.pop_indent();
            }
            Value::Array(a) => {
                let indentless = self.mapping_context && !self.indention;
                self.increase_indent(false, indentless);
                for item in a {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, false, true, false, false);
                }
                self.pop_indent();
            }
            Value::Null => self.scalar("null", Style::Plain),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain),
            Value::Number(n) => {
                let text = format_number(n);
                self.scalar(&text, Style::Plain)
            }
            Value::String(s) => {
                let style = if s.contains('\n') {
                    Style::Literal
                } else if resolves_as_string(s) && !is_base60_float(s) {
                    Style::Plain
                } else {
                    Style::Double
                };
                self.scalar(s, style)
            }
        }
    }

    fn flow_empty(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, value: &str, requested: Style) {
        let an = analyze(value);
        let mut style = requested;
        if self.simple_key_context && an.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if !an.block_plain_allowed {
                style = Style::Single;
            }
            if value.is_empty() && self.simple_key_context {
                style = Style::Single;
            }
        }
        if style == Style::Single && !an.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!an.block_allowed || self.simple_key_context) {
            style = Style::Double;
        }
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::Single => self.write_single(value, allow_breaks),
            Style::Double => self.write_double(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
            i += 1;
        }
        self.whitespace = false;
        self.indention = false;
        let _ = self.root_context;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        let n = chars.len();
        let mut i = 0;
        while i < n {
            let c = chars[i];
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < n - 1
                    && !next_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break_char(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            i += 1;
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let n = chars.len();
        let mut spaces = false;
        let mut i = 0;
        while i < n {
            let c = chars[i];
            if !is_printable(c)
                || (i == 0 && c == '\u{FEFF}')
                || is_break_char(c)
                || c == '"'
                || c == '\\'
            {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{A0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let v = c as u32;
                        let (p, w) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(p);
                        for k in (0..w).rev() {
                            let d = (v >> (k * 4)) & 0xF;
                            let ch = std::char::from_digit(d, 16)
                                .unwrap_or('0')
                                .to_ascii_uppercase();
                            self.put(ch);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < n - 1 {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            i += 1;
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // block scalar hints
        let first = value.chars().next();
        if matches!(first, Some(c) if c == ' ' || is_break_char(c)) {
            let hint = BEST_INDENT.to_string();
            self.write_indicator(&hint, false, false, false);
        }
        let chars: Vec<char> = value.chars().collect();
        let chomp = match chars.last() {
            None => Some("-"),
            Some(&last) if !is_break_char(last) => Some("-"),
            Some(_) if chars.len() == 1 => Some("+"),
            Some(_) => {
                if is_break_char(chars[chars.len() - 2]) {
                    Some("+")
                } else {
                    None
                }
            }
        };
        if let Some(h) = chomp {
            self.write_indicator(h, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break_char(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

fn is_break_char(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// go-yaml's `is_printable`, which reads UTF-8 bytes and accepts only one-to-three-byte sequences:
/// NEL (U+0085) and every character outside the Basic Multilingual Plane count as unprintable, so
/// a value holding one is double-quoted and the character written as `\N` or `\U0001F680`.
fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;
    if value.starts_with("---") || value.starts_with("...") {
        block_indicators = true;
    }
    let chars: Vec<char> = value.chars().collect();
    let n = chars.len();
    let mut preceded_by_ws = true;
    for i in 0..n {
        let c = chars[i];
        let followed_by_ws = i + 1 >= n || matches!(chars[i + 1], ' ' | '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_ws => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_indicators = true,
                '#' if preceded_by_ws => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == n {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break_char(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == n {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = matches!(c, ' ' | '\t') || is_break_char(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// go-yaml v2's key order: letters compare as runes, runs of digits compare as numbers, and a
/// letter sorts after a non-letter.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if natural_less(a, b) {
        Ordering::Less
    } else if natural_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn natural_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 {
                j -= 1;
                if !ar[j].is_ascii_digit() {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Formats a number as it comes out of kustomize: Go's JSON encoding of the value, read back by
/// go-yaml v2 (integers stay integers) and written with Go's shortest `%g`.
pub fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    format_float(f)
}

fn format_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let abs = f.abs();
    // Go's encoding/json uses plain decimal notation in this range; an integral value then
    // reads back as an integer.
    if f == f.trunc() && abs < 1e21 {
        let text = format!("{f}");
        if text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok() {
            return text;
        }
    }
    go_format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn go_format_g(f: f64) -> String {
    let sci = format!("{f:e}"); // e.g. "-1.2345e6"
    let (mant, exp) = match sci.split_once('e') {
        Some(p) => p,
        None => return sci,
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut s = String::from(sign);
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            s.push('0');
        }
        s.push_str(&e.to_string());
        s
    } else {
        let mut s = String::from(sign);
        if exp < 0 {
            s.push_str("0.");
            for _ in 0..(-exp - 1) {
                s.push('0');
            }
            s.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                s.push_str(&digits);
                for _ in digits.len()..int_len {
                    s.push('0');
                }
            } else {
                s.push_str(&digits[..int_len]);
                s.push('.');
                s.push_str(&digits[int_len..]);
            }
        }
        s
    }
}

fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !(b[0] == b'+' || b[0] == b'-' || b[0].is_ascii_digit()) || !s.contains(':')
    {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        let g = &b[start..i];
        let ok = match g.len() {
            1 => true,
            2 => g[0] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Whether go-yaml v2 would read `s`, written plain, back as a string (and not as a bool, a
/// number, null or a timestamp).
pub fn resolves_as_string(s: &str) -> bool {
    match s {
        "" | "~" | "null" | "Null" | "NULL" | "y" | "Y" | "yes" | "Yes" | "YES" | "true"
        | "True" | "TRUE" | "on" | "On" | "ON" | "n" | "N" | "no" | "No" | "NO" | "false"
        | "False" | "FALSE" | "off" | "Off" | "OFF" | ".nan" | ".NaN" | ".NAN" | ".inf"
        | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF" | "<<" => {
            return false;
        }
        _ => {}
    }
    let first = s.as_bytes()[0];
    match first {
        b'.' => go_parse_float(s).is_none(),
        b'0'..=b'9' | b'+' | b'-' => {
            if super::resolve::parse_timestamp(s).is_some() {
                return false;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if super::resolve::go_parse_int(&plain).is_some() {
                return false;
            }
            if super::resolve::is_yaml_style_float(&plain) && go_parse_float(&plain).is_some() {
                return false;
            }
            let binary = |r: &str| !r.is_empty() && r.chars().all(|c| c == '0' || c == '1');
            if let Some(rest) = plain.strip_prefix("0b") {
                if binary(rest) {
                    return false;
                }
            } else if let Some(rest) = plain.strip_prefix("-0b")
                && binary(rest)
            {
                return false;
            }
            true
        }
        _ => true,
    }
}

/// Go's `strconv.ParseFloat` for the decimal forms YAML cares about.
pub fn go_parse_float(s: &str) -> Option<f64> {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = t.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" || lower == "nan" {
        return Some(0.0);
    }
    if t.is_empty()
        || !t
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'))
    {
        return None;
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(3.5), "3.5");
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(1e-7), "1e-07");
        assert_eq!(format_float(1234567.5), "1.2345675e+06");
        assert_eq!(format_float(0.0001), "0.0001");
    }

    #[test]
    fn natural_order() {
        assert!(natural_less("a9", "a10"));
        assert!(natural_less("apiVersion", "kind"));
        assert!(natural_less("a_b", "ab"));
    }
}
