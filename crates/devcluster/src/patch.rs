//! PATCH: JSON merge patch, JSON patch, strategic merge patch and (server-side) apply.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;

use crate::error::ApiError;
use crate::objects::target;
use crate::server::{App, Req, write_existing};

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
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other:?})"
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
    let manager = crate::server::field_manager_of(q, headers);
    let key = r.res.key();
    let stored = app
        .store
        .write(|st| {
            let name = r.name.clone().unwrap_or_default();
            let Some(old) = st.get(&key, r.ns.as_deref().unwrap_or(""), &name).cloned() else {
                return Err(ApiError::not_found(&target(&r.res, &name)));
            };
            let mut doc = (*old).clone();
            match kind {
                Kind::Merge => {
                    if !patch.is_object() {
                        return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                    }
                    json_patch::merge(&mut doc, &patch);
                }
                Kind::Json => {
                    let p: json_patch::Patch = serde_json::from_value(patch.clone())
                        .map_err(|e| ApiError::bad_request(format!("json patch: {e}")))?;
                    json_patch::patch(&mut doc, &p).map_err(|e| {
                        ApiError::invalid(
                            &target(&r.res, &name),
                            vec![crate::error::Cause {
                                field: "patch".into(),
                                reason: "FieldValueInvalid",
                                message: format!("the JSON patch could not be applied: {e}"),
                            }],
                        )
                    })?;
                }
                Kind::Strategic => {
                    return Err(ApiError::unsupported_media_type(
                        "application/strategic-merge-patch+json is not supported by this devcluster yet; use application/merge-patch+json or server-side apply",
                    ));
                }
            }
            // The patched object keeps the version the client addressed.
            write_existing(st, r, doc, dry, &manager, "Update")
        })
        .await?;
    Ok(crate::server::object_response(200, r, &stored, headers))
}
