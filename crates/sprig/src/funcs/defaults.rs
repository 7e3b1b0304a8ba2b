//! Sprig's defaults.go: `default`, `empty`, `coalesce`, `all`, `any`, `ternary`, the JSON
//! functions, and Sprig's `fail`.

use ferroflux_gotemplate::{FuncError, Type, Value};

use super::{Def, boolean, err, fixed, s, variadic};
use crate::conv::empty;
use crate::json::{self, Style};

use Type::{Any, Bool, String as Str};

const PLAIN: Style = Style {
    escape_html: true,
    indent: false,
};
const PRETTY: Style = Style {
    escape_html: true,
    indent: true,
};
const RAW: Style = Style {
    escape_html: false,
    indent: false,
};

fn to_json(v: &Value, style: Style) -> Result<Value, FuncError> {
    json::marshal(v, style).map(Value::from).map_err(err)
}

pub(crate) fn defs() -> Vec<Def> {
    vec![
        variadic("default", &[Any], Any, |a| {
            Ok(match a.get(1) {
                Some(given) if !empty(given) => given.clone(),
                _ => a[0].clone(),
            })
        }),
        fixed("empty", &[Any], |a| Ok(Value::Bool(empty(&a[0])))),
        variadic("coalesce", &[], Any, |a| {
            Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
        }),
        variadic("all", &[], Any, |a| {
            Ok(Value::Bool(a.iter().all(|v| !empty(v))))
        }),
        variadic("any", &[], Any, |a| {
            Ok(Value::Bool(a.iter().any(|v| !empty(v))))
        }),
        fixed("ternary", &[Any, Any, Bool], |a| {
            Ok(if boolean(&a[2]) {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
        fixed("fromJson", &[Str], |a| {
            Ok(json::unmarshal(s(&a[0])).unwrap_or(Value::Nil))
        }),
        fixed("mustFromJson", &[Str], |a| {
            json::unmarshal(s(&a[0])).map_err(err)
        }),
        fixed("toJson", &[Any], |a| {
            Ok(json::marshal(&a[0], PLAIN).map_or_else(|_| Value::from(""), Value::from))
        }),
        fixed("mustToJson", &[Any], |a| to_json(&a[0], PLAIN)),
        fixed("toPrettyJson", &[Any], |a| {
            Ok(json::marshal(&a[0], PRETTY).map_or_else(|_| Value::from(""), Value::from))
        }),
        fixed("mustToPrettyJson", &[Any], |a| to_json(&a[0], PRETTY)),
        // Sprig's toRawJson panics on an error where the others print "".
        fixed("toRawJson", &[Any], |a| to_json(&a[0], RAW)),
        fixed("mustToRawJson", &[Any], |a| to_json(&a[0], RAW)),
        fixed("fail", &[Str], |a| Err(err(s(&a[0])))),
    ]
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, list, render};
    use ferroflux_gotemplate::{Map, Value};

    #[test]
    fn defaults_and_emptiness() {
        assert_eq!(render("default", &["foo".into(), Value::Nil]), "foo");
        assert_eq!(render("default", &["foo".into()]), "foo");
        assert_eq!(render("default", &["foo".into(), "bar".into()]), "bar");
        assert_eq!(render("default", &["foo".into(), Value::Float(0.0)]), "foo");
        assert_eq!(
            render("default", &["foo".into(), Value::Bool(false)]),
            "foo"
        );
        assert_eq!(render("default", &["foo".into(), list(&[])]), "foo");
        assert_eq!(
            render("default", &["foo".into(), Value::Map(Map::new())]),
            "foo"
        );
        assert_eq!(render("empty", &[Value::Int64(0)]), "true");
        assert_eq!(render("empty", &["0".into()]), "false");
        assert_eq!(
            render(
                "coalesce",
                &[Value::Nil, "".into(), Value::Int(0), "x".into()]
            ),
            "x"
        );
        assert_eq!(call("coalesce", &[Value::Nil, "".into()]), Value::Nil);
        assert_eq!(render("all", &[Value::Int(1), "".into()]), "false");
        assert_eq!(render("all", &[]), "true");
        assert_eq!(render("any", &[Value::Int(0), "x".into()]), "true");
        assert_eq!(render("any", &[]), "false");
        assert_eq!(
            render("ternary", &["a".into(), "b".into(), Value::Bool(true)]),
            "a"
        );
        assert_eq!(
            render("ternary", &["a".into(), "b".into(), Value::Bool(false)]),
            "b"
        );
        assert_eq!(call_err("fail", &["boom".into()]), "boom");
    }

    #[test]
    fn json_functions() {
        let m = Map::new();
        m.insert("html", "<b>");
        let v = Value::Map(m);
        assert_eq!(
            render("toJson", std::slice::from_ref(&v)),
            r#"{"html":"\u003cb\u003e"}"#
        );
        assert_eq!(
            render("toRawJson", std::slice::from_ref(&v)),
            r#"{"html":"<b>"}"#
        );
        assert_eq!(
            render("toPrettyJson", std::slice::from_ref(&v)),
            "{\n  \"html\": \"\\u003cb\\u003e\"\n}"
        );
        assert_eq!(render("toJson", &[Value::Float(f64::NAN)]), "");
        assert_eq!(
            call_err("mustToJson", &[Value::Float(f64::INFINITY)]),
            "json: unsupported value: +Inf"
        );
        assert_eq!(render("fromJson", &["[1,2]".into()]), "[1 2]");
        assert_eq!(call("fromJson", &["nope".into()]), Value::Nil);
        assert_eq!(
            call_err("mustFromJson", &["nope".into()]),
            "invalid character 'o' in literal null (expecting 'u')"
        );
    }
}
