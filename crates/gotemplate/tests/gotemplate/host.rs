//! Host functions and objects as Helm uses them: `include` and `tpl` built on `CallContext`,
//! per-execution state, host objects with fields and methods, and error wrapping.

use std::collections::HashMap;

use ferroflux_gotemplate::{
    CallContext, Func, FuncError, FuncMap, MissingKey, Object, Signature, Template, Type, Value,
};

/// Helm's include counters, kept in the execution's host state.
#[derive(Default)]
struct Counters(HashMap<String, usize>);

fn include(ctx: &mut CallContext<'_>, args: &[Value]) -> Result<Value, FuncError> {
    let name = args[0].as_str().unwrap_or_default().to_string();
    if let Some(c) = ctx.state::<Counters>() {
        let n = c.0.entry(name.clone()).or_default();
        if *n > 20 {
            return Err(FuncError::new(format!(
                "rendering template has a nested reference name: {name}"
            )));
        }
        *n += 1;
    }
    let out = ctx.execute_template(&name, args[1].clone());
    if let Some(c) = ctx.state::<Counters>()
        && let Some(n) = c.0.get_mut(&name)
    {
        *n -= 1;
    }
    Ok(Value::from(out?))
}

fn tpl(ctx: &mut CallContext<'_>, args: &[Value]) -> Result<Value, FuncError> {
    let mut set = ctx.templates().clone();
    let name = set.name().to_string();
    set.parse(&name, args[0].as_str().unwrap_or_default())
        .map_err(|e| FuncError::new(e.to_string()))?;
    Ok(Value::from(ctx.execute_in(&set, &name, args[1].clone())?))
}

fn helm_like() -> Template {
    let mut funcs = FuncMap::new();
    funcs.insert("include", Func::fixed(&[Type::String, Type::Any], include));
    funcs.insert("tpl", Func::fixed(&[Type::String, Type::Any], tpl));
    funcs.insert(
        "whoami",
        Func::fixed(&[], |ctx, _| Ok(Value::from(ctx.template_name()))),
    );
    funcs.insert(
        "fail",
        Func::fixed(&[Type::String], |_, a| {
            Err(FuncError::new(a[0].as_str().unwrap_or_default()))
        }),
    );
    funcs.insert(
        "repeat",
        Func::fixed(&[Type::Int, Type::String], |_, a| match (&a[0], &a[1]) {
            (Value::Int(n), Value::String(s)) => Ok(Value::from(s.repeat((*n).max(0) as usize))),
            _ => Err(FuncError::new("unreachable: arguments are converted")),
        }),
    );
    funcs.insert(
        "list",
        Func::variadic(&[], Type::Any, |_, a| Ok(Value::list(a.to_vec()))),
    );
    funcs.insert(
        "boom",
        Func::fixed(&[], |_, _| -> Result<Value, FuncError> { panic!("kaboom") }),
    );
    Template::named("gotpl")
        .with_funcs(funcs)
        .with_missing_key(MissingKey::Zero)
}

fn render(files: &[(&str, &str)], main: &str, data: serde_json::Value) -> Result<String, String> {
    let mut t = helm_like();
    for (name, text) in files {
        t.parse(name, text).map_err(|e| e.to_string())?;
    }
    let mut state = Counters::default();
    t.execute_with_state(main, &Value::from_json(&data), &mut state)
        .map_err(|e| e.to_string())
}

#[test]
fn include_runs_defines_from_other_files() {
    let out = render(
        &[
            (
                "c/templates/_helpers.tpl",
                "{{- define \"c.name\" -}}{{ .Values.name }}-{{ whoami }}{{- end -}}",
            ),
            (
                "c/templates/a.yaml",
                "name: {{ include \"c.name\" . }} in {{ whoami }}",
            ),
        ],
        "c/templates/a.yaml",
        serde_json::json!({"Values": {"name": "web"}}),
    );
    assert_eq!(out.unwrap(), "name: web-c.name in c/templates/a.yaml");
}

#[test]
fn include_errors_are_wrapped_like_go() {
    let err = render(
        &[
            (
                "c/templates/_helpers.tpl",
                "{{ define \"c.bad\" }}\n  {{ .Values.a.b }}{{ end }}",
            ),
            ("c/templates/a.yaml", "x: {{ include \"c.bad\" . }}"),
        ],
        "c/templates/a.yaml",
        serde_json::json!({"Values": {}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "template: c/templates/a.yaml:1:6: executing \"c/templates/a.yaml\" at <include \"c.bad\" .>: \
         error calling include: template: c/templates/_helpers.tpl:2:12: executing \"c.bad\" at \
         <.Values.a.b>: nil pointer evaluating interface {}.b"
    );
}

#[test]
fn runaway_include_stops_with_the_hosts_counter() {
    let err = render(
        &[(
            "t",
            "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}{{ include \"loop\" . }}",
        )],
        "t",
        serde_json::json!({}),
    )
    .unwrap_err();
    assert!(
        err.ends_with(
            "error calling include: rendering template has a nested reference name: loop"
        ),
        "{err}"
    );
}

#[test]
fn tpl_parses_into_a_copy_and_sees_defines() {
    let out = render(
        &[
            ("c/templates/_h.tpl", "{{ define \"c.x\" }}X{{ end }}"),
            (
                "c/templates/a.yaml",
                "{{ tpl .Values.t . }}|{{ tpl \"{{ define \\\"c.y\\\" }}Y{{ end }}{{ include \\\"c.y\\\" . }}{{ include \\\"c.x\\\" . }}\" . }}",
            ),
        ],
        "c/templates/a.yaml",
        serde_json::json!({"Values": {"t": "{{ .Values.n | printf \"%v!\" }}", "n": 2}}),
    )
    .unwrap();
    assert_eq!(out, "2!|YX");
    // The copy's define did not leak into the set.
    let err = render(
        &[(
            "a",
            "{{ tpl \"{{ define \\\"q\\\" }}Q{{ end }}\" . }}{{ include \"q\" . }}",
        )],
        "a",
        serde_json::json!({}),
    )
    .unwrap_err();
    assert!(
        err.contains("no template \\\"q\\\" associated with template \\\"gotpl\\\"")
            || err.contains("no template \"q\" associated with template \"gotpl\""),
        "{err}"
    );
}

#[test]
fn tpl_errors_name_the_tpl_template() {
    let err = render(
        &[("a", "{{ tpl \"{{ .Values.x.y }}\" . }}")],
        "a",
        serde_json::json!({"Values": {}}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "template: a:1:3: executing \"a\" at <tpl \"{{ .Values.x.y }}\" .>: error calling tpl: \
         template: gotpl:1:10: executing \"gotpl\" at <.Values.x.y>: nil pointer evaluating interface {}.y"
    );
}

/// Helm's `.Values`: a named map type (`common.Values`) with the map's behaviour.
struct Values(ferroflux_gotemplate::Map);

impl Object for Values {
    fn type_name(&self) -> String {
        "common.Values".into()
    }
    fn kind_name(&self) -> String {
        "map".into()
    }
    fn format(&self) -> String {
        Value::Map(self.0.clone()).to_string()
    }
    fn as_value(&self) -> Option<Value> {
        Some(Value::Map(self.0.clone()))
    }
    fn assignable_to(&self, t: Type) -> bool {
        t == Type::Map
    }
}

#[test]
fn named_map_types_act_as_maps_and_assign_to_map_parameters() {
    let mut funcs = FuncMap::new();
    funcs.insert(
        "set",
        Func::fixed(&[Type::Map, Type::String, Type::Any], |_, a| {
            if let (Some(m), Some(k)) = (a[0].as_map(), a[1].as_str()) {
                m.insert(k, a[2].clone());
            }
            Ok(a[0].clone())
        }),
    );
    let mut t = Template::new()
        .with_missing_key(MissingKey::Zero)
        .with_funcs(funcs);
    t.parse(
        "t",
        "{{ printf \"%T\" .Values }} {{ .Values.a }} {{ $_ := set .Values \"b\" 2 }}{{ .Values }} \
         {{ range $k, $v := .Values }}{{ $k }}{{ end }} {{ len .Values }} {{ .Values.nope.x }}",
    )
    .unwrap();
    let values = ferroflux_gotemplate::Map::new();
    values.insert("a", 1);
    let data = ferroflux_gotemplate::Map::new();
    data.insert("Values", Value::object(Values(values)));
    assert_eq!(
        t.execute("t", &Value::Map(data)).unwrap_err().to_string(),
        "template: t:1:160: executing \"t\" at <.Values.nope.x>: nil pointer evaluating interface {}.x"
    );
    t.parse("u", "{{ printf \"%T\" .Values }} {{ .Values.a }} {{ $_ := set .Values \"b\" 2 }}{{ .Values }} {{ len .Values }}")
        .unwrap();
    let values = ferroflux_gotemplate::Map::new();
    values.insert("a", 1);
    let data = ferroflux_gotemplate::Map::new();
    data.insert("Values", Value::object(Values(values)));
    assert_eq!(
        t.execute("u", &Value::Map(data)).unwrap(),
        "common.Values 1 map[a:1 b:2] 2"
    );
}

#[test]
fn bytes_range_len_index_and_print_like_go() {
    let mut t = helm_like();
    t.parse(
        "t",
        "{{ range $i, $b := .b }}{{ $i }}:{{ $b }} {{ end }}{{ len .b }} {{ index .b 1 }} {{ .b }} {{ printf \"%s|%x|%q\" .b .b .b }}",
    )
    .unwrap();
    let data = ferroflux_gotemplate::Map::new();
    data.insert("b", Value::Bytes(std::sync::Arc::from(&b"hi"[..])));
    assert_eq!(
        t.execute("t", &Value::Map(data)).unwrap(),
        "0:104 1:105 2 105 [104 105] hi|6869|\"hi\""
    );
}

#[test]
fn typed_parameters_convert_and_check_like_go() {
    let run = |t: &str| {
        render(
            &[("t", t)],
            "t",
            serde_json::json!({"Values": {"n": 3, "s": "ab"}}),
        )
    };
    assert_eq!(run("{{ repeat 3 \"ab\" }}").unwrap(), "ababab");
    assert_eq!(run("{{ .Values.s | repeat 2 }}").unwrap(), "abab");
    assert_eq!(
        run("{{ repeat .Values.n \"x\" }}").unwrap_err(),
        "template: t:1:17: executing \"t\" at <.Values.n>: wrong type for value; expected int; got float64"
    );
    assert_eq!(
        run("{{ repeat 2 .Values.missing }}").unwrap_err(),
        "template: t:1:19: executing \"t\" at <.Values.missing>: wrong type for value; expected string; got interface {}"
    );
    assert_eq!(
        run("{{ $m := .Values.missing }}{{ repeat 2 $m }}").unwrap_err(),
        "template: t:1:39: executing \"t\" at <$m>: invalid value; expected string"
    );
    assert_eq!(
        run("{{ repeat 2.5 \"x\" }}").unwrap_err(),
        "template: t:1:10: executing \"t\" at <2.5>: expected integer; found 2.5"
    );
    assert_eq!(
        run("{{ repeat 2 }}").unwrap_err(),
        "template: t:1:3: executing \"t\" at <repeat>: wrong number of args for repeat: want 2 got 1"
    );
    assert_eq!(
        run("{{ list }}|{{ list 1 \"a\" nil }}").unwrap(),
        "[]|[1 a <nil>]"
    );
    assert_eq!(
        run("{{ fail \"no way\" }}").unwrap_err(),
        "template: t:1:3: executing \"t\" at <fail \"no way\">: error calling fail: no way"
    );
    assert_eq!(
        run("{{ boom }}").unwrap_err(),
        "template: t:1:3: executing \"t\" at <boom>: error calling boom: kaboom"
    );
}

/// A stand-in for Helm's `.Capabilities`: fields, a nested object, a method.
struct Caps;
struct Versions(Vec<&'static str>);

impl Object for Caps {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "APIVersions" => Some(Value::object(Versions(vec!["v1", "apps/v1"]))),
            "KubeVersion" => {
                let m = ferroflux_gotemplate::Map::new();
                m.insert("Version", "v1.36.0");
                Some(Value::Map(m))
            }
            _ => None,
        }
    }
    fn format(&self) -> String {
        "&{...}".into()
    }
}

impl Object for Versions {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn kind_name(&self) -> String {
        "slice".into()
    }
    fn method(&self, name: &str) -> Option<Signature> {
        (name == "Has").then(|| Signature::fixed(&[Type::String]))
    }
    fn call_method(
        &self,
        _name: &str,
        _ctx: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let want = args[0].as_str().unwrap_or_default();
        Ok(Value::Bool(self.0.contains(&want)))
    }
    fn format(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn as_value(&self) -> Option<Value> {
        Some(Value::list(
            self.0.iter().map(|s| Value::from(*s)).collect(),
        ))
    }
}

#[test]
fn host_objects_have_fields_and_methods() {
    let mut t = helm_like();
    t.parse(
        "t",
        "{{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.APIVersions.Has \"apps/v1\" }} \
         {{ .Capabilities.APIVersions.Has \"x/v1\" }} {{ len .Capabilities.APIVersions }} \
         {{ range .Capabilities.APIVersions }}[{{ . }}]{{ end }} {{ .Capabilities.APIVersions }}",
    )
    .unwrap();
    let data = ferroflux_gotemplate::Map::new();
    data.insert("Capabilities", Value::object(Caps));
    let out = t.execute("t", &Value::Map(data.clone())).unwrap();
    assert_eq!(out, "v1.36.0 true false 2 [v1][apps/v1] [v1 apps/v1]");

    t.parse("u", "{{ .Capabilities.APIVersions.Has }}").unwrap();
    assert_eq!(
        t.execute("u", &Value::Map(data.clone()))
            .unwrap_err()
            .to_string(),
        "template: u:1:16: executing \"u\" at <.Capabilities.APIVersions.Has>: wrong number of args for Has: want 1 got 0"
    );
    t.parse("v", "{{ .Capabilities.Nope }}").unwrap();
    assert_eq!(
        t.execute("v", &Value::Map(data)).unwrap_err().to_string(),
        "template: v:1:16: executing \"v\" at <.Capabilities.Nope>: can't evaluate field Nope in type interface {}"
    );
}
