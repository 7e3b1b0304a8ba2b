//! The commit-status types beyond GitHub: GitLab, Gitea, Bitbucket, Bitbucket Server and Azure
//! DevOps, each against a local HTTP server answering as the service does: the statuses read
//! first, a status set only when it changed, the cluster's name in its context, and events
//! without a revision refused.

use crate::chat::{no_retry, provider, send, send_to};
use crate::test_event;
use ferroflux_api::notification::ProviderType;
use ferroflux_notification::Event;
use ferroflux_notification::payload::{self, Plan, ProviderConfig, parse_bitbucket_server_address};
use ferroflux_notification::send::{Delivered, Sender};
use ferroflux_notification::sha1::sha1_hex;
use ferroflux_testkit::WebhookSink;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);
const SHA: &str = "5394cb7f48332b2de7c17dd8b8384bbc84b7e738";

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

/// A Kustomization `apps` event on commit SHA in cluster `production`.
fn event(severity: &str, reason: &str) -> Event {
    let mut event = test_event();
    event.involved_object.kind = "Kustomization".into();
    event.involved_object.name = "apps".into();
    event.severity = severity.into();
    event.reason = reason.into();
    event
        .metadata
        .insert("revision".into(), format!("main@sha1:{SHA}"));
    event.metadata.insert("cluster".into(), "production".into());
    event
}

fn with_token(kind: ProviderType, address: String, token: &str) -> ProviderConfig {
    let mut p = provider(kind, address);
    p.token = token.into();
    p.uid = "0c9c2e41-d2f9-4f9b-9c41-2a29e7a8b1b6".into();
    p
}

/// Every type refuses an event without a revision, or with one that holds no commit.
fn refuses_events_without_a_commit(p: &ProviderConfig) {
    let mut e = event("info", "ReconciliationSucceeded");
    e.metadata.remove("revision");
    assert_eq!(
        payload::plan(p, &e).unwrap_err().to_string(),
        "missing revision metadata",
        "{:?}",
        p.kind
    );
    e.metadata
        .insert("revision".into(), "v1.0.0@sha256:abc".into());
    assert_eq!(
        payload::plan(p, &e).unwrap_err().to_string(),
        "failed to extract commit hash from 'v1.0.0@sha256:abc' revision"
    );
}

#[test]
fn gitlab_sets_a_status_named_for_the_cluster_unless_already_set() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Gitlab,
        format!("{}/platform/fleet.infra.git", sink.url()),
        "glpat",
    );
    assert_eq!(
        send(&p, &event("error", "HealthCheckFailed")),
        Delivered::Sent
    );
    let got = sink.wait_for(2, WAIT);
    assert_eq!(got[0].method, "GET");
    assert_eq!(
        got[0].path,
        format!(
            "/api/v4/projects/platform%2Ffleet%2Einfra/repository/commits/{SHA}/statuses?name=kustomization%2Fapps%2Fproduction"
        )
    );
    assert_eq!(got[0].header("private-token"), Some("glpat"));
    assert_eq!(got[1].method, "POST");
    assert_eq!(
        got[1].path,
        format!("/api/v4/projects/platform%2Ffleet%2Einfra/statuses/{SHA}")
    );
    assert_eq!(got[1].header("private-token"), Some("glpat"));
    assert_eq!(
        json_of(&got[1].body),
        json!({"state": "failed", "name": "kustomization/apps/production",
               "description": "health check failed"})
    );
    // GitLab lists the status already: nothing posted.
    sink.set_get_body(&format!(
        r#"[{{"sha":"{SHA}","name":"kustomization/apps/production","status":"success","description":"reconciliation succeeded"}}]"#
    ));
    assert_eq!(
        send(&p, &event("info", "ReconciliationSucceeded")),
        Delivered::Unchanged
    );
    assert_eq!(sink.wait_for(3, WAIT).len(), 3, "only the list");
    // The same status of another cluster does not count.
    let mut staging = event("info", "ReconciliationSucceeded");
    staging.metadata.insert("cluster".into(), "staging".into());
    assert_eq!(send(&p, &staging), Delivered::Sent);
    assert!(matches!(
        payload::plan(&p, &event("info", "Progressing")).unwrap(),
        Plan::Skip(_)
    ));
    refuses_events_without_a_commit(&p);
}

#[test]
fn gitea_sets_pending_while_progressing_and_skips_duplicates() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Gitea, format!("{}/foo/bar.git", sink.url()));
    p.password = "gitea-token".into(); // Flux's fallback: the password when no token
    assert_eq!(send(&p, &event("info", "Progressing")), Delivered::Sent);
    let got = sink.wait_for(2, WAIT);
    assert_eq!(
        got[0].path,
        format!("/api/v1/repos/foo/bar/commits/{SHA}/statuses?page=1&limit=50")
    );
    assert_eq!(got[0].header("authorization"), Some("token gitea-token"));
    assert_eq!(got[1].path, format!("/api/v1/repos/foo/bar/statuses/{SHA}"));
    assert_eq!(
        json_of(&got[1].body),
        json!({"state": "pending", "target_url": "", "description": "progressing",
               "context": "kustomization/apps/production"})
    );
    // Newest first: the first status of the context decides.
    sink.set_get_body(
        r#"[{"context":"kustomization/apps/production","state":"failure","description":"health check failed"},
            {"context":"kustomization/apps/production","state":"success","description":"reconciliation succeeded"}]"#,
    );
    assert_eq!(
        send(&p, &event("info", "ReconciliationSucceeded")),
        Delivered::Sent
    );
    assert_eq!(
        send(&p, &event("error", "HealthCheckFailed")),
        Delivered::Unchanged
    );
    refuses_events_without_a_commit(&p);
}

#[test]
fn bitbucket_sets_a_build_status_keyed_by_the_context() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Bitbucket,
        "https://bitbucket.org/owner/repo.git".into(),
        "user:app-password",
    );
    let key = sha1_hex(b"kustomization/apps/production");
    let status = format!("/2.0/repositories/owner/repo/commit/{SHA}/statuses/build");
    // Not set yet: Bitbucket answers 404.
    sink.route("GET", &status, 404, r#"{"type":"error"}"#);
    let plan = payload::plan(&p, &event("info", "ReconciliationSucceeded")).unwrap();
    assert_eq!(
        send_to(&p, plan, "https://api.bitbucket.org", &sink.url()),
        Delivered::Sent
    );
    let got = sink.wait_for(2, WAIT);
    assert_eq!(got[0].path, format!("{status}/{key}"));
    assert_eq!(
        got[0].header("authorization"),
        Some("Basic dXNlcjphcHAtcGFzc3dvcmQ=")
    );
    assert_eq!(got[1].method, "POST");
    assert_eq!(got[1].path, status);
    assert_eq!(
        json_of(&got[1].body),
        json!({"key": key, "url": "https://bitbucket.org", "state": "SUCCESSFUL",
               "name": "kustomization/apps/production", "description": "reconciliation succeeded"})
    );
    // Set already with this state and description: nothing posted.
    let sink = WebhookSink::start();
    sink.set_get_body(r#"{"state":"SUCCESSFUL","description":"reconciliation succeeded"}"#);
    let plan = payload::plan(&p, &event("info", "ReconciliationSucceeded")).unwrap();
    assert_eq!(
        send_to(&p, plan, "https://api.bitbucket.org", &sink.url()),
        Delivered::Unchanged
    );
    let mut bad = p.clone();
    bad.token = "no-colon".into();
    assert_eq!(
        payload::plan(&bad, &event("info", "ReconciliationSucceeded"))
            .unwrap_err()
            .to_string(),
        "invalid token format, expected to be <user>:<password>"
    );
    refuses_events_without_a_commit(&p);
}

#[test]
fn bitbucket_server_posts_a_build_with_token_or_basic_auth() {
    let sink = WebhookSink::start();
    let address = format!("{}/bitbucket/scm/proj/repo.git", sink.url());
    let p = with_token(ProviderType::Bitbucketserver, address.clone(), "bb-token");
    let builds =
        format!("/bitbucket/rest/api/latest/projects/proj/repos/repo/commits/{SHA}/builds");
    let key = sha1_hex(b"kustomization/apps/production");
    sink.route("GET", &builds, 404, "");
    assert_eq!(
        send(&p, &event("error", "HealthCheckFailed")),
        Delivered::Sent
    );
    let got = sink.wait_for(2, WAIT);
    assert_eq!(got[0].path, format!("{builds}?key={key}"));
    for r in &got {
        assert_eq!(r.header("authorization"), Some("Bearer bb-token"));
        assert_eq!(r.header("x-atlassian-token"), Some("no-check"));
        assert_eq!(r.header("x-requested-with"), Some("XMLHttpRequest"));
    }
    assert_eq!(got[1].path, builds);
    assert_eq!(
        json_of(&got[1].body),
        json!({"description": "health check failed", "key": key,
               "name": "kustomization/apps/production [health check failed]",
               "state": "FAILED", "url": address})
    );
    // Username and password instead of a token.
    let mut basic = p.clone();
    basic.token.clear();
    basic.username = "u".into();
    basic.password = "p".into();
    send(&basic, &event("error", "HealthCheckFailed"));
    assert_eq!(
        sink.wait_for(4, WAIT)[3].header("authorization"),
        Some("Basic dTpw")
    );
    basic.password.clear();
    basic.secret = Some("flux-system/bb".into());
    assert_eq!(
        payload::plan(&basic, &event("info", "x"))
            .unwrap_err()
            .to_string(),
        "provider type 'bitbucketserver' needs a 'token', or a 'username' and a 'password', in secret 'flux-system/bb'"
    );
    assert_eq!(
        parse_bitbucket_server_address("https://h/scm/p/r.git").unwrap(),
        ("https://h".into(), "p".into(), "r".into())
    );
    assert_eq!(
        parse_bitbucket_server_address("ssh://git@h/p/r.git")
            .unwrap_err()
            .to_string(),
        "could not parse git address \"ssh://h/p/r.git\": unsupported scheme, must be http or https"
    );
    refuses_events_without_a_commit(&p);
}

#[test]
fn azure_devops_sets_a_status_with_fluxs_genre() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Azuredevops,
        format!("{}/org/proj/_git/repo", sink.url()),
        "pat",
    );
    let mut e = event("info", "ReconciliationSucceeded");
    e.metadata.insert("summary".into(), "apps".into());
    assert_eq!(send(&p, &e), Delivered::Sent);
    let got = sink.wait_for(2, WAIT);
    let path =
        format!("/org/proj/_apis/git/repositories/repo/commits/{SHA}/statuses?api-version=6.0");
    assert_eq!(
        (got[0].method.as_str(), got[0].path.as_str()),
        ("GET", path.as_str())
    );
    assert_eq!(
        (got[1].method.as_str(), got[1].path.as_str()),
        ("POST", path.as_str())
    );
    assert_eq!(got[1].header("authorization"), Some("Basic OnBhdA=="));
    assert_eq!(
        json_of(&got[1].body),
        json!({"context": {"genre": "fluxcd:apps", "name": "kustomization/apps/production"},
               "description": "reconciliation succeeded", "state": "succeeded"})
    );
    sink.set_get_body(
        r#"{"count":1,"value":[{"context":{"genre":"fluxcd:apps","name":"kustomization/apps/production"},
            "state":"succeeded","description":"reconciliation succeeded"}]}"#,
    );
    assert_eq!(send(&p, &e), Delivered::Unchanged);
    let mut wrong = p.clone();
    wrong.address = format!("{}/org/repo", sink.url());
    assert_eq!(
        payload::plan(&wrong, &e).unwrap_err().to_string(),
        "invalid repository id \"org/repo\": expected <organisation>/<project>/_git/<repository>"
    );
    let mut no_token = p.clone();
    no_token.token.clear();
    no_token.secret = Some("flux-system/ado".into());
    assert_eq!(
        payload::plan(&no_token, &e).unwrap_err().to_string(),
        "secret 'flux-system/ado' has no 'token' key, which provider type 'azuredevops' needs"
    );
    refuses_events_without_a_commit(&p);
}

#[test]
fn a_failing_status_service_is_retried_then_reported() {
    let sink = WebhookSink::start();
    sink.set_status(502);
    let p = with_token(ProviderType::Gitlab, format!("{}/g/r", sink.url()), "t");
    let plan = payload::plan(&p, &event("info", "ReconciliationSucceeded")).unwrap();
    let retry = ferroflux_notification::Retry {
        attempts: 2,
        ..no_retry()
    };
    let err = Sender::new(&p, retry).unwrap().send(&plan).unwrap_err();
    assert_eq!(sink.received().len(), 2);
    assert!(
        err.to_string().starts_with(&format!(
            "request to {} failed with status code 502 after 2 attempt(s)",
            sink.url()
        )),
        "{err}"
    );
}

#[test]
fn github_dispatch_sends_the_event_as_client_payload() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Githubdispatch,
        format!("{}/org/fleet", sink.url()),
        "ghp",
    );
    let e = event("info", "ReconciliationSucceeded");
    send(&p, &e);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/api/v3/repos/org/fleet/dispatches");
    assert_eq!(got[0].header("authorization"), Some("Bearer ghp"));
    assert_eq!(
        json_of(&got[0].body),
        json!({"event_type": "Kustomization/apps.gitops-system",
               "client_payload": serde_json::to_value(&e).unwrap()})
    );
}

fn change_request_event() -> Event {
    let mut e = event("error", "HealthCheckFailed");
    e.metadata.insert("change_request".into(), "7".into());
    e
}

#[test]
fn github_pull_request_comment_is_created_then_edited() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Githubpullrequestcomment,
        format!("{}/org/fleet", sink.url()),
        "ghp",
    );
    let e = change_request_event();
    let marker = format!(
        "<!-- flux-pr-comment-key:{}/Kustomization/gitops-system/apps -->",
        p.uid
    );
    sink.route("GET", "/api/v3/user", 200, r#"{"login":"flux-bot"}"#);
    // No comment of ours yet (another user's comment carries the marker: not ours).
    sink.route(
        "GET",
        "/api/v3/repos/org/fleet/issues/7/comments",
        200,
        &serde_json::to_string(&json!([{"id": 1, "user": {"login": "someone"}, "body": marker}]))
            .unwrap(),
    );
    send(&p, &e);
    let got = sink.wait_for(3, WAIT);
    assert_eq!(got[0].path, "/api/v3/user");
    assert_eq!(
        got[1].path,
        "/api/v3/repos/org/fleet/issues/7/comments?sort=created&direction=asc&per_page=100"
    );
    assert_eq!(
        (got[2].method.as_str(), got[2].path.as_str()),
        ("POST", "/api/v3/repos/org/fleet/issues/7/comments")
    );
    assert_eq!(got[2].header("authorization"), Some("Bearer ghp"));
    let body = json_of(&got[2].body)["body"].as_str().unwrap().to_string();
    assert!(
        body.starts_with(&format!(
            "{marker}\n\n## Flux Status\n\n⚠️ [production] Kustomization/gitops-system/apps\n"
        )),
        "{body}"
    );

    // Ours exists: edited in place.
    let sink = WebhookSink::start();
    let p = ProviderConfig {
        address: format!("{}/org/fleet", sink.url()),
        ..p
    };
    sink.route("GET", "/api/v3/user", 200, r#"{"login":"flux-bot"}"#);
    sink.route(
        "GET",
        "/api/v3/repos/org/fleet/issues/7/comments",
        200,
        &serde_json::to_string(
            &json!([{"id": 99, "user": {"login": "flux-bot"}, "body": format!("{marker}\nold")}]),
        )
        .unwrap(),
    );
    send(&p, &e);
    let got = sink.wait_for(3, WAIT);
    assert_eq!(
        (got[2].method.as_str(), got[2].path.as_str()),
        ("PATCH", "/api/v3/repos/org/fleet/issues/comments/99")
    );
    let mut no_request = e.clone();
    no_request.metadata.remove("change_request");
    assert_eq!(
        payload::plan(&p, &no_request).unwrap_err().to_string(),
        "missing \"change_request\" metadata key"
    );
}

#[test]
fn gitlab_and_gitea_comments_use_their_apis() {
    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Gitlabmergerequestcomment,
        format!("{}/group/fleet", sink.url()),
        "glpat",
    );
    sink.route("GET", "/api/v4/user", 200, r#"{"username":"flux-bot"}"#);
    let marker = format!(
        "<!-- flux-mr-comment-key:{}/Kustomization/gitops-system/apps -->",
        p.uid
    );
    sink.route(
        "GET",
        "/api/v4/projects/group%2Ffleet/merge_requests/7/notes",
        200,
        &serde_json::to_string(
            &json!([{"id": 5, "author": {"username": "flux-bot"}, "body": marker}]),
        )
        .unwrap(),
    );
    send(&p, &change_request_event());
    let got = sink.wait_for(3, WAIT);
    assert_eq!(got[0].header("private-token"), Some("glpat"));
    assert_eq!(
        (got[2].method.as_str(), got[2].path.as_str()),
        (
            "PUT",
            "/api/v4/projects/group%2Ffleet/merge_requests/7/notes/5"
        )
    );

    let sink = WebhookSink::start();
    let p = with_token(
        ProviderType::Giteapullrequestcomment,
        format!("{}/org/fleet", sink.url()),
        "gt",
    );
    sink.route("GET", "/api/v1/user", 200, r#"{"login":"flux-bot"}"#);
    send(&p, &change_request_event());
    let got = sink.wait_for(3, WAIT);
    assert_eq!(got[0].header("authorization"), Some("token gt"));
    assert_eq!(
        got[1].path,
        "/api/v1/repos/org/fleet/issues/7/comments?page=1&limit=100"
    );
    assert_eq!(
        (got[2].method.as_str(), got[2].path.as_str()),
        ("POST", "/api/v1/repos/org/fleet/issues/7/comments")
    );
}
