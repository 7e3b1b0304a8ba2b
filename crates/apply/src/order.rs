//! The order of a staged apply, as Flux's kustomize-controller applies objects.
//!
//! Stage 1 holds what other objects need to exist (CRDs, Namespaces, ClusterRoles), stage 2 every
//! kind whose name ends in `Class`, stage 3 the rest; each stage is applied, then waited for,
//! before the next. Inside a stage objects go by kind rank, then namespace, then name.

use crate::object::str_at;
use serde_json::Value;
use std::cmp::Ordering;

/// The kinds Flux ranks, in order; unlisted kinds come after them and before the webhooks.
const KIND_ORDER: &[&str] = &[
    "CustomResourceDefinition",
    "Namespace",
    "ClusterRole",
    "ClusterClass",
    "RuntimeClass",
    "PriorityClass",
    "StorageClass",
    "VolumeSnapshotClass",
    "IngressClass",
    "GatewayClass",
    "ClusterRoleBinding",
    "ResourceQuota",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
    "LimitRange",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

const LAST_KINDS: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Which stage of a staged apply an object belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// CRDs, Namespaces, ClusterRoles: what later objects need to exist.
    Definitions,
    /// Every kind whose name ends in `Class`.
    Classes,
    /// Everything else.
    Resources,
}

/// The apply stage of objects of `kind`.
pub fn stage_of(kind: &str) -> Stage {
    match kind {
        "CustomResourceDefinition" | "Namespace" | "ClusterRole" => Stage::Definitions,
        k if k.ends_with("Class") => Stage::Classes,
        _ => Stage::Resources,
    }
}

fn kind_rank(kind: &str) -> usize {
    if let Some(i) = KIND_ORDER.iter().position(|k| *k == kind) {
        return i;
    }
    match LAST_KINDS.iter().position(|k| *k == kind) {
        Some(i) => KIND_ORDER.len() + 1 + i,
        None => KIND_ORDER.len(),
    }
}

/// Compares two objects in apply order: stage, kind rank, namespace, name.
pub fn apply_order(a: &Value, b: &Value) -> Ordering {
    let key = |o: &Value| {
        let kind = str_at(o, &["kind"]).unwrap_or("");
        (
            stage_of(kind),
            kind_rank(kind),
            kind.to_string(),
            str_at(o, &["metadata", "namespace"])
                .unwrap_or("")
                .to_string(),
            str_at(o, &["metadata", "name"]).unwrap_or("").to_string(),
        )
    };
    key(a).cmp(&key(b))
}

/// Splits objects into their stages, each sorted in apply order; empty stages are left out.
pub fn stages(mut objects: Vec<Value>) -> Vec<(Stage, Vec<Value>)> {
    objects.sort_by(apply_order);
    let mut out: Vec<(Stage, Vec<Value>)> = Vec::new();
    for obj in objects {
        let stage = stage_of(str_at(&obj, &["kind"]).unwrap_or(""));
        match out.last_mut() {
            Some((s, list)) if *s == stage => list.push(obj),
            _ => out.push((stage, vec![obj])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(kind: &str, ns: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"namespace": ns, "name": name}})
    }

    fn names(list: &[Value]) -> Vec<String> {
        list.iter()
            .map(|o| {
                format!(
                    "{}/{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn stages_follow_flux() {
        let objects = vec![
            obj("ValidatingWebhookConfiguration", "", "hook"),
            obj("Deployment", "apps", "web"),
            obj("Widget", "apps", "w"),
            obj("Service", "apps", "web"),
            obj("IngressClass", "", "nginx"),
            obj("Namespace", "", "apps"),
            obj("CustomResourceDefinition", "", "widgets.example.com"),
            obj("ConfigMap", "apps", "b"),
            obj("ConfigMap", "apps", "a"),
            obj("ConfigMap", "alpha", "z"),
            obj("ClusterRole", "", "reader"),
            obj("ServiceAccount", "apps", "web"),
            obj("StorageClass", "", "fast"),
        ];
        let staged = stages(objects);
        let got: Vec<(Stage, Vec<String>)> = staged.iter().map(|(s, l)| (*s, names(l))).collect();
        assert_eq!(
            got,
            vec![
                (
                    Stage::Definitions,
                    vec![
                        "CustomResourceDefinition//widgets.example.com".to_string(),
                        "Namespace//apps".into(),
                        "ClusterRole//reader".into(),
                    ]
                ),
                (
                    Stage::Classes,
                    vec![
                        "StorageClass//fast".to_string(),
                        "IngressClass//nginx".into()
                    ]
                ),
                (
                    Stage::Resources,
                    vec![
                        "ServiceAccount/apps/web".to_string(),
                        "ConfigMap/alpha/z".into(),
                        "ConfigMap/apps/a".into(),
                        "ConfigMap/apps/b".into(),
                        "Service/apps/web".into(),
                        "Deployment/apps/web".into(),
                        "Widget/apps/w".into(),
                        "ValidatingWebhookConfiguration//hook".into(),
                    ]
                ),
            ]
        );
    }
}
