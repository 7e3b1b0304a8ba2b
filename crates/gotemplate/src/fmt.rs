//! Go's `fmt` printing of [`Value`]s: `Sprint`, `Sprintln`, `Sprintf` and `strconv`'s quoting and
//! float formatting, as text/template's `print`, `println`, `printf` and `{{ . }}` use them.
//!
//! Owns the verbs `%v %+v %#v %s %d %q %x %X %o %O %b %e %E %f %F %g %G %t %T %c %U %%`, flags
//! (`+ - # space 0`), width and precision (also `*` and `%[n]` argument indexes), and Go's error
//! forms (`%!d(string=x)`, `%!s(MISSING)`, `%!(EXTRA int=1)`, `%!(NOVERB)`, `%!(BADWIDTH)`,
//! `%!(BADPREC)`, `%!v(BADINDEX)`). Floats print as Go's shortest `%g` (`1e+06`, `3`, `0.1`).
//! Known gaps: `%#v` of containers is an approximation, and `%q` decides printability with
//! Rust's Unicode tables (newer than Go 1.24's Unicode 15.0: characters assigned since print
//! raw here).

use crate::value::Value;

/// Go's `fmt.Sprint`: operands printed with `%v`, a space between two operands when neither is
/// a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::default();
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::String(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`: operands printed with `%v`, always separated by a space, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::default();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::default();
    p.do_printf(format, args);
    p.buf
}

/// Go's `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_with(&crate::gostr::to_bytes(s), '"', false)
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `fmt` in `e E f F g G`; `prec` -1 asks for
/// the shortest representation that reads back as the same float.
pub fn format_float(f: f64, fmt: char, prec: i32) -> String {
    let mut out = String::new();
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    if f.is_infinite() {
        if f > 0.0 {
            out.push('+');
        }
        out.push_str("Inf");
        return out;
    }
    let abs = f.abs();
    let shortest = prec < 0;
    match fmt {
        'b' => format_b(abs, &mut out),
        'x' | 'X' => format_x(abs, prec, fmt, &mut out),
        'e' | 'E' => {
            let d = if shortest {
                Decimal::shortest(abs)
            } else {
                Decimal::rounded(abs, prec as usize + 1)
            };
            let p = if shortest {
                d.digits.len().saturating_sub(1)
            } else {
                prec as usize
            };
            d.write_e(&mut out, p, fmt);
        }
        'f' | 'F' => {
            if shortest {
                let d = Decimal::shortest(abs);
                let p = (d.digits.len() as i32 - d.dp).max(0) as usize;
                d.write_f(&mut out, p);
            } else {
                // Rust formats at most 65,535 digits; a double's exact expansion ends within
                // 1,074 fractional digits, so what lies beyond is zeros.
                let prec = prec as usize;
                let exact = prec.min(EXACT_FRACTION_DIGITS);
                out.push_str(&format!("{abs:.exact$}"));
                out.extend(std::iter::repeat_n('0', prec - exact));
            }
        }
        _ => {
            let upper = fmt == 'G';
            let (d, mut prec, eprec) = if shortest {
                let d = Decimal::shortest(abs);
                let n = d.digits.len() as i32;
                (d, n, 6)
            } else {
                let p = prec.max(1);
                let d = Decimal::rounded(abs, p as usize);
                let mut eprec = p;
                let nd = d.digits.len() as i32;
                if eprec > nd && nd >= d.dp {
                    eprec = nd;
                }
                (d, p, eprec)
            };
            let nd = d.digits.len() as i32;
            let exp = d.dp - 1;
            if exp < -4 || exp >= eprec {
                if prec > nd {
                    prec = nd;
                }
                d.write_e(
                    &mut out,
                    (prec - 1).max(0) as usize,
                    if upper { 'E' } else { 'e' },
                );
            } else {
                if prec > d.dp {
                    prec = nd;
                }
                d.write_f(&mut out, (prec - d.dp).max(0) as usize);
            }
        }
    }
    out
}

/// A double's mantissa (with the implicit bit) and binary exponent, as strconv splits it.
fn mant_exp(abs: f64) -> (u64, i32) {
    let bits = abs.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        (mant, 1 - 1023)
    } else {
        (mant | 1u64 << 52, exp - 1023)
    }
}

/// strconv's `%b`: `ddddp±ddd`, the mantissa and the power of two as decimal integers.
fn format_b(abs: f64, out: &mut String) {
    let (mant, exp) = mant_exp(abs);
    let exp = exp - 52;
    out.push_str(&mant.to_string());
    out.push('p');
    if exp >= 0 {
        out.push('+');
    }
    out.push_str(&exp.to_string());
}

/// strconv's `%x`: `0x1.yyyp±dd` (hexadecimal mantissa, rounded to `prec` digits if given).
fn format_x(abs: f64, prec: i32, fmt: char, out: &mut String) {
    let (mut mant, mut exp) = mant_exp(abs);
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = prec as u32 * 4;
        let extra = (mant << shift) & ((1u64 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let digits = if fmt == 'X' { UPPER } else { LOWER };
    out.push('0');
    out.push(fmt);
    out.push(char::from(b'0' + ((mant >> 60) & 1) as u8));
    mant <<= 4;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(char::from(digits[((mant >> 60) & 15) as usize]));
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(char::from(digits[((mant >> 60) & 15) as usize]));
            mant <<= 4;
        }
    }
    out.push(if fmt == 'X' { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
}

/// More digits than any double's exact decimal expansion has after the point (1,074).
const EXACT_FRACTION_DIGITS: usize = 1_100;
/// More significant digits than any double's exact decimal expansion has (767).
const EXACT_SIGNIFICANT_DIGITS: usize = 800;

/// A float's decimal digits (no trailing zeros; empty for zero) and the decimal point's place:
/// the value is `0.DIGITS × 10^dp`.
struct Decimal {
    digits: Vec<u8>,
    dp: i32,
}

impl Decimal {
    /// The shortest digits that read back as `abs`.
    fn shortest(abs: f64) -> Decimal {
        Decimal::parse(&format!("{abs:e}"))
    }

    /// `n` significant digits, correctly rounded (digits past a double's exact expansion,
    /// at most 767 significant ones, are zeros and left implicit).
    fn rounded(abs: f64, n: usize) -> Decimal {
        let n = n.min(EXACT_SIGNIFICANT_DIGITS);
        Decimal::parse(&format!("{:.*e}", n.saturating_sub(1), abs))
    }

    /// Reads Rust's `d.ddde±x` form.
    fn parse(s: &str) -> Decimal {
        let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        if digits.is_empty() {
            return Decimal { digits, dp: 0 };
        }
        Decimal {
            digits,
            dp: exp + 1,
        }
    }

    fn digit(&self, i: i32) -> char {
        if i >= 0 && (i as usize) < self.digits.len() {
            char::from(self.digits[i as usize])
        } else {
            '0'
        }
    }

    /// `d.ddd` with `prec` digits after the point, then `e±XX`.
    fn write_e(&self, out: &mut String, prec: usize, e: char) {
        out.push(self.digit(0));
        if prec > 0 {
            out.push('.');
            for i in 1..=prec {
                out.push(self.digit(i as i32));
            }
        }
        out.push(e);
        let exp = if self.digits.is_empty() {
            0
        } else {
            self.dp - 1
        };
        out.push(if exp < 0 { '-' } else { '+' });
        let exp = exp.unsigned_abs();
        if exp < 10 {
            out.push('0');
        }
        out.push_str(&exp.to_string());
    }

    /// `ddd.ddd` with `prec` digits after the point.
    fn write_f(&self, out: &mut String, prec: usize) {
        if self.dp > 0 {
            for i in 0..self.dp {
                out.push(self.digit(i));
            }
        } else {
            out.push('0');
        }
        if prec > 0 {
            out.push('.');
            for i in 0..prec as i32 {
                out.push(self.digit(self.dp + i));
            }
        }
    }
}

/// Go's `#` flag on a float: always a decimal point, and for `%g`/`%x` trailing zeros up to
/// the precision (6 when none is given).
fn sharp_float(num: &str, verb: char, prec: i32) -> String {
    let mut digits: i32 = match verb {
        'v' | 'g' | 'G' | 'x' => {
            if prec == -1 {
                6
            } else {
                prec
            }
        }
        _ => 0,
    };
    let (sign, body) = match num.strip_prefix(['-', '+']) {
        Some(b) => (&num[..1], b),
        None => ("", num),
    };
    let mut mant = body.to_string();
    let mut tail = String::new();
    let mut has_point = false;
    let mut saw_nonzero = false;
    for (i, c) in body.char_indices() {
        match c {
            '.' => has_point = true,
            'p' | 'P' => {
                tail = body[i..].to_string();
                mant = body[..i].to_string();
                break;
            }
            'e' | 'E' if verb != 'x' && verb != 'X' => {
                tail = body[i..].to_string();
                mant = body[..i].to_string();
                break;
            }
            _ => {
                if c != '0' {
                    saw_nonzero = true;
                }
                if saw_nonzero {
                    digits -= 1;
                }
            }
        }
    }
    if !has_point {
        if mant == "0" {
            digits -= 1;
        }
        mant.push('.');
    }
    while digits > 0 {
        mant.push('0');
        digits -= 1;
    }
    format!("{sign}{mant}{tail}")
}

/// The flags, width and precision of one verb.
#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    f: Flags,
    reordered: bool,
    good_arg_num: bool,
}

const LOWER: &[u8; 16] = b"0123456789abcdef";
const UPPER: &[u8; 16] = b"0123456789ABCDEF";

impl Printer {
    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        self.buf.extend(std::iter::repeat_n(c, n));
    }

    /// Writes `s` padded to the width (counted in characters).
    fn pad(&mut self, s: &str) {
        let Some(wid) = self.f.wid else {
            self.buf.push_str(s);
            return;
        };
        let n = s.chars().count();
        if n >= wid {
            self.buf.push_str(s);
        } else if self.f.minus {
            self.buf.push_str(s);
            self.buf.extend(std::iter::repeat_n(' ', wid - n));
        } else {
            self.write_padding(wid - n);
            self.buf.push_str(s);
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad(s);
    }

    fn truncate<'s>(&self, s: &'s str) -> &'s str {
        match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((i, _)) => &s[..i],
                None => s,
            },
            None => s,
        }
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        let q = if self.f.sharp && can_backquote(s) {
            format!("`{s}`")
        } else {
            quote_with(&crate::gostr::to_bytes(s), '"', self.f.plus)
        };
        self.pad(&q);
    }

    /// Hex of a string or byte slice (`%x`, `% x`, `%#x`).
    fn fmt_sbx(&mut self, b: &[u8], digits: &[u8; 16]) {
        let mut length = b.len();
        if let Some(p) = self.f.prec {
            length = length.min(p);
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        let x = if digits == UPPER { 'X' } else { 'x' };
        if self.f.sharp {
            self.buf.push('0');
            self.buf.push(x);
        }
        for (i, c) in b[..length].iter().enumerate() {
            if self.f.space && i > 0 {
                self.buf.push(' ');
                if self.f.sharp {
                    self.buf.push('0');
                    self.buf.push(x);
                }
            }
            self.buf.push(char::from(digits[usize::from(c >> 4)]));
            self.buf.push(char::from(digits[usize::from(c & 0xf)]));
        }
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    fn fmt_integer(&mut self, v: i64, unsigned: Option<u64>, base: u32, verb: char) {
        let (negative, mut u) = match unsigned {
            Some(u) => (false, u),
            None => (v < 0, v.unsigned_abs()),
        };
        let digits = if verb == 'X' { UPPER } else { LOWER };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                let w = self.f.wid.unwrap_or(0);
                self.write_padding(w);
                self.f.zero = old;
                return;
            }
        } else if self.f.zero && !self.f.minus && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut rev: Vec<u8> = Vec::with_capacity(24);
        loop {
            rev.push(digits[(u % u64::from(base)) as usize]);
            u /= u64::from(base);
            if u == 0 {
                break;
            }
        }
        while rev.len() < prec {
            rev.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(if verb == 'X' { b'X' } else { b'x' });
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.f.plus {
            rev.push(b'+');
        } else if self.f.space {
            rev.push(b' ');
        }
        rev.reverse();
        let s = String::from_utf8(rev).unwrap_or_default();
        let old = self.f.zero;
        self.f.zero = false;
        self.pad(&s);
        self.f.zero = old;
    }

    fn fmt_int_verb(&mut self, v: i64, verb: char) {
        match verb {
            'v' | 'd' => self.fmt_integer(v, None, 10, verb),
            'b' => self.fmt_integer(v, None, 2, verb),
            'o' | 'O' => self.fmt_integer(v, None, 8, verb),
            'x' | 'X' => self.fmt_integer(v, None, 16, verb),
            'c' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                self.pad(&c.to_string());
            }
            'q' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                let mut b = [0u8; 4];
                let q = quote_with(c.encode_utf8(&mut b).as_bytes(), '\'', self.f.plus);
                self.pad(&q);
            }
            'U' => {
                let mut s = format!("U+{:04X}", v as u64);
                if self.f.sharp
                    && let Some(c) = u32::try_from(v).ok().and_then(char::from_u32)
                    && is_print(c)
                {
                    s.push_str(&format!(" '{c}'"));
                }
                let old = self.f.zero;
                self.f.zero = false;
                self.pad(&s);
                self.f.zero = old;
            }
            _ => self.bad_verb_value(verb, &Value::Int(v)),
        }
    }

    fn fmt_float(&mut self, v: f64, verb: char) {
        let (conv, default_prec) = match verb {
            'v' => ('g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' if self.f.sharp_v => ('g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => (verb, -1),
            'f' | 'F' | 'e' | 'E' if self.f.sharp_v => ('g', -1),
            'f' | 'F' | 'e' | 'E' => (verb, 6),
            _ => return self.bad_verb_value(verb, &Value::Float(v)),
        };
        let prec = self.f.prec.map(|p| p as i32).unwrap_or(default_prec);
        let mut num = format_float(v, conv, prec);
        if self.f.sharp && conv != 'b' && !num.ends_with("Inf") && num != "NaN" {
            num = sharp_float(&num, conv, prec);
        }
        if !num.starts_with('-') && !num.starts_with('+') {
            num.insert(0, '+');
        }
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        let body = &num[1..];
        if body.starts_with('I') || body.starts_with('N') {
            let old = self.f.zero;
            self.f.zero = false;
            let s = if body.starts_with('N') && !self.f.space && !self.f.plus {
                body.to_string()
            } else {
                num.clone()
            };
            self.pad(&s);
            self.f.zero = old;
            return;
        }
        if self.f.plus || !num.starts_with('+') {
            let wid = self.f.wid.unwrap_or(0);
            if self.f.zero && !self.f.minus && wid > num.len() {
                self.buf.push_str(&num[..1]);
                self.write_padding(wid - num.len());
                self.buf.push_str(&num[1..]);
                return;
            }
            self.pad(&num);
            return;
        }
        self.pad(&num[1..]);
    }

    fn fmt_string(&mut self, s: &str, verb: char) {
        match verb {
            'v' if self.f.sharp_v => self.fmt_q(s),
            'v' | 's' => self.fmt_s(s),
            'x' => self.fmt_sbx(&crate::gostr::to_bytes(s), LOWER),
            'X' => self.fmt_sbx(&crate::gostr::to_bytes(s), UPPER),
            'q' => self.fmt_q(s),
            _ => self.bad_verb_value(verb, &Value::from(s)),
        }
    }

    fn fmt_bytes(&mut self, b: &[u8], verb: char, depth: usize) {
        match verb {
            'v' | 'd' => {
                if self.f.sharp_v {
                    self.buf.push_str("[]byte{");
                    for (i, c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.buf.push_str(&format!("0x{c:x}"));
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.fmt_integer(i64::from(*c), Some(u64::from(*c)), 10, verb);
                    }
                    self.buf.push(']');
                }
            }
            's' => {
                let s = crate::gostr::from_bytes(b);
                self.fmt_s(&s);
            }
            'x' => self.fmt_sbx(b, LOWER),
            'X' => self.fmt_sbx(b, UPPER),
            'q' => {
                let b = match self.f.prec {
                    Some(p) => &b[..b.len().min(p)],
                    None => b,
                };
                let q = quote_with(b, '"', self.f.plus);
                self.pad(&q);
            }
            _ => {
                self.buf.push('[');
                for (i, c) in b.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(' ');
                    }
                    self.print_value(&Value::Int(i64::from(*c)), verb, depth + 1);
                }
                self.buf.push(']');
            }
        }
    }

    /// `%!verb(type=value)`.
    fn bad_verb_value(&mut self, verb: char, v: &Value) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if v.is_nil() {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&v.type_name());
            self.buf.push('=');
            self.print_arg(v, 'v');
        }
        self.buf.push(')');
    }

    fn print_arg(&mut self, arg: &Value, verb: char) {
        if arg.is_nil() {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb_value(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            let t = arg.type_name();
            self.fmt_s(&t);
            return;
        }
        self.print_value(arg, verb, 0)
    }

    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.print_value_inner(v, verb, depth)
        })
    }

    fn print_value_inner(&mut self, v: &Value, verb: char, depth: usize) {
        match v {
            Value::Nil => {
                if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else if depth > 0 {
                    // Go writes a nil element of a container without padding.
                    self.buf.push_str("<nil>");
                } else {
                    self.pad("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad(if *b { "true" } else { "false" }),
                _ => self.bad_verb_value(verb, v),
            },
            Value::Int(i) | Value::Int64(i) => self.fmt_int_verb(*i, verb),
            Value::Float(f) => self.fmt_float(*f, verb),
            Value::String(s) => self.fmt_string(s, verb),
            Value::Bytes(b) => self.fmt_bytes(b, verb, depth),
            Value::List(items) => {
                if self.f.sharp_v {
                    self.buf.push_str("[]interface {}{");
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(item, verb, depth + 1);
                    }
                    self.buf.push('}');
                    return;
                }
                self.buf.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(' ');
                    }
                    self.print_value(item, verb, depth + 1);
                }
                self.buf.push(']');
            }
            Value::Map(m) => {
                let entries = m.entries();
                if self.f.sharp_v {
                    self.buf.push_str("map[string]interface {}{");
                } else {
                    self.buf.push_str("map[");
                }
                for (i, (k, val)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.fmt_string(k, verb);
                    self.buf.push(':');
                    self.print_value(val, verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            Value::Object(o) => {
                if let Some(inner) = o.as_value() {
                    return self.print_value(&inner, verb, depth);
                }
                match verb {
                    'v' | 's' | 'x' | 'X' | 'q' => {
                        let s = o.format();
                        self.fmt_string(&s, verb)
                    }
                    _ => {
                        self.buf.push_str("%!");
                        self.buf.push(verb);
                        self.buf.push('(');
                        self.buf.push_str(&o.type_name());
                        self.buf.push('=');
                        self.buf.push_str(&o.format());
                        self.buf.push(')');
                    }
                }
            }
        }
    }

    /// `[n]` at `i`: the new argument number, the new index, and whether an index was found.
    fn arg_number(
        &mut self,
        arg_num: usize,
        format: &[u8],
        i: usize,
        num_args: usize,
    ) -> (usize, usize, bool) {
        if format.len() <= i || format[i] != b'[' {
            return (arg_num, i, false);
        }
        self.reordered = true;
        let (index, wid, ok) = parse_arg_number(&format[i..]);
        if ok && index >= 1 && index - 1 < num_args {
            return (index - 1, i + wid, true);
        }
        self.good_arg_num = false;
        (arg_num, i + wid, ok)
    }

    /// Go's `doPrintf`: literal text, then one verb per `%`, then `%!(EXTRA …)` for unused
    /// arguments (unless an explicit index reordered them).
    fn do_printf(&mut self, format: &str, args: &[Value]) {
        let fb = format.as_bytes();
        let mut cur = Cursor { i: 0, arg_num: 0 };
        self.reordered = false;
        while cur.i < fb.len() {
            self.good_arg_num = true;
            let last = cur.i;
            while cur.i < fb.len() && fb[cur.i] != b'%' {
                cur.i += 1;
            }
            if cur.i > last {
                self.buf.push_str(&format[last..cur.i]);
            }
            if cur.i >= fb.len() {
                break;
            }
            cur.i += 1;
            if !self.one_verb(format, &mut cur, args) {
                self.buf.push_str("%!(NOVERB)");
                break;
            }
        }
        if !self.reordered && cur.arg_num < args.len() {
            self.extra(&args[cur.arg_num..]);
        }
    }

    /// Flags, width, precision, argument indexes and the verb after a `%`; false when the
    /// format ends before the verb.
    fn one_verb(&mut self, format: &str, cur: &mut Cursor, args: &[Value]) -> bool {
        if self.flags(format.as_bytes(), cur, args) {
            return true;
        }
        self.width_and_precision(format.as_bytes(), cur, args);
        let Some(verb) = format[cur.i..].chars().next() else {
            return false;
        };
        cur.i += verb.len_utf8();
        if verb == '%' {
            self.buf.push('%');
        } else if !self.good_arg_num {
            self.buf.push_str(&format!("%!{verb}(BADINDEX)"));
        } else if cur.arg_num >= args.len() {
            self.buf.push_str(&format!("%!{verb}(MISSING)"));
        } else {
            self.print_verb(&args[cur.arg_num], verb);
            cur.arg_num += 1;
        }
        true
    }

    /// Reads the flags; a plain lowercase verb right after them is printed at once (Go's fast
    /// path), which returns true.
    fn flags(&mut self, fb: &[u8], cur: &mut Cursor, args: &[Value]) -> bool {
        self.f = Flags::default();
        while let Some(&c) = fb.get(cur.i) {
            match c {
                b'#' => self.f.sharp = true,
                b'0' => self.f.zero = !self.f.minus,
                b'+' => self.f.plus = true,
                b'-' => {
                    self.f.minus = true;
                    self.f.zero = false;
                }
                b' ' => self.f.space = true,
                _ if c.is_ascii_lowercase() && cur.arg_num < args.len() => {
                    self.print_verb(&args[cur.arg_num], char::from(c));
                    cur.arg_num += 1;
                    cur.i += 1;
                    return true;
                }
                _ => return false,
            }
            cur.i += 1;
        }
        false
    }

    /// `%v` turns `#` and `+` into Go-syntax and field-name modes; then prints.
    fn print_verb(&mut self, arg: &Value, verb: char) {
        if verb == 'v' {
            self.f.sharp_v = self.f.sharp;
            self.f.sharp = false;
            self.f.plus_v = self.f.plus;
            self.f.plus = false;
        }
        self.print_arg(arg, verb);
    }

    /// Width and precision, each a number, `*` (taken from the arguments) or after `[n]`.
    fn width_and_precision(&mut self, fb: &[u8], cur: &mut Cursor, args: &[Value]) {
        let end = fb.len();
        let mut after_index;
        (cur.arg_num, cur.i, after_index) = self.arg_number(cur.arg_num, fb, cur.i, args.len());
        if cur.i < end && fb[cur.i] == b'*' {
            cur.i += 1;
            let (w, ok, n) = int_from_arg(args, cur.arg_num);
            cur.arg_num = n;
            if !ok {
                self.buf.push_str("%!(BADWIDTH)");
                self.f.wid = None;
            } else if w < 0 {
                self.f.wid = Some(w.unsigned_abs() as usize);
                self.f.minus = true;
                self.f.zero = false;
            } else {
                self.f.wid = Some(w as usize);
            }
            after_index = false;
        } else {
            let (w, ok, ni) = parse_num(fb, cur.i, end);
            cur.i = ni;
            self.f.wid = ok.then_some(w);
            if after_index && ok {
                self.good_arg_num = false;
            }
        }
        if cur.i + 1 < end && fb[cur.i] == b'.' {
            cur.i += 1;
            if after_index {
                self.good_arg_num = false;
            }
            (cur.arg_num, cur.i, after_index) = self.arg_number(cur.arg_num, fb, cur.i, args.len());
            if cur.i < end && fb[cur.i] == b'*' {
                cur.i += 1;
                let (p, ok, n) = int_from_arg(args, cur.arg_num);
                cur.arg_num = n;
                self.f.prec = if p < 0 {
                    None
                } else {
                    ok.then_some(p as usize)
                };
                if !ok {
                    self.buf.push_str("%!(BADPREC)");
                }
                after_index = false;
            } else {
                let (p, ok, ni) = parse_num(fb, cur.i, end);
                cur.i = ni;
                self.f.prec = Some(if ok { p } else { 0 });
            }
        }
        if !after_index {
            (cur.arg_num, cur.i, _) = self.arg_number(cur.arg_num, fb, cur.i, args.len());
        }
    }

    /// `%!(EXTRA type=value, …)`.
    fn extra(&mut self, args: &[Value]) {
        self.f = Flags::default();
        self.buf.push_str("%!(EXTRA ");
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.buf.push_str(", ");
            }
            if arg.is_nil() {
                self.buf.push_str("<nil>");
            } else {
                self.buf.push_str(&arg.type_name());
                self.buf.push('=');
                self.print_arg(arg, 'v');
            }
        }
        self.buf.push(')');
    }
}

/// Where `do_printf` is: the byte in the format and the next argument.
struct Cursor {
    i: usize,
    arg_num: usize,
}

/// Go's `tooLarge`: widths and precisions beyond a million are refused.
const TOO_LARGE: usize = 1_000_000;

/// Decimal digits at `start..end`: the number, whether there was one, and the index after it.
fn parse_num(s: &[u8], start: usize, end: usize) -> (usize, bool, usize) {
    if start >= end {
        return (0, false, end);
    }
    let mut num = 0usize;
    let mut isnum = false;
    let mut i = start;
    while i < end && s[i].is_ascii_digit() {
        if num > TOO_LARGE {
            return (0, false, end);
        }
        num = num * 10 + usize::from(s[i] - b'0');
        isnum = true;
        i += 1;
    }
    (num, isnum, i)
}

/// `[n]`: the (one-based) index, the length consumed, and whether it parsed.
fn parse_arg_number(format: &[u8]) -> (usize, usize, bool) {
    if format.len() < 3 {
        return (0, 1, false);
    }
    for i in 1..format.len() {
        if format[i] == b']' {
            let (width, ok, newi) = parse_num(format, 1, i);
            if !ok || newi != i {
                return (0, i + 1, false);
            }
            return (width, i + 1, true);
        }
    }
    (0, 1, false)
}

/// The `*` width or precision argument: its value, whether it is an int, the next argument.
fn int_from_arg(args: &[Value], arg_num: usize) -> (i64, bool, usize) {
    if arg_num >= args.len() {
        return (0, false, arg_num);
    }
    let (n, ok) = match args[arg_num] {
        Value::Int(i) | Value::Int64(i) => (i, true),
        _ => (0, false),
    };
    if n.unsigned_abs() > TOO_LARGE as u64 {
        return (0, false, arg_num + 1);
    }
    (n, ok, arg_num + 1)
}

/// Go's `strconv.CanBackquote`.
fn can_backquote(s: &str) -> bool {
    // Go refuses invalid UTF-8 (`utf8.RuneError` of width 1), which the escapes stand for.
    !crate::gostr::has_escapes(s)
        && s.chars()
            .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
/// Outside ASCII this asks Rust's own printability table (what `escape_debug` leaves alone),
/// which has the same categories; a mark is tested after a letter, because `escape_debug`
/// escapes a grapheme extender only at the start of a string. The Unicode versions differ
/// (Go 1.24: 15.0), so characters assigned since print raw here and escaped by Go.
pub(crate) fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let mut buf = [0u8; 5];
    buf[0] = b'a';
    let n = 1 + c.encode_utf8(&mut buf[1..]).len();
    let s = std::str::from_utf8(&buf[..n]).unwrap_or("");
    s.escape_debug().eq(s.chars())
}

/// Go's `strconv.Quote`/`QuoteASCII`/`QuoteRune` over bytes that may not be UTF-8.
fn quote_with(b: &[u8], q: char, ascii_only: bool) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push(q);
    let mut rest = b;
    while !rest.is_empty() {
        let (c, len) = match std::str::from_utf8(&rest[..rest.len().min(4)]) {
            Ok(s) => {
                let c = s.chars().next().unwrap_or('\u{FFFD}');
                (Some(c), c.len_utf8())
            }
            Err(e) if e.valid_up_to() > 0 => {
                let s = std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or("\u{FFFD}");
                let c = s.chars().next().unwrap_or('\u{FFFD}');
                (Some(c), c.len_utf8())
            }
            Err(_) => (None, 1),
        };
        match c {
            None => out.push_str(&format!("\\x{:02x}", rest[0])),
            Some(c) => escape_rune(&mut out, c, q, ascii_only),
        }
        rest = &rest[len..];
    }
    out.push(q);
    out
}

fn escape_rune(out: &mut String, c: char, q: char, ascii_only: bool) {
    if c == q || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii_only {
        if c.is_ascii() && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Map;

    fn one(format: &str, v: &Value) -> String {
        sprintf(format, std::slice::from_ref(v))
    }

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn floats_print_like_go() {
        let cases = [
            (1_000_000.0, "1e+06"),
            (3.0, "3"),
            (0.1, "0.1"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (0.0, "0"),
            (1e21, "1e+21"),
            (f64::INFINITY, "+Inf"),
        ];
        for (f, want) in cases {
            assert_eq!(sprint(&[Value::Float(f)]), want, "{f}");
        }
        assert_eq!(sprint(&[Value::Float(f64::NAN)]), "NaN");
        assert_eq!(sprint(&[Value::Float(-0.0)]), "-0");
    }

    #[test]
    fn float_verbs() {
        let f = Value::Float(1.23456);
        assert_eq!(one("%f", &f), "1.234560");
        assert_eq!(one("%.2f", &f), "1.23");
        assert_eq!(one("%e", &f), "1.234560e+00");
        assert_eq!(sprintf("%E", &[Value::Float(1234.5)]), "1.234500E+03");
        assert_eq!(one("%g", &f), "1.23456");
        assert_eq!(one("%.3g", &f), "1.23");
        assert_eq!(sprintf("%.3g", &[Value::Float(1.0)]), "1");
        assert_eq!(sprintf("%.2g", &[Value::Float(1234.0)]), "1.2e+03");
        assert_eq!(one("%8.3f|", &f), "   1.235|");
        assert_eq!(one("%-8.3f|", &f), "1.235   |");
        assert_eq!(sprintf("%08.3f", &[Value::Float(-1.23456)]), "-001.235");
        assert_eq!(one("%+.1f", &f), "+1.2");
        assert_eq!(sprintf("%.0f", &[Value::Float(2.5)]), "2");
        assert_eq!(sprintf("%5.1f", &[Value::Float(f64::INFINITY)]), " +Inf");
    }

    #[test]
    fn integer_verbs() {
        let i = Value::Int(255);
        assert_eq!(
            sprintf(
                "%d %x %X %o %O %b",
                &[
                    i.clone(),
                    i.clone(),
                    i.clone(),
                    i.clone(),
                    i.clone(),
                    i.clone()
                ]
            ),
            "255 ff FF 377 0o377 11111111"
        );
        assert_eq!(sprintf("%#x %#o", &[i.clone(), i.clone()]), "0xff 0377");
        assert_eq!(
            sprintf("%5d|%-5d|%05d", &[i.clone(), i.clone(), i.clone()]),
            "  255|255  |00255"
        );
        assert_eq!(sprintf("%05d", &[Value::Int(-42)]), "-0042");
        assert_eq!(sprintf("%+d % d", &[Value::Int(5), Value::Int(5)]), "+5  5");
        assert_eq!(sprintf("%.3d", &[Value::Int(7)]), "007");
        assert_eq!(sprintf("%.0d|", &[Value::Int(0)]), "|");
        assert_eq!(
            sprintf(
                "%c %q %U",
                &[Value::Int(65), Value::Int(65), Value::Int(65)]
            ),
            "A 'A' U+0041"
        );
        assert_eq!(sprintf("%*d", &[Value::Int(4), Value::Int(7)]), "   7");
        assert_eq!(sprintf("%-*d|", &[Value::Int(4), Value::Int(7)]), "7   |");
        assert_eq!(sprintf("%*d", &[Value::Int(-4), Value::Int(7)]), "7   ");
        assert_eq!(sprintf("%d", &[Value::Int64(-9)]), "-9");
    }

    #[test]
    fn string_verbs() {
        assert_eq!(
            sprintf(
                "%s|%10s|%-4s|%.2s",
                &[s("go"), s("go"), s("go"), s("golang")]
            ),
            "go|        go|go  |go"
        );
        assert_eq!(sprintf("%q", &[s("a\"b\n")]), r#""a\"b\n""#);
        assert_eq!(sprintf("%#q", &[s("ab")]), "`ab`");
        assert_eq!(
            sprintf("%x % X %#x", &[s("hi"), s("hi"), s("hi")]),
            "6869 68 69 0x6869"
        );
        assert_eq!(sprintf("%q", &[s("é\u{1}")]), "\"é\\x01\"");
        assert_eq!(sprintf("%+q", &[s("é")]), "\"\\u00e9\"");
        assert_eq!(sprintf("%v", &[s("x")]), "x");
        assert_eq!(sprintf("%#v", &[s("x")]), "\"x\"");
        assert_eq!(sprintf("%5t", &[Value::Bool(true)]), " true");
    }

    #[test]
    fn bad_verbs_missing_and_extra() {
        assert_eq!(sprintf("%d", &[s("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%s", &[Value::Int(5)]), "%!s(int=5)");
        assert_eq!(sprintf("%d", &[Value::Float(1.5)]), "%!d(float64=1.5)");
        assert_eq!(sprintf("%s", &[Value::Nil]), "%!s(<nil>)");
        assert_eq!(sprintf("%v", &[Value::Nil]), "<nil>");
        assert_eq!(sprintf("%s %s", &[s("a")]), "a %!s(MISSING)");
        assert_eq!(
            sprintf("%s", &[s("a"), Value::Int(1), Value::Nil]),
            "a%!(EXTRA int=1, <nil>)"
        );
        assert_eq!(sprintf("50%%", &[]), "50%");
        assert_eq!(sprintf("%", &[]), "%!(NOVERB)");
        assert_eq!(sprintf("%z", &[Value::Int(1)]), "%!z(int=1)");
        assert_eq!(sprintf("%[2]s %[1]s", &[s("a"), s("b")]), "b a");
        assert_eq!(sprintf("%[3]s", &[s("a")]), "%!s(BADINDEX)");
        assert_eq!(sprintf("%*d", &[s("x"), Value::Int(1)]), "%!(BADWIDTH)1");
        assert_eq!(
            sprintf(
                "%T %T %T",
                &[Value::Int(1), Value::Nil, Value::list(vec![])]
            ),
            "int <nil> []interface {}"
        );
    }

    #[test]
    fn containers_print_like_go() {
        let m = Map::new();
        m.insert("b", Value::Float(2.0));
        m.insert("a", Value::list(vec![s("x"), Value::Nil, Value::Int(1)]));
        let v = Value::Map(m);
        assert_eq!(sprint(std::slice::from_ref(&v)), "map[a:[x <nil> 1] b:2]");
        assert_eq!(
            sprintf("%d", &[Value::list(vec![Value::Int(1), Value::Int(2)])]),
            "[1 2]"
        );
        assert_eq!(
            sprintf("%d", &[Value::list(vec![s("a")])]),
            "[%!d(string=a)]"
        );
        assert_eq!(
            sprintf("%q", &[Value::list(vec![s("a"), s("b")])]),
            r#"["a" "b"]"#
        );
        assert_eq!(
            sprintf("%3v", &[Value::list(vec![Value::Int(1), Value::Int(2)])]),
            "[  1   2]"
        );
        assert_eq!(sprint(&[Value::list(vec![])]), "[]");
        assert_eq!(sprint(&[Value::Map(Map::new())]), "map[]");
        let b = Value::Bytes(std::sync::Arc::from(&b"hi"[..]));
        assert_eq!(sprint(std::slice::from_ref(&b)), "[104 105]");
        assert_eq!(sprintf("%s %x", &[b.clone(), b]), "hi 6869");
    }

    #[test]
    fn sprint_spacing_follows_go() {
        assert_eq!(sprint(&[s("a"), s("b")]), "ab");
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(
            sprint(&[s("a"), Value::Int(1), Value::Int(2), s("b")]),
            "a1 2b"
        );
        assert_eq!(sprintln(&[s("a"), s("b")]), "a b\n");
        assert_eq!(sprint(&[]), "");
    }

    #[test]
    fn format_float_matches_strconv() {
        assert_eq!(format_float(1e6, 'f', -1), "1000000");
        assert_eq!(format_float(0.000123, 'e', -1), "1.23e-04");
        assert_eq!(format_float(1e100, 'g', -1), "1e+100");
        assert_eq!(format_float(100.0, 'g', 3), "100");
        assert_eq!(format_float(1000.0, 'g', 3), "1e+03");
        assert_eq!(format_float(0.5, 'e', 0), "5e-01");
        // Precisions beyond Rust's formatter (found by the fuzz test): zeros past the exact digits.
        let f = format_float(0.1, 'f', 100_000);
        assert_eq!(f.len(), 100_002);
        assert!(f.starts_with("0.1000000000000000055511151231257827"));
        assert!(f.ends_with("000"));
        assert_eq!(
            format_float(0.5, 'e', 100_000).len(),
            "5.".len() + 100_000 + "e-01".len()
        );
    }
}
