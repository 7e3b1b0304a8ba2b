//! What each Provider type sends for an event: the HTTP request (address, headers, JSON body)
//! in the layout of Flux's `internal/notifier` package, field names and message layout kept, so
//! a receiver written for Flux's notifications reads ours. Building a request is pure; `send`
//! performs it.
//!
//! Beyond Flux: when the event carries the cluster's name (`cluster` metadata), chat messages
//! name it in front of the object (`[production] kustomization/apps.flux-system`) and commit
//! statuses use it as the last part of their context (`kustomization/apps/production`), so
//! statuses from staging and production on one commit do not overwrite each other.

use crate::event::{Event, SEVERITY_ERROR, SEVERITY_INFO};
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
    /// `ca.crt` of `certSecretRef`.
    pub ca_pem: Option<Vec<u8>>,
    /// `spec.timeout`.
    pub timeout: Option<Duration>,
    /// The Provider's UID (the default commit status context ends with its first part).
    pub uid: String,
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
    fn json(url: String, body: &Value) -> Request {
        Request {
            method: "POST",
            url,
            headers: Vec::new(),
            content_type: "application/json".into(),
            // A serde_json::Value always serializes.
            body: serde_json::to_vec(body).unwrap_or_default(),
        }
    }

    fn header(mut self, name: &str, value: impl Into<String>) -> Request {
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
    /// A commit status: list the commit's statuses first and post only when the context's
    /// state or description changed (Flux's duplicate check).
    CommitStatus {
        /// Lists the commit's statuses.
        list: Request,
        /// Sets the status.
        post: Request,
        /// The context the duplicate check compares.
        context: String,
        /// The state the duplicate check compares.
        state: String,
        /// The description the duplicate check compares.
        description: String,
    },
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
    /// The event has no revision a commit status can be set on.
    #[error("missing revision metadata")]
    MissingRevision,
    /// The revision holds no commit hash.
    #[error("failed to extract commit hash from '{0}' revision")]
    InvalidRevision(String),
    /// The type is not implemented by ferroflux.
    #[error("provider type '{0}' is not supported by ferroflux")]
    Unsupported(String),
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

/// The plan for sending `event` (whose metadata is already combined) to `provider`.
pub fn plan(provider: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    match provider.kind {
        ProviderType::Generic => generic(provider, event, false),
        ProviderType::GenericHmac => generic(provider, event, true),
        ProviderType::Slack => slack(provider, event),
        ProviderType::Discord => discord(provider, event),
        ProviderType::Msteams => msteams(provider, event),
        ProviderType::Github => github(provider, event),
        other => Err(PayloadError::Unsupported(other.as_str().into())),
    }
}

fn generic(p: &ProviderConfig, event: &Event, signed: bool) -> Result<Plan, PayloadError> {
    check_url("hook", &p.address)?;
    if signed && p.token.is_empty() {
        return Err(PayloadError::Missing("HMAC key is empty".into()));
    }
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

/// Flux's `splitCamelcase`, lower-cased and joined: `HealthCheckFailed` → `health check failed`.
pub fn describe_reason(reason: &str) -> String {
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last = 0;
    for c in reason.chars() {
        let class = if c.is_lowercase() {
            1
        } else if c.is_uppercase() {
            2
        } else if c.is_ascii_digit() {
            3
        } else {
            4
        };
        match runs.last_mut() {
            Some(run) if class == last => run.push(c),
            _ => runs.push(vec![c]),
        }
        last = class;
    }
    // An upper-case run followed by a lower-case one gives its last letter to the word after
    // it: `HTTPServer` → `HTTP Server`.
    for i in 0..runs.len().saturating_sub(1) {
        let upper = runs[i].first().is_some_and(|c| c.is_uppercase());
        let lower_next = runs[i + 1].first().is_some_and(|c| c.is_lowercase());
        if upper
            && lower_next
            && let Some(moved) = runs[i].pop()
        {
            runs[i + 1].insert(0, moved);
        }
    }
    runs.iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The commit hash of a Flux revision: `main@sha1:<hex>`, `sha1:<hex>`, legacy `main/<hex>`,
/// or a bare hash.
pub fn commit_of(revision: &str) -> Result<String, PayloadError> {
    let tail = revision.rsplit_once('@').map_or(revision, |(_, t)| t);
    let hash = match tail.split_once(':') {
        Some((algo, hash)) if algo == "sha1" || algo == "sha256" => hash,
        Some(_) => "",
        None => tail.rsplit_once('/').map_or(tail, |(_, h)| h),
    };
    let valid =
        (hash.len() == 40 || hash.len() == 64) && hash.chars().all(|c| c.is_ascii_hexdigit());
    if valid {
        Ok(hash.to_string())
    } else {
        Err(PayloadError::InvalidRevision(revision.to_string()))
    }
}

/// `https://host` and `owner/repo` of a Git address (`ssh://` becomes `https://`).
pub fn parse_git_address(address: &str) -> Result<(String, String), PayloadError> {
    let invalid = || PayloadError::InvalidAddress {
        what: "Git repository",
        url: redact(address),
    };
    // scp-like `git@host:owner/repo.git`.
    let (scheme, rest) = match address.split_once("://") {
        Some((s, r)) => (s, r.to_string()),
        None => match address.split_once(':') {
            Some((host, path)) if !host.contains('/') => ("ssh", format!("{host}/{path}")),
            _ => return Err(invalid()),
        },
    };
    let scheme = if scheme == "ssh" { "https" } else { scheme };
    let end = rest.find('/').ok_or_else(invalid)?;
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let id = rest[end..].trim_start_matches('/').trim_end_matches(".git");
    if host.is_empty() || id.is_empty() {
        return Err(invalid());
    }
    Ok((format!("{scheme}://{host}"), id.to_string()))
}

/// The commit status context: `<kind>/<name>/<cluster>` when the cluster is known, else Flux's
/// `<kind>/<name>/<first part of the provider's UID>`; lower case.
pub fn commit_status_context(provider: &ProviderConfig, event: &Event) -> String {
    let last = match event.cluster() {
        Some(cluster) => cluster.to_string(),
        None => provider
            .uid
            .split('-')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    format!(
        "{}/{}/{}",
        event.involved_object.kind, event.involved_object.name, last
    )
    .to_lowercase()
}

fn github(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    if event.reason == "Progressing" {
        return Ok(Plan::Skip("progressing events set no commit status"));
    }
    let revision = event.revision().ok_or(PayloadError::MissingRevision)?;
    let sha = commit_of(revision)?;
    let token = if p.token.is_empty() {
        &p.password
    } else {
        &p.token
    };
    if token.is_empty() {
        return Err(PayloadError::Missing(
            "github token or github app details must be specified".into(),
        ));
    }
    let (host, id) = parse_git_address(&p.address)?;
    let Some((owner, repo)) = id.split_once('/') else {
        return Err(PayloadError::InvalidAddress {
            what: "GitHub repository",
            url: redact(&p.address),
        });
    };
    let api = if host == "https://github.com" {
        "https://api.github.com/".to_string()
    } else {
        format!("{host}/api/v3/")
    };
    let state = match event.severity.as_str() {
        SEVERITY_INFO => "success",
        SEVERITY_ERROR => "failure",
        _ => {
            return Err(PayloadError::Missing(
                "can't convert to github state".into(),
            ));
        }
    };
    let description = describe_reason(&event.reason);
    let context = commit_status_context(p, event);
    let auth = format!("Bearer {token}");
    let list = Request {
        method: "GET",
        url: format!("{api}repos/{owner}/{repo}/commits/{sha}/statuses?per_page=50"),
        headers: vec![
            ("Authorization".into(), auth.clone()),
            ("Accept".into(), "application/vnd.github.v3+json".into()),
        ],
        content_type: String::new(),
        body: Vec::new(),
    };
    let post = Request::json(
        format!("{api}repos/{owner}/{repo}/statuses/{sha}"),
        &json!({"state": state, "description": description, "context": context}),
    )
    .header("Authorization", auth)
    .header("Accept", "application/vnd.github.v3+json");
    Ok(Plan::CommitStatus {
        list,
        post,
        context,
        state: state.into(),
        description,
    })
}

/// Whether a GitHub statuses list (newest first) already has this context with the same state
/// and description: the first entry of the context decides, as in Flux.
pub fn is_duplicate_status(list: &Value, context: &str, state: &str, description: &str) -> bool {
    let Some(items) = list.as_array() else {
        return false;
    };
    for s in items {
        let (Some(c), Some(st), Some(d)) = (
            s.get("context").and_then(Value::as_str),
            s.get("state").and_then(Value::as_str),
            s.get("description").and_then(Value::as_str),
        ) else {
            continue;
        };
        if c == context {
            return st == state && d == description;
        }
    }
    false
}
