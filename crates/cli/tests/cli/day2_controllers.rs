//! suspend, resume and reconcile against the real controllers: the `Manager` that `ferroflux
//! controller` and `dev up` run (here in this process) on a devcluster, following a `file://`
//! Git repository the test commits to. Nothing here writes a Flux object's status; what the
//! commands print is compared with flux's goldens, and what the cluster holds shows whether a
//! commit was applied.

use crate::following::{controllers_following, kustomization};
use crate::repo::Repo;
use crate::run::{cells, ferroflux, runtime, stderr, stdout};
use ferroflux_api::Kustomization;
use ferroflux_testkit::kubeconfig;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const NAME: &str = "podinfo";

/// A Kustomization on the same source that is never suspended: when it has applied a commit,
/// the controller has had that commit's trigger for `NAME` too (one GitRepository change wakes
/// both, and a suspended one returns at once), so `NAME` not applying it means something.
const WITNESS: &str = "witness";

fn configmap(name: &str, colour: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n\
         data:\n  colour: {colour}\n"
    )
}

/// Waits until Kustomization `name` reports `want` applied; the bound only stops a broken
/// controller from hanging the test.
async fn applied(client: &kube::Client, name: &str, want: &str) {
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    for _ in 0..1200 {
        let ks = kss.get(name).await.unwrap();
        if ks.status.and_then(|s| s.last_applied_revision).as_deref() == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never applied {want}");
}

/// Both files of the repository at one colour.
fn paint(repo: &Repo, colour: &str) -> String {
    repo.write("apps/settings.yaml", &configmap("settings", colour));
    repo.write("witness/witness.yaml", &configmap("witness", colour));
    repo.commit_and_push(colour)
}

/// A flux golden of `tests/fixtures/goldens`, for objects named `NAME` in `flux-system` at
/// `revision`.
fn golden(file: &str, revision: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/goldens/kustomization/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .replace("{{ .ns }}", "flux-system")
        .replace("tkfg", NAME)
        .replace(
            "6.3.5@sha1:67e2c98a60dc92283531412a9e604dd4bae005a9",
            revision,
        )
}

fn revision(sha: &str) -> String {
    format!("main@sha1:{sha}")
}

/// The `colour` the cluster holds now.
fn colour(rt: &tokio::runtime::Runtime, client: &kube::Client) -> String {
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = rt.block_on(configmaps.get("settings")).unwrap();
    cm.data.unwrap()["colour"].clone()
}

fn last_applied(rt: &tokio::runtime::Runtime, client: &kube::Client) -> Option<String> {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = rt.block_on(api.get(NAME)).unwrap();
    ks.status.and_then(|s| s.last_applied_revision)
}

#[test]
fn suspend_resume_and_reconcile_with_the_real_controllers() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let repo = Repo::with_files(&[
        ("apps/settings.yaml", &configmap("settings", "blue")),
        ("witness/witness.yaml", &configmap("witness", "blue")),
    ]);
    let first = repo.head().unwrap();
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c, manager) = controllers_following("staging", NAME, &repo, storage.path()).await;
        for (name, path) in [(NAME, "./apps"), (WITNESS, "./witness")] {
            kustomization(&c, name, NAME, path, json!({})).await;
        }
        applied(&c, NAME, &revision(&first)).await;
        applied(&c, WITNESS, &revision(&first)).await;
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    assert_eq!(colour(&rt, &c), "blue");

    // Suspended: a new commit is fetched (and applied by the witness) but not applied.
    let out = ferroflux(&kc, &["suspend", "ks", NAME]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("suspend_kustomization_from_git.golden", "")
    );
    let second = paint(&repo, "green");
    let out = ferroflux(
        &kc,
        &["reconcile", "source", "git", NAME, "--timeout", "2m"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reconcile = golden(
        "reconcile_kustomization_from_git.golden",
        &revision(&second),
    );
    let source_lines: String = reconcile.split_inclusive('\n').take(4).collect();
    assert_eq!(stderr(&out), source_lines);
    rt.block_on(applied(&c, WITNESS, &revision(&second)));
    let out = ferroflux(&kc, &["reconcile", "ks", NAME]);
    assert_eq!(out.status.code(), Some(1));
    // Flux's error line, word for word.
    assert_eq!(stderr(&out), "✗ resource is suspended\n");
    assert_eq!(colour(&rt, &c), "blue");
    assert_eq!(last_applied(&rt, &c), Some(revision(&first)));

    // Resumed: the controller applies what the source holds, and resume prints it. Meanwhile
    // `events --watch` streams what the controller records (through events.k8s.io, the API
    // kube's recorder writes; the watch reads core/v1, the same store).
    let mut watch = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "events",
            "--watch",
            "--for",
            &format!("Kustomization/{NAME}"),
        ])
        .args(["--timeout", "2m", "--kubeconfig"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // The readiness signal: the header comes with the first event listed (the first apply's).
    let header = lines.next().unwrap().unwrap();
    assert!(header.starts_with("LAST SEEN"), "{header:?}");
    let out = ferroflux(&kc, &["resume", "ks", NAME, "--timeout", "2m"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("resume_kustomization_from_git.golden", &revision(&second))
    );
    assert_eq!(colour(&rt, &c), "green");
    // The apply of the new commit arrives as a new row (the first apply's said "created").
    let mut seen = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("events --watch ended without the new apply: {seen:?}");
        };
        let done = line.contains("ConfigMap/default/settings configured");
        seen.push(line);
        if done {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l.contains(&format!(
            "\tNormal\tReconciliationSucceeded\tKustomization/{NAME}\t"
        ))),
        "{seen:?}"
    );
    watch.kill().unwrap();
    watch.wait().unwrap();

    // A commit, then reconcile --with-source: the source fetches it, the Kustomization applies it.
    let third = paint(&repo, "red");
    let out = ferroflux(
        &kc,
        &["reconcile", "ks", NAME, "--with-source", "--timeout", "2m"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("reconcile_kustomization_from_git.golden", &revision(&third))
    );
    assert_eq!(colour(&rt, &c), "red");
    assert_eq!(last_applied(&rt, &c), Some(revision(&third)));

    // The controller's own events, as `events --for` shows them.
    let out = ferroflux(&kc, &["events", "--for", &format!("Kustomization/{NAME}")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    let object = format!("Kustomization/{NAME}");
    assert!(
        rows.iter()
            .any(|r| r[1] == "Normal" && r[2] == "ReconciliationSucceeded" && r[3] == object),
        "{rows:?}"
    );

    // The fleet view of this one cluster: both Kustomizations ready at the fetched commit.
    let out = ferroflux(&kc, &["fleet", "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = cells(stdout(&out).split_once("\n\n").unwrap().1);
    let short = format!("main@sha1:{}", &third[..8]);
    assert_eq!(
        summary[1],
        [
            "staging", "ready", "2/2", "0", "0", &short, &short, "in sync"
        ]
    );
    rt.block_on(async {
        manager.shutdown().await.unwrap();
        cl.shutdown().await;
    });
}
