//! Go's `regexp` (RE2 syntax) on the `regex` crate, which implements the same syntax with two
//! differences this module removes: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only while Rust's
//! are Unicode-aware, so they are rewritten to their ASCII classes before compiling. Also
//! `Regexp.Split` and the `All` variants' limits, which Rust spells differently.
//!
//! Error texts start as Go's (`error parsing regexp: `) but the detail after it is the `regex`
//! crate's description, not Go's code (`missing closing ]`).

use regex::Regex;

/// Compiles a Go regular expression; a syntax error gets Go's text
/// (`error parsing regexp: missing closing ): `a(b``).
pub fn compile(pattern: &str) -> Result<Regex, String> {
    if let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) {
        return Err(go_syntax_error(pattern, &e));
    }
    Regex::new(&rewrite(pattern)).map_err(|e| {
        let detail = match &e {
            regex::Error::Syntax(s) => s
                .lines()
                .rev()
                .find(|l| l.starts_with("error: "))
                .map(|l| l.trim_start_matches("error: ").to_string())
                .unwrap_or_else(|| s.clone()),
            other => other.to_string(),
        };
        format!("error parsing regexp: {detail}: `{pattern}`")
    })
}

/// Go's `regexp/syntax` error code and the part of the pattern it quotes.
fn go_syntax_error(pattern: &str, e: &regex_syntax::ast::Error) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let span = e.span();
    let spanned = pattern
        .get(span.start.offset..span.end.offset)
        .unwrap_or(pattern);
    let from_start = pattern.get(span.start.offset..).unwrap_or(pattern);
    let (code, expr) = match e.kind() {
        K::GroupUnclosed => ("missing closing )", pattern),
        K::GroupUnopened => ("unexpected )", pattern),
        K::RepetitionMissing => (
            "missing argument to repetition operator",
            operator(from_start),
        ),
        K::EscapeUnrecognized | K::EscapeUnexpectedEof | K::ClassEscapeInvalid => {
            ("invalid escape sequence", spanned)
        }
        K::RepetitionCountInvalid | K::RepetitionCountUnclosed | K::RepetitionCountDecimalEmpty => {
            ("invalid repeat count", spanned)
        }
        K::ClassRangeInvalid | K::ClassRangeLiteral => ("invalid character class range", spanned),
        K::ClassUnclosed => ("missing closing ]", from_start),
        K::GroupNameInvalid | K::GroupNameEmpty | K::GroupNameUnexpectedEof => {
            ("invalid named capture", spanned)
        }
        K::GroupNameDuplicate { .. } => ("duplicate capture group name", spanned),
        K::FlagUnrecognized
        | K::FlagDanglingNegation
        | K::FlagUnexpectedEof
        | K::FlagRepeatedNegation { .. }
        | K::FlagDuplicate { .. }
        | K::UnsupportedLookAround
        | K::UnsupportedBackreference => ("invalid or unsupported Perl syntax", spanned),
        K::UnicodeClassInvalid => ("invalid character class range", spanned),
        K::NestLimitExceeded(_) => ("expression nests too deeply", pattern),
        _ => return format!("error parsing regexp: {}: `{pattern}`", e.kind()),
    };
    format!("error parsing regexp: {code}: `{expr}`")
}

/// The repetition operator at the start of `s` (`*`, `+?`, `{2,3}`), as Go quotes it.
fn operator(s: &str) -> &str {
    let len = match s.as_bytes().first() {
        Some(b'{') => s.find('}').map_or(s.len(), |i| i + 1),
        Some(b'*' | b'+' | b'?') => 1 + usize::from(s.as_bytes().get(1) == Some(&b'?')),
        _ => 0,
    };
    &s[..len]
}

/// Go's `regexp.quote` in `MustCompile`'s panic: backquoted when it can be.
pub fn quote_for_panic(s: &str) -> String {
    if s.contains('`')
        || s.chars()
            .any(|c| (c.is_control() && c != '\t') || c == '\u{feff}')
    {
        ferroflux_gotemplate::fmt::quote(s)
    } else {
        format!("`{s}`")
    }
}

/// Rewrites Perl classes to Go's ASCII meaning, inside and outside brackets.
fn rewrite(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    let mut class_start = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(n) = chars.next() else {
                out.push('\\');
                break;
            };
            let (outside, inside) = match n {
                'd' => ("[0-9]", "0-9"),
                'D' => ("[^0-9]", "[^0-9]"),
                'w' => ("[0-9A-Za-z_]", "0-9A-Za-z_"),
                'W' => ("[^0-9A-Za-z_]", "[^0-9A-Za-z_]"),
                's' => ("[\\t\\n\\f\\r ]", "\\t\\n\\f\\r "),
                'S' => ("[^\\t\\n\\f\\r ]", "[^\\t\\n\\f\\r ]"),
                'b' if !in_class => ("(?-u:\\b)", ""),
                'B' if !in_class => ("(?-u:\\B)", ""),
                _ => {
                    out.push('\\');
                    out.push(n);
                    class_start = false;
                    continue;
                }
            };
            out.push_str(if in_class { inside } else { outside });
            class_start = false;
            continue;
        }
        if in_class {
            // A `]` right after `[` or `[^` is a literal.
            if c == ']' && !class_start {
                in_class = false;
            } else if c == '[' && chars.peek() == Some(&':') {
                // POSIX class like [:alpha:]: copy through its closing `:]`.
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
                class_start = false;
                continue;
            }
            class_start = c == '^' && class_start && out.ends_with('[');
            out.push(c);
            continue;
        }
        if c == '[' {
            in_class = true;
            class_start = true;
        }
        out.push(c);
    }
    out
}

/// Go's `FindAllString(s, n)`: `n < 0` means all.
pub fn find_all(re: &Regex, s: &str, n: i64) -> Vec<String> {
    let it = re.find_iter(s).map(|m| m.as_str().to_string());
    if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    }
}

/// Go's `Regexp.Split(s, n)`.
pub fn split(re: &Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let matches: Vec<(usize, usize)> = if n < 0 {
        re.find_iter(s).map(|m| (m.start(), m.end())).collect()
    } else {
        re.find_iter(s)
            .take(n as usize)
            .map(|m| (m.start(), m.end()))
            .collect()
    };
    let mut out = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for (a, b) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = a;
        if b != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = b;
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

/// Go's `regexp.QuoteMeta`.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        let re = compile(r"^\d+$").unwrap();
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"), "Arabic-Indic digits are not \\d in Go");
        assert!(compile(r"[\d\s]+").unwrap().is_match("1 2"));
        assert!(compile(r"[^\d]").unwrap().is_match("a"));
        assert!(compile(r"\bfoo\b").unwrap().is_match("a foo b"));
        assert!(compile(r"[]a]").unwrap().is_match("]"));
        assert!(compile(r"[[:alpha:]\d]").unwrap().is_match("7"));
        assert!(compile(r"\\d").unwrap().is_match(r"\d"));
    }

    #[test]
    fn split_and_find_all_follow_go() {
        let re = compile("z+").unwrap();
        assert_eq!(split(&re, "pizza", -1), ["pi", "a"]);
        assert_eq!(split(&re, "pizza", 0), Vec::<String>::new());
        assert_eq!(split(&re, "pizza", 1), ["pizza"]);
        assert_eq!(split(&re, "pizza", 2), ["pi", "a"]);
        let re = compile("a*").unwrap();
        assert_eq!(
            split(&re, "abaabaccadaaae", 5),
            ["", "b", "b", "c", "cadaaae"]
        );
        let re = compile("").unwrap();
        assert_eq!(split(&re, "abc", -1), ["a", "b", "c"]);
        let re = compile("[a-e]").unwrap();
        assert_eq!(find_all(&re, "abcdefg", 2), ["a", "b"]);
        assert_eq!(find_all(&re, "abcdefg", -1).len(), 5);
        assert_eq!(quote_meta("1.5-2.0?"), r"1\.5-2\.0\?");
        for (pattern, want) in [
            ("a(b", "missing closing ): `a(b`"),
            ("a)b", "unexpected ): `a)b`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("\\q", "invalid escape sequence: `\\q`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("(?P<n>a", "missing closing ): `(?P<n>a`"),
            ("x[a", "missing closing ]: `[a`"),
        ] {
            assert_eq!(
                compile(pattern).unwrap_err(),
                format!("error parsing regexp: {want}")
            );
        }
    }
}
