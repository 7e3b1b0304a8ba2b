//! The alerting and incident types: Prometheus Alertmanager, Grafana annotations, PagerDuty,
//! Opsgenie, incident.io and Datadog events, in the layout of Flux's notifier. The cluster's name travels in the metadata
//! (labels, tags, details) and, where the type has a human summary, in front of the object.

use super::{
    PayloadError, Plan, ProviderConfig, Request, basic_auth, check_url, cluster_prefix,
    commit::describe_reason, hex,
};
use crate::event::{Event, SEVERITY_ERROR, SEVERITY_INFO};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Go's `cases.Title`: each word's first letter upper case, the rest lower case
/// (`ReconciliationSucceeded` → `Reconciliationsucceeded`, as Flux's alert names read).
fn title_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || c == '\'' {
            if start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
    out
}

fn unix_seconds(event: &Event) -> Result<i64, PayloadError> {
    event
        .timestamp
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_second())
        .map_err(|_| {
            PayloadError::Missing(format!(
                "invalid event timestamp {:?}: expected RFC 3339",
                event.timestamp
            ))
        })
}

/// Alertmanager's `/api/v2/alerts`: one firing alert whose labels are the metadata plus the
/// object, reason and severity; `summary` becomes an annotation beside the message.
pub(super) fn alertmanager(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Alertmanager", &p.address)?;
    let mut labels = event.metadata.clone();
    let mut annotations = BTreeMap::from([("message".to_string(), event.message.clone())]);
    if let Some(summary) = labels.remove("summary") {
        annotations.insert("summary".into(), summary);
    }
    let o = &event.involved_object;
    labels.insert(
        "alertname".into(),
        format!("Flux{}{}", o.kind, title_case(&event.reason)),
    );
    labels.insert("severity".into(), event.severity.clone());
    labels.insert("reason".into(), event.reason.clone());
    labels.insert("kind".into(), o.kind.clone());
    labels.insert("name".into(), o.name.clone());
    labels.insert("namespace".into(), o.namespace.clone());
    labels.insert(
        "reportingcontroller".into(),
        event.reporting_controller.clone(),
    );
    // Flux sends Go's zero time as `endsAt`, which Alertmanager reads as "not set".
    let body = json!([{
        "status": "firing",
        "labels": labels,
        "annotations": annotations,
        "startsAt": event.timestamp,
        "endsAt": "0001-01-01T00:00:00Z",
    }]);
    let mut request = Request::json(p.address.clone(), &body);
    // Flux sets the bearer token first and basic auth over it: basic wins when both are set.
    if !p.username.is_empty() && !p.password.is_empty() {
        request = request.header("Authorization", basic_auth(&p.username, &p.password));
    } else if !p.token.is_empty() {
        request = request.header("Authorization", format!("Bearer {}", p.token));
    }
    Ok(Plan::Post(request))
}

/// Grafana's annotations API: the object as text, tagged `flux`, the controller, each
/// metadata entry (`key: value`, colons in them turned into `|`) and the object's identity.
pub(super) fn grafana(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Grafana", &p.address)?;
    let o = &event.involved_object;
    let mut tags = vec!["flux".to_string(), event.reporting_controller.clone()];
    for (k, v) in &event.metadata {
        tags.push(format!("{}: {}", k.replace(':', "|"), v.replace(':', "|")));
    }
    tags.push(format!("kind: {}", o.kind));
    tags.push(format!("name: {}", o.name));
    tags.push(format!("namespace: {}", o.namespace));
    let body = json!({
        "when": unix_seconds(event)?,
        "text": format!("{}{}/{}.{}", cluster_prefix(event), o.kind.to_lowercase(), o.name, o.namespace),
        "tags": tags,
    });
    let mut request = Request::json(p.address.clone(), &body);
    if !p.token.is_empty() {
        request = request.header("Authorization", format!("Bearer {}", p.token));
    } else if !p.username.is_empty() && !p.password.is_empty() {
        request = request.header("Authorization", basic_auth(&p.username, &p.password));
    }
    Ok(Plan::Post(request))
}

/// PagerDuty's Events API v2 at the address' host: an error triggers an incident keyed by the
/// object's UID, an info event resolves it and is also recorded as a change event;
/// `Progressing` events are not sent. `channel` is the integration's routing key.
pub(super) fn pagerduty(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("PagerDuty endpoint", &p.address)?;
    if event.reason == "Progressing" {
        return Ok(Plan::Skip("progressing events are not sent to PagerDuty"));
    }
    let endpoint = crate::send::service_of(&p.address);
    let o = &event.involved_object;
    let summary = format!(
        "{}{}: {}",
        cluster_prefix(event),
        describe_reason(&event.reason),
        format!("{}/{}", o.kind, o.name).to_lowercase()
    );
    let source = format!("Flux {}", event.reporting_controller);
    let details = json!({"message": event.message, "metadata": event.metadata});
    let mut alert = serde_json::Map::new();
    alert.insert("routing_key".into(), json!(p.channel));
    if event.severity == SEVERITY_ERROR {
        alert.insert("event_action".into(), json!("trigger"));
        alert.insert("dedup_key".into(), json!(o.uid));
        alert.insert(
            "payload".into(),
            json!({
                "summary": summary,
                "source": source,
                "severity": "error",
                "timestamp": event.timestamp,
                "component": o.name,
                "group": o.kind,
                "custom_details": details,
            }),
        );
    } else {
        alert.insert("event_action".into(), json!("resolve"));
        alert.insert("dedup_key".into(), json!(o.uid));
    }
    if o.uid.is_empty() {
        alert.remove("dedup_key");
    }
    let mut requests = vec![Request::json(
        format!("{endpoint}/v2/enqueue"),
        &Value::Object(alert),
    )];
    if event.severity == SEVERITY_INFO {
        requests.push(Request::json(
            format!("{endpoint}/v2/change/enqueue"),
            &json!({
                "routing_key": p.channel,
                "payload": {
                    "summary": summary,
                    "source": source,
                    "timestamp": event.timestamp,
                    "custom_details": details,
                },
            }),
        ));
    }
    Ok(Plan::Sequence(requests))
}

/// Flux's Opsgenie alias: the SHA-256 of provider UID, object and reason, so repeated events
/// for one object and reason update one alert.
pub fn opsgenie_alias(provider_uid: &str, event: &Event) -> String {
    let o = &event.involved_object;
    let key = format!(
        "{provider_uid}/{}/{}/{}/{}",
        o.kind, o.namespace, o.name, event.reason
    );
    hex(&Sha256::digest(key.as_bytes()))
}

/// Opsgenie's alert API: `Kind/name` as the message, the event message as description, the
/// metadata and severity as details, the API key (`token`) as `GenieKey`.
pub(super) fn opsgenie(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Opsgenie hook", &p.address)?;
    let o = &event.involved_object;
    let mut details = event.metadata.clone();
    details.insert("severity".into(), event.severity.clone());
    let body = json!({
        "message": format!("{}{}/{}", cluster_prefix(event), o.kind, o.name),
        "alias": opsgenie_alias(&p.uid, event),
        "description": event.message,
        "details": details,
    });
    Ok(Plan::Post(
        Request::json(p.address.clone(), &body)
            .header("Authorization", format!("GenieKey {}", p.token)),
    ))
}

/// incident.io's HTTP alert source: firing on error, resolved otherwise (keyed by the object's
/// UID), the metadata with severity, reason and controller; `Progressing` events are not sent.
pub(super) fn incidentio(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("incident.io alert source", &p.address)?;
    if event.reason == "Progressing" {
        return Ok(Plan::Skip("progressing events are not sent to incident.io"));
    }
    let o = &event.involved_object;
    let mut metadata = event.metadata.clone();
    metadata.insert("severity".into(), event.severity.clone());
    metadata.insert("reason".into(), event.reason.clone());
    if !event.reporting_controller.is_empty() {
        metadata.insert(
            "reportingController".into(),
            event.reporting_controller.clone(),
        );
    }
    let body = json!({
        "title": format!("{}{}/{}.{}: {}", cluster_prefix(event), o.kind.to_lowercase(), o.name,
                         o.namespace, event.reason),
        "status": if event.severity == SEVERITY_ERROR { "firing" } else { "resolved" },
        "deduplication_key": o.uid,
        "description": event.message,
        "metadata": metadata,
    });
    Ok(Plan::Post(
        Request::json(p.address.clone(), &body)
            .header("Authorization", format!("Bearer {}", p.token)),
    ))
}

/// Datadog's events API (`/api/v1/events` at the address' host), the API key (`token`) as
/// `DD-API-KEY`: the object as title, the message as text, tags in lower case.
pub(super) fn datadog(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    check_url("Datadog", &p.address)?;
    let o = &event.involved_object;
    let mut tags = vec![
        format!("flux_reporting_controller:{}", event.reporting_controller),
        format!("flux_reason:{}", event.reason),
        format!("kube_kind:{}", o.kind),
        format!("kube_name:{}", o.name),
        format!("kube_namespace:{}", o.namespace),
    ];
    for (k, v) in &event.metadata {
        tags.push(format!("{k}:{v}"));
    }
    let tags: Vec<String> = tags.iter().map(|t| t.to_lowercase()).collect();
    let body = json!({
        "alert_type": if event.severity == SEVERITY_ERROR { "error" } else { "info" },
        "date_happened": unix_seconds(event)?,
        "source_type_name": "fluxcd",
        "tags": tags,
        "text": event.message,
        "title": format!("{}Events from the {} {}/{}", cluster_prefix(event), o.kind, o.name, o.namespace),
    });
    let url = format!("{}/api/v1/events", crate::send::service_of(&p.address));
    Ok(Plan::Post(
        Request::json(url, &body).header("DD-API-KEY", p.token.clone()),
    ))
}
