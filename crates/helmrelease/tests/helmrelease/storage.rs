//! Helm's Secret storage on a devcluster: the Secret's shape, history, pruning to maxHistory,
//! unlocking a pending release, and a corrupted record.

use base64::Engine as _;
use ferroflux_helmrelease::{Release, Status, Storage, StorageError};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::io::Read;

use crate::support::{cluster, namespace};

fn record(name: &str, version: i64, status: Status) -> Release {
    let mut r = Release {
        name: name.into(),
        namespace: "apps".into(),
        version,
        manifest: format!(
            "---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\nmetadata:\n  name: v{version}\n"
        ),
        config: serde_json::from_value(json!({"replicaCount": version})).unwrap(),
        chart: json!({"metadata": {"name": "app", "version": "1.2.3", "appVersion": "2.0"}}),
        ..Default::default()
    };
    r.info.status = status;
    r.info.first_deployed = "2026-01-01T00:00:00Z".into();
    r
}

#[tokio::test(flavor = "multi_thread")]
async fn records_are_helms_secrets() {
    let (cluster, client, _) = cluster("storage-shape").await;
    namespace(&client, "apps").await;
    let storage = Storage::new(client.clone(), "apps");
    storage
        .create(&record("web", 1, Status::Deployed), 0)
        .await
        .unwrap();

    let secret: serde_json::Value = serde_json::from_slice(
        &cluster
            .kubectl(&[
                "get",
                "secret",
                "sh.helm.release.v1.web.v1",
                "-n",
                "apps",
                "-o",
                "json",
            ])
            .stdout,
    )
    .unwrap();
    assert_eq!(secret["type"], "helm.sh/release.v1");
    let labels = &secret["metadata"]["labels"];
    assert_eq!(labels["name"], "web");
    assert_eq!(labels["owner"], "helm");
    assert_eq!(labels["status"], "deployed");
    assert_eq!(labels["version"], "1");
    assert!(
        labels["createdAt"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
            > 0
    );
    // data.release on the wire: base64 (the Secret's encoding) of base64 of gzip of JSON.
    let b64 = base64::engine::general_purpose::STANDARD;
    let inner = b64
        .decode(secret["data"]["release"].as_str().unwrap())
        .unwrap();
    let gz = b64.decode(&inner).unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_string(&mut json)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["name"], "web");
    assert_eq!(v["version"], 1);
    assert_eq!(v["info"]["status"], "deployed");
    assert_eq!(v["config"]["replicaCount"], 1);

    let mut back = storage.get("web", 1).await.unwrap().unwrap();
    assert_eq!(back.chart_version(), "1.2.3");
    back.info.status = Status::Superseded;
    storage.update(&back).await.unwrap();
    let again = storage.get("web", 1).await.unwrap().unwrap();
    assert_eq!(again.info.status, Status::Superseded);
    assert_eq!(again.labels["status"], "superseded");
    assert!(again.labels.contains_key("modifiedAt"));
    assert!(storage.get("web", 9).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn history_is_pruned_to_max_history_sparing_the_deployed_revision() {
    let (_cluster, client, _) = cluster("storage-prune").await;
    namespace(&client, "apps").await;
    let storage = Storage::new(client.clone(), "apps");
    for (v, s) in [
        (1, Status::Superseded),
        (2, Status::Deployed),
        (3, Status::Failed),
        (4, Status::Failed),
    ] {
        storage.create(&record("web", v, s), 0).await.unwrap();
    }
    storage
        .create(&record("other", 1, Status::Deployed), 0)
        .await
        .unwrap();
    storage
        .create(&record("web", 5, Status::PendingUpgrade), 3)
        .await
        .unwrap();
    let versions: Vec<i64> = storage
        .history("web")
        .await
        .unwrap()
        .iter()
        .map(|r| r.version)
        .collect();
    assert_eq!(versions, vec![2, 4, 5]);
    assert_eq!(storage.deployed("web").await.unwrap().unwrap().version, 2);
    assert_eq!(storage.last("web").await.unwrap().unwrap().version, 5);
    let names: Vec<String> = storage
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|r| format!("{}.v{}", r.name, r.version))
        .collect();
    assert_eq!(names, vec!["other.v1", "web.v5"]);
    // A second create of the same revision is Helm's "already exists".
    let e = storage
        .create(&record("web", 5, Status::Failed), 0)
        .await
        .unwrap_err();
    assert!(matches!(e, StorageError::Exists { .. }), "{e}");

    // The pending revision is unlocked as helm-controller does.
    let unlocked = storage.unlock("web").await.unwrap().unwrap();
    assert_eq!(unlocked.version, 5);
    let last = storage.last("web").await.unwrap().unwrap();
    assert_eq!(last.info.status, Status::Failed);
    assert_eq!(
        last.info.description,
        "Release unlocked from stale 'pending-upgrade' state"
    );
    assert!(storage.unlock("web").await.unwrap().is_none());
    assert!(storage.unlock("nothing").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_record_is_an_error_naming_its_secret() {
    let (_cluster, client, _) = cluster("storage-corrupt").await;
    namespace(&client, "apps").await;
    let storage = Storage::new(client.clone(), "apps");
    storage
        .create(&record("web", 1, Status::Deployed), 0)
        .await
        .unwrap();
    storage
        .create(&record("web", 2, Status::Deployed), 0)
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "apps");
    let garbage = Secret {
        data: Some(
            [(
                "release".to_string(),
                ByteString(b"H4sI-not-a-release".to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .patch(
            "sh.helm.release.v1.web.v2",
            &PatchParams::default(),
            &Patch::Merge(&garbage),
        )
        .await
        .unwrap();
    let e = storage.history("web").await.unwrap_err().to_string();
    assert!(
        e.starts_with("release storage Secret apps/sh.helm.release.v1.web.v2 is corrupted: data.release is not base64"),
        "{e}"
    );
    let e = storage.get("web", 2).await.unwrap_err().to_string();
    assert!(
        e.contains("apps/sh.helm.release.v1.web.v2 is corrupted"),
        "{e}"
    );
    // The other revision is untouched and still readable on its own.
    assert_eq!(
        storage.get("web", 1).await.unwrap().unwrap().info.status,
        Status::Deployed
    );
}
