//! `ferroflux fleet promote` with real parts: a fleet repository served by `git http-backend`
//! (pushed to by the command), two devclusters each running the real controllers in this
//! process and following their own branch, a promotion plan staging → production. A commit is
//! promoted wave by wave; running it again resumes (checks only); a held lock refuses a second
//! promotion; a commit that breaks staging stops before production and staging is rolled back;
//! an unreachable cluster stops its wave; a plan naming an unknown cluster is refused.

use crate::repo::Repo;
use crate::run::*;
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{Auth, GitHttpServer, eventually, flux_cluster, git, kubeconfig};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::path::Path;

const PLAN: &str = "source: main
soak: 1s
timeout: 2m
waves:
  - name: staging
    clusters: [staging]
    branch: staging
  - name: production
    clusters: [production]
    branch: production
";

fn app(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\n  namespace: flux-system\ndata:\n  version: {version}\n"
    )
}

fn promote(work: &Path, kc: &Path, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["fleet", "promote", "--timeout", "30s"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(kc)
        .current_dir(work)
        .output()
        .unwrap()
}

async fn version(c: &kube::Client) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "flux-system");
    api.get_opt("podinfo")
        .await
        .ok()
        .flatten()
        .and_then(|cm| cm.data)
        .and_then(|d| d.get("version").cloned())
}

fn remote(repo: &Repo, branch: &str) -> String {
    git(
        &repo.bare(),
        &["rev-parse", &format!("refs/heads/{branch}")],
    )
}

#[test]
fn promote_wave_by_wave_with_real_controllers() {
    let rt = runtime();
    let repo = Repo::with_files(&[
        ("fleet-promotion.yaml", PLAN),
        ("apps/kustomization.yaml", "resources: [podinfo.yaml]\n"),
        ("apps/podinfo.yaml", &app("v1")),
        (
            "clusters/staging/kustomization.yaml",
            "resources: [../../apps]\n",
        ),
        (
            "clusters/production/kustomization.yaml",
            "resources: [../../apps]\n",
        ),
    ]);
    let work = repo.work();
    for branch in ["staging", "production"] {
        git(
            &work,
            &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
        );
    }
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let url = server.url("fleet");
    // The command pushes where the clusters fetch from.
    git(&work, &["remote", "set-url", "origin", &url]);
    let dir = tempfile::tempdir().unwrap();
    let storage = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (clusters, clients, _managers) = rt.block_on(async {
        let mut clusters = Vec::new();
        let mut clients = Vec::new();
        let mut managers = Vec::new();
        for (i, name) in ["staging", "production"].into_iter().enumerate() {
            let (cl, c) = flux_cluster(name).await;
            let config = cl.kube_config().await.unwrap();
            managers.push(
                Manager::start(c.clone(), config, ManagerConfig::local(storage[i].path()))
                    .await
                    .unwrap(),
            );
            // Long intervals: nothing moves unless the promotion asks.
            let repos: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
            let obj = serde_json::from_value(json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                "metadata": {"name": "flux-system", "namespace": "flux-system"},
                "spec": {"interval": "1h", "url": url, "ref": {"branch": name}},
            }))
            .unwrap();
            repos.create(&PostParams::default(), &obj).await.unwrap();
            let kss: Api<Kustomization> = Api::namespaced(c.clone(), "flux-system");
            let obj = serde_json::from_value(json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": "flux-system", "namespace": "flux-system"},
                "spec": {"interval": "1h", "prune": true, "path": format!("./clusters/{name}"),
                         "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
            }))
            .unwrap();
            kss.create(&PostParams::default(), &obj).await.unwrap();
            let client = c.clone();
            eventually("v1 applied", || {
                let client = client.clone();
                async move { (version(&client).await.as_deref() == Some("v1")).then_some(()) }
            })
            .await;
            clusters.push(cl);
            clients.push(c);
        }
        (clusters, clients, managers)
    });
    let kc = kubeconfig(dir.path(), &[&clusters[0], &clusters[1]]);

    // v2 on main, promoted through both waves.
    repo.write("apps/podinfo.yaml", &app("v2"));
    let v2 = repo.commit_and_push("podinfo v2");
    git(&work, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let out = promote(&work, &kc, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let short = &v2[..12];
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("► wave staging: moved refs/heads/staging ")
            && lines[0].ends_with(&format!(" -> {short}")),
        "{text}"
    );
    assert_eq!(
        lines[1],
        format!("► wave staging: Ready at {short} on staging; soaking 1s")
    );
    assert_eq!(lines[2], "► wave staging: healthy");
    assert!(
        lines[3].starts_with("► wave production: moved refs/heads/production "),
        "{text}"
    );
    assert_eq!(lines[5], "► wave production: healthy");
    assert_eq!(lines[6], format!("✔ promoted {short} through every wave"));
    assert_eq!(remote(&repo, "staging"), v2);
    assert_eq!(remote(&repo, "production"), v2);
    for c in &clients {
        assert_eq!(rt.block_on(version(c)).as_deref(), Some("v2"));
    }
    assert!(
        git(
            &repo.bare(),
            &["for-each-ref", "refs/ferroflux/promotion-lock"]
        )
        .is_empty(),
        "the lock is released"
    );

    // Again: both waves are there already; only checked.
    let out = promote(&work, &kc, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!(
        "► wave staging: refs/heads/staging already at {short}, checking its clusters\n"
    )));

    // A promotion holding the lock refuses a second one.
    git(
        &work,
        &[
            "push",
            "-q",
            "origin",
            &format!("{v2}:refs/ferroflux/promotion-lock"),
        ],
    );
    let out = promote(&work, &kc, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("another promotion is running on this repository: refs/ferroflux/promotion-lock exists (at {v2})")),
        "{}",
        stderr(&out)
    );
    assert_eq!(remote(&repo, "staging"), v2);
    let out = promote(&work, &kc, &["--unlock"]);
    assert_eq!(stdout(&out), "✔ removed refs/ferroflux/promotion-lock\n");

    // A commit that breaks the build stops at staging: production stays at v2.
    repo.write(
        "apps/kustomization.yaml",
        "resources: [podinfo.yaml, missing.yaml]\n",
    );
    let broken = repo.commit_and_push("broken");
    let out = promote(&work, &kc, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("wave staging failed, nothing after it was promoted:"),
        "{err}"
    );
    assert!(
        err.contains(
            "cluster staging: Kustomization flux-system/flux-system failed at the commit: "
        ),
        "{err}"
    );
    assert_eq!(remote(&repo, "staging"), broken);
    assert_eq!(remote(&repo, "production"), v2);

    // Roll staging back to where it was before.
    let out = promote(&work, &kc, &["--rollback", "staging"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains(&format!("✔ wave staging rolled back to {short}")));
    assert_eq!(remote(&repo, "staging"), v2);

    // A plan naming a cluster the repository has no folder for.
    std::fs::write(
        work.join("bad-plan.yaml"),
        PLAN.replace("[production]", "[production-eu]"),
    )
    .unwrap();
    let out = promote(&work, &kc, &["--plan", "bad-plan.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad-plan.yaml: waves[1] (production): unknown cluster \"production-eu\": the repository has no clusters/production-eu/ folder (clusters: production, staging)"),
        "{}",
        stderr(&out)
    );

    // Staging unreachable: its wave stops, production is not promoted.
    repo.write("apps/kustomization.yaml", "resources: [podinfo.yaml]\n");
    repo.write("apps/podinfo.yaml", &app("v3"));
    repo.commit_and_push("podinfo v3");
    let mut clusters = clusters;
    rt.block_on(clusters[0].stop());
    let out = promote(&work, &kc, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("wave staging failed, nothing after it was promoted:"),
        "{err}"
    );
    assert!(err.contains("cluster staging"), "{err}");
    assert_eq!(remote(&repo, "production"), v2);
    assert!(
        git(
            &repo.bare(),
            &["for-each-ref", "refs/ferroflux/promotion-lock"]
        )
        .is_empty()
    );
}
