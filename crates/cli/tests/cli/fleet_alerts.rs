//! The fleet example alerts with the cluster's name: `examples/fleet-infra` (its
//! `clusters/<name>/notifications.yaml`, a Slack Provider whose webhook URL is a Secret made
//! on the cluster, and an Alert) synced by the real controllers on two devclusters, each
//! running with its cluster's name as `bootstrap` sets it. A local webhook standing in for
//! Slack receives messages from both, each stamped `[staging] ...` or `[production] ...`.

use crate::repo::Repo;
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{WebhookSink, flux_cluster};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The Slack attachments the sink received on `path`, as `(author_name, text)`.
fn messages(sink: &WebhookSink, path: &str) -> Vec<(String, String)> {
    sink.received()
        .into_iter()
        .filter(|r| r.path == path)
        .filter_map(|r| {
            let payload: Value = serde_json::from_slice(&r.body).ok()?;
            assert_eq!(payload["channel"], "fleet", "{payload}");
            let attachment = &payload["attachments"][0];
            Some((
                attachment["author_name"].as_str()?.to_string(),
                attachment["text"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cluster_of_the_example_alerts_with_its_name() {
    let repo = Repo::empty();
    ferroflux_testkit::git(repo.root.path(), &["clone", "-q", "fleet.git", "work"]);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet-infra"),
        &repo.work(),
    );
    repo.commit_and_push("fleet");
    let slack = WebhookSink::start();
    let storage = tempfile::tempdir().unwrap();
    let mut running = Vec::new();
    for name in ["staging", "production"] {
        let (cluster, client) = flux_cluster(name).await;
        let config = cluster.kube_config().await.unwrap();
        let mut settings = ManagerConfig::local(storage.path().join(name));
        settings.cluster_name = Some(name.into());
        let manager = Manager::start(client.clone(), config, settings)
            .await
            .unwrap();
        // What the example's comment tells the user to create: the webhook URL, out of Git.
        let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
        let secret = serde_json::from_value(json!({
            "metadata": {"name": "chat-webhook", "namespace": "flux-system"},
            "stringData": {"address": format!("{}/services/{name}", slack.url())},
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
        // What bootstrap applies: the repository and the cluster's folder.
        let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
        let source = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"interval": "10m", "url": repo.url(), "ref": {"branch": "main"}},
        }))
        .unwrap();
        repos.create(&PostParams::default(), &source).await.unwrap();
        let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
        let root = serde_json::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"interval": "10m", "path": format!("./clusters/{name}"), "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
        }))
        .unwrap();
        kss.create(&PostParams::default(), &root).await.unwrap();
        running.push((cluster, manager));
    }

    // Each cluster's messages arrive, stamped with its name, on its own webhook path.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    for name in ["staging", "production"] {
        let path = format!("/services/{name}");
        let prefix = format!("[{name}] kustomization/");
        loop {
            let got = messages(&slack, &path);
            if got.iter().any(|(author, _)| author.starts_with(&prefix)) {
                for (author, _) in &got {
                    assert!(author.starts_with(&format!("[{name}] ")), "{got:?}");
                }
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {prefix}... message on {path}; received: {:#?}",
                slack
                    .received()
                    .iter()
                    .map(|r| r.text())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for (cluster, manager) in running {
        manager.shutdown().await.unwrap();
        drop(cluster);
    }
}
