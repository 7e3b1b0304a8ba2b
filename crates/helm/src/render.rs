//! Helm's template engine (`pkg/engine`): every template of the chart and its enabled subcharts
//! in one Go template set (parsed deepest path first, so a parent's `define` overrides a
//! subchart's), each chart's objects (`.Values`, `.Chart`, `.Release`, `.Capabilities`,
//! `.Files`, `.Subcharts`, `.Template`), Helm's own functions (`include` with its nesting limit,
//! `tpl`, `required`, `fail`, `lookup`, the YAML/JSON functions) over Sprig's, `<no value>`
//! blanked, and Helm's rewording of parse and execution errors.

use std::collections::HashMap;
use std::sync::Arc;

use ferroflux_gotemplate::{
    CallContext, Func, FuncError, FuncMap, Map, MissingKey, Template, Type, Value,
};

use crate::objects::{Capabilities, CapabilitiesObj, FilesObj, chart_map};
use crate::tree::Node;

/// Helm's `recursionMaxNums`: how often one name may be `include`d inside itself.
const RECURSION_MAX: usize = 1000;
const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// Answers `lookup apiVersion kind namespace name`: a map (empty when nothing is found), or an
/// error message. `helm template` answers every lookup with an empty map.
pub type LookupFn =
    dyn Fn(&str, &str, &str, &str) -> Result<serde_json::Value, String> + Send + Sync;

/// A decoded value (numbers: float64 unless they came from `--set`, which makes int64) as a
/// template value.
pub fn to_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            if n.is_f64() {
                Value::Float(n.as_f64().unwrap_or(0.0))
            } else if let Some(i) = n.as_i64() {
                Value::Int64(i)
            } else {
                Value::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::list(a.iter().map(to_value).collect()),
        serde_json::Value::Object(o) => map_to_value(o),
    }
}

/// [`to_value`] of a JSON object.
fn map_to_value(o: &serde_json::Map<String, serde_json::Value>) -> Value {
    Value::Map(Map::from_iter(
        o.iter().map(|(k, v)| (k.clone(), to_value(v))),
    ))
}

/// A template value as JSON the way `encoding/json` sees it (float64 stays float64, int stays
/// integer), for `toYaml`/`toJson`.
/// Values as Helm's `toJson`/`toYaml` marshal them. With `keep_bytes` (toJson) a string keeps
/// bytes that are not UTF-8 in gotemplate's `gostr` form, for `gojson` to write as Go's
/// `encoding/json` does (`\ufffd` per byte); without it (toYaml, whose JSON step turns them
/// into U+FFFD characters before the YAML step) they become U+FFFD.
fn to_json(v: &Value, keep_bytes: bool) -> serde_json::Value {
    match v {
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::String(s) if keep_bytes => serde_json::Value::String(s.to_string()),
        Value::List(l) => {
            serde_json::Value::Array(l.iter().map(|x| to_json(x, keep_bytes)).collect())
        }
        Value::Map(m) => serde_json::Value::Object(
            m.read()
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v, keep_bytes)))
                .collect(),
        ),
        other => other.to_json(),
    }
}

/// One chart's template file, ready to parse.
struct Renderable {
    text: Arc<str>,
    /// The chart's data map (shared by all templates of that chart, as in Helm).
    data: Map,
    base_path: String,
}

fn warn_wrap(msg: &str) -> String {
    format!("{WARN_START}{msg}{WARN_END}")
}

/// Per-render state the `include` counters live in.
struct State {
    included: HashMap<String, usize>,
}

/// The release as `.Release` shows it.
#[derive(Debug, Clone)]
pub struct ReleaseInfo {
    pub name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_upgrade: bool,
    pub is_install: bool,
}

fn release_value(r: &ReleaseInfo) -> Value {
    let m = Map::new();
    m.insert("Name", r.name.as_str());
    m.insert("Namespace", r.namespace.as_str());
    m.insert("IsUpgrade", Value::Bool(r.is_upgrade));
    m.insert("IsInstall", Value::Bool(r.is_install));
    m.insert("Revision", Value::Int(r.revision));
    m.insert("Service", "Helm");
    Value::Map(m)
}

fn yaml_of(v: &Value) -> String {
    let text = crate::yaml::marshal(&to_json(v, false));
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

/// Helm's function map over `base` (Sprig's, without `env` and `expandenv`).
pub fn func_map(base: FuncMap, lookup: Option<Arc<LookupFn>>, strict: bool) -> FuncMap {
    let mut f = base;
    // Helm deletes these two from Sprig's map; a fresh map cannot delete, so they are replaced
    // by nothing: the base never gets them from us.
    f.insert(
        "toYaml",
        Func::fixed(&[Type::Any], |_, a| Ok(Value::from(yaml_of(&a[0])))),
    );
    f.insert(
        "mustToYaml",
        Func::fixed(&[Type::Any], |_, a| Ok(Value::from(yaml_of(&a[0])))),
    );
    f.insert(
        "toJson",
        Func::fixed(&[Type::Any], |_, a| {
            Ok(Value::from(crate::gojson::marshal(&to_json(&a[0], true))))
        }),
    );
    f.insert(
        "mustToJson",
        Func::fixed(&[Type::Any], |_, a| {
            Ok(Value::from(crate::gojson::marshal(&to_json(&a[0], true))))
        }),
    );
    f.insert(
        "fromYaml",
        Func::fixed(&[Type::String], |_, a| {
            let text = a[0].as_str().unwrap_or_default();
            Ok(match crate::yaml::unmarshal_map(text) {
                Ok(m) => to_value(&serde_json::Value::Object(m)),
                Err(e) => {
                    let m = Map::new();
                    m.insert("Error", Value::from(e));
                    Value::Map(m)
                }
            })
        }),
    );
    f.insert(
        "fromYamlArray",
        Func::fixed(&[Type::String], |_, a| {
            let text = a[0].as_str().unwrap_or_default();
            Ok(match crate::yaml::unmarshal(text) {
                Ok(serde_json::Value::Array(items)) => Value::list(items.iter().map(to_value).collect()),
                Ok(serde_json::Value::Null) => Value::list(Vec::new()),
                Ok(other) => Value::list(vec![Value::from(format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}",
                    crate::yaml::json_kind(&other)
                ))]),
                Err(e) => Value::list(vec![Value::from(e)]),
            })
        }),
    );
    f.insert(
        "fromJson",
        Func::fixed(&[Type::String], |_, a| {
            let text = a[0].as_str().unwrap_or_default();
            Ok(match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(m)) => to_value(&crate::yaml::floats(serde_json::Value::Object(m))),
                Ok(serde_json::Value::Null) => Value::Map(Map::new()),
                Ok(other) => {
                    let m = Map::new();
                    m.insert("Error", Value::from(format!("json: cannot unmarshal {} into Go value of type map[string]interface {{}}", crate::yaml::json_kind(&other))));
                    Value::Map(m)
                }
                Err(e) => {
                    let m = Map::new();
                    m.insert("Error", Value::from(e.to_string()));
                    Value::Map(m)
                }
            })
        }),
    );
    f.insert(
        "fromJsonArray",
        Func::fixed(&[Type::String], |_, a| {
            let text = a[0].as_str().unwrap_or_default();
            Ok(match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Array(items)) => Value::list(
                    items
                        .into_iter()
                        .map(|i| to_value(&crate::yaml::floats(i)))
                        .collect(),
                ),
                Ok(serde_json::Value::Null) => Value::list(Vec::new()),
                Ok(other) => Value::list(vec![Value::from(format!(
                    "json: cannot unmarshal {} into Go value of type []interface {{}}",
                    crate::yaml::json_kind(&other)
                ))]),
                Err(e) => Value::list(vec![Value::from(e.to_string())]),
            })
        }),
    );
    f.insert(
        "toYamlPretty",
        Func::fixed(&[Type::Any], |_, a| {
            let text = crate::yaml::marshal_pretty(&to_json(&a[0], false));
            Ok(Value::from(
                text.strip_suffix('\n').unwrap_or(&text).to_string(),
            ))
        }),
    );
    f.insert(
        "toToml",
        Func::fixed(&[Type::Any], |_, a| {
            Ok(Value::from(crate::toml::to_toml(&a[0])))
        }),
    );
    f.insert(
        "mustToToml",
        Func::fixed(&[Type::Any], |_, a| {
            let text = crate::toml::to_toml(&a[0]);
            if text.starts_with("toml: ") {
                return Err(FuncError::new(text));
            }
            Ok(Value::from(text))
        }),
    );
    f.insert(
        "fromToml",
        Func::fixed(&[Type::String], |_, a| {
            Ok(crate::toml::from_toml(a[0].as_str().unwrap_or_default()))
        }),
    );
    f.insert("include", Func::fixed(&[Type::String, Type::Any], include));
    f.insert(
        "tpl",
        Func::fixed(&[Type::String, Type::Any], move |ctx, a| {
            tpl(ctx, a, strict)
        }),
    );
    f.insert(
        "required",
        Func::fixed(&[Type::String, Type::Any], |_, a| {
            let warn = a[0].as_str().unwrap_or_default();
            match &a[1] {
                Value::Nil => Err(FuncError::new(warn_wrap(warn))),
                Value::String(s) if s.is_empty() => Err(FuncError::new(warn_wrap(warn))),
                v => Ok(v.clone()),
            }
        }),
    );
    f.insert(
        "fail",
        Func::fixed(&[Type::String], |_, a| {
            Err(FuncError::new(warn_wrap(a[0].as_str().unwrap_or_default())))
        }),
    );
    f.insert(
        "lookup",
        Func::fixed(
            &[Type::String, Type::String, Type::String, Type::String],
            move |_, a| {
                let s = |i: usize| a[i].as_str().unwrap_or_default();
                match &lookup {
                    None => Ok(Value::Map(Map::new())),
                    Some(l) => l(s(0), s(1), s(2), s(3))
                        .map(|v| match v {
                            serde_json::Value::Object(_) => to_value(&crate::yaml::floats(v)),
                            _ => Value::Map(Map::new()),
                        })
                        .map_err(FuncError::new),
                }
            },
        ),
    );
    f.insert(
        "getHostByName",
        Func::fixed(&[Type::String], |_, _| Ok(Value::from(""))),
    );
    f
}

fn include(ctx: &mut CallContext<'_>, a: &[Value]) -> Result<Value, FuncError> {
    let name = a[0].as_str().unwrap_or_default().to_string();
    let count = {
        let state = ctx.state::<State>();
        match state {
            Some(st) => {
                let c = st.included.entry(name.clone()).or_insert(0);
                if *c > RECURSION_MAX {
                    return Err(FuncError::new(format!(
                        "rendering template has a nested reference name: {name}: unable to execute template"
                    )));
                }
                *c += 1;
                true
            }
            None => false,
        }
    };
    let result = ctx.execute_template(&name, a[1].clone());
    if count
        && let Some(st) = ctx.state::<State>()
        && let Some(c) = st.included.get_mut(&name)
    {
        *c = c.saturating_sub(1);
    }
    Ok(Value::from(result?))
}

fn tpl(ctx: &mut CallContext<'_>, a: &[Value], strict: bool) -> Result<Value, FuncError> {
    let text = a[0].as_str().unwrap_or_default();
    let mut set = ctx.templates().clone().with_missing_key(if strict {
        MissingKey::Error
    } else {
        MissingKey::Zero
    });
    let name = set.name().to_string();
    set.parse(&name, text).map_err(|e| {
        FuncError::new(format!(
            "cannot parse template {}: {e}",
            crate::util::go_quote(text)
        ))
    })?;
    let out = ctx.execute_in(&set, &name, a[1].clone()).map_err(|e| {
        FuncError::new(format!(
            "error during tpl function execution for {}: {e}",
            crate::util::go_quote(text)
        ))
    })?;
    Ok(Value::from(out.replace("<no value>", "")))
}

/// Everything one render needs besides the chart tree.
pub struct RenderContext<'a> {
    pub release: &'a ReleaseInfo,
    pub capabilities: &'a Capabilities,
    pub values: &'a serde_json::Map<String, serde_json::Value>,
    pub funcs: &'a Arc<FuncMap>,
    pub cache: &'a ParseCache,
}

/// Parsed template sets by the hash of their files' names and texts: a chart rendered again
/// with the same enabled subcharts is not parsed again (the parse costs more than a render).
#[derive(Default)]
pub struct ParseCache(std::sync::Mutex<HashMap<u64, Template>>);

/// Most template sets kept; the cache is emptied when it is full.
const CACHE_LIMIT: usize = 64;

impl ParseCache {
    fn get_or_parse(
        &self,
        tpls: &[(String, Renderable)],
        funcs: &Arc<FuncMap>,
    ) -> Result<Template, String> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (name, r) in tpls {
            name.hash(&mut h);
            r.text.hash(&mut h);
        }
        let key = h.finish();
        let cached = self.0.lock().ok().and_then(|c| c.get(&key).cloned());
        if let Some(set) = cached {
            // The trees only depend on which function names exist; this render's functions
            // (its lookup callback) replace the cached set's.
            return Ok(set.with_shared_funcs(funcs.clone()));
        }
        let mut set = Template::named("gotpl")
            .with_shared_funcs(funcs.clone())
            .with_missing_key(MissingKey::Zero);
        for (name, r) in tpls {
            set.parse(name, &r.text)
                .map_err(|e| cleanup_parse_error(name, &e.to_string()))?;
        }
        if let Ok(mut c) = self.0.lock() {
            if c.len() >= CACHE_LIMIT {
                c.clear();
            }
            c.insert(key, set.clone());
        }
        Ok(set)
    }
}

fn full_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/charts/{name}")
    }
}

fn collect(
    node: &Node<'_>,
    parent_path: &str,
    parent_data: Option<&Map>,
    release: &Value,
    caps: &Value,
    root_values: &Value,
    out: &mut Vec<(String, Renderable)>,
) -> Map {
    let is_root = parent_data.is_none();
    let subcharts = Map::new();
    let values = match parent_data {
        None => root_values.clone(),
        Some(pd) => {
            let sub = pd
                .get("Values")
                .and_then(|v| v.as_map().and_then(|m| m.get(node.name())));
            match sub.as_ref().and_then(Value::as_map) {
                Some(m) => Value::Map(m.clone()),
                None => Value::Map(Map::new()),
            }
        }
    };
    let data = Map::new();
    data.insert("Chart", chart_map(&node.metadata, is_root));
    let shared = node.chart.shared();
    data.insert("Files", FilesObj::value(&shared.files));
    data.insert("Release", release.clone());
    data.insert("Capabilities", caps.clone());
    data.insert("Values", values);
    data.insert("Subcharts", Value::Map(subcharts.clone()));
    let path = full_path(parent_path, node.name());
    for child in &node.deps {
        let sub = collect(child, &path, Some(&data), release, caps, root_values, out);
        subcharts.insert(child.name(), Value::Map(sub));
    }
    let library = node.chart.is_library();
    for (t, text) in node.chart.templates.iter().zip(&shared.templates) {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if library && !base.starts_with('_') {
            continue;
        }
        let name = format!("{path}/{}", t.name);
        out.retain(|(n, _)| *n != name);
        out.push((
            name,
            Renderable {
                text: text.clone(),
                data: data.clone(),
                base_path: format!("{path}/templates"),
            },
        ));
    }
    data
}

/// Helm's parse order: more `/` first, then reverse lexical order (`sort.Reverse(byPathLen)`).
fn parse_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (ca, cb) = (a.matches('/').count(), b.matches('/').count());
    cb.cmp(&ca).then_with(|| b.cmp(a))
}

/// Renders every template of the tree: (path, output) of each non-partial template, in Helm's
/// execution order.
pub fn render(root: &Node<'_>, ctx: &RenderContext<'_>) -> Result<Vec<(String, String)>, String> {
    let release = release_value(ctx.release);
    let caps = CapabilitiesObj::value(ctx.capabilities);
    let root_values = map_to_value(ctx.values);
    let mut tpls = Vec::new();
    collect(root, "", None, &release, &caps, &root_values, &mut tpls);
    tpls.sort_by(|a, b| parse_order(&a.0, &b.0));
    let set = ctx.cache.get_or_parse(&tpls, ctx.funcs)?;
    let mut state = State {
        included: HashMap::new(),
    };
    let mut rendered = Vec::new();
    for (name, r) in &tpls {
        let base = name.rsplit('/').next().unwrap_or(name);
        if base.starts_with('_') {
            continue;
        }
        let t = Map::new();
        t.insert("Name", name.as_str());
        t.insert("BasePath", r.base_path.as_str());
        r.data.insert("Template", Value::Map(t));
        let out = set
            .execute_with_state(name, &Value::Map(r.data.clone()), &mut state)
            .map_err(|e| reformat_exec_error(name, &e.to_string()))?;
        rendered.push((name.clone(), out.replace("<no value>", "")));
    }
    Ok(rendered)
}

/// Helm's `cleanupParseError`.
fn cleanup_parse_error(filename: &str, err: &str) -> String {
    let tokens: Vec<&str> = err.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({filename}): {err}");
    }
    format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens[tokens.len() - 1]
    )
}

/// One link of Go's error chain as Helm's `TraceableError`.
#[derive(PartialEq)]
struct Traceable {
    location: String,
    message: String,
    executed: String,
}

impl Traceable {
    fn text(&self) -> String {
        let mut s = String::new();
        if !self.location.is_empty() {
            s.push_str(&self.location);
            s.push_str("\n  ");
        }
        if !self.executed.is_empty() {
            s.push_str(&self.executed);
            s.push_str("\n    ");
        }
        if !self.message.is_empty() {
            s.push_str(&self.message);
            s.push('\n');
        }
        s
    }
}

fn cut_template(msg: &str) -> &str {
    match msg.find(" template:") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

fn parse_traceable(s: &str) -> Option<Traceable> {
    let rest = s.strip_prefix("template: ")?;
    if rest.starts_with("no template ") {
        return Some(Traceable {
            location: String::new(),
            message: s.to_string(),
            executed: String::new(),
        });
    }
    if let Some((loc, after)) = rest.split_once(": executing ")
        && let Some(after) = after.strip_prefix('"')
        && let Some(end) = after.find('"')
    {
        let function = &after[..end];
        if let Some(after_at) = after[end + 1..].strip_prefix(" at <")
            && let Some((location_name, msg)) = after_at.split_once(">: ")
        {
            return Some(Traceable {
                location: loc.to_string(),
                message: cut_template(msg).to_string(),
                executed: format!("executing \"{function}\" at <{location_name}>:"),
            });
        }
    }
    let sep = rest.rfind(": ")?;
    Some(Traceable {
        location: rest[..sep].to_string(),
        message: cut_template(&rest[sep + 2..]).to_string(),
        executed: String::new(),
    })
}

/// The chain of errors Go would unwrap from an execution error's text: each function error
/// (`error calling NAME: …`) wraps the error its function returned.
fn error_chain(full: &str) -> Vec<String> {
    let mut chain = vec![full.to_string()];
    let mut cur = full.to_string();
    // The wrapped error follows the first `error calling NAME: ` after the node context.
    while let Some(at) = cur.find(">: error calling ") {
        let after = &cur[at + ">: error calling ".len()..];
        let Some(colon) = after.find(": ") else { break };
        let inner = after[colon + 2..].to_string();
        chain.push(inner.clone());
        cur = inner;
    }
    chain
}

/// Helm's `reformatExecErrorMsg`.
fn reformat_exec_error(filename: &str, err: &str) -> String {
    let tokens: Vec<&str> = err.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({filename}): {err}");
    }
    let location = tokens[1];
    if let (Some(s), Some(e)) = (tokens[2].find(WARN_START), tokens[2].rfind(WARN_END))
        && s + WARN_START.len() <= e
    {
        return format!(
            "execution error at ({location}): {}",
            &tokens[2][s + WARN_START.len()..e]
        );
    }
    let mut links: Vec<Traceable> = Vec::new();
    for link in error_chain(err) {
        match parse_traceable(&link) {
            Some(t) => {
                if links.last() != Some(&t) {
                    links.push(t);
                }
            }
            None => return err.to_string(),
        }
    }
    let text: String = links.iter().map(Traceable::text).collect();
    text.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_errors_are_reformatted_like_helm() {
        assert_eq!(
            reformat_exec_error(
                "c/templates/a.yaml",
                "template: c/templates/a.yaml:3:4: executing \"c/templates/a.yaml\" at <fail \"boom\">: error calling fail: HELM_ERR_STARTboomHELM_ERR_END"
            ),
            "execution error at (c/templates/a.yaml:3:4): boom"
        );
        assert_eq!(
            reformat_exec_error(
                "c/templates/a.yaml",
                "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"x\" .>: error calling include: template: c/templates/_h.tpl:1:14: executing \"x\" at <.Values.a.b>: nil pointer evaluating interface {}.b"
            ),
            "c/templates/a.yaml:1:3\n  executing \"c/templates/a.yaml\" at <include \"x\" .>:\n    error calling include:\nc/templates/_h.tpl:1:14\n  executing \"x\" at <.Values.a.b>:\n    nil pointer evaluating interface {}.b"
        );
        assert_eq!(
            cleanup_parse_error(
                "c/templates/a.yaml",
                "template: c/templates/a.yaml:3: unexpected \"}\" in operand"
            ),
            "parse error at (c/templates/a.yaml:3): unexpected \"}\" in operand"
        );
    }
}
