//! The HTTPS front: TLS accept loop, bearer-token check, routing of Kubernetes REST paths and the
//! verb handlers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::authz::User;
use crate::discovery;
use crate::error::{ApiError, Cause};
use crate::faults::{Connection, FaultAction, Faults};
use crate::objects::{self, Mode, Propagation, target};
use crate::resources::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Store, meta_str};

/// Kubernetes' limit on a request body.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

pub struct App {
    pub token: String,
    pub store: Arc<Store>,
    pub addr: String,
    pub faults: Arc<Faults>,
    pub shutdown: watch::Receiver<bool>,
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
    mut shutdown: watch::Receiver<bool>,
    resets: watch::Receiver<u64>,
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

fn version_doc() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": crate::SERVER_VERSION,
        "gitCommit": "ferroflux-devcluster",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
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
    match route(
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
    }
}

fn constant_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn wants_aggregated(h: &HeaderMap) -> bool {
    h.get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',').any(|p| {
                p.contains("as=APIGroupDiscoveryList")
                    && p.contains("v=v2")
                    && !p.contains("v=v2beta1")
            })
        })
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

#[allow(clippy::too_many_arguments)]
async fn route(
    app: &Arc<App>,
    method: &Method,
    path: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
    user: Option<Arc<User>>,
    conn: Option<Connection>,
) -> Result<Response, ApiError> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let get_only = |r: Response| -> Result<Response, ApiError> {
        if method == Method::GET || method == Method::HEAD {
            Ok(r)
        } else {
            Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )))
        }
    };
    match segs.as_slice() {
        ["version"] => return get_only(json_resp(200, &version_doc())),
        ["healthz"] | ["readyz"] | ["livez"] => return get_only(text(200, "ok")),
        ["api"] => {
            let reg = app.store.lock().registry.clone();
            return get_only(if wants_aggregated(headers) {
                json_bytes(
                    200,
                    serde_json::to_vec(&discovery::aggregated(&reg, true)).unwrap_or_default(),
                    discovery::AGGREGATED_CT,
                )
            } else {
                json_resp(200, &discovery::api_versions(&app.addr))
            });
        }
        ["apis"] => {
            let reg = app.store.lock().registry.clone();
            return get_only(if wants_aggregated(headers) {
                json_bytes(
                    200,
                    serde_json::to_vec(&discovery::aggregated(&reg, false)).unwrap_or_default(),
                    discovery::AGGREGATED_CT,
                )
            } else {
                json_resp(200, &discovery::api_group_list(&reg))
            });
        }
        ["openapi", "v3"] => {
            let reg = app.store.lock().registry.clone();
            return get_only(json_resp(200, &discovery::openapi_v3_root(&reg)));
        }
        ["openapi", "v3", "api", v] => {
            let reg = app.store.lock().registry.clone();
            return discovery::openapi_v3_doc(&reg, "", v)
                .map(|d| json_resp(200, &d))
                .ok_or_else(ApiError::page_not_found);
        }
        ["openapi", "v3", "apis", g, v] => {
            let reg = app.store.lock().registry.clone();
            return discovery::openapi_v3_doc(&reg, g, v)
                .map(|d| json_resp(200, &d))
                .ok_or_else(ApiError::page_not_found);
        }
        ["api", "v1"] => {
            let reg = app.store.lock().registry.clone();
            return discovery::resource_list(&reg, "", "v1")
                .map(|d| json_resp(200, &d))
                .ok_or_else(ApiError::page_not_found);
        }
        ["apis", g] => {
            let reg = app.store.lock().registry.clone();
            return discovery::api_group(&reg, g)
                .map(|d| json_resp(200, &d))
                .ok_or_else(ApiError::page_not_found);
        }
        ["apis", g, v] => {
            let reg = app.store.lock().registry.clone();
            return discovery::resource_list(&reg, g, v)
                .map(|d| json_resp(200, &d))
                .ok_or_else(ApiError::page_not_found);
        }
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::page_not_found()),
    };
    let mut t = resolve(&app.store, group, version, rest)?;
    let is_watch = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    if let Some(user) = &user {
        let verb = verb_of(method, t.name.is_some(), is_watch);
        // A list or watch of one object names it in the field selector; RBAC sees that name.
        let selected = q.get("fieldSelector").and_then(|f| {
            f.split(',')
                .find_map(|term| term.strip_prefix("metadata.name="))
                .map(str::to_string)
        });
        let name = t.name.clone().or(selected).unwrap_or_default();
        crate::authz::authorize(&app.store.lock(), user, &t.attributes(verb, &name))?;
    }
    t.user = user;
    let fault = app.faults.rules.decide(
        method,
        &t,
        q.get("dryRun").is_some_and(|d| d == "All"),
        is_watch,
    );
    let retry_after = fault.as_ref().and_then(|f| f.retry_after);
    match (fault.map(|f| f.action), conn) {
        (None, _) => {}
        (Some(FaultAction::Error(code)), _) => {
            let e = ApiError::injected(code);
            return Err(match retry_after {
                Some(seconds) => e.with_retry_after(seconds),
                None => e,
            });
        }
        (Some(FaultAction::Drop), Some(conn)) => return Ok(conn.break_now().await),
        (Some(FaultAction::DropAfterServing), Some(conn)) => {
            let _ = dispatch(app, method, t, q, headers, body).await;
            return Ok(conn.break_now().await);
        }
        (Some(_), None) => return Err(ApiError::injected(500)),
    }
    dispatch(app, method, t, q, headers, body).await
}

/// A request aimed at a resource.
pub struct Req {
    pub res: Arc<Resource>,
    pub version: String,
    pub ns: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
    /// Whom the request impersonates; `None` for the cluster's own (unrestricted) user.
    pub user: Option<Arc<User>>,
}

impl Req {
    /// The request as RBAC sees it, for `verb` on the object `name` (empty for collections).
    pub fn attributes<'a>(&'a self, verb: &'a str, name: &'a str) -> crate::authz::Attributes<'a> {
        let namespace = match (self.res.group.as_str(), self.res.plural.as_str()) {
            // A namespace is inside itself, so a RoleBinding there can grant reading it.
            ("", "namespaces") => name,
            _ => self.ns.as_deref().unwrap_or(""),
        };
        crate::authz::Attributes {
            verb,
            group: &self.res.group,
            resource: &self.res.plural,
            subresource: self.sub.as_deref().unwrap_or(""),
            namespace,
            name,
        }
    }
}

/// The RBAC verb of a request, as the API server derives it.
fn verb_of(method: &Method, named: bool, is_watch: bool) -> &'static str {
    match (method.as_str(), named) {
        ("GET" | "HEAD", _) if is_watch => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "",
    }
}

fn resolve(store: &Store, group: &str, version: &str, rest: &[&str]) -> Result<Req, ApiError> {
    let reg = &store.lock().registry;
    let lookup = |plural: &str| {
        reg.lookup(group, version, plural)
            .ok_or_else(ApiError::page_not_found)
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if !(group.is_empty() && matches!(*plural, "status" | "finalize")) =>
        {
            let res = lookup(plural)?;
            if !res.namespaced {
                return Err(ApiError::page_not_found());
            }
            return Ok(Req {
                res,
                version: version.to_string(),
                ns: Some(ns.to_string()),
                name: tail.first().map(|s| s.to_string()),
                sub: match tail {
                    [] | [_] => None,
                    [_, sub] => Some(sub.to_string()),
                    _ => return Err(ApiError::page_not_found()),
                },
                user: None,
            });
        }
        r => (None::<String>, r),
    };
    let (plural, tail) = rest.split_first().ok_or_else(ApiError::page_not_found)?;
    let res = lookup(plural)?;
    if res.namespaced && !tail.is_empty() {
        return Err(ApiError::page_not_found());
    }
    Ok(Req {
        res,
        version: version.to_string(),
        ns,
        name: tail.first().map(|s| s.to_string()),
        sub: match tail {
            [] | [_] => None,
            [_, sub] => Some(sub.to_string()),
            _ => return Err(ApiError::page_not_found()),
        },
        user: None,
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
/// the stored core form.
pub fn for_version<'a>(
    res: &Resource,
    version: &str,
    obj: &'a Value,
) -> std::borrow::Cow<'a, Value> {
    if crate::events::is_events_api(res) {
        return std::borrow::Cow::Owned(crate::events::from_core(obj));
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

async fn dispatch(
    app: &Arc<App>,
    method: &Method,
    r: Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let is_watch = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    if let Some(sub) = &r.sub
        && !(sub == "status" && (r.res.status_subresource))
        && !(sub == "finalize" && r.res.plural == "namespaces")
    {
        return Err(ApiError::page_not_found());
    }
    let result = dispatch_verb(app, method, r, q, headers, body, is_watch).await;
    let pending = std::mem::take(&mut app.store.lock().pending_ready);
    if !pending.is_empty() {
        crate::workloads::schedule(&app.store, pending);
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn dispatch_verb(
    app: &Arc<App>,
    method: &Method,
    r: Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
    is_watch: bool,
) -> Result<Response, ApiError> {
    if r.res.is_review() {
        if method != Method::POST || r.name.is_some() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
        let bytes = read_body(body).await?;
        let review = parse_body(&bytes, &content_type(headers))?;
        let answer = crate::authz::access_review(&app.store.lock(), r.user.as_deref(), &review)?;
        return Ok(json_resp(201, &answer));
    }
    match (method.clone(), r.name.is_some()) {
        (Method::GET, false) if is_watch => crate::watch::watch(app, &r, q, headers),
        (Method::GET, false) => list(app, &r, q, headers),
        (Method::GET, true) => {
            let name = r.name.clone().unwrap_or_default();
            let obj = app
                .store
                .lock()
                .get_stored(&r.res.key(), r.ns.as_deref().unwrap_or(""), &name)
                .cloned();
            match obj {
                Some(s) => Ok(stored_response(200, &r, &s, headers)),
                None => Err(ApiError::not_found(&target(&r.res, &name))),
            }
        }
        (Method::POST, false) => {
            if r.res.namespaced && r.ns.is_none() {
                return Err(ApiError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource: {} must be created in a namespace",
                    r.res.plural
                )));
            }
            let bytes = read_body(body).await?;
            let obj = parse_body(&bytes, &content_type(headers))?;
            let dry = dry_run(q)?;
            create(app, &r, obj, dry, q, headers).await
        }
        (Method::PUT, true) => {
            let bytes = read_body(body).await?;
            let obj = parse_body(&bytes, &content_type(headers))?;
            let dry = dry_run(q)?;
            update(app, &r, obj, dry, q, headers).await
        }
        (Method::PATCH, true) => {
            let bytes = read_body(body).await?;
            let dry = dry_run(q)?;
            crate::patch::patch(app, &r, &bytes, &content_type(headers), dry, q, headers).await
        }
        (Method::DELETE, true) => {
            let bytes = read_body(body).await?;
            delete(app, &r, &bytes, q, headers).await
        }
        (Method::DELETE, false) => {
            let bytes = read_body(body).await?;
            delete_collection(app, &r, &bytes, q).await
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        ))),
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Continue {
    ns: String,
    name: String,
    /// The first page's resourceVersion: every page of a list reports it, as the API server's
    /// do, so a watch started from the list replays what changed while the pages were read.
    #[serde(default)]
    rv: Option<String>,
}

/// What etcd answers a continue token whose first page's version was compacted away.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn encode_continue(c: &Continue) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(c).unwrap_or_default())
}

/// Which state a list asks for, by its `resourceVersion` and `resourceVersionMatch`.
enum ListAt {
    /// No version, or `0` ("any": this server has no stale cache, so the newest).
    Newest,
    /// At least this version: the newest state, unless the server has not reached it.
    NotOlderThan(u64),
    /// Exactly the state at this version.
    Exact(u64),
}

/// `ValidateListOptions`, then the API server's reading of the version parameters: a version
/// without a match means "not older than", except on a paged list (a limit and no continue),
/// where it has always meant "exact".
fn list_options(
    q: &HashMap<String, String>,
    continued: bool,
    paged: bool,
) -> Result<ListAt, ApiError> {
    let rv = q.get("resourceVersion").map(String::as_str).unwrap_or("");
    let matching = q
        .get("resourceVersionMatch")
        .map(String::as_str)
        .unwrap_or("");
    let mut causes = Vec::new();
    if !matching.is_empty() {
        if rv.is_empty() {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continued {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching != "Exact" && matching != "NotOlderThan" {
            causes.push(Cause::not_supported(
                "resourceVersionMatch",
                matching,
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if matching == "Exact" && rv == "0" {
            causes.push(Cause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if q.contains_key("sendInitialEvents") {
        causes.push(Cause::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_options("ListOptions", causes));
    }
    if rv.is_empty() || rv == "0" {
        return Ok(ListAt::Newest);
    }
    if continued {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let n = rv.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: {rv:?}: must be an integer"
        ))
    })?;
    Ok(match matching {
        "Exact" => ListAt::Exact(n),
        "" if paged => ListAt::Exact(n),
        _ => ListAt::NotOlderThan(n),
    })
}

/// The resourceVersion whose state a list reads: the newest, or a past one (a continued list,
/// at `after`, reads the state its first page read, as etcd does).
fn list_version(
    st: &crate::store::State,
    after: Option<&crate::store::ObjKey>,
    first_rv: Option<&str>,
    requested: ListAt,
) -> Result<u64, ApiError> {
    let current = st.rv;
    if let (Some(position), Some(first)) = (after, first_rv) {
        let first = first.parse::<u64>().unwrap_or(current);
        if first < st.history_floor() {
            let mut e = ApiError::gone(CONTINUE_EXPIRED);
            let next = Continue {
                ns: position.0.clone(),
                name: position.1.clone(),
                rv: None,
            };
            e.continue_token = Some(encode_continue(&next));
            return Err(e);
        }
        return Ok(first);
    }
    match requested {
        ListAt::Newest => Ok(current),
        ListAt::NotOlderThan(n) if n > current => Err(ApiError::too_large_rv(n, current)),
        ListAt::NotOlderThan(_) => Ok(current),
        ListAt::Exact(n) => {
            st.readable_at(n, || {
                "The resourceVersion for the provided list is too old.".to_string()
            })?;
            Ok(n)
        }
    }
}

pub fn selectors(
    q: &HashMap<String, String>,
    res: &Resource,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let ls = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
    let fs = FieldSelector::parse(
        q.get("fieldSelector").map(String::as_str).unwrap_or(""),
        res,
    )
    .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
    Ok((ls, fs))
}

fn list(
    app: &Arc<App>,
    r: &Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let (ls, fs) = selectors(q, &r.res)?;
    let limit = match q.get("limit").map(String::as_str) {
        None | Some("") | Some("0") => usize::MAX,
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("limit: invalid value {l:?}")))?,
    };
    let after = match q.get("continue").map(String::as_str) {
        None | Some("") => None,
        Some(c) => {
            use base64::Engine;
            let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(c)
                .map_err(|_| ApiError::bad_request("continue key is not valid: illegal base64"))?;
            let c: Continue = serde_json::from_slice(&raw)
                .map_err(|_| ApiError::bad_request("continue key is not valid"))?;
            Some(c)
        }
    };
    let requested = list_options(q, after.is_some(), limit != usize::MAX)?;
    let (after, first_rv) = match after {
        Some(c) => (Some((c.ns, c.name)), c.rv),
        None => (None, None),
    };
    let table = wants_table(headers);
    let st = app.store.lock();
    let key = r.res.key();
    let at = list_version(&st, after.as_ref(), first_rv.as_deref(), requested)?;
    let snapshot = (at < st.rv).then(|| st.snapshot(&key, at));
    let objects = match &snapshot {
        Some(map) => crate::store::range_of(map, r.ns.as_deref(), after),
        None => st.list_stored(&key, r.ns.as_deref(), after),
    };
    let mut items: Vec<&crate::store::Stored> = Vec::new();
    let mut more = None;
    for s in objects {
        let o = &s.obj;
        if !ls.matches(o) || !fs.matches(o) {
            continue;
        }
        if items.len() == limit {
            let last = items.last().map(|l| {
                (
                    meta_str(&l.obj, "namespace").to_string(),
                    meta_str(&l.obj, "name").to_string(),
                )
            });
            more = last;
            break;
        }
        items.push(s);
    }
    let rv = at.to_string();
    let cont = more.map(|(ns, name)| {
        encode_continue(&Continue {
            ns,
            name,
            rv: Some(rv.clone()),
        })
    });
    if table {
        let objs: Vec<std::borrow::Cow<Value>> = items
            .iter()
            .map(|s| for_version(&r.res, &r.version, &s.obj))
            .collect();
        let refs: Vec<&Value> = objs.iter().map(|c| c.as_ref()).collect();
        let mut t = crate::table::table(&r.res, &r.version, &refs, Some(&rv));
        if let Some(c) = cont {
            t["metadata"]["continue"] = json!(c);
        }
        return Ok(json_resp(200, &t));
    }
    // Written by hand from each object's stored JSON: a large list is a concatenation.
    let mut out = Vec::with_capacity(items.iter().map(|s| s.json.len() + 1).sum::<usize>() + 256);
    let mut meta = json!({ "resourceVersion": rv });
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    out.extend_from_slice(
        format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            json!(r.res.list_kind),
            json!(r.res.api_version(&r.version)),
            meta
        )
        .as_bytes(),
    );
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if serves_as_stored(&r.res, &r.version, &s.obj) {
            out.extend_from_slice(&s.json);
        } else {
            let _ =
                serde_json::to_writer(&mut out, for_version(&r.res, &r.version, &s.obj).as_ref());
        }
    }
    out.extend_from_slice(b"]}");
    drop(st);
    Ok(json_bytes(200, out, "application/json"))
}

pub fn field_manager_of(q: &HashMap<String, String>, headers: &HeaderMap) -> String {
    q.get("fieldManager").cloned().unwrap_or_else(|| {
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
            .unwrap_or_else(|| "unknown".into())
    })
}

async fn create(
    app: &Arc<App>,
    r: &Req,
    obj: Value,
    dry: bool,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let manager = field_manager_of(q, headers);
    let key = r.res.key();
    let ns = r.ns.clone();
    let stored = app
        .store
        .write(|st| {
            let obj = objects::admit(
                st,
                &r.res,
                &r.version,
                ns.as_deref(),
                None,
                obj,
                Mode::Create,
            )?;
            let name = meta_str(&obj, "name").to_string();
            if let Some(ns) = &ns {
                objects::check_namespace(st, &r.res, ns, &name)?;
            }
            if st.get(&key, ns.as_deref().unwrap_or(""), &name).is_some() {
                return Err(ApiError::already_exists(&target(&r.res, &name)));
            }
            let mut obj =
                crate::ssa::record_update(None, obj, &manager, None, &target(&r.res, &name))?;
            if crate::events::is_events_api(&r.res) {
                crate::events::validate_create(&obj, &target(&r.res, &name))?;
                obj = crate::events::to_core(obj);
            }
            let pending = crate::workloads::simulate(st, &r.res, None, &mut obj);
            if dry {
                return Ok(crate::store::Stored {
                    obj: Arc::new(obj),
                    json: Bytes::new(),
                });
            }
            st.pending_ready.extend(pending);
            Ok(st.put_stored(&key, obj))
        })
        .await?;
    if stored.json.is_empty() {
        return Ok(object_response(201, r, &stored.obj, headers));
    }
    Ok(stored_response(201, r, &stored, headers))
}

async fn update(
    app: &Arc<App>,
    r: &Req,
    obj: Value,
    dry: bool,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let manager = field_manager_of(q, headers);
    let stored = app
        .store
        .write(|st| write_existing(st, r, obj, dry, Some(&manager)))
        .await?;
    Ok(object_response(200, r, &stored, headers))
}

/// Admits `obj` as the new state of the object `r` names and stores it (shared by update and
/// patch).
pub fn write_existing(
    st: &mut crate::store::State,
    r: &Req,
    obj: Value,
    dry: bool,
    manager: Option<&str>,
) -> Result<Arc<Value>, ApiError> {
    let key = r.res.key();
    let name = r.name.clone().unwrap_or_default();
    let ns = r.ns.clone().unwrap_or_default();
    let Some(stored) = st.get(&key, &ns, &name).cloned() else {
        return Err(ApiError::not_found(&target(&r.res, &name)));
    };
    let events_api = crate::events::is_events_api(&r.res);
    // The object as the client's API version shows it; converted back before storing.
    let old = if events_api {
        Arc::new(crate::events::from_core(&stored))
    } else {
        stored.clone()
    };
    let mode = if r.sub.as_deref() == Some("status") {
        Mode::Status(&old)
    } else {
        Mode::Update(&old)
    };
    let status_only = matches!(mode, Mode::Status(_));
    // Server-side apply has already computed the ownership; a status write keeps it.
    let applied_fields = match (manager, status_only) {
        (None, true) => obj.pointer("/metadata/managedFields").cloned(),
        _ => None,
    };
    let mut next = objects::admit(
        st,
        &r.res,
        &r.version,
        r.ns.as_deref(),
        Some(&name),
        obj,
        mode,
    )?;
    let t = target(&r.res, &name);
    if !status_only {
        crate::immutable::carry_over(&r.res, &old, &mut next);
        crate::immutable::check(&r.res, &old, &next)?;
    }
    if let Some(manager) = manager {
        next = crate::ssa::record_update(Some(&old), next, manager, r.sub.as_deref(), &t)?;
    } else if let Some(fields) = applied_fields
        && let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("managedFields".into(), fields);
    }
    let pending = if status_only {
        None
    } else {
        crate::workloads::simulate(st, &r.res, Some(&old), &mut next)
    };
    if events_api {
        next = crate::events::to_core(next);
    }
    // Like the API server, a write that changes nothing keeps the stored object and version.
    if unchanged(&stored, &next) {
        return Ok(stored);
    }
    if dry {
        return Ok(Arc::new(next));
    }
    st.pending_ready.extend(pending);
    Ok(objects::store_update(st, &key, next))
}

/// Equal but for `metadata.resourceVersion` (compared in place: no copies on the write path).
fn unchanged(old: &Value, next: &Value) -> bool {
    let (Some(a), Some(b)) = (old.as_object(), next.as_object()) else {
        return old == next;
    };
    let meta_equal = |x: Option<&Value>, y: Option<&Value>| match (
        x.and_then(Value::as_object),
        y.and_then(Value::as_object),
    ) {
        (Some(x), Some(y)) => {
            let rest = |m: &serde_json::Map<String, Value>| {
                m.iter().filter(|(k, _)| *k != "resourceVersion").count()
            };
            rest(x) == rest(y)
                && x.iter()
                    .filter(|(k, _)| *k != "resourceVersion")
                    .all(|(k, v)| y.get(k) == Some(v))
        }
        _ => x == y,
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            if k == "metadata" {
                meta_equal(Some(v), b.get(k))
            } else {
                b.get(k) == Some(v)
            }
        })
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions {
    #[serde(default)]
    propagation_policy: Option<String>,
    #[serde(default)]
    orphan_dependents: Option<bool>,
    #[serde(default)]
    preconditions: Option<Preconditions>,
    #[serde(default)]
    dry_run: Option<Vec<String>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Preconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

fn delete_options(
    bytes: &[u8],
    q: &HashMap<String, String>,
) -> Result<(DeleteOptions, Propagation, bool), ApiError> {
    let opts: DeleteOptions = if bytes.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("json parse error in DeleteOptions: {e}")))?
    };
    let policy = match (
        &opts.propagation_policy,
        q.get("propagationPolicy"),
        opts.orphan_dependents,
    ) {
        (Some(p), _, _) => Propagation::parse(p)?,
        (None, Some(p), _) => Propagation::parse(p)?,
        (None, None, Some(true)) => Propagation::Orphan,
        _ => Propagation::Background,
    };
    let dry = dry_run(q)?
        || opts
            .dry_run
            .as_ref()
            .is_some_and(|d| d.iter().any(|x| x == "All"));
    Ok((opts, policy, dry))
}

async fn delete(
    app: &Arc<App>,
    r: &Req,
    bytes: &[u8],
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let (opts, policy, dry) = delete_options(bytes, q)?;
    let key = r.res.key();
    let name = r.name.clone().unwrap_or_default();
    let ns = r.ns.clone().unwrap_or_default();
    let out = app
        .store
        .write(|st| {
            let Some(obj) = st.get(&key, &ns, &name).cloned() else {
                return Err(ApiError::not_found(&target(&r.res, &name)));
            };
            if let Some(p) = &opts.preconditions {
                if let Some(uid) = &p.uid
                    && uid != meta_str(&obj, "uid")
                {
                    return Err(ApiError::conflict(
                        &target(&r.res, &name),
                        &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", meta_str(&obj, "uid")),
                    ));
                }
                if let Some(rv) = &p.resource_version
                    && rv != meta_str(&obj, "resourceVersion")
                {
                    return Err(ApiError::conflict(
                        &target(&r.res, &name),
                        &format!(
                            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                            meta_str(&obj, "resourceVersion")
                        ),
                    ));
                }
            }
            if dry {
                return Ok(obj);
            }
            Ok(objects::delete_object(st, &key, &ns, &name, policy).unwrap_or(obj))
        })
        .await?;
    Ok(object_response(200, r, &out, headers))
}

async fn delete_collection(
    app: &Arc<App>,
    r: &Req,
    bytes: &[u8],
    q: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let (_, policy, dry) = delete_options(bytes, q)?;
    let (ls, fs) = selectors(q, &r.res)?;
    let key = r.res.key();
    let items = app
        .store
        .write(|st| {
            let targets: Vec<Arc<Value>> = st
                .list(&key, r.ns.as_deref(), None)
                .filter(|o| ls.matches(o) && fs.matches(o))
                .cloned()
                .collect();
            let mut out = Vec::new();
            for o in targets {
                if dry {
                    out.push(o);
                    continue;
                }
                let (ns, name) = (
                    meta_str(&o, "namespace").to_string(),
                    meta_str(&o, "name").to_string(),
                );
                if let Some(d) = objects::delete_object(st, &key, &ns, &name, policy) {
                    out.push(d);
                }
            }
            Ok(out)
        })
        .await?;
    let items: Vec<Value> = items
        .iter()
        .map(|o| for_version(&r.res, &r.version, o).into_owned())
        .collect();
    let rv = app.store.lock().rv.to_string();
    Ok(json_resp(
        200,
        &json!({
            "kind": r.res.list_kind,
            "apiVersion": r.res.api_version(&r.version),
            "metadata": { "resourceVersion": rv },
            "items": items,
        }),
    ))
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
