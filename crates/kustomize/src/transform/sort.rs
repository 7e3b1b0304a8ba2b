//! Output order: kustomize's legacy order by kind (Namespaces first, webhooks last, then by
//! group/version/kind and namespace/name), unless `sortOptions` asks for another.

use crate::kustomization::SortOptions;
use crate::resource::{Res, split_api_version};

const ORDER_FIRST: [&str; 22] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];
const ORDER_LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

fn or<'a>(s: &'a str, d: &'a str) -> &'a str {
    if s.is_empty() { d } else { s }
}

struct Key {
    rank: i64,
    gvk: String,
    ns_kind: bool,
    group_empty: bool,
    id: String,
}

pub fn sort(res: &mut Vec<Res>, opts: Option<&SortOptions>) -> Result<(), String> {
    let (first, last): (Vec<String>, Vec<String>) = match opts {
        None => (
            ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
            ORDER_LAST.iter().map(|s| s.to_string()).collect(),
        ),
        Some(o) => match o.order.as_str() {
            "fifo" => {
                if o.legacy_sort_options.is_some() {
                    return Err("the field 'sortOptions.legacySortOptions' is set but the selected sort order is 'fifo', not 'legacy'".into());
                }
                return Ok(());
            }
            "legacy" => match &o.legacy_sort_options {
                Some(l) => (l.order_first.clone(), l.order_last.clone()),
                None => (
                    ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
                    ORDER_LAST.iter().map(|s| s.to_string()).collect(),
                ),
            },
            _ => return Err("the field 'sortOptions.order' must be one of [fifo, legacy]".into()),
        },
    };
    let rank = |kind: &str| -> i64 {
        if let Some(i) = first.iter().position(|k| k == kind) {
            return -(first.len() as i64) + i as i64;
        }
        if let Some(i) = last.iter().position(|k| k == kind) {
            return 1 + i as i64;
        }
        0
    };
    let mut keyed: Vec<(Key, Res)> = std::mem::take(res)
        .into_iter()
        .map(|r| {
            let (g, v) = split_api_version(r.api_version());
            let k = r.kind();
            let gvk_legacy = format!("{}_{}_{}", or(g, "~G"), or(v, "~V"), or(k, "~K"));
            let gvk_string = format!(
                "{}.{}.{}",
                or(k, "[noKind]"),
                or(v, "[noVer]"),
                or(g, "[noGrp]")
            );
            let id = format!(
                "{}|{}|{}",
                gvk_string,
                or(r.namespace(), "~X"),
                or(r.name(), "~N")
            );
            (
                Key {
                    rank: rank(k),
                    gvk: gvk_legacy,
                    ns_kind: k == "Namespace",
                    group_empty: g.is_empty(),
                    id,
                },
                r,
            )
        })
        .collect();
    keyed.sort_by(|(a, _), (b, _)| {
        use std::cmp::Ordering;
        if a.gvk != b.gvk {
            if a.rank != b.rank {
                return a.rank.cmp(&b.rank);
            }
            if a.ns_kind && b.ns_kind && (a.group_empty || b.group_empty) {
                return b.gvk.cmp(&a.gvk);
            }
            return a.gvk.cmp(&b.gvk);
        }
        a.id.cmp(&b.id).then(Ordering::Equal)
    });
    *res = keyed.into_iter().map(|(_, r)| r).collect();
    Ok(())
}
