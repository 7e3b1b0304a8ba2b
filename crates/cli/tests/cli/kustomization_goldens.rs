//! flux's end-to-end Kustomization flow (cmd/flux/kustomization_test.go) against the real
//! controllers (the `Manager` in this process) and a real Git server over HTTP: `create source
//! git` at tag 6.3.5, `create kustomization` with health checks, `get`, `reconcile
//! --with-source`, `suspend` and `resume` of one and several names, `delete`; each command's
//! output compared with flux's golden (`fixtures/goldens/kustomization/`), the revision being
//! the one this repository's tag points at.

use crate::repo::Repo;
use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_api::Kustomization;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{Auth, GitHttpServer, flux_cluster, git, kubeconfig};
use kube::api::Api;

const NS: &str = "flux-system";

fn deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: dev\n\
         spec:\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n\
         \x20     labels:\n        app: {name}\n    spec:\n      containers:\n      - name: app\n\
         \x20       image: ghcr.io/stefanprodan/podinfo:6.3.5\n"
    )
}

/// flux's golden `file`, for this namespace and the revision `revision` (`6.3.5@sha1:<sha>`).
fn golden(file: &str, sha: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/goldens/kustomization/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .replace("{{ .ns }}", NS)
        .replace("67e2c98a60dc92283531412a9e604dd4bae005a9", sha)
        .replace("67e2c98a", &sha[..8])
}

#[test]
fn flux_kustomization_flow_matches_its_goldens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let repo = Repo::with_files(&[
        (
            "deploy/overlays/dev/kustomization.yaml",
            "resources:\n- namespace.yaml\n- frontend.yaml\n- backend.yaml\n",
        ),
        (
            "deploy/overlays/dev/namespace.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n",
        ),
        ("deploy/overlays/dev/frontend.yaml", &deployment("frontend")),
        ("deploy/overlays/dev/backend.yaml", &deployment("backend")),
    ]);
    let sha = repo.head().unwrap();
    git(&repo.work(), &["tag", "6.3.5"]);
    git(&repo.work(), &["push", "-q", "origin", "6.3.5"]);
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("staging").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-n", NS, "--timeout", "2m"]);
        ferroflux(&kc, &all)
    };

    let url = format!("--url={}", server.url("fleet"));
    let out = run(&[
        "create",
        "source",
        "git",
        "tkfg",
        &url,
        "--branch=main",
        "--tag=6.3.5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), golden("create_source_git.golden", &sha));

    let out = run(&[
        "create",
        "kustomization",
        "tkfg",
        "--source=tkfg",
        "--path=./deploy/overlays/dev",
        "--prune=true",
        "--interval=5m",
        "--health-check=Deployment/frontend.dev",
        "--health-check=Deployment/backend.dev",
        "--health-check-timeout=3m",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("create_kustomization_from_git.golden", &sha)
    );
    let ks: Kustomization = rt
        .block_on(Api::namespaced(c.clone(), NS).get("tkfg"))
        .unwrap();
    let checks = ks.spec.health_checks.unwrap_or_default();
    assert_eq!(checks.len(), 2, "{checks:?}");

    let out = run(&["get", "kustomization", "tkfg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        golden("get_kustomization_from_git.golden", &sha)
    );

    let out = run(&["reconcile", "kustomization", "tkfg", "--with-source"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("reconcile_kustomization_from_git.golden", &sha)
    );

    let out = run(&["suspend", "kustomization", "tkfg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("suspend_kustomization_from_git.golden", &sha)
    );

    // Names that are not there: flux's lines in flux's order, then (a deliberate difference,
    // see `suspend.rs`) a last line and exit code 1 where flux exits 0.
    let out = run(&["suspend", "kustomization", "tkfg", "foo", "tkfg", "bar"]);
    assert_eq!(out.status.code(), Some(1));
    let expected = golden("suspend_kustomization_from_git_multiple_args.golden", &sha);
    assert_eq!(
        stderr(&out),
        format!(
            "{expected}✗ 2 of the named Kustomization objects were not found in \"{NS}\" namespace\n"
        )
    );

    // flux names the object it resumed ('tkfg') in the line about the missing one; this
    // names the missing one ('foo').
    let out = run(&["resume", "kustomization", "tkfg", "foo", "--wait"]);
    assert_eq!(out.status.code(), Some(1));
    let expected = golden(
        "resume_kustomization_from_git_multiple_args_wait.golden",
        &sha,
    )
    .replace("object 'tkfg' not found", "object 'foo' not found");
    assert_eq!(
        stderr(&out),
        format!(
            "{expected}✗ 1 of the named Kustomization objects were not found in \"{NS}\" namespace\n"
        )
    );

    let out = run(&["resume", "kustomization", "tkfg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("resume_kustomization_from_git.golden", &sha)
    );

    let out = run(&["resume", "kustomization", "tkfg", "tkfg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("resume_kustomization_from_git_multiple_args.golden", &sha)
    );

    let out = run(&["delete", "kustomization", "tkfg", "--silent"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("delete_kustomization_from_git.golden", &sha)
    );
    rt.block_on(async { manager.shutdown().await.unwrap() });
}
