//! Semantic versions and version ranges with Masterminds/semver v3's rules, shared by Flux's
//! `spec.ref.semver` (crates/source), Helm's chart versions, `kubeVersion` and dependency ranges
//! (crates/helm) and Sprig's semver functions.
//!
//! Owns: parsing versions and ranges and matching one against the other. Must not touch: I/O,
//! Git tags or charts (its callers bring the strings).
//!
//! Flux parses ranges with Masterminds/semver v3 and tags with `fluxcd/pkg/version.ParseVersion`,
//! whose rules differ from Cargo's (`1.2.3` alone means `=1.2.3`, `||` is allowed, and a
//! pre-release only matches when its AND group names a pre-release). The `semver` crate follows
//! Cargo, so this crate is its own parser, written from the documented behaviour.

use std::cmp::Ordering;
use std::fmt;

/// A version parsed from a tag name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The first number: incompatible changes.
    pub major: u64,
    /// The second number: compatible additions.
    pub minor: u64,
    /// The third number: fixes.
    pub patch: u64,
    /// Pre-release identifiers without the leading `-` (empty when none).
    pub pre: String,
    /// Build metadata without the leading `+`; ignored by comparisons.
    pub metadata: String,
    /// The text the version was parsed from (the tag name).
    pub original: String,
}

/// Why a version or a range could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    /// The text (given here) is not a version.
    #[error("invalid semantic version {0:?}")]
    InvalidVersion(String),
    /// The text (given here) is not a range of comparisons.
    #[error("improper constraint: {0:?}")]
    ImproperConstraint(String),
    /// A numeric pre-release identifier with a leading zero (`1.2.3-01`), Masterminds'
    /// `ErrSegmentStartsZero`.
    #[error("version segment starts with 0")]
    SegmentStartsZero(String),
    /// A comparison that has the shape of one (`~1.2x`, `1.2.3-01`, a stray `|`) but whose
    /// version does not parse; Masterminds' text for it carries no detail.
    #[error("constraint parser error")]
    ConstraintParser(String),
}

impl Version {
    /// Parses a tag the way Flux does: an optional `v`, exactly three dot-separated numeric
    /// parts (leading zeros tolerated), optional `-pre` and `+meta`.
    pub fn parse_tag(s: &str) -> Result<Self, SemverError> {
        if s.splitn(3, '.').count() != 3 {
            return Err(SemverError::InvalidVersion(s.to_string()));
        }
        Self::parse_loose(s)
    }

    /// Masterminds' coercing parser: `v1`, `1.2` and `1.2.3-rc.1+b` are all accepted.
    pub fn parse_loose(s: &str) -> Result<Self, SemverError> {
        let bad = || SemverError::InvalidVersion(s.to_string());
        let mut cur = Cursor::new(s);
        cur.eat('v');
        let major = cur.digits().ok_or_else(bad)?;
        let minor = if cur.eat('.') {
            cur.digits().ok_or_else(bad)?
        } else {
            "0"
        };
        let patch = if cur.eat('.') {
            cur.digits().ok_or_else(bad)?
        } else {
            "0"
        };
        let pre = if cur.eat('-') {
            cur.identifiers().ok_or_else(bad)?
        } else {
            ""
        };
        let metadata = if cur.eat('+') {
            cur.identifiers().ok_or_else(bad)?
        } else {
            ""
        };
        if !cur.at_end() {
            return Err(bad());
        }
        // Numeric pre-release identifiers with a leading zero are invalid in SemVer 2 and in
        // Masterminds' validation.
        if !pre.is_empty()
            && pre
                .split('.')
                .any(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(SemverError::SegmentStartsZero(s.to_string()));
        }
        let num = |p: &str| p.parse::<u64>().map_err(|_| bad());
        Ok(Version {
            major: num(major)?,
            minor: num(minor)?,
            patch: num(patch)?,
            pre: pre.to_string(),
            metadata: metadata.to_string(),
            original: s.to_string(),
        })
    }

    fn triple(major: u64, minor: u64, patch: u64, pre: &str) -> Self {
        Version {
            major,
            minor,
            patch,
            pre: pre.to_string(),
            metadata: String::new(),
            original: String::new(),
        }
    }

    /// SemVer precedence; build metadata does not take part.
    pub fn compare(&self, other: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_pre(&self.pre, &other.pre),
            })
    }
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    let (mut ai, mut bi) = (a.split('.'), b.split('.'));
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (Some(_), None) => return Ordering::Greater,
            (None, Some(_)) => return Ordering::Less,
            (Some(x), Some(y)) => {
                let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if ord != Ordering::Equal {
                    return ord;
                }
            }
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

/// One comparison such as `>=1.2` or `~1.x`.
#[derive(Debug, Clone)]
struct Constraint {
    op: Op,
    version: Version,
    /// Any wildcard or missing part (`1.x`, `1`, `*`).
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

/// A parsed `spec.ref.semver` range: OR groups of AND-ed comparisons.
#[derive(Debug, Clone)]
pub struct Range {
    groups: Vec<Vec<Constraint>>,
    text: String,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Range {
    /// Parses the range syntax Masterminds/semver v3 accepts: comparisons separated by spaces or
    /// commas (AND), `||` (OR), hyphen ranges `1.2 - 1.4.5`, wildcards `x`/`X`/`*`, `~`, `~>`,
    /// `^`, and the operators `=`, `!=`, `>`, `<`, `>=`, `=>`, `<=`, `=<`.
    pub fn parse(text: &str) -> Result<Self, SemverError> {
        let improper = |s: &str| SemverError::ImproperConstraint(s.to_string());
        let mut groups = Vec::new();
        for segment in text.split("||") {
            let rewritten = rewrite_hyphen_ranges(segment).ok_or_else(|| improper(segment))?;
            let mut group = Vec::new();
            let mut parser_error = false;
            let mut cur = Cursor::new(&rewritten);
            loop {
                let had_ws = cur.skip_ws();
                if cur.at_end() {
                    break;
                }
                if !group.is_empty() {
                    let comma = cur.eat(',');
                    if comma {
                        cur.skip_ws();
                    } else if !had_ws {
                        return Err(improper(segment));
                    }
                }
                let op = cur.op();
                cur.skip_ws();
                match parse_constraint(op, &mut cur) {
                    Ok(c) => group.push(c),
                    // Masterminds checks the whole segment's shape first, then parses each
                    // comparison, so an improper later comparison wins over this.
                    Err(Bad::Parser) => parser_error = true,
                    Err(Bad::Improper) => return Err(improper(segment)),
                }
            }
            if parser_error {
                return Err(SemverError::ConstraintParser(segment.to_string()));
            }
            if group.is_empty() {
                return Err(improper(segment));
            }
            groups.push(group);
        }
        Ok(Range {
            groups,
            text: text.to_string(),
        })
    }

    /// True when `v` is in the range. A pre-release version only matches through an AND group
    /// in which some comparison names a pre-release.
    pub fn matches(&self, v: &Version) -> bool {
        self.groups.iter().any(|group| {
            let include_pre = group.iter().any(|c| !c.version.pre.is_empty());
            if !v.pre.is_empty() && !include_pre {
                return false;
            }
            group.iter().all(|c| c.check(v))
        })
    }
}

/// `A - B` becomes `>= A, <= B` (Masterminds rewrites the text the same way before parsing).
fn rewrite_hyphen_ranges(segment: &str) -> Option<String> {
    let Some(pos) = segment.find(" - ") else {
        return Some(segment.to_string());
    };
    let (left, right) = (segment[..pos].trim_end(), segment[pos + 3..].trim_start());
    let lstart = left
        .rfind(|c: char| c.is_whitespace() || c == ',')
        .map_or(0, |i| i + 1);
    let rend = right
        .find(|c: char| c.is_whitespace() || c == ',')
        .unwrap_or(right.len());
    let (before, lower) = left.split_at(lstart);
    let (upper, after) = right.split_at(rend);
    if lower.is_empty() || upper.is_empty() {
        return None;
    }
    let rest = rewrite_hyphen_ranges(after)?;
    Some(format!("{before}>= {lower}, <= {upper} {rest}"))
}

/// Why one comparison failed: not the shape of a comparison (`improper constraint`), or the
/// shape but a version that does not parse (`constraint parser error`).
enum Bad {
    Improper,
    Parser,
}

fn parse_constraint(op: Op, cur: &mut Cursor<'_>) -> Result<Constraint, Bad> {
    cur.eat('v');
    let major = cur.component().ok_or(Bad::Improper)?;
    let minor = if cur.eat('.') {
        Some(cur.component().ok_or(Bad::Improper)?)
    } else {
        None
    };
    let patch = if cur.eat('.') {
        Some(cur.component().ok_or(Bad::Improper)?)
    } else {
        None
    };
    let pre = if cur.eat('-') {
        cur.identifiers().ok_or(Bad::Improper)?
    } else {
        ""
    };
    if cur.eat('+') {
        cur.identifiers().ok_or(Bad::Improper)?;
    }
    // The next character must end this comparison.
    if !(cur.at_end() || cur.peek().is_some_and(|c| c.is_whitespace() || c == ',')) {
        return Err(Bad::Improper);
    }
    // From here the text has a comparison's shape; what fails is Masterminds' NewVersion of
    // the comparison's version.
    if !pre.is_empty()
        && pre
            .split('.')
            .any(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Bad::Parser);
    }
    let is_x = |s: &str| matches!(s, "x" | "X" | "*");
    let num = |s: &str| -> Result<u64, Bad> {
        if s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().map_err(|_| Bad::Parser)
        } else {
            Err(Bad::Parser)
        }
    };
    let (version, dirty, minor_dirty, patch_dirty) = if is_x(major) {
        (Version::triple(0, 0, 0, pre), true, false, false)
    } else if minor.is_none_or(is_x) {
        (Version::triple(num(major)?, 0, 0, pre), true, true, false)
    } else if patch.is_none_or(is_x) {
        let minor = num(minor.unwrap_or_default())?;
        (
            Version::triple(num(major)?, minor, 0, pre),
            true,
            false,
            true,
        )
    } else {
        let minor = num(minor.unwrap_or_default())?;
        let patch = num(patch.unwrap_or_default())?;
        (
            Version::triple(num(major)?, minor, patch, pre),
            false,
            false,
            false,
        )
    };
    Ok(Constraint {
        op,
        version,
        dirty,
        minor_dirty,
        patch_dirty,
    })
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.version;
        match self.op {
            Op::Eq => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    v.compare(c) == Ordering::Equal
                }
            }
            Op::Ne => self.not_equal(v),
            Op::Gt => {
                if !self.dirty {
                    return v.compare(c) == Ordering::Greater;
                }
                if v.major != c.major {
                    return v.major > c.major;
                }
                if self.minor_dirty {
                    return false;
                }
                if self.patch_dirty {
                    return v.minor > c.minor;
                }
                v.compare(c) == Ordering::Greater
            }
            Op::Lt => v.compare(c) == Ordering::Less,
            Op::Ge => v.compare(c) != Ordering::Less,
            Op::Le => {
                if !self.dirty {
                    return v.compare(c) != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            Op::Tilde => self.tilde(v),
            Op::Caret => self.caret(v),
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if (c.major, c.minor, c.patch) == (0, 0, 0) && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        v.patch == c.patch
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if self.minor_dirty {
                return false;
            }
            if c.minor != v.minor {
                return true;
            }
            if self.patch_dirty {
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return compare_pre(&v.pre, &c.pre) != Ordering::Equal;
                }
                return false;
            }
        }
        v.compare(c) != Ordering::Equal
    }
}

/// A tiny scanner over ASCII text.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }
    fn skip_ws(&mut self) -> bool {
        let before = self.pos;
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += self.peek().map_or(1, char::len_utf8);
        }
        self.pos > before
    }
    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }
    fn digits(&mut self) -> Option<&'a str> {
        let d = self.take_while(|c| c.is_ascii_digit());
        (!d.is_empty()).then_some(d)
    }
    /// A version component as Masterminds' pattern takes it: `[0-9|x|X|*]+` (the `|` inside
    /// its character class is literal, so a stray `|` is a component that fails to parse).
    fn component(&mut self) -> Option<&'a str> {
        let d = self.take_while(|c| c.is_ascii_digit() || matches!(c, 'x' | 'X' | '*' | '|'));
        (!d.is_empty()).then_some(d)
    }
    /// Dot-separated non-empty identifiers of `[0-9A-Za-z-]`.
    fn identifiers(&mut self) -> Option<&'a str> {
        let start = self.pos;
        loop {
            let part = self.take_while(|c| c.is_ascii_alphanumeric() || c == '-');
            if part.is_empty() {
                return None;
            }
            if !(self.rest().starts_with('.')
                && self.rest()[1..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-'))
            {
                break;
            }
            self.pos += 1;
        }
        Some(&self.s[start..self.pos])
    }
    fn op(&mut self) -> Op {
        const OPS: [(&str, Op); 11] = [
            ("!=", Op::Ne),
            (">=", Op::Ge),
            ("=>", Op::Ge),
            ("<=", Op::Le),
            ("=<", Op::Le),
            ("~>", Op::Tilde),
            (">", Op::Gt),
            ("<", Op::Lt),
            ("=", Op::Eq),
            ("~", Op::Tilde),
            ("^", Op::Caret),
        ];
        for (text, op) in OPS {
            if self.rest().starts_with(text) {
                self.pos += text.len();
                return op;
            }
        }
        Op::Eq
    }
}

/// Picks the highest tag matching `range`. Equal versions (differing only in build metadata)
/// are ordered by tag name so the choice is deterministic; Flux orders them by tag time.
pub fn latest_matching<'a>(
    range: &Range,
    tags: impl IntoIterator<Item = &'a str>,
) -> Option<Version> {
    tags.into_iter()
        .filter_map(|t| Version::parse_tag(t).ok())
        .filter(|v| range.matches(v))
        .max_by(|a, b| a.compare(b).then_with(|| a.original.cmp(&b.original)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(range: &str, v: &str) -> bool {
        Range::parse(range)
            .unwrap()
            .matches(&Version::parse_loose(v).unwrap())
    }

    #[test]
    fn ranges_flux_documents() {
        assert!(m(">=1.0.0 <2.0.0", "1.4.2"));
        assert!(!m(">=1.0.0 <2.0.0", "2.0.0"));
        assert!(m(">=1.0.0, <2.0.0", "1.0.0"));
        assert!(m("~1.2", "1.2.9"));
        assert!(!m("~1.2", "1.3.0"));
        assert!(m("~1.2.3", "1.2.4"));
        assert!(!m("~1.2.3", "1.2.2"));
        assert!(m("~>1.2", "1.2.0"));
        assert!(m("~1", "1.9.0"));
        assert!(m("^1", "1.9.9"));
        assert!(!m("^1", "2.0.0"));
        assert!(m("^1.2.3", "1.3.0"));
        assert!(!m("^0.2.3", "0.3.0"));
        assert!(m("^0.2.3", "0.2.9"));
        assert!(!m("^0.0.3", "0.0.4"));
        assert!(m("^0.0", "0.0.7"));
        assert!(!m("^0.0", "0.1.0"));
        assert!(m("1.x", "1.7.0"));
        assert!(!m("1.x", "2.0.0"));
        assert!(m("1.2.x", "1.2.5"));
        assert!(m("*", "3.1.4"));
        assert!(m("1.2.3", "1.2.3"));
        assert!(!m("1.2.3", "1.2.4"));
        assert!(m("<1.0.0 || >=2.0.0", "2.1.0"));
        assert!(m("<1.0.0 || >=2.0.0", "0.9.0"));
        assert!(!m("<1.0.0 || >=2.0.0", "1.5.0"));
        assert!(m("1.2 - 1.4.5", "1.4.5"));
        assert!(!m("1.2 - 1.4.5", "1.4.6"));
        assert!(m("!=1.2.3", "1.2.4"));
        assert!(!m(">1.x", "1.9.0"));
        assert!(m(">1.x", "2.0.0"));
        assert!(m("<=1.2.x", "1.2.9"));
        assert!(!m("<=1.2.x", "1.3.0"));
        assert!(m("=>1.0", "1.0.0"));
        assert!(m("v1.x", "1.0.1"));
    }

    #[test]
    fn prereleases_only_when_the_group_asks() {
        assert!(!m(">=1.0.0", "1.1.0-rc.1"));
        assert!(!m("1.x", "1.1.0-rc.1"));
        assert!(m(">=1.0.0-0", "1.1.0-rc.1"));
        assert!(m(">=1.1.0-alpha <2.0.0", "1.1.0-rc.1"));
        // The OR group without a pre-release does not admit one.
        assert!(!m(">=3.0.0-0 || ^1", "1.1.0-rc.1"));
        assert!(m(">=1.1.0-beta", "1.1.0-rc.1"));
        assert!(!m(">=1.1.0-rc.2", "1.1.0-rc.1"));
    }

    #[test]
    fn improper_ranges_are_errors() {
        for bad in [
            "",
            "abc",
            ">=1.0.0 <",
            "1.2.3.4",
            ">>1",
            "1.0.0 ||",
            "~1.2x",
            "1.2 -",
        ] {
            assert!(Range::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn masterminds_error_kinds() {
        let err = |r: &str| Range::parse(r).unwrap_err().to_string();
        // The shape of a comparison with a version that does not parse.
        assert_eq!(err("~1.2x"), "constraint parser error");
        assert_eq!(err("1.2.3-01"), "constraint parser error");
        assert_eq!(err(">=1.2.3 ||| 2"), "constraint parser error");
        // Not the shape of a comparison.
        assert_eq!(err("abc"), "improper constraint: \"abc\"");
        assert_eq!(err("1.2.3.4"), "improper constraint: \"1.2.3.4\"");
        assert_eq!(
            Version::parse_loose("1.2.3-01").unwrap_err().to_string(),
            "version segment starts with 0"
        );
    }

    #[test]
    fn tags_need_three_parts() {
        assert!(Version::parse_tag("v1.2.3").is_ok());
        assert!(Version::parse_tag("1.2.3-rc.1+build.5").is_ok());
        assert!(Version::parse_tag("v2025.02.03").is_ok());
        assert!(Version::parse_tag("v1.2").is_err());
        assert!(Version::parse_tag("release-1.2.3").is_err());
        assert!(Version::parse_tag("1.2.3-01").is_err());
    }

    #[test]
    fn latest_matching_orders_by_precedence() {
        let r = Range::parse(">=1.0.0 <2.0.0").unwrap();
        let tags = [
            "v1.0.0",
            "v1.10.0",
            "v1.9.3",
            "v2.0.0",
            "v1.11.0-rc.1",
            "junk",
        ];
        assert_eq!(latest_matching(&r, tags).unwrap().original, "v1.10.0");
        let r = Range::parse("^3").unwrap();
        assert!(latest_matching(&r, tags).is_none());
    }
}
