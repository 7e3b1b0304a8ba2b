//! Sprig's date.go: `now`, `date`, `dateInZone`, `htmlDate`, `htmlDateInZone`, `dateModify`,
//! `ago`, `duration`, `durationRound`, `toDate`, `unixEpoch` (and the snake-case aliases), over
//! a `time.Time` host object with the methods charts call on it (`.Format`, `.Unix`, `.UTC`,
//! `.Year`, …).

use ferroflux_gotemplate::{CallContext, FuncError, Object, Signature, Type, Value};

use super::{Def, err, fixed, int, s, text};
use crate::conv::parse_int;
use crate::gotime::{self, Time};

use Type::{Any, String as Str};

/// Go's `time.Time` as a parameter type.
const TIME: Type = Type::Object("time.Time");

/// Go's `time.Time` as a template value.
pub struct GoTime(pub Time);

impl GoTime {
    /// Wraps a time as a value.
    pub fn value(t: Time) -> Value {
        Value::object(GoTime(t))
    }

    /// The time inside a value made by [`GoTime::value`].
    pub fn from_value(v: &Value) -> Option<Time> {
        let Value::Object(o) = v else {
            return None;
        };
        o.as_any()?.downcast_ref::<GoTime>().map(|t| t.0.clone())
    }
}

impl Object for GoTime {
    fn type_name(&self) -> String {
        "time.Time".into()
    }

    fn kind_name(&self) -> String {
        "struct".into()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn method(&self, name: &str) -> Option<Signature> {
        Some(match name {
            "Format" => Signature::fixed(&[Str]),
            "Add" => Signature::fixed(&[Type::Int64]),
            "Unix" | "UnixNano" | "UnixMilli" | "Year" | "YearDay" | "Day" | "Hour" | "Minute"
            | "Second" | "Nanosecond" | "UTC" | "Local" | "String" | "IsZero" | "Month"
            | "Weekday" => Signature::fixed(&[]),
            _ => return None,
        })
    }

    fn call_method(
        &self,
        name: &str,
        _ctx: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let t = &self.0;
        let num = |layout: &str| Value::Int(t.format(layout).trim().parse().unwrap_or(0));
        Ok(match name {
            "Format" => Value::from(t.format(s(&args[0]))),
            "Add" => GoTime::value(t.add(int(&args[0]))),
            "Unix" => Value::Int64(t.unix),
            "UnixMilli" => Value::Int64(t.unix * 1000 + i64::from(t.nanos / 1_000_000)),
            "UnixNano" => Value::Int64(
                t.unix
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(i64::from(t.nanos)),
            ),
            "Year" => num("2006"),
            "YearDay" => num("002"),
            "Day" => num("2"),
            "Hour" => num("15"),
            "Minute" => num("4"),
            "Second" => num("5"),
            "Nanosecond" => Value::Int(i64::from(t.nanos)),
            "Month" => Value::from(t.format("January")),
            "Weekday" => Value::from(t.format("Monday")),
            "UTC" => GoTime::value(t.utc()),
            "Local" => GoTime::value(t.local()),
            "String" => Value::from(t.go_string()),
            "IsZero" => Value::Bool(t.unix == Time::zero().unix && t.nanos == 0),
            _ => return Err(err(format!("no method {name}"))),
        })
    }

    fn format(&self) -> String {
        self.0.go_string()
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.0.format("2006-01-02T15:04:05.999999999Z07:00"))
    }
}

/// Sprig's date argument: a time, or Unix seconds as `int`/`int64`; anything else is now.
fn date_arg(v: &Value) -> Time {
    match v {
        Value::Int(i) | Value::Int64(i) => Time::from_unix(*i, 0),
        other => GoTime::from_value(other).unwrap_or_else(Time::now),
    }
}

/// A `time.Time` parameter, with Go's conversion error otherwise.
fn time_param(v: &Value) -> Result<Time, FuncError> {
    GoTime::from_value(v).ok_or_else(|| {
        if v.is_nil() {
            err("invalid value; expected time.Time")
        } else {
            err(format!(
                "wrong type for value; expected time.Time; got {}",
                v.type_name()
            ))
        }
    })
}

fn in_zone(layout: &str, date: &Value, zone: &str) -> String {
    let t = date_arg(date);
    let (name, tz) =
        gotime::load_location(zone).unwrap_or_else(|_| ("UTC".into(), jiff::tz::TimeZone::UTC));
    t.in_zone(name, tz).format(layout)
}

/// Go's `Duration.Round(time.Second)`: half away from zero.
fn round_to_second(d: i64) -> i64 {
    const S: i64 = 1_000_000_000;
    let r = d % S;
    if d < 0 {
        let r = -r;
        if r + r < S {
            return d + r;
        }
        d.checked_sub(S - r).unwrap_or(i64::MIN)
    } else {
        if r + r < S {
            return d - r;
        }
        d.checked_add(S - r).unwrap_or(i64::MAX)
    }
}

pub(crate) fn defs() -> Vec<Def> {
    let mut v = vec![
        fixed("now", &[], |_| Ok(GoTime::value(Time::now()))),
        fixed("date", &[Str, Any], |a| {
            text(in_zone(s(&a[0]), &a[1], "Local"))
        }),
        fixed("htmlDate", &[Any], |a| {
            text(in_zone("2006-01-02", &a[0], "Local"))
        }),
        fixed("htmlDateInZone", &[Any, Str], |a| {
            text(in_zone("2006-01-02", &a[0], s(&a[1])))
        }),
        fixed("ago", &[Any], |a| {
            let t = match &a[0] {
                Value::Int(i) | Value::Int64(i) => Time::from_unix(*i, 0),
                other => GoTime::from_value(other).unwrap_or_else(Time::now),
            };
            text(gotime::duration_string(round_to_second(t.since())))
        }),
        fixed("duration", &[Any], |a| {
            let n = match &a[0] {
                Value::String(s) => parse_int(s, 10).unwrap_or(0),
                Value::Int64(i) => *i,
                _ => 0,
            };
            text(gotime::duration_string(n.wrapping_mul(1_000_000_000)))
        }),
        fixed("durationRound", &[Any], |a| {
            let d = match &a[0] {
                Value::String(s) => gotime::parse_duration(s).unwrap_or(0),
                Value::Int64(i) => *i,
                other => GoTime::from_value(other).map_or(0, |t| t.since()),
            };
            text(duration_round(d))
        }),
        fixed("toDate", &[Str, Str], |a| {
            Ok(GoTime::value(
                gotime::parse_in_location(s(&a[0]), s(&a[1]), "Local", &gotime::local_zone())
                    .unwrap_or_else(|_| Time::zero()),
            ))
        }),
        fixed("mustToDate", &[Str, Str], |a| {
            gotime::parse_in_location(s(&a[0]), s(&a[1]), "Local", &gotime::local_zone())
                .map(GoTime::value)
                .map_err(|e| err(e.to_string()))
        }),
        fixed("unixEpoch", &[TIME], |a| {
            text(time_param(&a[0])?.unix.to_string())
        }),
    ];
    for name in ["dateInZone", "date_in_zone"] {
        v.push(fixed(name, &[Str, Any, Str], |a| {
            text(in_zone(s(&a[0]), &a[1], s(&a[2])))
        }));
    }
    for name in ["dateModify", "date_modify"] {
        v.push(fixed(name, &[Str, TIME], |a| {
            let t = time_param(&a[1])?;
            Ok(GoTime::value(match gotime::parse_duration(s(&a[0])) {
                Ok(d) => t.add(d),
                Err(_) => t,
            }))
        }));
    }
    for name in ["mustDateModify", "must_date_modify"] {
        v.push(fixed(name, &[Str, TIME], |a| {
            let t = time_param(&a[1])?;
            let d = gotime::parse_duration(s(&a[0])).map_err(|e| err(e.to_string()))?;
            Ok(GoTime::value(t.add(d)))
        }));
    }
    v
}

/// Sprig's `durationRound`: the largest whole unit (y, mo, d, h, m, s) of a duration.
pub(crate) fn duration_round(d: i64) -> String {
    let u = d.unsigned_abs();
    const SECOND: u64 = 1_000_000_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const MONTH: u64 = 30 * DAY;
    const YEAR: u64 = 365 * DAY;
    for (unit, suffix) in [
        (YEAR, "y"),
        (MONTH, "mo"),
        (DAY, "d"),
        (HOUR, "h"),
        (MINUTE, "m"),
        (SECOND, "s"),
    ] {
        if u > unit {
            return format!("{}{suffix}", u / unit);
        }
    }
    "0s".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{call, call_err, render};

    fn utc_time(unix: i64) -> Value {
        GoTime::value(Time::from_unix(unix, 0).utc())
    }

    #[test]
    fn dates_format_in_zones() {
        let t = utc_time(1_234_567_890);
        assert_eq!(
            render(
                "dateInZone",
                &["2006-01-02 15:04".into(), t.clone(), "UTC".into()]
            ),
            "2009-02-13 23:31"
        );
        assert_eq!(
            render(
                "date_in_zone",
                &["15:04 MST".into(), t.clone(), "Asia/Tokyo".into()]
            ),
            "08:31 JST"
        );
        assert_eq!(
            render(
                "dateInZone",
                &["15:04".into(), Value::Int64(0), "Nowhere/Land".into()]
            ),
            "00:00"
        );
        assert_eq!(
            render("htmlDateInZone", &[Value::Int(86_400), "UTC".into()]),
            "1970-01-02"
        );
        assert_eq!(render("unixEpoch", std::slice::from_ref(&t)), "1234567890");
        assert_eq!(
            render("toString", std::slice::from_ref(&t)),
            "2009-02-13 23:31:30 +0000 UTC"
        );
    }

    #[test]
    fn date_modify_and_parse() {
        let t = utc_time(0);
        let later = call("dateModify", &["1.5h".into(), t.clone()]);
        assert_eq!(later.to_string(), "1970-01-01 01:30:00 +0000 UTC");
        assert_eq!(
            call("dateModify", &["bogus".into(), t.clone()]).to_string(),
            t.to_string()
        );
        assert_eq!(
            call_err("mustDateModify", &["bogus".into(), t.clone()]),
            "time: invalid duration \"bogus\""
        );
        assert_eq!(
            call_err("dateModify", &["1h".into(), "2020".into()]),
            "wrong type for value; expected time.Time; got string"
        );
        let d = call("toDate", &["2006-01-02".into(), "2017-12-31".into()]);
        assert_eq!(
            render("date", &["2006-01-02".into(), d.clone()]),
            "2017-12-31"
        );
        assert_eq!(
            call("toDate", &["2006-01-02".into(), "x".into()]).to_string(),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        assert_eq!(
            call_err("mustToDate", &["2006-01-02".into(), "x".into()]),
            "parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\""
        );
        let d = GoTime::from_value(&d).unwrap();
        assert_eq!(GoTime::value(d).type_name(), "time.Time");
    }

    #[test]
    fn durations() {
        assert_eq!(render("duration", &["95".into()]), "1m35s");
        assert_eq!(render("duration", &[Value::Int64(3600)]), "1h0m0s");
        assert_eq!(render("duration", &[Value::Int(3600)]), "0s");
        assert_eq!(render("durationRound", &["2h10m".into()]), "2h");
        assert_eq!(render("durationRound", &["-400h".into()]), "16d");
        assert_eq!(
            render(
                "durationRound",
                &[Value::Int64(2 * 365 * 24 * 3_600_000_000_000 + 1)]
            ),
            "2y"
        );
        assert_eq!(render("durationRound", &["1s".into()]), "0s");
        let now = Time::now();
        let hour_ago = GoTime::value(Time::from_unix(now.unix - 3600, now.nanos));
        assert_eq!(render("ago", &[hour_ago]), "1h0m0s");
        let now = call("now", &[]);
        assert_eq!(now.type_name(), "time.Time");
        // `now` is the system clock in the Local zone.
        let system = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let t = GoTime::from_value(&now).unwrap();
        assert!((t.unix - system).abs() <= 2, "{} vs {system}", t.unix);
        assert_eq!(t.location, "Local");
        assert_eq!(round_to_second(1_500_000_000), 2_000_000_000);
        assert_eq!(round_to_second(-1_500_000_000), -2_000_000_000);
    }
}
