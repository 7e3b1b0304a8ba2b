//! The template case tables of crates/gotemplate and crates/sprig (`tests/*.txt`), read and
//! checked in one place. A table is a list of cases:
//!
//! ```text
//! #### NAME [MODE]
//! TEMPLATE TEXT
//! ---- values
//! {"json": "values"}
//! ---- want
//! EXPECTED OUTPUT
//! ```
//!
//! Each `#### ` line starts a case (its name, then anything, e.g. a mode in brackets); each
//! `---- SECTION` line starts a named section; the text before the first section is the
//! `template` section. A section's text ends before the next header, without its last newline.

/// One case of a table.
pub struct Case {
    /// The first word after `#### `.
    pub name: String,
    /// The rest of the header line (e.g. `[helm]`), trimmed; empty when there is none.
    pub mode: String,
    /// The sections in order, the first being `template`.
    pub sections: Vec<(String, String)>,
}

impl Case {
    /// The text of the section `name`.
    pub fn section(&self, name: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// What the case must give: its `ours` section (a known difference from the recorded
    /// engine) or `want` as output, else `error` as an error.
    pub fn expected(&self) -> Result<String, String> {
        match (
            self.section("ours").or(self.section("want")),
            self.section("error"),
        ) {
            (Some(w), _) => Ok(w.to_string()),
            (None, Some(e)) => Err(e.to_string()),
            (None, None) => panic!("case {} has neither want nor error", self.name),
        }
    }
}

/// Reads a table.
pub fn parse(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    let flush = |cases: &mut Vec<Case>, lines: &mut Vec<&str>| {
        if let Some(c) = cases.last_mut() {
            let joined = lines.join("\n");
            let body = joined.strip_suffix('\n').unwrap_or(&joined).to_string();
            if let Some(last) = c.sections.last_mut() {
                last.1 = body;
            }
        }
        lines.clear();
    };
    for line in text.split('\n') {
        if let Some(h) = line.strip_prefix("#### ") {
            flush(&mut cases, &mut lines);
            let (name, mode) = h.split_once(' ').unwrap_or((h, ""));
            cases.push(Case {
                name: name.to_string(),
                mode: mode.trim().to_string(),
                sections: vec![("template".into(), String::new())],
            });
        } else if let Some(s) = line.strip_prefix("---- ") {
            flush(&mut cases, &mut lines);
            if let Some(c) = cases.last_mut() {
                c.sections.push((s.trim().to_string(), String::new()));
            }
        } else {
            lines.push(line);
        }
    }
    flush(&mut cases, &mut lines);
    cases
}

/// Runs every case of `text` through `run` and fails listing every case whose result differs
/// from [`Case::expected`]; the table must hold at least `at_least` cases (so that a broken
/// table cannot pass by being empty).
pub fn check(text: &str, at_least: usize, run: impl Fn(&Case) -> Result<String, String>) {
    let cases = parse(text);
    assert!(
        cases.len() >= at_least,
        "the table has {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let want = case.expected();
        if got != want {
            failures.push(format!("{}:\n  want {want:?}\n  got  {got:?}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
