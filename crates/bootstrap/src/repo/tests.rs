//! The Git half against a real bare repository over file://: one commit of three files, nothing
//! on a second run, the folder's own files listed and built.

use ferroflux_testkit::git;

use super::*;
use crate::git::tests::bare_remote;
use crate::plan::Request;
use crate::plan::tests::request;

fn plan(url: &str) -> Plan {
    Plan::new(&Request {
        path: "clusters/dev".into(),
        ..request(url)
    })
    .unwrap()
}

/// A bare remote whose `main` holds `files` (path, content), committed by someone else.
fn remote_with(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let (root, url) = bare_remote();
    git(root.path(), &["clone", "-q", &url, "work"]);
    let work = root.path().join("work");
    for (path, content) in files {
        let file = work.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "theirs"]);
    git(&work, &["push", "-q", "origin", "HEAD:main"]);
    (root, url)
}

fn commit_options() -> CommitOptions {
    CommitOptions {
        author: Signature {
            name: "Flux".into(),
            email: String::new(),
        },
        appendix: Some("[ci skip]".into()),
    }
}

/// Runs the Git half and returns its result and the steps it reported, printed as `Debug`.
async fn run(plan: &Plan, url: &str) -> (Pushed, Vec<String>) {
    let mut steps = Vec::new();
    let pushed = push_manifests(
        plan,
        url,
        &InstallOptions::default(),
        &commit_options(),
        &mut |s: Step<'_>| steps.push(format!("{s:?}")),
    )
    .await
    .unwrap();
    (pushed, steps)
}

#[tokio::test]
async fn one_commit_then_nothing_and_the_folders_own_files_are_kept() {
    // The branch already holds a ConfigMap in the folder bootstrap writes to.
    let (root, url) = remote_with(&[
        (
            "clusters/dev/flux-system/extra.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: flux-system\n",
        ),
        ("clusters/dev/flux-system/notes.txt", "not yaml: ["),
    ]);
    let remote = root.path().join("r.git");

    let plan = plan(&url);
    let (first, steps) = run(&plan, &url).await;
    assert!(steps[0].starts_with("Cloning"), "{steps:?}");
    assert!(
        steps.iter().any(|s| s.starts_with("Committed")),
        "{steps:?}"
    );
    assert!(!steps.iter().any(|s| s == "UpToDate"), "{steps:?}");
    let head = git(&remote, &["rev-parse", "main"]);
    assert_eq!(first.revision, format!("main@sha1:{head}"));
    let message = git(&remote, &["log", "-1", "--format=%B", "main"]);
    assert!(message.starts_with("Add Flux v"), "{message}");
    assert!(message.ends_with("\n\n[ci skip]"), "{message}");
    let files = git(
        &remote,
        &[
            "show",
            "--name-only",
            "--format=",
            "main",
            "--",
            "clusters/dev/flux-system",
        ],
    );
    assert_eq!(
        files,
        "clusters/dev/flux-system/gotk-components.yaml\n\
         clusters/dev/flux-system/gotk-sync.yaml\n\
         clusters/dev/flux-system/kustomization.yaml"
    );
    let kustomization = git(
        &remote,
        &["show", "main:clusters/dev/flux-system/kustomization.yaml"],
    );
    assert!(kustomization.contains("- extra.yaml\n"), "{kustomization}");
    assert!(!kustomization.contains("notes.txt"), "{kustomization}");
    let kinds = |objects: &[Value]| -> Vec<String> {
        objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let mut sync = kinds(&first.sync);
    sync.sort();
    assert_eq!(sync, ["GitRepository", "Kustomization"]);
    assert!(kinds(&first.components).contains(&"ConfigMap".to_string()));
    assert!(kinds(&first.components).contains(&"Deployment".to_string()));

    // The same run again: nothing to commit, the same revision.
    let (second, steps) = run(&plan, &url).await;
    assert!(steps.iter().any(|s| s == "UpToDate"), "{steps:?}");
    assert!(
        !steps.iter().any(|s| s.starts_with("Committed")),
        "{steps:?}"
    );
    assert_eq!(second.revision, first.revision);
}

#[tokio::test]
async fn a_folder_that_does_not_build_names_its_kustomization() {
    // The user's kustomization names a file that is not there.
    let (_root, url) = remote_with(&[(
        "clusters/dev/flux-system/kustomization.yaml",
        "resources:\n- gotk-components.yaml\n- gotk-sync.yaml\n- missing.yaml\n",
    )]);

    let err = push_manifests(
        &plan(&url),
        &url,
        &InstallOptions::default(),
        &commit_options(),
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot build clusters/dev/flux-system/kustomization.yaml"
    );
    let cause = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        cause.as_deref().is_some_and(|c| c.contains("missing.yaml")),
        "{cause:?}"
    );
}
