//! LIST: `ListOptions` validation, the resourceVersion a list reads (newest, not older than,
//! exact), continue tokens, label and field selectors, and the list body written from each
//! object's stored JSON.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::route::Req;
use super::{App, for_version, json_bytes, json_resp, serves_as_stored, wants_table};
use crate::error::{ApiError, Cause};
use crate::resources::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::meta_str;

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

pub(super) fn list(
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
