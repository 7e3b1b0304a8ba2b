//! The controller process on a local cluster: a commit in a real Git repository reaches the
//! cluster through both controllers, `/metrics` and the probes answer, events are published, and
//! of two replicas with leader election only one acts until it steps down.

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::leader::LeaderElection;
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::{eventually, git};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::time::Duration;

async fn cluster(name: &str) -> (RunningCluster, kube::Client, kube::Config) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    install_crds(&client).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let config = cluster.kube_config().await.unwrap();
    (cluster, client, config)
}

async fn http_get(url: &str) -> (u16, String) {
    let url = url.strip_prefix("http://").unwrap();
    let (host, path) = url.split_once('/').unwrap_or((url, ""));
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(format!("GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

#[tokio::test]
async fn a_commit_reaches_the_cluster_with_metrics_probes_and_events() {
    let (_cluster, client, config) = cluster("manager").await;
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("fleet");
    std::fs::create_dir_all(repo.join("apps")).unwrap();
    std::fs::write(
        repo.join("apps/settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  greeting: ${greeting}\n",
    )
    .unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);

    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.metrics_addr = Some(([127, 0, 0, 1], 0).into());
    settings.health_addr = settings.metrics_addr;
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let health = manager.health_url().unwrap().to_string();
    eventually("/readyz answers 200", || async {
        (http_get(&format!("{health}/readyz")).await.0 == 200).then_some(())
    })
    .await;
    assert_eq!(
        http_get(&format!("{health}/healthz")).await,
        (200, "ok".into())
    );

    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let gr = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "flux-system"},
        "spec": {"url": format!("file://{}", repo.display()), "interval": "1h",
                 "ref": {"branch": "main"}},
    }))
    .unwrap();
    repos.create(&PostParams::default(), &gr).await.unwrap();
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = crate::harness::kustomization(
        "apps",
        "fleet",
        json!({"path": "./apps", "postBuild": {"substitute": {"greeting": "hello"}}}),
    );
    kss.create(&PostParams::default(), &ks).await.unwrap();

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = eventually("the ConfigMap applied from Git", || async {
        configmaps.get_opt("settings").await.ok().flatten()
    })
    .await;
    assert_eq!(cm.data.unwrap()["greeting"], "hello");
    let revision = format!("main@sha1:{first}");
    eventually("Kustomization Ready at the commit", || async {
        let ks = kss.get("apps").await.ok()?;
        (ks.status?.last_applied_revision? == revision).then_some(())
    })
    .await;

    // A second commit flows through on a reconcile request, without waiting for the interval.
    std::fs::write(
        repo.join("apps/settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  greeting: ${greeting}\n  color: green\n",
    )
    .unwrap();
    git(&repo, &["commit", "-qam", "two"]);
    let second = git(&repo, &["rev-parse", "HEAD"]);
    let patch = json!({"metadata": {"annotations": {
        "reconcile.fluxcd.io/requestedAt": "2026-11-30T03:00:00Z"}}});
    repos
        .patch(
            "fleet",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    eventually("the second commit applied", || async {
        let cm = configmaps.get_opt("settings").await.ok().flatten()?;
        (cm.data?.get("color").map(String::as_str) == Some("green")).then_some(())
    })
    .await;
    let handled = repos.get("fleet").await.unwrap().status.unwrap();
    assert_eq!(
        handled.last_handled_reconcile_at.as_deref(),
        Some("2026-11-30T03:00:00Z")
    );
    assert!(handled.artifact.unwrap().revision.ends_with(&second));

    let events: Api<Event> = Api::namespaced(client.clone(), "flux-system");
    eventually("a NewArtifact event for the GitRepository", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("NewArtifact")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("fleet")
            })
            .then_some(())
    })
    .await;

    let metrics = http_get(manager.metrics_url().unwrap()).await.1;
    for expected in [
        "gotk_reconcile_duration_seconds_count{kind=\"Kustomization\",name=\"apps\",namespace=\"flux-system\"}",
        "gotk_reconcile_duration_seconds_count{kind=\"GitRepository\",name=\"fleet\",namespace=\"flux-system\"}",
        "controller_runtime_reconcile_total{controller=\"kustomization\",result=\"success\"}",
        "workqueue_depth{name=\"kustomization\"} 0",
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected} in:\n{metrics}"
        );
    }
    let info = metrics
        .lines()
        .find(|l| {
            l.starts_with("gotk_resource_info{")
                && l.contains("customresource_kind=\"Kustomization\"")
        })
        .unwrap_or_else(|| panic!("no Kustomization info series:\n{metrics}"));
    assert!(info.contains("ready=\"True\""), "{info}");
    assert!(info.contains("suspended=\"false\""), "{info}");
    assert!(
        info.contains(&format!("revision=\"main@sha1:{second}\"")),
        "{info}"
    );
    assert!(info.contains("source_name=\"fleet\""), "{info}");
    manager.shutdown().await.unwrap();
}

fn election(identity: &str) -> LeaderElection {
    LeaderElection {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
        ..LeaderElection::new("flux-system", identity)
    }
}

#[tokio::test]
async fn only_the_leader_reconciles_and_a_standby_takes_over() {
    let (_cluster, client, config) = cluster("leader").await;
    let work = tempfile::tempdir().unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "flux-system");
    let holder = || async {
        leases
            .get_opt("ferroflux-controller-leader-election")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.holder_identity)
    };

    let mut first_settings = ManagerConfig::local(work.path().join("a"));
    first_settings.leader_election = Some(election("replica-a"));
    let first = Manager::start(client.clone(), config.clone(), first_settings)
        .await
        .unwrap();
    eventually("replica-a leads", || async {
        (first.is_leader() && holder().await.as_deref() == Some("replica-a")).then_some(())
    })
    .await;

    let mut second_settings = ManagerConfig::local(work.path().join("b"));
    second_settings.leader_election = Some(election("replica-b"));
    let second = Manager::start(client.clone(), config, second_settings)
        .await
        .unwrap();
    // The standby keeps trying: after the leader renewed several times (each renewal is
    // several of the standby's retry periods apart at most), the Lease is still a's.
    let mut renewals = std::collections::BTreeSet::new();
    for _ in 0..600 {
        if let Ok(lease) = leases.get("ferroflux-controller-leader-election").await {
            renewals.insert(format!("{:?}", lease.spec.and_then(|s| s.renew_time)));
        }
        if renewals.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        renewals.len() >= 4,
        "the leader never renewed: {renewals:?}"
    );
    assert!(!second.is_leader());
    assert_eq!(holder().await.as_deref(), Some("replica-a"));

    // Stepping down releases the Lease and the standby takes it without waiting it out.
    first.shutdown().await.unwrap();
    eventually("replica-b leads", || async {
        (second.is_leader() && holder().await.as_deref() == Some("replica-b")).then_some(())
    })
    .await;
    second.shutdown().await.unwrap();
    assert_eq!(holder().await, None, "a clean shutdown releases the Lease");
}
