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

/// How `postBuild` substitution treats a variable that is neither set nor defaulted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strictness {
    /// It becomes the empty string (`StrictPostBuildSubstitutions=false`).
    Lenient,
    /// It is an error naming the variable and the object, and nothing is applied: the default,
    /// as FLUX-COMPAT.md records for Flux (`StrictPostBuildSubstitutions`).
    #[default]
    Strict,
}

/// Substitutes `vars` into every object that does not opt out. `quoted` holds, per object,
/// the JSON pointers of the string values written quoted in the source (the build's
/// `quoted_placeholders`); objects beyond its end have none.
///
/// Flux substitutes each object's YAML text and parses the result, with kyaml keeping the
/// style each scalar had in Git: `replicas: ${replicas}` turns into a number while
/// `n: "${n}"` stays a string. Quoted values are therefore substituted first, in place, as
/// strings (their `$` escaped as `$$` so the text pass gives them back unchanged); the text
/// pass then does the rest, letting a plain value change type, by YAML 1.1's rules as Flux
/// re-reads the text with go-yaml v2 (`${flag}` set to `on` becomes `true`).
pub fn substitute_all(
    objects: &mut [Value],
    quoted: &[Vec<String>],
    vars: &Vars,
    strategy: Option<SubstituteStrategy>,
    strictness: Strictness,
) -> Result<(), String> {
    if vars.is_empty() && strategy != Some(SubstituteStrategy::Always) {
        return Ok(());
    }
    for name in vars.keys() {
        ferroflux_envsubst::validate_var_name(name).map_err(|e| e.to_string())?;
    }
    let strict = strictness == Strictness::Strict;
    for (index, obj) in objects.iter_mut().enumerate() {
        if substitution_disabled(obj) {
            continue;
        }
        let id = describe(obj);
        let failed =
            |e: ferroflux_envsubst::SubstError| format!("{id}: variable substitution failed: {e}");
        for pointer in quoted.get(index).into_iter().flatten() {
            let Some(Value::String(text)) = obj.pointer_mut(pointer) else {
                continue;
            };
            let replaced = ferroflux_envsubst::substitute(text, vars, strict).map_err(failed)?;
            *text = replaced.replace('$', "$$");
        }
        let text = ferroflux_kustomize::yaml::emit::render_document(obj);
        let replaced = ferroflux_envsubst::substitute(&text, vars, strict).map_err(failed)?;
        if replaced == text {
            continue;
        }
        let mut docs = ferroflux_kustomize::yaml::parse::parse_documents_yaml11(&replaced)
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
        substitute_all(
            &mut objects,
            &[],
            &vars(&[("replicas", "3")]),
            None,
            Strictness::Lenient,
        )
        .unwrap();
        assert_eq!(objects[0]["spec"]["replicas"], 3);
        assert_eq!(objects[0]["metadata"]["labels"]["env"], "dev");
        assert_eq!(objects[1]["data"]["x"], "${not_a_var}");
    }

    #[test]
    fn strict_mode_names_the_object_and_lenient_mode_empties() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "apps"}, "data": {"r": "${region}"}});
        let quoted = [vec!["/data/r".to_string()]];
        let mut objects = vec![object.clone()];
        let err = substitute_all(
            &mut objects,
            &quoted,
            &vars(&[("x", "1")]),
            None,
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "ConfigMap/apps/c: variable substitution failed: variable not set (strict mode): \"region\""
        );
        assert_eq!(objects[0], object, "nothing half-substituted");
        substitute_all(
            &mut objects,
            &quoted,
            &vars(&[("x", "1")]),
            None,
            Strictness::Lenient,
        )
        .unwrap();
        assert_eq!(objects[0]["data"]["r"], "");
        // With no variables at all substitution does not run, unless asked to.
        let mut objects = vec![object.clone()];
        assert!(substitute_all(&mut objects, &[], &Vars::new(), None, Strictness::Strict).is_ok());
        assert!(
            substitute_all(
                &mut objects,
                &[],
                &Vars::new(),
                Some(SubstituteStrategy::Always),
                Strictness::Strict
            )
            .is_err()
        );
        let bad = vars(&[("cluster-name", "x")]);
        assert!(
            substitute_all(&mut objects, &[], &bad, None, Strictness::Lenient)
                .unwrap_err()
                .contains("var name is invalid")
        );
    }

    /// The source's quoting decides the type, as kyaml's kept node style does in Flux.
    #[test]
    fn quoted_values_stay_strings_and_plain_values_take_their_type() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("kustomization.yaml"),
            "resources:\n- cm.yaml\n- deploy.yaml\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      template:\n        spec:\n          containers:\n          - name: web\n            env:\n            - name: PORT\n              value: \"${n}\"\n- target:\n    kind: ConfigMap\n  patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: any\n    data:\n      single: ${n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: \"${n}\"\n  single: '${n}'\n  flag: \"${flag}\"\n  escaped: \"$${n} costs $5 ${n}\"\n  block: |\n    count=${n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("deploy.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    n: \"${n}\"\nspec:\n  replicas: ${n}\n  paused: ${flag}\n  template:\n    spec:\n      containers:\n      - name: web\n        image: \"nginx:${tag:=1.27}\"\n        args:\n        - \"${n}\"\n        - ${n}\n",
        )
        .unwrap();
        let build = ferroflux_kustomize::Build::new(dir.path()).unwrap();
        let output = build.build_with_warnings(std::path::Path::new("")).unwrap();
        let mut objects = output.objects;
        substitute_all(
            &mut objects,
            &output.quoted_placeholders,
            &vars(&[("n", "5"), ("flag", "true")]),
            None,
            Strictness::Lenient,
        )
        .unwrap();
        let cm = objects.iter().find(|o| o["kind"] == "ConfigMap").unwrap();
        assert_eq!(
            cm["data"],
            json!({"n": "5", "single": 5, "flag": "true", "escaped": "${n} costs $5 5",
                   "block": "count=5\n"}),
            "a patch's plain value replaces the source's quoted one"
        );
        let deploy = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
        assert_eq!(deploy["metadata"]["labels"]["n"], "5");
        assert_eq!(deploy["spec"]["replicas"], 5);
        assert_eq!(deploy["spec"]["paused"], true);
        let container = &deploy["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "nginx:1.27");
        assert_eq!(container["args"], json!(["5", 5]));
        assert_eq!(
            container["env"],
            json!([{"name": "PORT", "value": "5"}]),
            "a patch keeps its own quoting"
        );
    }

    #[test]
    fn plain_values_are_read_with_yaml_1_1_booleans_as_flux_does() {
        let mut objects = vec![json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"},
            "data": {"plain": "${flag}", "quoted": "${flag}", "kept": "yes", "n": "${no}"},
        })];
        let quoted = vec![vec!["/data/quoted".to_string()]];
        substitute_all(
            &mut objects,
            &quoted,
            &vars(&[("flag", "on"), ("no", "n")]),
            None,
            Strictness::Strict,
        )
        .unwrap();
        assert_eq!(
            objects[0]["data"],
            json!({"plain": true, "quoted": "on", "kept": "yes", "n": false}),
            "go-yaml v2 reads plain on/n as booleans; strings already there stay strings"
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
