//! Strategic merge cases recorded from `kubectl kustomize` (kustomize v5.5.0).
//!
//! Each directory under `tests/cases/` holds `original.yaml` (one resource), `patch.yaml` (a
//! strategic merge patch) and either `expected.yaml` — the output of `kubectl kustomize` on a
//! kustomization with that resource and patch — or `error.txt`, a message our merge must give
//! (bad inputs; `note.txt` says what kustomize does with them). A case with `divergence.txt`
//! documents a known difference: `expected.yaml` is still kustomize's output, `ours.yaml` ours.
//!
//! `merge_matches_recorded_kustomize_output` compares our result with `expected.yaml`, key order
//! included. `recorded_outputs_match_kubectl_kustomize` re-runs kubectl on every case (when
//! kubectl is installed) so the recordings cannot drift from the oracle; run it with
//! `FERROFLUX_RECORD=1` to (re)write `expected.yaml` for new cases.

use crate::cases::{Tally, case_dirs, have_kubectl, parse_yaml, yaml};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    case_dirs("cases", 20)
}

#[test]
fn merge_matches_recorded_kustomize_output() {
    let mut tally = Tally::default();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let original = yaml(&case.join("original.yaml"));
        let patch = yaml(&case.join("patch.yaml"));
        let got = ferroflux_schema::strategic_merge(&original, &patch);
        if case.join("error.txt").exists() {
            let want = std::fs::read_to_string(case.join("error.txt")).unwrap();
            tally.error_case(&name, got, &want);
            continue;
        }
        let expected_path = case.join("expected.yaml");
        if !expected_path.exists() {
            tally.fail(format!(
                "{name}: no expected.yaml (record it with FERROFLUX_RECORD=1)"
            ));
            continue;
        }
        if case.join("divergence.txt").exists() {
            // A documented difference from kustomize: pin our output and kustomize's, apart.
            let ours = yaml(&case.join("ours.yaml"));
            let theirs = yaml(&expected_path);
            match got {
                Ok(v) if v == ours && v != theirs => tally.matched(),
                Ok(v) => tally.fail(format!("{name}: divergence changed, got {v}")),
                Err(e) => tally.fail(format!("{name}: error {e}")),
            }
            continue;
        }
        let text = std::fs::read_to_string(&expected_path).unwrap();
        let expected: Value = if text.trim().is_empty() {
            Value::Null // kustomize dropped the resource
        } else {
            parse_yaml(&text).unwrap()
        };
        tally.output_case(&name, got, &expected);
    }
    tally.finish("kustomize");
}

fn run_kustomize(case: &Path) -> String {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(case.join("original.yaml"), tmp.path().join("original.yaml")).unwrap();
    std::fs::copy(case.join("patch.yaml"), tmp.path().join("patch.yaml")).unwrap();
    std::fs::write(
        tmp.path().join("kustomization.yaml"),
        "resources:\n- original.yaml\npatches:\n- path: patch.yaml\n",
    )
    .unwrap();
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize failed on {}: {}",
        case.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn recorded_outputs_match_kubectl_kustomize() {
    if !have_kubectl() {
        eprintln!("kubectl not installed: oracle check skipped");
        return;
    }
    let record = std::env::var_os("FERROFLUX_RECORD").is_some();
    let cases: Vec<PathBuf> = cases()
        .into_iter()
        .filter(|c| !c.join("error.txt").exists()) // kustomize accepts these; we refuse them
        .collect();
    // kubectl's start-up dominates; run a few at a time.
    let outputs: Vec<(PathBuf, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(4).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|c| (c.clone(), run_kustomize(c)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut drift = Vec::new();
    let mut checked = 0;
    for (case, out) in outputs {
        let path = case.join("expected.yaml");
        if record && !path.exists() {
            std::fs::write(&path, &out).unwrap();
        }
        let recorded = std::fs::read_to_string(&path).unwrap_or_default();
        if recorded != out {
            drift.push(case.display().to_string());
        }
        checked += 1;
    }
    eprintln!("{checked} cases re-run through kubectl kustomize");
    assert!(
        drift.is_empty(),
        "recordings differ from kubectl kustomize: {drift:?}"
    );
}
