//! The lexer: CEL source text into tokens, each with the byte offset it starts at. It owns
//! literal decoding (escapes, raw and bytes strings, hex and unsigned integers) so the parser
//! only sees values.

/// One token of CEL source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// An integer literal's magnitude; the parser applies a leading `-` (so that
    /// `-9223372036854775808` is representable) and checks the range.
    Int(u64),
    Uint(u64),
    Double(f64),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Eof,
}

impl Tok {
    /// How a parse error names the token, the way the user wrote it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Int(v) => v.to_string(),
            Tok::Uint(v) => format!("{v}u"),
            Tok::Double(v) => v.to_string(),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Bytes(_) => "bytes literal".to_string(),
            Tok::Ident(s) => s.clone(),
            Tok::LParen => "(".into(),
            Tok::RParen => ")".into(),
            Tok::LBracket => "[".into(),
            Tok::RBracket => "]".into(),
            Tok::LBrace => "{".into(),
            Tok::RBrace => "}".into(),
            Tok::Dot => ".".into(),
            Tok::Comma => ",".into(),
            Tok::Colon => ":".into(),
            Tok::Question => "?".into(),
            Tok::Plus => "+".into(),
            Tok::Minus => "-".into(),
            Tok::Star => "*".into(),
            Tok::Slash => "/".into(),
            Tok::Percent => "%".into(),
            Tok::Bang => "!".into(),
            Tok::Eq => "==".into(),
            Tok::Ne => "!=".into(),
            Tok::Lt => "<".into(),
            Tok::Le => "<=".into(),
            Tok::Gt => ">".into(),
            Tok::Ge => ">=".into(),
            Tok::And => "&&".into(),
            Tok::Or => "||".into(),
            Tok::Eof => "end of input".into(),
        }
    }
}

/// A token and the byte offset in the source where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub at: usize,
}

/// A lexing failure: the byte offset and the reason.
pub(crate) type LexError = (usize, String);

/// Splits `src` into tokens, ending with `Tok::Eof` at `src.len()`.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c) {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let at = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let word = &src[i..j];
            if j < b.len() && (b[j] == b'\'' || b[j] == b'"') && word.len() <= 2 {
                let lower = word.to_ascii_lowercase();
                let (raw, bytes) = match lower.as_str() {
                    "r" => (true, false),
                    "b" => (false, true),
                    "rb" | "br" => (true, true),
                    _ => (false, false),
                };
                if raw || bytes {
                    let (tok, end) = lex_string(src, j, raw, bytes)?;
                    out.push(Token { tok, at });
                    i = end;
                    continue;
                }
            }
            out.push(Token {
                tok: Tok::Ident(word.to_string()),
                at,
            });
            i = j;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, end) = lex_number(src, i)?;
            out.push(Token { tok, at });
            i = end;
            continue;
        }
        if c == b'\'' || c == b'"' {
            let (tok, end) = lex_string(src, i, false, false)?;
            out.push(Token { tok, at });
            i = end;
            continue;
        }
        let next = b.get(i + 1).copied();
        let (tok, len) = match (c, next) {
            (b'=', Some(b'=')) => (Tok::Eq, 2),
            (b'!', Some(b'=')) => (Tok::Ne, 2),
            (b'<', Some(b'=')) => (Tok::Le, 2),
            (b'>', Some(b'=')) => (Tok::Ge, 2),
            (b'&', Some(b'&')) => (Tok::And, 2),
            (b'|', Some(b'|')) => (Tok::Or, 2),
            (b'(', _) => (Tok::LParen, 1),
            (b')', _) => (Tok::RParen, 1),
            (b'[', _) => (Tok::LBracket, 1),
            (b']', _) => (Tok::RBracket, 1),
            (b'{', _) => (Tok::LBrace, 1),
            (b'}', _) => (Tok::RBrace, 1),
            (b'.', _) => (Tok::Dot, 1),
            (b',', _) => (Tok::Comma, 1),
            (b':', _) => (Tok::Colon, 1),
            (b'?', _) => (Tok::Question, 1),
            (b'+', _) => (Tok::Plus, 1),
            (b'-', _) => (Tok::Minus, 1),
            (b'*', _) => (Tok::Star, 1),
            (b'/', _) => (Tok::Slash, 1),
            (b'%', _) => (Tok::Percent, 1),
            (b'!', _) => (Tok::Bang, 1),
            (b'<', _) => (Tok::Lt, 1),
            (b'>', _) => (Tok::Gt, 1),
            // cel-go's backquoted field names are an option Flux does not enable.
            (b'`', _) => return Err((i, "unsupported syntax: '`'".into())),
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err((i, format!("unexpected character '{ch}'")));
            }
        };
        out.push(Token { tok, at });
        i += len;
    }
    out.push(Token {
        tok: Tok::Eof,
        at: b.len(),
    });
    Ok(out)
}

/// Lexes a number starting at `i`: decimal or hex integers (with an optional `u` suffix) and
/// doubles (`1.5`, `.5`, `1e3`, `1.5e-3`).
fn lex_number(src: &str, i: usize) -> Result<(Tok, usize), LexError> {
    let b = src.as_bytes();
    let digits_end = |mut j: usize, hex: bool| {
        while j < b.len() && (b[j].is_ascii_digit() || (hex && b[j].is_ascii_hexdigit())) {
            j += 1;
        }
        j
    };
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        let end = digits_end(i + 2, true);
        if end == i + 2 {
            return Err((i, "invalid hex literal".into()));
        }
        let v = u64::from_str_radix(&src[i + 2..end], 16)
            .map_err(|_| (i, format!("invalid int literal '{}'", &src[i..end])))?;
        return Ok(suffix(b, v, end));
    }
    let mut j = digits_end(i, false);
    let mut is_double = false;
    if j < b.len() && b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        is_double = true;
        j = digits_end(j + 1, false);
    }
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            is_double = true;
            j = digits_end(k, false);
        }
    }
    let text = &src[i..j];
    if is_double {
        let v: f64 = text
            .parse()
            .map_err(|_| (i, format!("invalid double literal '{text}'")))?;
        return Ok((Tok::Double(v), j));
    }
    let v: u64 = text
        .parse()
        .map_err(|_| (i, format!("invalid int literal '{text}'")))?;
    Ok(suffix(b, v, j))
}

/// An integer literal followed by `u`/`U` is unsigned.
fn suffix(b: &[u8], v: u64, end: usize) -> (Tok, usize) {
    if end < b.len() && (b[end] == b'u' || b[end] == b'U') {
        (Tok::Uint(v), end + 1)
    } else {
        (Tok::Int(v), end)
    }
}

/// Lexes a quoted literal whose opening quote is at `q`: single, double or triple quotes;
/// `raw` keeps backslashes as written; `bytes` makes a bytes literal, where `\x` and octal
/// escapes are bytes rather than code points.
fn lex_string(src: &str, q: usize, raw: bool, bytes: bool) -> Result<(Tok, usize), LexError> {
    let b = src.as_bytes();
    let quote = b[q];
    let triple = b.len() >= q + 3 && b[q + 1] == quote && b[q + 2] == quote;
    let mut i = if triple { q + 3 } else { q + 1 };
    let mut buf: Vec<u8> = Vec::new();
    loop {
        if i >= b.len() {
            return Err((q, "unterminated string literal".into()));
        }
        let c = b[i];
        if c == quote {
            if !triple {
                i += 1;
                break;
            }
            if b.len() >= i + 3 && b[i + 1] == quote && b[i + 2] == quote {
                i += 3;
                break;
            }
        }
        if !triple && (c == b'\n' || c == b'\r') {
            return Err((
                q,
                "unterminated string literal (newline in a quoted string)".into(),
            ));
        }
        if c == b'\\' && !raw {
            let (end, decoded) = unescape(src, i, bytes)?;
            match decoded {
                Unescaped::Byte(x) => buf.push(x),
                Unescaped::Char(ch) => {
                    let mut tmp = [0u8; 4];
                    buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                }
            }
            i = end;
            continue;
        }
        buf.push(c);
        i += 1;
    }
    if bytes {
        return Ok((Tok::Bytes(buf), i));
    }
    // Every byte pushed is either copied from the (valid UTF-8) source or a whole encoded char.
    let s =
        String::from_utf8(buf).map_err(|_| (q, "invalid UTF-8 in string literal".to_string()))?;
    Ok((Tok::Str(s), i))
}

enum Unescaped {
    Byte(u8),
    Char(char),
}

/// Decodes the escape sequence whose backslash is at `i`; returns the offset after it.
fn unescape(src: &str, i: usize, bytes: bool) -> Result<(usize, Unescaped), LexError> {
    let b = src.as_bytes();
    let Some(&e) = b.get(i + 1) else {
        return Err((i, "unterminated escape sequence".into()));
    };
    let simple = |c: char| Ok((i + 2, Unescaped::Char(c)));
    match e {
        b'a' => simple('\u{07}'),
        b'b' => simple('\u{08}'),
        b'f' => simple('\u{0c}'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\u{0b}'),
        b'\\' => simple('\\'),
        b'\'' => simple('\''),
        b'"' => simple('"'),
        b'`' => simple('`'),
        b'?' => simple('?'),
        b'x' | b'X' | b'u' | b'U' => {
            let n = match e {
                b'x' | b'X' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = src
                .get(i + 2..i + 2 + n)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .ok_or((i, "invalid escape sequence".to_string()))?;
            let v = u32::from_str_radix(hex, 16)
                .map_err(|_| (i, "invalid escape sequence".to_string()))?;
            if bytes && n == 2 {
                return Ok((i + 2 + n, Unescaped::Byte(v as u8)));
            }
            if bytes {
                return Err((i, "unicode escape in a bytes literal".into()));
            }
            let ch = char::from_u32(v).ok_or((
                i,
                format!("invalid code point in escape '\\{}{hex}'", e as char),
            ))?;
            Ok((i + 2 + n, Unescaped::Char(ch)))
        }
        b'0'..=b'3' => {
            let oct = src
                .get(i + 1..i + 4)
                .filter(|o| o.bytes().all(|c| (b'0'..=b'7').contains(&c)))
                .ok_or((i, "invalid octal escape sequence".to_string()))?;
            let v = u32::from_str_radix(oct, 8)
                .map_err(|_| (i, "invalid escape sequence".to_string()))?;
            if bytes {
                return Ok((i + 4, Unescaped::Byte(v as u8)));
            }
            let ch = char::from_u32(v).ok_or((i, "invalid escape sequence".to_string()))?;
            Ok((i + 4, Unescaped::Char(ch)))
        }
        _ => Err((
            i,
            format!(
                "invalid escape sequence '\\{}'",
                src[i + 1..].chars().next().unwrap_or('?')
            ),
        )),
    }
}
