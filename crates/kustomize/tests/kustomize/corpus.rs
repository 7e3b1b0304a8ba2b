//! The conformance corpus: every case under `tests/corpus/` is built by us and compared byte
//! for byte with its golden `expected.yaml`, which was recorded from `kubectl kustomize`. When
//! kubectl is installed the goldens themselves are rebuilt with it and must not have drifted.
//!
//! A case directory holds the input tree, `expected.yaml`, and optionally `BUILD` (the directory
//! to build, relative to the case; default `.`). `UPDATE_GOLDENS=1` rewrites the goldens from
//! kubectl.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_kustomize::{Build, render_yaml};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn build_dir(case: &Path) -> PathBuf {
    match std::fs::read_to_string(case.join("BUILD")) {
        Ok(s) => case.join(s.trim()),
        Err(_) => case.to_path_buf(),
    }
}

fn have_kubectl() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn kubectl_kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn corpus_matches_kubectl_kustomize() {
    let cases = cases();
    let kubectl = have_kubectl();
    let update = std::env::var("UPDATE_GOLDENS").is_ok();
    let mut identical = 0;
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let dir = build_dir(case);
        let golden_path = case.join("expected.yaml");
        if kubectl {
            let oracle = kubectl_kustomize(&dir);
            if update {
                std::fs::write(&golden_path, &oracle).unwrap();
            }
            let golden = std::fs::read_to_string(&golden_path).unwrap_or_default();
            if oracle != golden {
                failures.push(format!("{name}: golden drifted from kubectl kustomize"));
                continue;
            }
        }
        let golden = std::fs::read_to_string(&golden_path)
            .unwrap_or_else(|_| panic!("{name}: missing expected.yaml"));
        let ours = Build::new(case)
            .and_then(|b| b.build(&dir))
            .map(|o| render_yaml(&o));
        match ours {
            Ok(text) if text == golden => identical += 1,
            Ok(text) => {
                let diff_line = text
                    .lines()
                    .zip(golden.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(text.lines().count().min(golden.lines().count()));
                failures.push(format!(
                    "{name}: output differs from golden at line {}:\n  ours:   {:?}\n  golden: {:?}",
                    diff_line + 1,
                    text.lines().nth(diff_line).unwrap_or("<end>"),
                    golden.lines().nth(diff_line).unwrap_or("<end>")
                ));
            }
            Err(e) => failures.push(format!("{name}: build failed: {e}")),
        }
    }
    println!(
        "kustomize corpus: {identical}/{} cases byte-identical to kubectl kustomize (goldens {})",
        cases.len(),
        if kubectl {
            "re-checked against kubectl"
        } else {
            "not re-checked: kubectl missing"
        }
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cases.len() >= 80, "corpus has only {} cases", cases.len());
}
