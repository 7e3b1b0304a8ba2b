//! Quick end-to-end checks of parse + execute (the full table is in cases.rs).

use ferroflux_gotemplate::{MissingKey, Template, Value};

fn run(text: &str, data: serde_json::Value) -> Result<String, String> {
    let mut t = Template::named("gotpl").with_missing_key(MissingKey::Zero);
    t.parse("t", text).map_err(|e| e.to_string())?;
    t.execute("t", &Value::from_json(&data))
        .map_err(|e| e.to_string())
}

#[test]
fn smoke() {
    let d =
        serde_json::json!({"Values": {"a": {"b": 1000000}, "list": ["x", null, 3], "name": "n"}});
    assert_eq!(run("{{ .Values.a.b }}", d.clone()).unwrap(), "1e+06");
    assert_eq!(
        run(
            "{{ range $i, $v := .Values.list }}{{$i}}={{$v}};{{end}}",
            d.clone()
        )
        .unwrap(),
        "0=x;1=<no value>;2=3;"
    );
    assert_eq!(
        run("{{ .Values.missing.x }}", d.clone()).unwrap_err(),
        "template: t:1:10: executing \"t\" at <.Values.missing.x>: nil pointer evaluating interface {}.x"
    );
    assert_eq!(
        run(
            "{{ $x := 1 }}{{ if eq $x 1 }}one{{ else }}other{{ end }}",
            d.clone()
        )
        .unwrap(),
        "one"
    );
    assert_eq!(
        run("{{ eq .Values.a.b 1 }}", d.clone()).unwrap_err(),
        "template: t:1:3: executing \"t\" at <eq .Values.a.b 1>: error calling eq: incompatible types for comparison: float64 and int"
    );
    assert_eq!(
        run("{{ printf \"%s-%d\" .Values.name 3 }}", d.clone()).unwrap(),
        "n-3"
    );
    assert_eq!(
        run(
            "{{define \"x\"}}[{{.}}]{{end}}{{template \"x\" .Values.name}}",
            d.clone()
        )
        .unwrap(),
        "[n]"
    );
    assert_eq!(
        run("{{ range 3 }}{{.}}{{ end }}", d.clone()).unwrap(),
        "012"
    );
    assert_eq!(
        run(
            "{{ with .Values.nope }}a{{ else with .Values.name }}{{.}}{{ end }}",
            d
        )
        .unwrap(),
        "n"
    );
}
