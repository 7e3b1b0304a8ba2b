//! Drift detection of a deployed release (`spec.driftDetection`): every object of the release
//! is dry-run with server-side apply as the controller's field manager; an object that would be
//! created was removed from the cluster, one that would change was changed there. Fields the
//! `ignore` rules name (JSON pointers, on the objects their target selects) are left out of the
//! comparison of the live object with the dry-run's result. With `mode: enabled` the drifted
//! objects are applied again, whole (helm-controller's `CorrectClusterDrift`).
//!
//! Ignore targets select by group, version, kind, name and namespace (regular expressions for
//! the last two, as Flux's selectors); `labelSelector` and `annotationSelector` are not
//! supported yet: a rule that sets them matches nothing and is reported in the summary.

use ferroflux_api::kustomization::IgnoreRule;
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::changeset::Action;
use ferroflux_apply::ignore::IgnoreRules;
use serde_json::Value;

/// One object that differs from the release.
#[derive(Clone, Debug)]
pub struct Drifted {
    /// `Kind/namespace/name`, as Flux names it.
    pub subject: String,
    /// Missing from the cluster (else changed there).
    pub removed: bool,
    /// The object as the release wants it.
    pub desired: Value,
}

/// The objects of `objects` that drifted, and the ignore rules that could not be applied.
pub async fn detect(
    applier: &Applier,
    objects: &[Value],
    ignore: &[IgnoreRule],
) -> Result<(Vec<Drifted>, Vec<String>), String> {
    let mut drifted = Vec::new();
    let mut unsupported = Vec::new();
    for rule in ignore {
        if let Some(t) = &rule.target
            && (t.label_selector.is_some() || t.annotation_selector.is_some())
        {
            unsupported.push(format!(
                "ignore rule for {:?} not applied: label and annotation selectors are not supported yet",
                rule.paths
            ));
        }
    }
    for obj in objects {
        let outcome = applier
            .dry_run(obj, &ApplyOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let removed = match outcome.action {
            Action::Created => true,
            Action::Configured => {
                let strip = |v: Option<Value>| {
                    let mut v = without_ignored(&v.unwrap_or(Value::Null), obj, ignore);
                    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                        for volatile in ["resourceVersion", "generation", "managedFields"] {
                            meta.remove(volatile);
                        }
                    }
                    v
                };
                if strip(outcome.live.clone()) == strip(outcome.merged.clone()) {
                    continue;
                }
                false
            }
            _ => continue,
        };
        drifted.push(Drifted {
            subject: outcome.id.display_name(),
            removed,
            desired: obj.clone(),
        });
    }
    Ok((drifted, unsupported))
}

/// Flux's summary lines: `Kind/ns/name removed` or `Kind/ns/name changed`.
pub fn summary(drifted: &[Drifted]) -> String {
    drifted
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d.subject,
                if d.removed { "removed" } else { "changed" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `doc` (the release's object `obj`, or what the cluster holds of it) without the fields of
/// the rules whose target selects `obj` (selected as the Kustomization controller selects its
/// `spec.ignore` targets: anchored regular expressions, label and annotation selectors).
pub fn without_ignored(doc: &Value, obj: &Value, ignore: &[IgnoreRule]) -> Value {
    // One rule at a time, so that a rule whose target does not compile selects nothing and
    // leaves the others in force.
    let rules: Vec<IgnoreRules> = ignore
        .iter()
        .filter_map(|r| IgnoreRules::compile(std::slice::from_ref(r)).ok())
        .collect();
    let paths: Vec<&str> = rules.iter().flat_map(|r| r.paths_for(obj)).collect();
    ferroflux_apply::ignore::without(doc, &paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ignore_rules_drop_fields_of_the_objects_they_target() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps", "annotations": {"a/b": "x"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}});
        let rules: Vec<IgnoreRule> = serde_json::from_value(json!([
            {"paths": ["/spec/replicas", "/metadata/annotations/a~1b"],
             "target": {"kind": "Deployment", "name": "w.*"}},
            {"paths": ["/spec/template"], "target": {"kind": "StatefulSet"}},
        ]))
        .unwrap();
        let out = without_ignored(&deployment, &deployment, &rules);
        assert_eq!(
            out["spec"],
            json!({"template": {"spec": {"containers": [{"name": "c"}]}}})
        );
        assert_eq!(out["metadata"]["annotations"], json!({}));
        let other = json!({"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "api"},
            "spec": {"replicas": 1}});
        assert_eq!(without_ignored(&other, &other, &rules), other);
        let everywhere: Vec<IgnoreRule> =
            serde_json::from_value(json!([{"paths": ["/spec/replicas"]}])).unwrap();
        assert_eq!(
            without_ignored(&other, &other, &everywhere)["spec"],
            json!({})
        );
        // Label selectors select, and a target that does not compile selects nothing.
        let labelled = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "labels": {"scaled": "hpa"}}, "spec": {"replicas": 3}});
        let by_label: Vec<IgnoreRule> = serde_json::from_value(json!([
            {"paths": ["/spec/replicas"], "target": {"labelSelector": "scaled in (hpa,keda)"}},
            {"paths": ["/metadata"], "target": {"name": "("}},
        ]))
        .unwrap();
        assert_eq!(
            without_ignored(&labelled, &labelled, &by_label),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "api", "labels": {"scaled": "hpa"}}, "spec": {}})
        );
        assert_eq!(without_ignored(&other, &other, &by_label), other);
    }
}
