//! `ferroflux create source git`: `--export` against flux's goldens
//! (`fixtures/goldens/create_source_git/`, flux's own command lines), flux's messages for bad
//! flags, and the apply path against the real controllers (the `Manager` in this process) and a
//! real Git server: public over HTTP (flux's `success.golden`), with basic auth over HTTPS (the
//! credentials become a Secret the controller uses), and an update of an existing source.

use crate::repo::Repo;
use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_api::GitRepository;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{Auth, GitHttpServer, flux_cluster, kubeconfig, make_tls};
use kube::api::Api;
use std::path::Path;
use std::process::{Command, Output};

fn golden(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/create_source_git")
            .join(file),
    )
    .unwrap()
}

fn create(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["create", "source", "git"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn exports_match_flux_goldens() {
    let url = "--url=https://github.com/stefanprodan/podinfo";
    let ns = "--namespace=flux-system";
    let i = "--interval=1m0s";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "export.golden",
            vec![
                "podinfo",
                url,
                "--branch=master",
                "--sparse-checkout-paths",
                ".cosign,non-existent-dir/",
                "--ignore-paths",
                ".cosign,non-existent-dir/",
                "-n",
                "default",
                "--interval",
                "1m",
                "--export",
                "--timeout=10s",
            ],
        ),
        (
            "source-git-commit.yaml",
            vec!["podinfo", ns, url, "--commit=c88a2f41", i, "--export"],
        ),
        (
            "source-git-refname.yaml",
            vec![
                "podinfo",
                ns,
                url,
                "--ref-name=refs/heads/main",
                i,
                "--export",
            ],
        ),
        (
            "source-git-branch-commit.yaml",
            vec![
                "podinfo",
                ns,
                url,
                "--branch=main",
                "--commit=c88a2f41",
                i,
                "--export",
            ],
        ),
        (
            "source-git-semver.yaml",
            vec!["podinfo", ns, url, "--tag-semver=v1.01", i, "--export"],
        ),
        (
            "source-git-tag.yaml",
            vec!["podinfo", ns, url, "--tag=test", i, "--export"],
        ),
        (
            "source-git-branch.yaml",
            vec!["podinfo", ns, url, "--branch=test", i, "--export"],
        ),
        (
            "source-git-provider-generic.yaml",
            vec![
                "podinfo",
                ns,
                url,
                "--provider",
                "generic",
                "--branch=test",
                i,
                "--export",
            ],
        ),
        (
            "source-git-provider-azure.yaml",
            vec![
                "podinfo",
                ns,
                "--url=https://dev.azure.com/foo/bar/_git/podinfo",
                "--provider",
                "azure",
                "--branch=test",
                i,
                "--export",
            ],
        ),
        (
            "source-git-provider-github.yaml",
            vec![
                "podinfo",
                ns,
                url,
                "--provider",
                "github",
                "--branch=test",
                i,
                "--secret-ref",
                "appinfo",
                "--export",
            ],
        ),
    ];
    let mut failed = Vec::new();
    for (file, args) in &cases {
        let out = create(args);
        if !out.status.success() || stdout(&out) != golden(file) {
            failed.push(format!("{file}:\n{}{}", stdout(&out), stderr(&out)));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn bad_flags_get_flux_messages() {
    let azure = "--url=https://dev.azure.com/foo/bar/_git/podinfo";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--url=https://github.com/stefanprodan/podinfo"],
            "name is required",
        ),
        (vec!["podinfo", "--branch=main"], "url is required"),
        (
            vec![
                "podinfo",
                azure,
                "--provider",
                "dummy",
                "--branch=test",
                "--export",
            ],
            "invalid argument \"dummy\" for \"--provider\" flag: source Git provider 'dummy' is not supported, must be one of: generic|github|aws|azure",
        ),
        (
            vec![
                "podinfo",
                azure,
                "--provider",
                "",
                "--branch=test",
                "--export",
            ],
            "invalid argument \"\" for \"--provider\" flag: no source Git provider given, please specify the Git provider name",
        ),
        (
            vec!["podinfo", azure, "--export"],
            "a Git ref is required, use one of the following: --branch, --tag, --commit, --ref-name or --tag-semver",
        ),
        (
            vec![
                "podinfo",
                "--url=git://example.com/r",
                "--branch=main",
                "--export",
            ],
            "git URL scheme 'git' not supported, can be: ssh, http and https",
        ),
        (
            vec![
                "podinfo",
                "--url=ssh://git@example.com/r",
                "--branch=main",
                "--ca-file=ca.pem",
                "--export",
            ],
            "specifying a CA file is not supported for Git over SSH",
        ),
    ];
    let mut failed = Vec::new();
    for (args, message) in &cases {
        let out = create(args);
        let err = stderr(&out);
        if out.status.code() != Some(1) || err != format!("✗ {message}\n") || !out.stdout.is_empty()
        {
            failed.push(format!(
                "{args:?}: exit {:?}, stderr {err:?}",
                out.status.code()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn creates_and_waits_with_the_real_controller() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let public = Repo::with_files(&[("apps/a.yaml", "kind: ConfigMap\n")]);
    let head = public.head().unwrap();
    let open = GitHttpServer::start(public.root.path(), Auth::None, None);
    let private = Repo::with_files(&[("apps/b.yaml", "kind: ConfigMap\n")]);
    let private_head = private.head().unwrap();
    let tls = make_tls();
    let guarded = GitHttpServer::start(
        private.root.path(),
        Auth::Basic("git".into(), "s3cret-Pa55".into()),
        Some(&tls),
    );
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("staging").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);

    // A public repository: flux's lines, the revision the controller fetched.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "git",
            "podinfo",
            "--url",
            &open.url("fleet"),
            "--branch",
            "main",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("success.golden").replace("v1", &format!("main@sha1:{head}"))
    );
    // Again: the source exists and is updated.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "git",
            "podinfo",
            "--url",
            &open.url("fleet"),
            "--branch",
            "main",
            "--interval",
            "5m",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("✔ GitRepository source updated\n"),
        "{}",
        stderr(&out)
    );
    let repos: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
    let podinfo = rt.block_on(repos.get("podinfo")).unwrap();
    assert_eq!(podinfo.spec.interval, "5m0s");
    assert!(podinfo.spec.secret_ref.is_none());

    // Basic auth over HTTPS with a private CA: a Secret named after the source holds them.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "git",
            "private",
            "--url",
            &guarded.url("fleet"),
            "--branch",
            "main",
            "--username",
            "git",
            "--password",
            "s3cret-Pa55",
            "--ca-file",
            ca.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "✚ generating GitRepository source\n► applying secret with repository credentials\n\
             ✔ authentication configured\n► applying GitRepository source\n\
             ✔ GitRepository source created\n◎ waiting for GitRepository source reconciliation\n\
             ✔ GitRepository source reconciliation completed\n\
             ✔ fetched revision: main@sha1:{private_head}\n"
        )
    );
    let private_repo = rt.block_on(repos.get("private")).unwrap();
    assert_eq!(private_repo.spec.secret_ref.unwrap().name, "private");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(c.clone(), "flux-system");
    let secret = rt.block_on(secrets.get("private")).unwrap();
    let data = secret.data.unwrap();
    assert_eq!(data["username"].0, b"git");
    assert_eq!(data["password"].0, b"s3cret-Pa55");
    assert_eq!(data["ca.crt"].0, tls.ca_pem.as_bytes());

    // A wrong branch: the controller's failure, exit 1, the source stays applied.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "git",
            "nobranch",
            "--url",
            &open.url("fleet"),
            "--branch",
            "nope",
            "--timeout",
            "20s",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("✗ "), "{}", stderr(&out));
    assert!(rt.block_on(repos.get("nobranch")).is_ok());

    rt.block_on(manager.shutdown()).unwrap();
    drop(cl);
}
