//! What the two recorded case tables (`server_cases`, kubectl patch; `smp_cases`, kubectl
//! kustomize) share: listing a table's case directories, reading YAML as go-yaml v3 does,
//! checking for kubectl, and tallying each case's result against its recording.

use serde_json::Value;
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// The case directories under `tests/<table>`, sorted; fewer than `at_least` means the table
/// was not found whole.
pub fn case_dirs(table: &str, at_least: usize) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(table);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    assert!(
        v.len() >= at_least,
        "expected the case table in {}",
        dir.display()
    );
    v
}

/// YAML as kustomize and kubectl (go-yaml v3) read it: `y`/`yes`/`on` stay strings, `0644` is
/// octal.
pub fn parse_yaml(text: &str) -> Result<Value, serde_saphyr::Error> {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.legacy_octal_numbers = true;
    serde_saphyr::from_str_with_options(text, options)
}

/// A case file read with [`parse_yaml`]; a bad file fails the test, naming it.
pub fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    parse_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether the oracle can be re-run here (the recordings are checked without it).
pub fn have_kubectl() -> bool {
    std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The cases matched so far and what the others got.
#[derive(Default)]
pub struct Tally {
    matched: usize,
    failures: Vec<String>,
}

impl Tally {
    /// A case that must fail with the message in `error.txt`.
    pub fn error_case<E: Display>(&mut self, name: &str, got: Result<Value, E>, want: &str) {
        match got {
            Err(e) if e.to_string() == want.trim_end() => self.matched += 1,
            Err(e) => self
                .failures
                .push(format!("{name}: error {e}\n  want  {}", want.trim_end())),
            Ok(v) => self.failures.push(format!("{name}: no error, got {v}")),
        }
    }

    /// A case whose result must equal `expected`, key order included.
    pub fn output_case<E: Display>(&mut self, name: &str, got: Result<Value, E>, expected: &Value) {
        let want = serde_json::to_string(expected).unwrap();
        match got {
            Ok(v) if serde_json::to_string(&v).unwrap() == want => self.matched += 1,
            Ok(v) => self.failures.push(format!(
                "{name}:\n  got  {}\n  want {want}",
                serde_json::to_string(&v).unwrap(),
            )),
            Err(e) => self.failures.push(format!("{name}: error {e}")),
        }
    }

    /// A case counted by its caller's own rule.
    pub fn matched(&mut self) {
        self.matched += 1;
    }

    /// A case that did not match, with what it got.
    pub fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    /// Prints how many cases matched `oracle`'s output and fails the test on any other.
    pub fn finish(self, oracle: &str) {
        eprintln!(
            "{} cases match {oracle}'s output exactly (key order included)",
            self.matched
        );
        assert!(
            self.failures.is_empty(),
            "{} failing cases:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}
