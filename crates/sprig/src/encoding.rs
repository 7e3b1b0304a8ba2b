//! Base64 and base32 with Go's `encoding/base64` and `encoding/base32` standard encodings,
//! including the exact `illegal base64 data at input byte N` offsets that `b64dec` and `b32dec`
//! print in place of their result when the input is bad.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// `b64enc`: standard base64 with padding.
pub fn b64enc(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                B64[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

fn b64_value(c: u8) -> Option<u32> {
    B64.iter().position(|&x| x == c).map(|p| p as u32)
}

/// Go's `base64.StdEncoding.DecodeString`; the error is Go's message.
pub fn b64dec_bytes(text: &str) -> Result<Vec<u8>, String> {
    let src = text.as_bytes();
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0usize;
    loop {
        let mut vals = [0u32; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(corrupt(si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = b64_value(c) {
                vals[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(corrupt(si - 1));
            }
            // Padding: only after two or three symbols.
            match j {
                0 | 1 => return Err(corrupt(si - 1)),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(corrupt(src.len()));
                    }
                    if src[si] != b'=' {
                        return Err(corrupt(si - 1));
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_err = Some(corrupt(si));
            }
            dlen = j;
            break;
        }
        let n = vals[0] << 18 | vals[1] << 12 | vals[2] << 6 | vals[3];
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(e) = trailing_err {
            return Err(e);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

/// `b64dec`: the decoded text, or Go's error message in its place (as Sprig does).
pub fn b64dec(text: &str) -> String {
    match b64dec_bytes(text) {
        Ok(b) => crate::text::go_string(&b),
        Err(e) => e,
    }
}

/// `b32enc`: standard base32 with padding.
pub fn b32enc(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = buf.iter().fold(0u64, |n, b| n << 8 | u64::from(*b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            out.push(if i < symbols {
                B32[(n >> (35 - 5 * i)) as usize & 31] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString`; the error is Go's message.
pub fn b32dec_bytes(text: &str) -> Result<Vec<u8>, String> {
    // Go strips newlines first; offsets count in the stripped input.
    let src: Vec<u8> = text.bytes().filter(|&c| c != b'\n' && c != b'\r').collect();
    let olen = src.len();
    let corrupt = |at: usize| format!("illegal base32 data at input byte {at}");
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut end = false;
    while pos < olen && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if pos == olen {
                return Err(corrupt(olen - j));
            }
            let c = src[pos];
            pos += 1;
            let remaining = olen - pos;
            if c == b'=' && j >= 2 && remaining < 8 {
                if remaining + j < 7 {
                    return Err(corrupt(olen));
                }
                for k in 0..7 - j {
                    if remaining > k && src[pos + k] != b'=' {
                        return Err(corrupt(pos + k - 1));
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(corrupt(pos - 1));
                }
                break;
            }
            match B32.iter().position(|&x| x == c) {
                Some(v) => dbuf[j] = v as u8,
                None => return Err(corrupt(pos - 1)),
            }
            j += 1;
        }
        let n = dbuf.iter().fold(0u64, |n, &v| n << 5 | u64::from(v));
        let bytes = n.to_be_bytes();
        let count = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[3..3 + count]);
    }
    Ok(out)
}

/// `b32dec`: the decoded text, or Go's error message in its place.
pub fn b32dec(text: &str) -> String {
    match b32dec_bytes(text) {
        Ok(b) => crate::text::go_string(&b),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_reports_go_offsets() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            assert_eq!(b64dec(&b64enc(s.as_bytes())), s);
        }
        assert_eq!(b64enc(b"abc123!?$*&()'-=@~"), "YWJjMTIzIT8kKiYoKSctPUB+");
        assert_eq!(b64dec("YWJj\nMTIz"), "abc123");
        assert_eq!(b64dec("!!!!"), "illegal base64 data at input byte 0");
        assert_eq!(b64dec("YWJ"), "illegal base64 data at input byte 0");
        assert_eq!(b64dec("YWJjZA"), "illegal base64 data at input byte 4");
        assert_eq!(b64dec("YW=="), "a");
        assert_eq!(b64dec("YW==x"), "illegal base64 data at input byte 4");
        assert_eq!(b64dec("Y==="), "illegal base64 data at input byte 1");
    }

    #[test]
    fn base32_round_trips_and_reports_go_offsets() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            assert_eq!(b32dec(&b32enc(s.as_bytes())), s);
        }
        assert_eq!(
            b32enc(b"abc123!?$*&()'-=@~"),
            "MFRGGMJSGMQT6JBKEYUCSJZNHVAH4==="
        );
        assert_eq!(b32enc(b"foobar"), "MZXW6YTBOI======");
        assert_eq!(b32dec("MZXW6==="), "foo");
        assert_eq!(b32dec("1"), "illegal base32 data at input byte 0");
        assert_eq!(b32dec("MZXW6"), "illegal base32 data at input byte 0");
    }
}
