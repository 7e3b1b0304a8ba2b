//! README command 1 as a newcomer runs it: `ferroflux demo` bootstraps two local clusters from
//! the example fleet repository, shows them Ready, promotes podinfo's chart (a HelmRelease of a
//! chart kept in the repository) from staging to production,
//! cleans up and exits 0. With `--hold` it keeps the clusters up until interrupted: the real
//! `kubectl get pods -A` on each shows podinfo's Pods running.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use ferroflux_testkit::Kubectl;
use serde_json::Value;

/// What `kubectl get pods -A` shows on one of the demo's clusters while it holds.
fn check_pods(kubectl: &Kubectl, context: &str) {
    let table = kubectl.ok(&["--context", context, "get", "pods", "-A"], "");
    assert!(
        table.starts_with("NAMESPACE") && table.contains("STATUS"),
        "{context}:\n{table}"
    );
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("podinfo "))
        .collect();
    assert!(!rows.is_empty(), "{context}: no podinfo Pods:\n{table}");
    assert!(
        rows.iter()
            .all(|r| r.contains("1/1") && r.contains("Running")),
        "{context}: podinfo's Pods are not all running:\n{table}"
    );
    let pods: Value = serde_json::from_str(&kubectl.ok(
        &[
            "--context",
            context,
            "get",
            "pods",
            "-n",
            "podinfo",
            "-o",
            "json",
        ],
        "",
    ))
    .unwrap();
    for p in pods["items"].as_array().unwrap() {
        assert_eq!(p["status"]["phase"], "Running", "{p:#}");
        assert!(
            p["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| n.starts_with(context)),
            "{p:#}"
        );
    }
}

#[test]
fn the_demo_bootstraps_two_clusters_and_promotes_by_commit() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["demo", "--hold"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut out = String::new();
    // Up to the line that says it holds (or the end, when the demo failed).
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap() == 0 {
            break;
        }
        out.push_str(&line);
        if line.starts_with("holding:") {
            let kubeconfig = out
                .lines()
                .find_map(|l| l.strip_prefix("kubeconfig: "))
                .expect("the demo prints its kubeconfig");
            let kubectl = Kubectl::at(std::path::Path::new(kubeconfig));
            for context in ["staging", "production"] {
                check_pods(&kubectl, context);
            }
            let interrupted = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(interrupted.success());
        }
    }
    let status = child.wait().unwrap();
    let err = err_reader.join().unwrap();
    assert!(status.success(), "demo failed:\n{out}\n{err}");
    assert!(
        out.contains("holding:"),
        "the demo never held its clusters:\n{out}"
    );
    for cluster in ["staging", "production"] {
        for ks in ["flux-system", "infrastructure", "apps"] {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&format!("✔ {cluster:<11} {ks:<15} ready"))),
                "{cluster}/{ks} never reported ready:\n{out}"
            );
        }
    }
    // podinfo is a HelmRelease of the chart kept in the repository: after the staging commit
    // staging's release is chart 6.8.0 (and runs its appVersion) while production stays on
    // 6.7.1; after the production commit both are on 6.8.0.
    let images: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("podinfo chart"))
        .collect();
    assert_eq!(
        images,
        [
            "staging     podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo chart podinfo@6.7.1 runs ghcr.io/stefanprodan/podinfo:6.7.1",
            "staging     podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
        ],
        "{out}"
    );
    // `get helmreleases -A` on each cluster, after both are Ready, lists the release installed.
    assert!(
        out.contains("$ ferroflux get helmreleases --all-namespaces --context staging"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("podinfo") && l.contains("podinfo") && l.contains("True")),
        "no Ready HelmRelease listed:\n{out}"
    );
    assert!(out.contains("$ ferroflux fleet status"), "{out}");
    assert!(out.contains("demo finished in"), "{out}");
}
