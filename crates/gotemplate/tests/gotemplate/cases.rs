//! The table of template cases in `tests/cases.txt`: each is parsed and executed, and its output or
//! error compared with the recorded one.
//!
//! `[helm]` cases run as Helm runs a chart template (missingkey=zero, the values under `.Values`,
//! `<no value>` blanked afterwards, the file named `chart/templates/t.yaml`); their expected
//! outputs come from Helm's own engine through `tests/oracle/render.py`. `[go]`, `[go:zero]`
//! and `[go:error]` cases use the other missingkey modes and are written from Go's documented
//! behaviour.

use ferroflux_gotemplate::{MissingKey, Template, Value};
use ferroflux_testkit::cases::Case;

fn run(case: &Case) -> Result<String, String> {
    let mode = case.mode.trim_matches(['[', ']']);
    let helm = mode == "helm";
    let (name, mk) = match mode {
        "helm" => ("chart/templates/t.yaml", MissingKey::Zero),
        "go:zero" => ("t", MissingKey::Zero),
        "go:error" => ("t", MissingKey::Error),
        _ => ("t", MissingKey::Invalid),
    };
    let data: serde_json::Value = match case.section("data") {
        Some(d) => serde_json::from_str(d).expect("data is JSON"),
        None => {
            let values: serde_json::Value =
                serde_json::from_str(case.section("values").unwrap_or("{}"))
                    .expect("values are JSON");
            serde_json::json!({ "Values": values })
        }
    };
    let mut t = Template::named("gotpl").with_missing_key(mk);
    t.parse(name, case.section("template").unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let out = t
        .execute(name, &Value::from_json(&data))
        .map_err(|e| e.to_string())?;
    Ok(if helm {
        out.replace("<no value>", "")
    } else {
        out
    })
}

#[test]
fn every_case_matches_its_record() {
    ferroflux_testkit::cases::check(include_str!("../cases.txt"), 41, run);
}
