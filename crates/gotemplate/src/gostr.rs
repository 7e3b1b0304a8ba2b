//! Go strings that are not UTF-8, carried inside Rust's `str`.
//!
//! Owns the one encoding by which a [`crate::Value::String`] holds any Go string, whatever its
//! bytes: [`from_bytes`] (Go's `string(b)`), [`to_bytes`] (Go's `[]byte(s)`), [`byte_len`]
//! (Go's `len(s)`) and [`lossy`] (what Go's `encoding/json` and rune-wise code see).
//!
//! Why: a chart may hold a binary or Latin-1 file, and `.Files.Get` of it is a Go string of
//! those bytes: `b64enc`, `sha256sum` and `len` of it work on the bytes, and printing it writes
//! them. Making every string in three crates a byte string would change every function's code;
//! instead each byte that is not part of a valid UTF-8 character is kept as one code point of a
//! reserved range, U+10FE80..=U+10FEFF (byte `b` is `U+10FE00 + b`; such bytes are always
//! 0x80..=0xFF), in the last private-use plane. Bytes read through [`from_bytes`] are exact both
//! ways: a genuine character of that range in them is itself stored as its four escaped bytes,
//! so every byte string has one encoding and decodes back to itself. Text that enters as text
//! (template source, values) is not re-encoded: a genuine character of the range there (private
//! use, unseen in charts) would be read as an escaped byte; that is the one known limit.
//! Strings of valid UTF-8 outside the range, which is every string but these, are stored
//! unchanged; the checks here are one `memchr` of the byte 0xF4 that starts every code point of
//! the range.
//!
//! Functions that treat strings as text (upper, regular expressions…) see an escaped byte as
//! one character, as Go sees an invalid byte as one `utf8.RuneError`.

use std::borrow::Cow;

/// The first code point of the reserved range; byte `b` (0x80..=0xFF) is `ESCAPE_BASE + b`.
const ESCAPE_BASE: u32 = 0x10_FE00;

/// The UTF-8 lead byte of every code point in the reserved range (and of U+100000..U+10FFFF).
const LEAD: u8 = 0xF4;

fn escaped(c: char) -> Option<u8> {
    let c = c as u32;
    (ESCAPE_BASE + 0x80..=ESCAPE_BASE + 0xFF)
        .contains(&c)
        .then(|| (c - ESCAPE_BASE) as u8)
}

fn push_escaped(out: &mut String, byte: u8) {
    // 0x80..=0xFF added to the base stays within U+10FE80..=U+10FEFF, all valid chars.
    if let Some(c) = char::from_u32(ESCAPE_BASE + u32::from(byte)) {
        out.push(c);
    }
}

/// Go's `string(b)`: the bytes as a string, exactly (see the module doc).
pub fn from_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        if valid.as_bytes().contains(&LEAD) {
            for c in valid.chars() {
                if escaped(c).is_some() {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        push_escaped(&mut out, b);
                    }
                } else {
                    out.push(c);
                }
            }
        } else {
            out.push_str(valid);
        }
        for &b in chunk.invalid() {
            push_escaped(&mut out, b);
        }
    }
    out
}

/// Plain UTF-8 text in this form: unchanged, unless it holds characters of the reserved range.
pub fn from_text(s: String) -> String {
    if s.as_bytes().contains(&LEAD) {
        from_bytes(s.as_bytes())
    } else {
        s
    }
}

/// Whether `s` holds an escaped byte, so that its Go bytes differ from its UTF-8.
pub fn has_escapes(s: &str) -> bool {
    s.as_bytes().contains(&LEAD) && s.chars().any(|c| escaped(c).is_some())
}

/// Go's `[]byte(s)`: the string's bytes (borrowed when it holds no escaped byte).
pub fn to_bytes(s: &str) -> Cow<'_, [u8]> {
    if !has_escapes(s) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match escaped(c) {
            Some(b) => out.push(b),
            None => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    Cow::Owned(out)
}

/// Go's `len(s)`: the number of bytes.
pub fn byte_len(s: &str) -> usize {
    if !has_escapes(s) {
        return s.len();
    }
    s.chars()
        .map(|c| {
            if escaped(c).is_some() {
                1
            } else {
                c.len_utf8()
            }
        })
        .sum()
}

/// The string as Go's `encoding/json` and `for range` read it: one U+FFFD for each byte that
/// is not part of a valid UTF-8 character.
pub fn lossy(s: &str) -> Cow<'_, str> {
    if !has_escapes(s) {
        return Cow::Borrowed(s);
    }
    let bytes = to_bytes(s);
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push('\u{FFFD}');
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_text_is_stored_unchanged() {
        for s in ["", "plain", "café ☃ 𝄞", "\u{10FE7F}", "\u{10FFFF}"] {
            assert_eq!(from_bytes(s.as_bytes()), s);
            assert!(!has_escapes(s));
            assert_eq!(byte_len(s), s.len());
        }
    }

    #[test]
    fn bytes_round_trip_exactly() {
        let cases: [&[u8]; 6] = [
            b"caf\xe9\n",
            b"\xff\xfe\x00\x01bin",
            b"\xf0\x9f\x98",
            b"\xf4\x8f\xba\x80",
            b"a\xf4\x8f\xbb\xbfb\xc3",
            b"\x80\x80",
        ];
        for b in cases {
            let s = from_bytes(b);
            assert_eq!(&*to_bytes(&s), b);
            assert_eq!(byte_len(&s), b.len());
        }
        // A genuine character of the reserved range is escaped, so it cannot be misread.
        assert!(has_escapes(&from_bytes("\u{10FEFF}".as_bytes())));
        let genuine = from_text("a\u{10FE80}".to_string());
        assert_eq!(&*to_bytes(&genuine), "a\u{10FE80}".as_bytes());
        assert_eq!(from_text("café".to_string()), "café");
    }

    #[test]
    fn lossy_gives_one_replacement_per_bad_byte_as_go() {
        assert_eq!(lossy(&from_bytes(b"caf\xe9")), "caf\u{FFFD}");
        assert_eq!(
            lossy(&from_bytes(b"\xf0\x9f\x98!")),
            "\u{FFFD}\u{FFFD}\u{FFFD}!"
        );
        assert_eq!(lossy(&from_bytes("\u{10FEFF}".as_bytes())), "\u{10FEFF}");
    }
}
