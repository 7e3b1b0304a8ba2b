//! The part of Go's `net/url` that `urlParse` and `urlJoin` use: `url.Parse` into scheme,
//! userinfo, host, path (unescaped), raw query, opaque part and fragment, and `URL.String()`
//! with Go's escaping rules for hosts, paths, user info and fragments.

use std::fmt;

/// A parsed URL, as Go's `url.URL` holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Url {
    /// `scheme`, without its `:`.
    pub scheme: String,
    /// `opaque`: what follows `scheme:` when it does not start with `/`.
    pub opaque: String,
    /// `user` or `user:password`, escaped as Go's `Userinfo.String()` prints it.
    pub userinfo: Option<String>,
    /// `host` or `host:port`.
    pub host: String,
    /// The path, unescaped.
    pub path: String,
    /// The query, without its `?`, as written.
    pub raw_query: String,
    /// The fragment, without its `#`, unescaped.
    pub fragment: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~') {
        return false;
    }
    if mode == Mode::Host
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::Fragment => false,
            Mode::Host => true,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if should_escape(b, mode) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

/// `%XX` decoding; Go's error for a bad escape.
fn unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
            let Some(hex) = hex else {
                let bad: String = s[i..].chars().take(3).collect();
                return Err(format!("invalid URL escape {:?}", bad));
            };
            out.push(u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(crate::text::go_string(&out))
}

/// `url.Parse`.
pub fn parse(raw: &str) -> Result<Url, String> {
    let wrap = |e: String| format!("parse {:?}: {e}", raw);
    if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return Err(wrap("net/url: invalid control character in URL".into()));
    }
    let (rest, frag) = match raw.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (raw, None),
    };
    let mut u = Url::default();
    if let Some(f) = frag {
        u.fragment = unescape(f).map_err(wrap)?;
    }
    let mut rest = rest;
    // Scheme: a letter, then letters, digits, `+`, `-`, `.`, up to a colon.
    for (i, c) in rest.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if i > 0 && (c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return Err(wrap("missing protocol scheme".into()));
            }
            u.scheme = rest[..i].to_ascii_lowercase();
            rest = &rest[i + 1..];
        }
        break;
    }
    if let Some((r, q)) = rest.split_once('?') {
        u.raw_query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_string();
            return Ok(u);
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err(wrap(
                "first path segment in URL cannot contain colon".into(),
            ));
        }
    }
    if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let cut = after.find('/').unwrap_or(after.len());
        let authority = &after[..cut];
        rest = &after[cut..];
        let host = match authority.rfind('@') {
            Some(at) => {
                let info = &authority[..at];
                let valid = info
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c));
                if !valid {
                    return Err(wrap("net/url: invalid userinfo".into()));
                }
                let (user, pass) = match info.split_once(':') {
                    Some((u, p)) => (unescape(u).map_err(wrap)?, Some(unescape(p).map_err(wrap)?)),
                    None => (unescape(info).map_err(wrap)?, None),
                };
                let mut shown = escape(&user, Mode::UserPassword);
                if let Some(p) = pass {
                    shown.push(':');
                    shown.push_str(&escape(&p, Mode::UserPassword));
                }
                u.userinfo = Some(shown);
                &authority[at + 1..]
            }
            None => authority,
        };
        if !host.starts_with('[')
            && let Some(colon) = host.rfind(':')
        {
            let port = &host[colon + 1..];
            if !port.bytes().all(|c| c.is_ascii_digit()) {
                return Err(wrap(format!(
                    "invalid port {:?} after host",
                    &host[colon..]
                )));
            }
        }
        if let Some(bad) = host
            .bytes()
            .find(|&c| c != b'%' && c < 0x80 && should_escape(c, Mode::Host))
        {
            return Err(wrap(format!(
                "invalid character {:?} in host name",
                (bad as char).to_string()
            )));
        }
        u.host = unescape(host).map_err(wrap)?;
    }
    u.path = unescape(rest).map_err(wrap)?;
    Ok(u)
}

impl Url {
    /// `URL.Hostname()`: the host without its port and IPv6 brackets.
    pub fn hostname(&self) -> String {
        let h = &self.host;
        let host = match h.rfind(':') {
            Some(c)
                if h[c + 1..].bytes().all(|b| b.is_ascii_digit())
                    && (!h.starts_with('[') || h[..c].ends_with(']')) =>
            {
                &h[..c]
            }
            _ => h.as_str(),
        };
        host.strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .unwrap_or(host)
            .to_string()
    }
}

/// `URL.String()`.
impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = String::new();
        if !self.scheme.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
        }
        if !self.opaque.is_empty() {
            buf.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.userinfo.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.userinfo.is_some() {
                    buf.push_str("//");
                }
                if let Some(ui) = &self.userinfo {
                    buf.push_str(ui);
                    buf.push('@');
                }
                buf.push_str(&escape(&self.host, Mode::Host));
            }
            let path = escape(&self.path, Mode::Path);
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() && path.split('/').next().unwrap_or("").contains(':') {
                buf.push_str("./");
            }
            buf.push_str(&path);
        }
        if !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            buf.push_str(&escape(&self.fragment, Mode::Fragment));
        }
        f.write_str(&buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_like_net_url() {
        let u = parse("mailto:someone@example.com").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.opaque.as_str()),
            ("mailto", "someone@example.com")
        );
        assert_eq!(u.to_string(), "mailto:someone@example.com");
        let u = parse("http://[::1]:8080/x").unwrap();
        assert_eq!(u.hostname(), "::1");
        let u = parse("/relative/path?q#f g").unwrap();
        assert_eq!(u.path, "/relative/path");
        assert_eq!(u.raw_query, "q");
        assert_eq!(u.to_string(), "/relative/path?q#f%20g");
        assert_eq!(
            parse("http://ab.com/%zz").unwrap_err(),
            "parse \"http://ab.com/%zz\": invalid URL escape \"%zz\""
        );
        assert_eq!(
            parse(":x").unwrap_err(),
            "parse \":x\": missing protocol scheme"
        );
        assert_eq!(
            parse("http://host:port/").unwrap_err(),
            "parse \"http://host:port/\": invalid port \":port\" after host"
        );
    }
}
