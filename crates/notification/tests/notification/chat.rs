//! The chat types beyond Slack, Discord and Teams: Google Chat, Rocket.Chat, Webex, Telegram and
//! Matrix, each received by a local HTTP server and compared with what Flux's notifier tests
//! expect (method, path, headers, body), with the cluster's name in front of the object.

use crate::test_event;
use ferroflux_api::notification::ProviderType;
use ferroflux_notification::payload::{self, Plan, ProviderConfig, telegram_escape};
use ferroflux_notification::send::{Delivered, Retry, Sender};
use ferroflux_notification::sha1::sha1_hex;
use ferroflux_testkit::WebhookSink;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

pub fn provider(kind: ProviderType, address: String) -> ProviderConfig {
    ProviderConfig {
        kind,
        address,
        ..Default::default()
    }
}

pub fn no_retry() -> Retry {
    Retry {
        attempts: 1,
        first: Duration::from_millis(1),
        max: Duration::from_millis(1),
    }
}

/// Sends the plan, its requests moved from `from` (a service's fixed address) to `to`.
pub fn send_to(p: &ProviderConfig, plan: Plan, from: &str, to: &str) -> Delivered {
    let move_request = |mut r: payload::Request| {
        assert!(r.url.starts_with(from), "{} is not under {from}", r.url);
        r.url = format!("{to}{}", &r.url[from.len()..]);
        r
    };
    let plan = match plan {
        Plan::Post(r) => Plan::Post(move_request(r)),
        Plan::Sequence(rs) => Plan::Sequence(rs.into_iter().map(move_request).collect()),
        Plan::CommitStatus {
            list,
            post,
            duplicate,
        } => Plan::CommitStatus {
            list: move_request(list),
            post: move_request(post),
            duplicate,
        },
        skip => skip,
    };
    Sender::new(p, no_retry()).unwrap().send(&plan).unwrap()
}

pub fn send(p: &ProviderConfig, event: &ferroflux_notification::Event) -> Delivered {
    let plan = payload::plan(p, event).unwrap();
    Sender::new(p, no_retry()).unwrap().send(&plan).unwrap()
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[test]
fn googlechat_sends_a_card_with_the_message_and_metadata() {
    let sink = WebhookSink::start();
    let p = provider(
        ProviderType::Googlechat,
        format!("{}/v1/spaces/S/messages?key=K", sink.url()),
    );
    let mut event = test_event();
    event.severity = "error".into();
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].path, "/v1/spaces/S/messages?key=K");
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    assert_eq!(
        json_of(&got[0].body),
        json!({"cards": [{
            "header": {"title": "gitrepository/webapp.gitops-system", "subtitle": "source-controller",
                       "imageUrl": null, "imageStyle": null},
            "sections": [
                {"header": "", "widgets": [{"textParagraph": {"text": "<font color=\"#ff0000\">message</font>"},
                                            "keyValue": null}]},
                {"header": "", "widgets": [{"textParagraph": null,
                                            "keyValue": {"topLabel": "test", "content": "metadata",
                                                         "contentMultiline": false, "bottomLabel": null,
                                                         "icon": null}}]},
            ],
        }]})
    );
    // The cluster's name goes in front of the object.
    event.metadata.insert("cluster".into(), "production".into());
    event.severity = "info".into();
    send(&p, &event);
    let got = json_of(&sink.wait_for(2, WAIT)[1].body);
    assert_eq!(
        got["cards"][0]["header"]["title"],
        "[production] gitrepository/webapp.gitops-system"
    );
    assert_eq!(
        got["cards"][0]["sections"][0]["widgets"][0]["textParagraph"]["text"],
        "message"
    );
}

#[test]
fn rocket_sends_slacks_payload_with_fluxs_colours() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::Rocket,
        format!("{}/hooks/abc/def", sink.url()),
    );
    p.channel = "ops".into();
    p.username = "flux".into();
    send(&p, &test_event());
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/hooks/abc/def");
    assert_eq!(
        json_of(&got[0].body),
        json!({
            "channel": "ops", "username": "flux", "icon_url": "", "icon_emoji": "",
            "attachments": [{
                "fallback": "", "color": "#0076D7",
                "author_name": "gitrepository/webapp.gitops-system",
                "text": "message", "mrkdwn_in": ["text"],
                "fields": [{"title": "test", "value": "metadata", "short": false}],
            }],
        })
    );
    let mut event = test_event();
    event.severity = "error".into();
    event.metadata.insert("cluster".into(), "staging".into());
    send(&p, &event);
    let a = &json_of(&sink.wait_for(2, WAIT)[1].body)["attachments"][0];
    assert_eq!(a["color"], "#FF0000");
    assert_eq!(
        a["author_name"],
        "[staging] gitrepository/webapp.gitops-system"
    );
}

#[test]
fn webex_posts_markdown_to_the_room_with_the_bot_token() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Webex, format!("{}/v1/messages", sink.url()));
    p.channel = "room-id".into();
    p.token = "bot-token".into();
    let mut event = test_event();
    event.metadata.insert("cluster".into(), "production".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/v1/messages");
    assert_eq!(got[0].header("authorization"), Some("Bearer bot-token"));
    assert_eq!(
        json_of(&got[0].body),
        json!({"roomId": "room-id",
               "markdown": "✅ **[production] gitrepository/webapp.gitops-system**\nmessage\n>**cluster**: production\n>**test**: metadata\n"})
    );
    event.severity = "error".into();
    send(&p, &event);
    let md = json_of(&sink.wait_for(2, WAIT)[1].body)["markdown"].clone();
    assert!(md.as_str().unwrap().starts_with("💣 **"), "{md}");
}

#[test]
fn telegram_sends_escaped_markdown_v2_to_the_bot_api() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Telegram, String::new());
    p.channel = "channel".into();
    p.token = "123:ABC-def".into();
    let mut event = test_event();
    event
        .metadata
        .insert("kubernetes.io/somekey".into(), "some.value".into());
    let plan = payload::plan(&p, &event).unwrap();
    let Plan::Post(r) = &plan else {
        panic!("a post")
    };
    // The token is part of the Bot API's path, never of an error message (see send.rs).
    assert_eq!(r.url, "https://api.telegram.org/bot123:ABC-def/sendMessage");
    send_to(&p, plan, "https://api.telegram.org", &sink.url());
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].path, "/bot123:ABC-def/sendMessage");
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    let body = json_of(&got[0].body);
    assert_eq!(body["chat_id"], "channel");
    assert_eq!(body["parse_mode"], "MarkdownV2");
    assert!(body.get("message_thread_id").is_none());
    let text = body["text"].as_str().unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(
        lines,
        [
            "*💫 gitrepository/webapp/gitops\\-system*",
            "message",
            "\\- *kubernetes\\.io/somekey*: some\\.value",
            "\\- *test*: metadata",
            "",
        ]
    );

    // A forum topic: `<chat>:<thread>`; the cluster in the heading, escaped.
    p.channel = "channel:thread".into();
    event.severity = "error".into();
    event.metadata.insert("cluster".into(), "prod-1".into());
    send_to(
        &p,
        payload::plan(&p, &event).unwrap(),
        "https://api.telegram.org",
        &sink.url(),
    );
    let body = json_of(&sink.wait_for(2, WAIT)[1].body);
    assert_eq!(body["chat_id"], "channel");
    assert_eq!(body["message_thread_id"], "thread");
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("*🚨 \\[prod\\-1\\] gitrepository/webapp/gitops\\-system*\n"),
        "{body}"
    );
    assert_eq!(telegram_escape("a_b*c(d)!"), "a\\_b\\*c\\(d\\)\\!");
}

#[test]
fn matrix_puts_a_text_message_with_the_event_digest_as_transaction() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Matrix, sink.url());
    p.channel = "!room:example.org".into();
    p.token = "syt_token".into();
    let event = test_event();
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    let txn = sha1_hex(&serde_json::to_vec(&event).unwrap());
    assert_eq!(got[0].method, "PUT");
    assert_eq!(
        got[0].path,
        format!("/_matrix/client/r0/rooms/!room:example.org/send/m.room.message/{txn}")
    );
    assert_eq!(got[0].header("authorization"), Some("Bearer syt_token"));
    assert_eq!(
        json_of(&got[0].body),
        json!({"body": "💫 gitrepository/webapp.gitops-system\nmessage\n- test: metadata\n",
               "msgtype": "m.text"})
    );
}

#[test]
fn matrix_transaction_id_is_the_sha1_flux_computes_for_the_same_event() {
    // Flux's own test vector (matrix_test.go): the same event JSON gives the same digest.
    let event = ferroflux_notification::Event {
        severity: "info".into(),
        timestamp: "2021-08-24T16:18:00Z".into(),
        message: "update successful".into(),
        reason: "update sucesful".into(),
        ..Default::default()
    };
    assert_eq!(
        sha1_hex(&serde_json::to_vec(&event).unwrap()),
        "37d91b4f6a1e44c6a38273b0a0fd408fade7b0f5"
    );
}

#[test]
fn chat_types_name_what_they_miss() {
    let mut p = provider(ProviderType::Telegram, String::new());
    p.channel = "chat".into();
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "provider type 'telegram' needs a 'token' key in the Secret of spec.secretRef, and no secretRef is set"
    );
    p.secret = Some("flux-system/telegram".into());
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "secret 'flux-system/telegram' has no 'token' key, which provider type 'telegram' needs"
    );
    p.token = "t".into();
    p.channel.clear();
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "provider type 'telegram' needs spec.channel (the chat id)"
    );
    let mut p = provider(ProviderType::Matrix, "https://matrix.example.org".into());
    p.secret = Some("flux-system/matrix".into());
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "secret 'flux-system/matrix' has no 'token' key, which provider type 'matrix' needs"
    );
    let mut p = provider(
        ProviderType::Webex,
        "https://webexapis.com/v1/messages".into(),
    );
    p.token = "t".into();
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "provider type 'webex' needs spec.channel (the room id)"
    );
    let p = provider(ProviderType::Googlechat, "chat.googleapis.com/v1".into());
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "invalid Google Chat hook URL \"chat.googleapis.com/v1\": expected an absolute http:// or https:// URL"
    );
    let mut p = provider(ProviderType::Rocket, String::new());
    p.secret = Some("flux-system/rocket".into());
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "no address: spec.address is empty and secret 'flux-system/rocket' has no 'address' key"
    );
}

#[test]
fn a_providers_proxy_carries_the_request_and_a_bad_one_is_refused() {
    // The provider's address is a port nothing listens on: only the proxy can deliver it.
    let proxy = WebhookSink::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("http://127.0.0.1:{closed}");
    let mut p = provider(ProviderType::Rocket, format!("{target}/hooks/x"));
    p.proxy = Some(proxy.url());
    p.timeout = Some(Duration::from_secs(5));
    let plan = payload::plan(&p, &test_event()).unwrap();
    // The sink is no real proxy (it answers the tunnel request as a webhook): what counts is
    // that the client went to it, asking for the provider's address.
    let _ = Sender::new(&p, no_retry()).unwrap().send(&plan);
    let got = proxy.wait_for(1, WAIT);
    assert_eq!(got[0].method, "CONNECT");
    assert_eq!(got[0].path, format!("127.0.0.1:{closed}"));
    // A proxy address that is not a URL is refused before anything is sent.
    p.proxy = Some("::not a proxy::".into());
    assert!(Sender::new(&p, no_retry()).is_err());
}

#[test]
fn lark_sends_an_interactive_card() {
    let sink = WebhookSink::start();
    let p = provider(
        ProviderType::Lark,
        format!("{}/open-apis/bot/v2/hook/x", sink.url()),
    );
    let mut event = test_event();
    event.severity = "error".into();
    event.metadata.insert("cluster".into(), "production".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/open-apis/bot/v2/hook/x");
    assert_eq!(
        json_of(&got[0].body),
        json!({"msg_type": "interactive", "card": {
            "config": {"wide_screen_mode": true},
            "header": {"title": {"tag": "plain_text",
                                 "content": "🚨 [production] gitrepository/webapp.gitops-system"},
                       "template": "red"},
            "elements": [{"tag": "div", "text": {"tag": "lark_md",
                          "content": "**message**\n\ncluster: production\ntest: metadata\n"}}],
        }})
    );
}

#[test]
fn zoom_sends_the_full_format_with_the_verification_token() {
    let sink = WebhookSink::start();
    let mut p = provider(
        ProviderType::Zoom,
        format!("{}/inbound/webhook/x", sink.url()),
    );
    p.token = "verification".into();
    send(&p, &test_event());
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/inbound/webhook/x?format=full");
    assert_eq!(got[0].header("authorization"), Some("verification"));
    assert_eq!(
        json_of(&got[0].body),
        json!({"content": {
            "head": {"text": "gitrepository/webapp.gitops-system", "sub_head": {"text": "info"}},
            "body": [{"type": "message", "text": "message"},
                     {"type": "fields", "items": [{"key": "test", "value": "metadata"}]}],
        }})
    );
    // A format the address sets is kept.
    p.address = format!("{}/inbound/webhook/x?format=message", sink.url());
    send(&p, &test_event());
    assert_eq!(
        sink.wait_for(2, WAIT)[1].path,
        "/inbound/webhook/x?format=message"
    );
    p.token.clear();
    assert_eq!(
        payload::plan(&p, &test_event()).unwrap_err().to_string(),
        "provider type 'zoom' needs a 'token' key in the Secret of spec.secretRef, and no secretRef is set"
    );
}

#[test]
fn zulip_posts_the_markdown_status_as_a_form_to_the_stream_and_topic() {
    let sink = WebhookSink::start();
    let mut p = provider(ProviderType::Zulip, format!("{}/some/path", sink.url()));
    p.channel = "ops/flux alerts".into();
    p.username = "bot@zulip.example.com".into();
    p.password = "api-key".into();
    let mut event = test_event();
    event.metadata.insert("change_request".into(), "42".into());
    send(&p, &event);
    let got = sink.wait_for(1, WAIT);
    assert_eq!(got[0].path, "/api/v1/messages");
    assert_eq!(
        got[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        got[0].header("authorization"),
        Some("Basic Ym90QHp1bGlwLmV4YW1wbGUuY29tOmFwaS1rZXk=")
    );
    let content = ferroflux_notification::payload::markdown_post(&event);
    assert_eq!(
        content,
        "## Flux Status\n\nℹ️ GitRepository/gitops-system/webapp\n\nmessage\n\nMetadata:\n* `test`: metadata\n"
    );
    let text = got[0].text();
    assert!(
        text.starts_with("content=%23%23+Flux+Status%0A%0A"),
        "{text}"
    );
    assert!(
        text.ends_with("&to=ops&topic=flux+alerts&type=stream"),
        "{text}"
    );
    p.channel = "ops".into();
    assert_eq!(
        payload::plan(&p, &event).unwrap_err().to_string(),
        "invalid Zulip channel format, expected <channel>/<topic>, got 'ops'"
    );
}
