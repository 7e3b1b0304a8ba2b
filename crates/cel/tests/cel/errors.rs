//! Bad inputs and the messages users see: syntax errors with positions, unknown functions,
//! wrong types, missing keys, overflows, deep nesting.

use super::*;
use ferroflux_cel::Expression;
use serde_json::json;

fn parse_error(src: &str) -> String {
    match Expression::parse(src) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{src}: expected a parse error"),
    }
}

fn eval_error(src: &str) -> String {
    let v = vars(json!({"obj": {"a": 1, "s": "x", "list": [1]}}));
    let prefix = format!("failed to evaluate the CEL expression '{src}': ");
    let e = error(src, &v);
    e.strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{src}: not an evaluation error: {e}"))
        .to_string()
}

#[test]
fn syntax_errors_name_line_and_column() {
    let cases = [
        ("foo.", "1:5: expected a field name, found end of input"),
        ("a.in", "1:3: expected a field name, found 'in'"),
        ("a.`b-c`", "1:3: unsupported syntax: '`'"),
        ("namespace == 'x'", "1:1: reserved identifier 'namespace'"),
        ("(1 + 2))", "1:8: unexpected ')'"),
        ("status.phase == ", "1:17: unexpected end of input"),
        ("1 +\n  * 2", "2:3: unexpected '*'"),
        ("a.b()", "1:3: unknown function 'b'"),
        ("a.size(", "1:8: unexpected end of input"),
        ("'unterminated", "1:1: unterminated string literal"),
        ("'bad \\q escape'", "1:6: invalid escape sequence '\\q'"),
        ("a = b", "1:3: unexpected character '='"),
        ("a # b", "1:3: unexpected character '#'"),
        (
            "9223372036854775808",
            "1:1: invalid int literal '9223372036854775808'",
        ),
        (
            "99999999999999999999",
            "1:1: invalid int literal '99999999999999999999'",
        ),
        ("[1, 2", "1:6: expected ']', found end of input"),
        ("{'a' 1}", "1:6: expected ':', found '1'"),
        ("x ? 1", "1:6: expected ':', found end of input"),
        ("if", "1:1: reserved identifier 'if'"),
        (
            "has(a)",
            "1:1: invalid argument to has() macro: it must be a field selection",
        ),
        (
            "[1].all(1, true)",
            "1:5: all() macro: the first argument must be a simple name",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(
            parse_error(src),
            format!("failed to parse the CEL expression '{src}': {want}"),
            "{src}"
        );
    }
}

#[test]
fn unknown_and_unsupported_are_refused_at_parse_time() {
    let cases = [
        ("foo(1)", "1:1: unknown function 'foo'"),
        ("'a'.format([1])", "1:5: unknown function 'format'"),
        ("math.greatest(1, 2)", "1:6: unknown function 'greatest'"),
        (
            "strings.quote('a')",
            "1:9: unknown function 'strings.quote'",
        ),
        ("x.all(k, v, k == v)", "1:3: unknown function 'all'"),
        (
            "Msg{a: 1}",
            "1:1: unsupported: message construction 'Msg{...}'",
        ),
        (".a", "1:1: unsupported: leading '.' (root-qualified names)"),
    ];
    for (src, want) in cases {
        assert_eq!(
            parse_error(src),
            format!("failed to parse the CEL expression '{src}': {want}"),
            "{src}"
        );
    }
}

#[test]
fn evaluation_errors() {
    let cases = [
        ("obj.zzz", "no such key: zzz"),
        ("obj['zzz']", "no such key: zzz"),
        ("missing", "no such attribute(s): missing"),
        ("missing.a.b", "no such attribute(s): missing.a.b"),
        ("missing[0]", "no such attribute(s): missing"),
        ("obj.list[3]", "index '3' out of range in list size '1'"),
        (
            "obj.s.x",
            "no such overload: field selection '.x' on string",
        ),
        ("has(obj.s.x)", "no such overload: has() of '.x' on string"),
        ("obj.list['a']", "unsupported index type 'string' in list"),
        ("'abc'.indexOf('a', -1)", "index out of range: -1"),
        ("'abc'.substring(4)", "index out of range: 4"),
        ("'abc'.substring(-1, 2)", "index out of range: -1"),
        ("1 / 0", "division by zero"),
        ("1 % 0", "modulus by zero"),
        ("9223372036854775807 + 1", "integer overflow"),
        ("-9223372036854775808 - 1", "integer overflow"),
        ("-(-9223372036854775808)", "integer overflow"),
        ("0u - 1u", "unsigned integer overflow"),
        ("1 + 1.0", "no such overload: _+_(int, double)"),
        ("1 + 'a'", "no such overload: _+_(int, string)"),
        ("'a' < 1", "no such overload: _<_(string, int)"),
        ("!1", "no such overload: !_(int)"),
        ("size(1)", "no such overload: size(int)"),
        (
            "'a'.startsWith(1)",
            "no such overload: startsWith(string, int)",
        ),
        (
            "obj.a.contains('x')",
            "no such overload: contains(int, string)",
        ),
        ("1 ? 2 : 3", "no such overload: _?_:_(int)"),
        ("1 in 2", "no such overload: @in(int, int)"),
        ("obj.list.all(x, x)", "no such overload: all(int)"),
        (
            "obj.s.all(x, true)",
            "expression of type 'string' cannot be range of a comprehension (must be list or map)",
        ),
        ("obj.zzz && true", "no such key: zzz"),
        ("true && obj.zzz", "no such key: zzz"),
        ("obj.zzz || obj.yyy", "no such key: zzz"),
        ("1 && true", "no such overload: _&&_(int, bool)"),
        ("[0, 1].exists_one(x, 1 / x == 1)", "division by zero"),
        ("[0, 1].filter(x, 1 / x == 1)", "division by zero"),
        ("[1, 0].all(x, 1 / x > 0)", "division by zero"),
        ("int('x')", "cannot convert 'x' to int"),
        ("int(1e100)", "range error converting 1e+100 to int"),
        ("uint(-1)", "range error converting -1 to uint"),
        (
            "'a'.matches('(')",
            "invalid regular expression '(': regex parse error:\n    (\n    ^\nerror: unclosed group",
        ),
        (
            "'abc'.substring(2, 1)",
            "invalid substring range. start: 2, end: 1",
        ),
        ("'abc'.charAt(4)", "index out of range: 4"),
        ("duration('1x')", "invalid duration '1x': unknown unit 'x'"),
        ("duration('5')", "invalid duration '5': missing unit"),
        ("optional.none().value()", "optional.none() dereference"),
        ("{'a': 1, 'a': 2}", "Failed with repeated key: a"),
        ("{1.5: 1}", "unsupported key type: double"),
        (
            "timestamp('2024-01-01T00:00:00Z').getHours('Europe/Paris')",
            "unsupported: time zone 'Europe/Paris' (only UTC)",
        ),
        (
            "string(b'\\xff')",
            "invalid UTF-8 in bytes, cannot convert to string",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(eval_error(src), want, "{src}");
    }
    assert!(eval_error("timestamp('yesterday')").starts_with("invalid timestamp 'yesterday'"));
}

#[test]
fn non_bool_result_for_a_health_check() {
    for src in ["status", "status.phase", "1", "null"] {
        let e = Expression::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let v = vars(json!({"status": {"phase": "Running"}}));
        assert_eq!(
            e.evaluate_bool(&v).map_err(|e| e.to_string()),
            Err(format!(
                "failed to evaluate CEL expression as boolean: '{src}'"
            ))
        );
    }
}

#[test]
fn deep_nesting_is_a_parse_error_not_a_stack_overflow() {
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(
        parse_error(&deep).contains("1:101: expression nested deeper than 100 levels"),
        "{}",
        parse_error(&deep).chars().take(200).collect::<String>()
    );
    let brackets = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(parse_error(&brackets).contains("expression nested deeper than 100 levels"));
    let negs = format!("{}1", "-".repeat(10_000));
    assert!(parse_error(&negs).contains("expression nested deeper than 100 levels"));
    let nots = format!("{}true", "!".repeat(10_000));
    assert!(parse_error(&nots).contains("expression nested deeper than 100 levels"));
    let sum = vec!["1"; 10_000].join(" + ");
    assert!(parse_error(&sum).contains("expression nested deeper than 100 levels"));
    let fields = format!("a{}", ".b".repeat(10_000));
    assert!(parse_error(&fields).contains("expression nested deeper than 100 levels"));
    // Long && / || chains are balanced: 10,000 terms parse and evaluate.
    let chain = vec!["x == 1"; 10_000].join(" && ");
    assert_eq!(eval_json(&chain, &vars(json!({"x": 1}))), json!(true));
    let chain = vec!["x == 2"; 10_000].join(" || ");
    assert_eq!(eval_json(&chain, &vars(json!({"x": 1}))), json!(false));
    // Just under the bound evaluates (on a test thread's default stack).
    let ok = format!("{}1{}", "(".repeat(90), ")".repeat(90));
    assert_eq!(eval_json(&ok, &none()), json!(1));
    let ok = format!("a{}", ".b".repeat(98));
    let mut obj = json!(1);
    for _ in 0..98 {
        obj = json!({"b": obj});
    }
    assert_eq!(eval_json(&ok, &vars(json!({"a": obj}))), json!(1));
    let ok = format!("{}1", "-".repeat(98));
    assert_eq!(eval_json(&ok, &none()), json!(1));
    let ok = format!("{}1{}", "[".repeat(98), "]".repeat(98));
    assert!(matches!(eval(&ok, &none()), Value::List(_)));
}

#[test]
fn runaway_evaluation_is_cut_off() {
    // 100^4 = 10^8 inner evaluations: stopped by the step budget, not run to the end.
    let l = format!("[{}]", vec!["1"; 100].join(","));
    let src = format!("{l}.all(a, {l}.all(b, {l}.all(c, {l}.all(d, a == d))))");
    let e = error(&src, &none());
    assert!(
        e.ends_with("operation cancelled: evaluation exceeded 1000000 steps"),
        "{e}"
    );
    // ... and the budget is not absorbed by `||`.
    let src2 =
        format!("{l}.exists(a, {l}.exists(b, {l}.exists(c, {l}.exists(d, a == 2)))) || true");
    let e = error(&src2, &none());
    assert!(
        e.ends_with("operation cancelled: evaluation exceeded 1000000 steps"),
        "{e}"
    );
}
