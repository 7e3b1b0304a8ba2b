//! Watches: a chunked stream of `{"type":…,"object":…}` lines (or, for a client that prefers
//! protobuf, length-prefixed `WatchEvent` frames), resumable from a resourceVersion, with
//! bookmarks, selector transitions and `410 Gone` for versions older than the kept history.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::{App, Req, event_line, selectors, watch_response};
use crate::error::ApiError;
use crate::resources::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Event, EventType};

struct Filter {
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, o: &Value) -> bool {
        self.labels.matches(o) && self.fields.matches(o)
    }

    /// What a client filtering by selectors sees of this event, if anything.
    fn translate(&self, e: &Event) -> Option<EventType> {
        if let Some(ns) = &self.ns
            && &e.namespace != ns
        {
            return None;
        }
        let now = self.matches(&e.object);
        let before = e.prev.as_deref().is_some_and(|p| self.matches(p));
        match e.kind {
            EventType::Added => now.then_some(EventType::Added),
            EventType::Deleted => (now || before).then_some(EventType::Deleted),
            EventType::Modified => match (before, now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            },
        }
    }
}

fn bookmark(res_kind: &str, api_version: &str, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if initial_end {
        meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    json!({ "kind": res_kind, "apiVersion": api_version, "metadata": meta })
}

pub fn watch(
    app: &Arc<App>,
    r: &Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(q, &r.res)?;
    let filter = Filter {
        ns: r.ns.clone(),
        labels,
        fields,
    };
    let send_initial = super::query_bool(q, "sendInitialEvents");
    let from = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(_) if send_initial => None,
        Some(v) => Some(v.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion: Invalid value: {v:?}: must be an integer"
            ))
        })?),
    };
    let bookmarks = super::query_bool(q, "allowWatchBookmarks");
    // Protobuf frames for a client that asks for them first, where the kind has a protobuf form
    // (custom resources have none: their watch stays JSON).
    let protobuf = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::protobuf::prefers_protobuf)
        && crate::protobuf::has_message(&r.res.api_version(&r.version), &r.res.kind);
    let framing = if protobuf {
        Framing::Protobuf
    } else {
        Framing::Json
    };
    let timeout = match q.get("timeoutSeconds").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("timeoutSeconds: invalid value {t:?}"))
        })?)),
    };
    let key = r.res.key();
    let start = match app.store.watch(&key, r.ns.as_deref(), from) {
        Ok(s) => s,
        // Like the API server: once the version parsed, the watch opens and says what is wrong
        // with it (410 Gone, 504 too large) as its only event.
        Err(e) if matches!(e.code, 410 | 504) => {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            let _ = tx.try_send(framing.event("ERROR", &e.status()));
            return Ok(framing.response(rx));
        }
        Err(e) => return Err(e),
    };
    let res = r.res.clone();
    let version = r.version.clone();
    let api_version = res.api_version(&version);
    let mut shutdown = app.shutdown.clone();
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(async move {
        let line = |kind: &str, res: &Resource, version: &str, e: &Event| -> bytes::Bytes {
            match &e.json {
                Some(json)
                    if framing == Framing::Json
                        && super::serves_as_stored(res, version, &e.object) =>
                {
                    super::event_line_json(kind, json)
                }
                _ => framing.event(kind, &super::for_version(res, version, &e.object)),
            }
        };
        let mut last_rv = start.rv;
        for e in &start.backlog {
            if let Some(t) = filter.translate(e)
                && tx.send(line(t.as_str(), &res, &version, e)).await.is_err()
            {
                return;
            }
            last_rv = last_rv.max(e.rv);
        }
        if send_initial || bookmarks {
            let b = bookmark(&res.kind, &api_version, last_rv, send_initial);
            if tx.send(framing.event("BOOKMARK", &b)).await.is_err() {
                return;
            }
        }
        let mut rx_events = start.rx;
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut tick = tokio::time::interval(super::bookmark_interval());
        tick.tick().await;
        loop {
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ev = rx_events.recv() => match ev {
                    Ok(e) => {
                        if e.key != key || e.rv <= last_rv {
                            continue;
                        }
                        last_rv = e.rv;
                        if let Some(t) = filter.translate(&e)
                            && tx.send(line(t.as_str(), &res, &version, &e)).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        let status = ApiError::gone("the watch fell too far behind; too old resource version").status();
                        let _ = tx.send(framing.event("ERROR", &status)).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = tick.tick(), if bookmarks => {
                    if tx.send(framing.event("BOOKMARK", &bookmark(&res.kind, &api_version, last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = sleep => return,
                _ = tx.closed() => return,
                _ = shutdown.changed() => return,
            }
        }
    });
    Ok(framing.response(rx))
}

/// How a watch stream's events are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Json,
    Protobuf,
}

impl Framing {
    fn event(self, kind: &str, obj: &Value) -> bytes::Bytes {
        match self {
            Framing::Json => event_line(kind, obj),
            Framing::Protobuf => match crate::protobuf::watch_frame(kind, obj) {
                Ok(f) => bytes::Bytes::from(f),
                // The stream is protobuf: what cannot be encoded is reported in it.
                Err(e) => {
                    let status = ApiError::internal(format!(
                        "cannot encode a watch event as protobuf: {}",
                        e.0
                    ))
                    .status();
                    bytes::Bytes::from(
                        crate::protobuf::watch_frame("ERROR", &status).unwrap_or_default(),
                    )
                }
            },
        }
    }

    fn response(self, rx: tokio::sync::mpsc::Receiver<bytes::Bytes>) -> Response {
        let mut resp = watch_response(rx);
        if self == Framing::Protobuf {
            resp.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static(crate::protobuf::WATCH_CONTENT_TYPE),
            );
        }
        resp
    }
}
