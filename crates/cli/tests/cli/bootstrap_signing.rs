//! `bootstrap git`'s commit signing: every row of flux's TestBootstrapValidate_signingFlags
//! (cmd/flux/bootstrap_test.go, with its key files under fixtures/goldens/bootstrap/) and the
//! bad inputs flux's table leaves out (a wrong SSH passphrase, a key id not in the ring), each
//! refused before anything is cloned or pushed; then signed bootstraps whose commits `git
//! verify-commit` accepts in a clone: OpenPGP into a cluster whose controllers reconcile the
//! signed revision, and SSH with the transport key reused, over a real sshd.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::repo::Repo;
use crate::run::{args, ferroflux_off_runtime as ferroflux, text};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_testkit::{Cluster, Sshd, git};

fn key(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/goldens/bootstrap")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// One row of flux's table: its name, the flags, and the error it wants (`None`: valid).
struct Row {
    name: &'static str,
    flags: Vec<String>,
    want: Option<&'static str>,
}

fn row(name: &'static str, flags: &[&str], want: Option<&'static str>) -> Row {
    Row {
        name,
        flags: args(flags),
        want,
    }
}

/// A copy of an ssh key fixture readable by its owner only (ssh refuses others), and a
/// known_hosts file naming 127.0.0.1:2222, so that an ssh:// run gets past its own checks.
fn ssh_transport(dir: &Path) -> (PathBuf, PathBuf) {
    let private = dir.join("id_ed25519");
    std::fs::copy(key("ed25519.private"), &private).unwrap();
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let known = dir.join("known_hosts");
    std::fs::write(
        &known,
        "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0rN3rFqZ0RlFmLJbnNGbvZ3MPq5K6C5yJZmN7i0Gzc\n",
    )
    .unwrap();
    (private, known)
}

#[test]
fn flux_signing_flag_table() {
    let dir = tempfile::tempdir().unwrap();
    let (private, known) = ssh_transport(dir.path());
    let private = private.to_str().unwrap();
    let gpg = key("gpg.pgp");
    let gpg_enc = key("gpg-encrypted.pgp");
    let ssh = key("ed25519.private");
    let ssh_enc = key("ed25519-encrypted.private");
    let malformed = key("malformed.private");
    let rows = vec![
        row("no signing flags is valid", &[], None),
        row("GPG only is valid", &["--gpg-key-ring", &gpg], None),
        row("SSH only is valid", &["--ssh-signing-key-file", &ssh], None),
        row(
            "Reuse-private-key with private-key-file is valid",
            &[
                "--private-key-file",
                private,
                "--ssh-signing-reuse-private-key",
            ],
            None,
        ),
        row(
            "GPG + SSH errors",
            &["--gpg-key-ring", &gpg, "--ssh-signing-key-file", &ssh],
            Some("--gpg-* and --ssh-signing-* are mutually exclusive"),
        ),
        row(
            "GPG + reuse errors",
            &[
                "--gpg-key-ring",
                &gpg,
                "--private-key-file",
                private,
                "--ssh-signing-reuse-private-key",
            ],
            Some("--gpg-* and --ssh-signing-* are mutually exclusive"),
        ),
        row(
            "SSH key-file + reuse errors",
            &[
                "--ssh-signing-key-file",
                &ssh,
                "--private-key-file",
                private,
                "--ssh-signing-reuse-private-key",
            ],
            Some(
                "--ssh-signing-key-file and --ssh-signing-reuse-private-key are mutually exclusive",
            ),
        ),
        row(
            "Reuse without private-key-file errors",
            &["--ssh-signing-reuse-private-key"],
            Some("--ssh-signing-reuse-private-key requires --private-key-file"),
        ),
        row(
            "SSH password without key errors",
            &["--ssh-signing-password", "secret"],
            Some("--ssh-signing-password requires --ssh-signing-key-file"),
        ),
        row(
            "SSH passphrase alias alone applies",
            &[
                "--ssh-signing-key-file",
                &ssh_enc,
                "--ssh-signing-passphrase",
                "abcde12345",
            ],
            None,
        ),
        row(
            "SSH password and passphrase with same value passes",
            &[
                "--ssh-signing-key-file",
                &ssh_enc,
                "--ssh-signing-password",
                "abcde12345",
                "--ssh-signing-passphrase",
                "abcde12345",
            ],
            None,
        ),
        row(
            "SSH password and passphrase with different values errors",
            &[
                "--ssh-signing-key-file",
                &ssh_enc,
                "--ssh-signing-password",
                "right",
                "--ssh-signing-passphrase",
                "wrong",
            ],
            Some("are aliases; do not pass both"),
        ),
        row(
            "SSH malformed key fails pre-flight",
            &["--ssh-signing-key-file", &malformed],
            Some("invalid SSH signing key"),
        ),
        row(
            "SSH encrypted key without password fails pre-flight",
            &["--ssh-signing-key-file", &ssh_enc],
            Some("passphrase required"),
        ),
        row(
            "GPG with wrong passphrase fails pre-flight",
            &["--gpg-key-ring", &gpg_enc, "--gpg-passphrase", "wrong"],
            Some("invalid GPG signing key"),
        ),
        // Beyond flux's table.
        row(
            "GPG with the right passphrase is valid",
            &["--gpg-key-ring", &gpg_enc, "--gpg-passphrase", "right"],
            None,
        ),
        row(
            "SSH with a wrong passphrase fails pre-flight",
            &[
                "--ssh-signing-key-file",
                &ssh_enc,
                "--ssh-signing-password",
                "wrong",
            ],
            Some(
                "invalid SSH signing key: could not parse SSH signing key: the passphrase does \
                 not decrypt it",
            ),
        ),
        row(
            "GPG key id not in the ring",
            &["--gpg-key-ring", &gpg, "--gpg-key-id", "0x0123456789abcdef"],
            Some(
                "invalid GPG signing key: no GPG keyring matching key id '0123456789ABCDEF' found",
            ),
        ),
        row(
            "GPG key id of the wrong length",
            &["--gpg-key-ring", &gpg, "--gpg-key-id", "B9162F04"],
            Some("invalid GPG signing key: invalid GPG key id length; expected 16, got 8"),
        ),
        row(
            "GPG key ring that does not exist",
            &["--gpg-key-ring", "/nonexistent/ring.pgp"],
            Some("invalid GPG signing key: unable to open GPG key ring /nonexistent/ring.pgp"),
        ),
        row(
            "Reused transport key that is encrypted, without --password",
            &[
                "--private-key-file",
                &ssh_enc,
                "--ssh-signing-reuse-private-key",
            ],
            Some(
                "invalid signing key (reused from --private-key-file): SSH signing key is \
                 encrypted; passphrase required",
            ),
        ),
    ];
    // Every run stops at the latest at the cluster connection: the kubeconfig does not exist.
    let kubeconfig = dir.path().join("no-kubeconfig");
    for r in rows {
        let ssh_url = r.flags.iter().any(|f| f == "--private-key-file");
        let url = if ssh_url {
            "ssh://git@127.0.0.1:2222/fleet.git".to_string()
        } else {
            format!("file://{}/fleet.git", dir.path().display())
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferroflux"));
        cmd.args([
            "bootstrap",
            "git",
            "--url",
            &url,
            "--silent",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .args(&r.flags);
        if ssh_url {
            cmd.arg("--known-hosts-file").arg(&known);
        }
        let out = cmd.output().unwrap();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {all}", r.name);
        match r.want {
            Some(message) => {
                assert!(
                    all.contains(message),
                    "{}: wanted {message:?} in {all}",
                    r.name
                );
                assert!(!all.contains("no-kubeconfig"), "{}: {all}", r.name);
            }
            // Valid: the flags and the key passed, the run went on to the cluster.
            None => assert!(all.contains("no-kubeconfig"), "{}: {all}", r.name),
        }
        for secret in ["abcde12345", "right"] {
            assert!(
                !all.contains(&format!("\"{secret}\"")),
                "{}: a passphrase leaked: {all}",
                r.name
            );
        }
    }
}

#[test]
fn completions_name_the_signing_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = text(&out);
    for flag in [
        "--gpg-key-ring",
        "--gpg-passphrase",
        "--gpg-key-id",
        "--ssh-signing-key-file",
        "--ssh-signing-password",
        "--ssh-signing-reuse-private-key",
    ] {
        assert!(script.contains(flag), "{flag} missing");
    }
}

#[test]
fn a_key_that_cannot_sign_pushes_nothing() {
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let before = repo.head();
    let dir = tempfile::tempdir().unwrap();
    for flags in [
        vec![
            "--gpg-key-ring",
            &key("gpg-encrypted.pgp"),
            "--gpg-passphrase",
            "wrong",
        ],
        vec![
            "--ssh-signing-key-file",
            &key("ed25519-encrypted.private"),
            "--ssh-signing-password",
            "wrong",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(["bootstrap", "git", "--url", &repo.url(), "--silent"])
            .arg("--kubeconfig")
            .arg(dir.path().join("no-kubeconfig"))
            .args(&flags)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(!text(&out).contains("cloning"), "{}", text(&out));
        assert_eq!(repo.head(), before);
        assert_eq!(repo.count(), 1);
    }
}

/// `git verify-commit -v` of `commit` in a fresh clone of `bare`, with `config` and `env`.
fn verify_commit(
    bare: &Path,
    config: &[String],
    env: &[(&str, &Path)],
    commit: &str,
) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    git(
        dir.path(),
        &["clone", "-q", &format!("file://{}", bare.display()), "c"],
    );
    let mut cmd = Command::new("git");
    for c in config {
        cmd.args(["-c", c]);
    }
    let out = cmd
        .args(["verify-commit", "-v", commit])
        .current_dir(dir.path().join("c"))
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .unwrap();
    (out.status.success(), text(&out))
}

#[tokio::test(flavor = "multi_thread")]
async fn gpg_signed_bootstrap_verifies_and_the_cluster_follows_it() {
    let c = Cluster::start("staging").await;
    let client = c.client().await;
    install_crds(&client).await.unwrap();
    let storage = tempfile::tempdir().unwrap();
    let config = c.cluster.kube_config().await.unwrap();
    let manager = Manager::start(client, config, ManagerConfig::local(storage.path()))
        .await
        .unwrap();
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);

    let out = ferroflux(
        args(&[
            "bootstrap",
            "git",
            "--url",
            &repo.url(),
            "--path",
            "clusters/staging",
            "--kubeconfig",
            c.kubeconfig.to_str().unwrap(),
            "--timeout",
            "90s",
            "--silent",
            "--gpg-key-ring",
            &key("gpg-encrypted.pgp"),
            "--gpg-passphrase",
            "right",
            "--gpg-key-id",
            "F4C0FFD118ADFA83",
        ]),
        vec![],
    )
    .await;
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("right\""), "{log}");
    let head = repo.head().unwrap();
    // The cluster applied the signed commit.
    let ks = c.kubectl(&[
        "-n",
        "flux-system",
        "get",
        "kustomizations.kustomize.toolkit.fluxcd.io",
        "flux-system",
        "-o",
        "jsonpath={.status.lastAppliedRevision}",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&ks.stdout),
        format!("main@sha1:{head}")
    );

    // gpg verifies it with only the public key in its ring.
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let import = Command::new("gpg")
        .env("GNUPGHOME", home.path())
        .args(["--batch", "--import"])
        .arg(key("gpg-encrypted.pgp"))
        .output()
        .expect("gpg (./test.sh installs gnupg)");
    assert!(import.status.success(), "{}", text(&import));
    let env = [("GNUPGHOME", home.path())];
    let (ok, text) = verify_commit(&repo.bare(), &[], &env, &head);
    assert!(ok, "{text}");
    assert!(
        text.contains("Good signature from \"testenc <testenc@example.com>\""),
        "{text}"
    );
    manager.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn ssh_signed_bootstrap_with_the_transport_key_verifies() {
    // No controller runs: the signed push is checked, then the wait times out.
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let dir = tempfile::tempdir().unwrap();
    let (private, _) = ssh_transport(dir.path());
    let public = git_ssh_public(&private);
    let sshd = Sshd::start(&[&public]);
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts()).unwrap();
    let out = ferroflux(
        args(&[
            "bootstrap",
            "git",
            "--url",
            &sshd.url(&repo.bare()),
            "--path",
            "clusters/staging",
            "--kubeconfig",
            c.kubeconfig.to_str().unwrap(),
            "--timeout",
            "5s",
            "--silent",
            "--private-key-file",
            private.to_str().unwrap(),
            "--known-hosts-file",
            known.to_str().unwrap(),
            "--ssh-signing-reuse-private-key",
        ]),
        vec![],
    )
    .await;
    let log = text(&out);
    assert!(
        log.contains("✔ committed component and sync manifests"),
        "{log}"
    );
    assert_eq!(repo.count(), 2, "{log}");
    let head = repo.head().unwrap();
    let allowed = dir.path().join("allowed_signers");
    std::fs::write(&allowed, format!("flux@example.com {public}")).unwrap();
    let config = [
        "gpg.format=ssh".to_string(),
        format!("gpg.ssh.allowedSignersFile={}", allowed.display()),
    ];
    let (ok, text) = verify_commit(&repo.bare(), &config, &[], &head);
    assert!(ok, "{text}");
    assert!(
        text.contains("Good \"git\" signature for flux@example.com with ED25519 key"),
        "{text}"
    );
}

/// The public key of an OpenSSH private key file, from `ssh-keygen -y`.
fn git_ssh_public(private: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(private)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}
