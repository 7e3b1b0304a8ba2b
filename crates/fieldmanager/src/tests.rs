//! Unit tests of field ownership, apply merge and conflicts.

use super::*;
use serde_json::json;

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T00:01:00Z";

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": image,
                    "env": [{"name": "A", "value": "1"}]}]}
            }
        }
    })
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_string(),
                        e["operation"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn apply_creates_and_records_fields_like_the_api_server() {
    let out = apply(None, &deployment(2, "nginx:1"), "flux", false, T0).unwrap();
    assert!(out.changed);
    let entry = &out.object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "flux");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {}, "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
                        "f:image": {}, "f:name": {}}}}
                }
            }
        })
    );
    // The same apply again changes nothing, not even the managed-fields time.
    let again = apply(
        Some(&out.object),
        &deployment(2, "nginx:1"),
        "flux",
        false,
        T1,
    )
    .unwrap();
    assert!(!again.changed);
    assert_eq!(again.object, out.object);
}

#[test]
fn conflicting_managers_need_force() {
    let a = apply(None, &deployment(2, "nginx:1"), "a", false, T0)
        .unwrap()
        .object;
    let err = apply(Some(&a), &deployment(3, "nginx:1"), "b", false, T1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"a\" using apps/v1: .spec.replicas"
    );
    let SsaError::Conflicts(c) = err else {
        panic!()
    };
    assert_eq!(c[0].field, ".spec.replicas");

    let forced = apply(Some(&a), &deployment(3, "nginx:1"), "b", true, T1)
        .unwrap()
        .object;
    assert_eq!(forced["spec"]["replicas"], 3);
    let entries = forced["metadata"]["managedFields"].as_array().unwrap();
    let a_fields = &entries.iter().find(|e| e["manager"] == "a").unwrap()["fieldsV1"];
    assert!(
        a_fields["f:spec"].get("f:replicas").is_none(),
        "a lost replicas: {a_fields}"
    );
    // Setting a field to the value it already has is shared ownership, not a conflict.
    let shared = apply(Some(&a), &deployment(2, "nginx:1"), "b", false, T1)
        .unwrap()
        .object;
    assert_eq!(
        managers(&shared),
        [("a".into(), "Apply".into()), ("b".into(), "Apply".into())]
    );
}

#[test]
fn an_empty_annotations_map_does_not_conflict_with_keys_others_added() {
    let mut config = deployment(1, "nginx:1");
    config["metadata"]["annotations"] = json!({});
    let mut live = apply(None, &config, "kubectl", false, T0).unwrap().object;
    // A controller adds an annotation (kube-controller-manager's revision).
    live["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    let other = apply(Some(&live), &config, "other", false, T1)
        .unwrap()
        .object;
    assert_eq!(
        other["metadata"]["annotations"],
        json!({"deployment.kubernetes.io/revision": "1"})
    );
}

#[test]
fn fields_a_manager_drops_are_removed_unless_someone_else_owns_them() {
    let mut with_two = deployment(1, "nginx:1");
    with_two["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let live = apply(None, &with_two, "flux", false, T0).unwrap().object;
    let dropped = apply(Some(&live), &deployment(1, "nginx:1"), "flux", false, T1).unwrap();
    assert_eq!(dropped.object["metadata"]["labels"], json!({"app": "web"}));

    // Another applier sharing the label keeps it alive.
    let other = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "labels": {"tier": "front"}}});
    let shared = apply(Some(&live), &other, "ops", false, T1).unwrap().object;
    let kept = apply(Some(&shared), &deployment(1, "nginx:1"), "flux", false, T1)
        .unwrap()
        .object;
    assert_eq!(kept["metadata"]["labels"]["tier"], "front");

    // A container dropped from the configuration leaves the list.
    let mut two = deployment(1, "nginx:1");
    two["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "envoy"}));
    let live = apply(None, &two, "flux", false, T0).unwrap().object;
    let one = apply(Some(&live), &deployment(1, "nginx:1"), "flux", false, T1)
        .unwrap()
        .object;
    let names: Vec<&str> = one["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app"]);
}

#[test]
fn list_maps_merge_by_key_and_keep_other_items() {
    let live = apply(None, &deployment(1, "nginx:1"), "flux", false, T0)
        .unwrap()
        .object;
    let env_only = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {"template": {"spec": {"containers": [{"name": "app",
            "env": [{"name": "B", "value": "2"}]}]}}}});
    let merged = apply(Some(&live), &env_only, "injector", false, T1)
        .unwrap()
        .object;
    let c = &merged["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1");
    assert_eq!(
        c["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
}

#[test]
fn updates_take_ownership_of_what_they_change() {
    let live = apply(None, &deployment(1, "nginx:1"), "flux", false, T0)
        .unwrap()
        .object;
    let mut edited = live.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let edited = update(Some(&live), &edited, "kubectl-edit", T1).unwrap();
    assert_eq!(
        managers(&edited),
        [
            ("flux".into(), "Apply".into()),
            ("kubectl-edit".into(), "Update".into())
        ]
    );
    let flux = edited["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(
        !flux.contains("f:image"),
        "flux no longer owns the image: {flux}"
    );
    // Flux's apply is forced: it takes the image back, which corrects the drift.
    let err = apply(Some(&edited), &deployment(1, "nginx:1"), "flux", false, T1).unwrap_err();
    assert!(
        err.to_string().contains("conflict with \"kubectl-edit\""),
        "{err}"
    );
    let fixed = apply(Some(&edited), &deployment(1, "nginx:1"), "flux", true, T1)
        .unwrap()
        .object;
    assert_eq!(
        fixed["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1"
    );
    assert_eq!(managers(&fixed), [("flux".into(), "Apply".into())]);
}

#[test]
fn create_records_an_update_entry_and_client_can_reset_managed_fields() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d"}, "data": {"a": "1"}});
    let created = update(None, &cm, "kubectl-create", T0).unwrap();
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    let out = update(Some(&created), &reset, "kubectl-edit", T1).unwrap();
    assert!(out["metadata"].get("managedFields").is_none(), "{out}");
}

#[test]
fn bad_requests() {
    let mut with_managed = deployment(1, "x");
    with_managed["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        apply(None, &with_managed, "flux", false, T0).unwrap_err(),
        SsaError::BadRequest("metadata.managedFields must be nil".into())
    );
    assert!(matches!(
        apply(None, &deployment(1, "x"), "", false, T0),
        Err(SsaError::BadRequest(m)) if m.contains("fieldManager")
    ));
    let mut dup = deployment(1, "x");
    dup["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]);
    let err = apply(None, &dup, "flux", false, T0).unwrap_err();
    assert_eq!(
        err.to_string(),
        ".spec.template.spec.containers: Duplicate value: [name=\"a\"]"
    );
}

#[test]
fn custom_resources_merge_maps_and_replace_lists() {
    let cr = |items: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "d"}, "spec": {"size": 1, "items": items}})
    };
    let live = apply(None, &cr(json!(["a", "b"])), "flux", false, T0)
        .unwrap()
        .object;
    let out = apply(Some(&live), &cr(json!(["c"])), "flux", false, T1)
        .unwrap()
        .object;
    assert_eq!(out["spec"]["items"], json!(["c"]));
    assert_eq!(
        out["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:items": {}, "f:size": {}}})
    );
}

/// Regression (fuzz target `ssa_apply`): a manager that applied an empty map and then applies
/// it with an entry keeps the entry; the map was dropped as a leaf of its old field set and,
/// with it, the entry just applied.
#[test]
fn an_empty_map_applied_again_with_content_keeps_the_content() {
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm", "labels": {}}});
    let first = apply(None, &empty, "flux", false, T0).unwrap();
    let labelled = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "cm", "labels": {"c": "x"}}});
    let second = apply(Some(&first.object), &labelled, "flux", false, T1).unwrap();
    assert_eq!(second.object["metadata"]["labels"], json!({"c": "x"}));
    let again = apply(Some(&second.object), &labelled, "flux", false, T1).unwrap();
    assert!(!again.changed);
}

/// An item whose key changed takes its place in the applied order, as the API server merges
/// associative lists; items only the live object holds stay where they were among the others.
#[test]
fn list_map_items_keep_the_applied_order() {
    let service = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"ports": ports}})
    };
    let port = |name: &str, port: i64| json!({"name": name, "port": port, "protocol": "TCP"});
    let live = apply(
        None,
        &service(json!([port("http", 9899), port("grpc", 9999)])),
        "flux",
        false,
        T0,
    )
    .unwrap()
    .object;
    let renumbered = apply(
        Some(&live),
        &service(json!([port("http", 9898), port("grpc", 9999)])),
        "flux",
        false,
        T1,
    )
    .unwrap()
    .object;
    assert_eq!(
        renumbered["spec"]["ports"],
        json!([port("http", 9898), port("grpc", 9999)])
    );

    // Another manager's item stays between the applied ones where it stood.
    let mut shared = live.clone();
    shared["spec"]["ports"]
        .as_array_mut()
        .unwrap()
        .insert(1, port("metrics", 9797));
    let updated = update(Some(&live), &shared, "kubectl", T1).unwrap();
    let merged = apply(
        Some(&updated),
        &service(json!([
            port("admin", 9000),
            port("http", 9899),
            port("grpc", 9999)
        ])),
        "flux",
        false,
        T1,
    )
    .unwrap()
    .object;
    assert_eq!(
        merged["spec"]["ports"],
        json!([
            port("admin", 9000),
            port("http", 9899),
            port("metrics", 9797),
            port("grpc", 9999)
        ])
    );
}
