//! The alerting and incident types: Alertmanager, Grafana, PagerDuty and Opsgenie, received by
//! a local HTTP server and compared with the payload Flux's notifier sends.

use crate::chat::{provider, send};
use crate::test_event;
use ferroflux_api::notification::ProviderType;
use ferroflux_notification::payload::{self, Plan, opsgenie_alias};
use ferroflux_notification::send::Delivered;
use ferroflux_testkit::WebhookSink;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[test]
fn alertmanager_fires_one_alert_labelled_with_the_object_and_metadata() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::Alertmanager,
        format!("{}/api/v2/alerts", sink.url()),
    );
    p.token = "am-token".into();
    let mut event = test_event();
    event.reason = "ReconciliationSucceeded".into();
    event.metadata.insert("summary".into(), "prod apps".into());
    event.metadata.insert("cluster".into(), "production".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].path, "/api/v2/alerts");
    assert_eq!(got[0].header("authorization"), Some("Bearer am-token"));
    assert_eq!(
        json_of(&got[0].body),
        json!([{
            "status": "firing",
            "labels": {
                "alertname": "FluxGitRepositoryReconciliationsucceeded",
                "cluster": "production",
                "kind": "GitRepository",
                "name": "webapp",
                "namespace": "gitops-system",
                "reason": "ReconciliationSucceeded",
                "reportingcontroller": "source-controller",
                "severity": "info",
                "test": "metadata",
            },
            "annotations": {"message": "message", "summary": "prod apps"},
            "startsAt": "2026-01-02T03:04:05Z",
            "endsAt": "0001-01-01T00:00:00Z",
        }])
    );
    // Username and password: basic auth, which wins over the token as in Flux.
    p.username = "am".into();
    p.password = "pw".into();
    send(&p, &event);
    assert_eq!(
        sink.wait_for(2, WAIT)[1].header("authorization"),
        Some("Basic YW06cHc=")
    );
}

#[test]
fn grafana_annotates_with_fluxs_tags() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::Grafana,
        format!("{}/api/annotations", sink.url()),
    );
    p.username = "admin".into();
    p.password = "secret".into();
    let mut event = test_event();
    event.metadata.insert("url".into(), "http://x:80".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/api/annotations");
    assert_eq!(
        got[0].header("authorization"),
        Some("Basic YWRtaW46c2VjcmV0")
    );
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "when": 1767323045,
            "text": "gitrepository/webapp.gitops-system",
            "tags": ["flux", "source-controller", "test: metadata", "url: http|//x|80",
                     "kind: GitRepository", "name: webapp", "namespace: gitops-system"],
        })
    );
    // A token wins over username and password.
    p.token = "glsa_token".into();
    send(&p, &event);
    assert_eq!(
        sink.wait_for(2, WAIT)[1].header("authorization"),
        Some("Bearer glsa_token")
    );
    event.timestamp = "yesterday".into();
    assert_eq!(
        payload::plan(&p, &event).unwrap_err().to_string(),
        "invalid event timestamp \"yesterday\": expected RFC 3339"
    );
}

#[test]
fn pagerduty_triggers_on_error_and_resolves_with_a_change_event_on_info() {
    let sink = WebhookSink::start();
    // Only the address' scheme and host count: PagerDuty's paths are fixed.
    let mut p = provider(
        ProviderType::Pagerduty,
        format!("{}/v2/enqueue", sink.url()),
    );
    p.channel = "routing-key".into();
    let mut event = test_event();
    event.involved_object.uid = "1234".into();
    event.severity = "error".into();
    event.reason = "HealthCheckFailed".into();
    event.metadata.insert("cluster".into(), "production".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/v2/enqueue");
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "routing_key": "routing-key",
            "event_action": "trigger",
            "dedup_key": "1234",
            "payload": {
                "summary": "[production] health check failed: gitrepository/webapp",
                "source": "Flux source-controller",
                "severity": "error",
                "timestamp": "2026-01-02T03:04:05Z",
                "component": "webapp",
                "group": "GitRepository",
                "custom_details": {"message": "message",
                                   "metadata": {"cluster": "production", "test": "metadata"}},
            },
        })
    );
    event.severity = "info".into();
    event.reason = "ReconciliationSucceeded".into();
    event.metadata.remove("cluster");
    send(&p, &event);
    let got = sink.wait_for(3, WAIT);
    assert_eq!(got[1].path, "/v2/enqueue");
    assert_eq!(
        json_of(&got[1].body),
        json!({"routing_key": "routing-key", "event_action": "resolve", "dedup_key": "1234"})
    );
    assert_eq!(got[2].path, "/v2/change/enqueue");
    assert_eq!(
        json_of(&got[2].body),
        json!({
            "routing_key": "routing-key",
            "payload": {
                "summary": "reconciliation succeeded: gitrepository/webapp",
                "source": "Flux source-controller",
                "timestamp": "2026-01-02T03:04:05Z",
                "custom_details": {"message": "message", "metadata": {"test": "metadata"}},
            },
        })
    );
    event.reason = "Progressing".into();
    assert!(matches!(payload::plan(&p, &event).unwrap(), Plan::Skip(_)));
    p.channel.clear();
    assert_eq!(
        payload::plan(&p, &event).unwrap_err().to_string(),
        "provider type 'pagerduty' needs spec.channel (the integration's routing key)"
    );
}

#[test]
fn opsgenie_sends_the_alert_with_a_stable_alias_and_the_api_key() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Opsgenie, format!("{}/v2/alerts", sink.url()));
    p.token = "genie".into();
    p.uid = "6a1b2c3d-0000-0000-0000-000000000000".into();
    let event = test_event();
    assert_eq!(send(&p, &event), Delivered::Sent);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/v2/alerts");
    assert_eq!(got[0].header("authorization"), Some("GenieKey genie"));
    let alias = opsgenie_alias(&p.uid, &event);
    assert_eq!(alias.len(), 64);
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "message": "GitRepository/webapp",
            "alias": alias,
            "description": "message",
            "details": {"severity": "info", "test": "metadata"},
        })
    );
    // The alias depends on provider, object and reason only.
    let mut other = event.clone();
    other.message = "another message".into();
    assert_eq!(opsgenie_alias(&p.uid, &other), alias);
    other.reason = "other".into();
    assert_ne!(opsgenie_alias(&p.uid, &other), alias);
    assert_ne!(opsgenie_alias("another-uid", &event), alias);
    p.token.clear();
    p.secret = Some("flux-system/opsgenie".into());
    assert_eq!(
        payload::plan(&p, &event).unwrap_err().to_string(),
        "secret 'flux-system/opsgenie' has no 'token' key, which provider type 'opsgenie' needs"
    );
}

#[test]
fn incidentio_fires_and_resolves_by_the_objects_uid() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::IncidentIo,
        format!("{}/v2/alert_events/http/src", sink.url()),
    );
    p.token = "inc-token".into();
    let mut event = test_event();
    event.involved_object.uid = "uid-1".into();
    event.severity = "error".into();
    event.reason = "HealthCheckFailed".into();
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/v2/alert_events/http/src");
    assert_eq!(got[0].header("authorization"), Some("Bearer inc-token"));
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "title": "gitrepository/webapp.gitops-system: HealthCheckFailed",
            "status": "firing",
            "deduplication_key": "uid-1",
            "description": "message",
            "metadata": {"reason": "HealthCheckFailed", "reportingController": "source-controller",
                         "severity": "error", "test": "metadata"},
        })
    );
    event.severity = "info".into();
    event.reason = "ReconciliationSucceeded".into();
    send(&p, &event);
    assert_eq!(
        json_of(&sink.wait_for(2, WAIT)[1].body)["status"],
        "resolved"
    );
    event.reason = "Progressing".into();
    assert!(matches!(payload::plan(&p, &event).unwrap(), Plan::Skip(_)));
}

#[test]
fn datadog_creates_an_event_with_lower_case_tags() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Datadog, format!("{}/ignored", sink.url()));
    p.token = "dd-key".into();
    let mut event = test_event();
    event.severity = "error".into();
    event.reason = "HealthCheckFailed".into();
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/api/v1/events");
    assert_eq!(got[0].header("dd-api-key"), Some("dd-key"));
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "alert_type": "error",
            "date_happened": 1767323045,
            "source_type_name": "fluxcd",
            "tags": ["flux_reporting_controller:source-controller", "flux_reason:healthcheckfailed",
                     "kube_kind:gitrepository", "kube_name:webapp", "kube_namespace:gitops-system",
                     "test:metadata"],
            "text": "message",
            "title": "Events from the GitRepository webapp/gitops-system",
        })
    );
}
