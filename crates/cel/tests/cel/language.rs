//! The language table: each expression with the value cel-go gives for it.

use super::*;
use serde_json::json;

fn data() -> Map<String, Json> {
    vars(json!({
        "obj": {"a": 1, "b": "two", "list": [1, 2, 3], "nested": {"k": true}, "nil": null, "f": 2.5},
        "big": 18446744073709551615u64,
        "items": [{"n": 1}, {"n": 2}, {"n": 3}]
    }))
}

fn table(cases: &[(&str, Json)]) {
    let v = data();
    for (src, want) in cases {
        assert_eq!(&eval_json(src, &v), want, "{src}");
    }
}

#[test]
fn literals() {
    table(&[
        ("42", json!(42)),
        ("-42", json!(-42)),
        ("0x1F", json!(31)),
        ("-9223372036854775808", json!(i64::MIN)),
        ("7u", json!(7)),
        ("1.5", json!(1.5)),
        ("1e3", json!(1000.0)),
        ("'single'", json!("single")),
        ("\"double\"", json!("double")),
        ("'''tri'ple'''", json!("tri'ple")),
        ("\"\"\"line\nbreak\"\"\"", json!("line\nbreak")),
        (r"'tab\there'", json!("tab\there")),
        (r"'\u00e9\U0001F600\101'", json!("é😀A")),
        (r"r'raw\n'", json!("raw\\n")),
        (r"R'raw\d+'", json!("raw\\d+")),
        ("true", json!(true)),
        ("false", json!(false)),
        ("null", json!(null)),
        ("[1, 'a', [true]]", json!([1, "a", [true]])),
        ("[1, 2, ]", json!([1, 2])),
        ("{'k': 1, 'l': [2]}", json!({"k": 1, "l": [2]})),
        ("{}", json!({})),
        ("// a comment\n1 // another\n", json!(1)),
    ]);
    assert_eq!(
        eval("b'\\xff\\x00a'", &none()),
        Value::Bytes(vec![0xff, 0, b'a'])
    );
    assert_eq!(eval("big", &data()), Value::Uint(u64::MAX));
    assert!(matches!(eval("obj.f", &data()), Value::Double(d) if d == 2.5));
}

#[test]
fn precedence() {
    table(&[
        ("1 + 2 * 3", json!(7)),
        ("(1 + 2) * 3", json!(9)),
        ("10 - 4 - 3", json!(3)),
        ("2 * 3 % 4", json!(2)),
        ("-2 * 3", json!(-6)),
        ("- -2", json!(2)),
        ("!!true", json!(true)),
        ("1 < 2 == true", json!(true)),
        ("true || false && false", json!(true)),
        ("false ? 1 : true ? 2 : 3", json!(2)),
        ("1 + 1 == 2 && 'a' + 'b' == 'ab'", json!(true)),
        ("2 in [1, 2] == true", json!(true)),
        ("-obj.a", json!(-1)),
        ("-obj.list[0]", json!(-1)),
    ]);
}

#[test]
fn arithmetic() {
    table(&[
        ("7 / 2", json!(3)),
        ("-7 / 2", json!(-3)),
        ("-7 % 3", json!(-1)),
        ("7u / 2u", json!(3)),
        ("7.0 / 2.0", json!(3.5)),
        ("'ab' + 'cd'", json!("abcd")),
        ("[1] + [2, 3]", json!([1, 2, 3])),
        ("obj.list + [4]", json!([1, 2, 3, 4])),
        ("9223372036854775807 - 1", json!(9223372036854775806i64)),
    ]);
    assert_eq!(eval("b'a' + b'b'", &none()), Value::Bytes(b"ab".to_vec()));
    assert!(matches!(eval("1.0 / 0.0", &none()), Value::Double(d) if d.is_infinite()));
}

#[test]
fn comparisons() {
    table(&[
        ("1 == 1.0", json!(true)),
        ("1 == 1u", json!(true)),
        ("1u < 2.5", json!(true)),
        ("-1 < 1u", json!(true)),
        ("big > 9223372036854775807", json!(true)),
        ("2 >= 2.0", json!(true)),
        ("3 > 2.9999", json!(true)),
        ("1 == 'a'", json!(false)),
        ("1 != 'a'", json!(true)),
        ("null == null", json!(true)),
        ("obj.nil == null", json!(true)),
        ("'a' < 'b'", json!(true)),
        ("'abc' <= 'abd'", json!(true)),
        ("false < true", json!(true)),
        ("[1, 2] == [1, 2.0]", json!(true)),
        ("[1, 2] == [2, 1]", json!(false)),
        ("{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", json!(true)),
        ("{'a': 1} == {'a': 2}", json!(false)),
        ("obj.nested == {'k': true}", json!(true)),
        ("0.0 / 0.0 == 0.0 / 0.0", json!(false)),
        ("0.0 / 0.0 < 1", json!(false)),
        ("b'a' < b'b'", json!(true)),
    ]);
}

#[test]
fn membership() {
    table(&[
        ("2 in obj.list", json!(true)),
        ("2.0 in obj.list", json!(true)),
        ("5 in obj.list", json!(false)),
        ("'a' in obj", json!(true)),
        ("'z' in obj", json!(false)),
        ("'k' in {'k': 1}", json!(true)),
        ("1 in {1: 'x'}", json!(true)),
    ]);
}

#[test]
fn logic_absorbs_errors() {
    // `obj.missing` is an error (no such key); the absorbing side wins in either order.
    table(&[
        ("false && obj.missing", json!(false)),
        ("obj.missing && false", json!(false)),
        ("true || obj.missing", json!(true)),
        ("obj.missing || true", json!(true)),
        ("1 / 0 == 1 && false", json!(false)),
        ("'str' && false", json!(false)),
        ("true || 'str'", json!(true)),
        ("true && true", json!(true)),
        ("false || false", json!(false)),
        ("false ? obj.missing : 1", json!(1)),
    ]);
}

#[test]
fn selection_and_indexing() {
    table(&[
        ("obj.a", json!(1)),
        ("obj.nested.k", json!(true)),
        ("obj['b']", json!("two")),
        ("obj.list[1]", json!(2)),
        ("obj.list[2u]", json!(3)),
        ("obj.list[1.0]", json!(2)),
        ("items[2].n", json!(3)),
        ("{1: 'one'}[1]", json!("one")),
        ("{1: 'one'}[1u]", json!("one")),
        ("has(obj.a)", json!(true)),
        ("has(obj.zzz)", json!(false)),
        ("has(obj.nested.k)", json!(true)),
        ("has(obj.nil)", json!(true)),
        // Reserved words are field names after a dot (Kubernetes has metadata.namespace).
        (
            "{'namespace': 'apps', 'package': 1}.namespace",
            json!("apps"),
        ),
        ("has({'if': 1}.if)", json!(true)),
        (
            "{'namespace': {'as': 2}}.?namespace.as.orValue(0)",
            json!(2),
        ),
    ]);
}

#[test]
fn optionals() {
    table(&[
        ("obj.?a.orValue(0)", json!(1)),
        ("obj.?zzz.orValue(0)", json!(0)),
        ("obj.?zzz.hasValue()", json!(false)),
        ("obj.?a.hasValue()", json!(true)),
        ("obj.?zzz.k.orValue('none')", json!("none")),
        ("obj.?nested.k.orValue(false)", json!(true)),
        ("obj.?nested.?k.orValue(false)", json!(true)),
        ("obj[?'b'].value()", json!("two")),
        ("obj.list[?7].orValue(-1)", json!(-1)),
        ("obj.list[?0].orValue(-1)", json!(1)),
        ("optional.of(3).value()", json!(3)),
        ("optional.none().orValue('d')", json!("d")),
        ("optional.ofNonZeroValue('').hasValue()", json!(false)),
        ("optional.none().or(optional.of(2)).value()", json!(2)),
        ("[1, ?optional.none(), ?optional.of(2)]", json!([1, 2])),
        ("{'a': 1, ?'b': optional.none()}", json!({"a": 1})),
        ("[].first().hasValue()", json!(false)),
        // cel-go's optional tests: a plain selection after `.?` stays optional.
        ("obj.?nested.zzz.hasValue()", json!(false)),
        (
            "obj.?nested.zzz.or(obj.?nested['k']).orValue(false)",
            json!(true),
        ),
        (
            "{'invalid': dyn(null)}.?invalid.?nested.hasValue()",
            json!(false),
        ),
        ("obj.?list[7].hasValue()", json!(false)),
        ("has(obj.?zzz.y)", json!(false)),
        ("has(obj.?nested.k)", json!(true)),
    ]);
}

#[test]
fn macros() {
    table(&[
        ("obj.list.all(x, x > 0)", json!(true)),
        ("obj.list.all(x, x > 1)", json!(false)),
        ("obj.list.exists(x, x == 2)", json!(true)),
        ("obj.list.exists(x, x == 9)", json!(false)),
        ("obj.list.exists_one(x, x > 2)", json!(true)),
        ("obj.list.exists_one(x, x > 1)", json!(false)),
        ("obj.list.filter(x, x % 2 == 1)", json!([1, 3])),
        ("obj.list.map(x, x * 10)", json!([10, 20, 30])),
        ("obj.list.map(x, x > 1, x * 10)", json!([20, 30])),
        ("items.map(i, i.n).filter(n, n != 2)", json!([1, 3])),
        ("{'a': 1, 'b': 2}.map(k, k + k)", json!(["aa", "bb"])),
        ("{'a': 1, 'b': 2}.all(k, k.size() == 1)", json!(true)),
        ("[].all(x, false)", json!(true)),
        ("[].exists(x, true)", json!(false)),
        (
            "[[1, 2], [3]].map(l, l.map(x, x + 1))",
            json!([[2, 3], [4]]),
        ),
        ("[1, 2].exists(x, [3, 4].exists(x, x == 4))", json!(true)),
        // Error absorption: a false in all() (a true in exists()) wins over an element's error.
        ("[0, 1].all(x, 1 / x > 5)", json!(false)),
        ("[1, 0].all(x, 1 / x > 5)", json!(false)),
        ("[0, 1].exists(x, 1 / x == 1)", json!(true)),
        ("items.all(i, i.missing == 1 || i.n > 0)", json!(true)),
    ]);
}

#[test]
fn string_functions() {
    table(&[
        ("size('héllo')", json!(5)),
        ("'héllo'.size()", json!(5)),
        ("size(b'h\\xc3\\xa9')", json!(3)),
        ("size([1, 2])", json!(2)),
        ("size({'a': 1})", json!(1)),
        ("'hello'.startsWith('he')", json!(true)),
        ("'hello'.endsWith('lo')", json!(true)),
        ("'hello'.contains('ell')", json!(true)),
        ("'v1.2.3'.matches('^v[0-9]+\\\\.[0-9]+')", json!(true)),
        ("'abc'.matches('b')", json!(true)),
        ("matches('abc', '^b')", json!(false)),
        ("'Hello'.lowerAscii()", json!("hello")),
        ("'Hello'.upperAscii()", json!("HELLO")),
        ("'  x y \\n'.trim()", json!("x y")),
        ("'a,b,c'.split(',')", json!(["a", "b", "c"])),
        ("'a,b,c'.split(',', 2)", json!(["a", "b,c"])),
        ("'a,b,c'.split(',', 0)", json!([])),
        ("'abc'.split('')", json!(["a", "b", "c"])),
        ("['a', 'b'].join('-')", json!("a-b")),
        ("['a', 'b'].join()", json!("ab")),
        ("'aaa'.replace('a', 'b')", json!("bbb")),
        ("'aaa'.replace('a', 'b', 2)", json!("bba")),
        ("'héllo'.indexOf('l')", json!(2)),
        ("'héllo'.indexOf('l', 3)", json!(3)),
        ("'héllo'.indexOf('z')", json!(-1)),
        ("'héllo'.lastIndexOf('l')", json!(3)),
        ("'hello'.lastIndexOf('l', 2)", json!(2)),
        ("'héllo'.substring(1, 3)", json!("él")),
        ("'héllo'.substring(2)", json!("llo")),
        ("'héllo'.charAt(1)", json!("é")),
        ("'abc'.charAt(3)", json!("")),
        ("'abc'.reverse()", json!("cba")),
        ("'abc'.indexOf('')", json!(0)),
        ("'abc'.indexOf('', 9)", json!(3)),
        ("'abc'.indexOf('c', 9)", json!(-1)),
        ("'abc'.lastIndexOf('')", json!(3)),
        ("'abcabc'.lastIndexOf('bc')", json!(4)),
        ("'abcabc'.lastIndexOf('bc', 3)", json!(1)),
        ("'abc'.lastIndexOf('abcd')", json!(-1)),
        ("'abc'.substring(3)", json!("")),
    ]);
}

#[test]
fn conversions() {
    table(&[
        ("int('42')", json!(42)),
        ("int(3.9)", json!(3)),
        ("int(-3.9)", json!(-3)),
        ("int(7u)", json!(7)),
        ("uint(7)", json!(7)),
        ("double(2)", json!(2.0)),
        ("double('2.5')", json!(2.5)),
        ("string(42)", json!("42")),
        ("string(7u)", json!("7")),
        ("string(1.5)", json!("1.5")),
        ("string(100000.0)", json!("100000")),
        ("string(1000000.0)", json!("1e+06")),
        ("string(0.00001)", json!("1e-05")),
        ("string(true)", json!("true")),
        ("string(b'abc')", json!("abc")),
        ("bool('true')", json!(true)),
        ("bool('F')", json!(false)),
        ("dyn(1) == 1", json!(true)),
        ("type(1) == int", json!(true)),
        ("type('a') == string", json!(true)),
        ("type(obj) == map", json!(true)),
        ("type(obj.list) == list", json!(true)),
        ("type(1) == type(2u)", json!(false)),
        ("string(duration('1m30s'))", json!("90s")),
        ("string(duration('1.5s'))", json!("1.5s")),
        (
            "string(timestamp('2024-01-01T00:00:00Z'))",
            json!("2024-01-01T00:00:00Z"),
        ),
        ("base64.encode(b'hello')", json!("aGVsbG8=")),
        ("string(base64.decode('aGVsbG8='))", json!("hello")),
        ("string(base64.decode('aGVsbG8'))", json!("hello")),
        ("sets.contains([1, 2, 3], [3, 1])", json!(true)),
        ("sets.contains([1], [2])", json!(false)),
        ("sets.equivalent([1, 2], [2, 1, 1])", json!(true)),
        ("sets.intersects([1, 2], [3, 2])", json!(true)),
    ]);
}

#[test]
fn durations_and_timestamps() {
    table(&[
        ("duration('1h') == duration('60m')", json!(true)),
        ("duration('1m') < duration('61s')", json!(true)),
        ("duration('-1.5h') < duration('0')", json!(true)),
        (
            "duration('300ms') + duration('700ms') == duration('1s')",
            json!(true),
        ),
        (
            "timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')",
            json!(true),
        ),
        (
            "timestamp('2024-01-01T01:00:00+01:00') == timestamp('2024-01-01T00:00:00Z')",
            json!(true),
        ),
        (
            "timestamp('2024-03-05T06:07:08Z').getFullYear()",
            json!(2024),
        ),
        ("timestamp('2024-03-05T06:07:08Z').getMonth()", json!(2)),
        ("timestamp('2024-03-05T06:07:08Z').getDate()", json!(5)),
        (
            "timestamp('2024-03-05T06:07:08Z').getDayOfMonth()",
            json!(4),
        ),
        ("timestamp('2024-03-05T06:07:08Z').getDayOfWeek()", json!(2)),
        (
            "timestamp('2024-03-05T06:07:08Z').getDayOfYear()",
            json!(64),
        ),
        (
            "timestamp('2024-03-05T06:07:08Z').getHours('UTC')",
            json!(6),
        ),
        ("duration('90m').getHours()", json!(1)),
        ("duration('90m').getMinutes()", json!(90)),
        ("int(timestamp('1970-01-01T00:01:00Z'))", json!(60)),
    ]);
}
