//! DELETE of one object (preconditions, propagation policy, dry run) and of a collection
//! (selected by labels and fields). An object removed at once is answered with a `Status`
//! (`Success`, its name, group, resource and uid), as kube-apiserver's generic registry does,
//! except for the kinds whose registry returns the deleted object; an object that stays
//! (finalizers, a terminating namespace) is answered with its new state.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::list::selectors;
use super::route::Req;
use super::{App, dry_run, for_version, json_resp, object_response};
use crate::error::ApiError;
use crate::objects::{self, Propagation, target};
use crate::store::meta_str;

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
    #[serde(default)]
    grace_period_seconds: Option<i64>,
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
    } else if bytes.starts_with(b"k8s\0") {
        // client-go's typed clients send DeleteOptions as protobuf (Helm's uninstall does).
        let v = crate::protobuf::decode(bytes)?;
        serde_json::from_value(v)
            .map_err(|e| ApiError::bad_request(format!("DeleteOptions: {e}")))?
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("json parse error in DeleteOptions: {e}")))?
    };
    if let Some(g) = opts.grace_period_seconds
        && g < 0
    {
        return Err(ApiError::invalid_options(
            "DeleteOptions",
            vec![crate::error::Cause::invalid(
                "gracePeriodSeconds",
                &g.to_string(),
                "must be greater than or equal to 0",
            )],
        ));
    }
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

pub(super) async fn delete(
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
                // What would stay is shown as it is; what would go is answered as gone.
                let stays = key == crate::store::NAMESPACE_KEY
                    || obj
                        .pointer("/metadata/finalizers")
                        .and_then(Value::as_array)
                        .is_some_and(|f| !f.is_empty());
                return Ok((obj, stays));
            }
            let last = objects::delete_with_grace(
                st,
                &key,
                &ns,
                &name,
                policy,
                Some(opts.grace_period_seconds),
            )
            .unwrap_or(obj);
            let stays = st.get(&key, &ns, &name).is_some();
            if !stays && key == crate::dataplane::PODS_KEY {
                crate::dataplane::after_pod_removed(st, &last);
            }
            Ok((last, stays))
        })
        .await?;
    let (obj, stays) = out;
    if stays || r.res.returns_deleted_object() {
        return Ok(object_response(200, r, &obj, headers));
    }
    Ok(json_resp(200, &deleted_status(r, &obj)))
}

/// The `Status` of an object deleted at once (`finalizeDelete` of the generic registry: the
/// details name the resource, not the kind).
fn deleted_status(r: &Req, obj: &Value) -> Value {
    let mut details =
        json!({ "name": meta_str(obj, "name"), "kind": r.res.plural, "uid": meta_str(obj, "uid") });
    if !r.res.group.is_empty() {
        details["group"] = json!(r.res.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

pub(super) async fn delete_collection(
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
