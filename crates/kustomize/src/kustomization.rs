//! The `kustomization.yaml` file: its fields, checked strictly (an unknown field is an error, as
//! in kustomize).

use serde::Deserialize;
use serde_json::{Map, Value};

pub type StrMap = Map<String, Value>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kustomization {
    // Read so the strict field check accepts them; kustomize does not act on them either.
    #[allow(dead_code)]
    pub api_version: Option<String>,
    pub kind: Option<String>,
    #[allow(dead_code)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub bases: Vec<String>,
    #[serde(default)]
    pub components: Vec<String>,
    pub namespace: Option<String>,
    pub name_prefix: Option<String>,
    pub name_suffix: Option<String>,
    #[serde(default)]
    pub common_labels: Option<StrMap>,
    #[serde(default)]
    pub labels: Vec<LabelArgs>,
    #[serde(default)]
    pub common_annotations: Option<StrMap>,
    #[serde(default)]
    pub patches_strategic_merge: Vec<String>,
    #[serde(default, rename = "patchesJson6902")]
    pub patches_json6902: Vec<PatchArgs>,
    #[serde(default)]
    pub patches: Vec<PatchArgs>,
    #[serde(default)]
    pub images: Vec<ImageArgs>,
    #[serde(default)]
    pub replicas: Vec<ReplicaArgs>,
    #[serde(default)]
    pub replacements: Vec<Value>,
    #[serde(default)]
    pub vars: Vec<VarArgs>,
    #[serde(default)]
    pub config_map_generator: Vec<GeneratorArgs>,
    #[serde(default)]
    pub secret_generator: Vec<GeneratorArgs>,
    pub generator_options: Option<GeneratorOptions>,
    pub sort_options: Option<SortOptions>,
    // Accepted by the parser so the "not supported" error can name them.
    pub helm_charts: Option<Value>,
    pub helm_globals: Option<Value>,
    pub helm_chart_inflation_generator: Option<Value>,
    pub generators: Option<Value>,
    pub transformers: Option<Value>,
    pub validators: Option<Value>,
    #[serde(default)]
    pub configurations: Vec<String>,
    pub crds: Option<Value>,
    #[serde(rename = "openapi")]
    pub openapi: Option<Value>,
    pub build_metadata: Option<Value>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelArgs {
    #[serde(default)]
    pub pairs: StrMap,
    #[serde(default)]
    pub include_selectors: bool,
    #[serde(default)]
    pub include_templates: bool,
    #[serde(default)]
    pub fields: Vec<FieldSpecArgs>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldSpecArgs {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub create: bool,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchArgs {
    pub path: Option<String>,
    pub patch: Option<String>,
    pub target: Option<Selector>,
    #[serde(default)]
    pub options: Map<String, Value>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub label_selector: String,
    #[serde(default)]
    pub annotation_selector: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageArgs {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub new_name: String,
    #[serde(default)]
    pub new_tag: String,
    #[serde(default)]
    pub digest: String,
    #[serde(default)]
    pub tag_suffix: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaArgs {
    pub name: String,
    #[serde(default)]
    pub count: i64,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VarArgs {
    pub name: String,
    pub obj_ref: VarObjRef,
    #[serde(default)]
    pub field_ref: Option<VarFieldRef>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VarObjRef {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VarFieldRef {
    #[serde(default)]
    pub field_path: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorArgs {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub behavior: String,
    #[serde(default)]
    pub literals: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub envs: Vec<String>,
    #[serde(default)]
    pub env: String,
    pub options: Option<GeneratorOptions>,
    #[serde(default, rename = "type")]
    pub type_: String,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorOptions {
    #[serde(default)]
    pub labels: Option<StrMap>,
    #[serde(default)]
    pub annotations: Option<StrMap>,
    pub disable_name_suffix_hash: Option<bool>,
    pub immutable: Option<bool>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SortOptions {
    #[serde(default)]
    pub order: String,
    pub legacy_sort_options: Option<LegacySortOptions>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    #[serde(default)]
    pub order_first: Vec<String>,
    #[serde(default)]
    pub order_last: Vec<String>,
}

/// Label/annotation maps must hold strings; kustomize rejects other scalars.
pub fn string_map(m: &StrMap, what: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(m.len());
    for (k, v) in m {
        match v {
            Value::String(s) => out.push((k.clone(), s.clone())),
            Value::Null => out.push((k.clone(), String::new())),
            other => {
                return Err(format!(
                    "{what}: value of {k:?} must be a string, got {other}"
                ));
            }
        }
    }
    Ok(out)
}
