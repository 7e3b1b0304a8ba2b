//! `spec.pathPattern`: one set of output artifacts per directory of a source that matches
//! `@alias/dir/{capture}/...`. Each `{name}` matches one path segment (or part of one, as in
//! `app-{name}`); every directory of the source's tree (walked in name order, as Go's
//! `filepath.WalkDir`) whose whole relative path matches yields the spec's artifacts with the
//! captures filled in: lowercased in the artifact's name and in the labels the ExternalArtifact
//! gets (one per capture), as written in the copy rules' `from` and `to` (which read the tree).
//!
//! Refused, naming the pattern (source-watcher's checks): a pattern not `@alias/...`, an alias
//! that is not a source, unbalanced braces, an empty, malformed, duplicate or over-long capture
//! name, a template using a capture the pattern does not define, a captured value that is not a
//! label value, a rendered name that is not an object name, and two directories giving one name.

use ferroflux_api::artifactgenerator::OutputArtifact;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One output artifact of a matched directory, with the labels its ExternalArtifact gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Expanded {
    /// The artifact, its name and copy rules rendered.
    pub artifact: OutputArtifact,
    /// `capture name → lowercased value` (empty without a pattern).
    pub labels: BTreeMap<String, String>,
}

/// The artifacts to build: `outputs` as written when `pattern` is `None` or empty, otherwise
/// each output once per directory of the pattern's source that matches.
pub fn expand(
    pattern: Option<&str>,
    outputs: &[OutputArtifact],
    sources: &BTreeMap<String, PathBuf>,
) -> Result<Vec<Expanded>, String> {
    let Some(pattern) = pattern.filter(|p| !p.is_empty()) else {
        return Ok(outputs
            .iter()
            .map(|a| Expanded {
                artifact: a.clone(),
                labels: BTreeMap::new(),
            })
            .collect());
    };
    let (alias, rest) = pattern
        .strip_prefix('@')
        .and_then(|p| p.split_once('/'))
        .ok_or_else(|| format!("invalid pathPattern format: {pattern}"))?;
    let root = sources.get(alias).ok_or_else(|| {
        format!("pathPattern {pattern:?}: source alias {alias} not found in local sources")
    })?;
    let parts = parse(rest).map_err(|e| format!("pathPattern {pattern:?}: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    let mut regex = String::from("^");
    for part in &parts {
        match part {
            Part::Text(t) => regex.push_str(&regex::escape(t)),
            Part::Capture(name) => {
                if !seen.insert(name.as_str()) {
                    return Err(format!(
                        "pathPattern {pattern:?}: duplicate capture variable {name:?}"
                    ));
                }
                if name.len() > 63 {
                    return Err(format!(
                        "pathPattern {pattern:?}: capture variable {name:?} is not a valid Kubernetes label key: must be no more than 63 characters"
                    ));
                }
                regex.push_str("([^/]+)");
            }
        }
    }
    regex.push('$');
    let matcher = regex::Regex::new(&regex)
        .map_err(|e| format!("pathPattern {pattern:?}: failed to compile path pattern: {e}"))?;
    let names: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Capture(n) => Some(n.as_str()),
            Part::Text(_) => None,
        })
        .collect();

    let mut dirs = Vec::new();
    crate::glob::walk(root, "", &mut |rel| {
        if root.join(rel).is_dir() && !root.join(rel).is_symlink() {
            dirs.push(rel.to_string());
        }
    });
    let mut out = Vec::new();
    let mut named: BTreeMap<String, String> = BTreeMap::new();
    for rel in dirs {
        let Some(m) = matcher.captures(&rel) else {
            continue;
        };
        let mut raw = BTreeMap::new();
        let mut lower = BTreeMap::new();
        for (i, name) in names.iter().enumerate() {
            let value = m.get(i + 1).map(|v| v.as_str()).unwrap_or_default();
            let low = value.to_lowercase();
            if let Err(why) = label_value(&low) {
                return Err(format!(
                    "pathPattern {pattern:?}: captured value {low:?} for variable {name:?} is not a valid Kubernetes label value: {why}"
                ));
            }
            raw.insert(name.to_string(), value.to_string());
            lower.insert(name.to_string(), low);
        }
        for a in outputs {
            let rendered = render_artifact(a, &lower, &raw).map_err(|e| {
                format!(
                    "pathPattern {pattern:?}: failed to render artifact {} for match {rel}: {e}",
                    a.name
                )
            })?;
            if !crate::is_object_name(&rendered.name) {
                return Err(format!(
                    "pathPattern {pattern:?}: rendered artifact name {:?} is not a valid Kubernetes object name",
                    rendered.name
                ));
            }
            if let Some(prev) = named.insert(rendered.name.clone(), rel.clone()) {
                return Err(format!(
                    "pathPattern {pattern:?}: directories {prev:?} and {rel:?} both resolve to artifact name {:?}",
                    rendered.name
                ));
            }
            out.push(Expanded {
                artifact: rendered,
                labels: lower.clone(),
            });
        }
    }
    Ok(out)
}

/// A pattern or template, split at its captures.
#[derive(Debug, PartialEq)]
enum Part {
    Text(String),
    Capture(String),
}

fn parse(s: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['{', '}']) {
        let offset = s.len() - rest.len() + i;
        text.push_str(&rest[..i]);
        if rest[i..].starts_with('}') {
            return Err(format!(
                "capture ending at offset {offset} is missing its opening brace"
            ));
        }
        let close = rest[i + 1..].find('}').ok_or_else(|| {
            format!("capture starting at offset {offset} is missing its closing brace")
        })?;
        let name = &rest[i + 1..i + 1 + close];
        if name.is_empty() {
            return Err("empty capture variable".into());
        }
        let mut chars = name.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "capture variable {name:?} must be a name matching [A-Za-z_][A-Za-z0-9_]*"
            ));
        }
        if !text.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut text)));
        }
        parts.push(Part::Capture(name.to_string()));
        rest = &rest[i + 1 + close + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

fn render(template: &str, values: &BTreeMap<String, String>) -> Result<String, String> {
    let parts = parse(template).map_err(|e| format!("invalid template {template:?}: {e}"))?;
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Text(t) => out.push_str(&t),
            Part::Capture(name) => out.push_str(values.get(&name).ok_or_else(|| {
                format!(
                    "invalid template {template:?}: capture variable {name:?} is not defined by pathPattern"
                )
            })?),
        }
    }
    Ok(out)
}

/// The name with lowercased captures; `from`/`to` with the captures as the tree spells them.
fn render_artifact(
    a: &OutputArtifact,
    lower: &BTreeMap<String, String>,
    raw: &BTreeMap<String, String>,
) -> Result<OutputArtifact, String> {
    let mut out = a.clone();
    out.name = render(&a.name, lower)?;
    for op in &mut out.copy {
        op.from = render(&op.from, raw)?;
        op.to = render(&op.to, raw)?;
    }
    Ok(out)
}

/// A Kubernetes label value: at most 63 characters, alphanumerics, `-`, `_`, `.`, beginning
/// and ending with an alphanumeric (or empty).
fn label_value(v: &str) -> Result<(), &'static str> {
    if v.len() > 63 {
        return Err("must be no more than 63 characters");
    }
    let ok_chars = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    if !ok_chars || !ends(v.chars().next()) || !ends(v.chars().last()) {
        return Err(
            "a valid label must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_captures_and_refuses_bad_braces() {
        assert_eq!(
            parse("apps/{app}/envs/x-{env}").unwrap(),
            [
                Part::Text("apps/".into()),
                Part::Capture("app".into()),
                Part::Text("/envs/x-".into()),
                Part::Capture("env".into()),
            ]
        );
        assert_eq!(
            parse("apps/{app").unwrap_err(),
            "capture starting at offset 5 is missing its closing brace"
        );
        assert_eq!(
            parse("apps/app}").unwrap_err(),
            "capture ending at offset 8 is missing its opening brace"
        );
        assert_eq!(parse("a/{}").unwrap_err(), "empty capture variable");
        assert!(parse("a/{1x}").unwrap_err().contains("must be a name"));
    }

    #[test]
    fn label_values() {
        assert!(label_value("podinfo").is_ok());
        assert!(label_value("").is_ok());
        assert!(label_value("-x").is_err());
        assert!(label_value("a b").is_err());
        assert!(label_value(&"x".repeat(64)).is_err());
    }
}
