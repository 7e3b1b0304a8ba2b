//! API-server strategic merge cases, recorded from `kubectl patch --local --type strategic`
//! (the same apimachinery code the API server runs for `application/strategic-merge-patch+json`).
//!
//! Each directory under `tests/server-cases/` holds `original.yaml`, `patch.yaml` and either
//! `expected.json` (kubectl's output) or `error.txt` (our message; kubectl must fail too).
//! `recorded_outputs_match_kubectl_patch` re-runs kubectl on every case when it is installed;
//! `FERROFLUX_RECORD=1` writes `expected.json` for new cases.

use crate::cases::{Tally, case_dirs, have_kubectl, yaml};
use ferroflux_schema::{Flavor, strategic_merge_with};
use serde_json::Value;
use std::path::PathBuf;

fn cases() -> Vec<PathBuf> {
    case_dirs("server-cases", 10)
}

#[test]
fn merge_matches_recorded_kubectl_patch_output() {
    let mut tally = Tally::default();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let original = yaml(&case.join("original.yaml"));
        let patch = yaml(&case.join("patch.yaml"));
        let got = strategic_merge_with(&original, &patch, Flavor::ApiServer);
        if case.join("error.txt").exists() {
            let want = std::fs::read_to_string(case.join("error.txt")).unwrap();
            tally.error_case(&name, got, &want);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(case.join("expected.json")) else {
            tally.fail(format!(
                "{name}: no expected.json (record it with FERROFLUX_RECORD=1)"
            ));
            continue;
        };
        let expected: Value = serde_json::from_str(&text).unwrap();
        tally.output_case(&name, got, &expected);
    }
    tally.finish("kubectl patch");
}

#[test]
fn recorded_outputs_match_kubectl_patch() {
    if !have_kubectl() {
        eprintln!("kubectl not installed: oracle check skipped");
        return;
    }
    let record = std::env::var_os("FERROFLUX_RECORD").is_some();
    let mut drift = Vec::new();
    for case in cases() {
        let patch = yaml(&case.join("patch.yaml")).to_string();
        let out = std::process::Command::new("kubectl")
            .args([
                "patch",
                "--local",
                "--type",
                "strategic",
                "-o",
                "json",
                "-f",
            ])
            .arg(case.join("original.yaml"))
            .arg("-p")
            .arg(&patch)
            .output()
            .unwrap();
        let name = case.display().to_string();
        if case.join("error.txt").exists() {
            if out.status.success() {
                drift.push(format!("{name}: kubectl accepts a patch we refuse"));
            }
            continue;
        }
        assert!(
            out.status.success(),
            "kubectl patch failed on {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = case.join("expected.json");
        if record && !path.exists() {
            std::fs::write(&path, &out.stdout).unwrap();
        }
        if std::fs::read(&path).unwrap_or_default() != out.stdout {
            drift.push(format!("{name}: recording differs from kubectl"));
        }
    }
    assert!(drift.is_empty(), "{}", drift.join("\n"));
}
