//! Small Go-compatible helpers that Helm's messages depend on, and the stack that deep values
//! are walked on.

/// Stack kept free for the walks over values: values nest up to Go's JSON limit of 10,000
/// levels (`crate::yaml::GO_JSON_MAX_DEPTH`), and the recursive walks over them (coalescing,
/// merging, conversions, schema checks, dropping a `serde_json::Value`) take up to a few hundred
/// bytes a level each.
const DEEP_STACK: usize = 64 * 1024 * 1024;

/// What [`deep`] needs left to run on the current stack: three quarters of [`DEEP_STACK`], so
/// that an entry point called inside another (values loaded while a template renders) runs on
/// the segment its caller grew instead of mapping, faulting in and unmapping a new 64 MiB one
/// (three per `helm template` process before: issue 14's start-up profile).
const DEEP_RED_ZONE: usize = DEEP_STACK / 4 * 3;

/// Runs `f` where at least [`DEEP_RED_ZONE`] bytes of stack are left, on a new stack segment of
/// [`DEEP_STACK`] bytes when the calling thread has less (mapped lazily: only the pages a walk
/// reaches are used). The library's entry points run through it, so a 10,000-deep value never
/// overflows a caller's stack, whichever thread it is on.
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(DEEP_RED_ZONE, DEEP_STACK, f)
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || c == '\u{feff}' || c == '\u{200b}' => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
