//! The inventory of applied objects and what a new build makes stale.

use crate::object::{MissingField, object_id, str_at};
use crate::order::apply_order;
use ferroflux_api::kustomization::{ResourceInventory, ResourceRef};
use ferroflux_api::{ObjectId, ObjectIdError};
use serde_json::{Value, json};
use std::collections::HashSet;

/// The inventory recording `objects`, in the order given (the apply order).
pub fn inventory_of(objects: &[Value]) -> Result<ResourceInventory, MissingField> {
    let mut entries = Vec::with_capacity(objects.len());
    for (index, obj) in objects.iter().enumerate() {
        let id = object_id(obj, index)?;
        let api_version = str_at(obj, &["apiVersion"]).unwrap_or("");
        let version = crate::object::group_version(api_version).1;
        entries.push(ResourceRef {
            id: id.to_string(),
            v: version.to_string(),
        });
    }
    Ok(ResourceInventory { entries })
}

/// An inventory entry resolved to what a client needs to find the object again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryObject {
    /// Namespace, name, group and kind, as the inventory entry names them.
    pub id: ObjectId,
    /// The API version the object was applied with (the entry's `v`).
    pub version: String,
}

impl InventoryObject {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.id.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.id.group, self.version)
        }
    }
}

/// Entries of `old` that `new` no longer holds, in reverse apply order: the order Flux
/// deletes them in, so dependents go before what they depend on (a Namespace last).
pub fn stale_entries(
    old: &ResourceInventory,
    new: &ResourceInventory,
) -> Result<Vec<InventoryObject>, ObjectIdError> {
    let keep: HashSet<&str> = new.entries.iter().map(|e| e.id.as_str()).collect();
    let mut stale = Vec::new();
    for entry in &old.entries {
        if keep.contains(entry.id.as_str()) {
            continue;
        }
        stale.push(InventoryObject {
            id: ObjectId::parse(&entry.id)?,
            version: entry.v.clone(),
        });
    }
    let skeleton = |o: &InventoryObject| json!({"kind": o.id.kind, "metadata": {"namespace": o.id.namespace, "name": o.id.name}});
    stale.sort_by(|a, b| apply_order(&skeleton(b), &skeleton(a)));
    Ok(stale)
}

/// `new` followed by the entries of `old` it does not hold: the inventory to record when
/// pruning `old`'s stale entries failed part-way (a dropped connection), so that the next
/// attempt prunes them again instead of forgetting they were ever applied. Entries already
/// deleted are found gone then and skipped.
pub fn with_unpruned(new: &ResourceInventory, old: &ResourceInventory) -> ResourceInventory {
    let held: HashSet<&str> = new.entries.iter().map(|e| e.id.as_str()).collect();
    let mut entries = new.entries.clone();
    entries.extend(
        old.entries
            .iter()
            .filter(|e| !held.contains(e.id.as_str()))
            .cloned(),
    );
    ResourceInventory { entries }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_prune_keeps_the_stale_entries_for_the_next_attempt() {
        let entry = |id: &str| ResourceRef {
            id: id.into(),
            v: "v1".into(),
        };
        let old = ResourceInventory {
            entries: vec![entry("apps_a__ConfigMap"), entry("apps_b__ConfigMap")],
        };
        let new = ResourceInventory {
            entries: vec![entry("apps_a__ConfigMap"), entry("apps_c__ConfigMap")],
        };
        let kept = with_unpruned(&new, &old);
        let ids: Vec<&str> = kept.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "apps_a__ConfigMap",
                "apps_c__ConfigMap",
                "apps_b__ConfigMap"
            ]
        );
        // The next attempt, with the same build, finds b stale again.
        let stale = stale_entries(&kept, &new).unwrap();
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].id.name, "b");
    }

    #[test]
    fn records_flux_ids_and_versions() {
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "namespace": "apps"}}),
        ];
        let inv = inventory_of(&objects).unwrap();
        assert_eq!(
            inv.entries,
            vec![
                ResourceRef {
                    id: "_apps__Namespace".into(),
                    v: "v1".into()
                },
                ResourceRef {
                    id: "apps_web_apps_Deployment".into(),
                    v: "v1".into()
                },
            ]
        );
        let nameless = vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})];
        assert_eq!(
            inventory_of(&nameless).unwrap_err().to_string(),
            "object 0 has no metadata.name"
        );
    }

    #[test]
    fn stale_entries_come_in_reverse_apply_order() {
        let entry = |id: &str, v: &str| ResourceRef {
            id: id.into(),
            v: v.into(),
        };
        let old = ResourceInventory {
            entries: vec![
                entry("_apps__Namespace", "v1"),
                entry("apps_web_apps_Deployment", "v1"),
                entry("apps_web__Service", "v1"),
                entry("apps_cfg__ConfigMap", "v1"),
            ],
        };
        let new = ResourceInventory {
            entries: vec![entry("apps_cfg__ConfigMap", "v1")],
        };
        let stale = stale_entries(&old, &new).unwrap();
        let names: Vec<String> = stale.iter().map(|o| o.id.display_name()).collect();
        assert_eq!(
            names,
            ["Deployment/apps/web", "Service/apps/web", "Namespace/apps"]
        );
        assert_eq!(stale[0].api_version(), "apps/v1");
        assert_eq!(stale[1].api_version(), "v1");
        let broken = ResourceInventory {
            entries: vec![entry("nonsense", "v1")],
        };
        assert!(stale_entries(&broken, &new).is_err());
    }
}
