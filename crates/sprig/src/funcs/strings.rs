//! Sprig's strings.go and regex.go, and the string entries of its function map
//! (`trim`, `upper`, `contains`, `repeat`, `splitList`, …).

use ferroflux_gotemplate::{FuncError, Type, Value, fmt, gostr};

use super::{Def, err, fixed, int, s, strings_value, text, variadic};
use crate::conv::{NIL_DEREF, strval};
use crate::text::{self as t, Alphabet};
use crate::{encoding, gore};

use Type::{Any, Int, String as Str};

pub(crate) fn defs() -> Vec<Def> {
    vec![
        fixed("abbrev", &[Int, Str], |a| {
            text(t::abbrev(int(&a[0]), s(&a[1])))
        }),
        fixed("abbrevboth", &[Int, Int, Str], |a| {
            text(t::abbrevboth(int(&a[0]), int(&a[1]), s(&a[2])))
        }),
        fixed("trunc", &[Int, Str], |a| {
            text(t::trunc(int(&a[0]), s(&a[1])))
        }),
        fixed("trim", &[Str], |a| text(t::trim_space(s(&a[0])))),
        fixed("upper", &[Str], |a| text(t::go_upper(s(&a[0])))),
        fixed("lower", &[Str], |a| text(t::go_lower(s(&a[0])))),
        fixed("title", &[Str], |a| text(t::title(s(&a[0])))),
        fixed("untitle", &[Str], |a| text(t::untitle(s(&a[0])))),
        fixed("substr", &[Int, Int, Str], |a| {
            t::substr(int(&a[0]), int(&a[1]), s(&a[2]))
                .map(Value::from)
                .map_err(err)
        }),
        fixed("repeat", &[Int, Str], |a| {
            t::repeat(int(&a[0]), s(&a[1]))
                .map(Value::from)
                .map_err(err)
        }),
        fixed("trimall", &[Str, Str], |a| {
            text(t::trim_all(s(&a[0]), s(&a[1])))
        }),
        fixed("trimAll", &[Str, Str], |a| {
            text(t::trim_all(s(&a[0]), s(&a[1])))
        }),
        fixed("trimSuffix", &[Str, Str], |a| {
            text(s(&a[1]).strip_suffix(s(&a[0])).unwrap_or(s(&a[1])))
        }),
        fixed("trimPrefix", &[Str, Str], |a| {
            text(s(&a[1]).strip_prefix(s(&a[0])).unwrap_or(s(&a[1])))
        }),
        fixed("nospace", &[Str], |a| text(t::nospace(s(&a[0])))),
        fixed("initials", &[Str], |a| text(t::initials(s(&a[0])))),
        fixed("randAlphaNum", &[Int], |a| {
            text(t::random(int(&a[0]), Alphabet::AlphaNum))
        }),
        fixed("randAlpha", &[Int], |a| {
            text(t::random(int(&a[0]), Alphabet::Alpha))
        }),
        fixed("randAscii", &[Int], |a| {
            text(t::random(int(&a[0]), Alphabet::Ascii))
        }),
        fixed("randNumeric", &[Int], |a| {
            text(t::random(int(&a[0]), Alphabet::Numeric))
        }),
        fixed("swapcase", &[Str], |a| text(t::swapcase(s(&a[0])))),
        fixed("shuffle", &[Str], |a| text(t::shuffle(s(&a[0])))),
        fixed("snakecase", &[Str], |a| {
            text(t::lower_case_words(s(&a[0]), '_'))
        }),
        fixed("camelcase", &[Str], |a| text(t::pascal_case(s(&a[0])))),
        fixed("kebabcase", &[Str], |a| {
            text(t::lower_case_words(s(&a[0]), '-'))
        }),
        fixed("wrap", &[Int, Str], |a| {
            text(t::wrap_custom(s(&a[1]), int(&a[0]), "\n", false))
        }),
        fixed("wrapWith", &[Int, Str, Str], |a| {
            text(t::wrap_custom(s(&a[2]), int(&a[0]), s(&a[1]), true))
        }),
        fixed("contains", &[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).contains(s(&a[0]))))
        }),
        fixed("hasPrefix", &[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).starts_with(s(&a[0]))))
        }),
        fixed("hasSuffix", &[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).ends_with(s(&a[0]))))
        }),
        variadic("quote", &[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| fmt::quote(&strval(v)))
                .collect();
            text(parts.join(" "))
        }),
        variadic("squote", &[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| format!("'{}'", fmt::sprint(std::slice::from_ref(v))))
                .collect();
            text(parts.join(" "))
        }),
        variadic("cat", &[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| fmt::sprint(std::slice::from_ref(v)))
                .collect();
            text(parts.join(" "))
        }),
        fixed("indent", &[Int, Str], |a| {
            text(t::indent(int(&a[0]), s(&a[1])))
        }),
        fixed("nindent", &[Int, Str], |a| {
            text(format!("\n{}", t::indent(int(&a[0]), s(&a[1]))))
        }),
        fixed("replace", &[Str, Str, Str], |a| {
            text(s(&a[2]).replace(s(&a[0]), s(&a[1])))
        }),
        fixed("plural", &[Str, Str, Int], |a| {
            text(if int(&a[2]) == 1 { s(&a[0]) } else { s(&a[1]) })
        }),
        fixed("toString", &[Any], |a| text(strval(&a[0]))),
        fixed("split", &[Str, Str], |a| {
            Ok(indexed(t::split(s(&a[1]), s(&a[0]))))
        }),
        fixed("splitList", &[Str, Str], |a| {
            Ok(strings_value(t::split(s(&a[1]), s(&a[0]))))
        }),
        fixed("splitn", &[Str, Int, Str], |a| {
            Ok(indexed(t::splitn(s(&a[2]), s(&a[0]), int(&a[1]))))
        }),
        fixed("toStrings", &[Any], |a| Ok(strings_value(strslice(&a[0])))),
        fixed("join", &[Str, Any], |a| {
            text(strslice(&a[1]).join(s(&a[0])))
        }),
        fixed("sortAlpha", &[Any], |a| {
            let mut items = match &a[0] {
                Value::List(_) | Value::Bytes(_) => strslice(&a[0]),
                other if crate::conv::slice_items(other).is_some() => strslice(other),
                other => vec![strval(other)],
            };
            // Go's sort.Strings orders by bytes (escaped bytes included, see gostr).
            items.sort_by(|x, y| gostr::to_bytes(x).cmp(&gostr::to_bytes(y)));
            Ok(strings_value(items))
        }),
        fixed("b64enc", &[Str], |a| {
            text(encoding::b64enc(&gostr::to_bytes(s(&a[0]))))
        }),
        fixed("b64dec", &[Str], |a| text(encoding::b64dec(s(&a[0])))),
        fixed("b32enc", &[Str], |a| {
            text(encoding::b32enc(&gostr::to_bytes(s(&a[0]))))
        }),
        fixed("b32dec", &[Str], |a| text(encoding::b32dec(s(&a[0])))),
        // Regular expressions: the plain forms panic on a bad pattern in Go (MustCompile), which a
        // template reports as an error too; only `regexMatch` swallows it.
        fixed("regexMatch", &[Str, Str], |a| {
            Ok(Value::Bool(
                gore::compile(s(&a[0])).is_ok_and(|re| re.is_match(s(&a[1]))),
            ))
        }),
        fixed("mustRegexMatch", &[Str, Str], |a| {
            Ok(Value::Bool(re(&a[0], false)?.is_match(s(&a[1]))))
        }),
        fixed("regexFindAll", &[Str, Str, Int], |a| {
            Ok(strings_value(gore::find_all(
                &re(&a[0], true)?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
        fixed("mustRegexFindAll", &[Str, Str, Int], |a| {
            Ok(strings_value(gore::find_all(
                &re(&a[0], false)?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
        fixed("regexFind", &[Str, Str], |a| {
            text(re(&a[0], true)?.find(s(&a[1])).map_or("", |m| m.as_str()))
        }),
        fixed("mustRegexFind", &[Str, Str], |a| {
            text(re(&a[0], false)?.find(s(&a[1])).map_or("", |m| m.as_str()))
        }),
        fixed("regexReplaceAll", &[Str, Str, Str], |a| {
            text(re(&a[0], true)?.replace_all(s(&a[1]), s(&a[2])))
        }),
        fixed("mustRegexReplaceAll", &[Str, Str, Str], |a| {
            text(re(&a[0], false)?.replace_all(s(&a[1]), s(&a[2])))
        }),
        fixed("regexReplaceAllLiteral", &[Str, Str, Str], |a| {
            text(re(&a[0], true)?.replace_all(s(&a[1]), regex::NoExpand(s(&a[2]))))
        }),
        fixed("mustRegexReplaceAllLiteral", &[Str, Str, Str], |a| {
            text(re(&a[0], false)?.replace_all(s(&a[1]), regex::NoExpand(s(&a[2]))))
        }),
        fixed("regexSplit", &[Str, Str, Int], |a| {
            Ok(strings_value(gore::split(
                &re(&a[0], true)?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
        fixed("mustRegexSplit", &[Str, Str, Int], |a| {
            Ok(strings_value(gore::split(
                &re(&a[0], false)?,
                s(&a[1]),
                int(&a[2]),
            )))
        }),
        fixed("regexQuoteMeta", &[Str], |a| {
            text(gore::quote_meta(s(&a[0])))
        }),
    ]
}

/// Compiles a pattern; `must_compile` gives Go's `regexp.MustCompile` panic text.
fn re(pattern: &Value, must_compile: bool) -> Result<regex::Regex, FuncError> {
    gore::compile(s(pattern)).map_err(|e| {
        if must_compile {
            err(format!(
                "regexp: Compile({}): {e}",
                gore::quote_for_panic(s(pattern))
            ))
        } else {
            err(e)
        }
    })
}

/// Sprig's `split`/`splitn` result: a map from `_0`, `_1`, … to the parts.
fn indexed(parts: Vec<String>) -> Value {
    let m = ferroflux_gotemplate::Map::new();
    for (i, p) in parts.into_iter().enumerate() {
        m.insert(format!("_{i}"), p);
    }
    Value::Map(m)
}

/// Sprig's `strslice`: a list's non-nil items as strings, nil as nothing, a scalar as itself.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    if let Some(items) = crate::conv::slice_items(v) {
        return items.iter().filter(|i| !i.is_nil()).map(strval).collect();
    }
    match v {
        Value::Nil => Vec::new(),
        Value::Bytes(b) => b.iter().map(|x| x.to_string()).collect(),
        other => vec![strval(other)],
    }
}

/// The error Go raises for Sprig's reflection on a nil value.
#[allow(dead_code)]
pub(crate) fn nil_deref() -> FuncError {
    err(NIL_DEREF)
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, list, render};
    use ferroflux_gotemplate::Value;

    #[test]
    fn string_functions() {
        assert_eq!(render("trim", &["  x  ".into()]), "x");
        assert_eq!(render("upper", &["abc".into()]), "ABC");
        assert_eq!(render("title", &["hello world".into()]), "Hello World");
        assert_eq!(
            render("substr", &[Value::Int(1), Value::Int(3), "abcd".into()]),
            "bc"
        );
        assert_eq!(render("repeat", &[Value::Int(3), "ab".into()]), "ababab");
        assert_eq!(render("trimAll", &["$".into(), "$5.00$".into()]), "5.00");
        assert_eq!(render("trimSuffix", &["-".into(), "a-".into()]), "a");
        assert_eq!(render("trimPrefix", &["-".into(), "-a".into()]), "a");
        assert_eq!(render("contains", &["cat".into(), "catch".into()]), "true");
        assert_eq!(render("hasPrefix", &["cat".into(), "catch".into()]), "true");
        assert_eq!(
            render("hasSuffix", &["cat".into(), "catch".into()]),
            "false"
        );
        assert_eq!(
            render("replace", &[" ".into(), "-".into(), "a b c".into()]),
            "a-b-c"
        );
        assert_eq!(
            render("plural", &["one".into(), "many".into(), Value::Int(1)]),
            "one"
        );
        assert_eq!(
            render("plural", &["one".into(), "many".into(), Value::Int(2)]),
            "many"
        );
        assert_eq!(
            render("nindent", &[Value::Int(2), "a\nb".into()]),
            "\n  a\n  b"
        );
        assert_eq!(render("camelcase", &["http_server".into()]), "HttpServer");
        assert_eq!(render("snakecase", &["FirstName".into()]), "first_name");
        assert_eq!(render("kebabcase", &["FirstName".into()]), "first-name");
        assert_eq!(render("swapcase", &["Hello".into()]), "hELLO");
        assert_eq!(
            render(
                "wrapWith",
                &[Value::Int(5), "\t".into(), "Hello World".into()]
            ),
            "Hello\tWorld"
        );
        assert_eq!(
            call_err("repeat", &[Value::Int(-1), "x".into()]),
            "strings: negative Repeat count"
        );
    }

    #[test]
    fn quoting_and_joining() {
        assert_eq!(
            render(
                "quote",
                &["a\"b".into(), Value::Nil, Value::Float(1.5), Value::Int(2)]
            ),
            r#""a\"b" "1.5" "2""#
        );
        assert_eq!(
            render("squote", &["a".into(), Value::Float(1e6)]),
            "'a' '1e+06'"
        );
        assert_eq!(
            render(
                "cat",
                &["a".into(), Value::Nil, Value::Int(1), list(&["x", "y"])]
            ),
            "a 1 [x y]"
        );
        assert_eq!(render("join", &["-".into(), list(&["a", "b"])]), "a-b");
        assert_eq!(
            render(
                "join",
                &[
                    ",".into(),
                    Value::list(vec![Value::Int(1), Value::Nil, Value::Bool(true)])
                ]
            ),
            "1,true"
        );
        assert_eq!(render("join", &[",".into(), "abc".into()]), "abc");
        assert_eq!(render("sortAlpha", &[list(&["b", "c", "a"])]), "[a b c]");
        assert_eq!(render("sortAlpha", &[Value::Nil]), "[<nil>]");
        assert_eq!(
            render(
                "toStrings",
                &[Value::list(vec![Value::Int(1), Value::Float(2.5)])]
            ),
            "[1 2.5]"
        );
        assert_eq!(render("toString", &[Value::Float(1e21)]), "1e+21");
    }

    #[test]
    fn splits() {
        assert_eq!(
            render("split", &["$".into(), "foo$bar$baz".into()]),
            "map[_0:foo _1:bar _2:baz]"
        );
        assert_eq!(
            render("splitList", &["$".into(), "foo$bar".into()]),
            "[foo bar]"
        );
        assert_eq!(
            render("splitn", &["$".into(), Value::Int(2), "foo$bar$baz".into()]),
            "map[_0:foo _1:bar$baz]"
        );
    }

    #[test]
    fn regexes() {
        assert_eq!(
            render("regexMatch", &["^[a-z]+$".into(), "abc".into()]),
            "true"
        );
        assert_eq!(render("regexMatch", &["(".into(), "abc".into()]), "false");
        assert!(
            call_err("mustRegexMatch", &["(".into(), "abc".into()])
                .starts_with("error parsing regexp: ")
        );
        assert!(
            call_err("regexFind", &["(".into(), "abc".into()])
                .starts_with("regexp: Compile(`(`): error parsing regexp: ")
        );
        assert_eq!(
            render(
                "regexFindAll",
                &["[2,4,6,8]".into(), "123456789".into(), Value::Int(-1)]
            ),
            "[2 4 6 8]"
        );
        assert_eq!(
            render(
                "regexFindAll",
                &["[2,4,6,8]".into(), "123456789".into(), Value::Int(2)]
            ),
            "[2 4]"
        );
        assert_eq!(
            render("regexFind", &["[a-zA-Z][1-9]".into(), "abcd1234".into()]),
            "d1"
        );
        assert_eq!(
            render(
                "regexReplaceAll",
                &["a(x*)b".into(), "-ab-axxb-".into(), "${1}W".into()]
            ),
            "-W-xxW-"
        );
        assert_eq!(
            render(
                "regexReplaceAllLiteral",
                &["a(x*)b".into(), "-ab-axxb-".into(), "${1}".into()]
            ),
            "-${1}-${1}-"
        );
        assert_eq!(
            render("regexSplit", &["z+".into(), "pizza".into(), Value::Int(-1)]),
            "[pi a]"
        );
        assert_eq!(render("regexQuoteMeta", &["1.2.3".into()]), "1\\.2\\.3");
    }

    #[test]
    fn encodings() {
        assert_eq!(render("b64enc", &["hello".into()]), "aGVsbG8=");
        assert_eq!(render("b64dec", &["aGVsbG8=".into()]), "hello");
        assert_eq!(
            render("b64dec", &["!".into()]),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(render("b32enc", &["hello".into()]), "NBSWY3DP");
        assert_eq!(render("b32dec", &["NBSWY3DP".into()]), "hello");
        let _ = call("randAlphaNum", &[Value::Int(3)]);
    }
}
