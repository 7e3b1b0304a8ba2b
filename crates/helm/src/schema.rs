//! `values.schema.json` validation with the messages Helm prints. Helm uses
//! santhosh-tekuri/jsonschema v6; this is our own lean validator of the same keywords and error
//! tree, written from that library's documented output: one line a failure
//! (`- at '/image/tag': got number, want string`), nested failures (allOf, anyOf, oneOf, $ref)
//! indented under their keyword's line.
//!
//! Why not the `jsonschema` crate: it brings reqwest, url, fancy-regex and a dozen more crates
//! for remote references and formats Helm charts do not need offline, and its messages differ
//! from Helm's anyway, so the message layer would have to be rewritten over it regardless.
//!
//! Covered: drafts 4, 6, 7, 2019-09 and 2020-12 for `type`, `enum`, `const`, `properties`,
//! `patternProperties`, `additionalProperties`, `required`, `minProperties`, `maxProperties`,
//! `dependencies`, `dependentRequired`, `dependentSchemas`, `propertyNames`, `items` (both
//! forms), `prefixItems`, `additionalItems`, `minItems`, `maxItems`, `uniqueItems`,
//! `contains`, `minContains`, `maxContains`, `minLength`, `maxLength`, `pattern`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (draft 4's boolean form too),
//! `multipleOf`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else` and local `$ref`
//! (`#`, `#/definitions/...`, `#/$defs/...`). Not covered: `format` assertions (off by default
//! in Helm's validator for 2019+ schemas), remote `$ref`s (an error here, where Helm would
//! fetch them), `unevaluated*`, and checking the schema itself against its metaschema beyond
//! the one mistake [`meta_check`] knows (a `type` that names no JSON type, under 2020-12).
//! Where Go iterates a map (several failing properties), failures come in sorted key order.

use serde_json::{Map, Value};

/// One validation failure with its nested causes.
struct Failure {
    location: Vec<String>,
    message: String,
    causes: Vec<Failure>,
    /// A `$ref` wrapper with exactly one cause is not printed (its cause is).
    is_ref: bool,
    /// A group of several failures of one schema (not printed itself).
    is_group: bool,
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Draft {
    D4,
    D6,
    D7,
    D2019,
    D2020,
}

struct Validator<'s> {
    root: &'s Value,
    draft: Draft,
    depth: usize,
}

/// Deepest `$ref` chain followed before the schema counts as cyclic.
const MAX_REF_DEPTH: usize = 200;

/// Validates `values` against the schema text. `Ok(None)` when valid, `Ok(Some(text))` with
/// the failures as Helm prints them (each `- at ...` line, ending in a newline), `Err` when the
/// schema itself is unusable.
pub fn validate(schema_text: &[u8], values: &Map<String, Value>) -> Result<Option<String>, String> {
    let schema: Value = serde_json::from_slice(schema_text).map_err(|e| {
        // Go's encoding/json words the common failure this way.
        if e.is_eof() {
            "unexpected EOF".to_string()
        } else {
            e.to_string()
        }
    })?;
    let draft = match schema.get("$schema").and_then(Value::as_str) {
        Some(s) if s.contains("draft-04") => Draft::D4,
        Some(s) if s.contains("draft-06") => Draft::D6,
        Some(s) if s.contains("draft-07") => Draft::D7,
        Some(s) if s.contains("2019-09") => Draft::D2019,
        _ => Draft::D2020,
    };
    if draft == Draft::D2020
        && let Some(f) = meta_check(&schema, &mut Vec::new())
    {
        let mut lines = String::new();
        display(&f, 1, &mut lines);
        return Err(format!(
            "\"file:///values.schema.json#\" is not valid against metaschema: jsonschema validation failed with 'https://json-schema.org/draft/2020-12/schema#'{lines}"
        ));
    }
    let mut v = Validator {
        root: &schema,
        draft,
        depth: 0,
    };
    let instance = Value::Object(values.clone());
    let failure = v.validate(&schema, &instance, &mut Vec::new())?;
    let Some(failure) = failure else {
        return Ok(None);
    };
    let causes = if failure.is_group {
        failure.causes
    } else {
        vec![failure]
    };
    let mut out = String::new();
    for c in &causes {
        display(c, 1, &mut out);
    }
    // The root line is dropped by Helm; its causes start with a newline we do not want.
    let text = out.strip_prefix('\n').unwrap_or(&out).to_string();
    Ok(Some(text + "\n"))
}

/// The JSON types a `type` keyword may name, in the order the metaschema's enum lists them.
const SIMPLE_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// The schema checked against draft 2020-12's metaschema for one mistake: a `type` that is not
/// one of the seven type names (or a non-empty list of distinct ones), at any depth of
/// subschemas. The failure tree is the one Helm's validator prints for it: the metaschema is an
/// `allOf` of vocabularies whose applicator part re-enters the whole metaschema for each
/// subschema, so every schema on the path fails as `'allOf' failed`, and the `type` keyword
/// as `'anyOf' failed` over its two allowed forms. Subschemas come before a schema's own
/// `type` (the applicator vocabulary precedes the validation one).
fn meta_check(schema: &Value, loc: &mut Vec<String>) -> Option<Failure> {
    let Value::Object(s) = schema else {
        return None;
    };
    let leaf = |loc: &[String], message: String| Failure {
        location: loc.to_vec(),
        message,
        causes: Vec::new(),
        is_ref: false,
        is_group: false,
    };
    let mut causes = Vec::new();
    const ONE: [&str; 10] = [
        "additionalProperties",
        "propertyNames",
        "items",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
    ];
    const MAPS: [&str; 5] = [
        "$defs",
        "definitions",
        "properties",
        "patternProperties",
        "dependentSchemas",
    ];
    const LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
    for (k, v) in s {
        loc.push(k.clone());
        if ONE.contains(&k.as_str()) {
            causes.extend(meta_check(v, loc));
        } else if MAPS.contains(&k.as_str())
            && let Value::Object(m) = v
        {
            for (name, sub) in m {
                loc.push(name.clone());
                causes.extend(meta_check(sub, loc));
                loc.pop();
            }
        } else if LISTS.contains(&k.as_str())
            && let Value::Array(items) = v
        {
            for (i, sub) in items.iter().enumerate() {
                loc.push(i.to_string());
                causes.extend(meta_check(sub, loc));
                loc.pop();
            }
        }
        loc.pop();
    }
    if let Some(t) = s.get("type") {
        loc.push("type".into());
        let names = SIMPLE_TYPES
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let not_a_type = |loc: &[String]| leaf(loc, format!("value must be one of {names}"));
        let valid_list = |items: &Vec<Value>| {
            !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|n| SIMPLE_TYPES.contains(&n)))
                && items
                    .iter()
                    .enumerate()
                    .all(|(i, a)| items[..i].iter().all(|b| a != b))
        };
        let bad = match t {
            Value::String(n) => !SIMPLE_TYPES.contains(&n.as_str()),
            Value::Array(items) => !valid_list(items),
            _ => true,
        };
        if bad {
            let mut branches = vec![not_a_type(loc)];
            match t {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if !item.as_str().is_some_and(|n| SIMPLE_TYPES.contains(&n)) {
                            loc.push(i.to_string());
                            branches.push(not_a_type(loc));
                            loc.pop();
                        }
                    }
                }
                other => branches.push(leaf(loc, format!("got {}, want array", type_of(other)))),
            }
            causes.push(Failure {
                location: loc.clone(),
                message: "'anyOf' failed".into(),
                causes: branches,
                is_ref: false,
                is_group: false,
            });
        }
        loc.pop();
    }
    (!causes.is_empty()).then(|| Failure {
        location: loc.clone(),
        message: "'allOf' failed".into(),
        causes,
        is_ref: false,
        is_group: false,
    })
}

fn display(f: &Failure, indent: usize, out: &mut String) {
    let skip = f.is_group || (f.is_ref && f.causes.len() == 1);
    let mut indent = indent;
    if !skip {
        out.push('\n');
        for _ in 0..indent - 1 {
            out.push_str("  ");
        }
        out.push_str("- at ");
        out.push_str(&quote(&json_pointer(&f.location)));
        out.push_str(": ");
        out.push_str(&f.message);
        indent += 1;
    }
    for c in &f.causes {
        display(c, indent, out);
    }
}

fn json_pointer(tokens: &[String]) -> String {
    let mut s = String::new();
    for t in tokens {
        s.push('/');
        s.push_str(&t.replace('~', "~0").replace('/', "~1"));
    }
    s
}

/// The library's `quote`: Go's `%q` with `"` unescaped and `'` escaped, in single quotes.
fn quote(s: &str) -> String {
    let q = crate::util::go_quote(s);
    let inner = &q[1..q.len() - 1];
    format!("'{}'", inner.replace("\\\"", "\"").replace('\'', "\\'"))
}

fn join_quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| quote(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `display` of a primitive: strings quoted, numbers as Go's `%v`.
fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => "value".into(),
        other => crate::gofmt::go_print(other),
    }
}

/// A number as golang.org/x/text's English printer shows `%v`/`%d`: thousands grouped.
fn localized_number(f: f64) -> String {
    let plain =
        crate::gofmt::go_number(&serde_json::Number::from_f64(f).unwrap_or_else(|| 0.into()));
    if plain.contains('e') {
        return plain;
    }
    let (sign, rest) = match plain.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", plain.as_str()),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equals(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => a == b,
    }
}

const TYPE_ORDER: [&str; 7] = [
    "null", "boolean", "number", "integer", "string", "array", "object",
];

impl<'s> Validator<'s> {
    fn fail(&self, loc: &[String], message: String) -> Failure {
        Failure {
            location: loc.to_vec(),
            message,
            causes: Vec::new(),
            is_ref: false,
            is_group: false,
        }
    }

    fn group(&self, loc: &[String], message: &str, causes: Vec<Failure>) -> Failure {
        Failure {
            location: loc.to_vec(),
            message: message.into(),
            causes,
            is_ref: false,
            is_group: false,
        }
    }

    fn resolve(&self, reference: &str) -> Result<&'s Value, String> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(format!(
                "unsupported $ref {reference:?}: only references inside values.schema.json are supported"
            ));
        };
        let mut cur = self.root;
        for token in fragment.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            cur = match cur {
                Value::Object(m) => m.get(&token),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            }
            .ok_or_else(|| format!("invalid $ref {reference:?}: no such location in the schema"))?;
        }
        Ok(cur)
    }

    fn validate(
        &mut self,
        schema: &'s Value,
        v: &Value,
        loc: &mut Vec<String>,
    ) -> Result<Option<Failure>, String> {
        let s = match schema {
            Value::Bool(true) => return Ok(None),
            Value::Bool(false) => return Ok(Some(self.fail(loc, "false schema".into()))),
            Value::Object(s) => s,
            _ => return Ok(None),
        };
        // type
        if let Some(t) = s.get("type") {
            let wanted: Vec<&str> = match t {
                Value::String(x) => vec![x.as_str()],
                Value::Array(xs) => xs.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !wanted.is_empty() {
                let got = type_of(v);
                let ok = wanted.contains(&got) || (wanted.contains(&"integer") && is_integer(v));
                if !ok {
                    let want: Vec<&str> = TYPE_ORDER
                        .iter()
                        .copied()
                        .filter(|t| wanted.contains(t))
                        .collect();
                    return Ok(Some(
                        self.fail(loc, format!("got {got}, want {}", want.join(" or "))),
                    ));
                }
            }
        }
        if let Some(c) = s.get("const")
            && self.draft >= Draft::D6
            && !equals(v, c)
        {
            let msg = match c {
                Value::Array(_) | Value::Object(_) => "const failed".into(),
                other => format!("value must be {}", display_value(other)),
            };
            return Ok(Some(self.fail(loc, msg)));
        }
        if let Some(Value::Array(items)) = s.get("enum")
            && !items.iter().any(|i| equals(v, i))
        {
            let primitive = items
                .iter()
                .all(|i| !matches!(i, Value::Array(_) | Value::Object(_)));
            let msg = if !primitive {
                "enum failed".to_string()
            } else if items.len() == 1 {
                format!("value must be {}", display_value(&items[0]))
            } else {
                format!(
                    "value must be one of {}",
                    items
                        .iter()
                        .map(display_value)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Ok(Some(self.fail(loc, msg)));
        }
        let mut errors: Vec<Failure> = Vec::new();
        if let Some(Value::String(r)) = s.get("$ref") {
            let target = self.resolve(r)?;
            self.depth += 1;
            if self.depth > MAX_REF_DEPTH {
                return Err(format!("$ref {r:?} causes a reference cycle"));
            }
            let result = self.validate(target, v, loc);
            self.depth -= 1;
            let wrapped = result?.map(|f| {
                let causes = if f.is_group { f.causes } else { vec![f] };
                Failure {
                    location: loc.clone(),
                    message: format!(
                        "validation failed with {}",
                        quote(&format!("file:///values.schema.json{r}"))
                    ),
                    causes,
                    is_ref: true,
                    is_group: false,
                }
            });
            if self.draft < Draft::D2019 {
                return Ok(wrapped);
            }
            errors.extend(wrapped);
        }
        match v {
            Value::Object(obj) => self.object(s, obj, loc, &mut errors)?,
            Value::Array(arr) => self.array(s, arr, loc, &mut errors)?,
            Value::String(st) => self.string(s, st, loc, &mut errors),
            Value::Number(_) => self.number(s, v, loc, &mut errors),
            _ => {}
        }
        self.conditionals(s, v, loc, &mut errors)?;
        Ok(match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(Failure {
                location: loc.clone(),
                message: "validation failed".into(),
                causes: errors,
                is_ref: false,
                is_group: true,
            }),
        })
    }

    fn child(
        &mut self,
        schema: &'s Value,
        v: &Value,
        loc: &mut Vec<String>,
        token: &str,
    ) -> Result<Option<Failure>, String> {
        loc.push(token.to_string());
        let r = self.validate(schema, v, loc);
        loc.pop();
        r
    }

    fn object(
        &mut self,
        s: &'s Map<String, Value>,
        obj: &Map<String, Value>,
        loc: &mut Vec<String>,
        errors: &mut Vec<Failure>,
    ) -> Result<(), String> {
        if let Some(n) = s.get("minProperties").and_then(Value::as_u64)
            && (obj.len() as u64) < n
        {
            errors.push(self.fail(loc, format!("minProperties: got {}, want {}", obj.len(), n)));
        }
        if let Some(n) = s.get("maxProperties").and_then(Value::as_u64)
            && (obj.len() as u64) > n
        {
            errors.push(self.fail(loc, format!("maxProperties: got {}, want {}", obj.len(), n)));
        }
        let missing = |list: &Value| -> Vec<String> {
            list.as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .filter(|p| !obj.contains_key(*p))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(req) = s.get("required") {
            let m = missing(req);
            if m.len() == 1 {
                errors.push(self.fail(loc, format!("missing property {}", quote(&m[0]))));
            } else if !m.is_empty() {
                errors.push(self.fail(loc, format!("missing properties {}", join_quoted(&m))));
            }
        }
        if let Some(Value::Object(deps)) = s.get("dependencies") {
            for (p, dep) in deps {
                if !obj.contains_key(p) {
                    continue;
                }
                if dep.is_array() {
                    let m = missing(dep);
                    if !m.is_empty() {
                        errors.push(self.fail(
                            loc,
                            format!(
                                "properties {} required, if {} exists",
                                join_quoted(&m),
                                quote(p)
                            ),
                        ));
                    }
                } else if let Some(f) = self.validate(dep, &Value::Object(obj.clone()), loc)? {
                    errors.push(f);
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        let patterns: Vec<(regex::Regex, &'s Value)> = match s.get("patternProperties") {
            Some(Value::Object(pp)) => pp
                .iter()
                .map(|(k, v)| {
                    regex::Regex::new(k)
                        .map(|r| (r, v))
                        .map_err(|e| format!("invalid patternProperties regex {k:?}: {e}"))
                })
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        let mut additional_names = Vec::new();
        let mut keys: Vec<&String> = obj.keys().collect();
        keys.sort();
        for key in keys {
            let pv = &obj[key];
            let mut evaluated = false;
            if let Some(sch) = props.and_then(|p| p.get(key)) {
                evaluated = true;
                if let Some(f) = self.child(sch, pv, loc, key)? {
                    errors.push(f);
                }
            }
            for (re, sch) in &patterns {
                if re.is_match(key) {
                    evaluated = true;
                    if let Some(f) = self.child(sch, pv, loc, key)? {
                        errors.push(f);
                    }
                }
            }
            if !evaluated {
                match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => additional_names.push(key.clone()),
                    Some(sch @ Value::Object(_)) => {
                        if let Some(f) = self.child(sch, pv, loc, key)? {
                            errors.push(f);
                        }
                    }
                    _ => {}
                }
            }
        }
        if !additional_names.is_empty() {
            errors.push(self.fail(
                loc,
                format!(
                    "additional properties {} not allowed",
                    join_quoted(&additional_names)
                ),
            ));
        }
        if self.draft == Draft::D4 {
            return Ok(());
        }
        if let Some(pn) = s.get("propertyNames") {
            let mut names: Vec<&String> = obj.keys().collect();
            names.sort();
            for name in names {
                if let Some(f) = self.validate(pn, &Value::String(name.clone()), loc)? {
                    errors.push(self.group(
                        loc,
                        &format!("invalid propertyName {}", quote(name)),
                        f.causes,
                    ));
                }
            }
        }
        if self.draft == Draft::D6 {
            return Ok(());
        }
        if let Some(Value::Object(ds)) = s.get("dependentSchemas") {
            for (p, sch) in ds {
                if obj.contains_key(p)
                    && let Some(f) = self.validate(sch, &Value::Object(obj.clone()), loc)?
                {
                    errors.push(f);
                }
            }
        }
        if let Some(Value::Object(dr)) = s.get("dependentRequired") {
            for (p, req) in dr {
                if obj.contains_key(p) {
                    let m = missing(req);
                    if !m.is_empty() {
                        errors.push(self.fail(
                            loc,
                            format!(
                                "properties {} required, if {} exists",
                                join_quoted(&m),
                                quote(p)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn array(
        &mut self,
        s: &'s Map<String, Value>,
        arr: &[Value],
        loc: &mut Vec<String>,
        errors: &mut Vec<Failure>,
    ) -> Result<(), String> {
        if let Some(n) = s.get("minItems").and_then(Value::as_u64)
            && (arr.len() as u64) < n
        {
            errors.push(self.fail(loc, format!("minItems: got {}, want {}", arr.len(), n)));
        }
        if let Some(n) = s.get("maxItems").and_then(Value::as_u64)
            && (arr.len() as u64) > n
        {
            errors.push(self.fail(loc, format!("maxItems: got {}, want {}", arr.len(), n)));
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) && arr.len() > 1 {
            'outer: for i in 0..arr.len() {
                for j in i + 1..arr.len() {
                    if equals(&arr[i], &arr[j]) {
                        errors.push(self.fail(loc, format!("items at {i} and {j} are equal")));
                        break 'outer;
                    }
                }
            }
        }
        if self.draft < Draft::D2020 {
            let mut evaluated = 0;
            match s.get("items") {
                Some(Value::Array(schemas)) => {
                    let n = schemas.len().min(arr.len());
                    for i in 0..n {
                        if let Some(f) = self.child(&schemas[i], &arr[i], loc, &i.to_string())? {
                            errors.push(f);
                        }
                    }
                    evaluated = n;
                }
                Some(sch) => {
                    for (i, item) in arr.iter().enumerate() {
                        if let Some(f) = self.child(sch, item, loc, &i.to_string())? {
                            errors.push(f);
                        }
                    }
                    evaluated = arr.len();
                }
                None => {}
            }
            match s.get("additionalItems") {
                Some(Value::Bool(false)) if evaluated != arr.len() => {
                    errors.push(self.fail(
                        loc,
                        format!(
                            "last {} additionalItem(s) not allowed",
                            arr.len() - evaluated
                        ),
                    ));
                }
                Some(sch @ Value::Object(_)) => {
                    for (i, item) in arr[evaluated..].iter().enumerate() {
                        if let Some(f) = self.child(sch, item, loc, &i.to_string())? {
                            errors.push(f);
                        }
                    }
                }
                _ => {}
            }
        } else {
            let prefix = s.get("prefixItems").and_then(Value::as_array);
            let evaluated = prefix.map_or(0, |p| p.len().min(arr.len()));
            if let Some(p) = prefix {
                for i in 0..evaluated {
                    if let Some(f) = self.child(&p[i], &arr[i], loc, &i.to_string())? {
                        errors.push(f);
                    }
                }
            }
            if let Some(sch) = s.get("items") {
                for (i, item) in arr[evaluated..].iter().enumerate() {
                    if let Some(f) = self.child(sch, item, loc, &i.to_string())? {
                        errors.push(f);
                    }
                }
            }
        }
        if let Some(c) = s.get("contains") {
            let mut failures = Vec::new();
            let mut matched = Vec::new();
            for (i, item) in arr.iter().enumerate() {
                match self.child(c, item, loc, &i.to_string())? {
                    Some(f) => failures.push(f),
                    None => matched.push(i),
                }
            }
            let list = |m: &[usize]| {
                m.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if let Some(min) = s.get("minContains").and_then(Value::as_u64) {
                if (matched.len() as u64) < min {
                    let msg = if matched.is_empty() {
                        format!(
                            "min {min} items required to match contains schema, but none matched"
                        )
                    } else {
                        format!(
                            "min {min} items required to match contains schema, but matched {} items at {}",
                            matched.len(),
                            list(&matched)
                        )
                    };
                    errors.push(self.group(loc, &msg, failures));
                }
            } else if matched.is_empty() {
                errors.push(self.group(loc, "no items match contains schema", failures));
            }
            if let Some(max) = s.get("maxContains").and_then(Value::as_u64)
                && (matched.len() as u64) > max
            {
                errors.push(self.fail(loc, format!("max {max} items required to match contains schema, but matched {} items at {}", matched.len(), list(&matched))));
            }
        }
        Ok(())
    }

    fn string(
        &mut self,
        s: &Map<String, Value>,
        st: &str,
        loc: &[String],
        errors: &mut Vec<Failure>,
    ) {
        let len = st.chars().count() as u64;
        if let Some(n) = s.get("minLength").and_then(Value::as_u64)
            && len < n
        {
            errors.push(self.fail(loc, format!("minLength: got {len}, want {n}")));
        }
        if let Some(n) = s.get("maxLength").and_then(Value::as_u64)
            && len > n
        {
            errors.push(self.fail(loc, format!("maxLength: got {len}, want {n}")));
        }
        if let Some(Value::String(p)) = s.get("pattern")
            && let Ok(re) = regex::Regex::new(p)
            && !re.is_match(st)
        {
            errors.push(self.fail(
                loc,
                format!("{} does not match pattern {}", quote(st), quote(p)),
            ));
        }
    }

    fn number(
        &mut self,
        s: &Map<String, Value>,
        v: &Value,
        loc: &[String],
        errors: &mut Vec<Failure>,
    ) {
        let Some(x) = num(v) else { return };
        let show = localized_number;
        let draft4_exclusive =
            |key: &str| self.draft == Draft::D4 && s.get(key) == Some(&Value::Bool(true));
        if let Some(min) = s.get("minimum").and_then(num) {
            if draft4_exclusive("exclusiveMinimum") {
                if x <= min {
                    errors.push(self.fail(
                        loc,
                        format!("exclusiveMinimum: got {}, want {}", show(x), show(min)),
                    ));
                }
            } else if x < min {
                errors
                    .push(self.fail(loc, format!("minimum: got {}, want {}", show(x), show(min))));
            }
        }
        if let Some(max) = s.get("maximum").and_then(num) {
            if draft4_exclusive("exclusiveMaximum") {
                if x >= max {
                    errors.push(self.fail(
                        loc,
                        format!("exclusiveMaximum: got {}, want {}", show(x), show(max)),
                    ));
                }
            } else if x > max {
                errors
                    .push(self.fail(loc, format!("maximum: got {}, want {}", show(x), show(max))));
            }
        }
        if self.draft != Draft::D4 {
            if let Some(m) = s.get("exclusiveMinimum").and_then(num)
                && x <= m
            {
                errors.push(self.fail(
                    loc,
                    format!("exclusiveMinimum: got {}, want {}", show(x), show(m)),
                ));
            }
            if let Some(m) = s.get("exclusiveMaximum").and_then(num)
                && x >= m
            {
                errors.push(self.fail(
                    loc,
                    format!("exclusiveMaximum: got {}, want {}", show(x), show(m)),
                ));
            }
        }
        if let Some(m) = s.get("multipleOf").and_then(num)
            && m != 0.0
        {
            let q = x / m;
            if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
                errors.push(self.fail(
                    loc,
                    format!("multipleOf: got {}, want {}", show(x), show(m)),
                ));
            }
        }
    }

    fn conditionals(
        &mut self,
        s: &'s Map<String, Value>,
        v: &Value,
        loc: &mut Vec<String>,
        errors: &mut Vec<Failure>,
    ) -> Result<(), String> {
        if let Some(n) = s.get("not")
            && self.validate(n, v, loc)?.is_none()
        {
            errors.push(self.fail(loc, "not failed".into()));
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            let mut failures = Vec::new();
            for sch in all {
                if let Some(f) = self.validate(sch, v, loc)? {
                    failures.push(f);
                }
            }
            if !failures.is_empty() {
                errors.push(self.group(loc, "allOf failed", failures));
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let mut failures = Vec::new();
            let mut matched = false;
            for sch in any {
                match self.validate(sch, v, loc)? {
                    Some(f) => failures.push(f),
                    None => {
                        matched = true;
                        break;
                    }
                }
            }
            if !matched {
                errors.push(self.group(loc, "anyOf failed", failures));
            }
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let mut failures = Vec::new();
            let mut matched: Option<usize> = None;
            for (i, sch) in one.iter().enumerate() {
                match self.validate(sch, v, loc)? {
                    Some(f) => {
                        if matched.is_none() {
                            failures.push(f);
                        }
                    }
                    None => match matched {
                        None => matched = Some(i),
                        Some(first) => {
                            errors.push(self.fail(
                                loc,
                                format!("oneOf failed, subschemas {first}, {i} matched"),
                            ));
                            break;
                        }
                    },
                }
            }
            if matched.is_none() {
                errors.push(self.group(loc, "oneOf failed, none matched", failures));
            }
        }
        if self.draft >= Draft::D7
            && let Some(cond) = s.get("if")
        {
            let branch = if self.validate(cond, v, loc)?.is_none() {
                s.get("then")
            } else {
                s.get("else")
            };
            if let Some(b) = branch
                && let Some(f) = self.validate(b, v, loc)?
            {
                errors.push(f);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, values: Value) -> Option<String> {
        let Value::Object(m) = values else {
            return None;
        };
        validate(schema.to_string().as_bytes(), &m).unwrap_or_else(Some)
    }

    #[test]
    fn messages() {
        let schema = json!({
            "type": "object",
            "required": ["image"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1},
                "image": {},
                "mode": {"enum": ["a", "b"]},
                "name": {"type": "string", "pattern": "^[a-z]+$"}
            },
            "additionalProperties": false
        });
        assert_eq!(
            check(schema.clone(), json!({"replicas": 0.0, "image": {}})),
            Some("- at '/replicas': minimum: got 0, want 1\n".into())
        );
        assert_eq!(
            check(schema.clone(), json!({"replicas": "x"})),
            Some(
                "- at '': missing property 'image'\n- at '/replicas': got string, want integer\n"
                    .into()
            )
        );
        assert_eq!(
            check(schema.clone(), json!({"image": 1, "mode": "c", "zz": 1})),
            Some("- at '/mode': value must be one of 'a', 'b'\n- at '': additional properties 'zz' not allowed\n".into())
        );
        assert_eq!(check(schema, json!({"image": 1, "replicas": 2.0})), None);
    }

    #[test]
    fn refs_and_combinators() {
        let schema = json!({
            "$defs": {"port": {"type": "integer", "maximum": 65535}},
            "properties": {"port": {"$ref": "#/$defs/port"}, "x": {"anyOf": [{"type": "string"}, {"type": "boolean"}]}}
        });
        assert_eq!(
            check(schema.clone(), json!({"port": 70000.0})),
            Some("- at '/port': maximum: got 70,000, want 65,535\n".into())
        );
        assert_eq!(
            check(schema, json!({"x": 1.0})),
            Some("- at '/x': anyOf failed\n  - at '/x': got number, want string\n  - at '/x': got number, want boolean\n".into())
        );
    }
}
