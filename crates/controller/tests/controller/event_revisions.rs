//! Revisions on the events the source and Helm controllers send out, as Flux's controllers put
//! them in the metadata: a GitRepository's and a HelmChart's new artifact carry the artifact's
//! revision and digest, a HelmRelease's install its chart version (and app version), through the
//! dispatcher to a generic provider (a local webhook) that receives Flux's event JSON with the
//! group prefix stripped and the cluster's name added. The artifact's digest is posted too, and
//! dropped by the dispatcher as notification-controller drops it, so the webhook never sees it.

use ferroflux_api::{GitRepository, HelmChart};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{WebhookSink, create, flux_cluster, git};
use kube::api::Api;
use serde_json::{Value, json};
use std::time::Duration;

/// The first event the sink received about `kind` with `reason`, once there is one.
async fn event_about(sink: &WebhookSink, kind: &str, reason: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    loop {
        let found = sink.received().into_iter().find_map(|r| {
            let event: Value = serde_json::from_slice(&r.body).ok()?;
            (event["involvedObject"]["kind"] == kind && event["reason"] == reason).then_some(event)
        });
        if let Some(event) = found {
            return event;
        }
        let seen: Vec<String> = sink.received().iter().map(|r| r.text()).collect();
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {kind} {reason} event; received: {seen:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn source_and_release_events_carry_their_revisions() {
    let (cluster, client) = flux_cluster("revisions").await;
    let config = cluster.kube_config().await.unwrap();
    let sink = WebhookSink::start();
    create(
        &client,
        json!({
            "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
            "metadata": {"name": "webhook", "namespace": "flux-system"},
            "spec": {"type": "generic", "address": format!("{}/hook", sink.url())},
        }),
    )
    .await;
    create(
        &client,
        json!({
            "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
            "metadata": {"name": "everything", "namespace": "flux-system"},
            "spec": {"providerRef": {"name": "webhook"},
                     "eventSources": [{"kind": "GitRepository", "name": "*"},
                                      {"kind": "HelmChart", "name": "*"},
                                      {"kind": "HelmRelease", "name": "*"}]},
        }),
    )
    .await;

    // A fleet repository holding a chart.
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("fleet");
    std::fs::create_dir_all(repo.join("charts/app/templates")).unwrap();
    std::fs::write(
        repo.join("charts/app/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 1.2.3\nappVersion: \"4.5.6\"\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("charts/app/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  color: blue\n",
    )
    .unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "chart"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.cluster_name = Some("staging".into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    create(
        &client,
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system"},
            "spec": {"url": format!("file://{}", repo.display()), "interval": "1h",
                     "ref": {"branch": "main"}},
        }),
    )
    .await;
    create(
        &client,
        json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "app", "namespace": "flux-system"},
            "spec": {"interval": "1h", "chart": {"spec": {"chart": "./charts/app",
                     "sourceRef": {"kind": "GitRepository", "name": "fleet"}}}},
        }),
    )
    .await;

    let source = event_about(&sink, "GitRepository", "NewArtifact").await;
    let artifact = repos
        .get("fleet")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert_eq!(
        source["metadata"],
        json!({"cluster": "staging", "revision": artifact.revision}),
        "{source}"
    );

    let chart = event_about(&sink, "HelmChart", "NewArtifact").await;
    let charts: Api<HelmChart> = Api::namespaced(client.clone(), "flux-system");
    let chart_revision = charts
        .get("flux-system-app")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap()
        .revision;
    assert_eq!(chart_revision, "1.2.3");
    assert_eq!(
        chart["metadata"],
        json!({"cluster": "staging", "revision": "1.2.3"}),
        "{chart}"
    );

    // helm-controller's: the chart version as the revision, the app version; the values
    // digest (`token`) feeds the rate limit and is not sent.
    let install = event_about(&sink, "HelmRelease", "InstallSucceeded").await;
    assert_eq!(
        install["metadata"],
        json!({"cluster": "staging", "revision": "1.2.3", "app-version": "4.5.6"}),
        "{install}"
    );
    assert_eq!(install["reportingController"], "helm-controller");
    manager.shutdown().await.unwrap();
}
