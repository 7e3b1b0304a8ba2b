//! Field ownership on every write, through `ferroflux-ssa`: `managedFields` entries for updates
//! and patches, and server-side apply itself.

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Target};
use crate::util;

/// Maps an apply/ownership error to the response the API server gives.
pub fn to_api_error(e: ferroflux_ssa::SsaError, t: &Target) -> ApiError {
    match e {
        ferroflux_ssa::SsaError::Conflicts(list) => {
            let message = ferroflux_ssa::SsaError::Conflicts(list.clone()).to_string();
            let mut err = ApiError::conflict(t, "");
            err.message = message;
            let causes: Vec<Value> = list
                .iter()
                .map(|c| {
                    json!({
                        "reason": "FieldManagerConflict",
                        "message": format!("conflict with {:?} using {}", c.manager, c.api_version),
                        "field": c.field,
                    })
                })
                .collect();
            if let Some(d) = err.details.as_mut() {
                d["causes"] = Value::Array(causes);
            }
            err
        }
        ferroflux_ssa::SsaError::BadRequest(msg) => {
            if let Some((field, rest)) = msg.split_once(": Duplicate value: ") {
                return ApiError::invalid(
                    t,
                    vec![Cause {
                        field: field.trim_start_matches('.').to_string(),
                        reason: "FieldValueDuplicate",
                        message: format!("Duplicate value: {rest}"),
                    }],
                );
            }
            ApiError::bad_request(msg)
        }
    }
}

/// Records the ownership a create, update or patch gives `manager`.
pub fn record_update(
    old: Option<&Value>,
    next: Value,
    manager: &str,
    t: &Target,
) -> Result<Value, ApiError> {
    ferroflux_ssa::update(old, &next, manager, &util::now_rfc3339()).map_err(|e| to_api_error(e, t))
}

/// Applies `config` as `manager` onto `live`; returns the merged object.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    t: &Target,
) -> Result<Value, ApiError> {
    ferroflux_ssa::apply(live, config, manager, force, &util::now_rfc3339())
        .map(|a| a.object)
        .map_err(|e| to_api_error(e, t))
}
