//! Events as Flux's users read them: a repeat of the same message is counted on one Event, a
//! new message (another change set) is a new Event.

use ferroflux_controller::events::Recorder;
use ferroflux_devcluster::{Config, DevCluster};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, ListParams};
use kube::runtime::events::{Event, EventType, Reporter};

fn event(note: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: "ReconciliationSucceeded".into(),
        note: Some(note.into()),
        action: "Reconcile".into(),
        secondary: None,
    }
}

#[tokio::test]
async fn a_new_message_is_a_new_event_and_a_repeat_is_counted() {
    let cluster = DevCluster::start(Config::memory("events")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "kustomize-controller".into(),
            instance: None,
        },
    );
    let regarding = ObjectReference {
        api_version: Some("kustomize.toolkit.fluxcd.io/v1".into()),
        kind: Some("Kustomization".into()),
        name: Some("apps".into()),
        namespace: Some("default".into()),
        uid: Some("u-1".into()),
        ..Default::default()
    };
    let first = "ConfigMap/default/a created";
    let second = "ConfigMap/default/a configured";
    recorder.publish(&event(first), &regarding).await.unwrap();
    recorder.publish(&event(first), &regarding).await.unwrap();
    recorder.publish(&event(second), &regarding).await.unwrap();

    let api: Api<K8sEvent> = Api::namespaced(client, "default");
    let events = api.list(&ListParams::default()).await.unwrap().items;
    let mut seen: Vec<(String, i32)> = events
        .iter()
        .map(|e| {
            (
                e.note.clone().unwrap_or_default(),
                e.series.as_ref().map_or(1, |s| s.count),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![(second.to_string(), 1), (first.to_string(), 2)],
        "{events:?}"
    );
    for e in &events {
        assert_eq!(e.reason.as_deref(), Some("ReconciliationSucceeded"));
        assert_eq!(
            e.reporting_controller.as_deref(),
            Some("kustomize-controller")
        );
        assert_eq!(
            e.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("apps")
        );
    }
}
