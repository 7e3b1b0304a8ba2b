//! Durations and timestamps: `duration('1m30s')` (Go's duration syntax, as cel-go parses it),
//! `timestamp('2024-01-01T00:00:00Z')` (RFC 3339), their range checks, string forms and the
//! `get*` accessors (in UTC; a time zone argument other than UTC is refused).

use crate::value::Value;

const NANOS_PER_SEC: i128 = 1_000_000_000;
/// cel-go keeps durations in Go's `time.Duration`: an i64 of nanoseconds.
const MAX_DURATION: i128 = i64::MAX as i128;
/// CEL timestamps run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
const MIN_TIMESTAMP: i128 = -62_135_596_800 * NANOS_PER_SEC;
const MAX_TIMESTAMP: i128 = 253_402_300_800 * NANOS_PER_SEC - 1;

/// A duration value, checked against the range.
pub(crate) fn duration(nanos: i128) -> Result<Value, String> {
    if (-MAX_DURATION..=MAX_DURATION).contains(&nanos) {
        Ok(Value::Duration(nanos))
    } else {
        Err("duration out of range".into())
    }
}

/// A timestamp value, checked against the range.
pub(crate) fn timestamp(nanos: i128) -> Result<Value, String> {
    if (MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&nanos) {
        Ok(Value::Timestamp(nanos))
    } else {
        Err("timestamp out of range".into())
    }
}

/// Parses Go's duration syntax: an optional sign, then one or more `<number><unit>` with units
/// `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`; `0` alone is allowed.
pub(crate) fn parse_duration(s: &str) -> Result<Value, String> {
    let bad = || format!("invalid duration '{s}'");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Value::Duration(0));
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let int_part = &rest[..int_end];
        rest = &rest[int_end..];
        let mut frac_part = "";
        if let Some(after) = rest.strip_prefix('.') {
            let frac_end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            frac_part = &after[..frac_end];
            rest = &after[frac_end..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(bad());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..unit_end] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS_PER_SEC,
            "m" => 60 * NANOS_PER_SEC,
            "h" => 3600 * NANOS_PER_SEC,
            "" => return Err(format!("invalid duration '{s}': missing unit")),
            u => return Err(format!("invalid duration '{s}': unknown unit '{u}'")),
        };
        rest = &rest[unit_end..];
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| bad())?
        };
        let mut part = whole.checked_mul(unit).ok_or_else(bad)?;
        // The fraction, digit by digit, truncated at nanoseconds as Go does.
        let mut scale = unit;
        for d in frac_part.bytes().take(30) {
            scale /= 10;
            part += i128::from(d - b'0') * scale;
        }
        total = total.checked_add(part).ok_or_else(bad)?;
        if total > MAX_DURATION {
            return Err(bad());
        }
    }
    duration(if neg { -total } else { total })
}

/// Parses an RFC 3339 timestamp.
pub(crate) fn parse_timestamp(s: &str) -> Result<Value, String> {
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|e| format!("invalid timestamp '{s}': {e}"))?;
    timestamp(t.as_nanosecond())
}

/// cel-go's `string(duration)`: seconds with the fraction trimmed, then `s` (`90s`, `1.5s`).
pub(crate) fn format_duration(nanos: i128) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let a = nanos.unsigned_abs();
    let secs = a / NANOS_PER_SEC as u128;
    let frac = a % NANOS_PER_SEC as u128;
    if frac == 0 {
        format!("{sign}{secs}s")
    } else {
        let f = format!("{frac:09}");
        format!("{sign}{secs}.{}s", f.trim_end_matches('0'))
    }
}

fn to_jiff(nanos: i128) -> Result<jiff::Timestamp, String> {
    jiff::Timestamp::from_nanosecond(nanos).map_err(|_| "timestamp out of range".to_string())
}

/// `string(timestamp)`: RFC 3339 in UTC, with the fraction only as long as needed.
pub(crate) fn format_timestamp(nanos: i128) -> Result<String, String> {
    Ok(to_jiff(nanos)?.to_string())
}

/// The `get*` accessors. On timestamps (in UTC; months and days-of-month from `getDayOfMonth`
/// count from 0 as in CEL, `getDate` from 1); on durations, whole hours/minutes/seconds/ms.
/// `None` when the name or the argument does not apply (no such overload).
pub(crate) fn accessor(name: &str, v: &Value, tz: Option<&Value>) -> Option<Result<Value, String>> {
    match v {
        Value::Duration(d) => {
            if tz.is_some() {
                return None;
            }
            let unit: i128 = match name {
                "getHours" => 3600 * NANOS_PER_SEC,
                "getMinutes" => 60 * NANOS_PER_SEC,
                "getSeconds" => NANOS_PER_SEC,
                "getMilliseconds" => 1_000_000,
                _ => return None,
            };
            let n = if name == "getMilliseconds" {
                (d % NANOS_PER_SEC) / unit
            } else {
                d / unit
            };
            Some(Ok(Value::Int(n as i64)))
        }
        Value::Timestamp(t) => {
            match tz {
                None => {}
                Some(Value::String(z)) if z == "UTC" || z == "Z" || z == "+00:00" => {}
                Some(Value::String(z)) => {
                    return Some(Err(format!("unsupported: time zone '{z}' (only UTC)")));
                }
                Some(_) => return None,
            }
            let dt = match to_jiff(*t) {
                Ok(ts) => ts.to_zoned(jiff::tz::TimeZone::UTC).datetime(),
                Err(e) => return Some(Err(e)),
            };
            let n: i64 = match name {
                "getFullYear" => dt.year().into(),
                "getMonth" => i64::from(dt.month()) - 1,
                "getDate" => dt.day().into(),
                "getDayOfMonth" => i64::from(dt.day()) - 1,
                "getDayOfWeek" => dt.weekday().to_sunday_zero_offset().into(),
                "getDayOfYear" => i64::from(dt.day_of_year()) - 1,
                "getHours" => dt.hour().into(),
                "getMinutes" => dt.minute().into(),
                "getSeconds" => dt.second().into(),
                "getMilliseconds" => dt.millisecond().into(),
                _ => return None,
            };
            Some(Ok(Value::Int(n)))
        }
        _ => None,
    }
}
