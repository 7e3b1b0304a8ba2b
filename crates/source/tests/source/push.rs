//! Image automation's write side against real servers: a commit made on top of a fetched one,
//! pushed with receive-pack over HTTPS and ssh, checked with the `git` program on the server's
//! repository (`fsck`, the log, the file), and the pushes that must not happen.

use crate::repo::Repo;
use ferroflux_source::{Credentials, FetchOptions, GitRef, GitSource, RefUpdate, Signature};
use ferroflux_testkit::{Auth, GitHttpServer, Sshd, git, keygen, make_tls};

const PASSWORD: &str = "push-pa55-secret";

fn main_ref() -> GitRef {
    GitRef {
        branch: Some("main".into()),
        ..Default::default()
    }
}

fn fleet() -> Repo {
    let repo = Repo::new("fleet");
    repo.write(
        "apps/podinfo/deploy.yaml",
        b"image: ghcr.io/stefanprodan/podinfo:6.7.0 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n",
    );
    repo.write("apps/other.yaml", b"kind: ConfigMap\n");
    repo.write("README.md", b"fleet\n");
    repo.commit("one");
    repo.push(&["main"]);
    repo
}

fn author() -> Signature {
    Signature {
        name: "fluxcdbot".into(),
        email: "fluxcdbot@users.noreply.github.com".into(),
        time: 1_700_000_000,
    }
}

fn bare_git(repo: &Repo, args: &[&str]) -> String {
    git(&repo.bare(), args)
}

fn https_source(repo: &Repo) -> (GitHttpServer, GitSource) {
    let tls = make_tls();
    let server = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("flux".into(), PASSWORD.into()),
        Some(&tls),
    );
    let data = [
        ("username", "flux"),
        ("password", PASSWORD),
        ("ca.crt", tls.ca_pem.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
    .collect();
    let creds = Credentials::from_secret_data(&data).unwrap();
    let src = GitSource::new(
        &server.url("fleet"),
        &main_ref(),
        creds,
        FetchOptions::default(),
    )
    .unwrap();
    (server, src)
}

const NEW: &[u8] =
    b"image: ghcr.io/stefanprodan/podinfo:6.7.1 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n";

#[test]
fn a_commit_on_the_fetched_one_is_pushed_over_https() {
    let repo = fleet();
    let (_server, src) = https_source(&repo);
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();

    let files = fetched
        .files_under("./apps/", |p| p.ends_with(".yaml"))
        .unwrap();
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["other.yaml", "podinfo/deploy.yaml"]);
    assert!(fetched.files_under("nowhere", |_| true).unwrap().is_empty());

    // The same contents make no commit.
    let same = vec![("apps/other.yaml".to_string(), b"kind: ConfigMap\n".to_vec())];
    assert!(
        fetched
            .commit_files(&same, &author(), "nothing", None)
            .unwrap()
            .is_none()
    );

    let change = vec![("apps/podinfo/deploy.yaml".to_string(), NEW.to_vec())];
    let commit = fetched
        .commit_files(
            &change,
            &author(),
            "Update from image update automation",
            None,
        )
        .unwrap()
        .unwrap();
    let update = RefUpdate {
        name: "refs/heads/main".into(),
        force: false,
    };
    src.push(&fetched, &commit, &[update], &[]).unwrap();

    assert_eq!(
        bare_git(&repo, &["rev-parse", "main"]),
        commit.id.to_string()
    );
    bare_git(&repo, &["fsck", "--strict"]);
    assert_eq!(
        bare_git(&repo, &["log", "-1", "--format=%an|%ae|%at|%cn|%s", "main"]),
        "fluxcdbot|fluxcdbot@users.noreply.github.com|1700000000|fluxcdbot|Update from image update automation"
    );
    assert_eq!(
        bare_git(&repo, &["show", "main:apps/podinfo/deploy.yaml"]).as_bytes(),
        NEW.strip_suffix(b"\n").unwrap()
    );
    // Only the one file changed.
    assert_eq!(
        bare_git(&repo, &["diff", "--name-only", "main~1", "main"]),
        "apps/podinfo/deploy.yaml"
    );
}

#[test]
fn a_remote_that_moved_is_not_overwritten_unless_forced() {
    let repo = fleet();
    let (_server, src) = https_source(&repo);
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    // Someone pushes between the checkout and the push.
    repo.write("README.md", b"fleet, edited\n");
    let theirs = repo.commit("theirs");
    repo.push(&["main"]);

    let change = vec![("apps/podinfo/deploy.yaml".to_string(), NEW.to_vec())];
    let commit = fetched
        .commit_files(&change, &author(), "update", None)
        .unwrap()
        .unwrap();
    let main = RefUpdate {
        name: "refs/heads/main".into(),
        force: false,
    };
    let err = src
        .push(&fetched, &commit, std::slice::from_ref(&main), &[])
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("non-fast-forward update of refs/heads/main"),
        "{text}"
    );
    assert!(!text.contains(PASSWORD), "{text}");
    assert_eq!(err.reason(), "GitOperationFailed");
    assert_eq!(bare_git(&repo, &["rev-parse", "main"]), theirs);

    // An existing other branch with its own history is overwritten when forced (Flux's push
    // branch), and created when absent.
    repo.git(&["checkout", "-q", "-b", "auto"]);
    repo.write("README.md", b"auto\n");
    repo.commit("old auto");
    repo.push(&["auto"]);
    let branches = [
        RefUpdate {
            name: "refs/heads/auto".into(),
            force: true,
        },
        RefUpdate {
            name: "refs/heads/fresh".into(),
            force: false,
        },
    ];
    src.push(&fetched, &commit, &branches, &[]).unwrap();
    assert_eq!(
        bare_git(&repo, &["rev-parse", "auto"]),
        commit.id.to_string()
    );
    assert_eq!(
        bare_git(&repo, &["rev-parse", "fresh"]),
        commit.id.to_string()
    );
    assert_eq!(bare_git(&repo, &["rev-parse", "main"]), theirs);
    bare_git(&repo, &["fsck", "--strict"]);
}

#[test]
fn push_options_need_a_remote_that_takes_them() {
    let repo = fleet();
    let (_server, src) = https_source(&repo);
    let before = bare_git(&repo, &["rev-parse", "main"]);
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    let change = vec![("apps/podinfo/deploy.yaml".to_string(), NEW.to_vec())];
    let commit = fetched
        .commit_files(&change, &author(), "update", None)
        .unwrap()
        .unwrap();
    let main = RefUpdate {
        name: "refs/heads/main".into(),
        force: false,
    };
    let options = vec!["merge_request.create".to_string()];
    let err = src
        .push(&fetched, &commit, std::slice::from_ref(&main), &options)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the remote does not support push options"),
        "{err}"
    );
    assert_eq!(bare_git(&repo, &["rev-parse", "main"]), before);

    bare_git(&repo, &["config", "receive.advertisePushOptions", "true"]);
    src.push(&fetched, &commit, &[main], &options).unwrap();
    assert_eq!(
        bare_git(&repo, &["rev-parse", "main"]),
        commit.id.to_string()
    );
}

#[test]
fn files_that_are_not_in_the_commit_are_refused() {
    let repo = fleet();
    let (_server, src) = https_source(&repo);
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    for path in ["apps/missing.yaml", "nowhere/x.yaml", "apps/podinfo"] {
        let change = vec![(path.to_string(), b"x\n".to_vec())];
        let err = fetched
            .commit_files(&change, &author(), "update", None)
            .unwrap_err();
        assert!(
            err.to_string().starts_with("failed to commit: '"),
            "{path}: {err}"
        );
    }
}

#[test]
fn a_signed_commit_keeps_its_signature_through_the_push_over_ssh() {
    let repo = fleet();
    let keys = tempfile::tempdir().unwrap();
    let (key, key_pub) = keygen(&keys.path().join("id"), "");
    let sshd = Sshd::start(&[&key_pub]);
    let data = [
        ("identity", key.as_str()),
        ("known_hosts", sshd.known_hosts().as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
    .collect();
    let creds = Credentials::from_secret_data(&data).unwrap();
    let src = GitSource::new(
        &sshd.url(&repo.bare()),
        &main_ref(),
        creds,
        FetchOptions::default(),
    )
    .unwrap();
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    let change = vec![("apps/podinfo/deploy.yaml".to_string(), NEW.to_vec())];
    // A stand-in signer: what it returns is what is written and pushed.
    let sign = |commit: &[u8]| -> Result<Vec<u8>, String> {
        let text = String::from_utf8_lossy(commit);
        let (headers, message) = text.split_once("\n\n").ok_or("no message")?;
        Ok(format!("{headers}\ngpgsig -----BEGIN SSH SIGNATURE-----\n stand-in\n -----END SSH SIGNATURE-----\n\n{message}").into_bytes())
    };
    let commit = fetched
        .commit_files(&change, &author(), "signed update", Some(&sign))
        .unwrap()
        .unwrap();
    let main = RefUpdate {
        name: "refs/heads/main".into(),
        force: false,
    };
    src.push(&fetched, &commit, &[main], &[]).unwrap();
    let raw = bare_git(&repo, &["cat-file", "commit", "main"]);
    assert!(
        raw.contains("\ngpgsig -----BEGIN SSH SIGNATURE-----\n stand-in\n"),
        "{raw}"
    );
    assert!(raw.ends_with("\n\nsigned update"), "{raw}");
}
