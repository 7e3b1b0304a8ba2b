//! The expressions Flux documents and tests (kustomize-controller's and helm-controller's
//! docs, fluxcd/pkg runtime/cel tests), over realistic objects, with cel-go's results.

use super::*;
use ferroflux_cel::Expression;
use serde_json::json;

fn sealed_secret(status: &str) -> Json {
    json!({
        "apiVersion": "bitnami.com/v1alpha1",
        "kind": "SealedSecret",
        "metadata": {"name": "db", "namespace": "apps", "generation": 2},
        "spec": {"encryptedData": {"password": "AgB..."}},
        "status": {
            "observedGeneration": 2,
            "conditions": [
                {"type": "Synced", "status": status, "lastTransitionTime": "2025-01-01T00:00:00Z"}
            ]
        }
    })
}

fn deployment() -> Json {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "apps", "generation": 3,
            "labels": {"app": "web"},
            "annotations": {"app/version": "v1.2.3", "deployment.kubernetes.io/revision": "4"}
        },
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "observedGeneration": 3,
            "replicas": 3,
            "readyReplicas": 3,
            "updatedReplicas": 3,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
            ]
        }
    })
}

fn kustomization(name: &str, ready: &str, generation: i64, observed: i64, version: &str) -> Json {
    json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": name, "namespace": "apps", "generation": generation,
            "labels": {"app/version": version},
            "annotations": {"app/version": version}
        },
        "spec": {"interval": "5m", "path": "./apps", "prune": true},
        "status": {
            "observedGeneration": observed,
            "conditions": [
                {"type": "Ready", "status": ready, "reason": "ReconciliationSucceeded"},
                {"type": "Healthy", "status": "True", "reason": "Succeeded"}
            ]
        }
    })
}

fn check(src: &str, obj: Json) -> bool {
    let e = Expression::parse(src).unwrap_or_else(|e| panic!("{e}"));
    e.evaluate_bool(&fields(obj))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn sealed_secret_docs_expressions() {
    // kustomize-controller docs/spec/v1/kustomizations.md and helm-controller's helmreleases.md.
    let failed = "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')";
    let current = "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')";
    assert!(check(current, sealed_secret("True")));
    assert!(!check(failed, sealed_secret("True")));
    assert!(check(failed, sealed_secret("False")));
    assert!(!check(current, sealed_secret("False")));
}

#[test]
fn pkg_status_evaluator_expressions() {
    let in_progress =
        "has(status.observedGeneration) && metadata.generation != status.observedGeneration";
    let mut obj = sealed_secret("True");
    assert!(!check(in_progress, obj.clone()));
    obj["metadata"]["generation"] = json!(3);
    assert!(check(in_progress, obj.clone()));
    // Without status.observedGeneration, has() is false and && short-circuits.
    let mut obj = sealed_secret("True");
    obj["status"]
        .as_object_mut()
        .map(|s| s.remove("observedGeneration"));
    assert!(!check(in_progress, obj));
    // CRDs that type observedGeneration as a string: a string comparison.
    let obj = json!({"metadata": {"generation": "2"}, "status": {"observedGeneration": "2"}});
    assert!(check("status.observedGeneration == '2'", obj.clone()));
    assert!(check("metadata.generation == '2'", obj));
    // fluxcd/pkg: no conditions at all is an evaluation error naming the key.
    let obj = json!({"status": {}});
    let src = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')";
    assert_eq!(
        error(src, &fields(obj)),
        format!("failed to evaluate the CEL expression '{src}': no such key: conditions")
    );
}

#[test]
fn pkg_expression_tests() {
    let v = vars(
        json!({"foo": {"bar": "abc-DEF", "baz": "x", "items": ["tea", "coffee", "toast"], "value": "a,b"},
                        "bar": {"biz": "y", "uid": "ABC-123"}}),
    );
    assert_eq!(
        eval_json("foo.bar + '/' + foo.baz + '/' + bar.biz", &v),
        json!("abc-DEF/x/y")
    );
    assert_eq!(
        eval_json(
            "foo.bar + '/' + foo.baz + '/' + bar.uid.split('-')[0].lowerAscii()",
            &v
        ),
        json!("abc-DEF/x/abc")
    );
    assert_eq!(
        eval_json(
            "foo.bar + '/' + foo.baz + '/' + bar.uid.split('-').first().value().lowerAscii()",
            &v
        ),
        json!("abc-DEF/x/abc")
    );
    assert_eq!(
        eval_json("foo.bar.split('-').first().value()", &v),
        json!("abc")
    );
    assert_eq!(
        eval_json("foo.bar.split('-').last().value()", &v),
        json!("DEF")
    );
    assert!(matches!(
        eval("foo.bar.split('-').first()", &v),
        Value::Optional(Some(_))
    ));
    assert_eq!(
        eval_json("foo.items.map(item, item.upperAscii())", &v),
        json!(["TEA", "COFFEE", "TOAST"])
    );
    assert_eq!(
        eval_json("foo.items.filter(item, item.startsWith('t'))", &v),
        json!(["tea", "toast"])
    );
    assert_eq!(eval_json("foo.value.split(',')", &v), json!(["a", "b"]));
    assert_eq!(
        eval_json("['literal1', 'literal2']", &v),
        json!(["literal1", "literal2"])
    );
    // A missing top-level variable.
    assert_eq!(
        error("nope", &v),
        "failed to evaluate the CEL expression 'nope': no such attribute(s): nope"
    );
    // A non-bool result asked for as a bool.
    let e = Expression::parse("'some-value'").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        e.evaluate_bool(&v).map_err(|e| e.to_string()),
        Err("failed to evaluate CEL expression as boolean: ''some-value''".to_string())
    );
    let data = vars(json!({"foo": true, "bar": false}));
    assert!(
        !Expression::parse("foo && bar")
            .and_then(|e| e.evaluate_bool(&data))
            .unwrap_or(true)
    );
}

#[test]
fn health_check_expressions_over_a_deployment() {
    let d = deployment();
    assert!(check("status.readyReplicas >= spec.replicas", d.clone()));
    assert!(check(
        "has(status.conditions) && status.conditions.exists(e, e.type == 'Available')",
        d.clone()
    ));
    assert!(!check(
        "status.conditions.exists(e, e.type == 'Available' && e.status == 'False')",
        d.clone()
    ));
    assert!(check(
        "status.conditions.filter(e, e.type == 'Available').all(e, e.status == 'True')",
        d.clone()
    ));
    assert!(check(
        "status.conditions.exists_one(c, c.reason.startsWith('Minimum'))",
        d.clone()
    ));
    assert!(check(
        "metadata.annotations['deployment.kubernetes.io/revision'] == '4'",
        d.clone()
    ));
    assert!(check(
        "int(metadata.annotations['deployment.kubernetes.io/revision']) > 3",
        d.clone()
    ));
    assert!(check(
        "size(status.conditions) == 2 && status.conditions.size() == 2",
        d.clone()
    ));
    assert!(check(
        "spec.selector.matchLabels.all(k, metadata.labels[k] == spec.selector.matchLabels[k])",
        d
    ));
    let pod = json!({"kind": "Pod", "status": {"phase": "Running"}});
    assert!(check("status.phase == 'Running'", pod.clone()));
    assert!(check("status.phase in ['Running', 'Succeeded']", pod));
    // A filter that keeps nothing: all() over an empty list is true (as in cel-go).
    assert!(check(
        "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
        deployment()
    ));
}

#[test]
fn ready_expr_over_self_and_dep() {
    let ready = "dep.status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True') && dep.metadata.generation == dep.status.observedGeneration";
    let same_version =
        "self.metadata.annotations['app/version'] == dep.metadata.annotations['app/version']";
    // kustomize-controller docs: dependsOn readyExpr.
    let docs = "dep.metadata.labels['app/version'] == self.metadata.labels['app/version'] &&\n  dep.status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True') &&\n  dep.metadata.generation == dep.status.observedGeneration\n";
    let both = |dep: Json, me: Json| vars(json!({"self": me, "dep": dep}));
    let me = kustomization("frontend", "True", 1, 1, "v1.2.3");
    let cases = [
        (
            kustomization("backend", "True", 4, 4, "v1.2.3"),
            true,
            true,
            true,
        ),
        (
            kustomization("backend", "False", 4, 4, "v1.2.3"),
            false,
            true,
            false,
        ),
        (
            kustomization("backend", "True", 5, 4, "v1.2.3"),
            false,
            true,
            false,
        ),
        (
            kustomization("backend", "True", 4, 4, "v1.2.4"),
            true,
            false,
            false,
        ),
    ];
    for (dep, want_ready, want_version, want_docs) in cases {
        let v = both(dep, me.clone());
        for (src, want) in [
            (ready, want_ready),
            (same_version, want_version),
            (docs, want_docs),
        ] {
            let got = Expression::parse(src).and_then(|e| e.evaluate_bool(&v));
            assert_eq!(got.map_err(|e| e.to_string()), Ok(want), "{src}");
        }
    }
}

#[test]
fn timestamps_of_conditions() {
    let obj = sealed_secret("True");
    assert!(check(
        "status.conditions.all(c, timestamp(c.lastTransitionTime) < timestamp('2025-06-01T00:00:00Z'))",
        obj.clone()
    ));
    assert!(check(
        "timestamp('2025-01-01T00:10:00Z') - timestamp(status.conditions[0].lastTransitionTime) == duration('10m')",
        obj
    ));
}

/// Shapes of expressions found in public fleet repositories (searched while writing this crate,
/// rewritten here over objects of our own): replica counts compared across spec and status, a
/// phase string, a digest matched by a regular expression, an annotation looked up by a key
/// with dots and slashes, and `exists` over conditions.
#[test]
fn expressions_as_fleets_write_them() {
    let stateful = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "pg", "generation": 4,
                     "annotations": {"build.example.com/commit": "0a1b2c"}},
        "spec": {"replicas": 3},
        "status": {"availableReplicas": 2, "phase": "Pending",
                   "output": {"digest": format!("sha256:{}", "ab".repeat(32))},
                   "git": {"commitSha": "0a1b2c"},
                   "conditions": [{"type": "Programmed", "status": "True"}]}
    });
    assert!(!check(
        "spec.replicas == status.availableReplicas",
        stateful.clone()
    ));
    assert!(check("status.phase != 'Ready'", stateful.clone()));
    assert!(check(
        "status.output.digest.matches('^sha256:[a-f0-9]{64}$')",
        stateful.clone()
    ));
    assert!(check(
        "status.git.commitSha == metadata.annotations['build.example.com/commit']",
        stateful.clone()
    ));
    assert!(check(
        "status.conditions.exists(c, c.type == 'Programmed' && c.status == 'True')",
        stateful.clone()
    ));
    // A list with no matching condition: `all` over nothing is true, which is why Flux's library
    // pairs it with `failed` of the opposite status.
    assert!(check(
        "status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')",
        stateful.clone()
    ));
    let mut ready = stateful;
    ready["status"]["availableReplicas"] = json!(3);
    assert!(check("spec.replicas == status.availableReplicas", ready));
}
