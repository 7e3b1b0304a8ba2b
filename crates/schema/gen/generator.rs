//! Generator of `data/k8s-merge.json` from the source of k8s-openapi.
//!
//! k8s-openapi's code generator turns the Kubernetes OpenAPI extensions (`x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`,
//! `x-kubernetes-map-type`) into one `impl DeepMerge` per type, and the `Resource` impls carry each
//! kind's apiVersion and scope. This file reads that generated Rust source as text (it is never
//! compiled here) and writes a compact JSON file the runtime crate embeds.
//!
//! Shared by `examples/generate-merge-data.rs` (writes the file) and `tests/schema/data_fresh.rs` (fails
//! when the committed file differs from a fresh generation).

#![allow(dead_code)]

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Lists where Kubernetes declares `x-kubernetes-list-map-keys` that extend the patch merge key.
///
/// k8s-openapi's codegen replaces the list-map keys by the single patch merge key when both
/// exist, so its generated code cannot tell these apart. These are the entries where the
/// Kubernetes API types declare a different key set for server-side apply (and where kustomize's
/// strategic merge, which prefers the list-map keys, merges by them too). Each entry is checked
/// against `kubectl kustomize` by an oracle case in `tests/cases/` (`ports-same-number-*`,
/// `service-ports-*`, `topology-spread-*`), so a wrong entry fails the test suite.
pub const LIST_MAP_KEYS_BEYOND_PATCH_KEY: &[(&str, &str, &[&str])] = &[
    (
        "io.k8s.api.core.v1.Container",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "ports",
        &["containerPort", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.ServiceSpec",
        "ports",
        &["port", "protocol"],
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
];

/// The k8s-openapi crate directory, found through `cargo metadata` (the copy Cargo.lock pins).
pub fn locate_k8s_openapi(manifest_dir: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(manifest_dir)
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("parsing cargo metadata output: {e}"))?;
    let packages = meta["packages"]
        .as_array()
        .ok_or("cargo metadata has no packages")?;
    for p in packages {
        if p["name"] == "k8s-openapi"
            && p["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("0.29."))
        {
            let manifest = p["manifest_path"]
                .as_str()
                .ok_or("k8s-openapi has no manifest_path")?;
            let dir = Path::new(manifest)
                .parent()
                .ok_or("k8s-openapi manifest_path has no parent")?;
            return Ok(dir.to_path_buf());
        }
    }
    Err("k8s-openapi 0.29 is not in cargo metadata (is it in Cargo.lock?)".to_string())
}

/// The `src/v1_NN` module that k8s-openapi's `latest` feature enables, read from its Cargo.toml.
pub fn latest_module(crate_dir: &Path) -> Result<String, String> {
    let toml = std::fs::read_to_string(crate_dir.join("Cargo.toml"))
        .map_err(|e| format!("reading k8s-openapi Cargo.toml: {e}"))?;
    for line in toml.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("latest = [") {
            let module = rest.trim_end_matches(']').trim().trim_matches('"');
            if module.starts_with("v1_") {
                return Ok(module.to_string());
            }
        }
    }
    Err("k8s-openapi Cargo.toml has no `latest = [\"v1_NN\"]` feature".to_string())
}

/// One parsed source file: a struct with its fields, JSON names, merge statements, resource info.
#[derive(Default)]
struct TypeSource {
    definition: String,
    rust_path: String,
    /// rust field name -> rust type text
    fields: Vec<(String, String)>,
    /// rust field name -> JSON field name
    json_names: HashMap<String, String>,
    /// the statements of `fn merge_from`, if the type implements DeepMerge as a struct
    merge_statements: Vec<String>,
    /// (apiVersion, kind, scope, URL path segment)
    resource: Option<(String, String, String, String)>,
}

/// The element type of a Rust field type, as k8s-openapi writes them.
#[derive(Debug, Clone)]
enum Ty {
    Scalar,
    Named(String),
    Vec(Box<Ty>),
    Map(Box<Ty>),
}

fn parse_ty(t: &str) -> Ty {
    let t = t.trim();
    for wrapper in ["Option<", "std::boxed::Box<"] {
        if let Some(inner) = t.strip_prefix(wrapper).and_then(|r| r.strip_suffix('>')) {
            return parse_ty(inner);
        }
    }
    if let Some(inner) = t
        .strip_prefix("std::vec::Vec<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return Ty::Vec(Box::new(parse_ty(inner)));
    }
    if let Some(inner) = t
        .strip_prefix("std::collections::BTreeMap<std::string::String,")
        .and_then(|r| r.strip_suffix('>'))
    {
        return Ty::Map(Box::new(parse_ty(inner)));
    }
    if t.starts_with("crate::") && !t.contains('<') {
        return Ty::Named(t.to_string());
    }
    Ty::Scalar
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn quoted_after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.trim().strip_prefix(prefix)?;
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    Some(&rest[start..end])
}

/// The text between the `{` that ends `header` and its matching `}`.
fn block_after<'a>(src: &'a str, header: &str) -> Option<&'a str> {
    let start = src.find(header)? + header.len();
    let mut depth = 1usize;
    for (i, c) in src[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&src[start..start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits at `sep` where no bracket is open. Closure parameter lists (`|a, b|`) count as brackets.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut in_pipes = false;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '|' if depth == 0 => in_pipes = !in_pipes,
            _ => {}
        }
        if c == sep && depth == 0 && !in_pipes {
            parts.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}

fn parse_file(path: &Path, version_dir: &Path) -> Result<Option<TypeSource>, String> {
    let src =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let Some(definition) = src
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("// Generated from definition "))
    else {
        return Ok(None);
    };
    let mut ts = TypeSource {
        definition: definition.trim().to_string(),
        ..Default::default()
    };
    let Some(struct_line) = src.lines().find(|l| l.starts_with("pub struct ")) else {
        return Ok(None);
    };
    let name = struct_line
        .trim_start_matches("pub struct ")
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default();
    if struct_line.contains('<') || struct_line.contains('(') || name.is_empty() {
        // Generic wrappers (List<T>, WatchEvent<T>) carry no schema of their own; newtypes over
        // JSON values merge like unknown fields.
        return Ok(None);
    }
    let rel = path
        .strip_prefix(version_dir)
        .map_err(|_| format!("{} is outside {}", path.display(), version_dir.display()))?;
    let module: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ts.rust_path = format!("crate::{}::{name}", module.join("::"));

    // The struct body ends at the first unindented `}`; doc comments may hold braces.
    let struct_body = src
        .lines()
        .skip_while(|l| !l.starts_with("pub struct "))
        .skip(1)
        .take_while(|l| *l != "}");
    for line in struct_body {
        if let Some((field, ty)) = line
            .strip_prefix("    pub ")
            .and_then(|rest| rest.split_once(": "))
        {
            ts.fields
                .push((field.to_string(), ty.trim_end_matches(',').to_string()));
        }
    }
    for line in src.lines() {
        let l = line.trim();
        if let Some((json, rest)) = l
            .strip_prefix('"')
            .and_then(|r| r.split_once("\" => Field::Key_"))
        {
            ts.json_names
                .insert(rest.trim_end_matches(',').to_string(), json.to_string());
        }
    }
    if let Some(body) = block_after(&src, "fn merge_from(&mut self, other: Self) {") {
        ts.merge_statements = split_top(body, ';');
    }
    if let Some(body) = block_after(&src, &format!("impl crate::Resource for {name} {{")) {
        let mut api_version = None;
        let mut kind = None;
        let mut scope = None;
        let mut plural = None;
        for line in body.lines() {
            if let Some(v) = quoted_after(line, "const URL_PATH_SEGMENT") {
                plural = Some(v.to_string());
            }
            if let Some(v) = quoted_after(line, "const API_VERSION") {
                api_version = Some(v.to_string());
            }
            if let Some(v) = quoted_after(line, "const KIND") {
                kind = Some(v.to_string());
            }
            if let Some(s) = line.trim().strip_prefix("type Scope = crate::") {
                scope = Some(
                    s.trim_end_matches(';')
                        .trim_end_matches("ResourceScope")
                        .to_string(),
                );
            }
        }
        if let (Some(a), Some(k), Some(s), Some(p)) = (api_version, kind, scope, plural) {
            ts.resource = Some((a, k, s, p));
        }
    }
    Ok(Some(ts))
}

/// Rust paths of types that hold arbitrary JSON: newtypes over `serde_json::Value`
/// (RawExtension, JSON, FieldsV1, …), the JSONSchemaPropsOr* enums, and `serde_json::Value`.
fn free_form_paths(files: &[PathBuf], version_dir: &Path) -> Result<HashSet<String>, String> {
    let mut out = HashSet::new();
    out.insert("crate::serde_json::Value".to_string());
    for f in files {
        let src =
            std::fs::read_to_string(f).map_err(|e| format!("reading {}: {e}", f.display()))?;
        let module: Vec<String> = f
            .strip_prefix(version_dir)
            .ok()
            .and_then(Path::parent)
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        for line in src.lines() {
            let name = if let Some(rest) = line.strip_prefix("pub struct ") {
                if !rest.contains("(pub crate::serde_json::Value)") {
                    continue;
                }
                rest.split('(').next().unwrap_or_default()
            } else if let Some(rest) = line.strip_prefix("pub enum JSONSchemaPropsOr") {
                let n = rest.split(' ').next().unwrap_or_default();
                out.insert(format!(
                    "crate::{}::JSONSchemaPropsOr{n}",
                    module.join("::")
                ));
                continue;
            } else {
                continue;
            };
            out.insert(format!("crate::{}::{name}", module.join("::")));
        }
    }
    Ok(out)
}

struct Ctx<'a> {
    by_path: &'a HashMap<String, TypeSource>,
}

impl Ctx<'_> {
    fn json_name(&self, type_path: &str, rust_field: &str) -> Result<String, String> {
        let ts = self
            .by_path
            .get(type_path)
            .ok_or_else(|| format!("unknown type {type_path}"))?;
        ts.json_names
            .get(rust_field)
            .cloned()
            .ok_or_else(|| format!("{type_path} has no JSON name for field {rust_field}"))
    }

    /// Whether a struct field holds a scalar (a primitive, or a newtype such as IntOrString).
    fn is_scalar_field(&self, type_path: &str, rust_field: &str) -> bool {
        let Some(ts) = self.by_path.get(type_path) else {
            return false;
        };
        let Some((_, ty)) = ts.fields.iter().find(|(f, _)| f == rust_field) else {
            return false;
        };
        match parse_ty(ty) {
            Ty::Scalar => true,
            Ty::Named(p) => self.by_path.get(&p).is_none_or(|t| t.fields.is_empty()),
            Ty::Vec(_) | Ty::Map(_) => false,
        }
    }

    /// The shape of a value of type `ty` merged by the statement `stmt`; None for scalars.
    fn shape(&self, ty: &Ty, stmt: &str) -> Result<Option<Value>, String> {
        let (callee, args) = stmt
            .split_once('(')
            .ok_or_else(|| format!("unexpected merge statement: {stmt}"))?;
        let args = split_top(args.trim_end().trim_end_matches(')'), ',');
        match callee.trim() {
            "crate::DeepMerge::merge_from" => Ok(match ty {
                Ty::Named(p) => self.by_path.get(p).map(|t| json!({"type": t.definition})),
                _ => None,
            }),
            "crate::merge_strategies::list::atomic" => Ok(Some(json!({"list": "atomic"}))),
            "crate::merge_strategies::list::set" => Ok(Some(json!({"list": "set"}))),
            "crate::merge_strategies::map::atomic" => Ok(Some(json!({"map": "atomic"}))),
            "crate::merge_strategies::list::map" => {
                let Ty::Vec(item) = ty else {
                    return Err(format!("list::map on a non-list: {stmt}"));
                };
                let Ty::Named(item_path) = item.as_ref() else {
                    return Err(format!("list::map of non-struct items: {stmt}"));
                };
                let keys_arg = args.get(2).ok_or_else(|| format!("no keys in {stmt}"))?;
                let mut keys = Vec::new();
                for part in keys_arg.split("lhs.").skip(1) {
                    let field = part
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or_default();
                    if !self.is_scalar_field(item_path, field) {
                        // A key that is itself an object (StatefulSet volumeClaimTemplates is keyed
                        // by `metadata`) identifies nothing: neither strategic merge nor
                        // server-side apply can match elements by it, so the list is atomic.
                        return Ok(Some(json!({"list": "atomic"})));
                    }
                    keys.push(Value::String(self.json_name(item_path, field)?));
                }
                let mut m = Map::new();
                m.insert("list".into(), "map".into());
                m.insert("keys".into(), Value::Array(keys));
                let inner = closure_body(args.get(3).map(String::as_str).unwrap_or_default())?;
                if let Some(s) = self.shape(item, &inner)? {
                    m.insert("item".into(), s);
                }
                Ok(Some(Value::Object(m)))
            }
            "crate::merge_strategies::map::granular" => {
                let Ty::Map(value) = ty else {
                    return Err(format!("map::granular on a non-map: {stmt}"));
                };
                let mut m = Map::new();
                m.insert("map".into(), "granular".into());
                let inner = closure_body(args.get(2).map(String::as_str).unwrap_or_default())?;
                if let Some(s) = self.shape(value, &inner)? {
                    m.insert("value".into(), s);
                }
                Ok(Some(Value::Object(m)))
            }
            other => Err(format!("unknown merge call {other} in: {stmt}")),
        }
    }
}

fn closure_body(closure: &str) -> Result<String, String> {
    let open = closure
        .find('{')
        .ok_or_else(|| format!("closure without body: {closure}"))?;
    let close = closure
        .rfind('}')
        .ok_or_else(|| format!("closure without body: {closure}"))?;
    let stmts = split_top(&closure[open + 1..close], ';');
    match stmts.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "closure with {} statements: {closure}",
            stmts.len()
        )),
    }
}

/// Generates the data file's text from the k8s-openapi crate at `crate_dir`.
pub fn generate(crate_dir: &Path) -> Result<String, String> {
    let module = latest_module(crate_dir)?;
    let version_dir = crate_dir.join("src").join(&module);
    let mut files = Vec::new();
    rust_files(&version_dir, &mut files)?;
    files.sort();
    let mut by_path = HashMap::new();
    for f in &files {
        if let Some(ts) = parse_file(f, &version_dir)? {
            by_path.insert(ts.rust_path.clone(), ts);
        }
    }
    let ctx = Ctx { by_path: &by_path };
    let free_form = free_form_paths(&files, &version_dir)?;

    let mut types: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut scalars: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ts in by_path.values() {
        let field_types: HashMap<&str, &str> = ts
            .fields
            .iter()
            .map(|(f, t)| (f.as_str(), t.as_str()))
            .collect();
        let mut fields = BTreeMap::new();
        let mut type_scalars = BTreeSet::new();
        for stmt in &ts.merge_statements {
            let Some(rest) = stmt.split_once("&mut self.").map(|(_, r)| r) else {
                continue;
            };
            let field = rest
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or_default();
            let ty = field_types
                .get(field)
                .ok_or_else(|| format!("{}: merge of unknown field {field}", ts.definition))?;
            let json = ctx.json_name(&ts.rust_path, field)?;
            if let Some(mut shape) = ctx.shape(&parse_ty(ty), stmt)? {
                for (def, f, keys) in LIST_MAP_KEYS_BEYOND_PATCH_KEY {
                    if *def == ts.definition && *f == json {
                        shape["ssaKeys"] = json!(keys);
                    }
                }
                fields.insert(json, shape);
            } else if matches!(parse_ty(ty), Ty::Named(p) if free_form.contains(&p)) {
                fields.insert(json, json!({"any": true}));
            } else {
                type_scalars.insert(json);
            }
        }
        if ts.resource.is_some() {
            // Constants in k8s-openapi, fields on the wire.
            type_scalars.insert("apiVersion".to_string());
            type_scalars.insert("kind".to_string());
        }
        scalars.insert(ts.definition.clone(), type_scalars);
        types.insert(ts.definition.clone(), fields.into_iter().collect());
    }
    for (def, f, _) in LIST_MAP_KEYS_BEYOND_PATCH_KEY {
        let known = types
            .get(*def)
            .and_then(|t| t.get(*f))
            .is_some_and(|s| s.get("ssaKeys").is_some());
        if !known {
            return Err(format!(
                "{def}.{f} is no longer a list-map in k8s-openapi: update LIST_MAP_KEYS_BEYOND_PATCH_KEY"
            ));
        }
    }

    let mut kinds: Vec<(String, String, String, String, String)> = by_path
        .values()
        .filter_map(|ts| {
            ts.resource.as_ref().map(|(a, k, s, p)| {
                (
                    a.clone(),
                    k.clone(),
                    ts.definition.clone(),
                    s.clone(),
                    p.clone(),
                )
            })
        })
        .collect();
    kinds.sort();

    // Keep only the types reachable from a kind: nothing else can be looked up.
    let mut reachable = BTreeSet::new();
    let mut stack: Vec<String> = kinds.iter().map(|k| k.2.clone()).collect();
    while let Some(t) = stack.pop() {
        if !reachable.insert(t.clone()) {
            continue;
        }
        if let Some(fields) = types.get(&t) {
            let mut refs = Vec::new();
            for shape in fields.values() {
                collect_refs(shape, &mut refs);
            }
            stack.extend(refs);
        }
    }
    // Types with only scalar fields stay too: merging does not need them, but server-side apply
    // asks their names (struct-level atomicity, e.g. SecretKeySelector) and validation their
    // field names.

    let version = crate_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    out.push_str("{\n");
    out.push_str(&format!(
        "\"source\": {},\n",
        Value::String(format!(
            "{version} src/{module} (generated by crates/schema/examples/generate-merge-data.rs)"
        ))
    ));
    out.push_str("\"kinds\": [\n");
    let kind_lines: Vec<String> = kinds
        .iter()
        .map(|(a, k, d, s, p)| json!([a, k, d, s, p]).to_string())
        .collect();
    out.push_str(&kind_lines.join(",\n"));
    out.push_str("\n],\n\"types\": {\n");
    let mut type_lines = Vec::new();
    for (name, fields) in &types {
        if !reachable.contains(name) {
            continue;
        }
        let fields = Value::Object(fields.clone());
        let scalar_names: Vec<&String> = scalars
            .get(name)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let entry = json!({"fields": fields, "scalars": scalar_names});
        type_lines.push(format!("{}: {}", Value::String(name.clone()), entry));
    }
    out.push_str(&type_lines.join(",\n"));
    out.push_str("\n}\n}\n");
    Ok(out)
}

fn collect_refs(shape: &Value, out: &mut Vec<String>) {
    if let Some(t) = shape.get("type").and_then(Value::as_str) {
        out.push(t.to_string());
    }
    for k in ["item", "value"] {
        if let Some(s) = shape.get(k) {
            collect_refs(s, out);
        }
    }
}
