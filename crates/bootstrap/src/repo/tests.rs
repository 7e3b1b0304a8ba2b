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
        signer: None,
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

/// flux's key fixtures (cmd/flux/testdata/bootstrap), copied for the CLI's tests.
fn key_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/fixtures/goldens/bootstrap")
        .join(name)
}

/// Runs the Git half with `signing` and returns a clone of the remote's branch.
async fn signed_run(signing: crate::signing::SigningRequest) -> (tempfile::TempDir, String) {
    let (root, url) = remote_with(&[("README.md", "fleet\n")]);
    let plan = plan(&url);
    let commit = CommitOptions {
        signer: signing.signer(None, None).unwrap(),
        ..commit_options()
    };
    let pushed = push_manifests(
        &plan,
        &url,
        &InstallOptions::default(),
        &commit,
        &mut |_: Step<'_>| {},
    )
    .await
    .unwrap();
    git(root.path(), &["clone", "-q", &url, "check"]);
    let head = pushed.revision.trim_start_matches("main@sha1:").to_string();
    (root, head)
}

/// `git verify-commit` of `commit` in `work` with `config` and `env`: whether it passed, and
/// what it printed.
fn verify_commit(
    work: &std::path::Path,
    config: &[&str],
    env: &[(&str, &std::path::Path)],
    commit: &str,
) -> (bool, String) {
    let mut cmd = std::process::Command::new("git");
    for c in config {
        cmd.args(["-c", c]);
    }
    let out = cmd
        .args(["verify-commit", "-v", commit])
        .current_dir(work)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `commit` with one byte of its message changed, written next to it; the copy keeps the
/// signature.
fn tampered(work: &std::path::Path, commit: &str) -> String {
    let object = git(work, &["cat-file", "commit", commit]);
    assert!(object.contains("\ngpgsig "), "{object}");
    let changed = object.replacen("Add Flux", "Add Flus", 1) + "\n";
    let mut child = std::process::Command::new("git")
        .args(["hash-object", "-t", "commit", "-w", "--stdin"])
        .current_dir(work)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(changed.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn ssh_signed_commits_verify_with_git_and_a_tampered_one_does_not() {
    let (root, head) = signed_run(crate::signing::SigningRequest {
        ssh_signing_key_file: Some(key_fixture("ed25519-encrypted.private")),
        ssh_signing_passphrase: "abcde12345".into(),
        ..Default::default()
    })
    .await;
    let work = root.path().join("check");
    let public = ferroflux_gitsign::SshSigner::from_openssh(
        &std::fs::read(key_fixture("ed25519-encrypted.private")).unwrap(),
        b"abcde12345",
    )
    .unwrap()
    .public_key();
    let allowed = root.path().join("allowed_signers");
    std::fs::write(&allowed, format!("flux@example.com {public}\n")).unwrap();
    let allowed_cfg = format!("gpg.ssh.allowedSignersFile={}", allowed.display());
    let config = ["gpg.format=ssh", allowed_cfg.as_str()];
    let (ok, text) = verify_commit(&work, &config, &[], &head);
    assert!(ok, "{text}");
    assert!(text.contains("Good \"git\" signature"), "{text}");
    let bad = tampered(&work, &head);
    assert_ne!(bad, head);
    let (ok, text) = verify_commit(&work, &config, &[], &bad);
    assert!(!ok, "{text}");
}

#[tokio::test]
async fn gpg_signed_commits_verify_with_git_and_a_tampered_one_does_not() {
    let (root, head) = signed_run(crate::signing::SigningRequest {
        gpg_key_ring: Some(key_fixture("gpg-encrypted.pgp")),
        gpg_passphrase: "right".into(),
        gpg_key_id: "F4C0FFD118ADFA83".into(),
        ..Default::default()
    })
    .await;
    let work = root.path().join("check");
    // The verifier's own GNUPGHOME, holding the key (gpg needs no passphrase to import it).
    let home = root.path().join("gnupg");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let import = std::process::Command::new("gpg")
        .env("GNUPGHOME", &home)
        .args(["--batch", "--import"])
        .arg(key_fixture("gpg-encrypted.pgp"))
        .output()
        .expect("gpg is installed (./test.sh installs gnupg)");
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let env = [("GNUPGHOME", home.as_path())];
    let (ok, text) = verify_commit(&work, &[], &env, &head);
    assert!(ok, "{text}");
    assert!(text.contains("Good signature from \"testenc"), "{text}");
    let bad = tampered(&work, &head);
    let (ok, text) = verify_commit(&work, &[], &env, &bad);
    assert!(!ok, "{text}");
    assert!(text.contains("BAD signature"), "{text}");
}
