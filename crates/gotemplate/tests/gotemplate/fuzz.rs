//! Property tests (issue 20's parser fuzz target, in a deterministic form): the parser never
//! panics on arbitrary input, parse→execute of generated templates never panics in any
//! missingkey mode, and deep nesting of templates or values never overflows the stack.
//!
//! The generator is crates/fuzzkit's seeded one, so every run checks the same inputs and a
//! failure names the iteration and the input that caused it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use ferroflux_fuzzkit::Rng;
use ferroflux_gotemplate::{Func, FuncMap, MissingKey, Template, Type, Value};

/// Fragments that make the lexer and parser visit every state, glued at random.
const SOUP: &[&str] = &[
    "{{", "}}", "{{-", "-}}", " ", "\n", "\t", "if", "else", "end", "range", "with", "define",
    "template", "block", "break", "continue", "nil", "true", ".", ".a", ".a.b", "$", "$x", ":=",
    "=", "|", "(", ")", "\"s\"", "\"", "`r`", "`", "'c'", "'", "1", "-2", "0x1F", "1e3", "1_0",
    "3k", "/*", "*/", ",", "printf", "len", "index", "eq", "and", "or", "not", "print", "é",
    "\u{0}", "{", "}", "%", "\\", "+", "#",
];

fn soup(rng: &mut Rng) -> String {
    let n = rng.below(40);
    (0..n).map(|_| rng.pick(SOUP)).collect()
}

const FIELDS: &[&str] = &[
    ".a",
    ".a.b",
    ".l",
    ".m",
    ".n",
    ".s",
    ".missing",
    ".a.missing.x",
    ".",
];

fn operand(rng: &mut Rng, depth: usize, vars: &[String]) -> String {
    match rng.below(if depth > 3 { 6 } else { 9 }) {
        0 => rng.pick(FIELDS).to_string(),
        1 => rng
            .pick(&["1", "0", "2.5", "-3", "\"x\"", "true", "nil", "'a'"])
            .to_string(),
        2 if !vars.is_empty() => vars[rng.below(vars.len())].clone(),
        2 | 3 => "$".to_string(),
        4 => format!("$.{}", &rng.pick(FIELDS)[1..]),
        5 => rng.pick(FIELDS).to_string(),
        6 => format!("({})", pipeline(rng, depth + 1, vars)),
        7 => format!("({}).a", pipeline(rng, depth + 1, vars)),
        _ => format!(
            "(index {} {})",
            rng.pick(FIELDS),
            rng.pick(&["0", "1", "\"a\"", "5"])
        ),
    }
}

fn pipeline(rng: &mut Rng, depth: usize, vars: &[String]) -> String {
    let funcs = [
        "len", "index", "slice", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "print",
        "printf", "println", "html", "js", "urlquery", "upper", "call",
    ];
    let mut cmd = match rng.below(3) {
        0 => operand(rng, depth, vars),
        _ => {
            let f = funcs[rng.below(funcs.len())];
            let n = rng.below(4);
            let args: Vec<String> = (0..n).map(|_| operand(rng, depth + 1, vars)).collect();
            format!("{f} {}", args.join(" "))
        }
    };
    if rng.below(4) == 0 {
        cmd = format!("{cmd} | {}", funcs[rng.below(funcs.len())]);
    }
    cmd
}

/// A list of nodes; `first_call` is the lowest `dN` template it may call (defines only call
/// later ones, so generated templates never recurse forever).
fn body(
    rng: &mut Rng,
    depth: usize,
    vars: &mut Vec<String>,
    in_range: bool,
    first_call: usize,
) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(5) {
        let mark = vars.len();
        let piece = match rng.below(if depth > 3 { 3 } else { 10 }) {
            0 => rng.pick(&["text ", "\n", "  ", "x"]).to_string(),
            1 => format!("{{{{ {} }}}}", pipeline(rng, depth, vars)),
            2 => {
                let v = format!("$v{}", vars.len());
                let s = format!("{{{{- {v} := {} -}}}}", pipeline(rng, depth, vars));
                vars.push(v);
                s
            }
            3 => format!(
                "{{{{ if {} }}}}{}{{{{ else if {} }}}}{}{{{{ end }}}}",
                pipeline(rng, depth, vars),
                body(rng, depth + 1, vars, in_range, first_call),
                pipeline(rng, depth, vars),
                body(rng, depth + 1, vars, in_range, first_call)
            ),
            4 => {
                let (k, v) = (format!("$k{}", vars.len()), format!("$e{}", vars.len()));
                let head = format!("{{{{ range {k}, {v} := {} }}}}", pipeline(rng, depth, vars));
                vars.push(k);
                vars.push(v);
                let inner = body(rng, depth + 1, vars, true, first_call);
                format!("{head}{inner}{{{{ else }}}}e{{{{ end }}}}")
            }
            5 => format!(
                "{{{{ with {} }}}}{}{{{{ else with {} }}}}{}{{{{ end }}}}",
                pipeline(rng, depth, vars),
                body(rng, depth + 1, vars, in_range, first_call),
                pipeline(rng, depth, vars),
                body(rng, depth + 1, vars, in_range, first_call)
            ),
            6 if first_call < 3 => format!(
                "{{{{ template \"d{}\" {} }}}}",
                first_call + rng.below(3 - first_call),
                operand(rng, depth, vars)
            ),
            7 if in_range => rng.pick(&["{{ break }}", "{{ continue }}"]).to_string(),
            8 if !vars.is_empty() => {
                let v = vars[rng.below(vars.len())].clone();
                format!("{{{{ {v} = {} }}}}", pipeline(rng, depth, vars))
            }
            _ => format!("{{{{/* c */}}}}{{{{- {} }}}}", operand(rng, depth, vars)),
        };
        vars.truncate(mark.max(vars.len().min(mark + 1)));
        out.push_str(&piece);
    }
    out
}

fn template_text(rng: &mut Rng) -> String {
    let mut text = String::new();
    for i in 0..3 {
        let mut vars = Vec::new();
        text.push_str(&format!(
            "{{{{ define \"d{i}\" }}}}{}{{{{ end }}}}",
            body(rng, 2, &mut vars, false, i + 1)
        ));
    }
    let mut vars = Vec::new();
    text.push_str(&body(rng, 0, &mut vars, false, 0));
    text
}

fn data() -> Value {
    let mut deep = serde_json::json!("bottom");
    for _ in 0..50 {
        deep = serde_json::json!({ "a": deep });
    }
    Value::from_json(&serde_json::json!({
        "a": {"b": "B", "c": [1, 2]},
        "l": [1, "two", null, {"x": 1}, [3]],
        "m": {"k": "v", "n": null, "z": 0},
        "n": null,
        "s": "str",
        "deep": deep,
    }))
}

fn funcs() -> FuncMap {
    let mut f = FuncMap::new();
    f.insert(
        "upper",
        Func::fixed(&[Type::String], |_, a| {
            Ok(Value::from(
                a[0].as_str().unwrap_or_default().to_uppercase(),
            ))
        }),
    );
    f
}

#[test]
fn the_parser_never_panics_on_arbitrary_input() {
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    for i in 0..10_000 {
        let text = soup(&mut rng);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut t = Template::new().with_funcs(funcs());
            let _ = t.parse("fuzz", &text);
        }));
        assert!(r.is_ok(), "iteration {i}: the parser panicked on {text:?}");
    }
    // Arbitrary bytes too (lossily made text).
    for i in 0..5_000 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next_u64() as u8).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _ = Template::new().parse("fuzz", &text);
        }));
        assert!(r.is_ok(), "iteration {i}: the parser panicked on {text:?}");
    }
}

#[test]
fn parse_then_execute_never_panics() {
    let mut rng = Rng::new(0xD1B5_4A32_D192_ED03);
    let data = data();
    let mut parsed = 0;
    for i in 0..2_000 {
        let text = template_text(&mut rng);
        for mk in [MissingKey::Invalid, MissingKey::Zero, MissingKey::Error] {
            let r = catch_unwind(AssertUnwindSafe(|| {
                let mut t = Template::named("gotpl")
                    .with_funcs(funcs())
                    .with_missing_key(mk);
                if t.parse("t", &text).is_ok() {
                    let _ = t.execute("t", &data);
                    true
                } else {
                    false
                }
            }));
            match r {
                Ok(ok) => parsed += usize::from(ok),
                Err(_) => panic!("iteration {i} ({mk:?}): panicked on {text:?}"),
            }
        }
    }
    // Most generated templates are grammatical: the executor really ran.
    assert!(parsed > 2_000, "only {parsed} of 6000 runs parsed");
}

#[test]
fn deep_nesting_never_overflows() {
    // 20,000 nested parentheses and 5,000 nested ifs: parse and run on the test's own thread.
    let n = 20_000;
    let text = format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n));
    let mut t = Template::new();
    t.parse("p", &text).unwrap();
    assert_eq!(t.execute("p", &Value::Nil).unwrap(), "1");

    let n = 5_000;
    let text = format!("{}x{}", "{{ if true }}".repeat(n), "{{ end }}".repeat(n));
    let mut t = Template::new();
    t.parse("i", &text).unwrap();
    assert_eq!(t.execute("i", &Value::Nil).unwrap(), "x");

    // A 10,000-deep value: printed, walked with a field chain, compared, dropped.
    let mut j = serde_json::Value::String("bottom".into());
    for _ in 0..10_000 {
        let mut o = serde_json::Map::new();
        o.insert("a".into(), serde_json::Value::Array(vec![j]));
        j = serde_json::Value::Object(o);
    }
    let v = Value::from_json(&j);
    std::mem::forget(j); // serde_json's recursive drop is not ours to test
    let mut t = Template::new();
    t.parse("v", "{{ len (print .) }} {{ index .a 0 | len }}")
        .unwrap();
    let out = t.execute("v", &v).unwrap();
    assert_eq!(
        out,
        format!(
            "{} 1",
            10_000 * "map[a:[".len() + "bottom".len() + 10_000 * 2
        )
    );
    assert!(v == v.clone());
}

#[test]
fn printf_never_panics() {
    const PIECES: &[&str] = &[
        "%",
        "%%",
        "d",
        "s",
        "v",
        "q",
        "x",
        "X",
        "f",
        "e",
        "g",
        "T",
        "c",
        "U",
        "t",
        "b",
        "o",
        "O",
        "z",
        "+",
        "-",
        "#",
        " ",
        "0",
        "1",
        "9",
        "12",
        "*",
        ".",
        "[",
        "]",
        "[1]",
        "[3]",
        "é",
        "x",
        "1000000",
        "99999999999",
    ];
    let args = [
        Value::Int(42),
        Value::Int(-7),
        Value::Int64(1 << 40),
        Value::Float(-0.5),
        Value::Float(f64::NAN),
        Value::Float(1e300),
        Value::from("héllo"),
        Value::Nil,
        Value::Bool(true),
        Value::list(vec![Value::Int(1), Value::from("a"), Value::Nil]),
        data(),
        Value::Bytes(std::sync::Arc::from(&b"\xff\x00a"[..])),
        Value::Int(1_000_001),
    ];
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    for i in 0..10_000 {
        let format: String = (0..rng.below(12)).map(|_| rng.pick(PIECES)).collect();
        let argv: Vec<Value> = (0..rng.below(5))
            .map(|_| args[rng.below(args.len())].clone())
            .collect();
        let r = catch_unwind(AssertUnwindSafe(|| {
            ferroflux_gotemplate::fmt::sprintf(&format, &argv)
        }));
        assert!(
            r.is_ok(),
            "iteration {i}: sprintf panicked on {format:?} with {argv:?}"
        );
    }
}

#[test]
fn sets_and_values_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Template>();
    send_sync::<Value>();
    let mut t = Template::new();
    t.parse("t", "{{ .n }}").unwrap();
    let data = Value::from_json(&serde_json::json!({"n": 1}));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (t, data) = (t.clone(), data.clone());
            std::thread::spawn(move || t.execute("t", &data))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), "1");
    }
}
