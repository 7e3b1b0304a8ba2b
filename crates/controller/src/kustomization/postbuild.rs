//! What Flux does to the objects of a build before applying them: the owner labels and
//! `commonMetadata`, and `postBuild` variable substitution.

use ferroflux_api::kustomization::{CommonMetadata, SubstituteStrategy};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Substitution variables by name.
pub type Vars = BTreeMap<String, String>;

/// The label or annotation that turns substitution off for one object.
pub const SUBSTITUTE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// Adds the owner labels and `commonMetadata` to every object's own metadata (never to
/// selectors or templates, unlike kustomize's `commonLabels`).
pub fn set_owner_metadata(
    objects: &mut [Value],
    name: &str,
    namespace: &str,
    common: Option<&CommonMetadata>,
) {
    for obj in objects {
        let Some(map) = obj.as_object_mut() else {
            continue;
        };
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            continue;
        };
        let mut add = |field: &str, pairs: &mut dyn Iterator<Item = (String, String)>| {
            let target = meta
                .entry(field)
                .or_insert_with(|| Value::Object(Map::new()));
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Some(t) = target.as_object_mut() {
                for (k, v) in pairs {
                    t.insert(k, Value::String(v));
                }
            }
        };
        if let Some(common) = common {
            if let Some(labels) = &common.labels {
                add("labels", &mut labels.clone().into_iter());
            }
            if let Some(annotations) = &common.annotations {
                add("annotations", &mut annotations.clone().into_iter());
            }
        }
        add(
            "labels",
            &mut [
                (
                    super::reconciler::OWNER_NAME_LABEL.to_string(),
                    name.to_string(),
                ),
                (
                    super::reconciler::OWNER_NAMESPACE_LABEL.to_string(),
                    namespace.to_string(),
                ),
            ]
            .into_iter(),
        );
    }
}

fn substitution_disabled(obj: &Value) -> bool {
    ["labels", "annotations"].iter().any(|field| {
        obj.get("metadata")
            .and_then(|m| m.get(*field))
            .and_then(|m| m.get(SUBSTITUTE_ANNOTATION))
            .and_then(Value::as_str)
            == Some("disabled")
    })
}

/// Substitutes `vars` into every object that does not opt out, in strict mode. Each object
/// is rendered to YAML, substituted as text and parsed back, as Flux does, so a variable can
/// turn a string into a number or a boolean.
pub fn substitute_all(
    objects: &mut [Value],
    vars: &Vars,
    strategy: Option<SubstituteStrategy>,
) -> Result<(), String> {
    if vars.is_empty() && strategy != Some(SubstituteStrategy::Always) {
        return Ok(());
    }
    for name in vars.keys() {
        ferroflux_envsubst::validate_var_name(name).map_err(|e| e.to_string())?;
    }
    for obj in objects.iter_mut() {
        if substitution_disabled(obj) {
            continue;
        }
        let id = describe(obj);
        let text = ferroflux_kustomize::yaml::emit::render_document(obj);
        let replaced = ferroflux_envsubst::substitute(&text, vars, true)
            .map_err(|e| format!("{id}: variable substitution failed: {e}"))?;
        if replaced == text {
            continue;
        }
        let mut docs = ferroflux_kustomize::yaml::parse::parse_documents(&replaced)
            .map_err(|e| format!("{id}: variable substitution produced invalid YAML: {e}"))?;
        if docs.len() != 1 {
            return Err(format!(
                "{id}: variable substitution produced {} documents",
                docs.len()
            ));
        }
        *obj = docs.remove(0);
    }
    Ok(())
}

/// `Kind/namespace/name` of an object, as inventory ids print it.
fn describe(obj: &Value) -> String {
    match ferroflux_apply::object::object_id(obj, 0) {
        Ok(id) => id.display_name(),
        Err(_) => obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("object")
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(pairs: &[(&str, &str)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitutes_with_types_and_respects_opt_out() {
        let mut objects = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "apps", "labels": {"env": "${env:=dev}"}},
                "spec": {"replicas": "${replicas}"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "dash", "labels": {SUBSTITUTE_ANNOTATION: "disabled"}},
                "data": {"x": "${not_a_var}"}}),
        ];
        substitute_all(&mut objects, &vars(&[("replicas", "3")]), None).unwrap();
        assert_eq!(objects[0]["spec"]["replicas"], 3);
        assert_eq!(objects[0]["metadata"]["labels"]["env"], "dev");
        assert_eq!(objects[1]["data"]["x"], "${not_a_var}");
    }

    #[test]
    fn strict_mode_names_the_object() {
        let mut objects = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "apps"}, "data": {"r": "${region}"}})];
        let err = substitute_all(&mut objects, &vars(&[("x", "1")]), None).unwrap_err();
        assert_eq!(
            err,
            "ConfigMap/apps/c: variable substitution failed: variable not set (strict mode): \"region\""
        );
        // With no variables at all substitution does not run, unless asked to.
        assert!(substitute_all(&mut objects, &Vars::new(), None).is_ok());
        assert!(
            substitute_all(&mut objects, &Vars::new(), Some(SubstituteStrategy::Always)).is_err()
        );
        let bad = vars(&[("cluster-name", "x")]);
        assert!(
            substitute_all(&mut objects, &bad, None)
                .unwrap_err()
                .contains("var name is invalid")
        );
    }

    #[test]
    fn owner_labels_and_common_metadata() {
        let mut objects =
            vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})];
        let common = CommonMetadata {
            labels: Some([("team".to_string(), "a".to_string())].into()),
            annotations: Some([("note".to_string(), "b".to_string())].into()),
        };
        set_owner_metadata(&mut objects, "apps", "flux-system", Some(&common));
        assert_eq!(
            objects[0]["metadata"]["labels"],
            json!({"team": "a", "kustomize.toolkit.fluxcd.io/name": "apps",
                   "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})
        );
        assert_eq!(objects[0]["metadata"]["annotations"], json!({"note": "b"}));
    }
}
