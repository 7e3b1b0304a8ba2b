//! The API server's field manager: server-side apply as the Kubernetes API server performs it
//! (the devcluster's side of it; applying as a client, Flux's staged apply, is
//! `ferroflux-apply`).
//!
//! Owns: the field sets of objects (which paths a value sets, by the list and map types of the
//! Kubernetes schema), `metadata.managedFields` in the `FieldsV1` format, the apply merge, the
//! conflicts between field managers and `force`, the removal of fields a manager stopped
//! applying, and the ownership an update (PUT, JSON/merge/strategic patch) gives its manager.
//! It works on `serde_json::Value` objects and knows nothing of storage, HTTP or clients: the
//! API server calls it for every write.

mod fieldset;
mod typed;

pub use fieldset::{FieldSet, Path, PathElement, path_string};

use serde_json::{Map, Value, json};
use typed::Ty;

/// One field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager that owns the field.
    pub manager: String,
    /// The API version that manager applied it with.
    pub api_version: String,
    /// The field, as the API server prints it (`.spec.replicas`).
    pub field: String,
}

/// Why an apply or update was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SsaError {
    /// Fields owned by other managers would change; `force` takes them over.
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The request itself is malformed (the API server answers 400).
    #[error("{0}")]
    BadRequest(String),
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    let n = conflicts.len();
    let plural = if n == 1 { "conflict" } else { "conflicts" };
    let lines: Vec<String> = conflicts
        .iter()
        .map(|c| {
            format!(
                "conflict with \"{}\" using {}: {}",
                c.manager, c.api_version, c.field
            )
        })
        .collect();
    if n == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!("Apply failed with {n} {plural}: {}", lines.join("\n"))
    }
}

/// One entry of `metadata.managedFields`.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("apiVersion".into(), json!(self.api_version));
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation));
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        m.insert("time".into(), json!(self.time));
        Value::Object(m)
    }

    fn from_value(v: &Value) -> Option<Entry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Entry {
            manager: s("manager").unwrap_or_default(),
            operation: s("operation").unwrap_or_else(|| "Update".into()),
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time").unwrap_or_default(),
            subresource: s("subresource"),
            fields: match v.get("fieldsV1") {
                Some(f) => FieldSet::from_fields_v1(f)?,
                None => FieldSet::new(),
            },
        })
    }
}

fn read_entries(obj: Option<&Value>) -> Result<Vec<Entry>, SsaError> {
    let Some(list) = obj.and_then(|o| o.pointer("/metadata/managedFields")) else {
        return Ok(Vec::new());
    };
    let Some(items) = list.as_array() else {
        return Err(SsaError::BadRequest(
            "metadata.managedFields: must be a list".into(),
        ));
    };
    items
        .iter()
        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
        .map(|i| {
            Entry::from_value(i).ok_or_else(|| {
                SsaError::BadRequest("metadata.managedFields: invalid fieldsV1".into())
            })
        })
        .collect()
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(Entry::to_value)
        .collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

fn api_version_of(obj: &Value) -> String {
    obj.get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The result of an apply: the new object (with `metadata.managedFields` updated) and
/// whether anything but the managed-fields timestamps changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The object after the apply, with its managed fields.
    pub object: Value,
    /// Whether anything but the managed-fields timestamps changed.
    pub changed: bool,
}

/// Whether `p` is an empty `metadata.labels`/`annotations` map in `config`: applying it merges
/// nothing into the live map (these maps are granular), so it changes nothing there even when
/// others added keys (a controller's annotation), and is no conflict.
fn empty_granular_map(p: &[PathElement], config: &Value, ty: Ty) -> bool {
    let granular = matches!(
        p,
        [PathElement::Field(m), PathElement::Field(k)]
            if m == "metadata" && (k == "labels" || k == "annotations")
    );
    granular
        && typed::get_at(config, p, ty)
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty())
}

/// Applies `config` as `manager` onto `live` (None: the object does not exist yet).
///
/// `now` is the RFC 3339 time written into the manager's entry. The caller keeps server-owned
/// metadata (uid, resourceVersion, generation, timestamps) and the status.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Applied, SsaError> {
    if manager.is_empty() {
        return Err(SsaError::BadRequest(
            "PATCH, application/apply-patch+yaml requests must specify a fieldManager".into(),
        ));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(SsaError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let api_version = api_version_of(config);
    let ty = Ty::root(
        &api_version,
        config.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    let config_set = typed::field_set(config, ty)?;
    let mut entries = read_entries(live)?;
    let empty = json!({});
    let base = live.unwrap_or(&empty);

    // Fields whose value this apply changes, owned by someone else, are conflicts.
    let mut conflicts = Vec::new();
    let changing: Vec<Path> = config_set
        .paths()
        .into_iter()
        .filter(|p| {
            let before = typed::get_at(base, p, ty);
            !typed::is_item(p)
                && before.is_some()
                && before != typed::get_at(config, p, ty)
                && !empty_granular_map(p, config, ty)
        })
        .collect();
    for entry in entries.iter_mut() {
        if entry.manager == manager && entry.operation == "Apply" {
            continue;
        }
        for p in &changing {
            if entry.fields.contains(p) {
                conflicts.push(Conflict {
                    manager: entry.manager.clone(),
                    api_version: entry.api_version.clone(),
                    field: path_string(p),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(SsaError::Conflicts(conflicts));
    }
    let mut taken = FieldSet::new();
    for c in &changing {
        taken.insert(c);
    }
    for entry in entries.iter_mut() {
        if !(entry.manager == manager && entry.operation == "Apply") {
            entry.fields = entry.fields.difference(&taken);
        }
    }

    let previous = entries
        .iter()
        .find(|e| e.manager == manager && e.operation == "Apply")
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut others = FieldSet::new();
    for e in entries
        .iter()
        .filter(|e| !(e.manager == manager && e.operation == "Apply"))
    {
        others.union_in_place(&e.fields);
    }
    let dropped = previous.difference(&config_set);

    let mut merged = typed::merge(base, config, ty);
    for path in dropped.paths() {
        // A field this manager applied as a whole (`labels: {}`) and now applies with content
        // (`labels: {c: x}`) is dropped as a leaf but still set: removing it would remove the
        // content just applied (found by the fuzz target, tests/fuzz.rs).
        if !others.has_any_at_or_below(&path) && !config_set.has_any_at_or_below(&path) {
            typed::remove_at(&mut merged, &path, ty);
        }
    }

    let new_entry = Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version,
        time: now.to_string(),
        subresource: None,
        fields: config_set,
    };
    match entries
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Apply")
    {
        Some(e) => {
            // An unchanged entry keeps its time, so a no-op apply leaves the object identical.
            if e.fields != new_entry.fields || e.api_version != new_entry.api_version {
                *e = new_entry;
            }
        }
        None => entries.push(new_entry),
    }
    write_entries(&mut merged, entries);
    let changed = live.is_none_or(|l| l != &merged);
    Ok(Applied {
        object: merged,
        changed,
    })
}

/// Records the ownership a non-apply write (create, update, patch) gives `manager`, and
/// returns `new` with `metadata.managedFields` set.
///
/// A client may send `managedFields` itself: a value different from the stored one replaces
/// it (`[{}]` clears it), as the API server allows; the same value, or none, keeps tracking.
pub fn update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    now: &str,
) -> Result<Value, SsaError> {
    let api_version = api_version_of(new);
    let ty = Ty::root(
        &api_version,
        new.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    let sent = new.pointer("/metadata/managedFields");
    let stored = old.and_then(|o| o.pointer("/metadata/managedFields"));
    let mut entries = match sent {
        Some(s) if !s.is_null() && Some(s) != stored => read_entries(Some(new))?,
        _ => read_entries(old)?,
    };
    let empty = json!({});
    let before = old.unwrap_or(&empty);
    let old_set = typed::field_set(before, ty)?;
    let new_set = typed::field_set(new, ty)?;
    let mut changed = FieldSet::new();
    for p in new_set.paths() {
        let a = typed::get_at(before, &p, ty);
        let b = typed::get_at(new, &p, ty);
        let differs = if typed::is_item(&p) {
            a.is_none()
        } else {
            a != b
        };
        if differs {
            changed.insert(&p);
        }
    }
    let removed = old_set.difference(&new_set);
    for e in entries.iter_mut() {
        e.fields = e.fields.difference(&removed);
        if e.manager != manager || e.operation != "Update" {
            e.fields = e.fields.difference(&changed);
        }
    }
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    match entries
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Update" && e.subresource.is_none())
    {
        Some(e) => {
            if !changed.is_empty() {
                e.fields.union_in_place(&changed);
                e.time = now.to_string();
                e.api_version = api_version;
            }
        }
        None => entries.push(Entry {
            manager: manager.to_string(),
            operation: "Update".into(),
            api_version,
            time: now.to_string(),
            subresource: None,
            fields: changed,
        }),
    }
    let mut out = new.clone();
    write_entries(&mut out, entries);
    Ok(out)
}

#[cfg(test)]
mod tests;
