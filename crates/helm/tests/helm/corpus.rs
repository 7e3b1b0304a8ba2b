//! The Helm conformance corpus (tests/corpus, layout in its README.md): every run of every case
//! goes through the library exactly as `ferroflux helm template` runs it, and must print what
//! Helm 4.2.3 printed, byte for byte (stdout for successes, `Error: …` for failures).
//!
//! All runs are executed and every difference is reported before the test fails, so one run
//! shows the whole state. `HELM_CORPUS_FILTER=substring` limits the runs (for debugging).

use std::path::{Path, PathBuf};

struct Run {
    case: String,
    name: String,
    dir: PathBuf,
    args: Vec<String>,
    expected_out: Option<String>,
    expected_err: Option<String>,
    expected_tree: Option<PathBuf>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// An expectation's bytes in the form the library's text has (gotemplate's `gostr`: exact for
/// bytes that are not UTF-8), so that comparing the texts compares Helm's bytes.
fn read(p: &Path) -> Option<String> {
    std::fs::read(p)
        .ok()
        .map(|b| ferroflux_gotemplate::gostr::from_bytes(&b))
}

fn runs() -> Vec<Run> {
    let mut out = Vec::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    cases.sort();
    for dir in cases {
        let case = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .filter(|n| n == "args" || n.ends_with(".args"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for file in names {
            let run = file.strip_suffix(".args").unwrap_or("").to_string();
            let prefix = if run.is_empty() {
                String::new()
            } else {
                format!("{run}.")
            };
            let text = read(&dir.join(&file)).unwrap_or_default();
            let body = text.strip_suffix('\n').unwrap_or(&text);
            let args: Vec<String> = if body.is_empty() && text.is_empty() {
                Vec::new()
            } else {
                body.split('\n').map(str::to_string).collect()
            };
            let tree = dir.join(format!("{prefix}expected-out"));
            out.push(Run {
                case: case.clone(),
                name: if run.is_empty() {
                    "args".into()
                } else {
                    run.clone()
                },
                dir: dir.clone(),
                args,
                expected_out: read(&dir.join(format!("{prefix}expected.yaml"))),
                expected_err: read(&dir.join(format!("{prefix}expected-error.txt"))),
                expected_tree: tree.is_dir().then_some(tree),
            });
        }
    }
    out
}

fn tree_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Runs one case; `None` when it matches, else a description of the difference.
fn check(run: &Run) -> Option<String> {
    let out_dir = tempfile::tempdir().ok()?;
    let out_path = out_dir.path().to_string_lossy().into_owned();
    let args: Vec<String> = run
        .args
        .iter()
        .map(|a| a.replace("$OUT", &out_path))
        .collect();
    let result = ferroflux_helm::run_template(&args, &run.dir);
    // What the command writes, as bytes, read back as the expectations are.
    let written =
        |s: &str| ferroflux_gotemplate::gostr::from_bytes(&ferroflux_helm::output_bytes(s));
    let (stdout, stderr) = match &result {
        Ok(s) => (written(&s.replace(&out_path, "$OUT")), String::new()),
        Err(e) => (
            String::new(),
            written(&format!("Error: {}\n", ferroflux_helm::error_message(e))),
        ),
    };
    match (&run.expected_out, &run.expected_err) {
        (Some(want), None) => {
            if result.is_err() {
                return Some(format!("expected success, got:\n{stderr}"));
            }
            if &stdout != want {
                return Some(diff(want, &stdout));
            }
        }
        (None, Some(want)) => {
            if result.is_ok() {
                return Some(format!("expected failure:\n{want}got success:\n{stdout}"));
            }
            if &stderr != want {
                return Some(format!(
                    "stderr differs:\n--- want\n{want}--- got\n{stderr}"
                ));
            }
        }
        _ => return Some("broken corpus: a run needs exactly one expectation".into()),
    }
    if let Some(tree) = &run.expected_tree {
        let want = tree_files(tree);
        let got = tree_files(out_dir.path());
        if want != got {
            let names =
                |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            let first = want.iter().zip(&got).find(|(w, g)| w != g).map(|(w, g)| {
                format!(
                    "\n{}:\n--- want\n{:?}\n--- got\n{:?}",
                    w.0,
                    String::from_utf8_lossy(&w.1),
                    String::from_utf8_lossy(&g.1)
                )
            });
            return Some(format!(
                "output tree differs: want {:?} got {:?}{}",
                names(&want),
                names(&got),
                first.unwrap_or_default()
            ));
        }
    }
    None
}

fn diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    let first = w
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(w.len().min(g.len()));
    let from = first.saturating_sub(2);
    let show = |v: &[&str]| v[from.min(v.len())..(first + 4).min(v.len())].join("\n");
    format!(
        "stdout differs at line {} (want {} lines, got {}):\n--- want\n{}\n--- got\n{}",
        first + 1,
        w.len(),
        g.len(),
        show(&w),
        show(&g)
    )
}

/// `case/run` → reason, from tests/corpus-known-differences.txt.
fn known_differences() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus-known-differences.txt");
    read(&path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(" # ") {
            Some((run, why)) => (run.trim().to_string(), why.trim().to_string()),
            None => (l.trim().to_string(), String::new()),
        })
        .collect()
}

#[test]
fn corpus() {
    let filter = std::env::var("HELM_CORPUS_FILTER").unwrap_or_default();
    let runs: Vec<Run> = runs()
        .into_iter()
        .filter(|r| r.case.contains(&filter))
        .collect();
    assert!(
        !runs.is_empty(),
        "no corpus runs found under {}",
        corpus_dir().display()
    );
    let known = known_differences();
    let mut failures = Vec::new();
    let mut identical = 0;
    for run in &runs {
        let id = format!("{}/{}", run.case, run.name);
        // A run that panics is a failure of that run, not of the whole corpus.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(run)))
            .unwrap_or_else(|_| Some("panicked".into()));
        let is_known = known.iter().any(|(k, _)| *k == id);
        match (outcome, is_known) {
            (None, false) => identical += 1,
            (None, true) => {
                identical += 1;
                failures.push(format!(
                    "{id}: now identical; remove it from corpus-known-differences.txt"
                ));
            }
            (Some(_), true) => {}
            (Some(why), false) => failures.push(format!("{id}: {why}")),
        }
    }
    eprintln!(
        "helm corpus: {identical}/{} runs identical ({} known differences listed)",
        runs.len(),
        known.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} runs fail:\n\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n\n")
    );
}
