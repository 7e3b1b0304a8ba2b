//! Sprig's string functions on plain `&str`, with the exact behaviour of the Go code behind them:
//! Go's `strings` package, Masterminds/goutils (abbreviate, wrap, initials, swapcase,
//! uncapitalize, whitespace removal, random strings) and huandu/xstrings v1.5 (snake, kebab and
//! Pascal case).
//!
//! Several of those Go functions work on bytes, not characters (`trunc`, `substr`, `abbrev`,
//! `nospace`, `initials`). Where a byte offset can cut a multi-byte character the result is
//! rebuilt with U+FFFD in place of the broken bytes, which is what Go's output shows once written
//! out as UTF-8 text.

use rand::Rng;

/// Go's `strconv.Quote` (`%q` of a string).
pub fn go_quote(s: &str) -> String {
    crate::gotime::go_quote(s)
}

/// Go's `string(b)` of bytes that may not be UTF-8 (Go slices strings by byte): the bytes are
/// kept exactly, in gotemplate's [`gostr`](ferroflux_gotemplate::gostr) form.
pub fn go_string(bytes: &[u8]) -> String {
    ferroflux_gotemplate::gostr::from_bytes(bytes)
}

/// Go's `unicode.IsSpace`.
pub fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c as u32 > 0xff && c.is_whitespace())
}

/// `trunc`: the first `c` bytes, or the last `-c` bytes when `c` is negative.
pub fn trunc(c: i64, s: &str) -> String {
    let bytes = ferroflux_gotemplate::gostr::to_bytes(s);
    let len = bytes.len() as i64;
    if c < 0 && len + c > 0 {
        return go_string(&bytes[(len + c) as usize..]);
    }
    if c >= 0 && len > c {
        return go_string(&bytes[..c as usize]);
    }
    s.to_string()
}

/// `substr start end s`: Go's byte slicing with Sprig's rules for negative and large bounds.
/// Bounds Go would panic on are errors with Go's runtime message.
pub fn substr(start: i64, end: i64, s: &str) -> Result<String, String> {
    let bytes = ferroflux_gotemplate::gostr::to_bytes(s);
    let len = bytes.len() as i64;
    let slice = |a: i64, b: i64| -> Result<String, String> {
        if b < 0 || b > len {
            return Err(format!(
                "runtime error: slice bounds out of range [:{b}] with length {len}"
            ));
        }
        if a < 0 || a > b {
            return Err(format!(
                "runtime error: slice bounds out of range [{a}:{b}]"
            ));
        }
        Ok(go_string(&bytes[a as usize..b as usize]))
    };
    if start < 0 {
        return slice(0, end);
    }
    if end < 0 || end > len {
        if start > len {
            return Err(format!(
                "runtime error: slice bounds out of range [{start}:{len}]"
            ));
        }
        return slice(start, len);
    }
    slice(start, end)
}

/// goutils `AbbreviateFull` with Sprig's guards (`abbrev` is offset 0).
pub fn abbreviate(s: &str, offset: i64, width: i64) -> String {
    go_string(&abbreviate_bytes(
        &ferroflux_gotemplate::gostr::to_bytes(s),
        offset,
        width,
    ))
}

/// The byte-level algorithm: Go slices the string by bytes, also in its recursion.
fn abbreviate_bytes(b: &[u8], offset: i64, width: i64) -> Vec<u8> {
    let len = b.len() as i64;
    if b.is_empty() || width < 4 {
        return if width < 4 { Vec::new() } else { b.to_vec() };
    }
    if len <= width {
        return b.to_vec();
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    let dots = |rest: &[u8]| [b"...".as_slice(), rest].concat();
    if offset <= 4 {
        return [&b[..(width - 3) as usize], b"...".as_slice()].concat();
    }
    if width < 7 {
        return Vec::new();
    }
    if offset + width - 3 < len {
        return dots(&abbreviate_bytes(&b[offset as usize..], 0, width - 3));
    }
    dots(&b[(len - (width - 3)) as usize..])
}

/// `abbrev width s`.
pub fn abbrev(width: i64, s: &str) -> String {
    if width < 4 {
        return s.to_string();
    }
    abbreviate(s, 0, width)
}

/// `abbrevboth left right s`.
pub fn abbrevboth(left: i64, right: i64, s: &str) -> String {
    if right < 4 || (left > 0 && right < 7) {
        return s.to_string();
    }
    abbreviate(s, left, right)
}

/// goutils `Initials`: the first byte of each whitespace-separated word. It reads bytes, so a
/// multi-byte first letter is re-encoded byte by byte, as in Go.
pub fn initials(s: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for &b in s.as_bytes() {
        let c = b as char;
        if is_go_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

/// goutils `DeleteWhiteSpace` (`nospace`), byte by byte as in Go.
pub fn nospace(s: &str) -> String {
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| is_go_space(b as char)) {
        return s.to_string();
    }
    bytes
        .iter()
        .map(|&b| b as char)
        .filter(|c| !is_go_space(*c))
        .collect()
}

/// goutils `Uncapitalize` (`untitle`): lower-cases the first letter of each word.
pub fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if is_go_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

/// Go's `unicode.ToLower`: the simple (one-character) mapping.
pub fn to_lower(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        // Only U+0130 (İ) has a multi-character full lower case; its simple one is 'i'.
        (Some(x), Some(_)) if c == '\u{130}' => x,
        _ => c,
    }
}

/// Go's `strings.ToUpper`: per character, simple mappings only (`ß` stays `ß`); like every
/// `strings.Map`, a byte that is not UTF-8 becomes U+FFFD.
pub fn go_upper(s: &str) -> String {
    ferroflux_gotemplate::gostr::lossy(s)
        .chars()
        .map(to_upper)
        .collect()
}

/// Go's `strings.ToLower`: per character, simple mappings only (bad bytes as in `go_upper`).
pub fn go_lower(s: &str) -> String {
    ferroflux_gotemplate::gostr::lossy(s)
        .chars()
        .map(to_lower)
        .collect()
}

/// Go's `unicode.ToUpper`: the simple (one-character) mapping.
pub fn to_upper(c: char) -> char {
    let mut u = c.to_uppercase();
    match (u.next(), u.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// Go's `unicode.IsTitle`: the four title-case digraphs and the Greek capitals with
/// prosgegrammeni.
fn is_title(c: char) -> bool {
    matches!(c as u32, 0x1C5 | 0x1C8 | 0x1CB | 0x1F2 | 0x1F88..=0x1F8F | 0x1F98..=0x1F9F | 0x1FA8..=0x1FAF | 0x1FBC | 0x1FCC | 0x1FFC)
}

/// Go's `unicode.ToTitle`: like upper case except for the digraphs (`ǆ` becomes `ǅ`).
pub fn to_title(c: char) -> char {
    match c as u32 {
        0x1C4..=0x1C6 => '\u{1C5}',
        0x1C7..=0x1C9 => '\u{1C8}',
        0x1CA..=0x1CC => '\u{1CB}',
        0x1F1..=0x1F3 => '\u{1F2}',
        _ if is_title(c) => c,
        _ => to_upper(c),
    }
}

/// goutils `SwapCase`: upper becomes lower; lower becomes upper (title case after whitespace).
pub fn swapcase(s: &str) -> String {
    let mut ws = true;
    s.chars()
        .map(|c| {
            if c.is_uppercase() || is_title(c) {
                ws = false;
                to_lower(c)
            } else if c.is_lowercase() {
                let was_ws = ws;
                ws = false;
                if was_ws { to_title(c) } else { to_upper(c) }
            } else {
                ws = is_go_space(c);
                c
            }
        })
        .collect()
}

/// Go's `strings.Title`: upper-cases the first letter of each word, where a word starts after
/// anything that is not a letter, digit, underscore or non-ASCII non-space (bad bytes as in
/// `go_upper`).
pub fn title(s: &str) -> String {
    let mut prev = ' ';
    ferroflux_gotemplate::gostr::lossy(s)
        .chars()
        .map(|c| {
            let sep = if prev.is_ascii() {
                !(prev.is_ascii_alphanumeric() || prev == '_')
            } else {
                is_go_space(prev)
            };
            prev = c;
            if sep { to_title(c) } else { c }
        })
        .collect()
}

/// goutils `WrapCustom` (`wrap` is `wrap_custom(s, n, "\n", false)`, `wrapWith` passes `true`).
pub fn wrap_custom(s: &str, width: i64, newline: &str, long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let b = ferroflux_gotemplate::gostr::to_bytes(s);
    let b: &[u8] = &b;
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(len + 8);
    while len - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = width + offset + 1;
        let space = b[offset..end].iter().rposition(|&c| c == b' ');
        if let Some(sp) = space {
            out.extend_from_slice(&b[offset..offset + sp]);
            out.extend_from_slice(newline.as_bytes());
            offset += sp + 1;
        } else if long_words {
            out.extend_from_slice(&b[offset..offset + width]);
            out.extend_from_slice(newline.as_bytes());
            offset += width;
        } else {
            let end = width + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(i) => {
                    out.extend_from_slice(&b[offset..end + i]);
                    out.extend_from_slice(newline.as_bytes());
                    offset = end + i + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    go_string(&out)
}

/// `indent n s`: pads every line.
pub fn indent(spaces: i64, s: &str) -> String {
    let pad = " ".repeat(spaces.max(0) as usize);
    format!("{pad}{}", s.replace('\n', &format!("\n{pad}")))
}

/// Go's `strings.Split`, including the empty-separator split into characters.
pub fn split(s: &str, sep: &str) -> Vec<String> {
    splitn(s, sep, -1)
}

/// Go's `strings.SplitN`: `n == 0` gives nothing, `n < 0` everything.
pub fn splitn(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<&str> = s
            .char_indices()
            .map(|(i, c)| &s[i..i + c.len_utf8()])
            .collect();
        if n < 0 || chars.len() <= n as usize {
            return chars.into_iter().map(str::to_string).collect();
        }
        let k = n as usize - 1;
        let cut = chars[..k].iter().map(|c| c.len()).sum::<usize>();
        let mut out: Vec<String> = chars[..k].iter().map(|c| c.to_string()).collect();
        out.push(s[cut..].to_string());
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Go's `strings.Trim(s, cutset)`: removes leading and trailing characters found in `cutset`.
pub fn trim_all(cutset: &str, s: &str) -> String {
    s.trim_matches(|c| cutset.contains(c)).to_string()
}

/// Go's `strings.TrimSpace`.
pub fn trim_space(s: &str) -> String {
    s.trim_matches(is_go_space).to_string()
}

/// `repeat n s`; Go panics on a negative count, which a template reports as this error.
pub fn repeat(count: i64, s: &str) -> Result<String, String> {
    if count < 0 {
        return Err("strings: negative Repeat count".into());
    }
    if (s.len() as u128) * (count as u128) > isize::MAX as u128 {
        return Err("strings: Repeat output length overflow".into());
    }
    Ok(s.repeat(count as usize))
}

/// Which alphabet a random string draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alphabet {
    /// `[A-Za-z0-9]` (`randAlphaNum`).
    AlphaNum,
    /// `[A-Za-z]` (`randAlpha`).
    Alpha,
    /// `[0-9]` (`randNumeric`).
    Numeric,
    /// printable ASCII, space to `~` (`randAscii`).
    Ascii,
}

/// goutils' crypto-random strings; a negative count gives `""` as Sprig swallows the error.
pub fn random(count: i64, alphabet: Alphabet) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const DIGITS: &[u8] = b"0123456789";
    let set: Vec<u8> = match alphabet {
        Alphabet::AlphaNum => [LETTERS, DIGITS].concat(),
        Alphabet::Alpha => LETTERS.to_vec(),
        Alphabet::Numeric => DIGITS.to_vec(),
        Alphabet::Ascii => (32u8..127).collect(),
    };
    let mut rng = rand::rngs::OsRng;
    (0..count.max(0))
        .map(|_| set[rng.gen_range(0..set.len())] as char)
        .collect()
}

/// xstrings `Shuffle`: the characters in random order.
pub fn shuffle(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let mut rng = rand::thread_rng();
    for i in (1..chars.len()).rev() {
        let j = rng.gen_range(0..=i);
        chars.swap(i, j);
    }
    chars.into_iter().collect()
}

/// xstrings' connector: `-`, `_` or whitespace.
fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || is_go_space(c)
}

/// xstrings' "alphabet": a letter outside the common CJK blocks.
fn is_alphabet(c: char) -> bool {
    if !c.is_alphabetic() {
        return false;
    }
    let u = c as u32;
    !((0x4E00..=0x9FCC).contains(&u)
        || (0x3400..=0x4D85).contains(&u)
        || (0x20000..=0x2B81D).contains(&u))
}

/// Go's `unicode.IsPunct` for ASCII and the common Unicode punctuation blocks.
fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c);
    }
    matches!(c as u32, 0xA1 | 0xA7 | 0xAB | 0xB6 | 0xB7 | 0xBB | 0xBF | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011)
}

/// xstrings v1.5 `ToPascalCase` (Sprig's `camelcase`).
pub fn pascal_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut first_upper = false;
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = c.is_uppercase();
            r0 = Some(to_upper(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        // Only connectors: Go writes the last one a second time.
        if let Some(last) = s.chars().last() {
            out.push(last);
        }
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = r0.is_uppercase();
            r0 = to_upper(r0);
        } else {
            if first_upper {
                if r0.is_uppercase() {
                    r0 = to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `nextWord`: the type and text of the first word of `s`, and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut it = s.char_indices().peekable();
    let Some((_, first)) = it.next() else {
        return (Word::Invalid, "", "");
    };
    let mut end = first.len_utf8();
    let take_while = |end: &mut usize, f: &dyn Fn(char) -> bool| {
        for c in s[*end..].chars() {
            if !f(c) {
                break;
            }
            *end += c.len_utf8();
        }
    };
    let wt = if is_connector(first) {
        take_while(&mut end, &is_connector);
        Word::Connector
    } else if is_punct(first) {
        take_while(&mut end, &is_punct);
        Word::Punct
    } else if first.is_uppercase() {
        if let Some(next) = s[end..].chars().next() {
            if next.is_uppercase() {
                let mut prev_size = next.len_utf8();
                end += prev_size;
                let mut stop = None;
                for c in s[end..].chars() {
                    if !c.is_uppercase() {
                        stop = Some(c);
                        break;
                    }
                    prev_size = c.len_utf8();
                    end += prev_size;
                }
                // "HTTPStatus" splits as "HTTP" + "Status".
                if stop.is_some_and(is_alphabet) {
                    end -= prev_size;
                }
            } else if is_alphabet(next) {
                take_while(&mut end, &|c| is_alphabet(c) && !c.is_uppercase());
            }
        }
        Word::Upper
    } else if is_alphabet(first) {
        take_while(&mut end, &|c| is_alphabet(c) && !c.is_uppercase());
        Word::Alphabet
    } else if first.is_numeric() {
        take_while(&mut end, &char::is_numeric);
        Word::Number
    } else {
        take_while(&mut end, &|c| {
            !(is_connector(c) || is_alphabet(c) || c.is_numeric() || is_punct(c))
        });
        Word::Other
    };
    (wt, &s[..end], &s[end..])
}

fn push_lower(out: &mut String, wt: Word, word: &str, connector: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if c.is_uppercase() {
            out.push(to_lower(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings v1.5 `camelCaseToLowerCase` (`snakecase` with `_`, `kebabcase` with `-`).
pub fn lower_case_words(s: &str, connector: char) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    if s.is_empty() {
        return out;
    }
    let (mut wt, mut word, mut rest) = next_word(s);
    while !rest.is_empty() {
        if wt != Word::Connector {
            push_lower(&mut out, wt, word, connector);
        }
        let (prev, last) = (wt, word);
        (wt, word, rest) = next_word(rest);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    push_lower(&mut out, wt, word, connector);
                    (wt, word, rest) = next_word(rest);
                }
                if !matches!(wt, Word::Invalid | Word::Punct | Word::Connector) {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if !matches!(wt, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, rest) = next_word(rest);
                // A number between words belongs to the word before it ("Bld4Floor").
                if wt != Word::Alphabet {
                    push_lower(&mut out, Word::Number, last, connector);
                    if !matches!(wt, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                // Lower-case letters after a number start a new word ("HTTP2xx").
                out.push(connector);
                push_lower(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    push_lower(&mut out, wt, word, connector);
                    (wt, word, rest) = next_word(rest);
                }
                if !matches!(wt, Word::Invalid | Word::Connector | Word::Punct) {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, wt, word, connector);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_and_substrings() {
        assert_eq!(trunc(5, "hello world"), "hello");
        assert_eq!(trunc(-5, "hello world"), "world");
        assert_eq!(trunc(-20, "hello"), "hello");
        assert_eq!(trunc(20, "hello"), "hello");
        assert_eq!(substr(0, 5, "hello world").unwrap(), "hello");
        assert_eq!(substr(-1, 5, "hello world").unwrap(), "hello");
        assert_eq!(substr(6, -1, "hello world").unwrap(), "world");
        assert_eq!(substr(6, 99, "hello world").unwrap(), "world");
        assert_eq!(
            substr(4, 2, "hello").unwrap_err(),
            "runtime error: slice bounds out of range [4:2]"
        );
        assert_eq!(
            substr(-1, 9, "abc").unwrap_err(),
            "runtime error: slice bounds out of range [:9] with length 3"
        );
    }

    #[test]
    fn abbreviations_follow_goutils() {
        assert_eq!(abbrev(5, "hello world"), "he...");
        assert_eq!(abbrev(3, "hello world"), "hello world");
        assert_eq!(abbrev(20, "hello"), "hello");
        assert_eq!(abbrevboth(5, 10, "1234 5678 9123"), "...5678...");
        assert_eq!(abbrevboth(0, 10, "1234 5678 9123"), "1234 56...");
        assert_eq!(abbrevboth(10, 10, "1234 5678 9123"), "...78 9123");
        assert_eq!(abbrevboth(1, 5, "1234 5678 9123"), "1234 5678 9123");
    }

    #[test]
    fn words() {
        assert_eq!(initials("First Try"), "FT");
        assert_eq!(initials("  a  b\tc "), "abc");
        assert_eq!(nospace("h e l l o "), "hello");
        assert_eq!(untitle("First Try"), "first try");
        assert_eq!(swapcase("This Is A.Test"), "tHIS iS a.tEST");
        assert_eq!(
            title("hello world-wide_web x.y"),
            "Hello World-Wide_web X.Y"
        );
        assert_eq!(wrap_custom("Hello World", 5, "", false), "Hello\nWorld");
        assert_eq!(wrap_custom("Hello World", 5, "\t", true), "Hello\tWorld");
        assert_eq!(
            wrap_custom("A very longwordthatgoeson and on", 6, "", false),
            "A very\nlongwordthatgoeson\nand on"
        );
        assert_eq!(
            wrap_custom("A very longwordthatgoeson", 6, "<br>", true),
            "A very<br>longwo<br>rdthat<br>goeson"
        );
        assert_eq!(indent(2, "a\nb"), "  a\n  b");
        assert_eq!(trim_all("$", "$$5.00$"), "5.00");
        assert_eq!(trim_space(" \t x \n"), "x");
        assert_eq!(repeat(3, "ab").unwrap(), "ababab");
        assert!(repeat(-1, "ab").is_err());
        assert_eq!(
            repeat(i64::MAX, "ab").unwrap_err(),
            "strings: Repeat output length overflow"
        );
    }

    #[test]
    fn splits_like_go() {
        assert_eq!(split("a/b/c", "/"), ["a", "b", "c"]);
        assert_eq!(split("abc", ""), ["a", "b", "c"]);
        assert_eq!(split("", "/"), [""]);
        assert_eq!(splitn("a/b/c", "/", 2), ["a", "b/c"]);
        assert_eq!(splitn("abc", "", 2), ["a", "bc"]);
        assert!(splitn("a/b", "/", 0).is_empty());
    }

    #[test]
    fn cases_follow_xstrings() {
        for (input, snake) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
            ("a.b", "a.b"),
        ] {
            assert_eq!(lower_case_words(input, '_'), snake, "{input}");
        }
        assert_eq!(lower_case_words("HTTPServer", '-'), "http-server");
        for (input, pascal) in [
            ("http_server", "HttpServer"),
            ("_camel_case", "_CamelCase"),
            ("no_https", "NoHttps"),
            ("_complex__case_", "_Complex_Case_"),
            ("all", "All"),
            ("GOLANG_IS_GREAT", "GolangIsGreat"),
            ("some words", "SomeWords"),
            ("x", "X"),
            ("__", "___"),
        ] {
            assert_eq!(pascal_case(input), pascal, "{input}");
        }
    }

    #[test]
    fn random_strings_have_the_length_and_alphabet() {
        for (alphabet, ok) in [
            (
                Alphabet::AlphaNum,
                (|c: char| c.is_ascii_alphanumeric()) as fn(char) -> bool,
            ),
            (Alphabet::Alpha, |c: char| c.is_ascii_alphabetic()),
            (Alphabet::Numeric, |c: char| c.is_ascii_digit()),
            (Alphabet::Ascii, |c: char| (' '..='~').contains(&c)),
        ] {
            for n in [0, 1, 17, 300] {
                let s = random(n, alphabet);
                assert_eq!(s.len(), n as usize);
                assert!(s.chars().all(ok), "{alphabet:?}: {s}");
            }
        }
        assert_eq!(random(-3, Alphabet::Alpha), "");
        // 300 characters from 62 cannot all be one character unless the generator is broken.
        let s = random(300, Alphabet::AlphaNum);
        assert!(s.chars().any(|c| c != s.chars().next().unwrap()));
        let shuffled = shuffle("abcdef");
        let mut sorted: Vec<char> = shuffled.chars().collect();
        sorted.sort();
        assert_eq!(sorted.into_iter().collect::<String>(), "abcdef");
    }
}
