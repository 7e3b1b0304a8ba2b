//! The chat types beyond Slack, Discord and Teams: Google Chat, Rocket.Chat, Webex, Telegram,
//! Matrix, Lark, Zoom and Zulip, each in the layout of Flux's notifier (field names, emoji, line
//! layout), with the cluster's name in front of the object when the event carries it.

use super::{PayloadError, Plan, ProviderConfig, Request, check_url, cluster_prefix, escape};
use crate::event::{Event, SEVERITY_ERROR};
use serde_json::{Value, json};

/// `kustomization/apps.flux-system`, as most chat types name the object.
fn object(event: &Event) -> String {
    let o = &event.involved_object;
    format!("{}/{}.{}", o.kind.to_lowercase(), o.name, o.namespace)
}

/// Google Chat's card: the object and controller in the header, the message (red for
/// errors), then a key-value widget per metadata entry.
pub(super) fn googlechat(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Google Chat hook", &p.address)?;
    let text = if event.severity == SEVERITY_ERROR {
        format!("<font color=\"#ff0000\">{}</font>", event.message)
    } else {
        event.message.clone()
    };
    let mut sections = vec![json!({
        "header": "",
        "widgets": [{"textParagraph": {"text": text}, "keyValue": null}],
    })];
    if !event.metadata.is_empty() {
        let widgets: Vec<Value> = event
            .metadata
            .iter()
            .map(|(k, v)| {
                json!({"textParagraph": null, "keyValue": {
                    "topLabel": k, "content": v, "contentMultiline": false,
                    "bottomLabel": null, "icon": null,
                }})
            })
            .collect();
        sections.push(json!({"header": "", "widgets": widgets}));
    }
    let body = json!({"cards": [{
        "header": {
            "title": format!("{}{}", cluster_prefix(event), object(event)),
            "subtitle": event.reporting_controller,
            "imageUrl": null,
            "imageStyle": null,
        },
        "sections": sections,
    }]});
    Ok(Plan::Post(Request::json(p.address.clone(), &body)))
}

/// Rocket.Chat's incoming webhook takes Slack's payload, with Flux's blue and red.
pub(super) fn rocket(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Rocket hook", &p.address)?;
    let color = if event.severity == SEVERITY_ERROR {
        "#FF0000"
    } else {
        "#0076D7"
    };
    let fields: Vec<Value> = event
        .metadata
        .iter()
        .map(|(k, v)| json!({"title": k, "value": v, "short": false}))
        .collect();
    let body = json!({
        "channel": p.channel,
        "username": p.username,
        "icon_url": "",
        "icon_emoji": "",
        "attachments": [{
            "fallback": "",
            "color": color,
            "author_name": format!("{}{}", cluster_prefix(event), object(event)),
            "text": event.message,
            "mrkdwn_in": ["text"],
            "fields": fields,
        }],
    });
    Ok(Plan::Post(Request::json(p.address.clone(), &body)))
}

/// Webex' messages API: markdown into the room of `channel`, the bot's token as Bearer.
pub(super) fn webex(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Webex hook", &p.address)?;
    let emoji = if event.severity == SEVERITY_ERROR {
        "💣"
    } else {
        "✅"
    };
    let mut markdown = format!(
        "{emoji} **{}{}**\n{}\n",
        cluster_prefix(event),
        object(event),
        event.message
    );
    for (k, v) in &event.metadata {
        markdown.push_str(&format!(">**{k}**: {v}\n"));
    }
    let body = json!({"roomId": p.channel, "markdown": markdown});
    Ok(Plan::Post(
        Request::json(p.address.clone(), &body)
            .header("Authorization", format!("Bearer {}", p.token)),
    ))
}

/// Telegram's characters that MarkdownV2 needs escaped.
const TELEGRAM_SPECIAL: &str = "\\.-_[]()~>`#+=|{}!*";

/// Escapes Telegram's MarkdownV2 special characters with a backslash.
pub fn telegram_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if TELEGRAM_SPECIAL.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Telegram's Bot API `sendMessage` (the address is Telegram's, the token in its path);
/// `channel` is the chat id, `<chat>:<thread>` for a forum topic.
pub(super) fn telegram(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let emoji = if event.severity == SEVERITY_ERROR {
        "🚨"
    } else {
        "💫"
    };
    let o = &event.involved_object;
    let heading = format!(
        "{emoji} {}{}/{}/{}",
        cluster_prefix(event),
        o.kind.to_lowercase(),
        o.name,
        o.namespace
    );
    let mut metadata = String::new();
    for (k, v) in &event.metadata {
        metadata.push_str(&format!(
            "\\- *{}*: {}\n",
            telegram_escape(k),
            telegram_escape(v)
        ));
    }
    let text = format!(
        "*{}*\n{}\n{metadata}",
        telegram_escape(&heading),
        telegram_escape(&event.message)
    );
    let mut body = serde_json::Map::new();
    let (chat, thread) = match p.channel.split_once(':') {
        Some((chat, thread)) => (chat, Some(thread)),
        None => (p.channel.as_str(), None),
    };
    body.insert("chat_id".into(), json!(chat));
    if let Some(thread) = thread {
        body.insert("message_thread_id".into(), json!(thread));
    }
    body.insert("text".into(), json!(text));
    body.insert("parse_mode".into(), json!("MarkdownV2"));
    let url = format!(
        "https://api.telegram.org/bot{}/sendMessage",
        escape(&p.token, ":")
    );
    Ok(Plan::Post(Request::json(url, &Value::Object(body))))
}

/// Matrix' client API: an `m.text` message PUT into the room of `channel`, the transaction id
/// the SHA-1 of the event JSON (so a retried send is not posted twice).
pub(super) fn matrix(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Matrix homeserver", &p.address)?;
    let txn = crate::sha1::sha1_hex(&serde_json::to_vec(event).unwrap_or_default());
    let emoji = if event.severity == SEVERITY_ERROR {
        "🚨"
    } else {
        "💫"
    };
    let mut metadata = String::new();
    for (k, v) in &event.metadata {
        metadata.push_str(&format!("- {k}: {v}\n"));
    }
    let text = format!(
        "{emoji} {}{}\n{}\n{metadata}",
        cluster_prefix(event),
        object(event),
        event.message
    );
    let url = format!(
        "{}/_matrix/client/r0/rooms/{}/send/m.room.message/{txn}",
        p.address.trim_end_matches('/'),
        p.channel
    );
    let mut request = Request::json(url, &json!({"body": text, "msgtype": "m.text"}))
        .header("Authorization", format!("Bearer {}", p.token));
    request.method = "PUT";
    Ok(Plan::Post(request))
}

/// Lark's (Feishu's) bot webhook: an interactive card, turquoise or red, the message in bold
/// and one `key: value` line per metadata entry.
pub(super) fn lark(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Lark hook", &p.address)?;
    let (emoji, color) = if event.severity == SEVERITY_ERROR {
        ("🚨", "red")
    } else {
        ("💫", "turquoise")
    };
    let mut content = format!("**{}**\n\n", event.message);
    for (k, v) in &event.metadata {
        content.push_str(&format!("{k}: {v}\n"));
    }
    let body = json!({
        "msg_type": "interactive",
        "card": {
            "config": {"wide_screen_mode": true},
            "header": {
                "title": {"tag": "plain_text",
                          "content": format!("{emoji} {}{}", cluster_prefix(event), object(event))},
                "template": color,
            },
            "elements": [{"tag": "div", "text": {"tag": "lark_md", "content": content}}],
        },
    });
    Ok(Plan::Post(Request::json(p.address.clone(), &body)))
}

/// Zoom Team Chat's incoming webhook (`format=full` added unless the address sets a format):
/// the object as head, the severity as sub-head, the message and the metadata as fields; the
/// verification token as `Authorization`.
pub(super) fn zoom(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Zoom incoming webhook", &p.address)?;
    let has_format = p.address.split_once('?').is_some_and(|(_, q)| {
        q.split('&')
            .any(|kv| kv.starts_with("format=") && kv.len() > 7)
    });
    let url = if has_format {
        p.address.clone()
    } else if p.address.contains('?') {
        format!("{}&format=full", p.address)
    } else {
        format!("{}?format=full", p.address)
    };
    let mut body = vec![json!({"type": "message", "text": event.message})];
    if !event.metadata.is_empty() {
        let items: Vec<Value> = event
            .metadata
            .iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect();
        body.push(json!({"type": "fields", "items": items}));
    }
    let payload = json!({"content": {
        "head": {"text": format!("{}{}", cluster_prefix(event), object(event)),
                 "sub_head": {"text": event.severity}},
        "body": body,
    }});
    Ok(Plan::Post(
        Request::json(url, &payload).header("Authorization", p.token.clone()),
    ))
}

/// Zulip's messages API (the address' path replaced by `/api/v1/messages`): a form post to
/// the stream and topic of `channel` (`<stream>/<topic>`), the bot's email and API key as basic
/// auth, the body Flux's markdown status post.
pub(super) fn zulip(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Zulip endpoint", &p.address)?;
    let Some((stream, topic)) = p
        .channel
        .split_once('/')
        .filter(|(s, t)| !s.is_empty() && !t.is_empty())
    else {
        return Err(PayloadError::Missing(format!(
            "invalid Zulip channel format, expected <channel>/<topic>, got '{}'",
            p.channel
        )));
    };
    let (scheme, rest) = p.address.split_once("://").unwrap_or(("https", &p.address));
    let host = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let url = format!("{scheme}://{host}/api/v1/messages");
    let form = |s: &str| escape(s, "").replace("%20", "+");
    // Go's url.Values encodes its keys sorted.
    let body = format!(
        "content={}&to={}&topic={}&type=stream",
        form(&markdown_post(event)),
        form(stream),
        form(topic)
    );
    let mut request = Request::json(url, &Value::Null);
    request.content_type = "application/x-www-form-urlencoded".into();
    request.body = body.into_bytes();
    if !p.username.is_empty() || !p.password.is_empty() {
        request = request.header("Authorization", super::basic_auth(&p.username, &p.password));
    }
    Ok(Plan::Post(request))
}

/// Flux's markdown status post (Zulip): the object, the message, then the metadata sorted,
/// without the change request key.
pub fn markdown_post(event: &Event) -> String {
    let emoji = if event.severity == SEVERITY_ERROR {
        "⚠️"
    } else {
        "ℹ️"
    };
    let o = &event.involved_object;
    let mut metadata = String::new();
    for (k, v) in event
        .metadata
        .iter()
        .filter(|(k, _)| *k != "change_request")
    {
        metadata.push_str(&format!("* `{k}`: {v}\n"));
    }
    format!(
        "## Flux Status\n\n{emoji} {}{}/{}/{}\n\n{}\n\nMetadata:\n{metadata}",
        cluster_prefix(event),
        o.kind,
        o.namespace,
        o.name,
        event.message
    )
}
