//! What the API server does to an object on its way in (defaulting, server-set fields,
//! validation) and on its way out (finalizers, namespace termination, garbage collection).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Target};
use crate::resources::{Resource, resource_from_crd};
use crate::store::{CRD_KEY, NAMESPACE_KEY, State, meta_str};
use crate::util;

pub fn target<'a>(res: &'a Resource, name: &'a str) -> Target<'a> {
    Target {
        group: &res.group,
        plural: &res.plural,
        kind: &res.kind,
        name,
    }
}

/// Kinds without `metadata.generation` in Kubernetes (no spec to observe).
fn has_generation(res: &Resource) -> bool {
    !matches!(
        (res.group.as_str(), res.plural.as_str()),
        (
            "",
            "configmaps" | "secrets" | "events" | "endpoints" | "serviceaccounts"
        ) | ("events.k8s.io", _)
            | ("coordination.k8s.io", _)
    )
}

/// What a change must touch to bump `metadata.generation`: everything but metadata, and but
/// status when status has its own subresource (a CRD without one bumps on status changes too).
fn generation_relevant(res: &Resource, v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        if res.status_subresource || res.crd.is_none() {
            m.remove("status");
        }
    }
    v
}

pub enum Mode<'a> {
    Create,
    Update(&'a Value),
    /// A write to the `status` subresource.
    Status(&'a Value),
}

/// Checks an incoming object against the request and fills the fields the server owns.
pub fn admit(
    st: &State,
    res: &Resource,
    version: &str,
    ns: Option<&str>,
    url_name: Option<&str>,
    mut obj: Value,
    mode: Mode,
) -> Result<Value, ApiError> {
    // A custom resource is pruned and defaulted as it is decoded, by the schema of the version
    // its body is written in.
    if let Some(schema) = body_schema(res, version, &obj) {
        crate::structural::admit(&mut obj, &schema, res.prune_unknown);
    }
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON or YAML object",
        ));
    };
    let api_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in the request body",
        ));
    }
    let expected_av = res.api_version(version);
    let av_ok = api_version == expected_av
        || (res.crd.is_some()
            && res
                .versions
                .iter()
                .any(|v| res.api_version(v) == api_version));
    if !av_ok {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected_av})"
        )));
    }
    if kind != res.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            res.kind
        )));
    }
    map.insert("apiVersion".into(), json!(expected_av));
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    for field in ["labels", "annotations"] {
        if let Some(m) = meta.get(field) {
            let ok = m.is_null()
                || m.as_object()
                    .is_some_and(|o| o.values().all(Value::is_string));
            if !ok {
                return Err(ApiError::bad_request(format!(
                    "metadata.{field} must be a map of string keys to string values"
                )));
            }
        }
    }

    // Namespace: the URL decides; a different one in the body is an error.
    if res.namespaced {
        let url_ns = ns.unwrap_or_default();
        match meta.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != url_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), json!(url_ns));
            }
        }
    } else {
        meta.remove("namespace");
    }

    // Name.
    let mut name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(u) = url_name
        && name != u
    {
        if name.is_empty() && !matches!(mode, Mode::Create) {
            name = u.to_string();
            meta.insert("name".into(), json!(name));
        } else {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({u})"
            )));
        }
    }
    if name.is_empty() {
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if generate.is_empty() || !matches!(mode, Mode::Create) {
            return Err(ApiError::invalid(
                &target(res, ""),
                vec![Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
        name = format!("{generate}{}", util::name_suffix());
        meta.insert("name".into(), json!(name));
    }
    if let Err(msg) = util::validate_name(&name, res.name_rule()) {
        return Err(ApiError::invalid(
            &target(res, &name),
            vec![Cause::invalid("metadata.name", &name, &msg)],
        ));
    }

    // Server-owned metadata.
    match mode {
        Mode::Create => {
            meta.insert("uid".into(), json!(util::new_uid()));
            meta.insert("creationTimestamp".into(), json!(util::now_rfc3339()));
            meta.remove("resourceVersion");
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            if has_generation(res) {
                meta.insert("generation".into(), json!(1));
            } else {
                meta.remove("generation");
            }
            if res.status_subresource && res.plural != "namespaces" {
                map.remove("status");
            }
        }
        Mode::Update(old) | Mode::Status(old) => {
            let sent_rv = meta
                .get("resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !sent_rv.is_empty() && sent_rv != meta_str(old, "resourceVersion") {
                return Err(ApiError::stale(&target(res, &name)));
            }
            let old_meta = old.get("metadata").and_then(Value::as_object);
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old_meta.and_then(|m| m.get(field)) {
                    Some(v) => meta.insert(field.into(), v.clone()),
                    None => meta.remove(field),
                };
            }
            if let Mode::Status(old) = mode {
                // Only the status changes through the status subresource.
                let status = map.remove("status");
                let mut next = old.clone();
                if let Some(n) = next.as_object_mut() {
                    match status {
                        Some(s) => n.insert("status".into(), s),
                        None => n.remove("status"),
                    };
                    if let Some(m) = n.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("resourceVersion");
                    }
                }
                stored_defaults(res, &mut next);
                return Ok(next);
            }
            if res.status_subresource {
                match old.get("status") {
                    Some(s) => map.insert("status".into(), s.clone()),
                    None => map.remove("status"),
                };
            }
            if has_generation(res) {
                let old_gen = old
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                if generation_relevant(res, old) != generation_relevant(res, &obj) {
                    obj["metadata"]["generation"] = json!(old_gen + 1);
                }
            }
        }
    }

    kind_specific(st, res, &mut obj, &name)?;
    stored_defaults(res, &mut obj);
    Ok(obj)
}

/// The schema of the CRD version a body names (or the URL's, when it names none of them).
fn body_schema(res: &Resource, url_version: &str, obj: &Value) -> Option<Arc<Value>> {
    // Built-in kinds carry no schemas: nothing to look up.
    if res.schemas.is_empty() {
        return None;
    }
    let named = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|av| res.versions.iter().find(|v| res.api_version(v) == av));
    res.schemas
        .get(named.map_or(url_version, String::as_str))
        .cloned()
}

/// The defaults the API server fills when it reads the stored object back (so a create's answer
/// already shows them, even where the status subresource dropped the body's status), by the
/// schema of the storage version.
fn stored_defaults(res: &Resource, obj: &mut Value) {
    if let Some(schema) = res.versions.first().and_then(|v| res.schemas.get(v)) {
        crate::structural::default_stored(obj, schema);
    }
}

/// Defaults and checks particular to some kinds.
fn kind_specific(st: &State, res: &Resource, obj: &mut Value, name: &str) -> Result<(), ApiError> {
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "namespaces") => {
            if obj.pointer("/spec/finalizers").is_none() {
                obj["spec"] = json!({ "finalizers": ["kubernetes"] });
            }
            if obj.pointer("/metadata/deletionTimestamp").is_none() {
                obj["status"] = json!({ "phase": "Active" });
            }
            let labels = obj["metadata"]
                .as_object_mut()
                .map(|m| m.entry("labels").or_insert_with(|| json!({})));
            if let Some(Value::Object(l)) = labels {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        ("", "secrets") => {
            if obj
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                obj["type"] = json!("Opaque");
            }
            crate::validate::secret(obj, &target(res, name))?;
        }
        ("", "configmaps") => crate::validate::config_map(obj, &target(res, name))?,
        // The update strategies the API server defaults (`kubectl rollout status` of a
        // StatefulSet or DaemonSet requires RollingUpdate).
        ("apps", "deployments" | "statefulsets" | "daemonsets") => {
            let (field, rolling) = match res.plural.as_str() {
                "deployments" => (
                    "strategy",
                    json!({ "maxUnavailable": "25%", "maxSurge": "25%" }),
                ),
                "statefulsets" => ("updateStrategy", json!({ "partition": 0 })),
                _ => (
                    "updateStrategy",
                    json!({ "maxUnavailable": 1, "maxSurge": 0 }),
                ),
            };
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                let strategy = spec.entry(field).or_insert_with(|| json!({}));
                if let Some(s) = strategy.as_object_mut()
                    && s.get("type").is_none_or(Value::is_null)
                {
                    s.insert("type".into(), json!("RollingUpdate"));
                    s.entry("rollingUpdate").or_insert(rolling);
                }
            }
        }
        // autoscaling/v2's defaults (an autoscaler with no target scales on 80% CPU).
        ("autoscaling", "horizontalpodautoscalers") => {
            let v2 = obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v2");
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.entry("minReplicas").or_insert(json!(1));
                let empty = spec
                    .get("metrics")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty);
                // (v1's implicit target is made explicit by the conversion to v2)
                if v2 && empty {
                    spec.insert("metrics".into(), json!([crate::hpa::default_metric()]));
                }
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let r = resource_from_crd(obj).map_err(|(field, msg)| {
                ApiError::invalid(
                    &Target {
                        group: &res.group,
                        plural: &res.plural,
                        kind: &res.kind,
                        name,
                    },
                    vec![Cause {
                        field,
                        reason: "FieldValueInvalid",
                        message: msg,
                    }],
                )
            })?;
            // Two CRDs may not claim the same group and plural.
            if let Some(other) = st.registry.all().iter().find(|o| {
                o.group == r.group && o.plural == r.plural && o.crd.as_deref() != Some(name)
            }) {
                return Err(ApiError::invalid(
                    &target(res, name),
                    vec![Cause::invalid(
                        "spec.names.plural",
                        &r.plural,
                        &format!(
                            "already served by {}",
                            other.crd.as_deref().unwrap_or("a built-in kind")
                        ),
                    )],
                ));
            }
            let now = util::now_rfc3339();
            let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
            let mut accepted = names;
            if accepted.get("singular").is_none() {
                accepted["singular"] = json!(r.singular);
            }
            if accepted.get("listKind").is_none() {
                accepted["listKind"] = json!(r.list_kind);
            }
            let storage: Vec<Value> = obj
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name").cloned())
                        .collect()
                })
                .unwrap_or_default();
            obj["status"] = json!({
                "acceptedNames": accepted,
                "conditions": [
                    { "type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
                      "reason": "NoConflicts", "message": "no conflicts found" },
                    { "type": "Established", "status": "True", "lastTransitionTime": now,
                      "reason": "InitialNamesAccepted", "message": "the initial names have been accepted" },
                ],
                "storedVersions": storage,
            });
        }
        _ => {}
    }
    Ok(())
}

/// Checks a namespaced create may go ahead: the namespace exists and is not terminating.
pub fn check_namespace(st: &State, res: &Resource, ns: &str, name: &str) -> Result<(), ApiError> {
    match st.get(NAMESPACE_KEY, "", ns) {
        None => Err(ApiError::not_found(&Target {
            group: "",
            plural: "namespaces",
            kind: "Namespace",
            name: ns,
        })),
        Some(n) if n.pointer("/metadata/deletionTimestamp").is_some() => Err(ApiError::forbidden(
            &target(res, name),
            &format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        )),
        Some(_) => Ok(()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    pub fn parse(s: &str) -> Result<Propagation, ApiError> {
        match s {
            "" | "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))),
        }
    }
}

fn finalizers(v: &Value) -> Vec<String> {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn set_finalizers(v: &mut Value, f: &[String]) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        if f.is_empty() {
            m.remove("finalizers");
        } else {
            m.insert("finalizers".into(), json!(f));
        }
    }
}

fn mark_deleting(v: &mut Value) {
    if v.pointer("/metadata/deletionTimestamp").is_none()
        && let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("deletionTimestamp".into(), json!(util::now_rfc3339()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
}

/// Deletes an object the way the API server and its controllers together would: finalizers hold
/// it (with `deletionTimestamp` set), namespaces empty themselves first, dependents follow their
/// owner. Returns the object as the client should see it (still there, or the last state).
pub fn delete_object(
    st: &mut State,
    key: &str,
    ns: &str,
    name: &str,
    policy: Propagation,
) -> Option<Arc<Value>> {
    delete_with_grace(st, key, ns, name, policy, None)
}

/// [`delete_object`] for a client's DELETE, with the grace period it asked for (`Some(None)`:
/// the Pod's own). A running Pod a client deletes is terminated gracefully; what a cascade
/// (garbage collection, namespace termination, a scale-down) deletes goes at once (`None`), so
/// a cascade completes in the write that started it.
pub fn delete_with_grace(
    st: &mut State,
    key: &str,
    ns: &str,
    name: &str,
    policy: Propagation,
    client_grace: Option<Option<i64>>,
) -> Option<Arc<Value>> {
    let obj = st.get(key, ns, name)?.clone();
    let uid = meta_str(&obj, "uid").to_string();
    if key == NAMESPACE_KEY {
        return Some(terminate_namespace(st, name));
    }
    if let Some(grace) = client_grace
        && key == crate::dataplane::PODS_KEY
        && crate::dataplane::graceful_pod(&obj, grace)
    {
        // A running Pod is marked and removed by its kubelet right after (graceful deletion).
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Some(obj);
        }
        let seconds = grace
            .or_else(|| {
                obj.pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_i64)
            })
            .unwrap_or(30);
        let mut o = (*obj).clone();
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert(
                "deletionTimestamp".into(),
                json!(util::format_rfc3339(util::unix_now() + seconds)),
            );
            m.insert("deletionGracePeriodSeconds".into(), json!(seconds));
            m.remove("resourceVersion");
        }
        let stored = st.put(key, o);
        st.pending_ready.push(crate::workloads::Pending {
            remove: true,
            after: std::time::Duration::ZERO,
            key: key.to_string(),
            ns: ns.to_string(),
            name: name.to_string(),
            generation: 0,
        });
        return Some(stored);
    }
    let mut fins = finalizers(&obj);
    match policy {
        Propagation::Orphan => {
            for (k, n, nm) in st.dependents_of(&uid) {
                if let Some(d) = st.get(&k, &n, &nm).cloned() {
                    let mut d = (*d).clone();
                    if let Some(refs) = d
                        .pointer_mut("/metadata/ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                        if refs.is_empty()
                            && let Some(m) = d["metadata"].as_object_mut()
                        {
                            m.remove("ownerReferences");
                        }
                    }
                    st.put(&k, d);
                }
            }
        }
        Propagation::Foreground => {
            let deps = st.dependents_of(&uid);
            if !deps.is_empty() {
                if !fins.iter().any(|f| f == "foregroundDeletion") {
                    fins.push("foregroundDeletion".into());
                }
                let mut o = (*obj).clone();
                set_finalizers(&mut o, &fins);
                mark_deleting(&mut o);
                st.put(key, o);
                for (k, n, nm) in deps {
                    delete_object(st, &k, &n, &nm, Propagation::Foreground);
                }
                // The dependents may all be gone already, releasing the owner.
                release_foreground(st, &uid);
                return st.get(key, ns, name).cloned().or(Some(obj));
            }
        }
        Propagation::Background => {}
    }
    if !fins.is_empty() {
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Some(obj);
        }
        let mut o = (*obj).clone();
        mark_deleting(&mut o);
        return Some(st.put(key, o));
    }
    remove_now(st, key, ns, name)
}

/// Removes an object whose finalizers are all gone, then lets what depended on it follow.
pub fn remove_now(st: &mut State, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
    let gone = st.remove(key, ns, name)?;
    let uid = meta_str(&gone, "uid").to_string();
    if key == CRD_KEY
        && let Some(spec_group) = gone.pointer("/spec/group").and_then(Value::as_str)
        && let Some(plural) = gone.pointer("/spec/names/plural").and_then(Value::as_str)
    {
        st.remove_all(&format!("{spec_group}/{plural}"));
    }
    // Background garbage collection: dependents with no owner left go too.
    for (k, n, nm) in st.dependents_of(&uid) {
        let Some(d) = st.get(&k, &n, &nm).cloned() else {
            continue;
        };
        let owners_left = d
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .any(|u| u != uid && st.by_uid(u).is_some())
            })
            .unwrap_or(false);
        if !owners_left {
            delete_object(st, &k, &n, &nm, Propagation::Background);
        }
    }
    // Owners waiting in foreground deletion may now be free.
    if let Some(refs) = gone
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    {
        let owners: Vec<String> = refs
            .iter()
            .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
            .collect();
        for o in owners {
            release_foreground(st, &o);
        }
    }
    if !ns.is_empty() {
        finish_namespace(st, ns);
    }
    Some(gone)
}

fn release_foreground(st: &mut State, owner_uid: &str) {
    let Some((k, n, nm)) = st.by_uid(owner_uid) else {
        return;
    };
    let Some(owner) = st.get(&k, &n, &nm).cloned() else {
        return;
    };
    let mut fins = finalizers(&owner);
    if !fins.iter().any(|f| f == "foregroundDeletion") || !st.dependents_of(owner_uid).is_empty() {
        return;
    }
    fins.retain(|f| f != "foregroundDeletion");
    if fins.is_empty() {
        remove_now(st, &k, &n, &nm);
    } else {
        let mut o = (*owner).clone();
        set_finalizers(&mut o, &fins);
        st.put(&k, o);
    }
}

fn terminate_namespace(st: &mut State, name: &str) -> Arc<Value> {
    let Some(ns_obj) = st.get(NAMESPACE_KEY, "", name).cloned() else {
        return Arc::new(Value::Null);
    };
    let mut current = ns_obj.clone();
    if ns_obj.pointer("/metadata/deletionTimestamp").is_none() {
        let mut o = (*ns_obj).clone();
        mark_deleting(&mut o);
        o["status"] = json!({
            "phase": "Terminating",
            "conditions": [{
                "type": "NamespaceDeletionContentFailure", "status": "False",
                "lastTransitionTime": util::now_rfc3339(), "reason": "ContentDeleted",
                "message": "All content successfully deleted, may be waiting on finalization",
            }],
        });
        current = st.put(NAMESPACE_KEY, o);
    }
    for (k, n, nm) in st.namespaced_refs(name) {
        delete_object(st, &k, &n, &nm, Propagation::Background);
    }
    finish_namespace(st, name);
    st.get(NAMESPACE_KEY, "", name).cloned().unwrap_or(current)
}

/// Removes a terminating namespace once it is empty and has no finalizers of its own.
fn finish_namespace(st: &mut State, name: &str) {
    let Some(ns_obj) = st.get(NAMESPACE_KEY, "", name) else {
        return;
    };
    if ns_obj.pointer("/metadata/deletionTimestamp").is_none() || !finalizers(ns_obj).is_empty() {
        return;
    }
    if st.namespaced_refs(name).is_empty() {
        st.remove(NAMESPACE_KEY, "", name);
    }
}

/// Stores an updated object, or removes it when the update cleared the last finalizer of an
/// object being deleted.
pub fn store_update(st: &mut State, key: &str, obj: Value) -> Arc<Value> {
    let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && finalizers(&obj).is_empty() {
        let ns = meta_str(&obj, "namespace").to_string();
        let name = meta_str(&obj, "name").to_string();
        let stored = st.put(key, obj);
        if key == NAMESPACE_KEY {
            finish_namespace(st, &name);
            return stored;
        }
        return remove_now(st, key, &ns, &name).unwrap_or(stored);
    }
    st.put(key, obj)
}
