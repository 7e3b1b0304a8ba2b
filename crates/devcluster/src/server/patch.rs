//! PATCH: JSON merge patch, JSON patch, strategic merge patch (built-in kinds, through
//! `ferroflux-schema`) and server-side apply (through `ferroflux-fieldmanager`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::{App, Req, object_response, parse_body, write_existing};
use crate::error::{ApiError, Cause};
use crate::objects::{self, Mode, target};

const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json";

pub async fn patch(
    app: &Arc<App>,
    r: &Req,
    bytes: &[u8],
    ct: &str,
    dry: bool,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    enum Kind {
        Merge,
        Json,
        Strategic,
    }
    let kind = match ct {
        "application/merge-patch+json" => Kind::Merge,
        "application/json-patch+json" => Kind::Json,
        "application/strategic-merge-patch+json" => Kind::Strategic,
        "application/apply-patch+yaml" | "application/apply-patch+cbor" if ct.ends_with("yaml") => {
            return apply(app, r, bytes, dry, q, headers).await;
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: {ACCEPTED} (got {other:?})"
            )));
        }
    };
    let patch: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("json parse error: {e}")))?;
    if matches!(kind, Kind::Strategic) && r.res.crd.is_some() {
        return Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let manager = super::field_manager_of(q, headers);
    let key = r.res.key();
    let stored = app
        .store
        .write(|st| {
            let name = r.name.clone().unwrap_or_default();
            let Some(old) = st.get(&key, r.ns.as_deref().unwrap_or(""), &name).cloned() else {
                return Err(ApiError::not_found(&target(&r.res, &name)));
            };
            let mut doc = if crate::events::is_events_api(&r.res) {
                crate::events::from_core(&old)
            } else if crate::hpa::is_v1(&r.res, &r.version) {
                crate::hpa::to_v1(&old)
            } else {
                (*old).clone()
            };
            // A patch is applied to the object as the client addressed it.
            doc["apiVersion"] = json!(r.res.api_version(&r.version));
            let patch_error = |message: String| {
                ApiError::invalid(
                    &target(&r.res, &name),
                    vec![Cause {
                        field: "patch".into(),
                        reason: "FieldValueInvalid",
                        message,
                    }],
                )
            };
            match kind {
                Kind::Merge => {
                    if !patch.is_object() {
                        return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                    }
                    json_patch::merge(&mut doc, &patch);
                }
                Kind::Json => {
                    let mut p: json_patch::Patch = serde_json::from_value(patch.clone())
                        .map_err(|e| ApiError::bad_request(format!("json patch: {e}")))?;
                    // The API server's JSON Patch (evanphx/json-patch) lets a `test` for null
                    // pass on a missing field: clients add a first finalizer that way.
                    p.0.retain(|op| match op {
                        json_patch::PatchOperation::Test(t) => {
                            !(t.value.is_null() && doc.pointer(t.path.as_str()).is_none())
                        }
                        _ => true,
                    });
                    json_patch::patch(&mut doc, &p).map_err(|e| {
                        patch_error(format!("the JSON patch could not be applied: {e}"))
                    })?;
                }
                Kind::Strategic => {
                    doc = ferroflux_schema::strategic_merge_with(
                        &doc,
                        &patch,
                        ferroflux_schema::Flavor::ApiServer,
                    )
                    .map_err(|e| {
                        patch_error(format!(
                            "the strategic merge patch could not be applied: {e}"
                        ))
                    })?;
                }
            }
            write_existing(st, r, doc, dry, Some(&manager))
        })
        .await?;
    Ok(object_response(200, r, &stored, headers))
}

/// Server-side apply: merge the applied configuration by field ownership, creating the object
/// when it does not exist.
async fn apply(
    app: &Arc<App>,
    r: &Req,
    bytes: &[u8],
    dry: bool,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let mut config = parse_body(bytes, "application/yaml")?;
    let name = r.name.clone().unwrap_or_default();
    let Some(map) = config.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the applied configuration must be an object",
        ));
    };
    let expected = r.res.api_version(&r.version);
    let av = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if av != expected {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({expected})"
        )));
    }
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != r.res.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            r.res.kind
        )));
    }
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    match meta.get("name").and_then(Value::as_str) {
        None | Some("") => meta["name"] = json!(name),
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    let manager = q.get("fieldManager").cloned().unwrap_or_default();
    let force = match q.get("force").map(String::as_str) {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "force: invalid value {other:?}"
            )));
        }
    };
    // Ownership follows what the request may change: the main resource of a kind with a status
    // subresource ignores `status`, the status subresource ignores everything else.
    if r.sub.as_deref() == Some("status") {
        if let Some(m) = config.as_object_mut() {
            m.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.retain(|k, _| matches!(k.as_str(), "name" | "namespace"));
            }
        }
    } else if r.res.status_subresource
        && let Some(m) = config.as_object_mut()
    {
        m.remove("status");
    }
    let key = r.res.key();
    let ns = r.ns.clone();
    let (code, stored) = app
        .store
        .write(|st| {
            let t = target(&r.res, &name);
            let events_api = crate::events::is_events_api(&r.res);
            let live = st.get(&key, ns.as_deref().unwrap_or(""), &name).map(|l| {
                if events_api {
                    Arc::new(crate::events::from_core(l))
                } else if crate::hpa::is_v1(&r.res, &r.version) {
                    Arc::new(crate::hpa::to_v1(l))
                } else {
                    l.clone()
                }
            });
            let merged = crate::ssa::apply(
                live.as_deref(),
                &config,
                &manager,
                r.sub.as_deref(),
                force,
                &t,
            )?;
            match live {
                Some(_) => Ok((200, write_existing(st, r, merged, dry, None)?)),
                None => {
                    if r.sub.is_some() {
                        return Err(ApiError::not_found(&t));
                    }
                    // An apply that creates is also a create, as the API server checks it.
                    if let Some(user) = &r.user {
                        crate::authz::authorize(st, user, &r.attributes("create", &name))?;
                    }
                    let mut obj = objects::admit(
                        st,
                        &r.res,
                        &r.version,
                        ns.as_deref(),
                        Some(&name),
                        merged,
                        Mode::Create,
                    )?;
                    if let Some(ns) = &ns {
                        objects::check_namespace(st, &r.res, ns, &name)?;
                    }
                    if events_api {
                        crate::events::validate_create(&obj, &t)?;
                        obj = crate::events::to_core(obj);
                    }
                    if crate::hpa::is_v1(&r.res, &r.version) {
                        obj = crate::hpa::from_v1(&obj);
                    }
                    let pending = crate::workloads::simulate(st, &r.res, None, &mut obj);
                    if dry {
                        return Ok((201, Arc::new(obj)));
                    }
                    st.pending_ready.extend(pending);
                    let stored = st.put(&key, obj);
                    crate::dataplane::after_write(st, &key, ns.as_deref().unwrap_or(""), &name);
                    Ok((201, stored))
                }
            }
        })
        .await?;
    Ok(object_response(code, r, &stored, headers))
}
