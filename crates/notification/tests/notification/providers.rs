//! Each provider type's request, received by a local HTTP server standing in for the service
//! and compared with the payload Flux's notifier sends (its `*_test.go` checks).

use crate::test_event;
use ferroflux_api::notification::ProviderType;
use ferroflux_notification::payload::{self, Plan, ProviderConfig, commit_of, describe_reason};
use ferroflux_notification::send::{Delivered, Retry, SendError, Sender};
use ferroflux_testkit::WebhookSink;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn provider(kind: ProviderType, address: String) -> ProviderConfig {
    ProviderConfig {
        kind,
        address,
        ..Default::default()
    }
}

fn no_retry() -> Retry {
    Retry {
        attempts: 1,
        first: Duration::from_millis(1),
        max: Duration::from_millis(1),
    }
}

fn send(p: &ProviderConfig, event: &ferroflux_notification::Event) -> Result<Delivered, SendError> {
    let plan = payload::plan(p, event).unwrap();
    Sender::new(p, no_retry()).unwrap().send(&plan)
}

fn body(sink: &WebhookSink, n: usize) -> Value {
    let got = sink.wait_for(n, WAIT);
    serde_json::from_slice(&got[n - 1].body).unwrap()
}

#[test]
fn generic_posts_the_event_json_with_the_component_header_and_custom_headers() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Generic, format!("{}/hook", sink.url()));
    p.headers.insert("X-Team".into(), "platform".into());
    let event = test_event();
    assert_eq!(send(&p, &event).unwrap(), Delivered::Sent);
    let got = sink.wait_for(1, WAIT);
    let r = &got[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/hook");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("gotk-component"), Some("source-controller"));
    assert_eq!(r.header("x-team"), Some("platform"));
    assert!(r.header("x-signature").is_none());
    let got: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        got,
        json!({
            "involvedObject": {"kind": "GitRepository", "namespace": "gitops-system", "name": "webapp",
                               "apiVersion": "source.toolkit.fluxcd.io/v1"},
            "severity": "info",
            "timestamp": "2026-01-02T03:04:05Z",
            "message": "message",
            "reason": "reason",
            "metadata": {"test": "metadata"},
            "reportingController": "source-controller",
            "reportingInstance": "source-controller-xyz",
        })
    );
    // The event decodes back as Flux's controllers would read it.
    let back: ferroflux_notification::Event = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(back, event);
}

#[test]
fn generic_hmac_signs_the_exact_body_with_the_token() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::GenericHmac, sink.url());
    p.token = "s3cret".into();
    send(&p, &test_event()).unwrap();
    let got = sink.wait_for(1, WAIT);
    let sig = got[0].header("x-signature").unwrap().to_string();
    assert_eq!(
        sig,
        format!(
            "sha256={}",
            payload::hmac_sha256_hex(b"s3cret", &got[0].body)
        )
    );
    // The receiver side accepts it and refuses any other key.
    ferroflux_notification::receiver::check_signature(&sig, &got[0].body, "s3cret").unwrap();
    assert!(
        ferroflux_notification::receiver::check_signature(&sig, &got[0].body, "other").is_err()
    );
    // Without a token there is nothing to sign with.
    p.token.clear();
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "provider type 'generic-hmac' needs a 'token' key in the Secret of spec.secretRef, and no secretRef is set"
    );
}

#[test]
fn slack_payload_is_fluxs_attachment_with_token_and_channel() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::Slack,
        format!("{}/services/T/B/X", sink.url()),
    );
    p.channel = "general".into();
    p.token = "xoxb-token".into();
    let mut event = test_event();
    event.severity = "error".into();
    event.message = "first line\nsecond".into();
    send(&p, &event).unwrap();
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].header("authorization"), Some("Bearer xoxb-token"));
    assert_eq!(
        serde_json::from_slice::<Value>(&got[0].body).unwrap(),
        json!({
            "channel": "general",
            "username": "source-controller",
            "icon_url": "",
            "icon_emoji": "",
            "attachments": [{
                "fallback": "gitrepository/webapp.gitops-system: first line",
                "color": "danger",
                "author_name": "gitrepository/webapp.gitops-system",
                "text": "first line\nsecond",
                "mrkdwn_in": ["text"],
                "fields": [{"title": "test", "value": "metadata", "short": false}],
            }],
        })
    );
}

#[test]
fn slack_names_the_cluster_in_front_of_the_object() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Slack, sink.url());
    p.username = "flux".into();
    let mut event = test_event();
    event.metadata.insert("cluster".into(), "production".into());
    send(&p, &event).unwrap();
    let got = body(&sink, 1);
    let a = &got["attachments"][0];
    assert_eq!(got["username"], "flux");
    assert_eq!(
        a["author_name"],
        "[production] gitrepository/webapp.gitops-system"
    );
    assert_eq!(
        a["fallback"],
        "[production] gitrepository/webapp.gitops-system: message"
    );
    assert_eq!(a["color"], "good");
    assert!(
        a["fields"]
            .as_array()
            .unwrap()
            .contains(&json!({"title": "cluster", "value": "production", "short": false}))
    );
}

#[test]
fn discord_posts_slack_compatible_payload_to_the_slack_path() {
    let sink = WebhookSink::start();
    let p = provider(
        ProviderType::Discord,
        format!("{}/api/webhooks/1/abc", sink.url()),
    );
    send(&p, &test_event()).unwrap();
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/api/webhooks/1/abc/slack");
    let v: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(v["username"], "source-controller");
    assert_eq!(
        v["attachments"][0]["author_name"],
        "gitrepository/webapp.gitops-system"
    );
    assert_eq!(v["attachments"][0]["text"], "message");
    assert_eq!(v["attachments"][0]["color"], "good");
}

#[test]
fn msteams_sends_an_adaptive_card_with_summary_first() {
    let sink = WebhookSink::start();
    let p = provider(ProviderType::Msteams, sink.url());
    let mut event = test_event();
    event.severity = "error".into();
    event
        .metadata
        .insert("summary".into(), "cluster: prod".into());
    event.metadata.insert("a".into(), "b".into());
    send(&p, &event).unwrap();
    assert_eq!(
        body(&sink, 1),
        json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [{
                        "type": "Container",
                        "items": [
                            {"type": "TextBlock", "text": "gitrepository/webapp.gitops-system",
                             "size": "large", "weight": "bolder", "wrap": true},
                            {"type": "TextBlock", "text": "message", "color": "attention", "wrap": true},
                            {"type": "FactSet", "facts": [
                                {"title": "summary", "value": "cluster: prod"},
                                {"title": "a", "value": "b"},
                                {"title": "test", "value": "metadata"},
                            ]},
                        ],
                    }],
                    "msteams": {"width": "Full"},
                },
            }],
        })
    );
}

#[test]
fn msteams_office_connector_gets_the_message_card() {
    // Only the host decides; the request itself goes to the (local) address.
    let p = provider(
        ProviderType::Msteams,
        "https://example.webhook.office.com/webhookb2/x".into(),
    );
    let Plan::Post(r) = payload::plan(&p, &test_event()).unwrap() else {
        panic!("a post")
    };
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["@type"], "MessageCard");
    assert_eq!(v["themeColor"], "0076D7");
    assert_eq!(v["sections"][0]["activityTitle"], "message");
    assert_eq!(
        v["sections"][0]["facts"],
        json!([{"name": "test", "value": "metadata"}])
    );
}

fn github_provider(sink: &WebhookSink) -> ProviderConfig {
    let mut p = provider(
        ProviderType::Github,
        format!("{}/fluxcd/podinfo", sink.url()),
    );
    p.token = "ghp_token".into();
    p.uid = "0c9c2e41-d2f9-4f9b-9c41-2a29e7a8b1b6".into();
    p
}

const SHA: &str = "5394cb7f48332b2de7c17dd8b8384bbc84b7e738";

#[test]
fn github_sets_a_commit_status_with_the_cluster_in_its_context() {
    let sink = WebhookSink::start();
    let p = github_provider(&sink);
    let mut event = test_event();
    event.involved_object.kind = "Kustomization".into();
    event.involved_object.name = "apps".into();
    event.reason = "ReconciliationSucceeded".into();
    event
        .metadata
        .insert("revision".into(), format!("main@sha1:{SHA}"));
    event.metadata.insert("cluster".into(), "production".into());
    assert_eq!(send(&p, &event).unwrap(), Delivered::Sent);
    let got = sink.wait_for(2, WAIT);
    assert_eq!(got[0].method, "GET");
    assert_eq!(
        got[0].path,
        format!("/api/v3/repos/fluxcd/podinfo/commits/{SHA}/statuses?per_page=50")
    );
    assert_eq!(got[1].method, "POST");
    assert_eq!(
        got[1].path,
        format!("/api/v3/repos/fluxcd/podinfo/statuses/{SHA}")
    );
    assert_eq!(got[1].header("authorization"), Some("Bearer ghp_token"));
    assert_eq!(
        serde_json::from_slice::<Value>(&got[1].body).unwrap(),
        json!({"state": "success", "description": "reconciliation succeeded",
               "context": "kustomization/apps/production"})
    );

    // Without a cluster name: Flux's context, the provider UID's first part.
    event.metadata.remove("cluster");
    event.severity = "error".into();
    event.reason = "HealthCheckFailed".into();
    send(&p, &event).unwrap();
    let got = sink.wait_for(4, WAIT);
    assert_eq!(
        serde_json::from_slice::<Value>(&got[3].body).unwrap(),
        json!({"state": "failure", "description": "health check failed",
               "context": "kustomization/apps/0c9c2e41"})
    );
}

#[test]
fn github_skips_a_status_it_already_set_and_progressing_events() {
    let sink = WebhookSink::start();
    sink.set_get_body(
        r#"[{"context":"kustomization/apps/production","state":"success","description":"reconciliation succeeded"}]"#,
    );
    let p = github_provider(&sink);
    let mut event = test_event();
    event.involved_object.kind = "Kustomization".into();
    event.involved_object.name = "apps".into();
    event.reason = "ReconciliationSucceeded".into();
    event
        .metadata
        .insert("revision".into(), format!("sha1:{SHA}"));
    event.metadata.insert("cluster".into(), "production".into());
    assert_eq!(send(&p, &event).unwrap(), Delivered::Unchanged);
    assert_eq!(sink.wait_for(1, WAIT).len(), 1, "only the list");
    event.reason = "Progressing".into();
    assert_eq!(
        payload::plan(&p, &event).unwrap(),
        Plan::Skip("progressing events set no commit status")
    );
    // No revision: nothing to set a status on.
    event.reason = "ReconciliationSucceeded".into();
    event.metadata.remove("revision");
    assert_eq!(
        payload::plan(&p, &event).unwrap_err().to_string(),
        "missing revision metadata"
    );
}

#[test]
fn github_api_of_github_com_is_api_github_com() {
    let mut p = provider(
        ProviderType::Github,
        "https://github.com/org/repo.git".into(),
    );
    p.token = "t".into();
    let mut event = test_event();
    event
        .metadata
        .insert("revision".into(), format!("main@sha1:{SHA}"));
    let Plan::CommitStatus { post, .. } = payload::plan(&p, &event).unwrap() else {
        panic!("a commit status")
    };
    assert_eq!(
        post.url,
        format!("https://api.github.com/repos/org/repo/statuses/{SHA}")
    );
    p.address = "ssh://git@github.com/org/repo".into();
    let Plan::CommitStatus { post, .. } = payload::plan(&p, &event).unwrap() else {
        panic!("a commit status")
    };
    assert!(
        post.url
            .starts_with("https://api.github.com/repos/org/repo/")
    );
}

#[test]
fn reasons_and_revisions_read_as_fluxs_helpers_read_them() {
    assert_eq!(
        describe_reason("ReconciliationSucceeded"),
        "reconciliation succeeded"
    );
    assert_eq!(describe_reason("HealthCheckFailed"), "health check failed");
    assert_eq!(describe_reason("HTTPServerDown"), "http server down");
    assert_eq!(commit_of(&format!("main@sha1:{SHA}")).unwrap(), SHA);
    assert_eq!(commit_of(&format!("main/{SHA}")).unwrap(), SHA);
    assert_eq!(commit_of(SHA).unwrap(), SHA);
    assert_eq!(
        commit_of("v1.0.0@sha256:abc").unwrap_err().to_string(),
        "failed to extract commit hash from 'v1.0.0@sha256:abc' revision"
    );
}

#[test]
fn a_failing_service_is_retried_with_backoff_then_reported_without_its_path() {
    let sink = WebhookSink::start();
    sink.set_status(503);
    let p = provider(
        ProviderType::Slack,
        format!("{}/services/SECRET", sink.url()),
    );
    let plan = payload::plan(&p, &test_event()).unwrap();
    let retry = Retry {
        attempts: 3,
        first: Duration::from_millis(5),
        max: Duration::from_millis(10),
    };
    let err = Sender::new(&p, retry).unwrap().send(&plan).unwrap_err();
    assert_eq!(sink.received().len(), 3, "three attempts");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "request to {} failed with status code 503 after 3 attempt(s)",
            sink.url()
        )),
        "{text}"
    );
    assert!(!text.contains("SECRET"), "{text}");
    // A client error is not retried.
    sink.set_status(400);
    Sender::new(&p, retry).unwrap().send(&plan).unwrap_err();
    assert_eq!(sink.received().len(), 4);
    // Backoff doubles up to the cap.
    let flux = Retry::default();
    assert_eq!(flux.backoff(1), Duration::from_secs(2));
    assert_eq!(flux.backoff(2), Duration::from_secs(4));
    assert_eq!(flux.backoff(5), Duration::from_secs(30));
}

#[test]
fn an_unreachable_address_is_a_transport_error_after_every_attempt() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = provider(ProviderType::Generic, format!("http://127.0.0.1:{port}/x"));
    let plan = payload::plan(&p, &test_event()).unwrap();
    let retry = Retry {
        attempts: 2,
        first: Duration::from_millis(1),
        max: Duration::from_millis(1),
    };
    let err = Sender::new(&p, retry).unwrap().send(&plan).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "failed to execute request to http://127.0.0.1:{port} after 2 attempt(s)"
        )),
        "{err}"
    );
}

#[test]
fn an_invalid_address_is_refused_before_sending() {
    let p = provider(ProviderType::Slack, "hooks.slack.com/services/x".into());
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "invalid Slack hook URL \"hooks.slack.com/services/x\": expected an absolute http:// or https:// URL"
    );
}

#[test]
fn every_type_of_the_crds_enum_sends_or_says_what_it_would_need() {
    // Types whose senders ferroflux does not have: each says why.
    let unsupported = ["googlepubsub", "sentry", "azureeventhub", "nats", "otel"];
    for name in ferroflux_api::notification::ALL_PROVIDER_TYPES {
        let kind: ProviderType = serde_json::from_value(json!(name)).unwrap();
        let address = match *name {
            "bitbucketserver" => "https://example.com/scm/org/repo.git",
            "azuredevops" => "https://dev.azure.com/org/proj/_git/repo",
            _ => "https://example.com/org/repo",
        };
        let mut p = provider(kind, address.into());
        p.token = "user:token".into();
        p.username = "u".into();
        p.password = "p".into();
        p.channel = "chat/topic".into();
        let mut event = test_event();
        event
            .metadata
            .insert("revision".into(), format!("main@sha1:{SHA}"));
        event.metadata.insert("change_request".into(), "1".into());
        match payload::plan(&p, &event) {
            Ok(_) => assert!(!unsupported.contains(name), "{name} sends"),
            Err(e) => {
                assert!(unsupported.contains(name), "{name}: {e}");
                assert!(
                    e.to_string().starts_with(&format!(
                        "provider type '{name}' is not supported by ferroflux: "
                    )),
                    "{e}"
                );
            }
        }
    }
}
