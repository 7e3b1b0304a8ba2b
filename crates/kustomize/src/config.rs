//! Custom transformer configurations (a kustomization's `configurations:` files): field specs
//! that extend the built-in ones, as kustomize's `builtinconfig.TransformerConfig` does.
//!
//! A configuration holds for the kustomization that names it and for every kustomization that
//! includes it (kustomize merges an accumulator's configuration into its parent's), so it travels
//! up with the accumulated objects. The sections real fleets use are supported —
//! `nameReference` (typically Flux `HelmRelease` `spec/valuesFrom/name`), `varReference`,
//! `commonLabels` and `commonAnnotations`; the others are refused by name rather than ignored.

use std::path::Path;

use serde_json::Value;

use crate::error::{BuildError, Result};
use crate::fieldspec::{FieldSpec, NameRef};

/// Sections of a configuration file kustomize knows but this engine does not apply yet.
const UNSUPPORTED: [&str; 6] = [
    "namePrefix",
    "nameSuffix",
    "namespace",
    "templateLabels",
    "images",
    "replicas",
];

/// The field specs added to the built-in ones.
#[derive(Debug, Default, Clone)]
pub(crate) struct TransformerConfig {
    pub name_refs: Vec<NameRef>,
    pub var_refs: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
}

impl TransformerConfig {
    /// Reads one configuration file (`shown` names it in errors).
    pub fn parse(text: &str, shown: &Path) -> Result<TransformerConfig> {
        let invalid = |m: String| BuildError::invalid(shown.to_path_buf(), m);
        let docs = crate::yaml::parse::parse_documents(text).map_err(|error| BuildError::Yaml {
            path: shown.to_path_buf(),
            error,
        })?;
        let mut out = TransformerConfig::default();
        let Some(doc) = docs.into_iter().next() else {
            return Ok(out);
        };
        let Value::Object(map) = doc else {
            return Err(invalid(
                "a transformer configuration must be a mapping".into(),
            ));
        };
        for (key, value) in &map {
            match key.as_str() {
                "nameReference" => {
                    for entry in list(value, key).map_err(&invalid)? {
                        let target = |f: &str| str_field(entry, f);
                        for spec in list(entry.get("fieldSpecs").unwrap_or(&Value::Null), key)
                            .map_err(&invalid)?
                        {
                            let referrer = field_spec(spec).map_err(&invalid)?;
                            let rule = NameRef {
                                kind: target("kind"),
                                group: target("group"),
                                version: target("version"),
                                referrer,
                            };
                            push_name_ref(&mut out.name_refs, rule);
                        }
                    }
                }
                "varReference" | "commonLabels" | "commonAnnotations" => {
                    let specs = match key.as_str() {
                        "varReference" => &mut out.var_refs,
                        "commonLabels" => &mut out.common_labels,
                        _ => &mut out.common_annotations,
                    };
                    for spec in list(value, key).map_err(&invalid)? {
                        push_spec(specs, field_spec(spec).map_err(&invalid)?);
                    }
                }
                k if UNSUPPORTED.contains(&k) => {
                    return Err(BuildError::Unsupported {
                        path: shown.to_path_buf(),
                        field: format!("configurations section {k:?}"),
                        why:
                            "only nameReference, varReference, commonLabels and commonAnnotations \
                              field specs are applied"
                                .into(),
                    });
                }
                // kustomize reads these files without strict field checking.
                _ => {}
            }
        }
        Ok(out)
    }

    /// Adds `other`'s specs, skipping ones already present (kustomize's `MergeAll`).
    pub fn merge(&mut self, other: &TransformerConfig) {
        for r in &other.name_refs {
            push_name_ref(&mut self.name_refs, r.clone());
        }
        for (mine, theirs) in [
            (&mut self.var_refs, &other.var_refs),
            (&mut self.common_labels, &other.common_labels),
            (&mut self.common_annotations, &other.common_annotations),
        ] {
            for s in theirs {
                push_spec(mine, s.clone());
            }
        }
    }
}

fn same_spec(a: &FieldSpec, b: &FieldSpec) -> bool {
    a.kind == b.kind && a.group == b.group && a.version == b.version && a.path == b.path
}

fn push_spec(specs: &mut Vec<FieldSpec>, spec: FieldSpec) {
    if !specs.iter().any(|s| same_spec(s, &spec)) {
        specs.push(spec);
    }
}

fn push_name_ref(rules: &mut Vec<NameRef>, rule: NameRef) {
    let known = rules.iter().any(|r| {
        r.kind == rule.kind
            && r.group == rule.group
            && r.version == rule.version
            && same_spec(&r.referrer, &rule.referrer)
    });
    if !known {
        rules.push(rule);
    }
}

fn list<'a>(v: &'a Value, section: &str) -> std::result::Result<&'a [Value], String> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(&[]),
        _ => Err(format!("{section} must be a list")),
    }
}

fn str_field(v: &Value, f: &str) -> String {
    v.get(f)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn field_spec(v: &Value) -> std::result::Result<FieldSpec, String> {
    if !v.is_object() {
        return Err("a field spec must be a mapping with a path".into());
    }
    let path = str_field(v, "path");
    if path.is_empty() {
        return Err("a field spec needs a path".into());
    }
    let create = v.get("create").and_then(Value::as_bool).unwrap_or(false);
    Ok(FieldSpec::new(
        &str_field(v, "kind"),
        &str_field(v, "group"),
        &str_field(v, "version"),
        &path,
        create,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sections_fleets_use_and_refuses_the_rest() {
        let text = "nameReference:\n- kind: ConfigMap\n  version: v1\n  fieldSpecs:\n  - path: spec/valuesFrom/name\n    kind: HelmRelease\ncommonLabels:\n- path: spec/selector/labels\n  kind: Foo\n  create: true\n";
        let c = TransformerConfig::parse(text, Path::new("k.yaml")).unwrap();
        assert_eq!(c.name_refs.len(), 1);
        assert_eq!(c.name_refs[0].kind, "ConfigMap");
        assert_eq!(c.name_refs[0].referrer.kind, "HelmRelease");
        assert!(c.common_labels[0].create);
        let mut twice = c.clone();
        twice.merge(&c);
        assert_eq!(
            twice.name_refs.len(),
            1,
            "merging the same rule twice keeps one"
        );
        let e = TransformerConfig::parse("images:\n- path: spec/image\n", Path::new("k.yaml"))
            .unwrap_err();
        assert!(e.to_string().contains("\"images\""), "{e}");
        let e = TransformerConfig::parse("commonLabels:\n- kind: Foo\n", Path::new("k.yaml"))
            .unwrap_err();
        assert!(e.to_string().contains("needs a path"), "{e}");
    }
}
