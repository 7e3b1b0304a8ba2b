//! `fleet serve`: the fleet as a web page. One HTML page (every asset embedded in the binary,
//! no CDN), readable on a phone: the rollup, then one table of every cluster's Kustomizations,
//! HelmReleases and sources (revision, readiness, suspended, behind, message) — one section per
//! cluster, which the browser lays out only as it nears the screen ([`cluster_section`]) — and a
//! page per cluster with its dependency graph, and the last Kubernetes Events of each cluster's
//! Flux objects (reason, message, age). The page is complete without JavaScript; with it, a few
//! lines subscribe to `/events`, where the server pushes what changed (Server-Sent Events)
//! whenever a watch sees a change — no polling in the page.
//!
//! A large fleet is served in pages of whole clusters ([`PAGE_ROWS`] rows, `?from=N`): what the
//! browser parses before its first paint is the first page, whatever the fleet's size. With
//! JavaScript, a page holding part of the fleet asks `/events` for the whole fleet once it is
//! painted; without, each page links to the next.
//!
//! The page is rendered once per change, not per request: a task renders it when the watches
//! report a change (and every [`AGES_EVERY`], the ages it shows being relative to now), keeps
//! the bytes, and every `GET /` is a copy of them. Each rendering is versioned; its parts (the
//! rollup, each cluster's rows, each cluster's events) carry element ids, and an `/events`
//! subscriber gets only the parts that differ from the rendering it had (`parts`), or the
//! whole fleet (`fleet`) when the page's layout changed or it comes with no known version.
//! The SSE `id` is the version, so a reconnecting page (`Last-Event-ID`) or a page just
//! loaded (`?since=`, the version it was rendered at) misses nothing in between.
//!
//! Read-only. With a token, every request needs `Authorization: Bearer <token>` or
//! `?token=<token>` (EventSource cannot send headers); without, 401.

use crate::live::Live;
use crate::report::ClusterReport;
use crate::rollup::{now, rollup};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("live.js");

/// How often the page is rendered again without a change: the ages it shows ("40 s",
/// "3 min") are relative to the time of rendering. A rendering equal to the last is not sent.
pub const AGES_EVERY: Duration = Duration::from_secs(10);

/// What the handlers share.
#[derive(Clone)]
struct App {
    live: Arc<Live>,
    token: Option<String>,
    rendered: watch::Receiver<Arc<Rendered>>,
}

/// How many rows a page holds unless told ([`router`]'s `page_rows`): a desktop's first
/// screen a few times over, few enough that the browser paints the first page quickly
/// whatever the fleet's size (BENCHMARKS.md, "fleet serve").
pub const PAGE_ROWS: usize = 100;

/// The router serving the page, `/events` and `/cluster/<name>`, its pages holding
/// `page_rows` rows (whole clusters, at least one). Starts the task that renders the page on
/// every change (on the current tokio runtime; it ends with the router).
pub fn router(live: Arc<Live>, token: Option<String>, page_rows: usize) -> axum::Router {
    let rendered = spawn_renderer(live.clone(), token.clone(), page_rows);
    axum::Router::new()
        .route("/", get(index))
        .route("/events", get(events))
        .route("/cluster/{name}", get(cluster))
        .with_state(App {
            live,
            token,
            rendered,
        })
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

/// One rendering of the fleet.
pub struct Rendered {
    /// Counts renderings that differ: 1 for the first.
    pub version: u64,
    /// The page of `GET /`: the fleet's first page ([`Rendered::page_from`] 0), kept as bytes.
    pub page: Bytes,
    /// What `#fleet` holds when the page shows the whole fleet: the rollup, the table, the
    /// events. The `/events` stream's `fleet` event.
    pub fragment: String,
    /// The parts of the fragment by element id, in page order: `summary`, then `k<i>` (cluster
    /// i's section of rows), then `e<i>` (cluster i's events) when the events table is shown.
    pub parts: Vec<(String, String)>,
    /// How many rows each cluster's section holds, in order.
    rows: Vec<usize>,
    /// Whether the events table is shown.
    with_events: bool,
    /// The rows a page holds (whole clusters, at least one).
    page_rows: usize,
    /// `?token=` to carry in links, escaped, or empty.
    token_query: String,
}

impl Rendered {
    /// The parts of `self` that differ from `before`, or None when the layout differs (a
    /// part added or removed: the events table appearing).
    pub fn changed_since<'a>(&'a self, before: &Rendered) -> Option<Vec<&'a (String, String)>> {
        let same_layout = self.parts.len() == before.parts.len()
            && self
                .parts
                .iter()
                .zip(&before.parts)
                .all(|(a, b)| a.0 == b.0);
        if !same_layout {
            return None;
        }
        Some(
            self.parts
                .iter()
                .zip(&before.parts)
                .filter(|(a, b)| a.1 != b.1)
                .map(|(a, _)| a)
                .collect(),
        )
    }
}

impl Rendered {
    /// The clusters of the page starting at cluster `from`: the next ones until the page holds
    /// `page_rows` rows, and at least one.
    fn page_range(&self, from: usize) -> std::ops::Range<usize> {
        let mut end = from;
        let mut rows = 0;
        while end < self.rows.len() && (end == from || rows < self.page_rows) {
            rows += self.rows[end];
            end += 1;
        }
        from..end
    }

    /// The page starting at cluster `from` (0: the first page, `GET /`): the rollup, the
    /// sections of its clusters and their events, and, when it does not hold the whole fleet,
    /// links to the first page and the next. With JavaScript such a page loads the rest of the
    /// fleet over `/events` once painted (`data-partial`); without, the links page through it.
    /// None when the fleet has no cluster `from` (and `from` is not 0).
    pub fn page_from(&self, from: usize) -> Option<String> {
        if from > 0 && from >= self.rows.len() {
            return None;
        }
        let range = self.page_range(from);
        let whole = range.start == 0 && range.end == self.rows.len();
        let pager = (!whole).then(|| self.pager(&range));
        let fragment = fleet_fragment(&self.parts, self.rows.len(), self.with_events, range, pager);
        let partial = if whole { "" } else { " data-partial" };
        let body = format!(
            "<h1>Fleet: {} clusters</h1><div id=\"fleet\" data-version=\"{}\"{partial}>{fragment}</div>",
            self.rows.len(),
            self.version
        );
        Some(shell("ferroflux fleet", &body, true))
    }

    /// Where a page of `range` stands among the fleet's pages, linked to the first and the next.
    fn pager(&self, range: &std::ops::Range<usize>) -> String {
        let token = self.token_query.replacen('?', "&amp;", 1);
        let mut out = format!(
            "<nav class=\"pages\">{} of {}",
            clusters_label(range, "Cluster", "Clusters"),
            self.rows.len()
        );
        if range.start > 0 {
            out.push_str(&format!(" · <a href=\"?from=0{token}\">first clusters</a>"));
        }
        if range.end < self.rows.len() {
            let next = self.page_range(range.end);
            out.push_str(&format!(
                " · <a href=\"?from={}{token}\">{} →</a>",
                next.start,
                clusters_label(&next, "cluster", "clusters")
            ));
        }
        out.push_str("</nav>");
        out
    }
}

/// "clusters 3–4", or "cluster 5" for one (numbered from 1).
fn clusters_label(range: &std::ops::Range<usize>, one: &str, several: &str) -> String {
    if range.len() == 1 {
        format!("{one} {}", range.end)
    } else {
        format!("{several} {}–{}", range.start + 1, range.end)
    }
}

/// What `#fleet` holds for the clusters of `range`: the rollup, their sections under the
/// table's heading, their events (when the fleet's events table is shown), then `pager`.
fn fleet_fragment(
    parts: &[(String, String)],
    clusters: usize,
    with_events: bool,
    range: std::ops::Range<usize>,
    pager: Option<String>,
) -> String {
    let sections = &parts[1 + range.start..1 + range.end];
    let events = if with_events {
        &parts[1 + clusters + range.start..1 + clusters + range.end]
    } else {
        &[]
    };
    let size = parts[0].1.len()
        + sections
            .iter()
            .chain(events)
            .map(|p| p.1.len())
            .sum::<usize>()
        + 1024;
    let mut fragment = String::with_capacity(size);
    fragment.push_str(&parts[0].1);
    fragment.push_str("<div class=\"wrap\"><div class=\"fleet\"><table class=\"head\"><thead><tr><th>CLUSTER</th><th>KIND</th><th>NAME</th><th>REVISION</th><th>READY</th><th>SUSPENDED</th><th>LAG</th><th class=\"src\">SOURCE</th><th class=\"msg\">MESSAGE</th></tr></thead></table>");
    for (_, section) in sections {
        fragment.push_str(section);
    }
    fragment.push_str("</div></div>");
    if with_events {
        fragment.push_str("<section class=\"later\"><h2>Last events</h2><div class=\"wrap\"><table class=\"events\"><thead><tr><th>CLUSTER</th><th>AGE</th><th>TYPE</th><th>OBJECT</th><th>REASON</th><th class=\"msg\">MESSAGE</th></tr></thead>");
        for (_, rows) in events {
            fragment.push_str(rows);
        }
        fragment.push_str("</table></div></section>");
    }
    if let Some(pager) = pager {
        fragment.push_str(&pager);
    }
    fragment
}

/// The fleet rendered at `now` (seconds since the epoch) as version `version`, its pages
/// holding `page_rows` rows.
pub fn render(
    reports: &[ClusterReport],
    token: Option<&str>,
    now: i64,
    version: u64,
    page_rows: usize,
) -> Rendered {
    let rolled = rollup(reports, now);
    let mut parts = Vec::with_capacity(1 + 2 * reports.len());
    parts.push((
        "summary".to_string(),
        format!(
            "<pre class=\"summary\" id=\"summary\">{}</pre>",
            escape(&rolled.lines().join("\n"))
        ),
    ));
    let mut rows = Vec::with_capacity(reports.len());
    for (i, r) in reports.iter().enumerate() {
        let id = format!("k{i}");
        let (html, count) = cluster_rows(r, token);
        parts.push((id.clone(), cluster_section(&id, &html, count)));
        rows.push(count.max(1));
    }
    let with_events = reports.iter().any(|r| !r.events.is_empty());
    if with_events {
        for (i, r) in reports.iter().enumerate() {
            let id = format!("e{i}");
            let rows = event_rows(r, now);
            parts.push((id.clone(), format!("<tbody id=\"{id}\">{rows}</tbody>")));
        }
    }
    let fragment = fleet_fragment(&parts, reports.len(), with_events, 0..reports.len(), None);
    let mut rendered = Rendered {
        version,
        page: Bytes::new(),
        fragment,
        parts,
        rows,
        with_events,
        page_rows,
        token_query: token.map_or(String::new(), |t| format!("?token={}", escape(t))),
    };
    if let Some(first) = rendered.page_from(0) {
        rendered.page = Bytes::from(first);
    }
    rendered
}

/// Renders the page now and again on every change the watches report (and every
/// [`AGES_EVERY`]), off the async executor; a rendering is published only when it differs
/// from the last. Several changes during one rendering make one more rendering, not several.
fn spawn_renderer(
    live: Arc<Live>,
    token: Option<String>,
    page_rows: usize,
) -> watch::Receiver<Arc<Rendered>> {
    let mut changes = live.subscribe();
    changes.borrow_and_update();
    let first = render(&live.reports(), token.as_deref(), now(), 1, page_rows);
    let (tx, rx) = watch::channel(Arc::new(first));
    tokio::spawn(async move {
        let mut ages =
            tokio::time::interval_at(tokio::time::Instant::now() + AGES_EVERY, AGES_EVERY);
        ages.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = ages.tick() => {}
                () = tx.closed() => return,
            }
            let last = tx.borrow().clone();
            let (live, token) = (live.clone(), token.clone());
            let next = tokio::task::spawn_blocking(move || {
                render(
                    &live.reports(),
                    token.as_deref(),
                    now(),
                    last.version + 1,
                    page_rows,
                )
            })
            .await;
            let Ok(next) = next else { return };
            // A rendering equal to the last (an event that changes nothing shown) is not one.
            tx.send_if_modified(|current| {
                if current.fragment == next.fragment {
                    return false;
                }
                *current = Arc::new(next);
                true
            });
        }
    });
    rx
}

/// What a row off screen is assumed to measure, in CSS pixels: three lines of 14 px text at
/// 1.4 with padding and border, as rows lay out at a desktop's width (a Flux message, a source
/// or a name of the shared columns wraps to two or three lines). Too small an assumption
/// makes the browser lay out the sections that would then seem to fit the first screen, all
/// before its first paint; too large a one only lengthens the scroll bar until they are seen
/// (a section measured once keeps its real height: `auto`).
const ROW_HEIGHT: usize = 60;

/// One cluster's rows as a section of their own: a table with the page's column widths
/// (`table-layout: fixed`, so it is laid out without measuring its cells) in a box that the
/// browser does not lay out or paint until it nears the screen (`content-visibility: auto`),
/// assumed `rows` rows high until then. So the first paint costs the first screen's clusters,
/// not the fleet's; the text is in the document all along (find in page, no JavaScript).
fn cluster_section(id: &str, rows: &str, count: usize) -> String {
    format!(
        "<section id=\"{id}\" style=\"contain-intrinsic-size:auto {}px\"><table><tbody>{rows}</tbody></table></section>",
        count.max(1) * ROW_HEIGHT
    )
}

/// The rows of one cluster: its Kustomizations, HelmReleases and sources, or one row saying
/// why it is not known; and how many rows.
fn cluster_rows(r: &ClusterReport, token: Option<&str>) -> (String, usize) {
    let mut out = String::new();
    let c = {
        let q = token.map_or(String::new(), |t| format!("?token={}", escape(t)));
        format!("<a href=\"cluster/{0}{q}\">{0}</a>", escape(&r.context))
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
        return (out, 1);
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
    (
        out,
        r.kustomizations.len() + r.helm_releases.len() + r.sources.len(),
    )
}

/// The last Events of one cluster (newest first). Each age is also a `<time datetime>` the
/// page's script keeps current.
fn event_rows(r: &ClusterReport, now: i64) -> String {
    let mut out = String::new();
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
    out
}

/// `GET /`: the last rendering's first page (its bytes shared, not copied); `?from=N`, the
/// page starting at cluster N (rendered from the last rendering's parts).
async fn index(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&app, &headers, &query) {
        return unauthorized();
    }
    let rendered = app.rendered.borrow().clone();
    let from = match query.get("from").map(|f| (f, f.parse::<usize>())) {
        None | Some((_, Ok(0))) => return Html(rendered.page.clone()).into_response(),
        Some((_, Ok(from))) => from,
        Some((given, Err(_))) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("from: expected the index of a cluster (0 for the first), got {given:?}\n"),
            )
                .into_response();
        }
    };
    match rendered.page_from(from) {
        Some(page) => Html(page).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            format!(
                "no cluster at index {from}: the fleet has {} clusters\n",
                rendered.rows.len()
            ),
        )
            .into_response(),
    }
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

/// The SSE event bringing a page to `rendered`: the whole fleet.
fn whole(rendered: &Rendered) -> Event {
    Event::default()
        .event("fleet")
        .id(rendered.version.to_string())
        .data(rendered.fragment.as_str())
}

/// The SSE event bringing a page from `before` to `now`: the parts that differ (a JSON list
/// of `[id, html]`), the whole fleet when the layout differs, nothing when nothing does.
fn delta(before: &Rendered, now: &Rendered) -> Option<Event> {
    let Some(parts) = now.changed_since(before) else {
        return Some(whole(now));
    };
    if parts.is_empty() {
        return None;
    }
    let data = serde_json::to_string(&parts).ok()?;
    Some(
        Event::default()
            .event("parts")
            .id(now.version.to_string())
            .data(data),
    )
}

/// `/events`: from the version the page has (`Last-Event-ID` when the browser reconnects,
/// else `?since=`), what changed, then each change as it is rendered. A page of an unknown
/// version gets the whole fleet first.
async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&app, &headers, &query) {
        return unauthorized();
    }
    let since: Option<u64> = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .or(query.get("since").map(String::as_str))
        .and_then(|v| v.trim().parse().ok());
    let mut rx = app.rendered.clone();
    let current = rx.borrow_and_update().clone();
    let first = (since != Some(current.version)).then(|| whole(&current));
    let stream =
        futures::stream::unfold((rx, current, first), |(mut rx, last, first)| async move {
            if let Some(event) = first {
                return Some((Ok::<_, Infallible>(event), (rx, last, None)));
            }
            loop {
                rx.changed().await.ok()?;
                let next = rx.borrow_and_update().clone();
                if let Some(event) = delta(&last, &next) {
                    return Some((Ok(event), (rx, next, None)));
                }
            }
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::EventReport;

    fn fleet(messages: &[&str]) -> Vec<ClusterReport> {
        messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                ClusterReport::unreachable(
                    &format!("c{i}"),
                    "https://c",
                    "unreachable",
                    m.to_string(),
                )
            })
            .collect()
    }

    fn event(message: &str) -> EventReport {
        EventReport {
            object: "Kustomization/flux-system/apps".into(),
            type_: "Warning".into(),
            reason: "BuildFailed".into(),
            message: message.into(),
            last_seen: Some("2026-12-01T00:00:00Z".into()),
            count: 1,
        }
    }

    #[test]
    fn the_page_is_its_parts_in_order() {
        let r = render(
            &fleet(&["down", "also <down>"]),
            Some("t&k"),
            0,
            7,
            PAGE_ROWS,
        );
        let ids: Vec<&str> = r.parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(ids, ["summary", "k0", "k1"]);
        let page = String::from_utf8(r.page.to_vec()).unwrap();
        assert!(
            page.contains("<div id=\"fleet\" data-version=\"7\">"),
            "{page}"
        );
        assert!(page.contains(&r.fragment));
        for (id, html) in &r.parts {
            assert!(
                r.fragment.contains(html.as_str()),
                "{id} not in the fragment"
            );
            assert!(html.contains(&format!("id=\"{id}\"")), "{html}");
        }
        assert!(
            r.parts[2].1.contains("also &lt;down&gt;"),
            "{}",
            r.parts[2].1
        );
        assert!(r.parts[1].1.contains("href=\"cluster/c0?token=t&amp;k\""));
    }

    #[test]
    fn pages_hold_whole_clusters_up_to_the_rows_asked() {
        let mut reports = fleet(&["a", "b", "c", "d", "e"]);
        reports[3].events.push(event("health check failed on d"));
        let r = render(&reports, Some("t&k"), 0, 3, 2);
        let first = String::from_utf8(r.page.to_vec()).unwrap();
        assert!(
            first.contains("<div id=\"fleet\" data-version=\"3\" data-partial>"),
            "{first}"
        );
        assert!(first.contains("id=\"k0\"") && first.contains("id=\"k1\""));
        assert!(!first.contains("id=\"k2\""), "{first}");
        assert!(
            first.contains("<nav class=\"pages\">Clusters 1–2 of 5 · <a href=\"?from=2&amp;token=t&amp;k\">clusters 3–4 →</a></nav>"),
            "{first}"
        );
        // The events table shows the page's clusters' events only.
        assert!(first.contains("<h2>Last events</h2>"), "{first}");
        assert!(!first.contains("health check failed on d"), "{first}");
        let second = r.page_from(2).unwrap();
        assert!(second.contains("health check failed on d"), "{second}");
        assert!(
            second.contains("Clusters 3–4 of 5 · <a href=\"?from=0&amp;token=t&amp;k\">first clusters</a> · <a href=\"?from=4&amp;token=t&amp;k\">cluster 5 →</a></nav>"),
            "{second}"
        );
        let last = r.page_from(4).unwrap();
        assert!(
            last.contains("<nav class=\"pages\">Cluster 5 of 5 · <a href=\"?from=0&amp;token=t&amp;k\">first clusters</a></nav>"),
            "{last}"
        );
        assert!(r.page_from(5).is_none());
        // Every cluster is on one page, and the pages start wherever asked.
        for (i, id) in ["k0", "k1", "k2", "k3", "k4"].iter().enumerate() {
            let on = [first.as_str(), &second, &last]
                .iter()
                .filter(|p| p.contains(&format!("id=\"{id}\"")))
                .count();
            assert_eq!(on, 1, "{id}");
            assert!(r.page_from(i).unwrap().contains(&format!("id=\"{id}\"")));
        }
        // The whole fleet, as `/events` sends it: every cluster, no links to pages.
        for id in ["k0", "k1", "k2", "k3", "k4", "e3"] {
            assert!(r.fragment.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(!r.fragment.contains("<nav"));
        // A page holding the whole fleet is the fragment alone.
        let all = render(&reports, None, 0, 3, 5);
        let page = String::from_utf8(all.page.to_vec()).unwrap();
        assert!(page.contains(&format!(
            "<div id=\"fleet\" data-version=\"3\">{}</div>",
            all.fragment
        )));
        // A fleet of no cluster has its one page.
        let none = render(&[], None, 0, 1, 5);
        assert!(none.page_from(0).is_some() && none.page_from(1).is_none());
    }

    #[test]
    fn a_change_on_one_cluster_is_that_clusters_part() {
        let before = render(&fleet(&["down", "down"]), None, 0, 1, PAGE_ROWS);
        let after = render(&fleet(&["down", "down again"]), None, 0, 2, PAGE_ROWS);
        let changed = after.changed_since(&before).unwrap();
        let ids: Vec<&str> = changed.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(ids, ["k1"]);
        let event = delta(&before, &after);
        assert!(event.is_some());
        // Nothing shown differs: nothing to send.
        let same = render(&fleet(&["down", "down again"]), None, 0, 3, PAGE_ROWS);
        assert!(same.changed_since(&after).unwrap().is_empty());
        assert!(delta(&after, &same).is_none());
    }

    #[test]
    fn events_appearing_change_the_layout() {
        let before = render(&fleet(&["down", "down"]), None, 0, 1, PAGE_ROWS);
        let mut reports = fleet(&["down", "down"]);
        reports[1]
            .events
            .push(event("kustomize build failed: <boom>"));
        let after = render(&reports, None, 0, 2, PAGE_ROWS);
        assert!(
            after.changed_since(&before).is_none(),
            "the events table is new"
        );
        let ids: Vec<&str> = after.parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(ids, ["summary", "k0", "k1", "e0", "e1"]);
        assert!(after.fragment.contains("<h2>Last events</h2>"));
        assert!(
            after.parts[4]
                .1
                .contains("kustomize build failed: &lt;boom&gt;")
        );
        // Then a second event on the same cluster is that cluster's events part alone.
        let mut more = reports.clone();
        more[1].events.insert(0, event("health check failed"));
        let later = render(&more, None, 0, 3, PAGE_ROWS);
        let changed = later.changed_since(&after).unwrap();
        let ids: Vec<&str> = changed.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(ids, ["e1"]);
    }
}
