//! `bootstrap git` end to end on local clusters whose controllers run in this process (the
//! GitRepository reconcile pass in a loop and the Kustomization controller, with a real
//! artifact server): twice on one repository (the second run commits nothing), and two clusters
//! on one repository (two folders, one history).

mod bootstrap_support;

use std::time::Duration;

use bootstrap_support::{Cluster, Repo, args, ferroflux, text};
use ferroflux_controller::gitrepository::{SourceSettings, reconcile};
use ferroflux_controller::kustomization::reconciler::{self, Options};

/// The controllers of one cluster; they stop when dropped.
struct Controllers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _storage: tempfile::TempDir,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn controllers(c: &Cluster) -> Controllers {
    let client = c.client().await;
    let storage = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let root = storage.path().to_path_buf();
    let server = tokio::spawn(async move {
        ferroflux_source::serve(root, listener).await.ok();
    });
    let settings = SourceSettings {
        storage: ferroflux_source::Storage::new(storage.path(), format!("http://{addr}")).unwrap(),
        allow_file_urls: true,
    };
    let source_client = client.clone();
    // The GitRepository controller's loop, reduced to the one object bootstrap creates.
    let source = tokio::spawn(async move {
        loop {
            let _ = reconcile(&source_client, &settings, "flux-system", "flux-system").await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let kc = kube::config::Kubeconfig::from_yaml(&c.cluster.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let options = Options {
        requeue_dependency: Duration::from_millis(500),
        health_poll: Duration::from_millis(200),
        ..Options::default()
    };
    let ks = tokio::spawn(reconciler::run(client, config, options));
    Controllers {
        tasks: vec![server, source, ks],
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
    let _controllers = controllers(&c).await;
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
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clusters_on_one_repository() {
    let staging = Cluster::start("staging").await;
    let production = Cluster::start("production").await;
    let _s = controllers(&staging).await;
    let _p = controllers(&production).await;
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
    let parent = bootstrap_support::git(&repo.bare(), &["rev-parse", "refs/heads/main^"]);
    assert_eq!(parent, first);
    let files = repo.files();
    for f in [
        "clusters/staging/flux-system/gotk-sync.yaml",
        "clusters/production/flux-system/gotk-sync.yaml",
    ] {
        assert!(files.contains(&f.to_string()), "{files:?}");
    }
    assert_eq!(
        repo.show("clusters/staging/flux-system/gotk-components.yaml"),
        repo.show("clusters/production/flux-system/gotk-components.yaml")
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
}
