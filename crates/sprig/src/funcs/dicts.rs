//! Sprig's dict.go: `dict`, `get`, `set`, `unset`, `hasKey`, `pluck`, `keys`, `values`, `pick`,
//! `omit`, `dig`, `deepCopy`, and `merge`/`mergeOverwrite` with dario.cat/mergo v1's rules.
//!
//! `set`, `unset`, `merge` and `mergeOverwrite` change their first map in place, as Go's maps
//! are references. `keys` and `values` come in sorted key order where Go's order is random
//! (charts sort `keys` anyway; `values` has no order a chart can rely on).

use ferroflux_gotemplate::{FuncError, Map, Type, Value};

use super::{Def, err, fixed, s, strings_value, variadic};
use crate::conv::{empty, strval};

use Type::{Any, Map as MapT, String as Str};

fn map_or_nil(v: &Value) -> Option<&Map> {
    v.as_map()
}

pub(crate) fn defs() -> Vec<Def> {
    vec![
        variadic("dict", &[], Any, |a| {
            let m = Map::new();
            for pair in a.chunks(2) {
                let key = strval(&pair[0]);
                m.insert(key, pair.get(1).cloned().unwrap_or_else(|| Value::from("")));
            }
            Ok(Value::Map(m))
        }),
        fixed("get", &[MapT, Str], |a| {
            Ok(map_or_nil(&a[0])
                .and_then(|m| m.get(s(&a[1])))
                .unwrap_or_else(|| Value::from("")))
        }),
        fixed("set", &[MapT, Str, Any], |a| {
            let m = map_or_nil(&a[0]).ok_or_else(|| err("assignment to entry in nil map"))?;
            m.insert(s(&a[1]), a[2].clone());
            Ok(a[0].clone())
        }),
        fixed("unset", &[MapT, Str], |a| {
            if let Some(m) = map_or_nil(&a[0]) {
                m.remove(s(&a[1]));
            }
            Ok(a[0].clone())
        }),
        fixed("hasKey", &[MapT, Str], |a| {
            Ok(Value::Bool(
                map_or_nil(&a[0]).is_some_and(|m| m.contains_key(s(&a[1]))),
            ))
        }),
        variadic("pluck", &[Str], MapT, |a| {
            let key = s(&a[0]);
            Ok(Value::list(
                a[1..]
                    .iter()
                    .filter_map(|d| map_or_nil(d).and_then(|m| m.get(key)))
                    .collect(),
            ))
        }),
        variadic("keys", &[], MapT, |a| {
            Ok(strings_value(
                a.iter()
                    .filter_map(map_or_nil)
                    .flat_map(|m| m.keys())
                    .collect(),
            ))
        }),
        fixed("values", &[MapT], |a| {
            Ok(Value::list(map_or_nil(&a[0]).map_or_else(Vec::new, |m| {
                m.entries().into_iter().map(|(_, v)| v).collect()
            })))
        }),
        variadic("pick", &[MapT], Str, |a| {
            let out = Map::new();
            if let Some(m) = map_or_nil(&a[0]) {
                for k in &a[1..] {
                    if let Some(v) = m.get(s(k)) {
                        out.insert(s(k), v);
                    }
                }
            }
            Ok(Value::Map(out))
        }),
        variadic("omit", &[MapT], Str, |a| {
            let omit: Vec<&str> = a[1..].iter().map(s).collect();
            let out = Map::new();
            if let Some(m) = map_or_nil(&a[0]) {
                for (k, v) in m.entries() {
                    if !omit.contains(&k.as_str()) {
                        out.insert(k, v);
                    }
                }
            }
            Ok(Value::Map(out))
        }),
        variadic("merge", &[MapT], MapT, |a| merge_all(a, false)),
        variadic("mustMerge", &[MapT], MapT, |a| merge_all(a, false)),
        variadic("mergeOverwrite", &[MapT], MapT, |a| merge_all(a, true)),
        variadic("mustMergeOverwrite", &[MapT], MapT, |a| merge_all(a, true)),
        variadic("dig", &[], Any, dig),
        fixed("deepCopy", &[Any], |a| copy_checked(&a[0])),
        fixed("mustDeepCopy", &[Any], |a| copy_checked(&a[0])),
    ]
}

fn merge_all(a: &[Value], overwrite: bool) -> Result<Value, FuncError> {
    // A nil destination becomes a new map, as mergo makes one for Sprig's local variable.
    let dst = match &a[0] {
        Value::Map(m) => m.clone(),
        _ => Map::new(),
    };
    for src in &a[1..] {
        if let Value::Map(src) = src {
            merge_maps(&dst, src, overwrite);
        }
    }
    Ok(Value::Map(dst))
}

/// mergo's `deepMerge` of two `map[string]interface{}`: nested maps merge in place, a present
/// non-empty destination value wins unless `overwrite`, and with `overwrite` a nil source value
/// replaces the destination's.
pub(crate) fn merge_maps(dst: &Map, src: &Map, overwrite: bool) {
    if dst.ptr_eq(src) {
        return;
    }
    for (key, s) in src.entries() {
        let d = dst.get(&key);
        if s.is_nil() {
            if overwrite {
                dst.insert(key, Value::Nil);
            }
            continue;
        }
        if let (Value::Map(sm), Some(Value::Map(dm))) = (&s, &d) {
            merge_maps(dm, sm, overwrite);
        }
        // mergo's slice branch: with overwrite the source list replaces the destination's,
        // even when empty.
        let is_slice = matches!(s, Value::Bytes(_)) || crate::conv::slice_items(&s).is_some();
        if overwrite && is_slice {
            dst.insert(key, s);
            continue;
        }
        if let Some(d) = &d
            && !empty(d)
            && (is_slice || matches!((&s, d), (Value::Map(_), Value::Map(_))))
        {
            continue;
        }
        if overwrite || d.as_ref().is_none_or(empty) {
            dst.insert(key, s);
        }
    }
}

/// Sprig's `dig key… default dict`.
fn dig(a: &[Value]) -> Result<Value, FuncError> {
    if a.len() < 3 {
        return Err(err("dig needs at least three arguments"));
    }
    let assert_map = |v: &Value| -> Result<Map, FuncError> {
        v.as_map().cloned().ok_or_else(|| {
            err(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                if v.is_nil() {
                    "nil".to_string()
                } else {
                    v.type_name()
                }
            ))
        })
    };
    let mut dict = assert_map(&a[a.len() - 1])?;
    let default = &a[a.len() - 2];
    let keys = &a[..a.len() - 2];
    let keys: Vec<&str> = keys
        .iter()
        .map(|k| {
            k.as_str().ok_or_else(|| {
                err(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    if k.is_nil() {
                        "nil".to_string()
                    } else {
                        k.type_name()
                    }
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    for (i, k) in keys.iter().enumerate() {
        let Some(step) = dict.get(k) else {
            return Ok(default.clone());
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        dict = assert_map(&step)?;
    }
    Ok(default.clone())
}

/// copystructure panics on nil (it asks reflection for the type of nothing).
fn copy_checked(v: &Value) -> Result<Value, FuncError> {
    if v.is_nil() {
        return Err(err("reflect: call of reflect.Value.Type on zero Value"));
    }
    Ok(deep_copy(v))
}

/// copystructure's deep copy: new maps and lists all the way down; scalars and host objects
/// are values already.
pub(crate) fn deep_copy(v: &Value) -> Value {
    match v {
        Value::List(l) => Value::list(l.iter().map(deep_copy).collect()),
        Value::Map(m) => Value::Map(
            m.entries()
                .into_iter()
                .map(|(k, v)| (k, deep_copy(&v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, render};
    use ferroflux_gotemplate::{Map, Value};

    fn dict(pairs: &[(&str, Value)]) -> Value {
        let m = Map::new();
        for (k, v) in pairs {
            m.insert(*k, v.clone());
        }
        Value::Map(m)
    }

    #[test]
    fn dict_basics() {
        assert_eq!(
            render(
                "dict",
                &[
                    "a".into(),
                    Value::Int(1),
                    Value::Int(2),
                    "x".into(),
                    "odd".into()
                ]
            ),
            "map[2:x a:1 odd:]"
        );
        let d = dict(&[("a", Value::Int(1))]);
        assert_eq!(render("get", &[d.clone(), "a".into()]), "1");
        assert_eq!(render("get", &[d.clone(), "zz".into()]), "");
        call("set", &[d.clone(), "b".into(), Value::Int(2)]);
        assert_eq!(render("keys", std::slice::from_ref(&d)), "[a b]");
        call("unset", &[d.clone(), "a".into()]);
        assert_eq!(render("hasKey", &[d.clone(), "a".into()]), "false");
        assert_eq!(render("values", std::slice::from_ref(&d)), "[2]");
        let d2 = dict(&[
            ("a", Value::Int(1)),
            ("b", Value::Int(2)),
            ("c", Value::Int(3)),
        ]);
        assert_eq!(
            render("pick", &[d2.clone(), "a".into(), "c".into(), "z".into()]),
            "map[a:1 c:3]"
        );
        assert_eq!(render("omit", &[d2.clone(), "a".into()]), "map[b:2 c:3]");
        assert_eq!(
            render(
                "pluck",
                &[
                    "a".into(),
                    d2.clone(),
                    dict(&[("a", "x".into())]),
                    dict(&[])
                ]
            ),
            "[1 x]"
        );
        assert_eq!(
            call_err("set", &[Value::Nil, "a".into(), Value::Int(1)]),
            "assignment to entry in nil map"
        );
    }

    #[test]
    fn dig_walks_nested_maps() {
        let d = dict(&[
            ("a", dict(&[("b", dict(&[("c", "found".into())]))])),
            ("s", "x".into()),
        ]);
        assert_eq!(
            render(
                "dig",
                &["a".into(), "b".into(), "c".into(), "dflt".into(), d.clone()]
            ),
            "found"
        );
        assert_eq!(
            render(
                "dig",
                &["a".into(), "z".into(), "c".into(), "dflt".into(), d.clone()]
            ),
            "dflt"
        );
        assert_eq!(
            call_err("dig", &["s".into(), "c".into(), "dflt".into(), d.clone()]),
            "interface conversion: interface {} is string, not map[string]interface {}"
        );
        assert_eq!(
            call_err("dig", &["a".into(), d]),
            "dig needs at least three arguments"
        );
    }

    #[test]
    fn merge_follows_mergo() {
        let dst = dict(&[
            ("a", Value::Int(1)),
            ("empty", "".into()),
            ("f", Value::Bool(false)),
            ("list", Value::list(vec![Value::Int(1)])),
            ("nested", dict(&[("x", Value::Int(1))])),
        ]);
        let src = dict(&[
            ("a", Value::Int(2)),
            ("empty", "filled".into()),
            ("f", Value::Bool(true)),
            ("list", Value::list(vec![Value::Int(2)])),
            (
                "nested",
                dict(&[("x", Value::Int(2)), ("y", Value::Int(2))]),
            ),
            ("new", Value::Nil),
            ("added", "yes".into()),
        ]);
        let out = call("merge", &[dst.clone(), src.clone()]);
        assert_eq!(
            out.to_string(),
            "map[a:1 added:yes empty:filled f:true list:[1] nested:map[x:1 y:2]]"
        );
        // The destination itself changed.
        assert_eq!(dst.to_string(), out.to_string());

        let dst = dict(&[
            ("a", Value::Int(1)),
            ("keep", "k".into()),
            (
                "nested",
                dict(&[("x", Value::Int(1)), ("z", Value::Int(1))]),
            ),
        ]);
        let out = call("mergeOverwrite", &[dst, src]);
        assert_eq!(
            out.to_string(),
            "map[a:2 added:yes empty:filled f:true keep:k list:[2] nested:map[x:2 y:2 z:1] new:<nil>]"
        );
        assert_eq!(
            render("merge", &[Value::Nil, dict(&[("a", Value::Int(1))])]),
            "map[a:1]"
        );
    }

    #[test]
    fn deep_copy_is_independent() {
        let inner = dict(&[("x", Value::Int(1))]);
        let d = dict(&[("inner", inner.clone())]);
        let copy = call("deepCopy", std::slice::from_ref(&d));
        inner.as_map().unwrap().insert("x", Value::Int(2));
        assert_eq!(copy.to_string(), "map[inner:map[x:1]]");
        assert_eq!(d.to_string(), "map[inner:map[x:2]]");
    }
}
