//! `.helmignore` rules as Helm's `pkg/ignore` applies them when loading a chart directory:
//! one Go `path.Match` pattern a line, `#` comments, `!` negation, a trailing `/` for
//! directories only, a leading `/` anchoring, patterns without `/` matched on the base name,
//! and no `**`. Archives are never filtered (Helm does not read `.helmignore` from a `.tgz`).

use crate::glob::path_match;

/// The file's name in a chart directory.
pub const HELM_IGNORE: &str = ".helmignore";

struct Pattern {
    rule: String,
    negate: bool,
    must_dir: bool,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    /// Matched against the whole relative path.
    Path,
    /// Matched against the base name only.
    Base,
}

/// A parsed `.helmignore`.
#[derive(Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Parses a `.helmignore` file's text (a UTF-8 BOM on the first line is dropped).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Rules::default();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            rules.add(line)?;
        }
        Ok(rules)
    }

    /// Helm's default rule: hidden files under `templates/` are never templates.
    pub fn add_defaults(&mut self) {
        // The default rule is well-formed; ignoring the impossible error keeps this infallible.
        let _ = self.add("templates/.?*");
    }

    fn add(&mut self, line: &str) -> Result<(), String> {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err("double-star (**) syntax is not supported".into());
        }
        if path_match(rule, "abc").is_err() {
            return Err("syntax error in pattern".into());
        }
        let mut rule = rule;
        let negate = rule.starts_with('!');
        if negate {
            rule = &rule[1..];
        }
        let must_dir = rule.ends_with('/');
        if must_dir {
            rule = &rule[..rule.len() - 1];
        }
        let (rule, kind) = if let Some(rest) = rule.strip_prefix('/') {
            (rest, Kind::Path)
        } else if rule.contains('/') {
            (rule, Kind::Path)
        } else {
            (rule, Kind::Base)
        };
        self.patterns.push(Pattern {
            rule: rule.to_string(),
            negate,
            must_dir,
            kind,
        });
        Ok(())
    }

    /// Whether the chart-relative path `path` (with `/` separators) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for p in &self.patterns {
            let candidate = match p.kind {
                Kind::Path => path,
                Kind::Base => path.rsplit('/').next().unwrap_or(path),
            };
            let matched = path_match(&p.rule, candidate).unwrap_or(false);
            if p.negate {
                // Helm's negation: a file not matching a negated pattern is ignored.
                if p.must_dir && !is_dir {
                    return true;
                }
                if !matched {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if matched {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let mut r = Rules::parse("# c\n*.bak\n/secret.txt\ndocs/\nci/*.yaml\n")
            .unwrap_or_else(|e| panic!("{e}"));
        r.add_defaults();
        assert!(r.ignore("a.bak", false));
        assert!(r.ignore("templates/x.bak", false));
        assert!(r.ignore("secret.txt", false));
        assert!(!r.ignore("sub/secret.txt", false));
        assert!(r.ignore("docs", true));
        assert!(!r.ignore("docs", false));
        assert!(r.ignore("ci/a.yaml", false));
        assert!(r.ignore("templates/.hidden", false));
        assert!(!r.ignore("templates/x.yaml", false));
        assert!(Rules::parse("a/**/b").is_err());
    }
}
