//! `ferroflux fleet status`'s rollup over four in-process clusters: one ready, one failing (a
//! Kustomization and a HelmRelease), one whose source has not fetched the newest commit with a
//! dependency not ready and a suspended Kustomization, one stopped. Then `--watch`: a change on
//! a cluster shows in the next view, read from the pipe.

use crate::objects::*;
use crate::run::*;
use ferroflux_api::{GitRepository, HelmRelease, Kustomization, OCIRepository};
use ferroflux_testkit::{flux_cluster, kubeconfig};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// An RFC 3339 time `seconds` ago.
fn ago(seconds: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(seconds);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The flux-system GitRepository at `sha`, its artifact stored `age` seconds ago.
async fn git_at(c: &kube::Client, sha: &str, age: i64) {
    git(c, "flux-system", Some(sha)).await;
    let api: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
    let patch = json!({"status": {"artifact": {"digest": "sha256:00", "lastUpdateTime": ago(age),
        "path": "x.tar.gz", "revision": revision(sha), "url": "http://127.0.0.1/x.tar.gz"}}});
    api.patch_status("flux-system", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

/// A Kustomization's Ready condition with this reason (the fixture's `ks_status` picks one).
async fn ks_ready(c: &kube::Client, name: &str, status: &str, reason: &str, message: &str) {
    let api: Api<Kustomization> = Api::namespaced(c.clone(), "flux-system");
    let patch = json!({"status": {"conditions": [cond("Ready", status, reason, message, 1)]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

async fn applied(c: &kube::Client, name: &str, sha: &str) {
    let msg = format!("Applied revision: {}", revision(sha));
    ks_status(c, name, ("True", &msg), Some(&revision(sha)), json!({})).await;
}

async fn helm_release(c: &kube::Client, name: &str, ready: (&str, &str, &str)) {
    let api: Api<HelmRelease> = Api::namespaced(c.clone(), "flux-system");
    let obj: HelmRelease = serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "5m", "chart": {"spec": {"chart": "podinfo", "version": "6.x",
            "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let status: Value = json!({"conditions": [cond("Ready", ready.0, ready.1, ready.2, 1)],
        "history": [{"chartName": "podinfo", "chartVersion": "6.5.0", "name": name,
        "namespace": "flux-system", "version": 1, "status": "deployed", "digest": "sha256:00",
        "firstDeployed": "2026-01-01T00:00:00Z", "lastDeployed": "2026-01-01T00:00:00Z",
        "configDigest": "sha256:00"}]});
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

async fn oci_repository(c: &kube::Client, name: &str) {
    let api: Api<OCIRepository> = Api::namespaced(c.clone(), "flux-system");
    let obj: OCIRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "5m", "url": "oci://registry.invalid/manifests", "ref": {"tag": "v1"}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let status = json!({"conditions": [cond("Ready", "True", "Succeeded", "stored artifact", 1)],
        "artifact": {"digest": "sha256:00", "lastUpdateTime": ago(60), "path": "x.tar.gz",
        "revision": "v1@sha256:cccccccc", "url": "http://127.0.0.1/x.tar.gz"}});
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

fn lines_after<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    let at = text
        .find(first)
        .unwrap_or_else(|| panic!("no {first:?} in:\n{text}"));
    text[at..].lines().collect()
}

#[test]
fn rollup_of_four_clusters_and_the_watch() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let b = "main@sha1:bbbbbbbb";
    let a = "main@sha1:aaaaaaaa";
    let (staging, production, canary, mut qa, p) = rt.block_on(async {
        let (staging, s) = flux_cluster("staging").await;
        git_at(&s, SHA_B, 190).await;
        for name in ["flux-system", "apps"] {
            ks(&s, name, "flux-system", false).await;
            applied(&s, name, SHA_B).await;
        }
        helm_release(
            &s,
            "podinfo",
            ("True", "InstallSucceeded", "Helm install succeeded"),
        )
        .await;
        oci_repository(&s, "manifests").await;

        let (production, p) = flux_cluster("production").await;
        git_at(&p, SHA_B, 100).await;
        ks(&p, "flux-system", "flux-system", false).await;
        applied(&p, "flux-system", SHA_B).await;
        ks(&p, "apps", "flux-system", false).await;
        ks_ready(
            &p,
            "apps",
            "False",
            "BuildFailed",
            "kustomize build failed: missing resource",
        )
        .await;
        helm_release(
            &p,
            "podinfo",
            ("False", "InstallFailed", "install retries exhausted"),
        )
        .await;

        let (canary, c) = flux_cluster("canary").await;
        git_at(&c, SHA_A, 500).await;
        ks(&c, "flux-system", "flux-system", false).await;
        applied(&c, "flux-system", SHA_A).await;
        ks(&c, "apps", "flux-system", false).await;
        ks_ready(
            &c,
            "apps",
            "False",
            "DependencyNotReady",
            "dependency 'flux-system/infra' is not ready",
        )
        .await;
        ks(&c, "infra", "flux-system", true).await;

        let (qa, _) = flux_cluster("qa").await;
        (staging, production, canary, qa, p)
    });
    let kc = kubeconfig(dir.path(), &[&staging, &production, &canary, &qa]);
    rt.block_on(qa.stop());

    let out = ferroflux(&kc, &["fleet", "status", "--timeout", "20s"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let lines = lines_after(&text, "4 clusters:");
    assert_eq!(lines[0], "4 clusters: 2 failing, 1 ready, 1 unreachable");
    assert_eq!(
        lines[1],
        "GitRepository https://example.invalid/repo.git branch main"
    );
    assert_eq!(lines[2], format!("  2 of 4 clusters at {b} (3 min)"));
    assert_eq!(
        lines[3],
        format!("  1 of 4 clusters at {a} (8 min), not the newest")
    );
    assert_eq!(lines[4], "  1 of 4 clusters at no known revision");
    assert_eq!(
        lines[5],
        "Kustomizations: 4 of 7 ready, 2 failing, 1 suspended"
    );
    assert_eq!(
        lines[6],
        "HelmReleases: 1 of 2 ready, 1 failing, 0 suspended"
    );
    assert_eq!(
        lines[7],
        "Sources: 3 GitRepository (3 ready), 1 OCIRepository (1 ready)"
    );
    assert_eq!(lines[8], "");
    let laggards = cells(&lines[9..].join("\n"));
    let row = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(laggards[0], row(&["LAGGARD", "STATUS", "REASON"]));
    assert_eq!(
        laggards[1],
        row(&[
            "production",
            "failing",
            "Kustomization flux-system/apps failing (BuildFailed): kustomize build failed: missing resource"
        ])
    );
    assert_eq!(
        laggards[2],
        row(&[
            "production",
            "failing",
            "HelmRelease flux-system/podinfo failing (InstallFailed): install retries exhausted"
        ])
    );
    assert_eq!(
        laggards[3],
        row(&[
            "canary",
            "failing",
            &format!(
                "GitRepository flux-system/flux-system source not fetched yet: has {a}, the fleet's newest is {b}"
            )
        ])
    );
    assert_eq!(
        laggards[4],
        row(&[
            "canary",
            "failing",
            "Kustomization flux-system/apps dependency not ready: dependency 'flux-system/infra' is not ready"
        ])
    );
    assert_eq!(
        laggards[5],
        row(&[
            "canary",
            "failing",
            "Kustomization flux-system/infra suspended"
        ])
    );
    assert_eq!(&laggards[6][..2], &row(&["qa", "unreachable"])[..]);
    assert!(laggards[6][2].contains(qa.url()), "{:?}", laggards[6]);
    assert_eq!(laggards.len(), 7);
    assert!(
        stderr(&out).contains(
            "the fleet is not healthy: production failing, canary failing, qa unreachable"
        ),
        "{}",
        stderr(&out)
    );

    // JSON carries the rollup.
    let out = ferroflux(&kc, &["fleet", "status", "-o", "json", "--timeout", "20s"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cohort = &doc["rollup"]["cohorts"][0];
    assert_eq!(cohort["newest"], revision(SHA_B));
    assert_eq!(cohort["total"], 4);
    assert_eq!(
        cohort["revisions"][0]["clusters"],
        json!(["staging", "production"])
    );
    assert_eq!(cohort["revisions"][1]["clusters"], json!(["canary"]));
    assert_eq!(doc["rollup"]["helmReleases"]["failing"], 1);
    assert_eq!(doc["rollup"]["sources"]["OCIRepository"]["total"], 1);
    assert_eq!(doc["rollup"]["laggards"][2]["context"], "qa");
    assert_eq!(
        doc["clusters"][1]["helmReleases"][0]["reason"],
        "InstallFailed"
    );

    // --watch: the view, then the same view redrawn after production's apps recovers.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "fleet",
            "status",
            "--watch",
            "--timeout",
            "20s",
            "--kubeconfig",
        ])
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    // A failing assertion must not leave the watch running (it would hold the test).
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }
    let mut child = Reap(child);
    let (tx, frames) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut buf = String::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = pipe.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
            // A frame is complete when the next one starts (or the pipe ends).
            while let Some(at) = buf.find("\x0c\n") {
                tx.send(buf[..at].to_string()).ok();
                buf = buf[at + 2..].to_string();
            }
            tx.send(format!("partial:{buf}")).ok();
        }
    });
    let wait_for = |what: &str, f: &dyn Fn(&str) -> bool| -> String {
        let mut last = String::new();
        loop {
            // The bound only stops a broken test from hanging; the view comes from watches.
            let frame = frames
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no view with {what}; the last:\n{last}"));
            let frame = frame.strip_prefix("partial:").unwrap_or(&frame).to_string();
            last = frame.clone();
            if f(&frame) {
                return frame;
            }
        }
    };
    let first = wait_for("production failing", &|f| {
        f.contains("Kustomization flux-system/apps failing (BuildFailed)")
            && f.lines()
                .any(|l| l.starts_with("qa") && l.contains("unreachable"))
            && f.contains("Sources:")
    });
    assert!(first.starts_with("CLUSTER"), "{first}");
    assert!(
        first.contains(&format!("  2 of 4 clusters at {b}")),
        "{first}"
    );
    rt.block_on(applied(&p, "apps", SHA_B));
    let after = wait_for("production's apps applied", &|f| {
        !f.contains("Kustomization flux-system/apps failing (BuildFailed)")
    });
    assert!(
        after.contains("Kustomizations: 5 of 7 ready, 1 failing, 1 suspended"),
        "{after}"
    );
    assert!(
        after.contains("HelmRelease flux-system/podinfo failing"),
        "{after}"
    );
    // Ctrl-C ends it; the exit code is the last view's (production's HelmRelease still fails).
    let pid = child.0.id() as i32;
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let status = child.0.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(status.code(), Some(1));

    rt.block_on(async {
        staging.shutdown().await;
        production.shutdown().await;
        canary.shutdown().await;
    });
}
