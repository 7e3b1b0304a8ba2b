//! Routing: a Kubernetes REST path to discovery documents or to a resource request (`Req`), the
//! RBAC check of impersonated users, injected faults, and the dispatch of a request by verb.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::{
    App, content_type, dry_run, json_bytes, json_resp, parse_body, read_body, stored_response, text,
};
use crate::authz::User;
use crate::discovery;
use crate::error::ApiError;
use crate::faults::{Connection, FaultAction};
use crate::objects::target;
use crate::resources::Resource;
use crate::store::Store;

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

#[allow(clippy::too_many_arguments)]
pub(super) async fn route(
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
        ["openapi", "v2"] => {
            let reg = app.store.lock().registry.clone();
            // client-go's discovery asks for gnostic's protobuf and reads the body as such.
            let protobuf = headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("protobuf"));
            return get_only(if protobuf {
                json_bytes(
                    200,
                    discovery::openapi_v2_protobuf(&reg),
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                )
            } else {
                json_resp(200, &discovery::openapi_v2(&reg))
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
    let is_watch = super::query_bool(q, "watch");
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

async fn dispatch(
    app: &Arc<App>,
    method: &Method,
    r: Req,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let is_watch = super::query_bool(q, "watch");
    if let Some(sub) = &r.sub
        && !(sub == "status" && (r.res.status_subresource))
        && !(sub == "finalize" && r.res.plural == "namespaces")
        && !(sub == "scale" && r.res.has_scale())
        && !(sub == "log" && r.res.has_log())
        && !(r.res.has_pod_actions() && super::pods::ACTIONS.contains(&sub.as_str()))
    {
        return Err(ApiError::page_not_found());
    }
    let sub = r.sub.clone();
    let result = match sub.as_deref() {
        Some("scale") => super::scale::scale(app, method, &r, q, headers, body).await,
        Some("log") => super::scale::log(app, method, &r, q),
        Some(sub) if super::pods::ACTIONS.contains(&sub) => {
            super::pods::action(app, method, &r, sub, headers, body).await
        }
        _ => dispatch_verb(app, method, r, q, headers, body, is_watch).await,
    };
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
    if r.res.is_binding() {
        return super::pods::bindings(app, method, &r, headers, body).await;
    }
    if r.res.is_component_status() {
        if method != Method::GET || is_watch {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
        return super::pods::component_statuses(&r, headers);
    }
    match (method.clone(), r.name.is_some()) {
        (Method::GET, false) if is_watch => super::watch::watch(app, &r, q, headers),
        (Method::GET, false) => super::list::list(app, &r, q, headers),
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
            let obj = request_object(&bytes, headers, &r)?;
            let dry = dry_run(q)?;
            super::write::create(app, &r, obj, dry, q, headers).await
        }
        (Method::PUT, true) => {
            let bytes = read_body(body).await?;
            let obj = request_object(&bytes, headers, &r)?;
            let dry = dry_run(q)?;
            super::write::update(app, &r, obj, dry, q, headers).await
        }
        (Method::PATCH, true) => {
            let bytes = read_body(body).await?;
            let dry = dry_run(q)?;
            super::patch::patch(app, &r, &bytes, &content_type(headers), dry, q, headers).await
        }
        (Method::DELETE, true) => {
            let bytes = read_body(body).await?;
            super::delete::delete(app, &r, &bytes, q, headers).await
        }
        (Method::DELETE, false) => {
            let bytes = read_body(body).await?;
            super::delete::delete_collection(app, &r, &bytes, q).await
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {method}"
        ))),
    }
}

/// The object a create or update sends, in the resource's kind: like the API server's decoder,
/// a body without `apiVersion` or `kind` takes them from the URL.
pub(super) fn request_object(
    bytes: &[u8],
    headers: &HeaderMap,
    r: &Req,
) -> Result<Value, ApiError> {
    let ct = content_type(headers);
    let mut obj = if ct.contains("protobuf") {
        if bytes.is_empty() {
            return Err(ApiError::bad_request("the request body is empty"));
        }
        crate::protobuf::decode_for(bytes, &r.res, &r.version)?
    } else {
        parse_body(bytes, &ct)?
    };
    if let Some(m) = obj.as_object_mut() {
        let missing = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if missing(m.get("apiVersion")) {
            m.insert("apiVersion".into(), json!(r.res.api_version(&r.version)));
        }
        if missing(m.get("kind")) {
            m.insert("kind".into(), json!(r.res.kind));
        }
    }
    Ok(obj)
}
