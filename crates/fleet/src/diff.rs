//! `fleet diff`'s comparison: what a cluster would apply from one tree against what it would
//! apply from another (objects created, deleted, changed with a dyff-style report), or against
//! the live cluster (each object server-side dry-run, as `diff kustomization` does). Secret
//! values never appear: they read `***`, `*** (before)`, `*** (after)`; a SOPS-encrypted
//! file's `sops` metadata is left out of the comparison.

use crate::repo::{Built, ClusterBuild};
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::changeset::Action;
use ferroflux_apply::dyff;
use serde::Serialize;
use serde_json::Value;

/// One object that would change.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    /// `Kind/namespace/name`.
    pub id: String,
    /// The Kustomization that applies it.
    pub by: String,
    /// `created`, `changed` or `deleted`.
    pub action: String,
    /// For `changed`: the fields that differ, dyff's layout, Secret values masked.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub report: String,
}

/// One cluster's diff.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDiff {
    /// The cluster folder's name.
    pub cluster: String,
    /// What it was compared with (`live` or a revision).
    pub against: String,
    /// What would change.
    pub changes: Vec<ObjectDiff>,
    /// What was not built or not compared, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Why the cluster could not be compared at all (no context, a failed build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_secret(obj: &Value) -> bool {
    obj["kind"] == "Secret" && obj["apiVersion"] == "v1"
}

fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(map) = o.as_object_mut() {
        map.remove("sops");
    }
    o
}

/// The report of `old` → `new` for one object, Secret values masked.
fn report(old: &Value, new: &Value) -> String {
    let (mut old, mut new) = (comparable(old), comparable(new));
    if is_secret(&new) || is_secret(&old) {
        dyff::sanitize_secret(&mut old, &mut new);
    }
    dyff::report(&old, &new)
}

/// What `new` would change against `old`, both built from the repository.
pub fn between(new: &ClusterBuild, old: &ClusterBuild) -> Vec<ObjectDiff> {
    let mut out = Vec::new();
    for (id, Built { by, object }) in &new.objects {
        match old.objects.get(id) {
            None => out.push(ObjectDiff {
                id: id.clone(),
                by: by.clone(),
                action: "created".into(),
                report: String::new(),
            }),
            Some(before) if comparable(&before.object) != comparable(object) => {
                out.push(ObjectDiff {
                    id: id.clone(),
                    by: by.clone(),
                    action: "changed".into(),
                    report: report(&before.object, object),
                })
            }
            Some(_) => {}
        }
    }
    for (id, before) in &old.objects {
        if !new.objects.contains_key(id) {
            out.push(ObjectDiff {
                id: id.clone(),
                by: before.by.clone(),
                action: "deleted".into(),
                report: String::new(),
            });
        }
    }
    out
}

/// How many dry-runs one cluster's diff has in flight: each is two round trips (read, dry-run
/// apply), and a cluster of a few hundred objects one at a time is seconds of waiting.
const DRY_RUNS_IN_FLIGHT: usize = 8;

/// What applying `new` would change on the live cluster: each object server-side dry-run by
/// `applier` (kustomize-controller's field manager), [`DRY_RUNS_IN_FLIGHT`] at a time, the
/// results in the build's order. Objects the dry-run refuses are listed in the second vector,
/// the others still compared.
pub async fn against_live(new: &ClusterBuild, applier: &Applier) -> (Vec<ObjectDiff>, Vec<String>) {
    use futures::StreamExt;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let options = ApplyOptions::default();
    let options = &options;
    let outcomes: Vec<_> = futures::stream::iter(&new.objects)
        .map(
            |(id, built)| async move { (id, built, applier.dry_run(&built.object, options).await) },
        )
        .buffered(DRY_RUNS_IN_FLIGHT)
        .collect()
        .await;
    for (id, Built { by, .. }, outcome) in outcomes {
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                errors.push(format!("{id}: {e}"));
                continue;
            }
        };
        let (action, text) = match outcome.action {
            Action::Created => ("created", String::new()),
            Action::Configured => {
                let live = outcome.live.unwrap_or(Value::Null);
                let merged = outcome.merged.unwrap_or(Value::Null);
                ("changed", report(&live, &merged))
            }
            _ => continue,
        };
        out.push(ObjectDiff {
            id: id.clone(),
            by: by.clone(),
            action: action.into(),
            report: text,
        });
    }
    (out, errors)
}

impl ClusterDiff {
    /// Whether anything would change (or the cluster could not be compared).
    pub fn changed(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The cluster's part of the report: a heading, then `► Kind/ns/name created|changed|
    /// deleted` lines, a changed object's fields after its line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(e) = &self.error {
            // A build's error names its cluster already.
            let prefix = format!("cluster {}: ", self.cluster);
            let e = e.strip_prefix(&prefix).unwrap_or(e);
            out.push_str(&format!("✗ cluster {}: {e}\n", self.cluster));
            return out;
        }
        let count = |a: &str| self.changes.iter().filter(|c| c.action == a).count();
        if self.changes.is_empty() {
            out.push_str(&format!(
                "✔ cluster {}: no change against {}\n",
                self.cluster, self.against
            ));
        } else {
            out.push_str(&format!(
                "📁 cluster {}: {} created, {} changed, {} deleted against {}\n",
                self.cluster,
                count("created"),
                count("changed"),
                count("deleted"),
                self.against
            ));
        }
        for c in &self.changes {
            out.push_str(&format!("► {} {} (by {})\n", c.id, c.action, c.by));
            out.push_str(&c.report);
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out
    }
}
