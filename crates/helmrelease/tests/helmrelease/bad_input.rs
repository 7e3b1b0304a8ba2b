//! Bad input, each with the message a user sees and nothing of the previous release lost: a
//! failing install and upgrade, values failing the chart's schema, a corrupted storage Secret,
//! a release locked by an operation that never finished, an object owned by something else.

use base64::Engine as _;
use ferroflux_helmrelease::{Error, InstallOptions, Status};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{cluster, config_map, fixture_chart, install_opts, namespace, target, values};

fn upgrade_opts() -> ferroflux_helmrelease::UpgradeOptions {
    ferroflux_helmrelease::UpgradeOptions {
        wait: ferroflux_helmrelease::WaitOptions {
            timeout: std::time::Duration::from_secs(20),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_install_is_recorded_failed() {
    let (_cluster, client, actions) = cluster("bad-install").await;
    namespace(&client, "apps").await;
    let e = actions
        .install(
            &target("bad", "apps"),
            fixture_chart("hooked"),
            values(json!({"failDeploy": true})),
            &install_opts(),
        )
        .await
        .unwrap_err();
    let Error::Failed { message, release } = &e else {
        panic!("not a recorded failure: {e}");
    };
    assert!(
        message.starts_with("health check failed for Deployment/apps/bad"),
        "{message}"
    );
    assert_eq!(release.info.status, Status::Failed);
    assert_eq!(
        release.info.description,
        format!("Release \"bad\" failed: {message}")
    );
    let stored = actions.storage("apps").last("bad").await.unwrap().unwrap();
    assert_eq!((stored.version, stored.info.status), (1, Status::Failed));
    // The pre-install hook ran (and succeeded) before the failure.
    assert_eq!(
        stored
            .hooks
            .iter()
            .find(|h| h.name == "bad-migrate")
            .unwrap()
            .last_run
            .phase,
        "Succeeded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_upgrade_leaves_the_deployed_release_intact() {
    let (_cluster, client, actions) = cluster("bad-upgrade").await;
    namespace(&client, "apps").await;
    let t = target("web", "apps");
    let chart = fixture_chart("hooked");
    let v1 = actions
        .install(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 2})),
            &install_opts(),
        )
        .await
        .unwrap();
    let e = actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"failDeploy": true})),
            &upgrade_opts(),
        )
        .await
        .unwrap_err();
    let failed = e.release().expect("recorded failure");
    assert_eq!((failed.version, failed.info.status), (2, Status::Failed));
    assert!(
        failed
            .info
            .description
            .starts_with("Upgrade \"web\" failed: health check failed for Deployment/apps/web"),
        "{}",
        failed.info.description
    );
    let storage = actions.storage("apps");
    let first = storage.get("web", 1).await.unwrap().unwrap();
    assert_eq!(first.info.status, Status::Deployed);
    assert_eq!(first.manifest, v1.manifest);
    assert_eq!(first.config, v1.config);
    assert_eq!(storage.deployed("web").await.unwrap().unwrap().version, 1);
    // The next upgrade starts from the deployed revision and supersedes it.
    let v3 = actions
        .upgrade(&t, chart.clone(), values(json!({})), &upgrade_opts())
        .await
        .unwrap();
    assert_eq!((v3.version, v3.info.status), (3, Status::Deployed));
    assert_eq!(
        storage.get("web", 1).await.unwrap().unwrap().info.status,
        Status::Superseded
    );
    assert_eq!(
        storage.get("web", 2).await.unwrap().unwrap().info.status,
        Status::Failed
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn values_failing_the_schema_record_nothing() {
    let (_cluster, client, actions) = cluster("bad-schema").await;
    namespace(&client, "apps").await;
    let t = target("web", "apps");
    let chart = fixture_chart("hooked");
    actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap();
    let e = actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 0})),
            &upgrade_opts(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Chart(ferroflux_helm::Error::Schema(_))),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.starts_with("values don't meet the specifications of the schema(s) in the following chart(s):\nhooked:\n"),
        "{text}"
    );
    assert!(text.contains("replicaCount"), "{text}");
    let e = actions
        .install(
            &target("other", "apps"),
            chart.clone(),
            values(json!({"replicaCount": "two"})),
            &install_opts(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Chart(ferroflux_helm::Error::Schema(_))),
        "{e:?}"
    );
    let storage = actions.storage("apps");
    let history = storage.history("web").await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].info.status, Status::Deployed);
    assert!(storage.history("other").await.unwrap().is_empty());
    assert_eq!(
        config_map(&client, "apps", "web-cluster").await.unwrap()["revision"],
        "1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_storage_secret_stops_the_upgrade_with_its_name() {
    let (_cluster, client, actions) = cluster("bad-secret").await;
    namespace(&client, "apps").await;
    let t = target("web", "apps");
    let chart = fixture_chart("hooked");
    actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "apps");
    // Valid base64, valid gzip header, truncated body.
    let b64 = base64::engine::general_purpose::STANDARD;
    let broken = Secret {
        data: Some(
            [(
                "release".to_string(),
                ByteString(b64.encode([0x1f, 0x8b, 0x08, 0, 0, 0]).into_bytes()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .patch(
            "sh.helm.release.v1.web.v1",
            &PatchParams::default(),
            &Patch::Merge(&broken),
        )
        .await
        .unwrap();
    let e = actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 2})),
            &upgrade_opts(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Storage(_)), "{e:?}");
    assert!(
        e.to_string().starts_with("release storage Secret apps/sh.helm.release.v1.web.v1 is corrupted: data.release is not valid gzip"),
        "{e}"
    );
    let names: Vec<String> = secrets
        .list(&ListParams::default().labels("owner=helm"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(names, vec!["sh.helm.release.v1.web.v1"]);
    assert_eq!(
        config_map(&client, "apps", "web-cluster").await.unwrap()["revision"],
        "1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_locked_release_and_an_object_of_someone_else() {
    let (_cluster, client, actions) = cluster("bad-locked").await;
    namespace(&client, "apps").await;
    let t = target("web", "apps");
    let chart = fixture_chart("hooked");
    actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap();
    let storage = actions.storage("apps");
    let mut last = storage.last("web").await.unwrap().unwrap();
    last.info.status = Status::PendingUpgrade;
    storage.update(&last).await.unwrap();
    let e = actions
        .upgrade(&t, chart.clone(), values(json!({})), &upgrade_opts())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "another operation (install/upgrade/rollback) is in progress"
    );
    assert_eq!(storage.history("web").await.unwrap().len(), 1);
    storage.unlock("web").await.unwrap().unwrap();
    // Revision 1 is now failed, with no deployed revision: the upgrade starts from it.
    let v2 = actions
        .upgrade(&t, chart.clone(), values(json!({})), &upgrade_opts())
        .await
        .unwrap();
    assert_eq!((v2.version, v2.info.status), (2, Status::Deployed));

    // An object the chart would create exists and belongs to no release: refused, nothing recorded.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let theirs = serde_json::from_value(
        json!({"metadata": {"name": "mine-cluster"}, "data": {"owner": "me"}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &theirs).await.unwrap();
    let e = actions
        .install(
            &target("mine", "apps"),
            chart.clone(),
            values(json!({})),
            &install_opts(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unable to continue with install: ConfigMap \"mine-cluster\" in namespace \"apps\" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"mine\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"apps\""
    );
    assert!(storage.history("mine").await.unwrap().is_empty());
    assert_eq!(
        config_map(&client, "apps", "mine-cluster").await.unwrap()["owner"],
        "me"
    );

    // Taking ownership (Helm's --take-ownership, Flux's default) adopts it instead.
    let adopted = actions
        .install(
            &target("mine", "apps"),
            chart.clone(),
            values(json!({})),
            &InstallOptions {
                take_ownership: true,
                ..install_opts()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (adopted.version, adopted.info.status),
        (1, Status::Deployed)
    );
    let live = cms.get("mine-cluster").await.unwrap();
    let annotations = live.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations["meta.helm.sh/release-name"], "mine");
    assert_eq!(annotations["meta.helm.sh/release-namespace"], "apps");
}
