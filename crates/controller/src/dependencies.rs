//! `spec.dependsOn`, shared by the Kustomization and HelmRelease reconcilers: the readiness
//! rule both controllers of Flux apply to a dependency (over any [`FluxObject`]), or its
//! `readyExpr` (CEL over `self` and `dep`) in its stead, the Kustomization's extra revision
//! rule, and dependency cycles.

use crate::step::{Failure, TERMINAL_ERROR};
use ferroflux_api::conditions::{READY, is_true, reason};
use ferroflux_api::kustomization::DependencyReference;
use ferroflux_api::{FluxObject, Kustomization};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Why the dependencies hold a reconcile back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyError {
    /// One is missing or not ready (yet): retried. The message reads like Flux's.
    NotReady(String),
    /// A `readyExpr` that cannot be used (it does not parse, or gives no boolean): a
    /// configuration error, as Flux's terminal error.
    InvalidExpression(String),
}

impl std::fmt::Display for DependencyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DependencyError::NotReady(m) | DependencyError::InvalidExpression(m) => f.write_str(m),
        }
    }
}

impl DependencyError {
    /// The failure a reconciler records: `DependencyNotReady` retried after `requeue`, or
    /// `InvalidCELExpression`, stalled.
    pub fn into_failure(self, requeue: Duration) -> Failure {
        match self {
            DependencyError::NotReady(m) => {
                Failure::retry(reason::DEPENDENCY_NOT_READY, m, requeue)
            }
            DependencyError::InvalidExpression(m) => Failure::stalled(
                reason::INVALID_CEL_EXPRESSION,
                format!("{TERMINAL_ERROR}: {m}"),
                requeue,
            ),
        }
    }
}

/// `namespace/name` of an object, as Flux prints dependency names.
pub fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// The keys of the objects `deps` names (namespace defaulted to `own_ns`).
pub fn keys(deps: Option<&[DependencyReference]>, own_ns: &str) -> Vec<String> {
    deps.into_iter()
        .flatten()
        .map(|d| key(d.namespace.as_deref().unwrap_or(own_ns), &d.name))
        .collect()
}

/// The keys of the Kustomizations `ks` depends on (namespace defaulted to its own).
pub fn dependency_keys(ks: &Kustomization) -> Vec<String> {
    let own_ns = ks.metadata.namespace.as_deref().unwrap_or("default");
    keys(ks.spec.depends_on.as_deref(), own_ns)
}

/// Flux's readiness of a dependency, the same in kustomize- and helm-controller: it has
/// conditions, has observed its generation and is `Ready=True`.
pub fn is_ready<K: FluxObject>(dep: &K) -> bool {
    let conditions = dep.conditions();
    !conditions.is_empty()
        && dep.meta().generation == dep.observed_generation()
        && is_true(conditions, READY)
}

/// Checks every dependency in `deps` (namespace defaulted to `own_ns`) of `this`: `lookup`
/// finds it (else `missing(key, name)` is the error); then its `readyExpr` holds, when it has
/// one, in place of the rest (as Flux's controllers do without their AdditiveCELDependencyCheck
/// feature gate); else it [`is_ready`] and `also` accepts it. The errors read like Flux's:
/// "dependency 'ns/name' is not ready".
pub fn check_ready<K: FluxObject + Serialize>(
    this: &impl Serialize,
    deps: Option<&[DependencyReference]>,
    own_ns: &str,
    lookup: impl Fn(&str, &str) -> Option<K>,
    missing: impl Fn(&str, &str) -> String,
    also: impl Fn(&str, &K) -> Result<(), String>,
) -> Result<(), DependencyError> {
    for d in deps.into_iter().flatten() {
        let ns = d.namespace.as_deref().unwrap_or(own_ns);
        let name = key(ns, &d.name);
        let Some(dep) = lookup(ns, &d.name) else {
            return Err(DependencyError::NotReady(missing(&name, &d.name)));
        };
        if let Some(expr) = d.ready_expr.as_deref().filter(|e| !e.is_empty()) {
            if !ready_by_expression(expr, this, &dep, &d.name)? {
                return Err(DependencyError::NotReady(format!(
                    "dependency '{name}' is not ready according to readyExpr eval"
                )));
            }
            continue;
        }
        if !is_ready(&dep) {
            return Err(DependencyError::NotReady(format!(
                "dependency '{name}' is not ready"
            )));
        }
        also(&name, &dep).map_err(DependencyError::NotReady)?;
    }
    Ok(())
}

/// `readyExpr` evaluated with `self` (the object reconciled) and `dep` (the dependency named
/// `dep_name`), each as the API server serves it.
fn ready_by_expression(
    expr: &str,
    this: &impl Serialize,
    dep: &impl Serialize,
    dep_name: &str,
) -> Result<bool, DependencyError> {
    let expression = ferroflux_cel::Expression::parse(expr).map_err(|e| {
        DependencyError::InvalidExpression(format!("failed to evaluate dependency {dep_name}: {e}"))
    })?;
    // Typed objects always serialize; Null would only make the expression fail to evaluate.
    let mut variables = serde_json::Map::new();
    variables.insert(
        "self".into(),
        serde_json::to_value(this).unwrap_or_default(),
    );
    variables.insert("dep".into(), serde_json::to_value(dep).unwrap_or_default());
    expression.evaluate_bool(&variables).map_err(|e| match e {
        // Flux checks at compile time that the expression gives a boolean.
        ferroflux_cel::Error::NotBool { .. } => DependencyError::InvalidExpression(format!(
            "failed to evaluate dependency {dep_name}: {e}"
        )),
        e => DependencyError::NotReady(e.to_string()),
    })
}

/// Checks Flux's readiness rules for every dependency of `ks` ([`check_ready`]) and
/// kustomize-controller's own: a dependency that follows the same source has applied
/// `source_revision`. The error reads like Flux's.
pub fn check_dependencies(
    ks: &Kustomization,
    lookup: impl Fn(&str, &str) -> Option<Kustomization>,
    source_revision: &str,
) -> Result<(), DependencyError> {
    let own_ns = ks.metadata.namespace.as_deref().unwrap_or("default");
    let missing = |name: &str, _: &str| format!("dependency '{name}' not found");
    let same_revision = |name: &str, dep: &Kustomization| {
        let status = dep.status.clone().unwrap_or_default();
        let ns = name.split_once('/').map_or(own_ns, |(ns, _)| ns);
        let dep_ns = dep.metadata.namespace.as_deref().unwrap_or(ns);
        let same_source = dep.spec.source_ref.kind == ks.spec.source_ref.kind
            && dep.spec.source_ref.name == ks.spec.source_ref.name
            && dep.spec.source_ref.namespace.as_deref().unwrap_or(dep_ns)
                == ks.spec.source_ref.namespace.as_deref().unwrap_or(own_ns);
        if same_source && status.last_applied_revision.as_deref() != Some(source_revision) {
            return Err(format!("dependency '{name}' revision is not up to date"));
        }
        Ok(())
    };
    check_ready(
        ks,
        ks.spec.depends_on.as_deref(),
        own_ns,
        lookup,
        missing,
        same_revision,
    )
}

/// The dependency cycle `start` is part of, if any, as `a -> b -> a`. `graph` maps each
/// Kustomization key to the keys it depends on.
pub fn find_cycle(graph: &BTreeMap<String, Vec<String>>, start: &str) -> Option<String> {
    // Depth-first search from `start`, looking for a path back to it.
    let mut path = vec![start.to_string()];
    let mut visited = BTreeSet::new();
    if walk(graph, start, start, &mut path, &mut visited) {
        return Some(path.join(" -> "));
    }
    None
}

fn walk(
    graph: &BTreeMap<String, Vec<String>>,
    start: &str,
    node: &str,
    path: &mut Vec<String>,
    visited: &mut BTreeSet<String>,
) -> bool {
    for next in graph.get(node).into_iter().flatten() {
        if next == start {
            path.push(next.clone());
            return true;
        }
        if !visited.insert(next.clone()) {
            continue;
        }
        path.push(next.clone());
        if walk(graph, start, next, path, visited) {
            return true;
        }
        path.pop();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::KustomizationSpec;
    use ferroflux_api::conditions::{Status, set_condition};
    use ferroflux_api::kustomization::{
        CrossNamespaceSourceReference, DependencyReference, KustomizationStatus, SourceKind,
    };
    use k8s_openapi::jiff::Timestamp;

    fn ks(name: &str, deps: &[&str], ready: Option<(bool, &str)>) -> Kustomization {
        let mut k = Kustomization::new(
            name,
            KustomizationSpec {
                interval: "10m".into(),
                prune: true,
                source_ref: CrossNamespaceSourceReference {
                    kind: SourceKind::GitRepository,
                    name: "flux-system".into(),
                    ..Default::default()
                },
                depends_on: Some(
                    deps.iter()
                        .map(|d| DependencyReference {
                            name: d.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            },
        );
        k.metadata.namespace = Some("flux-system".into());
        k.metadata.generation = Some(1);
        if let Some((is_ready, revision)) = ready {
            let mut conditions = Vec::new();
            let status = if is_ready {
                Status::True
            } else {
                Status::False
            };
            set_condition(
                &mut conditions,
                READY,
                status,
                "x",
                "",
                Some(1),
                Timestamp::UNIX_EPOCH,
            );
            k.status = Some(KustomizationStatus {
                conditions: Some(conditions),
                observed_generation: Some(1),
                last_applied_revision: Some(revision.into()),
                ..Default::default()
            });
        }
        k
    }

    #[test]
    fn dependencies_follow_flux_rules() {
        let apps = ks("apps", &["infrastructure"], None);
        let with = |dep: Option<Kustomization>| {
            move |ns: &str, name: &str| {
                assert_eq!((ns, name), ("flux-system", "infrastructure"));
                dep.clone()
            }
        };
        assert_eq!(
            check_dependencies(&apps, with(None), "main@sha1:1"),
            Err(DependencyError::NotReady(
                "dependency 'flux-system/infrastructure' not found".into()
            ))
        );
        let pending = ks("infrastructure", &[], None);
        assert_eq!(
            check_dependencies(&apps, with(Some(pending)), "main@sha1:1"),
            Err(DependencyError::NotReady(
                "dependency 'flux-system/infrastructure' is not ready".into()
            ))
        );
        let failing = ks("infrastructure", &[], Some((false, "main@sha1:1")));
        assert!(check_dependencies(&apps, with(Some(failing)), "main@sha1:1").is_err());
        let behind = ks("infrastructure", &[], Some((true, "main@sha1:0")));
        assert_eq!(
            check_dependencies(&apps, with(Some(behind)), "main@sha1:1"),
            Err(DependencyError::NotReady(
                "dependency 'flux-system/infrastructure' revision is not up to date".into()
            ))
        );
        let ready = ks("infrastructure", &[], Some((true, "main@sha1:1")));
        assert_eq!(
            check_dependencies(&apps, with(Some(ready)), "main@sha1:1"),
            Ok(())
        );
        assert_eq!(dependency_keys(&apps), ["flux-system/infrastructure"]);
    }

    #[test]
    fn a_ready_expression_decides_in_place_of_the_readiness_rules() {
        let with_expr = |expr: &str| {
            let mut apps = ks("apps", &["infrastructure"], None);
            if let Some(deps) = apps.spec.depends_on.as_mut() {
                deps[0].ready_expr = Some(expr.to_string());
            }
            apps.metadata.annotations = Some(
                [("app/version".to_string(), "1.2".to_string())]
                    .into_iter()
                    .collect(),
            );
            apps
        };
        let dep = |annotation: &str, ready: Option<(bool, &str)>| {
            let mut d = ks("infrastructure", &[], ready);
            d.metadata.annotations = Some(
                [("app/version".to_string(), annotation.to_string())]
                    .into_iter()
                    .collect(),
            );
            move |_: &str, _: &str| Some(d.clone())
        };
        let same_version =
            "self.metadata.annotations['app/version'] == dep.metadata.annotations['app/version']";
        // Not Ready, behind on the revision: the expression alone decides.
        assert_eq!(
            check_dependencies(&with_expr(same_version), dep("1.2", None), "main@sha1:1"),
            Ok(())
        );
        assert_eq!(
            check_dependencies(
                &with_expr(same_version),
                dep("1.1", Some((true, "main@sha1:1"))),
                "main@sha1:1"
            ),
            Err(DependencyError::NotReady(
                "dependency 'flux-system/infrastructure' is not ready according to readyExpr eval"
                    .into()
            ))
        );
        // An expression that does not parse is a configuration error, worded as Flux's.
        let Err(DependencyError::InvalidExpression(message)) = check_dependencies(
            &with_expr("dep.status.conditions.exists(c, "),
            dep("1.2", None),
            "main@sha1:1",
        ) else {
            panic!("a parse error is not retried");
        };
        assert!(
            message.starts_with(
                "failed to evaluate dependency infrastructure: failed to parse the CEL expression 'dep.status.conditions.exists(c, ': "
            ),
            "{message}"
        );
        // One that fails to evaluate (a missing key) is retried with cel's message.
        let Err(DependencyError::NotReady(message)) = check_dependencies(
            &with_expr("dep.status.nothing == 1"),
            dep("1.2", Some((true, "main@sha1:1"))),
            "main@sha1:1",
        ) else {
            panic!("an evaluation error is retried");
        };
        assert!(
            message
                .starts_with("failed to evaluate the CEL expression 'dep.status.nothing == 1': "),
            "{message}"
        );
        let failure =
            DependencyError::InvalidExpression("x".into()).into_failure(Duration::from_secs(30));
        assert!(failure.stalled);
        assert_eq!(failure.reason, "InvalidCELExpression");
        assert_eq!(
            failure.message,
            "Reconciliation failed terminally due to configuration error: x"
        );
    }

    #[test]
    fn cycles_are_named_from_each_member() {
        let mut graph = BTreeMap::new();
        graph.insert("ns/a".to_string(), vec!["ns/b".to_string()]);
        graph.insert("ns/b".to_string(), vec!["ns/c".to_string()]);
        graph.insert("ns/c".to_string(), vec!["ns/a".to_string()]);
        graph.insert("ns/d".to_string(), vec!["ns/a".to_string()]);
        assert_eq!(
            find_cycle(&graph, "ns/a").as_deref(),
            Some("ns/a -> ns/b -> ns/c -> ns/a")
        );
        assert_eq!(
            find_cycle(&graph, "ns/b").as_deref(),
            Some("ns/b -> ns/c -> ns/a -> ns/b")
        );
        assert_eq!(
            find_cycle(&graph, "ns/d"),
            None,
            "d depends on a cycle but is not in it"
        );
        graph.insert("ns/self".to_string(), vec!["ns/self".to_string()]);
        assert_eq!(
            find_cycle(&graph, "ns/self").as_deref(),
            Some("ns/self -> ns/self")
        );
    }
}
