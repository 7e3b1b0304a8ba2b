//! README command 1 as a newcomer runs it: `ferroflux demo` bootstraps two local clusters from
//! the example fleet repository, each onto its own branch, shows them Ready, commits podinfo's
//! chart bump (a HelmRelease of a chart kept in the repository) to main and lets
//! `fleet promote` move it through the plan's waves, staging then production; it cleans up and
//! exits 0. With `--hold` it keeps the clusters up until interrupted: the real `kubectl` on each
//! shows podinfo's Pods running and the release at the promoted chart, fetched from the
//! cluster's own branch at the promoted commit. With `--keep` the repository stays, and Git's
//! record of the promotion is read from it: each branch at the commit, the previous one kept.
//! The example's alerts reach the demo's chat endpoint stamped `[staging]` and `[production]`.

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

/// The promoted release on one cluster, read from the cluster: `(chart version, flux-system's
/// branch, flux-system's artifact revision)`.
fn release_and_source(kubectl: &Kubectl, context: &str) -> (String, String, String) {
    let hr: Value = serde_json::from_str(&kubectl.ok(
        &[
            "--context",
            context,
            "get",
            "helmrelease",
            "podinfo",
            "-n",
            "podinfo",
            "-o",
            "json",
        ],
        "",
    ))
    .unwrap();
    let repo: Value = serde_json::from_str(&kubectl.ok(
        &[
            "--context",
            context,
            "get",
            "gitrepository",
            "flux-system",
            "-n",
            "flux-system",
            "-o",
            "json",
        ],
        "",
    ))
    .unwrap();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (
        s(&hr["status"]["history"][0]["chartVersion"]),
        s(&repo["spec"]["ref"]["branch"]),
        s(&repo["status"]["artifact"]["revision"]),
    )
}

fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_demo_bootstraps_two_clusters_and_promotes_with_the_plan() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["demo", "--hold", "--keep"])
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
    let mut holding = Vec::new();
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
                holding.push((context, release_and_source(&kubectl, context)));
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
    let kept = out
        .lines()
        .find_map(|l| l.strip_prefix("kept "))
        .map(std::path::PathBuf::from)
        .expect("--keep prints the directory kept");
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }
    let kept = Remove(kept);
    let bare = kept.0.join("fleet-infra.git");

    // Git's record: main has the chart bump, and the plan moved both branches to it, keeping
    // where each was before; the promotion's lock is gone.
    let promoted = git_in(&bare, &["rev-parse", "refs/heads/main"]);
    let before = git_in(&bare, &["rev-parse", "refs/heads/main~1"]);
    assert_eq!(
        git_in(&bare, &["log", "-1", "--format=%s", &promoted]),
        "apps: podinfo chart 6.8.0"
    );
    for wave in ["staging", "production"] {
        assert_eq!(
            git_in(&bare, &["rev-parse", &format!("refs/heads/{wave}")]),
            promoted,
            "{wave}'s branch"
        );
        assert_eq!(
            git_in(
                &bare,
                &["rev-parse", &format!("refs/ferroflux/previous/{wave}")]
            ),
            before,
            "{wave}'s previous revision"
        );
    }
    assert_eq!(
        git_in(&bare, &["for-each-ref", "refs/ferroflux/promotion-lock"]),
        ""
    );

    // The clusters, read while the demo held them: each release at the promoted chart, built
    // from the cluster's own branch at the promoted commit.
    assert_eq!(
        holding,
        ["staging", "production"].map(|c| (
            c,
            (
                "6.8.0".to_string(),
                c.to_string(),
                format!("{c}@sha1:{promoted}")
            )
        )),
        "{out}"
    );

    // The promotion went through the plan, wave by wave: staging moved, Ready and soaked
    // before production's branch moved.
    let short = |s: &str| s[..12].to_string();
    let promote: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "$ ferroflux fleet promote")
        .take_while(|l| !l.starts_with("✔ promoted"))
        .filter(|l| l.starts_with("► "))
        .collect();
    assert_eq!(
        promote,
        [
            format!(
                "► wave staging: moved refs/heads/staging {} -> {}",
                short(&before),
                short(&promoted)
            ),
            format!(
                "► wave staging: Ready at {} on staging; soaking 5s",
                short(&promoted)
            ),
            "► wave staging: healthy".to_string(),
            format!(
                "► wave production: moved refs/heads/production {} -> {}",
                short(&before),
                short(&promoted)
            ),
            format!(
                "► wave production: Ready at {} on production; soaking 5s",
                short(&promoted)
            ),
            "► wave production: healthy".to_string(),
        ],
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "✔ promoted {} through every wave",
            short(&promoted)
        )),
        "{out}"
    );
    // Each release before and after the promotion, as the demo printed them.
    let images: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("podinfo chart podinfo@"))
        .collect();
    assert_eq!(
        images,
        [
            "staging     podinfo chart podinfo@6.7.1 runs ghcr.io/stefanprodan/podinfo:6.7.1",
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
    // The example's alerts reached the demo's chat, each with its cluster's name: the
    // promotion's upgrade from both clusters.
    assert!(
        out.contains("\n== 6. What the clusters told the team chat"),
        "{out}"
    );
    for cluster in ["staging", "production"] {
        let count = out
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{cluster:<11} ")))
            .find_map(|l| l.strip_suffix(" messages to the chat"))
            .and_then(|n| n.parse::<usize>().ok());
        assert!(count.is_some_and(|n| n > 0), "{cluster}: {out}");
        let prefix = format!("[{cluster}] helmrelease/podinfo.podinfo: ");
        assert!(
            out.lines()
                .any(|l| l.starts_with(&prefix) && l.contains("podinfo@6.8.0")),
            "no alert from {cluster} about the upgrade:\n{out}"
        );
    }
    assert!(out.contains("demo finished in"), "{out}");
}
