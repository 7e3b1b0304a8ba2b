//! Field ownership on every write, through `ferroflux-fieldmanager`: `managedFields` entries for updates
//! and patches, and server-side apply itself.

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Target};
use crate::util;

/// Maps an apply/ownership error to the response the API server gives.
pub fn to_api_error(e: ferroflux_fieldmanager::SsaError, t: &Target) -> ApiError {
    match e {
        ferroflux_fieldmanager::SsaError::Conflicts(list) => {
            let message = ferroflux_fieldmanager::SsaError::Conflicts(list.clone()).to_string();
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
        ferroflux_fieldmanager::SsaError::BadRequest(msg) => {
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

/// Records the ownership a create, update or patch gives `manager`; `subresource` is the one the
/// request went through (`status`), recorded in the entry like the API server does.
pub fn record_update(
    old: Option<&Value>,
    next: Value,
    manager: &str,
    subresource: Option<&str>,
    t: &Target,
) -> Result<Value, ApiError> {
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    // The common case (no subresource involved) needs no renaming, and no copies.
    if !needs_renaming(old, manager, subresource) {
        return ferroflux_fieldmanager::update(old, &next, manager, &util::now_rfc3339())
            .map_err(|e| to_api_error(e, t));
    }
    let old = old.map(|o| to_own_names(o, manager, subresource));
    let next = to_own_names(&next, manager, subresource);
    let own = own_name(manager, subresource);
    let out = ferroflux_fieldmanager::update(old.as_ref(), &next, &own, &util::now_rfc3339())
        .map_err(|e| to_api_error(e, t))?;
    Ok(from_own_names(out, manager, subresource))
}

/// Applies `config` as `manager` onto `live` through `subresource`; returns the merged object.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    subresource: Option<&str>,
    force: bool,
    t: &Target,
) -> Result<Value, ApiError> {
    if !needs_renaming(live, manager, subresource) {
        return ferroflux_fieldmanager::apply(live, config, manager, force, &util::now_rfc3339())
            .map(|a| a.object)
            .map_err(|e| to_api_error(e, t));
    }
    let live = live.map(|l| to_own_names(l, manager, subresource));
    let config = to_own_names(config, manager, subresource);
    let own = own_name(manager, subresource);
    ferroflux_fieldmanager::apply(live.as_ref(), &config, &own, force, &util::now_rfc3339())
        .map(|a| from_own_names(a.object, manager, subresource))
        .map_err(|e| to_api_error(e, t))
}

// `ferroflux-fieldmanager` keys a manager's entry by name and operation only. The API server also keys
// it by subresource, so a manager's entries for other subresources are renamed out of its way
// for the call, and its entry for this subresource carries a private name; both are restored
// afterwards. The markers cannot clash with real managers (control characters).
const OWN: &str = "\u{1}own\u{1}";
const OTHER: &str = "\u{1}other\u{1}";
// `ferroflux-fieldmanager` never attributes `status` (right for the main resource of a kind with a status
// subresource); through the status subresource it is what the write owns, so it travels under
// another name for the call.
const STATUS_ALIAS: &str = "status\u{1}";

fn rename_status(obj: &mut Value, from: &str, to: &str) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(v) = map.remove(from) {
        map.insert(to.to_string(), v);
    }
    if let Some(list) = entries_mut(obj) {
        for e in list.iter_mut() {
            if let Some(f) = e.get_mut("fieldsV1").and_then(Value::as_object_mut)
                && let Some(v) = f.remove(&format!("f:{from}"))
            {
                f.insert(format!("f:{to}"), v);
            }
        }
    }
}

/// Whether the call touches a subresource, or `manager` has entries for one.
fn needs_renaming(obj: Option<&Value>, manager: &str, subresource: Option<&str>) -> bool {
    subresource.is_some()
        || obj
            .and_then(|o| o.pointer("/metadata/managedFields"))
            .and_then(Value::as_array)
            .is_some_and(|list| {
                list.iter()
                    .any(|e| e["manager"] == manager && e.get("subresource").is_some())
            })
}

fn own_name(manager: &str, subresource: Option<&str>) -> String {
    match subresource {
        None => manager.to_string(),
        Some(_) => format!("{OWN}{manager}"),
    }
}

fn entries_mut(v: &mut Value) -> Option<&mut Vec<Value>> {
    v.pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
}

fn to_own_names(obj: &Value, manager: &str, subresource: Option<&str>) -> Value {
    let mut obj = obj.clone();
    if subresource == Some("status") {
        rename_status(&mut obj, "status", STATUS_ALIAS);
    }
    if let Some(list) = entries_mut(&mut obj) {
        for e in list.iter_mut() {
            let Some(m) = e.as_object_mut() else { continue };
            if m.get("manager").and_then(Value::as_str) != Some(manager) {
                continue;
            }
            let sub = m
                .remove("subresource")
                .and_then(|s| s.as_str().map(str::to_string));
            let renamed = if sub.as_deref() == subresource {
                own_name(manager, subresource)
            } else {
                format!("{OTHER}{}{OTHER}{manager}", sub.unwrap_or_default())
            };
            m.insert("manager".into(), json!(renamed));
        }
    }
    obj
}

fn from_own_names(mut obj: Value, manager: &str, subresource: Option<&str>) -> Value {
    if subresource == Some("status") {
        rename_status(&mut obj, STATUS_ALIAS, "status");
    }
    let own = own_name(manager, subresource);
    if let Some(list) = entries_mut(&mut obj) {
        for e in list.iter_mut() {
            let Some(m) = e.as_object_mut() else { continue };
            let Some(name) = m.get("manager").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let (real, sub) = if name == own {
                (manager.to_string(), subresource.map(str::to_string))
            } else if let Some(rest) = name.strip_prefix(OTHER)
                && let Some((sub, real)) = rest.split_once(OTHER)
            {
                (real.to_string(), (!sub.is_empty()).then(|| sub.to_string()))
            } else {
                continue;
            };
            m.insert("manager".into(), json!(real));
            if let Some(sub) = sub {
                // The API server writes `subresource` after `operation`.
                let time = m.remove("time");
                m.insert("subresource".into(), json!(sub));
                if let Some(time) = time {
                    m.insert("time".into(), time);
                }
            }
        }
    }
    obj
}
