//! What each Provider type sends for an event: the HTTP request (address, headers, JSON body)
//! in the layout of Flux's `internal/notifier` package, field names and message layout kept, so
//! a receiver written for Flux's notifications reads ours. Building a request is pure; `send`
//! performs it.
//!
//! Beyond Flux: when the event carries the cluster's name (`cluster` metadata), chat messages
//! name it in front of the object (`[production] kustomization/apps.flux-system`) and commit
//! statuses use it as the last part of their context (`kustomization/apps/production`), so
//! statuses from staging and production on one commit do not overwrite each other.

mod chat;
mod comment;
mod commit;
mod incident;

pub use chat::{markdown_post, telegram_escape};
pub use commit::{
    commit_of, commit_status_context, describe_reason, parse_bitbucket_server_address,
    parse_git_address,
};
pub use incident::opsgenie_alias;

use crate::event::{Event, SEVERITY_ERROR};
use ferroflux_api::notification::ProviderType;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::time::Duration;

/// Flux's default send timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// A Provider with its Secret resolved: everything needed to send.
#[derive(Clone, Debug, Default)]
pub struct ProviderConfig {
    /// `spec.type`.
    pub kind: ProviderType,
    /// `spec.address`, or the Secret's `address`.
    pub address: String,
    /// `spec.channel`.
    pub channel: String,
    /// `spec.username`, or the Secret's `username`.
    pub username: String,
    /// The Secret's `password`.
    pub password: String,
    /// The Secret's `token` (the HMAC key of `generic-hmac`).
    pub token: String,
    /// The Secret's `headers` (YAML map), sent by `generic` and `generic-hmac`.
    pub headers: BTreeMap<String, String>,
    /// `spec.proxy` or the proxy Secret's `address`.
    pub proxy: Option<String>,
    /// `ca.crt` of `certSecretRef` (of `secretRef` for commit-status types without one): the
    /// only CAs trusted.
    pub ca_pem: Option<Vec<u8>>,
    /// `tls.crt` and `tls.key` of that Secret: the client certificate for mutual TLS.
    pub client_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// `spec.timeout`.
    pub timeout: Option<Duration>,
    /// The Provider's UID (the default commit status context ends with its first part).
    pub uid: String,
    /// `namespace/name` of `spec.secretRef`, when set: messages about a missing key name it.
    pub secret: Option<String>,
    /// The commit status' context (or key) for this event, as the Provider's `commitStatusExpr`
    /// gave it; `None` for the default, [`commit_status_context`].
    pub commit_status_id: Option<String>,
}

/// One HTTP request to perform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `POST`, `GET`, `PUT`.
    pub method: &'static str,
    /// The absolute URL.
    pub url: String,
    /// Headers besides `Content-Type` (which `content_type` holds).
    pub headers: Vec<(String, String)>,
    /// `application/json` unless the type says otherwise.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn json(url: String, body: &Value) -> Request {
        Request {
            method: "POST",
            url,
            headers: Vec::new(),
            content_type: "application/json".into(),
            // A serde_json::Value always serializes.
            body: serde_json::to_vec(body).unwrap_or_default(),
        }
    }

    pub(crate) fn get(url: String) -> Request {
        Request {
            method: "GET",
            url,
            headers: Vec::new(),
            content_type: String::new(),
            body: Vec::new(),
        }
    }

    pub(crate) fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

/// What sending an event to a provider means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to send (e.g. a `Progressing` event to a commit status), and why.
    Skip(&'static str),
    /// One request.
    Post(Request),
    /// Requests sent in order, each once the one before succeeded (PagerDuty's alert, then
    /// its change event).
    Sequence(Vec<Request>),
    /// A comment on a pull or merge request, created once and edited afterwards.
    Comment(Box<Comment>),
    /// A commit status: read the commit's statuses first and post only when this one's state
    /// or description changed (Flux's duplicate check).
    CommitStatus {
        /// Reads the commit's statuses (or the one status of this key).
        list: Request,
        /// Sets the status.
        post: Request,
        /// How the answer to `list` tells a duplicate.
        duplicate: Duplicate,
    },
}

/// A change request comment: the provider's own comment (by its author and a hidden marker
/// naming provider and object) is edited when it exists, else one is created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// Reads the token's user.
    pub user: Request,
    /// JSON pointer to the user's login in `user`'s answer.
    pub login: &'static str,
    /// Lists the request's comments.
    pub list: Request,
    /// JSON pointer to a listed comment's author login.
    pub author: &'static str,
    /// The hidden marker the provider's comment carries.
    pub marker: String,
    /// Creates the comment.
    pub create: Request,
    /// Edits a comment: this request with the comment's id appended to its URL.
    pub edit: Request,
}

/// How a commit status service's answer tells that the status to set is already there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    /// JSON pointer to the statuses in the answer: `""` for the whole body, `/value` for Azure
    /// DevOps' list.
    pub items: &'static str,
    /// The answer is the one status of this key (Bitbucket), not a list.
    pub single: bool,
    /// A 404 answer means there is no status yet (Bitbucket's status by key).
    pub missing_is_none: bool,
    /// Fields (JSON pointer, value) that pick the statuses this one would replace.
    pub key: Vec<(&'static str, String)>,
    /// Fields that must all be equal for it to be a duplicate.
    pub same: Vec<(&'static str, String)>,
    /// The first status of the key decides (lists newest first: GitHub, Gitea, Azure DevOps);
    /// otherwise any equal status is a duplicate (GitLab).
    pub first_decides: bool,
}

impl Duplicate {
    /// Whether `answer` (the body of `list`) already holds this status.
    pub fn is_duplicate(&self, answer: &Value) -> bool {
        let field = |s: &Value, pointer: &str| {
            s.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let matches = |s: &Value, fields: &[(&'static str, String)]| {
            fields
                .iter()
                .all(|(p, v)| field(s, p).as_deref() == Some(v.as_str()))
        };
        let items: Vec<&Value> = if self.single {
            answer.pointer(self.items).into_iter().collect()
        } else {
            match answer.pointer(self.items).and_then(Value::as_array) {
                Some(items) => items.iter().collect(),
                None => return false,
            }
        };
        for s in items {
            // Entries missing a compared field are skipped, as Flux skips them.
            let complete = self
                .key
                .iter()
                .chain(&self.same)
                .all(|(p, _)| field(s, p).is_some_and(|v| !v.is_empty()));
            if !complete || !matches(s, &self.key) {
                continue;
            }
            if matches(s, &self.same) {
                return true;
            }
            if self.first_decides {
                return false;
            }
        }
        false
    }
}

/// Why an event cannot be sent to a provider.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    /// The address is not an absolute URL.
    #[error("invalid {what} URL {url:?}: expected an absolute http:// or https:// URL")]
    InvalidAddress {
        /// `Slack hook`.
        what: &'static str,
        /// The address (without credentials).
        url: String,
    },
    /// A value the type needs is missing.
    #[error("{0}")]
    Missing(String),
    /// A Secret key the type needs is missing.
    #[error("{}", missing_key(key, kind, secret.as_deref()))]
    MissingKey {
        /// `token`.
        key: &'static str,
        /// `telegram`.
        kind: &'static str,
        /// `namespace/name` of the Secret, when `spec.secretRef` is set.
        secret: Option<String>,
    },
    /// The event has no revision a commit status can be set on.
    #[error("missing revision metadata")]
    MissingRevision,
    /// The revision holds no commit hash.
    #[error("failed to extract commit hash from '{0}' revision")]
    InvalidRevision(String),
    /// The type is not implemented by ferroflux, and what it would need.
    #[error("provider type '{kind}' is not supported by ferroflux: {needs}")]
    Unsupported {
        /// `nats`.
        kind: &'static str,
        /// What sending to it takes that ferroflux does not have.
        needs: &'static str,
    },
}

fn missing_key(key: &str, kind: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) => {
            format!("secret '{secret}' has no '{key}' key, which provider type '{kind}' needs")
        }
        None => format!(
            "provider type '{kind}' needs a '{key}' key in the Secret of spec.secretRef, and no secretRef is set"
        ),
    }
}

fn check_url(what: &'static str, url: &str) -> Result<(), PayloadError> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.split_once("://").is_some_and(|(_, rest)| {
            !rest.is_empty() && !rest.starts_with('/') && !rest.contains(char::is_whitespace)
        });
    if ok {
        Ok(())
    } else {
        Err(PayloadError::InvalidAddress {
            what,
            url: redact(url),
        })
    }
}

/// The URL without user info, for messages.
pub fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let host = rest[..end]
                .rsplit_once('@')
                .map_or(&rest[..end], |(_, h)| h);
            format!("{scheme}://{host}{}", &rest[end..])
        }
        None => url.to_string(),
    }
}

/// `sha256=<hex>` of Flux's `X-Signature`.
pub fn hmac_sha256_hex(key: &[u8], payload: &[u8]) -> String {
    // HMAC accepts keys of any length.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(payload);
    hex(&mac.finalize().into_bytes())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// What each type needs before anything is sent: the Secret keys (`token`, ...) and spec
/// fields it cannot work without, named as a user would fix them. Flux checks the same when
/// it builds the notifier; the dispatcher reports the answer on the Alert.
pub fn check(p: &ProviderConfig) -> Result<(), PayloadError> {
    let kind = p.kind.as_str();
    let missing = |key: &'static str| PayloadError::MissingKey {
        key,
        kind,
        secret: p.secret.clone(),
    };
    // Telegram's API address is fixed; every other type sends to (or reads its repository
    // from) the address.
    if p.address.is_empty() && p.kind != ProviderType::Telegram {
        return Err(PayloadError::Missing(match &p.secret {
            Some(secret) => format!(
                "no address: spec.address is empty and secret '{secret}' has no 'address' key"
            ),
            None => "no address: spec.address is empty and no secretRef is set".into(),
        }));
    }
    let token = !p.token.is_empty();
    let token_or_password = token || !p.password.is_empty();
    match p.kind {
        ProviderType::GenericHmac
        | ProviderType::Webex
        | ProviderType::Matrix
        | ProviderType::Opsgenie
        | ProviderType::Telegram
        | ProviderType::Bitbucket
        | ProviderType::Azuredevops
        | ProviderType::Zoom
        | ProviderType::IncidentIo
        | ProviderType::Datadog
            if !token =>
        {
            Err(missing("token"))
        }
        ProviderType::Github
        | ProviderType::Githubdispatch
        | ProviderType::Githubpullrequestcomment
        | ProviderType::Gitlabmergerequestcomment
        | ProviderType::Giteapullrequestcomment
        | ProviderType::Gitlab
        | ProviderType::Gitea
            if !token_or_password =>
        {
            Err(missing("token"))
        }
        ProviderType::Bitbucketserver
            if !token && (p.username.is_empty() || p.password.is_empty()) =>
        {
            Err(PayloadError::Missing(format!(
                "provider type 'bitbucketserver' needs a 'token', or a 'username' and a 'password', in {}",
                p.secret.as_deref().map_or(
                    "the Secret of spec.secretRef (none is set)".to_string(),
                    |s| format!("secret '{s}'")
                )
            )))
        }
        ProviderType::Telegram | ProviderType::Matrix | ProviderType::Webex
            if p.channel.is_empty() =>
        {
            Err(PayloadError::Missing(format!(
                "provider type '{kind}' needs spec.channel (the {})",
                if p.kind == ProviderType::Telegram {
                    "chat id"
                } else {
                    "room id"
                }
            )))
        }
        ProviderType::Pagerduty if p.channel.is_empty() => Err(PayloadError::Missing(
            "provider type 'pagerduty' needs spec.channel (the integration's routing key)".into(),
        )),
        _ => Ok(()),
    }
}

/// The plan for sending `event` (whose metadata is already combined) to `provider`.
pub fn plan(provider: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check(provider)?;
    match provider.kind {
        ProviderType::Generic => generic(provider, event, false),
        ProviderType::GenericHmac => generic(provider, event, true),
        ProviderType::Slack => slack(provider, event),
        ProviderType::Discord => discord(provider, event),
        ProviderType::Msteams => msteams(provider, event),
        ProviderType::Googlechat => chat::googlechat(provider, event),
        ProviderType::Rocket => chat::rocket(provider, event),
        ProviderType::Webex => chat::webex(provider, event),
        ProviderType::Telegram => chat::telegram(provider, event),
        ProviderType::Matrix => chat::matrix(provider, event),
        ProviderType::Lark => chat::lark(provider, event),
        ProviderType::Zoom => chat::zoom(provider, event),
        ProviderType::IncidentIo => incident::incidentio(provider, event),
        ProviderType::Zulip => chat::zulip(provider, event),
        ProviderType::Datadog => incident::datadog(provider, event),
        ProviderType::Githubdispatch => commit::githubdispatch(provider, event),
        ProviderType::Githubpullrequestcomment => comment::github(provider, event),
        ProviderType::Gitlabmergerequestcomment => comment::gitlab(provider, event),
        ProviderType::Giteapullrequestcomment => comment::gitea(provider, event),
        ProviderType::Alertmanager => incident::alertmanager(provider, event),
        ProviderType::Grafana => incident::grafana(provider, event),
        ProviderType::Pagerduty => incident::pagerduty(provider, event),
        ProviderType::Opsgenie => incident::opsgenie(provider, event),
        ProviderType::Github => commit::github(provider, event),
        ProviderType::Gitlab => commit::gitlab(provider, event),
        ProviderType::Gitea => commit::gitea(provider, event),
        ProviderType::Bitbucket => commit::bitbucket(provider, event),
        ProviderType::Bitbucketserver => commit::bitbucketserver(provider, event),
        ProviderType::Azuredevops => commit::azuredevops(provider, event),
        other => Err(PayloadError::Unsupported {
            kind: other.as_str(),
            needs: unsupported_because(other),
        }),
    }
}

/// Why the types ferroflux does not send to are left out: each speaks a protocol or needs a
/// cloud identity beyond an HTTP post.
fn unsupported_because(kind: ProviderType) -> &'static str {
    match kind {
        ProviderType::Googlepubsub => {
            "it publishes with Google Cloud credentials (OAuth token exchange)"
        }
        ProviderType::Azureeventhub => {
            "it sends over AMQP with an Event Hubs SAS or Azure AD token"
        }
        ProviderType::Nats => "it publishes over the NATS protocol",
        ProviderType::Otel => "it exports OpenTelemetry traces (OTLP)",
        ProviderType::Sentry => "it sends Sentry envelopes through the Sentry SDK's DSN handling",
        _ => "no sender is implemented for it",
    }
}

/// `[production] ` when the event carries the cluster's name, else nothing: chat messages put
/// it in front of the object.
pub(crate) fn cluster_prefix(event: &Event) -> String {
    event
        .cluster()
        .map(|c| format!("[{c}] "))
        .unwrap_or_default()
}

/// `Basic <base64 of user:password>`.
pub(crate) fn basic_auth(username: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
    )
}

/// Percent-encodes all but RFC 3986's unreserved characters (and those in `keep`).
pub(crate) fn escape(s: &str, keep: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || keep.as_bytes().contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn generic(p: &ProviderConfig, event: &Event, signed: bool) -> Result<Plan, PayloadError> {
    check_url("hook", &p.address)?;
    let body = serde_json::to_vec(event).unwrap_or_default();
    let mut request = Request {
        method: "POST",
        url: p.address.clone(),
        headers: vec![("gotk-component".into(), event.reporting_controller.clone())],
        content_type: "application/json".into(),
        body,
    };
    for (k, v) in &p.headers {
        request.headers.push((k.clone(), v.clone()));
    }
    if signed {
        let sig = hmac_sha256_hex(p.token.as_bytes(), &request.body);
        request = request.header("X-Signature", format!("sha256={sig}"));
    }
    Ok(Plan::Post(request))
}

fn first_line(message: &str) -> &str {
    message.split('\n').next().unwrap_or(message)
}

fn slack_fields(event: &Event) -> Vec<Value> {
    event
        .metadata
        .iter()
        .map(|(k, v)| json!({"title": k, "value": v, "short": false}))
        .collect()
}

fn color(event: &Event) -> &'static str {
    if event.severity == SEVERITY_ERROR {
        "danger"
    } else {
        "good"
    }
}

fn slack(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Slack hook", &p.address)?;
    let username = if p.username.is_empty() {
        &event.reporting_controller
    } else {
        &p.username
    };
    let author = event.object_title();
    let body = json!({
        "channel": p.channel,
        "username": username,
        "icon_url": "",
        "icon_emoji": "",
        "attachments": [{
            "fallback": format!("{author}: {}", first_line(&event.message)),
            "color": color(event),
            "author_name": author,
            "text": event.message,
            "mrkdwn_in": ["text"],
            "fields": slack_fields(event),
        }],
    });
    let mut request = Request::json(p.address.clone(), &body);
    if !p.token.is_empty() {
        request = request.header("Authorization", format!("Bearer {}", p.token));
    }
    Ok(Plan::Post(request))
}

fn discord(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Discord hook", &p.address)?;
    let url = if p.address.ends_with("/slack") {
        p.address.clone()
    } else {
        format!("{}/slack", p.address.trim_end_matches('/'))
    };
    let username = if p.username.is_empty() {
        &event.reporting_controller
    } else {
        &p.username
    };
    let body = json!({
        "channel": "",
        "username": username,
        "icon_url": "",
        "icon_emoji": "",
        "attachments": [{
            "fallback": "",
            "color": color(event),
            "author_name": event.object_title(),
            "text": event.message,
            "mrkdwn_in": ["text"],
            "fields": slack_fields(event),
        }],
    });
    Ok(Plan::Post(Request::json(url, &body)))
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = rest[..end]
        .rsplit_once('@')
        .map_or(&rest[..end], |(_, h)| h);
    authority.split(':').next().unwrap_or(authority)
}

fn msteams(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("MS Teams webhook", &p.address)?;
    let title = event.object_title();
    let body = if host_of(&p.address).ends_with(".webhook.office.com") {
        // The retired Office 365 connector's MessageCard.
        let facts: Vec<Value> = event
            .metadata
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        json!({
            "@type": "MessageCard",
            "@context": "http://schema.org/extensions",
            "themeColor": if event.severity == SEVERITY_ERROR { "FF0000" } else { "0076D7" },
            "summary": title,
            "sections": [{
                "activityTitle": event.message,
                "activitySubtitle": title,
                "facts": facts,
            }],
        })
    } else {
        // Flux puts `summary` first, then the other keys sorted.
        let mut facts = Vec::new();
        if let Some(summary) = event.metadata.get("summary") {
            facts.push(json!({"title": "summary", "value": summary}));
        }
        for (k, v) in &event.metadata {
            if k != "summary" {
                facts.push(json!({"title": k, "value": v}));
            }
        }
        let mut message = serde_json::Map::new();
        message.insert("type".into(), json!("TextBlock"));
        message.insert("text".into(), json!(event.message));
        if event.severity == SEVERITY_ERROR {
            message.insert("color".into(), json!("attention"));
        }
        message.insert("wrap".into(), json!(true));
        let mut fact_set = serde_json::Map::new();
        fact_set.insert("type".into(), json!("FactSet"));
        if !facts.is_empty() {
            fact_set.insert("facts".into(), Value::Array(facts));
        }
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
                            {"type": "TextBlock", "text": title, "size": "large", "weight": "bolder", "wrap": true},
                            Value::Object(message),
                            Value::Object(fact_set),
                        ],
                    }],
                    "msteams": {"width": "Full"},
                },
            }],
        })
    };
    Ok(Plan::Post(Request::json(p.address.clone(), &body)))
}
