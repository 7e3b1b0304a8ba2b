//! The table of template cases in `cases.txt`: each is parsed and executed, and its output or
//! error compared with the recorded one.
//!
//! `[helm]` cases run as Helm runs a chart template (missingkey=zero, the values under `.Values`,
//! `<no value>` blanked afterwards, the file named `chart/templates/t.yaml`); their expected
//! outputs come from Helm's own engine through `tests/oracle/render.py`. `[go]`, `[go:zero]`
//! and `[go:error]` cases use the other missingkey modes and are written from Go's documented
//! behaviour.

use ferroflux_gotemplate::{MissingKey, Template, Value};

struct Case {
    name: String,
    mode: String,
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
            let (name, mode) = h.split_once(' ').expect("case header: NAME [MODE]");
            cases.push(Case {
                name: name.to_string(),
                mode: mode.trim_matches(['[', ']']).to_string(),
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

fn run(case: &Case) -> Result<String, String> {
    let helm = case.mode == "helm";
    let (name, mk) = match case.mode.as_str() {
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
    let text = include_str!("cases.txt");
    let cases = parse_cases(text);
    assert!(cases.len() > 40, "the table has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let want = match (case.section("want"), case.section("error")) {
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
