//! Brings the CRDs kube-derive generates into the exact shape of Flux's, so a cluster that has
//! Flux's CRDs accepts ours as an in-place upgrade and every object valid for one is valid for the
//! other.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use serde_json::{Value, json};

pub(crate) fn flux_shaped(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    // The API server would default listKind; Flux's CRDs spell it out and so do we.
    let names = &mut crd.spec.names;
    names.list_kind = Some(format!("{}List", names.kind));
    for version in &mut crd.spec.versions {
        // A kind without status (Alert, Provider) still has `subresources: {}` in Flux's CRDs.
        if version.subresources.is_none() {
            version.subresources = Some(Default::default());
        }
        let Some(validation) = version.schema.as_mut() else {
            continue;
        };
        let Some(schema) = validation.open_api_v3_schema.take() else {
            continue;
        };
        validation.open_api_v3_schema = Some(reshape(schema));
    }
    crd
}

fn reshape(schema: JSONSchemaProps) -> JSONSchemaProps {
    // A JSONSchemaProps always serializes and deserializes: both are plain data.
    let mut value = serde_json::to_value(&schema).unwrap_or(Value::Null);
    if let Some(root) = value.as_object_mut() {
        // Flux does not require `spec` at the top level; its fields carry their own `required`.
        root.remove("required");
        if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
            let mut with_meta = serde_json::Map::new();
            with_meta.insert("apiVersion".into(), json!({"type": "string"}));
            with_meta.insert("kind".into(), json!({"type": "string"}));
            with_meta.insert("metadata".into(), json!({"type": "object"}));
            with_meta.extend(std::mem::take(props));
            *props = with_meta;
        }
    }
    walk(&mut value, false);
    serde_json::from_value(value).unwrap_or(schema)
}

/// Optional enums come out of schemars with `null` among their values, which a structural
/// schema only allows with `nullable`; Flux lists the values alone. Conditions get the
/// validation of `metav1.Condition`, which k8s-openapi's schema leaves out.
fn walk(value: &mut Value, is_conditions: bool) {
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if is_conditions && let Some(items) = obj.get_mut("items") {
        *items = condition_schema();
        return;
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            walk(prop, name == "conditions");
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(key) {
            walk(child, false);
        }
    }
}

fn condition_schema() -> Value {
    json!({
        "description": "Condition contains details for one aspect of the current state of this API Resource.",
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {
                "type": "string",
                "maxLength": 1024,
                "minLength": 1,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
            },
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {
                "type": "string",
                "maxLength": 316,
                "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
            }
        }
    })
}
