//! Field specs: "this path, in objects of this kind" — the way kustomize's built-in
//! transformers find the fields they change. Paths are `/`-separated (`\/` escapes a slash in a
//! key), descend into every element of a list on the way, and may create missing fields.

use serde_json::{Map, Value};

use crate::resource::split_api_version;

#[derive(Debug, Clone)]
pub struct FieldSpec {
    pub kind: String,
    pub group: String,
    pub version: String,
    pub path: Vec<String>,
    pub raw_path: String,
    pub create: bool,
}

impl FieldSpec {
    pub fn new(kind: &str, group: &str, version: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            kind: kind.into(),
            group: group.into(),
            version: version.into(),
            path: split_path(path),
            raw_path: path.into(),
            create,
        }
    }

    pub fn matches(&self, api_version: &str, kind: &str) -> bool {
        let (g, v) = split_api_version(api_version);
        (self.kind.is_empty() || self.kind == kind)
            && (self.group.is_empty() || self.group == g)
            && (self.version.is_empty() || self.version == v)
    }
}

/// Splits `a/b\/c/d` into `["a", "b/c", "d"]`.
pub fn split_path(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'/') {
            cur.push('/');
            chars.next();
        } else if c == '/' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out.retain(|s| !s.is_empty());
    out
}

/// What to create at the end of a path that does not exist yet.
#[derive(Clone, Copy, PartialEq)]
pub enum Create {
    Scalar,
    Map,
}

/// Walks `path` in `node`, calling `set` on every value found at its end (creating the path
/// when `create` is set). `set` receives `Value::Null` for a field it has to create.
pub fn apply(
    node: &mut Value,
    path: &[String],
    create: Option<Create>,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    if path.is_empty() {
        return set(node);
    }
    match node {
        Value::Null => Ok(()),
        Value::Array(items) => {
            for it in items {
                apply(it, path, create, set)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            let (name, is_seq) = match path[0].strip_suffix("[]") {
                Some(n) => (n, true),
                None => (path[0].as_str(), false),
            };
            let creating = create.is_some() && !is_seq;
            if !map.contains_key(name) {
                if !creating {
                    return Ok(());
                }
                let fresh = if path.len() == 1 {
                    match create {
                        Some(Create::Map) => Value::Object(Map::new()),
                        _ => Value::Null,
                    }
                } else {
                    Value::Object(Map::new())
                };
                map.insert(name.to_string(), fresh);
            }
            let Some(field) = map.get_mut(name) else {
                return Ok(());
            };
            if field.is_null() && creating && (path.len() > 1 || create == Some(Create::Map)) {
                *field = Value::Object(Map::new());
            }
            apply(field, &path[1..], create, set)
        }
        _ => Err("expected sequence or mapping node".into()),
    }
}

fn parse_line(l: &str) -> Option<FieldSpec> {
    let parts: Vec<&str> = l.splitn(5, ',').collect();
    if parts.len() < 4 {
        return None;
    }
    let create = parts.get(4).map(|s| s.trim() == "true").unwrap_or(false);
    Some(FieldSpec::new(
        parts[0], parts[1], parts[2], parts[3], create,
    ))
}

/// The built-in field specs of one transformer set (`commonLabels`, `images`, …).
pub fn builtin(set: &str) -> Vec<FieldSpec> {
    include_str!("data/fieldspecs.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (s, rest) = l.split_once(' ')?;
            if s == set { parse_line(rest) } else { None }
        })
        .collect()
}

/// A name-reference rule: objects of `referral` kind may be named in `referrer`'s field.
#[derive(Debug, Clone)]
pub struct NameRef {
    pub kind: String,
    pub group: String,
    pub version: String,
    pub referrer: FieldSpec,
}

pub fn name_references() -> Vec<NameRef> {
    include_str!("data/namereference.txt")
        .lines()
        .filter_map(|l| {
            let (target, spec) = l.split_once(' ')?;
            let t: Vec<&str> = target.split(',').collect();
            if t.len() != 3 {
                return None;
            }
            Some(NameRef {
                kind: t[0].into(),
                group: t[1].into(),
                version: t[2].into(),
                referrer: parse_line(spec)?,
            })
        })
        .collect()
}

pub fn var_references() -> Vec<FieldSpec> {
    include_str!("data/varreference.txt")
        .lines()
        .filter_map(parse_line)
        .collect()
}
