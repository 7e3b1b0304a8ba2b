//! Go's `time` package as templates see it: instants in a named zone, reference layouts
//! (`2006-01-02 15:04:05`), `Time.String()`, and `time.Duration`'s text form and parser.
//!
//! The layout language is Go's own (not strftime): a layout is text in which the parts of the
//! reference time `Mon Jan 2 15:04:05 MST 2006` stand for the same parts of the formatted time.
//! Zones come from the system's tz database through `jiff`, as Go's `time.LoadLocation` reads
//! the same files; `Local` is the process's zone.

use std::fmt::Write as _;

use jiff::tz::TimeZone;

/// Nanoseconds in one second.
const NANOS: i64 = 1_000_000_000;

/// An instant with the zone it is shown in, like Go's `time.Time` without the monotonic clock.
#[derive(Clone, Debug)]
pub struct Time {
    /// Seconds since the Unix epoch.
    pub unix: i64,
    /// Nanoseconds within the second, 0..1e9.
    pub nanos: u32,
    /// The zone's name as Go reports `Location.String()` (`Local`, `UTC`, `Europe/Paris`).
    pub location: String,
    tz: TimeZone,
    /// Go's monotonic clock reading (nanoseconds since the process's clock origin), which only
    /// `time.Now()` carries and `String()` prints as ` m=+0.001234567`.
    mono: Option<i64>,
    /// The name of a zone Go made up while parsing (`PST` in a location that has no PST, or
    /// `GMT+3`): a fixed offset printed under that name.
    fixed_name: Option<String>,
}

/// The origin of the monotonic readings: the first use of this module in the process (Go's is
/// the runtime's start, moments earlier).
static MONO_ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Starts the monotonic clock (called when the function map is built).
pub fn start_clock() {
    MONO_ORIGIN.get_or_init(std::time::Instant::now);
}

impl PartialEq for Time {
    fn eq(&self, other: &Self) -> bool {
        self.unix == other.unix && self.nanos == other.nanos && self.location == other.location
    }
}

/// Why a zone, layout or duration could not be used. The texts are Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// A zone name the tz database does not have.
    #[error("unknown time zone {0}")]
    UnknownZone(String),
    /// A value that does not follow the layout.
    #[error("parsing time {value} as {layout}: cannot parse {rest} as {elem}")]
    Parse {
        /// The text parsed (Go-quoted).
        value: String,
        /// The layout (Go-quoted).
        layout: String,
        /// What was left of the value where parsing stopped (Go-quoted).
        rest: String,
        /// The layout element expected there (Go-quoted).
        elem: String,
    },
    /// A field out of its range (`month out of range`).
    #[error("parsing time {value}: {msg}")]
    Range {
        /// The text parsed (Go-quoted).
        value: String,
        /// Go's description of the fault.
        msg: String,
    },
    /// Text left after the layout ended.
    #[error("parsing time {value}: extra text: {extra}")]
    Extra {
        /// The text parsed (Go-quoted).
        value: String,
        /// What was left (Go-quoted).
        extra: String,
    },
    /// A duration that is not Go's syntax.
    #[error("time: invalid duration {0}")]
    InvalidDuration(String),
    /// A duration number without its unit.
    #[error("time: missing unit in duration {0}")]
    MissingUnit(String),
    /// A duration unit Go does not know.
    #[error("time: unknown unit {unit} in duration {text}")]
    UnknownUnit {
        /// The unit (Go-quoted).
        unit: String,
        /// The whole duration text (Go-quoted).
        text: String,
    },
}

/// Go's `%q` of a string for the error texts above (ASCII-printable input round-trips).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Approximates Go's `strconv.IsPrint`: everything but controls, unassigned surrogates and the
/// format/separator characters Go escapes.
fn is_go_printable(c: char) -> bool {
    !(c.is_control()
        || matches!(c as u32, 0x00ad | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb))
}

/// Looks a zone up the way `time.LoadLocation` does: `""` and `UTC` are UTC, `Local` is the
/// process's zone, anything else a tz database name.
pub fn load_location(name: &str) -> Result<(String, TimeZone), TimeError> {
    match name {
        "" | "UTC" => Ok(("UTC".to_string(), TimeZone::UTC)),
        "Local" => Ok(("Local".to_string(), local_zone())),
        _ => TimeZone::get(name)
            .map(|tz| (name.to_string(), tz))
            .map_err(|_| TimeError::UnknownZone(name.to_string())),
    }
}

/// The process's zone (Go's `time.Local`).
pub fn local_zone() -> TimeZone {
    // Go reads $TZ first, then /etc/localtime, and falls back to UTC; jiff does the same.
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

impl Time {
    /// `time.Unix(sec, nsec)` in the `Local` zone.
    pub fn from_unix(unix: i64, nanos: u32) -> Self {
        Time {
            unix,
            nanos,
            location: "Local".to_string(),
            tz: local_zone(),
            mono: None,
            fixed_name: None,
        }
    }

    /// Rebuilds a time from its parts: a named location, or a fixed offset when `location` is
    /// empty (what parsing a numeric offset gives).
    pub fn from_parts(unix: i64, nanos: u32, location: &str, offset: i32) -> Self {
        let tz = if location.is_empty() {
            TimeZone::fixed(jiff::tz::Offset::from_seconds(offset).unwrap_or(jiff::tz::Offset::UTC))
        } else {
            load_location(location).map_or(TimeZone::UTC, |(_, tz)| tz)
        };
        Time {
            unix,
            nanos,
            location: location.to_string(),
            tz,
            mono: None,
            fixed_name: None,
        }
    }

    /// The zone's offset from UTC at this instant, in seconds.
    pub fn offset_seconds(&self) -> i32 {
        self.offset().0
    }

    /// `t.UTC()`.
    pub fn utc(&self) -> Self {
        self.in_zone("UTC".into(), TimeZone::UTC)
    }

    /// `t.Local()`.
    pub fn local(&self) -> Self {
        self.in_zone("Local".into(), local_zone())
    }

    /// `time.Now()` in the `Local` zone.
    pub fn now() -> Self {
        let origin = *MONO_ORIGIN.get_or_init(std::time::Instant::now);
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut t = Self::from_unix(since.as_secs() as i64, since.subsec_nanos());
        t.mono = Some(origin.elapsed().as_nanos().min(i64::MAX as u128) as i64);
        t
    }

    /// The zero `time.Time` (January 1, year 1, 00:00:00 UTC), what a failed `toDate` returns.
    pub fn zero() -> Self {
        Time {
            unix: -62_135_596_800,
            nanos: 0,
            location: "UTC".to_string(),
            tz: TimeZone::UTC,
            mono: None,
            fixed_name: None,
        }
    }

    /// `t.In(loc)`: the same instant shown in another zone.
    pub fn in_zone(&self, location: String, tz: TimeZone) -> Self {
        Time {
            unix: self.unix,
            nanos: self.nanos,
            location,
            tz,
            mono: None,
            fixed_name: None,
        }
    }

    /// `t.In(time.FixedZone(name, offset))`: the same instant in a zone of a fixed offset
    /// (seconds east of UTC) printed under `name` (BurntSushi's TOML decoder puts local
    /// date-times in such zones, named `datetime-local`, `date-local` and `time-local`).
    pub fn in_fixed_zone(&self, name: &str, offset: i32) -> Self {
        let tz = TimeZone::fixed(
            jiff::tz::Offset::from_seconds(offset).unwrap_or(jiff::tz::Offset::UTC),
        );
        let mut t = self.in_zone(name.to_string(), tz);
        t.fixed_name = Some(name.to_string());
        t
    }

    /// `t.Add(d)` for a duration in nanoseconds.
    pub fn add(&self, d: i64) -> Self {
        let total = self.nanos as i64 + d.rem_euclid(NANOS);
        let mut t = self.clone();
        // Go's Add moves the monotonic reading along with the wall clock.
        t.mono = self.mono.map(|m| m.saturating_add(d));
        t.unix = self.unix + d.div_euclid(NANOS) + total / NANOS;
        t.nanos = (total % NANOS) as u32;
        t
    }

    /// `time.Since(t)` in nanoseconds (saturating like Go's `Sub`).
    pub fn since(&self) -> i64 {
        let now = Time::now();
        let secs = now.unix as i128 - self.unix as i128;
        let ns = secs * NANOS as i128 + now.nanos as i128 - self.nanos as i128;
        ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The offset east of UTC in seconds and the zone abbreviation at this instant.
    fn offset(&self) -> (i32, String) {
        let Ok(ts) = jiff::Timestamp::new(self.unix, 0) else {
            return (0, "UTC".to_string());
        };
        let info = self.tz.to_offset_info(ts);
        // A fixed zone from a parsed numeric offset has no name in Go; MST then prints -0700.
        let name = if let Some(n) = &self.fixed_name {
            n.clone()
        } else if self.location.is_empty() {
            String::new()
        } else {
            info.abbreviation().to_string()
        };
        (info.offset().seconds(), name)
    }

    fn civil(&self) -> Civil {
        let (offset, abbrev) = self.offset();
        Civil::from_unix(self.unix + offset as i64, self.nanos, offset, abbrev)
    }

    /// `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        self.civil().format(layout)
    }

    /// Go's `t.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let m = m.unsigned_abs();
            s.push_str(&format!(
                " m={sign}{}.{:09}",
                m / 1_000_000_000,
                m % 1_000_000_000
            ));
        }
        s
    }
}

/// The broken-down parts of an instant in a zone.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    weekday: u32,
    yday: u32,
    offset: i32,
    abbrev: String,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl Civil {
    fn from_unix(local: i64, nanos: u32, offset: i32, abbrev: String) -> Self {
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        let yday = (days - days_from_civil(year, 1, 1)) as u32 + 1;
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            nanos,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday,
            offset,
            abbrev,
        }
    }

    fn format(&self, layout: &str) -> String {
        let mut out = String::with_capacity(layout.len() + 10);
        let mut rest = layout;
        while !rest.is_empty() {
            let (prefix, chunk, suffix) = next_chunk(rest);
            out.push_str(prefix);
            match chunk {
                Some(c) => self.write_chunk(&mut out, c),
                None => break,
            }
            rest = suffix;
        }
        out
    }

    fn write_chunk(&self, out: &mut String, chunk: Chunk) {
        let hour12 = match self.hour % 12 {
            0 => 12,
            h => h,
        };
        match chunk {
            Chunk::Year => {
                let _ = write!(out, "{:02}", self.year.rem_euclid(100));
            }
            Chunk::LongYear => write_year(out, self.year),
            Chunk::Month => out.push_str(&MONTHS[self.month as usize - 1][..3]),
            Chunk::LongMonth => out.push_str(MONTHS[self.month as usize - 1]),
            Chunk::NumMonth => {
                let _ = write!(out, "{}", self.month);
            }
            Chunk::ZeroMonth => {
                let _ = write!(out, "{:02}", self.month);
            }
            Chunk::WeekDay => out.push_str(&DAYS[self.weekday as usize][..3]),
            Chunk::LongWeekDay => out.push_str(DAYS[self.weekday as usize]),
            Chunk::Day => {
                let _ = write!(out, "{}", self.day);
            }
            Chunk::UnderDay => {
                let _ = write!(out, "{:>2}", self.day);
            }
            Chunk::ZeroDay => {
                let _ = write!(out, "{:02}", self.day);
            }
            Chunk::UnderYearDay => {
                let _ = write!(out, "{:>3}", self.yday);
            }
            Chunk::ZeroYearDay => {
                let _ = write!(out, "{:03}", self.yday);
            }
            Chunk::Hour => {
                let _ = write!(out, "{:02}", self.hour);
            }
            Chunk::Hour12 => {
                let _ = write!(out, "{hour12}");
            }
            Chunk::ZeroHour12 => {
                let _ = write!(out, "{hour12:02}");
            }
            Chunk::Minute => {
                let _ = write!(out, "{}", self.minute);
            }
            Chunk::ZeroMinute => {
                let _ = write!(out, "{:02}", self.minute);
            }
            Chunk::Second => {
                let _ = write!(out, "{}", self.second);
            }
            Chunk::ZeroSecond => {
                let _ = write!(out, "{:02}", self.second);
            }
            Chunk::Pm => out.push_str(if self.hour >= 12 { "PM" } else { "AM" }),
            Chunk::LowerPm => out.push_str(if self.hour >= 12 { "pm" } else { "am" }),
            Chunk::Tz => {
                if self.abbrev.is_empty() {
                    write_offset(out, self.offset, false, false, false);
                } else {
                    out.push_str(&self.abbrev);
                }
            }
            Chunk::NumTz {
                iso,
                colon,
                seconds,
                short,
            } => {
                if iso && self.offset == 0 {
                    out.push('Z');
                } else if short {
                    let sign = if self.offset < 0 { '-' } else { '+' };
                    let _ = write!(out, "{sign}{:02}", self.offset.abs() / 3600);
                } else {
                    write_offset(out, self.offset, colon, seconds, true);
                }
            }
            Chunk::Frac { sep, digits, trim } => {
                let text = format!("{:09}", self.nanos);
                let mut text = &text[..digits.min(9)];
                if trim {
                    text = text.trim_end_matches('0');
                    if text.is_empty() {
                        return;
                    }
                }
                out.push(sep);
                out.push_str(text);
            }
        }
    }
}

fn write_year(out: &mut String, year: i64) {
    if year < 0 {
        let _ = write!(out, "-{:04}", -year);
    } else {
        let _ = write!(out, "{year:04}");
    }
}

fn write_offset(out: &mut String, offset: i32, colon: bool, seconds: bool, _numeric: bool) {
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    let _ = write!(out, "{sign}{h:02}");
    if colon {
        out.push(':');
    }
    let _ = write!(out, "{m:02}");
    if seconds {
        if colon {
            out.push(':');
        }
        let _ = write!(out, "{s:02}");
    }
}

/// One element of a layout (Go's `std*` constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    Year,
    LongYear,
    Month,
    LongMonth,
    NumMonth,
    ZeroMonth,
    WeekDay,
    LongWeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    Pm,
    LowerPm,
    Tz,
    NumTz {
        iso: bool,
        colon: bool,
        seconds: bool,
        short: bool,
    },
    Frac {
        sep: char,
        digits: usize,
        trim: bool,
    },
}

/// Splits a layout at its first element: the literal text before it, the element, the rest.
fn next_chunk(layout: &str) -> (&str, Option<Chunk>, &str) {
    let b = layout.as_bytes();
    let at = |i: usize, s: &str| layout[i..].starts_with(s);
    let lower_after = |i: usize| b.get(i).is_some_and(u8::is_ascii_lowercase);
    for i in 0..b.len() {
        let found: Option<(Chunk, usize)> = match b[i] {
            b'J' if at(i, "January") => Some((Chunk::LongMonth, 7)),
            b'J' if at(i, "Jan") && !lower_after(i + 3) => Some((Chunk::Month, 3)),
            b'M' if at(i, "Monday") => Some((Chunk::LongWeekDay, 6)),
            b'M' if at(i, "Mon") && !lower_after(i + 3) => Some((Chunk::WeekDay, 3)),
            b'M' if at(i, "MST") => Some((Chunk::Tz, 3)),
            b'0' if b.get(i + 1).is_some_and(|c| (b'1'..=b'6').contains(c)) => {
                let c = [
                    Chunk::ZeroMonth,
                    Chunk::ZeroDay,
                    Chunk::ZeroHour12,
                    Chunk::ZeroMinute,
                    Chunk::ZeroSecond,
                    Chunk::Year,
                ][(b[i + 1] - b'1') as usize];
                Some((c, 2))
            }
            b'0' if at(i, "002") => Some((Chunk::ZeroYearDay, 3)),
            b'1' if at(i, "15") => Some((Chunk::Hour, 2)),
            b'1' => Some((Chunk::NumMonth, 1)),
            b'2' if at(i, "2006") => Some((Chunk::LongYear, 4)),
            b'2' => Some((Chunk::Day, 1)),
            b'_' if at(i, "_2") => {
                if at(i + 1, "2006") {
                    // "_2006" is a literal underscore followed by the year.
                    return (&layout[..i + 1], Some(Chunk::LongYear), &layout[i + 5..]);
                }
                Some((Chunk::UnderDay, 2))
            }
            b'_' if at(i, "__2") => Some((Chunk::UnderYearDay, 3)),
            b'3' => Some((Chunk::Hour12, 1)),
            b'4' => Some((Chunk::Minute, 1)),
            b'5' => Some((Chunk::Second, 1)),
            b'P' if at(i, "PM") => Some((Chunk::Pm, 2)),
            b'p' if at(i, "pm") => Some((Chunk::LowerPm, 2)),
            b'-' | b'Z' => {
                let iso = b[i] == b'Z';
                let forms: [(&str, bool, bool, bool); 5] = [
                    ("070000", false, true, false),
                    ("07:00:00", true, true, false),
                    ("0700", false, false, false),
                    ("07:00", true, false, false),
                    ("07", false, false, true),
                ];
                forms.iter().find(|f| at(i + 1, f.0)).map(|f| {
                    (
                        Chunk::NumTz {
                            iso,
                            colon: f.1,
                            seconds: f.2,
                            short: f.3,
                        },
                        f.0.len() + 1,
                    )
                })
            }
            b'.' | b',' if matches!(b.get(i + 1), Some(b'0' | b'9')) => {
                let digit = b[i + 1];
                let mut j = i + 1;
                while b.get(j) == Some(&digit) {
                    j += 1;
                }
                if b.get(j).is_some_and(u8::is_ascii_digit) {
                    None
                } else {
                    Some((
                        Chunk::Frac {
                            sep: b[i] as char,
                            digits: j - i - 1,
                            trim: digit == b'9',
                        },
                        j - i,
                    ))
                }
            }
            _ => None,
        };
        if let Some((chunk, len)) = found {
            return (&layout[..i], Some(chunk), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

/// `time.ParseInLocation(layout, value, loc)` for the elements charts use. A value without a
/// zone is read in `loc`; a numeric offset gives a fixed zone, as in Go.
pub fn parse_in_location(
    layout: &str,
    value: &str,
    location: &str,
    tz: &TimeZone,
) -> Result<Time, TimeError> {
    let err = |rest: &str, elem: &str| TimeError::Parse {
        value: go_quote(value),
        layout: go_quote(layout),
        rest: go_quote(rest),
        elem: go_quote(elem),
    };
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut nanos) =
        // Go: elements missing from the layout are zero, or one where zero is impossible, so a
        // layout without a year parses into year 0.
        (0i64, 1u32, 1u32, 0u32, 0u32, 0u32, 0u32);
    let mut yday: Option<u32> = None;
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut zone_abbrev: Option<String> = None;
    let mut utc_z = false;
    let mut rest_layout = layout;
    let mut v = value;
    loop {
        let (prefix, chunk, suffix) = next_chunk(rest_layout);
        let elem_text = &rest_layout[prefix.len()..rest_layout.len() - suffix.len()];
        let Some(stripped) = skip_literal(v, prefix) else {
            return Err(err(v, prefix));
        };
        v = stripped;
        let Some(chunk) = chunk else {
            if !v.is_empty() {
                return Err(TimeError::Extra {
                    value: go_quote(value),
                    extra: go_quote(v),
                });
            }
            break;
        };
        let hold = v;
        let bad = || err(hold, elem_text);
        let range = |what: &str| TimeError::Range {
            value: go_quote(value),
            msg: format!("{what} out of range"),
        };
        match chunk {
            Chunk::Year => {
                let (n, r) = fixed_digits(v, 2).ok_or_else(bad)?;
                year = if n >= 69 { 1900 + n } else { 2000 + n } as i64;
                v = r;
            }
            Chunk::LongYear => {
                let (n, r) = fixed_digits(v, 4).ok_or_else(bad)?;
                year = n as i64;
                v = r;
            }
            Chunk::Month | Chunk::LongMonth => {
                let names: Vec<&str> = if chunk == Chunk::Month {
                    MONTHS.iter().map(|m| &m[..3]).collect()
                } else {
                    MONTHS.to_vec()
                };
                let (i, r) = lookup_name(v, &names).ok_or_else(bad)?;
                month = i as u32 + 1;
                v = r;
            }
            Chunk::NumMonth | Chunk::ZeroMonth => {
                let (n, r) = number(v, chunk == Chunk::ZeroMonth).ok_or_else(bad)?;
                if !(1..=12).contains(&n) {
                    return Err(range("month"));
                }
                month = n;
                v = r;
            }
            Chunk::WeekDay | Chunk::LongWeekDay => {
                let names: Vec<&str> = if chunk == Chunk::WeekDay {
                    DAYS.iter().map(|m| &m[..3]).collect()
                } else {
                    DAYS.to_vec()
                };
                let (_, r) = lookup_name(v, &names).ok_or_else(bad)?;
                v = r;
            }
            Chunk::Day | Chunk::UnderDay | Chunk::ZeroDay => {
                if chunk == Chunk::UnderDay && v.starts_with(' ') {
                    v = &v[1..];
                }
                let (n, r) = number(v, chunk == Chunk::ZeroDay).ok_or_else(bad)?;
                day = n;
                v = r;
            }
            Chunk::UnderYearDay | Chunk::ZeroYearDay => {
                let t = v.trim_start_matches(' ');
                let (n, r) = fixed_digits(t, 3).ok_or_else(bad)?;
                yday = Some(n);
                v = r;
            }
            Chunk::Hour => {
                let (n, r) = number(v, false).ok_or_else(bad)?;
                if n >= 24 {
                    return Err(range("hour"));
                }
                hour = n;
                v = r;
            }
            Chunk::Hour12 | Chunk::ZeroHour12 => {
                let (n, r) = number(v, chunk == Chunk::ZeroHour12).ok_or_else(bad)?;
                if n > 12 {
                    return Err(range("hour"));
                }
                hour = n;
                v = r;
            }
            Chunk::Minute | Chunk::ZeroMinute => {
                let (n, r) = number(v, chunk == Chunk::ZeroMinute).ok_or_else(bad)?;
                if n >= 60 {
                    return Err(range("minute"));
                }
                minute = n;
                v = r;
            }
            Chunk::Second | Chunk::ZeroSecond => {
                let (n, r) = number(v, chunk == Chunk::ZeroSecond).ok_or_else(bad)?;
                if n >= 60 {
                    return Err(range("second"));
                }
                second = n;
                v = r;
                // Go accepts a fractional second after the seconds even when the layout has none.
                if (v.starts_with('.') || v.starts_with(','))
                    && !matches!(next_chunk(suffix).1, Some(Chunk::Frac { .. }))
                    && v[1..].starts_with(|c: char| c.is_ascii_digit())
                {
                    let digits = v[1..].bytes().take_while(u8::is_ascii_digit).count();
                    nanos = frac_nanos(&v[1..1 + digits]);
                    v = &v[1 + digits..];
                }
            }
            Chunk::Pm | Chunk::LowerPm => {
                let t = v.get(..2).ok_or_else(bad)?;
                pm = match t {
                    "PM" | "pm" if chunk == Chunk::Pm || t == "pm" => Some(true),
                    "AM" | "am" if chunk == Chunk::Pm || t == "am" => Some(false),
                    _ => return Err(bad()),
                };
                v = &v[2..];
            }
            Chunk::Tz => {
                if v.starts_with("UTC") {
                    zone_abbrev = Some("UTC".into());
                    v = &v[3..];
                } else {
                    let n = time_zone_len(v).ok_or_else(bad)?;
                    zone_abbrev = Some(v[..n].to_string());
                    v = &v[n..];
                }
            }
            Chunk::NumTz {
                iso,
                colon,
                seconds,
                short,
            } => {
                if iso && v.starts_with('Z') {
                    utc_z = true;
                    v = &v[1..];
                } else {
                    let (o, r) = parse_offset(v, colon, seconds, short).ok_or_else(bad)?;
                    offset = Some(o);
                    v = r;
                }
            }
            Chunk::Frac { sep, digits, trim } => {
                if trim {
                    if v.starts_with(['.', ',']) {
                        let n = v[1..].bytes().take_while(u8::is_ascii_digit).count();
                        nanos = frac_nanos(&v[1..1 + n]);
                        v = &v[1 + n..];
                    }
                } else {
                    let t = v.strip_prefix(sep).ok_or_else(bad)?;
                    let ds = t.get(..digits).ok_or_else(bad)?;
                    if !ds.bytes().all(|c| c.is_ascii_digit()) {
                        return Err(bad());
                    }
                    nanos = frac_nanos(ds);
                    v = &t[digits..];
                }
            }
        }
        rest_layout = suffix;
    }
    if let Some(pm) = pm {
        if pm && hour < 12 {
            hour += 12;
        } else if !pm && hour == 12 {
            hour = 0;
        }
    }
    if let Some(yd) = yday {
        let max = if is_leap(year) { 366 } else { 365 };
        if yd < 1 || yd > max {
            return Err(TimeError::Range {
                value: go_quote(value),
                msg: "day-of-year out of range".into(),
            });
        }
        let (_, m, d) = civil_from_days(days_from_civil(year, 1, 1) + yd as i64 - 1);
        month = m;
        day = d;
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(TimeError::Range {
            value: go_quote(value),
            msg: "day out of range".into(),
        });
    }
    let local = days_from_civil(year, month, day) * 86_400
        + hour as i64 * 3600
        + minute as i64 * 60
        + second as i64;
    // Go's order: a `Z` or `UTC` zone is UTC; then a numeric offset, kept as the location when
    // the location has that offset (and name) then, else a fixed zone (named when the value
    // named it); then a zone name alone.
    if utc_z || zone_abbrev.as_deref() == Some("UTC") {
        return Ok(named_zone(local, nanos, "UTC", location, tz));
    }
    if let Some(off) = offset {
        let t = Time {
            unix: local - off as i64,
            nanos,
            location: String::new(),
            tz: TimeZone::UTC,
            mono: None,
            fixed_name: None,
        };
        let mut inloc = t.in_zone(location.to_string(), tz.clone());
        let (loc_off, loc_name) = inloc.offset();
        if loc_off == off && zone_abbrev.as_ref().is_none_or(|n| *n == loc_name) {
            return Ok(inloc);
        }
        inloc.location = zone_abbrev.clone().unwrap_or_default();
        inloc.fixed_name = zone_abbrev;
        inloc.tz =
            TimeZone::fixed(jiff::tz::Offset::from_seconds(off).unwrap_or(jiff::tz::Offset::UTC));
        return Ok(inloc);
    }
    if let Some(name) = zone_abbrev {
        return Ok(named_zone(local, nanos, &name, location, tz));
    }
    // A wall clock in `loc`: pick the offset in force at that local time.
    let guess = Time {
        unix: local,
        nanos,
        location: location.to_string(),
        tz: tz.clone(),
        mono: None,
        fixed_name: None,
    };
    let off = guess.offset().0 as i64;
    let mut t = guess.clone();
    t.unix = local - off;
    let off2 = t.offset().0 as i64;
    if off2 != off {
        t.unix = local - off2;
    }
    Ok(t)
}

/// Go's rule for a zone name in a parsed value (`parseTimeZone`): `ChST`/`MeST`, `GMT` with an
/// optional hour offset, a signed offset, or three to five capitals (four or five ending in `T`,
/// or `WITA`). Returns its length.
fn time_zone_len(v: &str) -> Option<usize> {
    let b = v.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if v.starts_with("ChST") || v.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = v.strip_prefix("GMT") {
        return Some(3 + signed_offset_len(rest));
    }
    if b[0] == b'+' || b[0] == b'-' {
        let n = signed_offset_len(v);
        return (n > 0).then_some(n);
    }
    let upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        3 => Some(3),
        4 if b[3] == b'T' || v.starts_with("WITA") => Some(4),
        5 if b[4] == b'T' => Some(5),
        _ => None,
    }
}

/// Go's `parseSignedOffset`: a sign and at most 23 hours, or nothing.
fn signed_offset_len(v: &str) -> usize {
    let b = v.as_bytes();
    if !matches!(b.first(), Some(b'+' | b'-')) {
        return 0;
    }
    let digits = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    match v.get(1..1 + digits).and_then(|d| d.parse::<u32>().ok()) {
        Some(h) if digits > 0 && h <= 23 => 1 + digits,
        _ => 0,
    }
}

/// A wall clock with a zone name: `UTC` is UTC; a name the location uses at that time reads in
/// the location; any other name is Go's made-up zone of that name, at offset 0 (or `GMT±H`'s),
/// and the wall clock is read as UTC (so `10:00 GMT+3` prints as `13:00 +0300 GMT+3`).
fn named_zone(wall: i64, nanos: u32, name: &str, location: &str, tz: &TimeZone) -> Time {
    let utc = Time {
        unix: wall,
        nanos,
        location: "UTC".into(),
        tz: TimeZone::UTC,
        mono: None,
        fixed_name: None,
    };
    if name == "UTC" {
        return utc;
    }
    let in_loc = utc.in_zone(location.to_string(), tz.clone());
    let (off, _) = in_loc.offset();
    let candidate = Time {
        unix: wall - off as i64,
        ..in_loc.clone()
    };
    if candidate.offset().1 == name {
        return candidate;
    }
    let off = name
        .strip_prefix("GMT")
        .filter(|r| !r.is_empty())
        .and_then(|r| r.parse::<i32>().ok())
        .map_or(0, |h| h * 3600);
    Time {
        unix: wall,
        nanos,
        location: name.to_string(),
        tz: TimeZone::fixed(jiff::tz::Offset::from_seconds(off).unwrap_or(jiff::tz::Offset::UTC)),
        mono: None,
        fixed_name: Some(name.to_string()),
    }
}

fn skip_literal<'a>(value: &'a str, literal: &str) -> Option<&'a str> {
    // Go lets a space in the layout match any run of spaces in the value.
    let mut v = value;
    let mut l = literal;
    while let Some(c) = l.chars().next() {
        if c == ' ' {
            l = l.trim_start_matches(' ');
            if !v.starts_with(' ') {
                return None;
            }
            v = v.trim_start_matches(' ');
            continue;
        }
        v = v.strip_prefix(c)?;
        l = &l[c.len_utf8()..];
    }
    Some(v)
}

fn fixed_digits(v: &str, n: usize) -> Option<(u32, &str)> {
    let d = v.get(..n)?;
    if !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((d.parse().ok()?, &v[n..]))
}

/// One or two digits (exactly two when `fixed`), as Go's `getnum`.
fn number(v: &str, fixed: bool) -> Option<(u32, &str)> {
    let b = v.as_bytes();
    if !b.first()?.is_ascii_digit() {
        return None;
    }
    if !b.get(1).is_some_and(u8::is_ascii_digit) {
        if fixed {
            return None;
        }
        return Some(((b[0] - b'0') as u32, &v[1..]));
    }
    Some((((b[0] - b'0') * 10 + b[1] - b'0') as u32, &v[2..]))
}

fn lookup_name<'a>(v: &'a str, names: &[&str]) -> Option<(usize, &'a str)> {
    names.iter().enumerate().find_map(|(i, n)| {
        let head = v.get(..n.len())?;
        head.eq_ignore_ascii_case(n).then(|| (i, &v[n.len()..]))
    })
}

fn frac_nanos(digits: &str) -> u32 {
    let mut s: String = digits.chars().take(9).collect();
    while s.len() < 9 {
        s.push('0');
    }
    s.parse().unwrap_or(0)
}

fn parse_offset(v: &str, colon: bool, seconds: bool, short: bool) -> Option<(i32, &str)> {
    let sign = match v.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let mut r = &v[1..];
    let (h, rr) = fixed_digits(r, 2)?;
    r = rr;
    let mut m = 0;
    let mut s = 0;
    if !short {
        if colon {
            r = r.strip_prefix(':')?;
        }
        let (mm, rr) = fixed_digits(r, 2)?;
        m = mm;
        r = rr;
        if seconds {
            if colon {
                r = r.strip_prefix(':')?;
            }
            let (ss, rr) = fixed_digits(r, 2)?;
            s = ss;
            r = rr;
        }
    }
    Some((sign * (h * 3600 + m * 60 + s) as i32, r))
}

/// Go's `time.Duration.String()` of a duration in nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn duration_string(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < NANOS as u64 {
        if u == 0 {
            return "0s".into();
        }
        let (prec, unit) = if u < 1_000 {
            (0, "ns")
        } else if u < 1_000_000 {
            (3, "µs")
        } else {
            (6, "ms")
        };
        out.push_str(&frac_text(u, prec));
        out.push_str(unit);
    } else {
        let secs = frac_text(u, 9);
        u /= NANOS as u64;
        let (sec_whole, frac) = match secs.find('.') {
            Some(p) => (u % 60, secs[p..].to_string()),
            None => (u % 60, String::new()),
        };
        let mut s = format!("{sec_whole}{frac}s");
        u /= 60;
        if u > 0 {
            s = format!("{}m{s}", u % 60);
            u /= 60;
            if u > 0 {
                s = format!("{u}h{s}");
            }
        }
        out = s;
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^prec` with the fraction's trailing zeros (and a bare point) removed.
fn frac_text(v: u64, prec: u32) -> String {
    let p = 10u64.pow(prec);
    let (whole, frac) = (v / p, v % p);
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:0width$}", width = prec as usize);
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: `300ms`, `-1.5h`, `2h45m`; units `ns`, `us`/`µs`/`μs`, `ms`, `s`,
/// `m`, `h`. Returns nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, TimeError> {
    let invalid = || TimeError::InvalidDuration(go_quote(text));
    let mut s = text;
    let mut neg = false;
    if let Some(r) = s.strip_prefix('-') {
        neg = true;
        s = r;
    } else if let Some(r) = s.strip_prefix('+') {
        s = r;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if let Some(r) = s.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &r[..n];
            s = &r[n..];
            if int_part.is_empty() && frac_part.is_empty() {
                return Err(invalid());
            }
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        if unit.is_empty() {
            return Err(TimeError::MissingUnit(go_quote(text)));
        }
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(TimeError::UnknownUnit {
                    unit: go_quote(unit),
                    text: go_quote(text),
                });
            }
        };
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            // Go accumulates the fraction as a float of the unit, truncating toward zero.
            let f: f64 = format!("0.{frac_part}").parse().map_err(|_| invalid())?;
            value += (f * scale as f64) as u128;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i64::MAX as u128 + u128::from(neg) {
            return Err(invalid());
        }
    }
    Ok(if neg {
        (total as i128).wrapping_neg() as i64
    } else {
        total as i64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(unix: i64, nanos: u32) -> Time {
        Time::from_unix(unix, nanos).in_zone("UTC".into(), TimeZone::UTC)
    }

    #[test]
    fn formats_the_reference_layouts() {
        // 2009-02-13 23:31:30 UTC, a Friday, day 44 of the year.
        let t = utc(1_234_567_890, 123_456_789);
        assert_eq!(t.format("2006-01-02"), "2009-02-13");
        assert_eq!(
            t.format("2006-01-02T15:04:05Z07:00"),
            "2009-02-13T23:31:30Z"
        );
        assert_eq!(
            t.format("Mon Jan _2 15:04:05 MST 2006"),
            "Fri Feb 13 23:31:30 UTC 2009"
        );
        assert_eq!(
            t.format("Monday, January 2, 2006 3:04pm"),
            "Friday, February 13, 2009 11:31pm"
        );
        assert_eq!(
            t.format("02/01/06 03:04:05.000 PM -0700"),
            "13/02/09 11:31:30.123 PM +0000"
        );
        assert_eq!(t.format("15:04:05.999999999"), "23:31:30.123456789");
        assert_eq!(t.format("002 __2"), "044  44");
        assert_eq!(t.format("Janet"), "Janet");
        assert_eq!(t.go_string(), "2009-02-13 23:31:30.123456789 +0000 UTC");
        assert_eq!(utc(0, 0).go_string(), "1970-01-01 00:00:00 +0000 UTC");
    }

    #[test]
    fn formats_in_named_zones() {
        let (name, tz) = load_location("America/New_York").unwrap();
        let t = utc(1_234_567_890, 0).in_zone(name, tz);
        assert_eq!(
            t.format("2006-01-02 15:04:05 -07:00 MST"),
            "2009-02-13 18:31:30 -05:00 EST"
        );
        let (name, tz) = load_location("Asia/Kolkata").unwrap();
        let t = utc(0, 0).in_zone(name, tz);
        assert_eq!(t.format("15:04 Z0700 -07"), "05:30 +0530 +05");
        assert!(matches!(
            load_location("Mars/Base"),
            Err(TimeError::UnknownZone(_))
        ));
    }

    #[test]
    fn parses_layouts() {
        let p = |l: &str, v: &str| parse_in_location(l, v, "UTC", &TimeZone::UTC);
        assert_eq!(p("2006-01-02", "2017-12-31").unwrap().unix, 1_514_678_400);
        let t = p("2006-01-02T15:04:05Z07:00", "2009-02-13T18:31:30-05:00").unwrap();
        assert_eq!(t.unix, 1_234_567_890);
        assert_eq!(t.format("15:04 -0700"), "18:31 -0500");
        let t = p("Jan 2 2006 3:04:05.000 PM", "Feb 13 2009 11:31:30.250 PM").unwrap();
        assert_eq!((t.unix, t.nanos), (1_234_567_890, 250_000_000));
        assert_eq!(
            p("2006-01-02", "2017-13-01").unwrap_err().to_string(),
            "parsing time \"2017-13-01\": month out of range"
        );
        assert_eq!(
            p("2006-01-02", "x").unwrap_err().to_string(),
            "parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\""
        );
        assert_eq!(
            p("2006-01-02", "2017-12-31x").unwrap_err().to_string(),
            "parsing time \"2017-12-31x\": extra text: \"x\""
        );
        assert_eq!(
            p("2006-01-02", "2017-02-30").unwrap_err().to_string(),
            "parsing time \"2017-02-30\": day out of range"
        );
    }

    #[test]
    fn durations_print_as_go() {
        assert_eq!(duration_string(0), "0s");
        assert_eq!(duration_string(1), "1ns");
        assert_eq!(duration_string(1_500), "1.5µs");
        assert_eq!(duration_string(1_500_000), "1.5ms");
        assert_eq!(duration_string(NANOS), "1s");
        assert_eq!(duration_string(3_600 * NANOS), "1h0m0s");
        assert_eq!(duration_string(-(90 * NANOS + NANOS / 2)), "-1m30.5s");
        assert_eq!(duration_string(i64::MIN), "-2562047h47m16.854775808s");
    }

    #[test]
    fn durations_parse_as_go() {
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400 * NANOS);
        assert_eq!(parse_duration("-1.5h").unwrap(), -5_400 * NANOS);
        assert_eq!(parse_duration("300ms").unwrap(), 300_000_000);
        assert_eq!(parse_duration("1µs2ns").unwrap(), 1_002);
        assert_eq!(parse_duration("0").unwrap(), 0);
        assert_eq!(
            parse_duration("1").unwrap_err().to_string(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse_duration("1d").unwrap_err().to_string(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(
            parse_duration("").unwrap_err().to_string(),
            "time: invalid duration \"\""
        );
    }
}
