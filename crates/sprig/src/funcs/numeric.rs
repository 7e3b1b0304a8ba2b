//! Sprig's numeric.go and the arithmetic entries of its function map: integer arithmetic on
//! cast's `ToInt64` (results are `int64`), float arithmetic through shopspring/decimal (results
//! are `float64`: `addf 1.1 2.2` is 3.3, not 3.3000000000000003), `round`/`ceil`/`floor`,
//! `seq`, `until`, `untilStep`, and the conversions `int`, `int64`, `float64`, `atoi`,
//! `toDecimal`.

use ferroflux_gotemplate::{FuncError, Type, Value};
use rand::Rng;

use super::{Def, err, fixed, int, s, text, variadic};
use crate::conv::{parse_int, strval, to_float64, to_int64};

use Type::{Any, Int, String as Str};

const DIV_ZERO: &str = "runtime error: integer divide by zero";

pub(crate) fn defs() -> Vec<Def> {
    vec![
        fixed("atoi", &[Str], |a| {
            let v = match parse_int(s(&a[0]), 10) {
                Ok(i) | Err(Some(i)) => i,
                Err(None) => 0,
            };
            Ok(Value::Int(v))
        }),
        fixed("int64", &[Any], |a| Ok(Value::Int64(to_int64(&a[0])))),
        fixed("int", &[Any], |a| Ok(Value::Int(to_int64(&a[0])))),
        fixed("float64", &[Any], |a| Ok(Value::Float(to_float64(&a[0])))),
        variadic("seq", &[], Int, |a| {
            let p: Vec<i64> = a.iter().map(int).collect();
            text(seq(&p))
        }),
        fixed("toDecimal", &[Any], |a| {
            Ok(Value::Int64(parse_int(&strval(&a[0]), 8).unwrap_or(0)))
        }),
        fixed("until", &[Int], |a| {
            let n = int(&a[0]);
            Ok(ints(until_step(0, n, if n < 0 { -1 } else { 1 })))
        }),
        fixed("untilStep", &[Int, Int, Int], |a| {
            Ok(ints(until_step(int(&a[0]), int(&a[1]), int(&a[2]))))
        }),
        fixed("add1", &[Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
        }),
        variadic("add", &[], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
            ))
        }),
        fixed("sub", &[Any, Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
        fixed("div", &[Any, Any], |a| {
            let (x, y) = (to_int64(&a[0]), to_int64(&a[1]));
            if y == 0 {
                return Err(err(DIV_ZERO));
            }
            Ok(Value::Int64(x.wrapping_div(y)))
        }),
        fixed("mod", &[Any, Any], |a| {
            let (x, y) = (to_int64(&a[0]), to_int64(&a[1]));
            if y == 0 {
                return Err(err(DIV_ZERO));
            }
            Ok(Value::Int64(x.wrapping_rem(y)))
        }),
        variadic("mul", &[Any], Any, |a| {
            Ok(Value::Int64(
                a[1..]
                    .iter()
                    .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
            ))
        }),
        fixed("randInt", &[Int, Int], |a| {
            let (lo, hi) = (int(&a[0]), int(&a[1]));
            if hi - lo <= 0 {
                return Err(err("invalid argument to Intn"));
            }
            Ok(Value::Int(rand::thread_rng().gen_range(0..hi - lo) + lo))
        }),
        fixed("add1f", &[Any], |a| {
            decimal_op(&a[0], &[Value::Int(1)], Op::Add)
        }),
        variadic("addf", &[], Any, |a| {
            decimal_op(&Value::Float(0.0), a, Op::Add)
        }),
        variadic("subf", &[Any], Any, |a| decimal_op(&a[0], &a[1..], Op::Sub)),
        variadic("divf", &[Any], Any, |a| decimal_op(&a[0], &a[1..], Op::Div)),
        variadic("mulf", &[Any], Any, |a| decimal_op(&a[0], &a[1..], Op::Mul)),
        variadic("biggest", &[Any], Any, |a| {
            Ok(Value::Int64(extreme(a, true)))
        }),
        variadic("max", &[Any], Any, |a| Ok(Value::Int64(extreme(a, true)))),
        variadic("min", &[Any], Any, |a| Ok(Value::Int64(extreme(a, false)))),
        variadic("maxf", &[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |m, v| go_max(m, to_float64(v))),
            ))
        }),
        variadic("minf", &[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |m, v| go_min(m, to_float64(v))),
            ))
        }),
        fixed("ceil", &[Any], |a| {
            Ok(Value::Float(to_float64(&a[0]).ceil()))
        }),
        fixed("floor", &[Any], |a| {
            Ok(Value::Float(to_float64(&a[0]).floor()))
        }),
        variadic("round", &[Any, Int], Type::Float64, |a| {
            let round_on = a.get(2).map_or(0.5, to_float64);
            Ok(Value::Float(round(to_float64(&a[0]), int(&a[1]), round_on)))
        }),
    ]
}

fn ints(v: Vec<i64>) -> Value {
    crate::conv::int_slice(v)
}

fn extreme(a: &[Value], max: bool) -> i64 {
    a[1..].iter().fold(to_int64(&a[0]), |m, v| {
        let x = to_int64(v);
        if (max && x > m) || (!max && x < m) {
            x
        } else {
            m
        }
    })
}

/// Go's `math.Max`: NaN wins, and +0 is bigger than -0.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == 0.0 && b == 0.0 {
        return if a.is_sign_negative() { b } else { a };
    }
    a.max(b)
}

/// Go's `math.Min`: NaN wins, and -0 is smaller than +0.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == 0.0 && b == 0.0 {
        return if a.is_sign_negative() { a } else { b };
    }
    a.min(b)
}

/// Sprig's `round`: scale, compare the fraction with `round_on`, then ceil or floor.
pub(crate) fn round(val: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places as f64);
    let digit = pow * val;
    let frac = digit - digit.trunc();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    r / pow
}

/// Sprig's `untilStep`.
pub(crate) fn until_step(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return v;
        }
        let mut i = start;
        while i > stop {
            v.push(i);
            i += step;
        }
        return v;
    }
    if step <= 0 {
        return v;
    }
    let mut i = start;
    while i < stop {
        v.push(i);
        i += step;
    }
    v
}

/// Sprig's `seq`: like the Unix command, `seq last`, `seq first last`, `seq first step last`.
pub(crate) fn seq(p: &[i64]) -> String {
    let list = match *p {
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            until_step(1, end + inc, inc)
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(start, end + step, step)
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return String::new();
                }
            }
            until_step(start, end + inc, step)
        }
        _ => return String::new(),
    };
    list.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `m × 10^e`, as shopspring/decimal holds a float's shortest representation.
#[derive(Clone, Copy, Debug)]
struct Dec {
    m: i128,
    e: i32,
}

impl Dec {
    fn from_f64(f: f64) -> Result<Dec, FuncError> {
        if f.is_nan() {
            return Err(err("Cannot create a Decimal from NaN"));
        }
        if f.is_infinite() {
            return Err(err(format!(
                "Cannot create a Decimal from {}",
                if f > 0.0 { "+Inf" } else { "-Inf" }
            )));
        }
        // Rust's `{:e}` is the shortest text that reads back as the same float, as Go's 'e' -1.
        let text = format!("{f:e}");
        let (mant, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let frac_len = mant.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
        let digits: String = mant.chars().filter(|c| *c != '.').collect();
        let m: i128 = digits.parse().unwrap_or(0);
        Ok(Dec {
            m,
            e: exp - frac_len,
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.m, self.e).parse().unwrap_or(0.0)
    }

    fn as_f64_op(self) -> f64 {
        self.to_f64()
    }
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn apply(a: Dec, b: Dec, op: Op) -> Result<Dec, FuncError> {
    let fallback = |x: f64| Dec::from_f64(x);
    match op {
        Op::Add | Op::Sub => {
            let e = a.e.min(b.e);
            let scale = |d: Dec| pow10((d.e - e) as u32).and_then(|p| d.m.checked_mul(p));
            match (scale(a), scale(b)) {
                (Some(x), Some(y)) => {
                    let r = if matches!(op, Op::Add) {
                        x.checked_add(y)
                    } else {
                        x.checked_sub(y)
                    };
                    match r {
                        Some(m) => Ok(Dec { m, e }),
                        None => fallback(float(a, b, op)),
                    }
                }
                _ => fallback(float(a, b, op)),
            }
        }
        Op::Mul => match a.m.checked_mul(b.m) {
            Some(m) => Ok(Dec { m, e: a.e + b.e }),
            None => fallback(float(a, b, op)),
        },
        Op::Div => {
            if b.m == 0 {
                return Err(err("decimal division by 0"));
            }
            // Rounded half away from zero to 16 places after the point (DivisionPrecision).
            let k = a.e - b.e + 16;
            let (num, den) = if k >= 0 {
                (pow10(k as u32).and_then(|p| a.m.checked_mul(p)), Some(b.m))
            } else {
                (
                    Some(a.m),
                    pow10((-k) as u32).and_then(|p| b.m.checked_mul(p)),
                )
            };
            let (Some(num), Some(den)) = (num, den) else {
                return fallback(float(a, b, op));
            };
            let (q, r) = (num / den, num % den);
            let q = if 2 * r.abs() >= den.abs() {
                q + if (num < 0) != (den < 0) { -1 } else { 1 }
            } else {
                q
            };
            Ok(Dec { m: q, e: -16 })
        }
    }
}

fn float(a: Dec, b: Dec, op: Op) -> f64 {
    let (x, y) = (a.as_f64_op(), b.as_f64_op());
    match op {
        Op::Add => x + y,
        Op::Sub => x - y,
        Op::Mul => x * y,
        Op::Div => x / y,
    }
}

fn decimal_op(first: &Value, rest: &[Value], op: Op) -> Result<Value, FuncError> {
    let mut acc = Dec::from_f64(to_float64(first))?;
    for v in rest {
        acc = apply(acc, Dec::from_f64(to_float64(v))?, op)?;
    }
    Ok(Value::Float(acc.to_f64()))
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, render};
    use ferroflux_gotemplate::Value;

    fn f(x: f64) -> Value {
        Value::Float(x)
    }

    #[test]
    fn integer_arithmetic_is_int64() {
        assert_eq!(
            call("add", &[Value::Int(1), f(2.7), "3".into()]),
            Value::Int64(6)
        );
        assert_eq!(call("add1", &["41".into()]), Value::Int64(42));
        assert_eq!(
            call("sub", &[Value::Int(1), Value::Int(3)]),
            Value::Int64(-2)
        );
        assert_eq!(call("div", &[f(7.0), Value::Int(2)]), Value::Int64(3));
        assert_eq!(
            call("div", &[Value::Int(-7), Value::Int(2)]),
            Value::Int64(-3)
        );
        assert_eq!(
            call("mod", &[Value::Int(-7), Value::Int(3)]),
            Value::Int64(-1)
        );
        assert_eq!(
            call("mul", &[Value::Int(2), Value::Int(3), f(4.0)]),
            Value::Int64(24)
        );
        assert_eq!(
            call("max", &[Value::Int(1), f(5.0), Value::Int(3)]),
            Value::Int64(5)
        );
        assert_eq!(
            call("min", &[Value::Int(1), Value::Int(-5)]),
            Value::Int64(-5)
        );
        assert_eq!(
            call_err("div", &[Value::Int(1), Value::Int(0)]),
            "runtime error: integer divide by zero"
        );
        assert_eq!(call("int", &["0x10".into()]), Value::Int(16));
        assert_eq!(call("int64", &[f(3.9)]), Value::Int64(3));
        assert_eq!(call("float64", &["1.5".into()]), f(1.5));
        assert_eq!(call("atoi", &["12".into()]), Value::Int(12));
        assert_eq!(call("atoi", &["1.2".into()]), Value::Int(0));
        assert_eq!(call("toDecimal", &["0777".into()]), Value::Int64(511));
        assert_eq!(call("toDecimal", &["9".into()]), Value::Int64(0));
    }

    #[test]
    fn float_arithmetic_goes_through_decimals() {
        assert_eq!(call("addf", &[f(1.1), f(2.2)]), f(3.3));
        assert_eq!(call("addf", &[]), f(0.0));
        assert_eq!(call("add1f", &[f(1.1)]), f(2.1));
        assert_eq!(call("subf", &[f(0.3), f(0.1)]), f(0.2));
        assert_eq!(call("mulf", &[f(1.1), f(3.0)]), f(3.3));
        assert_eq!(call("divf", &[f(1.0), f(3.0)]), f(0.3333333333333333));
        assert_eq!(call("divf", &[f(2.0), f(3.0)]), f(0.6666666666666667));
        assert_eq!(call("divf", &[f(10.0), f(4.0), f(5.0)]), f(0.5));
        assert_eq!(call_err("divf", &[f(1.0), f(0.0)]), "decimal division by 0");
        assert_eq!(call("maxf", &[f(1.5), f(2.5), Value::Int(2)]), f(2.5));
        assert_eq!(call("minf", &[f(1.5), f(-2.5)]), f(-2.5));
    }

    #[test]
    fn rounding() {
        assert_eq!(call("round", &[f(123.555555), Value::Int(3)]), f(123.556));
        assert_eq!(
            call("round", &[f(123.55555), Value::Int(3), f(0.4)]),
            f(123.556)
        );
        assert_eq!(call("round", &[f(-2.5), Value::Int(0)]), f(-3.0));
        assert_eq!(call("round", &[f(2.5), Value::Int(0)]), f(3.0));
        assert_eq!(call("ceil", &[f(1.1)]), f(2.0));
        assert_eq!(call("floor", &["1.9".into()]), f(1.0));
    }

    #[test]
    fn sequences() {
        assert_eq!(render("until", &[Value::Int(3)]), "[0 1 2]");
        assert_eq!(render("until", &[Value::Int(-3)]), "[0 -1 -2]");
        assert_eq!(
            render("untilStep", &[Value::Int(0), Value::Int(10), Value::Int(4)]),
            "[0 4 8]"
        );
        assert_eq!(
            render("untilStep", &[Value::Int(3), Value::Int(0), Value::Int(1)]),
            "[]"
        );
        assert_eq!(render("seq", &[Value::Int(3)]), "1 2 3");
        assert_eq!(render("seq", &[Value::Int(0)]), "1 0");
        assert_eq!(
            render("seq", &[Value::Int(2), Value::Int(-2)]),
            "2 1 0 -1 -2"
        );
        assert_eq!(
            render("seq", &[Value::Int(0), Value::Int(2), Value::Int(10)]),
            "0 2 4 6 8 10"
        );
        assert_eq!(
            render("seq", &[Value::Int(0), Value::Int(-2), Value::Int(-5)]),
            "0 -2 -4"
        );
        assert_eq!(
            render("seq", &[Value::Int(0), Value::Int(2), Value::Int(-5)]),
            ""
        );
        assert_eq!(render("seq", &[]), "");
        let r = call("randInt", &[Value::Int(5), Value::Int(8)]);
        assert!(matches!(r, Value::Int(5..=7)));
    }
}
