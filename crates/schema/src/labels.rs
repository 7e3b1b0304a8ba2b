//! Label selectors as apimachinery's `labels.Parse` reads them: equality-based (`a=b`, `a==b`,
//! `a!=b`) and set-based (`a in (x,y)`, `a notin (x)`, `a`, `!a`) requirements, comma-separated,
//! all of which must hold. The API server filters lists and watches with them and kustomize
//! selects patch and replacement targets with them (labels and annotations alike), so both use
//! this one parser.

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Eq(String, String),
    /// `key!=value` (also true when the key is absent).
    Ne(String, String),
    /// `key in (v1,v2)`.
    In(String, Vec<String>),
    /// `key notin (v1,v2)` (also true when the key is absent).
    NotIn(String, Vec<String>),
    /// `key`: the key is present.
    Exists(String),
    /// `!key`: the key is absent.
    NotExists(String),
}

/// A parsed selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `s`; the messages are the API server's (`unable to parse requirement: ...`).
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(format!(
                    "unable to parse requirement: empty requirement in {s:?}"
                ));
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once("==") {
                Requirement::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once('=') {
                Requirement::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, set)) = set_op(p, " notin ") {
                Requirement::NotIn(k, set?)
            } else if let Some((k, set)) = set_op(p, " in ") {
                Requirement::In(k, set?)
            } else {
                Requirement::Exists(p.to_string())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                Requirement::Eq(k, v) | Requirement::Ne(k, v) => (k, vec![v.as_str()]),
                Requirement::In(k, vs) | Requirement::NotIn(k, vs) => {
                    (k, vs.iter().map(String::as_str).collect())
                }
                Requirement::Exists(k) | Requirement::NotExists(k) => (k, vec![]),
            };
            if !valid_key(key) {
                return Err(format!(
                    "unable to parse requirement: invalid label key {key:?}"
                ));
            }
            if let Some(v) = values.iter().find(|v| !valid_value(v)) {
                return Err(format!(
                    "unable to parse requirement: invalid label value: {v:?}"
                ));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// True when the selector has no requirement (it matches everything).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[Requirement] {
        &self.0
    }

    /// Whether labels read through `get` (a key's value, `None` when absent) satisfy every
    /// requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v.as_str()),
            Requirement::Ne(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &serde_json::Value) -> bool {
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        self.matches_with(|k| {
            labels
                .and_then(|l| l.get(k))
                .and_then(serde_json::Value::as_str)
        })
    }
}

/// Splits at the commas outside parentheses (`a in (x,y),b` is two requirements).
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn set_op(p: &str, op: &str) -> Option<(String, Result<Vec<String>, String>)> {
    let (k, rest) = p.split_once(op)?;
    let rest = rest.trim();
    let set = match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => Ok(inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()),
        None => Err(format!(
            "unable to parse requirement: found '{rest}', expected: '('"
        )),
    };
    Some((k.trim().to_string(), set))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (web,api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("env notin (prod)", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("app=web,").is_err());
        assert!(LabelSelector::parse("a b").is_err());
    }
}
