//! Go's `regexp` (RE2 syntax) on the `regex` crate, which reads most of the same syntax. The
//! differences this module removes, each found against Helm's engine (tests/regex.txt):
//! Go's `\d`, `\w`, `\s` and `\b` are ASCII-only (Rust's are Unicode); Go has `\Q…\E` quoting
//! and octal escapes (`\101`); a `{` that starts no valid repetition is a literal in Go (`a{,2}`);
//! inside brackets Go has no nested classes or set operations, so `[`, `&&`, `~~` and a `-` after
//! a class escape (`[\d-z]`) are literals; and Go refuses stacked repetitions (`a**`) that Rust
//! accepts. Syntax errors carry Go's texts for the common cases (`missing closing )`,
//! `invalid escape sequence`, `invalid nested repetition operator`…). Also `Regexp.Split` and the
//! `All` variants' limits, which Rust spells differently.

use regex::Regex;

/// Compiles a Go regular expression; a syntax error gets Go's text
/// (`error parsing regexp: missing closing ): `a(b``).
pub fn compile(pattern: &str) -> Result<Regex, String> {
    if let Some(op) = nested_repetition(pattern) {
        return Err(format!(
            "error parsing regexp: invalid nested repetition operator: `{op}`"
        ));
    }
    let rewritten = rewrite(pattern);
    regex::RegexBuilder::new(&rewritten)
        .octal(true)
        .build()
        .map_err(|e| {
            // Report with Go's words for the pattern as written, when the parser can say.
            if let Err(ast) = regex_syntax::ast::parse::ParserBuilder::new()
                .octal(true)
                .build()
                .parse(pattern)
            {
                return go_syntax_error(pattern, &ast);
            }
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

/// Go refuses a repetition operator right after another (`a**`, `a+*`, `a{2}{3}`; a `?` that
/// makes the first one lazy is part of it). Returns the operators as Go quotes them.
fn nested_repetition(p: &str) -> Option<&str> {
    let b = p.as_bytes();
    let mut i = 0;
    let mut in_class = false;
    let mut last_rep: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            if b.get(i + 1) == Some(&b'Q') && !in_class {
                i = p[i + 2..].find("\\E").map_or(b.len(), |e| i + 2 + e + 2);
            } else {
                i += 2;
            }
            last_rep = None;
            continue;
        }
        if in_class {
            if c == b']' {
                in_class = false;
            }
            i += 1;
            continue;
        }
        let rep_len = match c {
            b'*' | b'+' | b'?' => Some(1),
            b'{' => repeat_len(&p[i..]),
            _ => None,
        };
        match rep_len {
            Some(n) => {
                let mut end = i + n;
                if b.get(end) == Some(&b'?') {
                    end += 1;
                }
                if let Some(start) = last_rep {
                    return Some(&p[start..end]);
                }
                last_rep = Some(i);
                i = end;
            }
            None => {
                if c == b'[' {
                    in_class = true;
                    // A `]` first in the class is a literal.
                    if b.get(i + 1) == Some(&b'^') {
                        i += 1;
                    }
                    if b.get(i + 1) == Some(&b']') {
                        i += 1;
                    }
                }
                last_rep = None;
                i += 1;
            }
        }
    }
    None
}

/// The length of a valid `{n}`, `{n,}` or `{n,m}` at the start of `s`.
fn repeat_len(s: &str) -> Option<usize> {
    let close = s.find('}')?;
    let inner = &s[1..close];
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (inner, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    (digits(lo) && hi.is_none_or(|h| h.is_empty() || digits(h))).then_some(close + 1)
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
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", ""),
        K::EscapeUnrecognized | K::ClassEscapeInvalid => ("invalid escape sequence", spanned),
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

/// Rewrites Go syntax the `regex` crate reads differently: Perl classes to Go's ASCII meaning
/// (inside and outside brackets), `\\Q…\\E` quoting to escapes, a `{` that starts no valid
/// repetition to a literal, and inside brackets `[`, `&&`, `~~` and a `-` after a class escape
/// to literals (Rust reads nested classes and set operations there; Go does not).
fn rewrite(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut class_start = false;
    let mut after_class_escape = false;
    let mut i = 0;
    while i < p.len() {
        let rest = &p[i..];
        let Some(c) = rest.chars().next() else { break };
        if c == '\\' {
            let Some(n) = rest[1..].chars().next() else {
                out.push('\\');
                break;
            };
            i += 1 + n.len_utf8();
            if n == 'Q' && !in_class {
                let body_end = p[i..].find("\\E").map_or(p.len(), |e| i + e);
                out.push_str(&regex::escape(&p[i..body_end]));
                i = (body_end + 2).min(p.len());
                continue;
            }
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
                    // `\p{Greek}`: the braces belong to the escape.
                    if matches!(n, 'p' | 'P') && p[i..].starts_with('{') {
                        let close = p[i..].find('}').map_or(p.len(), |e| i + e + 1);
                        out.push_str(&p[i..close]);
                        i = close;
                    }
                    class_start = false;
                    after_class_escape = in_class && matches!(n, 'p' | 'P');
                    continue;
                }
            };
            out.push_str(if in_class { inside } else { outside });
            class_start = false;
            after_class_escape = in_class;
            continue;
        }
        i += c.len_utf8();
        if in_class {
            if c == ']' && !class_start {
                in_class = false;
                out.push(c);
            } else if c == '[' && p[i..].starts_with(':') {
                // A POSIX class like [:alpha:], copied through its closing `:]`.
                let close = p[i..].find(":]").map_or(p.len(), |e| i + e + 2);
                out.push('[');
                out.push_str(&p[i..close]);
                i = close;
            } else if matches!(c, '[' | '&' | '~')
                || (c == '-' && (after_class_escape || out.ends_with('-')))
            {
                out.push('\\');
                out.push(c);
            } else {
                out.push(c);
            }
            class_start = c == '^' && class_start && out.ends_with("[^");
            after_class_escape = false;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                class_start = true;
                out.push(c);
            }
            '{' if repeat_len(&p[i - 1..]).is_none() => out.push_str("\\{"),
            _ => out.push(c),
        }
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
