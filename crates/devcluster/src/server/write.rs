//! Create (POST) and update (PUT), and `write_existing`, the admission and storage of a new state
//! of an existing object that update and patch share.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use super::route::Req;
use super::{App, object_response, stored_response};
use crate::error::ApiError;
use crate::objects::{self, Mode, target};
use crate::store::meta_str;

pub fn field_manager_of(q: &HashMap<String, String>, headers: &HeaderMap) -> String {
    q.get("fieldManager").cloned().unwrap_or_else(|| {
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
            .unwrap_or_else(|| "unknown".into())
    })
}

pub(super) async fn create(
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
            if crate::hpa::is_v1(&r.res, &r.version) {
                obj = crate::hpa::from_v1(&obj);
            }
            let pending = crate::workloads::simulate(st, &r.res, None, &mut obj);
            if dry {
                return Ok(crate::store::Stored {
                    obj: Arc::new(obj),
                    json: Bytes::new(),
                });
            }
            st.pending_ready.extend(pending);
            let stored = st.put_stored(&key, obj);
            crate::dataplane::after_write(st, &key, ns.as_deref().unwrap_or(""), &name);
            Ok(stored)
        })
        .await?;
    if stored.json.is_empty() {
        return Ok(object_response(201, r, &stored.obj, headers));
    }
    Ok(stored_response(201, r, &stored, headers))
}

pub(super) async fn update(
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
    let hpa_v1 = crate::hpa::is_v1(&r.res, &r.version);
    let old = if events_api {
        Arc::new(crate::events::from_core(&stored))
    } else if hpa_v1 {
        Arc::new(crate::hpa::to_v1(&stored))
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
    if hpa_v1 {
        next = crate::hpa::from_v1(&next);
    }
    // Like the API server, a write that changes nothing keeps the stored object and version.
    if unchanged(&stored, &next) {
        return Ok(stored);
    }
    if dry {
        return Ok(Arc::new(next));
    }
    st.pending_ready.extend(pending);
    let stored = objects::store_update(st, &key, next);
    if !status_only {
        crate::dataplane::after_write(st, &key, &ns, &name);
    }
    Ok(stored)
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
