//! Sprig's list.go: `list`, `append`/`push`, `prepend`, `first`, `rest`, `last`, `initial`,
//! `reverse`, `uniq`, `without`, `has`, `compact`, `slice`, `concat`, `chunk` and their `must`
//! forms. Sprig takes any Go slice by reflection; here that is a list or a `[]byte`. The plain
//! forms panic where the `must` forms return an error, and a template reports both the same
//! way, so both return the error here.

use ferroflux_gotemplate::{FuncError, Type, Value};

use super::{Def, err, fixed, int, variadic};
use crate::conv::{NIL_DEREF, deep_equal, empty, slice_items, to_int64};

use Type::{Any, Int};

/// The items of a slice argument, or Sprig's error `Cannot <what> on type <kind>` (`what`
/// includes Sprig's verb: `push on`, `find first on`, `chunk`).
fn items(v: &Value, what: &str) -> Result<Vec<Value>, FuncError> {
    if let Some(items) = slice_items(v) {
        return Ok(items);
    }
    match v {
        Value::Bytes(b) => Ok(b.iter().map(|x| Value::Int(i64::from(*x))).collect()),
        Value::Nil => Err(err(NIL_DEREF)),
        other => Err(err(format!("Cannot {what} type {}", other.kind_name()))),
    }
}

fn list(v: Vec<Value>) -> Result<Value, FuncError> {
    Ok(Value::list(v))
}

/// Registers a function under its plain and `must` names.
fn both(out: &mut Vec<Def>, name: &'static str, must: &'static str, d: fn(&'static str) -> Def) {
    out.push(d(name));
    out.push(d(must));
}

pub(crate) fn defs() -> Vec<Def> {
    let mut v = vec![
        variadic("list", &[], Any, |a| list(a.to_vec())),
        variadic("tuple", &[], Any, |a| list(a.to_vec())),
        variadic("concat", &[], Any, |a| {
            let mut out = Vec::new();
            for l in a {
                match l {
                    Value::Nil => return Err(err(NIL_DEREF)),
                    _ if slice_items(l).is_some() || matches!(l, Value::Bytes(_)) => {
                        out.extend(items(l, "")?)
                    }
                    other => {
                        return Err(err(format!(
                            "Cannot concat type {} as list",
                            other.kind_name()
                        )));
                    }
                }
            }
            // Go's nil slice for no lists prints as [] as well.
            list(out)
        }),
    ];
    for (name, must) in [("append", "mustAppend"), ("push", "mustPush")] {
        both(&mut v, name, must, |n| {
            fixed(n, &[Any, Any], |a| {
                let mut l = items(&a[0], "push on")?;
                l.push(a[1].clone());
                list(l)
            })
        });
    }
    both(&mut v, "prepend", "mustPrepend", |n| {
        fixed(n, &[Any, Any], |a| {
            let mut l = items(&a[0], "prepend on")?;
            l.insert(0, a[1].clone());
            list(l)
        })
    });
    both(&mut v, "first", "mustFirst", |n| {
        fixed(n, &[Any], |a| {
            Ok(items(&a[0], "find first on")?
                .into_iter()
                .next()
                .unwrap_or(Value::Nil))
        })
    });
    both(&mut v, "last", "mustLast", |n| {
        fixed(n, &[Any], |a| {
            Ok(items(&a[0], "find last on")?.pop().unwrap_or(Value::Nil))
        })
    });
    both(&mut v, "rest", "mustRest", |n| {
        fixed(n, &[Any], |a| {
            let l = items(&a[0], "find rest on")?;
            if l.is_empty() {
                // Sprig returns a nil []interface{} here.
                return list(vec![]);
            }
            list(l[1..].to_vec())
        })
    });
    both(&mut v, "initial", "mustInitial", |n| {
        fixed(n, &[Any], |a| {
            let mut l = items(&a[0], "find initial on")?;
            l.pop();
            list(l)
        })
    });
    both(&mut v, "reverse", "mustReverse", |n| {
        fixed(n, &[Any], |a| {
            let mut l = items(&a[0], "find reverse on")?;
            l.reverse();
            list(l)
        })
    });
    both(&mut v, "uniq", "mustUniq", |n| {
        fixed(n, &[Any], |a| {
            let mut out: Vec<Value> = Vec::new();
            for item in items(&a[0], "find uniq on")? {
                if !out.iter().any(|o| deep_equal(o, &item)) {
                    out.push(item);
                }
            }
            list(out)
        })
    });
    both(&mut v, "without", "mustWithout", |n| {
        variadic(n, &[Any], Any, |a| {
            let omit = &a[1..];
            list(
                items(&a[0], "find without on")?
                    .into_iter()
                    .filter(|i| !omit.iter().any(|o| deep_equal(o, i)))
                    .collect(),
            )
        })
    });
    both(&mut v, "has", "mustHas", |n| {
        fixed(n, &[Any, Any], |a| {
            if a[1].is_nil() {
                return Ok(Value::Bool(false));
            }
            Ok(Value::Bool(
                items(&a[1], "find has on")?
                    .iter()
                    .any(|i| deep_equal(&a[0], i)),
            ))
        })
    });
    both(&mut v, "compact", "mustCompact", |n| {
        fixed(n, &[Any], |a| {
            list(
                items(&a[0], "compact on")?
                    .into_iter()
                    .filter(|i| !empty(i))
                    .collect(),
            )
        })
    });
    both(&mut v, "slice", "mustSlice", |n| {
        variadic(n, &[Any], Any, |a| {
            let typed = matches!(&a[0], Value::Object(o) if o.kind_name() == "slice");
            let l = match &a[0] {
                Value::List(_) | Value::Bytes(_) => items(&a[0], "")?,
                _ if typed => items(&a[0], "")?,
                Value::Nil => return Err(err(NIL_DEREF)),
                other => {
                    return Err(err(format!(
                        "list should be type of slice or array but {}",
                        other.kind_name()
                    )));
                }
            };
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            let len = l.len() as i64;
            let start = a.get(1).map_or(0, to_int64);
            let end = a.get(2).map_or(len, to_int64);
            // Go's reflect.Value.Slice panics with these texts.
            if start < 0 || start > end {
                return Err(err("reflect.Value.Slice: slice index out of bounds"));
            }
            if end > len {
                return Err(err("reflect.Value.Slice: slice index out of bounds"));
            }
            let part = l[start as usize..end as usize].to_vec();
            // Go's reflect slicing keeps the slice's type ([]string stays []string).
            if let Value::Object(o) = &a[0]
                && typed
            {
                if o.type_name() == "[]int" {
                    return Ok(crate::conv::int_slice(
                        part.iter().map(super::int).collect(),
                    ));
                }
                return Ok(crate::conv::string_slice(
                    part.iter().map(|v| super::s(v).to_string()).collect(),
                ));
            }
            list(part)
        })
    });
    both(&mut v, "chunk", "mustChunk", |n| {
        fixed(n, &[Int, Any], |a| {
            let size = int(&a[0]);
            let l = items(&a[1], "chunk")?;
            // Sprig sizes its slices from floats; a size of 0 or less makes Go's make() panic.
            if size <= 0 {
                return Err(err("runtime error: makeslice: len out of range"));
            }
            list(
                l.chunks(size as usize)
                    .map(|c| Value::list(c.to_vec()))
                    .collect(),
            )
        })
    });
    v
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, list, render};
    use ferroflux_gotemplate::Value;

    #[test]
    fn list_functions() {
        let l = list(&["a", "b", "c"]);
        assert_eq!(render("first", std::slice::from_ref(&l)), "a");
        assert_eq!(render("last", std::slice::from_ref(&l)), "c");
        assert_eq!(render("rest", std::slice::from_ref(&l)), "[b c]");
        assert_eq!(render("initial", std::slice::from_ref(&l)), "[a b]");
        assert_eq!(render("reverse", std::slice::from_ref(&l)), "[c b a]");
        assert_eq!(render("append", &[l.clone(), "d".into()]), "[a b c d]");
        assert_eq!(render("prepend", &[l.clone(), "z".into()]), "[z a b c]");
        assert_eq!(
            render("concat", &[l.clone(), list(&["x"]), list(&[])]),
            "[a b c x]"
        );
        assert_eq!(
            render("without", &[l.clone(), "b".into(), "c".into()]),
            "[a]"
        );
        assert_eq!(render("has", &["b".into(), l.clone()]), "true");
        assert_eq!(render("has", &["b".into(), Value::Nil]), "false");
        assert_eq!(render("slice", &[l.clone(), Value::Int(1)]), "[b c]");
        assert_eq!(
            render("slice", &[l.clone(), Value::Int(1), Value::Int(2)]),
            "[b]"
        );
        assert_eq!(render("chunk", &[Value::Int(2), l.clone()]), "[[a b] [c]]");
        assert_eq!(render("first", &[list(&[])]), "<nil>");
        assert_eq!(
            render(
                "uniq",
                &[Value::list(vec![
                    Value::Int(1),
                    Value::Int(1),
                    Value::Float(1.0),
                    Value::Int64(1)
                ])]
            ),
            "[1 1 1]"
        );
        assert_eq!(
            render(
                "compact",
                &[Value::list(vec![
                    Value::Int(0),
                    "".into(),
                    "x".into(),
                    Value::Nil,
                    Value::Bool(false)
                ])]
            ),
            "[x]"
        );
    }

    #[test]
    fn has_is_type_strict_like_reflect_deep_equal() {
        let floats = Value::list(vec![Value::Float(1.0), Value::Float(2.0)]);
        assert_eq!(
            call("has", &[Value::Int(1), floats.clone()]),
            Value::Bool(false)
        );
        assert_eq!(call("has", &[Value::Float(1.0), floats]), Value::Bool(true));
    }

    #[test]
    fn errors_name_the_kind() {
        assert_eq!(
            call_err("first", &["abc".into()]),
            "Cannot find first on type string"
        );
        assert_eq!(
            call_err("mustPush", &[Value::Int(1), "x".into()]),
            "Cannot push on type int"
        );
        assert_eq!(
            call_err("concat", &["x".into()]),
            "Cannot concat type string as list"
        );
        assert_eq!(
            call_err("first", &[Value::Nil]),
            "runtime error: invalid memory address or nil pointer dereference"
        );
        assert_eq!(
            call_err("slice", &["x".into()]),
            "list should be type of slice or array but string"
        );
    }
}
