//! Go `time.Duration` strings, as Flux's `interval`, `timeout` and `retryInterval` use them.

use std::time::Duration;

/// A duration string that is not in Go's `time.ParseDuration` syntax.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: {reason}")]
pub struct DurationError {
    /// The string as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses a Go duration such as `10m`, `1m30s`, `1.5h`, `250ms` or `0`.
///
/// Negative durations are refused: no Flux field accepts them.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total_nanos: u128 = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &s[start..i];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(err("expected a number"));
        }
        let unit_start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let unit_nanos: u128 = match &s[unit_start..i] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            "" => return Err(err("missing unit")),
            _ => return Err(err("unknown unit")),
        };
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| err("number too large"))?
        };
        let mut nanos = whole
            .checked_mul(unit_nanos)
            .ok_or_else(|| err("duration too large"))?;
        // Fractions are scaled digit by digit so `1.5h` is exact, as in Go.
        let mut scale = unit_nanos;
        for digit in frac.bytes() {
            scale /= 10;
            nanos += u128::from(digit - b'0') * scale;
        }
        total_nanos = total_nanos
            .checked_add(nanos)
            .ok_or_else(|| err("duration too large"))?;
    }
    if total_nanos > u128::from(u64::MAX) {
        return Err(err("duration too large"));
    }
    let nanos = total_nanos as u64;
    Ok(Duration::from_nanos(nanos))
}

/// Formats a duration the way Go's `Duration.String` does (`1m30s`, `10m0s`, `250ms`).
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000_000_000 {
        let (value, unit) = if nanos < 1_000 {
            return format!("{nanos}ns");
        } else if nanos < 1_000_000 {
            (nanos as f64 / 1e3, "µs")
        } else {
            (nanos as f64 / 1e6, "ms")
        };
        return format!("{}{unit}", trim_float(value));
    }
    let total_secs = d.as_secs();
    let hours = total_secs / 3600;
    let minutes = (total_secs % 3600) / 60;
    let secs = (total_secs % 60) as f64 + f64::from(d.subsec_nanos()) / 1e9;
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{}s", trim_float(secs)));
    out
}

fn trim_float(value: f64) -> String {
    let s = format!("{value:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("2h45m").unwrap(), Duration::from_secs(9900));
    }

    #[test]
    fn refuses_bad_durations() {
        for bad in ["", "10", "m", "1x", "-1m", "1..5s", "99999999999999999999h"] {
            let e = parse_duration(bad).unwrap_err();
            assert_eq!(e.input, bad);
        }
        assert_eq!(parse_duration("10").unwrap_err().reason, "missing unit");
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format_duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
