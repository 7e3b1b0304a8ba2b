//! `bootstrap git` end to end on local clusters whose controllers run in this process (the
//! `Manager` that `ferroflux controller` and `dev up` run, with the CRDs installed first as
//! `dev up` does): twice on one repository (the second run commits nothing), and two clusters
//! on one repository (two folders, one history).

use crate::repo::Repo;
use crate::run::{args, ferroflux_off_runtime as ferroflux, text};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_testkit::{Cluster, git};

/// One cluster's controllers; `shutdown` them at the end of the test.
struct Controllers {
    manager: Manager,
    _storage: tempfile::TempDir,
}

impl Controllers {
    async fn shutdown(self) {
        self.manager.shutdown().await.unwrap();
    }
}

async fn controllers(c: &Cluster) -> Controllers {
    let client = c.client().await;
    install_crds(&client).await.unwrap();
    let storage = tempfile::tempdir().unwrap();
    let config = c.cluster.kube_config().await.unwrap();
    let manager = Manager::start(client, config, ManagerConfig::local(storage.path()))
        .await
        .unwrap();
    Controllers {
        manager,
        _storage: storage,
    }
}

fn bootstrap(url: &str, path: &str, kubeconfig: &std::path::Path) -> Vec<String> {
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
        kubeconfig.to_str().unwrap(),
        "--timeout",
        "90s",
        "--silent",
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_twice_changes_nothing_the_second_time() {
    let c = Cluster::start("staging").await;
    let controllers = controllers(&c).await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);

    let out = ferroflux(
        bootstrap(&repo.url(), "clusters/staging", &c.kubeconfig),
        vec![],
    )
    .await;
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    for line in [
        "► cloning branch \"main\" from Git repository",
        "✔ committed component and sync manifests to \"main\"",
        "► installing components in \"flux-system\" namespace",
        "✔ reconciled source secret",
        "✔ GitRepository reconciled successfully",
        "✔ Kustomization reconciled successfully",
        "✔ all components are healthy",
    ] {
        assert!(log.contains(line), "missing {line:?} in {log}");
    }
    assert_eq!(repo.count(), 2);
    let head = repo.head().unwrap();
    let sync = repo.show("clusters/staging/flux-system/gotk-sync.yaml");
    assert!(sync.contains("  path: ./clusters/staging\n"), "{sync}");
    assert!(sync.contains(&format!("  url: {}\n", repo.url())), "{sync}");
    assert_eq!(
        repo.show("clusters/staging/flux-system/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n\
         - gotk-components.yaml\n- gotk-sync.yaml"
    );
    // What the cluster applied is the pushed revision.
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
        format!("main@sha1:{head}"),
        "{}",
        text(&ks)
    );

    let again = ferroflux(
        bootstrap(&repo.url(), "clusters/staging", &c.kubeconfig),
        vec![],
    )
    .await;
    let log = text(&again);
    assert!(again.status.success(), "{log}");
    assert!(
        log.contains("✔ component manifests are up to date"),
        "{log}"
    );
    assert!(!log.contains("pushing"), "{log}");
    assert!(!log.contains("installing components"), "{log}");
    assert_eq!(repo.count(), 2, "the second run made a commit");
    assert_eq!(repo.head().unwrap(), head);
    controllers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clusters_on_one_repository() {
    let staging = Cluster::start("staging").await;
    let production = Cluster::start("production").await;
    let staging_controllers = controllers(&staging).await;
    let production_controllers = controllers(&production).await;
    let repo = Repo::with_files(&[("README.md", "fleet\n")]);

    let out = ferroflux(
        bootstrap(&repo.url(), "clusters/staging", &staging.kubeconfig),
        vec![],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let first = repo.head().unwrap();
    let out = ferroflux(
        bootstrap(&repo.url(), "clusters/production", &production.kubeconfig),
        vec![],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(repo.count(), 3);
    // One history: production's commit sits on staging's.
    let parent = git(&repo.bare(), &["rev-parse", "refs/heads/main^"]);
    assert_eq!(parent, first);
    let files = repo.files();
    for f in [
        "clusters/staging/flux-system/gotk-sync.yaml",
        "clusters/production/flux-system/gotk-sync.yaml",
    ] {
        assert!(files.contains(&f.to_string()), "{files:?}");
    }
    // The same components but for each cluster's name, taken from its folder.
    let staging_yaml = repo.show("clusters/staging/flux-system/gotk-components.yaml");
    let production_yaml = repo.show("clusters/production/flux-system/gotk-components.yaml");
    assert!(staging_yaml.contains("- --cluster-name=staging\n"));
    assert!(production_yaml.contains("- --cluster-name=production\n"));
    assert_eq!(
        staging_yaml.replace("--cluster-name=staging", "--cluster-name=production"),
        production_yaml
    );
    // Each cluster follows its own folder.
    for (c, path) in [
        (&staging, "./clusters/staging"),
        (&production, "./clusters/production"),
    ] {
        let ks = c.kubectl(&[
            "-n",
            "flux-system",
            "get",
            "kustomizations.kustomize.toolkit.fluxcd.io",
            "flux-system",
            "-o",
            "jsonpath={.spec.path}",
        ]);
        assert_eq!(String::from_utf8_lossy(&ks.stdout), path, "{}", text(&ks));
    }
    // Staging cannot be moved onto production's folder.
    let out = ferroflux(
        bootstrap(&repo.url(), "clusters/production", &staging.kubeconfig),
        vec![],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("would overwrite path"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.count(), 3);
    staging_controllers.shutdown().await;
    production_controllers.shutdown().await;
}
