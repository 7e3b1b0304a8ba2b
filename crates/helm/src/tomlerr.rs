//! `fromToml`'s error text as Helm returns it under `Error`: BurntSushi/toml v1.6's
//! `toml: line N (last key "K"): MESSAGE`, where our reader is the `toml` crate.
//!
//! The `toml` crate says what went wrong and where in its own words; this module maps each kind
//! real files run into to BurntSushi's wording, line and "last key" (the table of the last
//! `[header]` plus the key whose value was being read; only the table once a value is done).
//! Those are recovered from the text around the reported position. Kinds not mapped keep the
//! `toml` crate's text after `toml: `. Two documents BurntSushi reads and the `toml` crate
//! refuses (a dotted key's table set again as a plain key, a trailing comma in an inline table)
//! give an error here and a map in Helm.

use ferroflux_gotemplate::fmt::quote;

/// BurntSushi's text for a document holding bytes that are not UTF-8 (gotemplate's `gostr`
/// form), which its lexer refuses at the first such byte; `None` for a UTF-8 document.
pub fn utf8_message(text: &str) -> Option<String> {
    if !ferroflux_gotemplate::gostr::has_escapes(text) {
        return None;
    }
    let bytes = ferroflux_gotemplate::gostr::to_bytes(text);
    let mut offset = 0;
    let mut bad = None;
    for chunk in bytes.utf8_chunks() {
        offset += chunk.valid().len();
        if let Some(&b) = chunk.invalid().first() {
            bad = Some(b);
            break;
        }
    }
    let byte = bad?;
    let before = String::from_utf8_lossy(&bytes[..offset]);
    let line0 = before.matches('\n').count();
    let at = Doc::new(&before).in_value(line0);
    Some(shown(&at, &format!("invalid UTF-8 byte: 0x{byte:02x}")))
}

fn shown(at: &At, text: &str) -> String {
    if at.last_key.is_empty() {
        format!("toml: line {}: {text}", at.line)
    } else {
        format!(
            "toml: line {} (last key {}): {text}",
            at.line,
            quote(&at.last_key)
        )
    }
}

/// BurntSushi's text for the error `e` of reading `text`.
pub fn message(text: &str, e: &toml::de::Error) -> String {
    let full = e.to_string();
    let Some((line0, col0)) = e.line_col() else {
        return format!("toml: {full}");
    };
    let msg = full
        .split(" at line ")
        .next()
        .unwrap_or(&full)
        .split(" for key `")
        .next()
        .unwrap_or(&full);
    let doc = Doc::new(text);
    doc.map(msg, line0, col0)
        .unwrap_or_else(|| format!("toml: {full}"))
}

struct Doc<'a> {
    lines: Vec<&'a str>,
    /// The line BurntSushi's lexer is on at the end of the input (an ending newline does not
    /// start a line of its own for an error at EOF).
    eof_line: usize,
}

/// Where BurntSushi's error is and which key it names.
struct At {
    line: usize,
    last_key: String,
}

impl<'a> Doc<'a> {
    fn new(text: &'a str) -> Doc<'a> {
        let newlines = text.matches('\n').count();
        Doc {
            lines: text.split('\n').collect(),
            eof_line: newlines + 1 - usize::from(text.ends_with('\n') && newlines > 0),
        }
    }

    fn line(&self, line0: usize) -> &'a str {
        self.lines.get(line0).copied().unwrap_or("")
    }

    /// The character at a position: `'\n'` past the end of a line, NUL at the end of input.
    fn char_at(&self, line0: usize, col0: usize) -> char {
        match self.line(line0).chars().nth(col0) {
            Some(c) => c,
            None if line0 + 1 < self.lines.len() => '\n',
            None => '\0',
        }
    }

    fn is_header(&self, line0: usize) -> bool {
        self.line(line0).trim_start().starts_with('[')
    }

    /// The table of the last header before `line0`.
    fn table(&self, line0: usize) -> Vec<String> {
        (0..line0.min(self.lines.len()))
            .rev()
            .find(|&i| self.is_header(i))
            .map(|i| header_name(self.line(i)))
            .unwrap_or_default()
    }

    /// The key of the key/value line holding `line0` (the nearest line at or above it, below
    /// the last header, that starts with `key =`).
    fn key(&self, line0: usize) -> Vec<String> {
        for i in (0..=line0.min(self.lines.len().saturating_sub(1))).rev() {
            if self.is_header(i) {
                break;
            }
            if let Some(k) = key_of(self.line(i)) {
                return k;
            }
        }
        Vec::new()
    }

    fn in_value(&self, line0: usize) -> At {
        let mut k = self.table(line0);
        k.extend(self.key(line0));
        At {
            line: line0 + 1,
            last_key: k.join("."),
        }
    }

    fn top(&self, line0: usize) -> At {
        At {
            line: line0 + 1,
            last_key: self.table(line0).join("."),
        }
    }

    /// The value token after the `=` of the key/value line holding `line0`.
    fn value_token(&self, line0: usize) -> String {
        let line = self.line(line0);
        let rest = line.split_once('=').map(|(_, v)| v).unwrap_or(line);
        rest.trim_start()
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}' | '#'))
            .collect()
    }

    fn map(&self, msg: &str, line0: usize, col0: usize) -> Option<String> {
        let (at, text) = if msg.starts_with("expected an equals, found") {
            let got = go_rune(self.char_at(line0, col0));
            (
                self.top(line0),
                format!("expected '.' or '=', but got {got} instead"),
            )
        } else if msg == "unterminated string" {
            let rest: String = self.line(line0).chars().skip(col0).collect();
            let delim = ["\"\"\"", "'''", "\"", "'"]
                .into_iter()
                .find(|d| rest.starts_with(d))?;
            // BurntSushi's texts quote each delimiter its own way.
            let shown = match delim {
                "\"" => r#"'"'"#,
                "'" => r#""'""#,
                "\"\"\"" => r#"'"""'"#,
                _ => r#""'''""#,
            };
            let mut at = self.in_value(line0);
            at.line = self.eof_line;
            (at, format!("unexpected EOF; expected {shown}"))
        } else if msg == "newline in string found" {
            (
                self.in_value(line0),
                "strings cannot contain newlines".to_string(),
            )
        } else if msg == "expected a value, found a newline" {
            (
                self.in_value(line0),
                "expected value but found '\\n' instead".into(),
            )
        } else if msg == "unexpected eof encountered" || msg == "expected a value, found eof" {
            let mut at = self.in_value(line0);
            at.line = self.eof_line;
            (at, "unexpected EOF; expected value".into())
        } else if msg == "expected a value, found a comma" {
            (self.in_value(line0), "unexpected comma".into())
        } else if msg == "invalid TOML value, did you mean to use a quoted string?" {
            let word: String = self
                .line(line0)
                .chars()
                .skip(col0)
                .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}' | '#'))
                .collect();
            // BurntSushi reads a keyword or `nan`/`inf` and then stops at what follows it.
            let keyword = [
                "true", "false", "nan", "inf", "+nan", "-nan", "+inf", "-inf",
            ]
            .into_iter()
            .filter(|k| word.len() > k.len() && word.starts_with(k))
            .max_by_key(|k| k.len());
            match keyword {
                Some(k) => {
                    let got = go_rune(word[k.len()..].chars().next()?);
                    (
                        self.top(line0),
                        format!(
                            "expected a top-level item to end with a newline, comment, or EOF, but got {got} instead"
                        ),
                    )
                }
                None => (
                    self.in_value(line0),
                    format!("expected value but found {} instead", quote(&word)),
                ),
            }
        } else if msg.starts_with("expected newline, found")
            && let Some(token) = Some(self.value_token(line0))
                .filter(|t| number_like(t) && self.token_covers(line0, t, col0))
        {
            // BurntSushi lexes a number with all its digits, dots and exponents, then fails
            // to read it as a float.
            (
                self.in_value(line0),
                format!("Invalid float value: {}", quote(&token)),
            )
        } else if msg.starts_with("expected newline, found") {
            let got = go_rune(self.char_at(line0, col0));
            (
                self.top(line0),
                format!(
                    "expected a top-level item to end with a newline, comment, or EOF, but got {got} instead"
                ),
            )
        } else if msg.starts_with("expected a right bracket, found") && self.is_header(line0) {
            let got = go_rune(self.char_at(line0, col0));
            let header = self.line(line0).trim_start();
            let text = if header.starts_with("[[") && header.contains(']') {
                format!("expected end of table array name delimiter ']', but got {got} instead")
            } else {
                format!("expected '.' or ']' to end table name, but got {got} instead")
            };
            (self.top(line0), text)
        } else if msg == "expected a right bracket, found eof" {
            (
                self.in_value(line0),
                "expected a comma (',') or array terminator (']'), but got end of file".into(),
            )
        } else if msg == "expected a comma, found eof" {
            let mut at = self.in_value(line0);
            if let Some(inner) = inline_key(self.line(line0)) {
                at.last_key = if at.last_key.is_empty() {
                    inner
                } else {
                    format!("{}.{inner}", at.last_key)
                };
            }
            (
                at,
                "expected a comma or an inline table terminator '}', but got end of file instead"
                    .into(),
            )
        } else if let Some(c) = msg
            .strip_prefix("invalid escape character in string: `")
            .and_then(|r| r.strip_suffix('`'))
        {
            (
                self.in_value(line0),
                format!("invalid escape in string '\\{c}'"),
            )
        } else if msg.starts_with("invalid hex escape character in string: `") {
            // BurntSushi shows the string read so far, from after its opening quote to the bad
            // character.
            let chars: Vec<char> = self.line(line0).chars().collect();
            let end = col0.min(chars.len().saturating_sub(1));
            let open = chars[..end].iter().position(|&c| c == '"')?;
            let escape = chars[..end].iter().rposition(|&c| c == '\\')?;
            let (count, letter) = match chars.get(escape + 1) {
                Some('U') => ("eight", 'U'),
                _ => ("four", 'u'),
            };
            let read: String = chars[open + 1..=end].iter().collect();
            (
                self.in_value(line0),
                format!(
                    "expected {count} hexadecimal digits after '\\{letter}', but got {} instead",
                    quote(&read)
                ),
            )
        } else if msg.starts_with("invalid character in string: `") {
            let c = self
                .line(line0)
                .chars()
                .find(|c| c.is_control() && *c != '\t')?;
            (
                self.in_value(line0),
                format!(
                    "TOML files cannot contain control characters: '0x{:02x}'",
                    c as u32
                ),
            )
        } else if msg == "invalid number" {
            (self.in_value(line0), self.number_problem(line0)?)
        } else if msg.starts_with("failed to parse datetime") || msg == "invalid date" {
            let token = self.value_token(line0);
            (
                self.in_value(line0),
                format!("invalid datetime: {}", quote(&token)),
            )
        } else if msg == "expected a table key, found an equals" {
            (
                self.top(line0),
                "unexpected '=': key name appears blank".into(),
            )
        } else if msg == "expected a table key, found a right bracket" && self.is_header(line0) {
            (
                self.top(line0),
                "unexpected end of table name (table names cannot be empty)".into(),
            )
        } else if msg.starts_with("duplicate key: ")
            && let Some((line, key)) = self.first_duplicate()
        {
            (
                At {
                    line,
                    last_key: key.clone(),
                },
                format!("Key '{key}' has already been defined."),
            )
        } else if (msg.starts_with("duplicate key: ") || msg.starts_with("redefinition of table"))
            && self.is_header(line0)
        {
            // A header naming a table or key already defined: the key so far is the header's
            // parent, as BurntSushi walks the header's parts.
            let name = header_name(self.line(line0));
            let at = At {
                line: line0 + 1,
                last_key: name[..name.len().saturating_sub(1)].join("."),
            };
            (
                at,
                format!("Key '{}' has already been defined.", name.join(".")),
            )
        } else {
            return None;
        };
        Some(shown(&at, &text))
    }

    /// The first `key = …` line whose full key was already set (1-based line, full key).
    fn first_duplicate(&self) -> Option<(usize, String)> {
        let mut table: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, line) in self.lines.iter().enumerate() {
            if line.trim_start().starts_with('[') {
                table = header_name(line);
                continue;
            }
            let Some(k) = key_of(line) else { continue };
            let mut full = table.clone();
            full.extend(k);
            let full = full.join(".");
            if !seen.insert(full.clone()) {
                return Some((i + 1, full));
            }
        }
        None
    }

    /// Whether the value token of line `line0` spans column `col0`.
    fn token_covers(&self, line0: usize, token: &str, col0: usize) -> bool {
        let line = self.line(line0);
        let Some((key, rest)) = line.split_once('=') else {
            return false;
        };
        let start = key.chars().count() + 1 + (rest.len() - rest.trim_start().len());
        col0 < start + token.chars().count()
    }

    /// BurntSushi's text for a number the `toml` crate refused.
    fn number_problem(&self, line0: usize) -> Option<String> {
        let token = self.value_token(line0);
        let next = {
            let line = self.line(line0);
            let after = line
                .split_once('=')
                .map(|(_, v)| v.trim_start())
                .unwrap_or("");
            after[token.len().min(after.len())..]
                .chars()
                .next()
                .unwrap_or(if line0 + 1 < self.lines.len() {
                    '\n'
                } else {
                    '\0'
                })
        };
        let digits = token.trim_start_matches(['+', '-']);
        let is_float = digits.contains(['.', 'e', 'E']);
        let kind = if is_float { "float" } else { "integer" };
        Some(if digits.is_empty() {
            format!("expected a digit but got {}", go_rune(next))
        } else if let Some(base) = ["0x", "0o", "0b"]
            .into_iter()
            .find(|p| digits.starts_with(p) && digits.len() == 2)
        {
            let name = match base {
                "0x" => "a hexadecimal",
                "0o" => "an octal",
                _ => "a binary",
            };
            format!("not {name} number: '{digits}{next}'")
        } else if digits.ends_with('_') || digits.contains("__") || digits.contains("_.") {
            format!(
                "Invalid {kind} {}: underscores must be surrounded by digits",
                quote(&token)
            )
        } else if digits.len() > 1
            && digits.starts_with('0')
            && digits[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            format!(
                "Invalid {kind} {}: cannot have leading zeroes",
                quote(&token)
            )
        } else if digits.ends_with('.') || digits.contains(".e") || digits.contains(".E") {
            format!(
                "Invalid float {}: '.' must be followed by one or more digits",
                quote(&token)
            )
        } else if digits.ends_with(['e', 'E', '+', '-']) {
            format!("Invalid float value: {}", quote(&token))
        } else if digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
            format!("{} is out of range for int64", token.replace('_', ""))
        } else {
            return None;
        })
    }
}

/// Whether a value token is what BurntSushi's lexer takes for one number.
fn number_like(t: &str) -> bool {
    t.trim_start_matches(['+', '-'])
        .starts_with(|c: char| c.is_ascii_digit())
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | 'e' | 'E' | '+' | '-'))
}

/// The dotted name of a `[header]` or `[[header]]` line, quotes removed.
fn header_name(line: &str) -> Vec<String> {
    let inner = line
        .trim()
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or("");
    split_key(inner)
}

/// The key of a `key = value` line.
fn key_of(line: &str) -> Option<Vec<String>> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with(['#', '[', '=']) {
        return None;
    }
    let (k, _) = t.split_once('=')?;
    let k = split_key(k);
    (!k.is_empty() && k.iter().all(|p| !p.is_empty())).then_some(k)
}

/// The last `key =` inside an inline table on `line`.
fn inline_key(line: &str) -> Option<String> {
    let (_, inner) = line.split_once('{')?;
    let last = inner.rsplit(',').next()?;
    let (k, _) = last.split_once('=')?;
    Some(split_key(k).join("."))
}

fn split_key(k: &str) -> Vec<String> {
    k.split('.')
        .map(|p| p.trim().trim_matches(['"', '\'']).to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Go's `%q` of a rune.
fn go_rune(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        match text.parse::<toml::Value>() {
            Ok(_) => "ok".into(),
            Err(e) => message(text, &e),
        }
    }

    #[test]
    fn common_mistakes_read_as_burntsushi_words_them() {
        assert_eq!(
            err("key value"),
            "toml: line 1: expected '.' or '=', but got 'v' instead"
        );
        assert_eq!(
            err("a = 1\na = 2"),
            "toml: line 2 (last key \"a\"): Key 'a' has already been defined."
        );
        assert_eq!(
            err("[t]\nx = abc"),
            "toml: line 2 (last key \"t.x\"): expected value but found \"abc\" instead"
        );
        assert_eq!(
            err("a = \"abc"),
            "toml: line 1 (last key \"a\"): unexpected EOF; expected '\"'"
        );
    }
}
