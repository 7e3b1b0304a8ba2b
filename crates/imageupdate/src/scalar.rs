//! Writing a new value into a YAML scalar's place, in the scalar's own style.
//!
//! Flux sets the node's value and lets kyaml (go-yaml v3) print the whole file again; a plain
//! string that YAML 1.1 would read as something else (kyaml's `FormatNonStringStyle`), or that
//! go-yaml v3 would resolve to another type, is double-quoted. We print only the scalar, with
//! the same decisions: plain stays plain when it reads back as the same string, else it is
//! double-quoted; single-quoted stays single-quoted; double-quoted stays double-quoted.

/// The source notation of a scalar we may rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
}

/// The text that replaces the scalar's source bytes. `flow` says whether the scalar sits in a
/// flow collection (`[a, b]`, `{k: v}`), where `,` and brackets end a plain scalar.
pub(crate) fn render(value: &str, style: Style, flow: bool) -> String {
    let printable = !value.chars().any(needs_escape);
    match style {
        Style::Plain
            if printable && plain_reads_back(value, flow) && !resolves_non_string(value) =>
        {
            value.to_string()
        }
        Style::SingleQuoted if printable => format!("'{}'", value.replace('\'', "''")),
        _ => double_quoted(value),
    }
}

/// Characters a double-quoted scalar must escape (and no other style can hold as they are).
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if needs_escape(c) => {
                let n = u32::from(c);
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02X}"));
                } else {
                    out.push_str(&format!("\\u{n:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `value`, written plain as a mapping value or sequence item, is read back as the
/// same text (the YAML emitter's test for plain style): not empty, no surrounding spaces, no
/// leading indicator, no `: ` or ` #` inside, no document marker; in flow context no flow
/// indicators at all.
fn plain_reads_back(value: &str, flow: bool) -> bool {
    let chars: Vec<char> = value.chars().collect();
    let (Some(&first), Some(&last)) = (chars.first(), chars.last()) else {
        return false;
    };
    if first.is_whitespace() || last.is_whitespace() {
        return false;
    }
    if value.starts_with("---") || value.starts_with("...") {
        return false;
    }
    let blank_at = |i: usize| chars.get(i).is_none_or(|c| *c == ' ' || *c == '\t');
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_blank = blank_at(i + 1);
        let bad = if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' => flow || followed_by_blank,
                '-' => followed_by_blank,
                _ => false,
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow,
                ':' => flow || followed_by_blank,
                '#' => chars[i - 1] == ' ' || chars[i - 1] == '\t',
                _ => false,
            }
        };
        if bad {
            return false;
        }
    }
    true
}

/// Whether a plain scalar with this text would not be a string: YAML 1.1 as go-yaml v2 reads
/// it (booleans including yes/no/on/off/y/n, null, `~`, integers in any base with `_`
/// separators, floats, `.inf`, `.nan`, the merge key `<<`), or a timestamp, which go-yaml v3
/// resolves when it prints a plain string (and then quotes it).
pub(crate) fn resolves_non_string(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if WORDS.contains(&value) {
        return true;
    }
    match value.chars().next() {
        Some(c) if c.is_ascii_digit() || matches!(c, '+' | '-' | '.') => {}
        _ => return false,
    }
    let plain: String = value.chars().filter(|c| *c != '_').collect();
    is_go_int(&plain) || is_yaml_float(&plain) || is_timestamp(value)
}

/// Go's `strconv.ParseInt(s, 0, 64)`, or `ParseUint(s, 0, 64)` for an unsigned value.
fn is_go_int(s: &str) -> bool {
    let (negative, signed, body) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    let Ok(magnitude) = u128::from_str_radix(digits, radix) else {
        return false;
    };
    if negative {
        magnitude <= 1u128 << 63
    } else if signed {
        magnitude < 1u128 << 63
    } else {
        magnitude <= u128::from(u64::MAX)
    }
}

/// go-yaml's float syntax: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// go-yaml v3's timestamps: `YYYY-M-D`, optionally followed by `T`, `t` or a space and
/// `H:M:S`, a fraction and a zone (`Z` or `±HH:MM`), with a valid calendar date.
fn is_timestamp(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() < 8 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    let take_num = |t: &str, max: usize| -> Option<(u32, usize)> {
        let n = t.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > max {
            return None;
        }
        Some((t[..n].parse().ok()?, n))
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let rest = &s[5..];
    let Some((month, n)) = take_num(rest, 2) else {
        return false;
    };
    let Some(rest) = rest[n..].strip_prefix('-') else {
        return false;
    };
    let Some((day, n)) = take_num(rest, 2) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days {
        return false;
    }
    let rest = &rest[n..];
    if rest.is_empty() {
        return true;
    }
    let Some(time) = rest.strip_prefix(['T', 't', ' ']) else {
        return false;
    };
    // H:M:S
    let mut t = time;
    for (i, max) in [(0, 23), (1, 59), (2, 59)] {
        let Some((v, n)) = take_num(t, 2) else {
            return false;
        };
        if v > max {
            return false;
        }
        t = &t[n..];
        if i < 2 {
            let Some(r) = t.strip_prefix(':') else {
                return false;
            };
            t = r;
        }
    }
    if let Some(frac) = t.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        t = &frac[n..];
    }
    if t.is_empty() || t == "Z" {
        return true;
    }
    // ±HH:MM (only with a `T` separator; a space form has no zone in go-yaml's layouts)
    if rest.starts_with(' ') {
        return false;
    }
    let Some(zone) = t.strip_prefix(['+', '-']) else {
        return false;
    };
    let zb = zone.as_bytes();
    zb.len() == 5
        && zb[2] == b':'
        && zb[..2].iter().all(u8::is_ascii_digit)
        && zb[3..].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_strings_of_yaml_1_1() {
        for v in [
            "1",
            "-1",
            "+1",
            "1_000",
            "0x1F",
            "0o17",
            "017",
            "0b101",
            "1.0",
            ".5",
            "1e3",
            "1.",
            "08",
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "N",
            "~",
            "null",
            "true",
            ".inf",
            "-.Inf",
            "2024-01-15",
            "2024-1-5",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10",
            "<<",
            "99999999999999999999999",
        ] {
            assert!(resolves_non_string(v), "{v}");
        }
        for v in [
            "v1",
            "1.0.1",
            "image:v1",
            "0x",
            "+",
            ".",
            "-",
            "1e",
            "yess",
            "2024-13-01",
            "2023-02-29",
            "2024-01-15-rc1",
            "sha256:abc",
            "1:20",
            "0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
        ] {
            assert!(!resolves_non_string(v), "{v}");
        }
    }

    #[test]
    fn plain_stays_plain_when_it_reads_back() {
        assert_eq!(
            render("ghcr.io/x/y:1.0", Style::Plain, false),
            "ghcr.io/x/y:1.0"
        );
        assert_eq!(render("1.0", Style::Plain, false), "\"1.0\"");
        assert_eq!(render("yes", Style::Plain, false), "\"yes\"");
        assert_eq!(render("", Style::Plain, false), "\"\"");
        assert_eq!(render("a: b", Style::Plain, false), "\"a: b\"");
        assert_eq!(render("a #b", Style::Plain, false), "\"a #b\"");
        assert_eq!(render("a#b", Style::Plain, false), "a#b");
        assert_eq!(render("*x", Style::Plain, false), "\"*x\"");
        assert_eq!(render("-x", Style::Plain, false), "-x");
        assert_eq!(render("- x", Style::Plain, false), "\"- x\"");
        assert_eq!(render("a,b", Style::Plain, false), "a,b");
        assert_eq!(render("a,b", Style::Plain, true), "\"a,b\"");
        assert_eq!(render("x:", Style::Plain, false), "\"x:\"");
    }

    #[test]
    fn quoted_styles_stay_and_escape() {
        assert_eq!(render("it's", Style::SingleQuoted, false), "'it''s'");
        assert_eq!(render("1.0", Style::SingleQuoted, false), "'1.0'");
        assert_eq!(
            render("a\"b\\c", Style::DoubleQuoted, false),
            "\"a\\\"b\\\\c\""
        );
        assert_eq!(render("a\nb", Style::SingleQuoted, false), "\"a\\nb\"");
        assert_eq!(render("a\u{1}", Style::Plain, false), "\"a\\x01\"");
    }
}
