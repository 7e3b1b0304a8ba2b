//! Patch and replacement targets: group, version, kind, name and namespace (anchored regular
//! expressions), label and annotation selectors.

use ferroflux_schema::LabelSelector;
use regex::Regex;

use crate::kustomization::Selector;
use crate::resource::Res;

pub struct Compiled {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: LabelSelector,
    annotations: LabelSelector,
}

fn anchored(p: &str) -> Result<Option<Regex>, String> {
    if p.is_empty() {
        return Ok(None);
    }
    Regex::new(&format!("^(?:{})$", go_literal_braces(p)))
        .map(Some)
        .map_err(|e| format!("invalid regular expression {p:?}: {e}"))
}

/// Go's regexp takes a `{` that does not open a repeat count (`{2}`, `{2,}`, `{2,5}`) as a
/// literal — `\${cluster_name}` matches `${cluster_name}` — where the `regex` crate refuses it;
/// such braces are escaped.
fn go_literal_braces(p: &str) -> std::borrow::Cow<'_, str> {
    if !p.contains('{') {
        return p.into();
    }
    let b = p.as_bytes();
    let mut out = String::with_capacity(p.len() + 4);
    let (mut i, mut in_class) = (0, false);
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && i + 1 < b.len() {
            // Copy the escape whole (it may be a multi-byte character).
            let len = p[i + 1..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&p[i..i + 1 + len]);
            i += 1 + len;
            continue;
        }
        match c {
            b'[' => in_class = true,
            b']' => in_class = false,
            b'{' if !in_class && !is_repeat_count(&p[i..]) => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        let len = p[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&p[i..i + len]);
        i += len;
    }
    out.into()
}

/// Whether `s` starts with a repeat count as Go's parser reads one: `{n}`, `{n,}` or `{n,m}`.
fn is_repeat_count(s: &str) -> bool {
    let Some(body) = s
        .strip_prefix('{')
        .and_then(|r| r.split_once('}'))
        .map(|(b, _)| b)
    else {
        return false;
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|d| d.is_ascii_digit());
    match body.split_once(',') {
        None => digits(body),
        Some((min, max)) => digits(min) && (max.is_empty() || digits(max)),
    }
}

/// A label or annotation selector, parsed as the API server parses label selectors (Go
/// kustomize calls apimachinery's `labels.Parse` for both).
fn parse_selector(s: &str) -> Result<LabelSelector, String> {
    LabelSelector::parse(s).map_err(|e| format!("invalid selector {s:?}: {e}"))
}

fn matches(selector: &LabelSelector, pairs: &[(String, String)]) -> bool {
    selector.matches_with(|k| pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str()))
}

impl Compiled {
    pub fn new(s: &Selector) -> Result<Compiled, String> {
        Ok(Compiled {
            group: anchored(&s.group)?,
            version: anchored(&s.version)?,
            kind: anchored(&s.kind)?,
            name: anchored(&s.name)?,
            namespace: anchored(&s.namespace)?,
            labels: parse_selector(&s.label_selector)?,
            annotations: parse_selector(&s.annotation_selector)?,
        })
    }

    pub fn matches(&self, r: &Res) -> bool {
        if let Some(re) = &self.namespace {
            let org = r
                .prev
                .first()
                .map(|p| p.namespace.clone())
                .unwrap_or_else(|| r.effective_namespace());
            if !re.is_match(&org) && !re.is_match(&r.effective_namespace()) {
                return false;
            }
        }
        if let Some(re) = &self.name
            && !re.is_match(r.org_name())
            && !re.is_match(r.name())
        {
            return false;
        }
        let (g, v) = r.group_version();
        let miss = |re: &Option<Regex>, s: &str| re.as_ref().is_some_and(|re| !re.is_match(s));
        if miss(&self.group, g) || miss(&self.version, v) || miss(&self.kind, r.kind()) {
            return false;
        }
        if !self.labels.is_empty() && !matches(&self.labels, &r.labels()) {
            return false;
        }
        if !self.annotations.is_empty() && !matches(&self.annotations, &r.annotations()) {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_that_are_no_repeat_count_are_literal_as_in_go() {
        let re = anchored("\\${cluster_name}-hello").unwrap().unwrap();
        assert!(re.is_match("${cluster_name}-hello"));
        let re = anchored("a{2}[{]x{").unwrap().unwrap();
        assert!(re.is_match("aa{x{"));
        assert!(
            anchored("a{2,1}").is_err(),
            "a real repeat count is still checked"
        );
    }
}
