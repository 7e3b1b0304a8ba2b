//! Small helpers: timestamps, random identifiers, DNS name checks.

use std::time::{SystemTime, UNIX_EPOCH};

use ring::rand::{SecureRandom, SystemRandom};

/// Current time as RFC 3339 with second precision, the format of `metav1.Time`.
pub fn now_rfc3339() -> String {
    format_rfc3339(unix_now())
}

pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `secs` since the epoch as RFC 3339 in UTC with second precision (`1970-01-01T00:00:00Z`).
pub fn format_rfc3339(secs: i64) -> String {
    // Out of jiff's range (beyond the years -9999..=9999) only for corrupt input: clamp.
    let t = jiff::Timestamp::from_second(secs).unwrap_or(if secs < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses the `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` form the API uses into seconds since the
/// epoch; `None` when malformed.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Kubernetes-style human age: `5s`, `3m20s`, `4h`, `2d3h`.
pub fn human_age(secs: i64) -> String {
    let s = secs.max(0);
    if s < 120 {
        format!("{s}s")
    } else if s < 600 {
        format!("{}m{}s", s / 60, s % 60)
    } else if s < 3 * 3600 {
        format!("{}m", s / 60)
    } else if s < 8 * 3600 {
        let (h, m) = (s / 3600, (s % 3600) / 60);
        if m == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{m}m")
        }
    } else if s < 48 * 3600 {
        format!("{}h", s / 3600)
    } else if s < 8 * 86_400 {
        let (d, h) = (s / 86_400, (s % 86_400) / 3600);
        if h == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{h}h")
        }
    } else if s < 365 * 86_400 * 2 {
        format!("{}d", s / 86_400)
    } else {
        format!("{}y", s / (365 * 86_400))
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // The system RNG failing means the OS cannot give entropy at all; nothing sensible remains.
    if SystemRandom::new().fill(&mut buf).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (nanos >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(31);
        }
    }
    buf
}

/// A random version-4 UUID in its canonical text form.
pub fn new_uid() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A hex token of 32 random bytes.
pub fn new_token() -> String {
    random_bytes::<32>()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The 5-character suffix `generateName` gets, from the same alphabet Kubernetes uses
/// (no vowels, no easily confused characters).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    random_bytes::<5>()
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// How a kind's names are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Label,
    /// RBAC objects: any string usable as a path segment (`system:aggregate-to-edit`).
    PathSegment,
}

/// Validates a name; `Err` holds the message Kubernetes gives after `Invalid value: "<name>": `.
pub fn validate_name(name: &str, rule: NameRule) -> Result<(), String> {
    match rule {
        NameRule::Label => {
            if name.len() > 63 {
                return Err("must be no more than 63 characters".into());
            }
            if !is_label(name) {
                return Err(DNS1123_LABEL_MSG.into());
            }
        }
        NameRule::Subdomain => {
            if name.len() > 253 {
                return Err("must be no more than 253 characters".into());
            }
            if !name.split('.').all(is_label) {
                return Err(DNS1123_SUBDOMAIN_MSG.into());
            }
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                return Err(format!("may not be '{name}'"));
            }
            if name.contains('/') || name.contains('%') {
                return Err("may not contain '/' or '%'".into());
            }
        }
    }
    Ok(())
}

/// Parses a Go-style duration (`5s`, `1m30s`, `250ms`, `2h`) into milliseconds.
pub fn parse_duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += n * mult;
    }
    Some(total as u64)
}

/// Sets `v` at `path` (object keys), making objects of whatever is missing or not an object on
/// the way: unlike `v["a"]["b"] = x`, it cannot panic on a value a client wrote.
pub fn set_path(v: &mut serde_json::Value, path: &[&str], value: serde_json::Value) {
    let Some((last, parents)) = path.split_last() else {
        *v = value;
        return;
    };
    let mut cur = v;
    for key in parents {
        if !cur.is_object() {
            *cur = serde_json::Value::Object(serde_json::Map::new());
        }
        let Some(m) = cur.as_object_mut() else { return };
        cur = m
            .entry(key.to_string())
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
    if !cur.is_object() {
        *cur = serde_json::Value::Object(serde_json::Map::new());
    }
    if let Some(m) = cur.as_object_mut() {
        m.insert(last.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("5s"), Some(5000));
        assert_eq!(parse_duration_ms("1m30s"), Some(90_000));
        assert_eq!(parse_duration_ms("250ms"), Some(250));
        assert_eq!(parse_duration_ms("soon"), None);
    }

    use super::*;

    #[test]
    fn time_round_trip() {
        let t = 1_795_000_000;
        let s = format_rfc3339(t);
        assert_eq!(parse_rfc3339(&s), Some(t));
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            parse_rfc3339("2024-02-29T12:00:00+01:00"),
            parse_rfc3339("2024-02-29T11:00:00Z")
        );
    }

    #[test]
    fn names() {
        assert!(validate_name("a.b-c", NameRule::Subdomain).is_ok());
        assert!(validate_name("a.b", NameRule::Label).is_err());
        assert!(validate_name("Bad_Name", NameRule::Subdomain).is_err());
        assert!(validate_name("system:x", NameRule::PathSegment).is_ok());
    }
}
