//! Sprig's functions run inside real templates (`cases.txt`): each case is parsed and executed
//! by ferroflux-gotemplate with `ferroflux_sprig::funcs()`, and its output or error compared with
//! what Helm's own engine printed for the same template (recorded by
//! `crates/gotemplate/tests/oracle/render.py cases.txt` with helm-python-sdk 0.2.2, Helm 4.2.3).
//! Values are JSON, so their numbers are float64 as in Helm. Non-deterministic functions appear
//! only through properties of their results (lengths, prefixes, round trips). A case may add an
//! `ours` section next to Helm's `want`: a known difference documented in the crate docs, which
//! is what this side must print instead (none today).

use ferroflux_gotemplate::{MissingKey, Template, Value};

struct Case {
    name: String,
    sections: Vec<(String, String)>,
}

impl Case {
    fn section(&self, name: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }
}

fn parse_cases(text: &str) -> Vec<Case> {
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
            let name = h.split_once(' ').map_or(h, |(n, _)| n);
            cases.push(Case {
                name: name.to_string(),
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

/// Runs a case as Helm runs a chart template: missingkey=zero, values under `.Values`,
/// `<no value>` blanked, the file named `chart/templates/t.yaml`.
fn run(case: &Case) -> Result<String, String> {
    let name = "chart/templates/t.yaml";
    let values: serde_json::Value =
        serde_json::from_str(case.section("values").unwrap_or("{}")).expect("values are JSON");
    let data = serde_json::json!({ "Values": values });
    let mut t = Template::named("gotpl")
        .with_missing_key(MissingKey::Zero)
        .with_funcs(ferroflux_sprig::funcs());
    t.parse(name, case.section("template").unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let out = t
        .execute(name, &Value::from_json(&data))
        .map_err(|e| e.to_string())?;
    Ok(out.replace("<no value>", ""))
}

#[test]
fn every_case_matches_helm() {
    check(include_str!("cases.txt"), 45);
}

/// `sweep.txt`: the string functions over 40 awkward inputs each (Unicode, whitespace, case
/// boundaries, separators), generated once and recorded from Helm.
#[test]
fn string_sweep_matches_helm() {
    check(include_str!("sweep.txt"), 30);
}

/// `numbers.txt`: the conversions and arithmetic over 46 awkward values (float64 edge cases,
/// strings in every base and spelling, bools, nil, a list, a map), recorded from Helm.
#[test]
fn number_sweep_matches_helm() {
    check(include_str!("numbers.txt"), 30);
}

/// `times.txt`: 18 Go layouts x 6 instants x 8 zones (half-hour, 45-minute and DST zones),
/// `toDate`/`mustToDate` over 22 layout/value pairs, Go's JSON floats and duration texts,
/// recorded from Helm.
#[test]
fn time_sweep_matches_helm() {
    check(include_str!("times.txt"), 30);
}

/// `semver.txt`: 44 Masterminds constraints x 20 versions, and 30 malformed constraints and
/// versions with their error texts, recorded from Helm.
#[test]
fn semver_sweep_matches_helm() {
    check(include_str!("semver.txt"), 60);
}

/// `regex.txt`: 40 RE2 patterns (Perl classes, flags, POSIX classes, \\Q…\\E, octal, named
/// groups, syntax errors) x 14 inputs through regexMatch and regexFindAll, replacement
/// templates, and Split limits, recorded from Helm.
#[test]
fn regex_sweep_matches_helm() {
    check(include_str!("regex.txt"), 30);
}

/// `structures.txt`: 42 list, dict, JSON and default functions x 12 inputs of every shape
/// (empty, numbers, strings, nils, nested lists, maps, mixed, and non-lists), one case each so
/// that errors are compared too, recorded from Helm.
#[test]
fn structure_sweep_matches_helm() {
    check(include_str!("structures.txt"), 400);
}

/// `urls.txt`: urlParse and urlJoin over 30 URLs (authority forms, escapes, IPv6, opaque,
/// relative, malformed) and the path functions over 22 paths, recorded from Helm.
#[test]
fn url_sweep_matches_helm() {
    check(include_str!("urls.txt"), 30);
}

fn check(text: &str, at_least: usize) {
    let cases = parse_cases(text);
    assert!(
        cases.len() >= at_least,
        "the table has {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let want = match (
            case.section("ours").or(case.section("want")),
            case.section("error"),
        ) {
            (Some(w), _) => Ok(w.to_string()),
            (None, Some(e)) => Err(e.to_string()),
            (None, None) => panic!("case {} has neither want nor error", case.name),
        };
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
