//! `fleet serve`: the fleet as a web page. One HTML page (every asset embedded in the binary,
//! no CDN), readable on a phone: the rollup, then one table of every cluster's Kustomizations,
//! HelmReleases and sources (revision, readiness, suspended, behind, message), and a page per
//! cluster with its dependency graph, and the last Kubernetes Events of each cluster's Flux
//! objects (reason, message, age). The page is complete without JavaScript; with it, a few
//! lines subscribe to `/events`, where the server pushes the re-rendered fleet (Server-Sent
//! Events) whenever a watch sees a change — no polling in the page or the server.
//!
//! Read-only. With a token, every request needs `Authorization: Bearer <token>` or
//! `?token=<token>` (EventSource cannot send headers); without, 401.

use crate::live::Live;
use crate::report::ClusterReport;
use crate::rollup::{now, rollup};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("live.js");

/// What the handlers share.
#[derive(Clone)]
struct App {
    live: Arc<Live>,
    token: Option<String>,
}

/// The router serving the page, `/events` and `/cluster/<name>`.
pub fn router(live: Arc<Live>, token: Option<String>) -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/events", get(events))
        .route("/cluster/{name}", get(cluster))
        .with_state(App { live, token })
}

fn authorized(app: &App, headers: &HeaderMap, query: &HashMap<String, String>) -> bool {
    let Some(token) = &app.token else {
        return true;
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    bearer == Some(token.as_str()) || query.get("token") == Some(token)
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "401 Unauthorized: this fleet page needs its token (Authorization: Bearer <token>, or ?token=<token>)\n",
    )
        .into_response()
}

/// `&`, `<`, `>`, `"` escaped for HTML text and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn shell(title: &str, body: &str, script: bool) -> String {
    let js = if script {
        format!("<script>{JS}</script>")
    } else {
        String::new()
    };
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>{body}{js}</body></html>",
        escape(title)
    )
}

/// The part of the page the events replace: the rollup and the table.
pub fn fleet_fragment(reports: &[ClusterReport], token: Option<&str>) -> String {
    let rolled = rollup(reports, now());
    let mut out = String::new();
    out.push_str("<pre class=\"summary\">");
    out.push_str(&escape(&rolled.lines().join("\n")));
    out.push_str("</pre><div class=\"wrap\"><table><thead><tr><th>CLUSTER</th><th>KIND</th><th>NAME</th><th>REVISION</th><th>READY</th><th>SUSPENDED</th><th>LAG</th><th class=\"src\">SOURCE</th><th class=\"msg\">MESSAGE</th></tr></thead><tbody>");
    let link = |c: &str| {
        let q = token.map_or(String::new(), |t| format!("?token={}", escape(t)));
        format!("<a href=\"cluster/{0}{q}\">{0}</a>", escape(c))
    };
    fn row(out: &mut String, class: &str, cells: [&str; 8], cluster: &str) {
        out.push_str(&format!(
            "<tr class=\"{}\"><td>{cluster}</td>",
            escape(class)
        ));
        let classes = ["", "", "", "ready", "", "", "src", "msg"];
        for (cell, class) in cells.iter().zip(classes) {
            if class.is_empty() {
                out.push_str(&format!("<td>{}</td>", escape(cell)));
            } else {
                out.push_str(&format!("<td class=\"{class}\">{}</td>", escape(cell)));
            }
        }
        out.push_str("</tr>");
    }
    for r in reports {
        let c = link(&r.context);
        if let Some(e) = &r.error {
            row(
                &mut out,
                "unreachable",
                [
                    "",
                    "",
                    "",
                    "Unknown",
                    "",
                    "",
                    "",
                    &format!("{}: {e}", r.status),
                ],
                &c,
            );
            continue;
        }
        for k in &r.kustomizations {
            let lag = if k.behind {
                format!(
                    "behind: source has {}",
                    ferroflux_api::short_revision(k.source_revision.as_deref().unwrap_or(""))
                )
            } else {
                String::new()
            };
            row(
                &mut out,
                &k.ready,
                [
                    "Kustomization",
                    &format!("{}/{}", k.namespace, k.name),
                    &ferroflux_api::short_revision(k.applied_revision.as_deref().unwrap_or("")),
                    &k.ready,
                    if k.suspended { "True" } else { "False" },
                    &lag,
                    &k.source,
                    &k.message,
                ],
                &c,
            );
        }
        for h in &r.helm_releases {
            row(
                &mut out,
                &h.ready,
                [
                    "HelmRelease",
                    &format!("{}/{}", h.namespace, h.name),
                    h.revision.as_deref().unwrap_or(""),
                    &h.ready,
                    if h.suspended { "True" } else { "False" },
                    "",
                    "",
                    &h.message,
                ],
                &c,
            );
        }
        for s in &r.sources {
            row(
                &mut out,
                &s.ready,
                [
                    &s.kind,
                    &format!("{}/{}", s.namespace, s.name),
                    &ferroflux_api::short_revision(s.revision.as_deref().unwrap_or("")),
                    &s.ready,
                    if s.suspended { "True" } else { "False" },
                    "",
                    &s.origin,
                    &s.message,
                ],
                &c,
            );
        }
    }
    out.push_str("</tbody></table></div>");
    out.push_str(&events_table(reports, now()));
    out
}

/// The last Events of every cluster (newest first within a cluster), or nothing when no
/// cluster has any. Each age is also a `<time datetime>` the page's script keeps current.
fn events_table(reports: &[ClusterReport], now: i64) -> String {
    if reports.iter().all(|r| r.events.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "<h2>Last events</h2><div class=\"wrap\"><table class=\"events\"><thead><tr><th>CLUSTER</th><th>AGE</th><th>TYPE</th><th>OBJECT</th><th>REASON</th><th class=\"msg\">MESSAGE</th></tr></thead><tbody>",
    );
    for r in reports {
        for e in &r.events {
            let at = e
                .last_seen
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            let age = match at {
                Some(t) => format!(
                    "<time datetime=\"{}\">{}</time>",
                    escape(&t.to_string()),
                    crate::rollup::age(now - t.as_second())
                ),
                None => String::new(),
            };
            let count = if e.count > 1 {
                format!(" (x{})", e.count)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "<tr class=\"{}\"><td>{}</td><td>{age}{count}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"msg\">{}</td></tr>",
                escape(&e.type_),
                escape(&r.context),
                escape(&e.type_),
                escape(&e.object),
                escape(&e.reason),
                escape(&e.message)
            ));
        }
    }
    out.push_str("</tbody></table></div>");
    out
}

async fn index(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&app, &headers, &query) {
        return unauthorized();
    }
    let reports = app.live.reports();
    let body = format!(
        "<h1>Fleet: {} clusters</h1><div id=\"fleet\">{}</div>",
        reports.len(),
        fleet_fragment(&reports, app.token.as_deref())
    );
    Html(shell("ferroflux fleet", &body, true)).into_response()
}

async fn cluster(
    State(app): State<App>,
    Path(name): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&app, &headers, &query) {
        return unauthorized();
    }
    let reports = app.live.reports();
    let Some(r) = reports.iter().find(|r| r.context == name) else {
        return (StatusCode::NOT_FOUND, format!("no cluster {name}\n")).into_response();
    };
    let mut body = format!(
        "<h1>{} — dependency graph</h1><p>status: {}</p><ul>",
        escape(&r.context),
        escape(&r.status)
    );
    let items = r
        .kustomizations
        .iter()
        .map(|k| {
            (
                "Kustomization",
                &k.namespace,
                &k.name,
                &k.depends_on,
                &k.ready,
                Some(&k.source),
            )
        })
        .chain(r.helm_releases.iter().map(|h| {
            (
                "HelmRelease",
                &h.namespace,
                &h.name,
                &h.depends_on,
                &h.ready,
                None,
            )
        }));
    for (kind, ns, n, deps, ready, source) in items {
        let deps = if deps.is_empty() {
            String::new()
        } else {
            format!(" ← depends on {}", deps.join(", "))
        };
        let source = source.map_or(String::new(), |s| format!(" ← source {s}"));
        body.push_str(&format!(
            "<li>{kind} {}/{} (Ready {}){}{}</li>",
            escape(ns),
            escape(n),
            escape(ready),
            escape(&deps),
            escape(&source)
        ));
    }
    body.push_str("</ul>");
    Html(shell(&format!("{name} — ferroflux fleet"), &body, false)).into_response()
}

async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&app, &headers, &query) {
        return unauthorized();
    }
    let rx = app.live.subscribe();
    let stream =
        futures::stream::unfold((rx, app, String::new()), |(mut rx, app, last)| async move {
            loop {
                // A change anywhere: render, and send only when the fragment differs.
                rx.changed().await.ok()?;
                let fragment = fleet_fragment(&app.live.reports(), app.token.as_deref());
                if fragment != last {
                    let event = Event::default().event("fleet").data(fragment.clone());
                    return Some((Ok::<_, Infallible>(event), (rx, app, fragment)));
                }
            }
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
