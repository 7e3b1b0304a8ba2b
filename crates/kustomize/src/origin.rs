//! `buildMetadata`: where each object came from (`originAnnotations`) and who built it
//! (`managedByLabel`), as kustomize writes them.
//!
//! Only the kustomization being built decides: kustomize gives every kustomization it reaches
//! the top one's `buildMetadata`, so a nested `buildMetadata` changes nothing. Paths are relative
//! to the directory being built, joined and cleaned as Go's `filepath.Join` does, and written in
//! kustomize's layout (`path: …`, or `configuredIn` + `configuredBy` for generated objects).

use serde_json::{Map, Value};

use crate::resource::Res;

/// The annotation that records an object's origin.
pub const ORIGIN_ANNOTATION: &str = "config.kubernetes.io/origin";
/// The annotation kustomize's `transformerAnnotations` writes.
pub const TRANSFORMATIONS_ANNOTATION: &str = "alpha.config.kubernetes.io/transformations";
/// The label `managedByLabel` sets, with the value kubectl's embedded kustomize gives it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kustomize-(devel)");

/// The options of a `buildMetadata` list.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct BuildMetadata {
    pub origin_annotations: bool,
    pub managed_by_label: bool,
}

impl BuildMetadata {
    /// Reads `buildMetadata`; `Err` names an option this engine does not apply.
    pub fn parse(v: Option<&Value>) -> Result<BuildMetadata, String> {
        let mut out = BuildMetadata::default();
        let items = match v {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Array(items)) => items,
            Some(_) => return Err("buildMetadata must be a list of option names".into()),
        };
        for item in items {
            match item.as_str() {
                Some("originAnnotations") => out.origin_annotations = true,
                Some("managedByLabel") => out.managed_by_label = true,
                Some("transformerAnnotations") => {
                    return Err("transformerAnnotations is not supported yet".into());
                }
                // kustomize ignores option names it does not know.
                _ => {}
            }
        }
        Ok(out)
    }
}

/// Go's `filepath.Join(base, rel)`: joined, then cleaned lexically (`.` and `x/..` removed,
/// leading `..` kept).
pub fn join(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in base.split('/').chain(rel.split('/')) {
        match p {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            _ => parts.push(p),
        }
    }
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The origin of an object read from a file.
pub fn of_file(path: &str) -> String {
    format!("path: {path}\n")
}

/// The origin of an object made by a built-in generator configured in `configured_in`.
pub fn of_generator(configured_in: &str, generator_kind: &str) -> String {
    format!(
        "configuredIn: {configured_in}\nconfiguredBy:\n  apiVersion: builtin\n  kind: {generator_kind}\n"
    )
}

/// Sets (or replaces) the origin annotation.
pub fn annotate(r: &mut Res, origin: &str) {
    if let Some(a) = r
        .metadata_mut()
        .and_then(|md| string_map(md, "annotations"))
    {
        a.insert(ORIGIN_ANNOTATION.into(), Value::String(origin.into()));
    }
}

/// `metadata.<which>` (labels or annotations), created when missing and replaced when it is not
/// a map, as kyaml's SetLabels/SetAnnotations do before writing one entry.
fn string_map<'a>(
    md: &'a mut Map<String, Value>,
    which: &str,
) -> Option<&'a mut Map<String, Value>> {
    let m = md.entry(which).or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
}

/// The origin annotation's value, if any.
pub fn get(r: &Res) -> Option<Value> {
    r.obj
        .get("metadata")?
        .get("annotations")?
        .get(ORIGIN_ANNOTATION)
        .cloned()
}

/// What kustomize does to every object at the end of a build: the label when asked for, and the
/// origin and transformation annotations removed unless asked for (even ones written by hand).
pub fn finish(res: &mut [Res], meta: BuildMetadata) {
    for r in res {
        let Some(md) = r.metadata_mut() else { continue };
        if meta.managed_by_label
            && let Some(l) = string_map(md, "labels")
        {
            l.insert(MANAGED_BY.0.into(), Value::String(MANAGED_BY.1.into()));
        }
        // kustomize rewrites the annotations through kyaml's SetAnnotations, which drops the
        // field when the map is empty (or null).
        match md.get_mut("annotations") {
            Some(Value::Object(a)) => {
                if !meta.origin_annotations {
                    a.remove(ORIGIN_ANNOTATION);
                }
                a.remove(TRANSFORMATIONS_ANNOTATION);
                if a.is_empty() {
                    md.remove("annotations");
                }
            }
            Some(Value::Null) => {
                md.remove("annotations");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_go_filepath() {
        assert_eq!(join("", "cm.yaml"), "cm.yaml");
        assert_eq!(join("sub", "../other/x.yaml"), "other/x.yaml");
        assert_eq!(join("", "../../a/b.yaml"), "../../a/b.yaml");
        assert_eq!(join("a/b", "./c/../d"), "a/b/d");
        assert_eq!(join("../x", "../../y"), "../../y");
    }

    #[test]
    fn options() {
        let v = serde_json::json!(["originAnnotations", "managedByLabel"]);
        let m = BuildMetadata::parse(Some(&v)).unwrap();
        assert!(m.origin_annotations && m.managed_by_label);
        let v = serde_json::json!(["transformerAnnotations"]);
        assert!(
            BuildMetadata::parse(Some(&v))
                .unwrap_err()
                .contains("transformerAnnotations")
        );
    }
}
