//! The HTTPS front of the devcluster: the TLS accept loop, the bearer-token check and what every
//! verb shares (bodies, responses, API versions). Each layer behind it has its own file:
//! `route` (REST paths to resources, RBAC, faults, dispatch by verb), `list`, `write` (create and
//! update), `patch`, `delete`, `watch` and `scale` (the scale and log subresources).

mod delete;
mod list;
mod patch;
mod pods;
mod route;
mod scale;
mod watch;
mod write;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinSet;

use crate::error::ApiError;
use crate::faults::{Connection, Faults};
use crate::resources::Resource;
use crate::store::Store;

pub use list::selectors;
pub use route::Req;
pub use write::{field_manager_of, write_existing};

/// Kubernetes' limit on a request body.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

pub struct App {
    pub token: String,
    pub store: Arc<Store>,
    pub addr: String,
    pub faults: Arc<Faults>,
    pub logs: Arc<crate::podlogs::PodLogs>,
    pub shutdown: signal::Receiver<bool>,
}

pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

/// Accepts TLS connections until `shutdown` flips, then drops every open connection. Each
/// change of `resets` drops every connection open at that moment (the server goes on).
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    mut shutdown: signal::Receiver<bool>,
    resets: signal::Receiver<u64>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => {
                let Ok((tcp, _)) = r else { continue };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let (conn, control) = crate::faults::connection();
                let svc = router.clone().layer(axum::Extension(conn));
                let mut resets = resets.clone();
                resets.mark_unchanged();
                conns.spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else { return };
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let svc = hyper_util::service::TowerToHyperService::new(svc);
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    // A fault that breaks the connection drops it here, unanswered.
                    tokio::select! {
                        _ = builder.serve_connection_with_upgrades(io, svc) => {}
                        _ = control.kill.notified() => {}
                        _ = resets.changed() => {}
                    }
                    let _ = control.closed.send(true);
                });
            }
            _ = shutdown.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

fn json_bytes(code: u16, body: Vec<u8>, content_type: &'static str) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_resp(code: u16, v: &Value) -> Response {
    json_bytes(
        code,
        serde_json::to_vec(v).unwrap_or_default(),
        "application/json",
    )
}

pub fn err_resp(e: &ApiError) -> Response {
    let mut r = json_resp(e.code, &e.status());
    if let Some(seconds) = e.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    r
}

fn text(code: u16, s: &'static str) -> Response {
    let mut r = Response::new(Body::from(s));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn text_owned(code: u16, s: String) -> Response {
    let mut r = Response::new(Body::from(s));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

async fn handle(AxState(app): AxState<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query: HashMap<String, String> =
        form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let public = matches!(
        path.as_str(),
        "/healthz" | "/readyz" | "/livez" | "/version"
    );
    let auth = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth {
        Some(a) => {
            let ok = a
                .strip_prefix("Bearer ")
                .is_some_and(|t| constant_eq(t.trim(), &app.token));
            if !ok {
                return err_resp(&ApiError::unauthorized());
            }
        }
        None if public => {}
        None => return err_resp(&ApiError::unauthorized()),
    }
    let user = match crate::authz::impersonated(&parts.headers) {
        Ok(user) => user.map(Arc::new),
        Err(e) => return err_resp(&e),
    };
    if let Some(resp) = app.faults.before(&path).await {
        return resp;
    }
    let conn = parts.extensions.get::<Connection>().cloned();
    let protobuf_only = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::protobuf::wants_protobuf)
        && !query_bool(&query, "watch");
    let resp = match route::route(
        &app,
        &parts.method,
        &path,
        &query,
        &parts.headers,
        body,
        user,
        conn,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => err_resp(&e),
    };
    if protobuf_only {
        return as_protobuf(resp).await;
    }
    resp
}

/// Re-encodes a JSON answer as protobuf for a client that accepts nothing else; an answer
/// without a protobuf form (a Table, a custom resource) stays JSON, as there is no other.
async fn as_protobuf(resp: Response) -> Response {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = body.collect().await.map(|c| c.to_bytes()) else {
        return Response::from_parts(parts, Body::empty());
    };
    let encoded = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => match crate::protobuf::encode(&v) {
            Ok(pb) => Some(pb),
            Err(e) => {
                tracing::debug!("the answer stays JSON: {}", e.0);
                None
            }
        },
        Err(_) => None,
    };
    match encoded {
        Some(pb) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::protobuf::CONTENT_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(pb))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// A boolean query parameter as the API server reads it (Go's `strconv.ParseBool`: the Python
/// client sends `watch=True`).
pub fn query_bool(q: &HashMap<String, String>, name: &str) -> bool {
    matches!(
        q.get(name).map(String::as_str),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

fn constant_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

pub fn wants_table(h: &HeaderMap) -> bool {
    h.get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',').any(|p| {
                p.contains("as=Table") && p.contains("v=v1") && p.contains("g=meta.k8s.io")
            })
        })
}

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(MAX_BODY))
            } else {
                Err(ApiError::bad_request(format!(
                    "cannot read the request body: {e}"
                )))
            }
        }
    }
}

fn content_type(h: &HeaderMap) -> String {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Parses a request body as JSON, or YAML when the content type says so.
pub fn parse_body(bytes: &[u8], ct: &str) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    if ct.contains("yaml") {
        let s = std::str::from_utf8(bytes)
            .map_err(|e| ApiError::bad_request(format!("yaml: invalid UTF-8: {e}")))?;
        serde_saphyr::from_str::<Value>(s)
            .map_err(|e| ApiError::bad_request(format!("yaml parse error: {e}")))
    } else if ct.contains("protobuf") {
        crate::protobuf::decode(bytes)
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("json parse error: {e}")))
    }
}

fn dry_run(q: &HashMap<String, String>) -> Result<bool, ApiError> {
    match q.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "dryRun: Unsupported value: {other:?}: supported values: \"All\""
        ))),
    }
}

/// Rewrites a custom resource's apiVersion to the version the client asked for (CRDs convert with
/// the `None` strategy: only the apiVersion changes); `events.k8s.io` Events are converted from
/// the stored core form, `autoscaling/v1` HorizontalPodAutoscalers from the stored v2 form.
pub fn for_version<'a>(
    res: &Resource,
    version: &str,
    obj: &'a Value,
) -> std::borrow::Cow<'a, Value> {
    if crate::events::is_events_api(res) {
        return std::borrow::Cow::Owned(crate::events::from_core(obj));
    }
    if crate::hpa::is_v1(res, version) {
        return std::borrow::Cow::Owned(crate::hpa::to_v1(obj));
    }
    let want = res.api_version(version);
    if obj.get("apiVersion").and_then(Value::as_str) == Some(want.as_str()) {
        std::borrow::Cow::Borrowed(obj)
    } else {
        let mut o = obj.clone();
        o["apiVersion"] = json!(want);
        std::borrow::Cow::Owned(o)
    }
}

pub fn object_response(code: u16, r: &Req, obj: &Arc<Value>, headers: &HeaderMap) -> Response {
    let o = for_version(&r.res, &r.version, obj);
    if wants_table(headers) {
        return json_resp(
            code,
            &crate::table::table(&r.res, &r.version, std::slice::from_ref(&o.as_ref()), None),
        );
    }
    json_resp(code, &o)
}

/// [`object_response`] for an object as stored, sending its JSON as it is when it can.
pub fn stored_response(
    code: u16,
    r: &Req,
    s: &crate::store::Stored,
    headers: &HeaderMap,
) -> Response {
    if !wants_table(headers) && serves_as_stored(&r.res, &r.version, &s.obj) {
        return json_bytes(code, s.json.to_vec(), "application/json");
    }
    object_response(code, r, &s.obj, headers)
}

pub fn stream_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let s = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Body::from_stream(s)
}

pub fn watch_response(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Response {
    let mut r = Response::new(stream_body(rx));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}

pub fn event_line(kind: &str, obj: &Value) -> Bytes {
    event_line_json(kind, &serde_json::to_vec(obj).unwrap_or_default())
}

/// A watch line around an object already serialised.
pub fn event_line_json(kind: &str, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(json);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// Whether `res` at `version` serves stored objects as they are (so their stored JSON is the
/// answer).
pub fn serves_as_stored(res: &Resource, version: &str, obj: &Value) -> bool {
    !crate::events::is_events_api(res)
        && obj.get("apiVersion").and_then(Value::as_str) == Some(res.api_version(version).as_str())
}

pub fn bookmark_interval() -> Duration {
    Duration::from_secs(5)
}
