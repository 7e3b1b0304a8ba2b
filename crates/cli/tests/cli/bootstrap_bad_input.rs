//! `bootstrap git` refusing what it must refuse, before or without changing Git or the cluster:
//! bad flags, a cluster following another path, a remote that rejects the push, wrong
//! credentials over https (never echoed), and Ctrl-C during the wait.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::repo::Repo;
use crate::run::{args, ferroflux_off_runtime as ferroflux, text};
use ferroflux_testkit::{Auth, Cluster, GitHttpServer, Sshd, git, keygen, make_tls};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};

fn bootstrap_args(url: &str, path: &str, kubeconfig: &str, timeout: &str) -> Vec<String> {
    args(&[
        "bootstrap",
        "git",
        "--url",
        url,
        "--branch",
        "main",
        "--path",
        path,
        "--kubeconfig",
        kubeconfig,
        "--timeout",
        timeout,
        "--silent",
    ])
}

#[test]
fn bad_flags_are_refused_before_anything_happens() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("kubeconfig-that-is-not-read");
    let kc = missing.to_str().unwrap();
    let key = dir.path().join("id");
    std::fs::write(&key, "not a key").unwrap();
    let key = key.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--url", "ssh://git@127.0.0.1/fleet.git"],
            "ssh:// URLs need --private-key-file",
        ),
        (
            vec![
                "--url",
                "ssh://git@127.0.0.1/fleet.git",
                "--private-key-file",
                key,
            ],
            "is not a private key",
        ),
        (
            vec!["--url", "http://127.0.0.1/fleet.git"],
            "scheme http is insecure, pass --allow-insecure-http=true to allow it",
        ),
        (
            vec!["--url", "https://git:hunter2-secret@127.0.0.1/fleet.git"],
            "--url must not hold a password",
        ),
        (
            vec!["--url", "git@127.0.0.1:fleet.git"],
            "is not a URL: use file://, https:// or ssh://",
        ),
        (
            vec!["--url", "ftp://127.0.0.1/fleet.git"],
            "scheme \"ftp\" is not supported",
        ),
        (
            vec!["--url", "https://127.0.0.1/fleet.git", "--token-auth"],
            "--token-auth needs --password",
        ),
        (
            vec!["--url", "file:///tmp/x.git", "--path", "../outside"],
            "it must stay inside the repository",
        ),
        (
            vec!["--url", "file:///tmp/x.git", "--interval", "soon"],
            "--interval",
        ),
    ];
    for (flags, message) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(["bootstrap", "git", "--kubeconfig", kc])
            .args(&flags)
            .output()
            .unwrap();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {all}");
        assert!(all.contains(message), "{flags:?}: {all}");
        assert!(
            !all.contains("hunter2-secret"),
            "the password leaked: {all}"
        );
    }
}

/// CRDs served and the `flux-system` namespace present, as after an earlier bootstrap.
async fn with_crds(c: &Cluster) -> kube::Client {
    let client = c.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "flux-system"}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let ks: Api<ferroflux_api::Kustomization> = Api::namespaced(client.clone(), "flux-system");
    for _ in 0..200 {
        if ks.list(&ListParams::default()).await.is_ok() {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the Kustomization CRD is never served");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_following_another_path_is_refused_and_nothing_is_pushed() {
    let c = Cluster::start("production").await;
    let client = with_crds(&c).await;
    let ks: Api<ferroflux_api::Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let existing: ferroflux_api::Kustomization = serde_json::from_value(serde_json::json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./clusters/staging", "prune": true,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }))
    .unwrap();
    ks.create(&PostParams::default(), &existing).await.unwrap();
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let before = repo.head();

    let kc = c.kubeconfig.to_str().unwrap();
    let out = ferroflux(
        bootstrap_args(&repo.url(), "clusters/production", kc, "60s"),
        vec![],
    )
    .await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(
            "sync path configuration (\"./clusters/production\") would overwrite path \
             (\"./clusters/staging\") of existing Kustomization"
        ),
        "{all}"
    );
    assert_eq!(repo.head(), before, "something was pushed");
    assert!(!all.contains("cloning"), "it cloned before checking: {all}");

    // The same path, spelled differently, is not "another path".
    for spelling in ["./clusters/staging/", "clusters/staging"] {
        let out = ferroflux(bootstrap_args(&repo.url(), spelling, kc, "3s"), vec![]).await;
        // It goes on (and times out waiting, since no controller runs here).
        let all = text(&out);
        assert!(!all.contains("would overwrite path"), "{spelling}: {all}");
        assert!(all.contains("► cloning branch"), "{spelling}: {all}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_the_remote_rejects_is_reported_and_nothing_is_applied() {
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let hook = repo.bare().join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'pushes to main are frozen for the release' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = repo.head();

    let kc = c.kubeconfig.to_str().unwrap();
    let out = ferroflux(
        bootstrap_args(&repo.url(), "clusters/staging", kc, "60s"),
        vec![],
    )
    .await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("failed to push manifests"), "{all}");
    assert!(all.contains("rejected by the remote"), "{all}");
    assert!(
        all.contains("pushes to main are frozen for the release"),
        "{all}"
    );
    assert_eq!(repo.head(), before);
    let ns = c.kubectl(&["get", "namespace", "flux-system"]);
    assert!(
        !ns.status.success(),
        "the cluster was changed: {}",
        text(&ns)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_credentials_over_https_fail_without_echoing_the_password() {
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let tls = make_tls();
    let server = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("git".into(), "the-right-one".into()),
        Some(&tls),
    );
    let ca = repo.root.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let kc = c.kubeconfig.to_str().unwrap();
    let password = "wrong-Pa55word-that-must-not-show";

    // As a flag and as GIT_PASSWORD.
    for via_env in [false, true] {
        let mut a = bootstrap_args(&server.url("fleet"), "clusters/staging", kc, "60s");
        a.extend(args(&[
            "--token-auth",
            "--username",
            "git",
            "--ca-file",
            ca.to_str().unwrap(),
        ]));
        let mut env = vec![];
        if via_env {
            env.push(("GIT_PASSWORD".to_string(), password.to_string()));
        } else {
            a.extend(args(&["--password", password]));
        }
        let out = ferroflux(a, env).await;
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(all.contains("failed to clone repository"), "{all}");
        assert!(all.contains("Authentication failed"), "{all}");
        assert!(!all.contains(password), "the password leaked: {all}");
        assert!(
            !all.contains("Pa55word"),
            "part of the password leaked: {all}"
        );
    }
    let ns = c.kubectl(&["get", "namespace", "flux-system"]);
    assert!(
        !ns.status.success(),
        "the cluster was changed: {}",
        text(&ns)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_the_wait_exits_cleanly_and_git_stays_consistent() {
    // No controller runs on this cluster, so bootstrap waits until it is interrupted.
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let tmp = tempfile::tempdir().unwrap();
    let kc = c.kubeconfig.to_str().unwrap().to_string();
    let a = bootstrap_args(&repo.url(), "clusters/staging", &kc, "5m");
    let tmp_path = tmp.path().to_path_buf();
    let (status, lines) = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(&a)
            .env("TMPDIR", &tmp_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = Vec::new();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let waiting = line.contains("waiting for GitRepository");
            lines.push(line);
            if waiting {
                // The readiness signal: it is now in its wait loop.
                let ok = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
        }
        (child.wait().unwrap(), lines)
    })
    .await
    .unwrap();
    let all = lines.concat();
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(all.contains("✗ interrupted"), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    // The commit is whole: both files of the folder, one commit on top of the first.
    assert_eq!(repo.count(), 2);
    let files = repo.files();
    for f in [
        "clusters/staging/flux-system/gotk-components.yaml",
        "clusters/staging/flux-system/gotk-sync.yaml",
        "clusters/staging/flux-system/kustomization.yaml",
    ] {
        assert!(files.contains(&f.to_string()), "{files:?}");
    }
    git(&repo.bare(), &["fsck", "--strict"]);
    // The temporary clone went with the process.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn right_credentials_over_https_push_and_reach_the_secret_only() {
    // No controller runs here: the push and the Secret are checked, then the wait times out.
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let password = "the-Right-0ne-for-https";
    let tls = make_tls();
    let server = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("git".into(), password.into()),
        Some(&tls),
    );
    let ca = repo.root.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let kc = c.kubeconfig.to_str().unwrap();
    let mut a = bootstrap_args(&server.url("fleet"), "clusters/staging", kc, "15s");
    a.extend(args(&[
        "--token-auth",
        "--username",
        "git",
        "--ca-file",
        ca.to_str().unwrap(),
    ]));
    let out = ferroflux(a, vec![("GIT_PASSWORD".into(), password.into())]).await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("✔ committed component and sync manifests"),
        "{all}"
    );
    assert!(all.contains("✔ reconciled source secret"), "{all}");
    assert!(all.contains("timed out waiting for gitrepository"), "{all}");
    assert!(!all.contains(password), "the password leaked: {all}");
    assert_eq!(repo.count(), 2);
    let sync = repo.show("clusters/staging/flux-system/gotk-sync.yaml");
    assert!(
        sync.contains(&format!("  url: {}\n", server.url("fleet"))),
        "{sync}"
    );
    assert!(!sync.contains(password));
    let client = c.client().await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "flux-system");
    let secret = secrets.get("flux-system").await.unwrap();
    let data = secret.data.unwrap();
    assert_eq!(data["username"].0, b"git");
    assert_eq!(data["password"].0, password.as_bytes());
    assert_eq!(data["ca.crt"].0, tls.ca_pem.as_bytes());
}

#[tokio::test(flavor = "multi_thread")]
async fn ssh_pushes_with_the_key_and_checks_the_host_key() {
    // No controller runs here: the push and the Secret are checked, then the wait times out.
    let c = Cluster::start("staging").await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("id_ed25519");
    let public = keygen(&key, "").1;
    let sshd = Sshd::start(&[&public]);
    let kc = c.kubeconfig.to_str().unwrap();
    let url = sshd.url(&repo.bare());

    // A known_hosts file without this server: refused before any connection.
    let unknown = keys.path().join("known_hosts_other");
    std::fs::write(&unknown, "[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0rN3rFqZ0RlFmLJbnNGbvZ3MPq5K6C5yJZmN7i0Gzc\n").unwrap();
    let mut a = bootstrap_args(&url, "clusters/staging", kc, "15s");
    a.extend(args(&[
        "--private-key-file",
        key.to_str().unwrap(),
        "--known-hosts-file",
        unknown.to_str().unwrap(),
    ]));
    let out = ferroflux(a, vec![]).await;
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(&format!("no host key for [127.0.0.1]:{}", sshd.port)),
        "{all}"
    );
    assert_eq!(repo.count(), 1);

    let known = keys.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts()).unwrap();
    let mut a = bootstrap_args(&url, "clusters/staging", kc, "15s");
    a.extend(args(&[
        "--private-key-file",
        key.to_str().unwrap(),
        "--known-hosts-file",
        known.to_str().unwrap(),
    ]));
    let out = ferroflux(a, vec![]).await;
    let all = text(&out);
    assert!(
        all.contains("✔ committed component and sync manifests"),
        "{all}"
    );
    assert!(all.contains("✔ reconciled source secret"), "{all}");
    assert_eq!(repo.count(), 2, "{all}");
    let private = std::fs::read_to_string(&key).unwrap();
    assert!(!all.contains(private.trim()), "the key leaked");
    let sync = repo.show("clusters/staging/flux-system/gotk-sync.yaml");
    assert!(sync.contains(&format!("  url: {url}\n")), "{sync}");
    let client = c.client().await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "flux-system");
    let data = secrets.get("flux-system").await.unwrap().data.unwrap();
    assert_eq!(data["identity"].0, private.as_bytes());
    assert_eq!(data["identity.pub"].0, public.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&data["known_hosts"].0).trim(),
        sshd.known_hosts().trim()
    );
}
