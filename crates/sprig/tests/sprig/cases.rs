//! Sprig's functions run inside real templates (`tests/*.txt`): each case is parsed and executed
//! by ferroflux-gotemplate with `ferroflux_sprig::funcs()`, and its output or error compared with
//! what Helm's own engine printed for the same template (recorded by
//! `crates/gotemplate/tests/oracle/render.py cases.txt` with helm-python-sdk 0.2.2, Helm 4.2.3).
//! Values are JSON, so their numbers are float64 as in Helm. Non-deterministic functions appear
//! only through properties of their results (lengths, prefixes, round trips). A case may add an
//! `ours` section next to Helm's `want`: a known difference documented in the crate docs, which
//! is what this side must print instead (none today).

use ferroflux_gotemplate::{MissingKey, Template, Value};
use ferroflux_testkit::cases::{Case, check};

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
    // The records crossed libhelm_c as Go's JSON, which shows each byte that is not UTF-8 as
    // U+FFFD; our output keeps such bytes (gotemplate's `gostr`), so it is compared as Go's JSON
    // would show it.
    Ok(ferroflux_gotemplate::gostr::lossy(&out).replace("<no value>", ""))
}

#[test]
fn every_case_matches_helm() {
    check(include_str!("../cases.txt"), 45, run);
}

/// `sweep.txt`: the string functions over 40 awkward inputs each (Unicode, whitespace, case
/// boundaries, separators), generated once and recorded from Helm.
#[test]
fn string_sweep_matches_helm() {
    check(include_str!("../sweep.txt"), 30, run);
}

/// `numbers.txt`: the conversions and arithmetic over 46 awkward values (float64 edge cases,
/// strings in every base and spelling, bools, nil, a list, a map), recorded from Helm.
#[test]
fn number_sweep_matches_helm() {
    check(include_str!("../numbers.txt"), 30, run);
}

/// `times.txt`: 18 Go layouts x 6 instants x 8 zones (half-hour, 45-minute and DST zones),
/// `toDate`/`mustToDate` over 22 layout/value pairs, Go's JSON floats and duration texts,
/// recorded from Helm.
#[test]
fn time_sweep_matches_helm() {
    check(include_str!("../times.txt"), 30, run);
}

/// `semver.txt`: 44 Masterminds constraints x 20 versions, and 30 malformed constraints and
/// versions with their error texts, recorded from Helm.
#[test]
fn semver_sweep_matches_helm() {
    check(include_str!("../semver.txt"), 60, run);
}

/// `regex.txt`: 40 RE2 patterns (Perl classes, flags, POSIX classes, \\Q…\\E, octal, named
/// groups, syntax errors) x 14 inputs through regexMatch and regexFindAll, replacement
/// templates, and Split limits, recorded from Helm.
#[test]
fn regex_sweep_matches_helm() {
    check(include_str!("../regex.txt"), 30, run);
}

/// `structures.txt`: 42 list, dict, JSON and default functions x 12 inputs of every shape
/// (empty, numbers, strings, nils, nested lists, maps, mixed, and non-lists), one case each so
/// that errors are compared too, recorded from Helm.
#[test]
fn structure_sweep_matches_helm() {
    check(include_str!("../structures.txt"), 400, run);
}

/// `urls.txt`: urlParse and urlJoin over 30 URLs (authority forms, escapes, IPv6, opaque,
/// relative, malformed) and the path functions over 22 paths, recorded from Helm.
#[test]
fn url_sweep_matches_helm() {
    check(include_str!("../urls.txt"), 30, run);
}
