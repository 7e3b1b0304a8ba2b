//! A Kustomization's `spec.ignore` against a local cluster, as Flux's ssa drift ignore rules
//! behave: ignored paths are applied on create, differences in them alone change nothing,
//! another server-side-apply manager keeps a field it took over even when the object is applied
//! again for another change (Flux stops owning it), a hand edit (no applier owns it) is kept
//! by sending the cluster's value, and fields no rule names are still put back from Git.

use crate::harness::{create_git_repository, kustomization, publish, serve_artifact, tarball};
use ferroflux_api::Kustomization;
use ferroflux_testkit::eventually;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n";

fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\nspec:\n\
         \x20 replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n\
         \x20     labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n\
         \x20       image: {image}\n"
    )
}

fn configmap(colour: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\n\
         data:\n  level: info\n  colour: {colour}\n"
    )
}

/// Asks for a reconcile now and waits until it was handled at `revision`.
async fn reconciled(api: &Api<Kustomization>, at: &str, revision: &str) {
    api.patch(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {
            "reconcile.fluxcd.io/requestedAt": at}}})),
    )
    .await
    .unwrap();
    eventually(&format!("reconcile {at} handled"), || async {
        let status = api.get("apps").await.ok()?.status?;
        let ready = status
            .conditions
            .as_ref()?
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        (ready
            && status.last_handled_reconcile_at.as_deref() == Some(at)
            && status.last_applied_revision.as_deref() == Some(revision))
        .then_some(())
    })
    .await;
}

/// The managers whose managedFields entry holds the `f:` path `path`.
fn owners(managed: &serde_json::Value, path: &[&str]) -> Vec<String> {
    managed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            let mut at = &e["fieldsV1"];
            for p in path {
                at = &at[*p];
            }
            !at.is_null()
        })
        .map(|e| e["manager"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_paths_are_left_to_the_cluster() {
    let env = crate::harness::start("ignore").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let files = |image: &str, colour: &str| {
        vec![
            ("apps/ns.yaml", NAMESPACE.to_string()),
            ("apps/deploy.yaml", deployment(image)),
            ("apps/cm.yaml", configmap(colour)),
        ]
    };
    let first = files("nginx:1.27", "blue");
    let borrowed: Vec<(&str, &str)> = first.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let server = serve_artifact(&borrowed).await;
    create_git_repository(&client).await;
    let c1 = "1111111111111111111111111111111111111111";
    publish(&client, &server, c1).await;
    let rev = |c: &str| format!("main@sha1:{c}");

    let ks = kustomization(
        "apps",
        "repo",
        json!({
            "path": "./apps",
            "ignore": [
                {"paths": ["/spec/replicas"], "target": {"kind": "Deploy.*", "group": "apps"}},
                {"paths": ["/data/level"], "target": {"kind": "ConfigMap", "name": "settings"}},
                // Selects nothing: the Deployment has no such label.
                {"paths": ["/spec/template/spec/containers/0/image"],
                 "target": {"labelSelector": "team=other"}},
            ],
        }),
    );
    ks_api.create(&PostParams::default(), &ks).await.unwrap();
    reconciled(&ks_api, "t1", &rev(c1)).await;

    // Created whole: the ignored paths were applied too.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    assert_eq!(deployments.get("web").await.unwrap().spec.replicas, Some(2));
    assert_eq!(
        configmaps.get("settings").await.unwrap().data.unwrap()["level"],
        "info"
    );

    // An autoscaler takes replicas over by server-side apply, and someone edits the level by
    // hand (an update, not an apply) and the colour too.
    deployments
        .patch(
            "web",
            &PatchParams::apply("hpa").force(),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "apps"}, "spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    configmaps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"level": "debug", "colour": "red"}})),
        )
        .await
        .unwrap();

    // Reconciled: the ignored fields keep the cluster's values, the colour is Git's again.
    reconciled(&ks_api, "t2", &rev(c1)).await;
    assert_eq!(deployments.get("web").await.unwrap().spec.replicas, Some(5));
    let data = configmaps.get("settings").await.unwrap().data.unwrap();
    assert_eq!(data["level"], "debug");
    assert_eq!(data["colour"], "blue");

    // A commit changes the image and the colour: both objects are applied again, and still
    // keep the ignored values; Flux no longer owns the replicas the autoscaler applies.
    let second = files("nginx:1.28", "green");
    let borrowed: Vec<(&str, &str)> = second.iter().map(|(p, c)| (*p, c.as_str())).collect();
    *server.content.lock().unwrap() = tarball(&borrowed);
    let c2 = "2222222222222222222222222222222222222222";
    publish(&client, &server, c2).await;
    reconciled(&ks_api, "t3", &rev(c2)).await;
    let web = deployments.get("web").await.unwrap();
    let spec = web.spec.clone();
    assert_eq!(spec.replicas, Some(5));
    assert_eq!(
        spec.template.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx:1.28")
    );
    let managed = serde_json::to_value(&web.metadata.managed_fields).unwrap();
    assert_eq!(owners(&managed, &["f:spec", "f:replicas"]), ["hpa"]);
    let cm = configmaps.get("settings").await.unwrap();
    let data = cm.data.clone().unwrap();
    assert_eq!(data["level"], "debug");
    assert_eq!(data["colour"], "green");
    // The hand-edited level was sent back as the cluster held it: Flux applies it now.
    let managed = serde_json::to_value(&cm.metadata.managed_fields).unwrap();
    assert!(
        owners(&managed, &["f:data", "f:level"]).contains(&"kustomize-controller".to_string()),
        "{managed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_ignore_target_fails_the_reconcile_with_its_reason() {
    let env = crate::harness::start("ignore-bad").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let server = serve_artifact(&[("apps/ns.yaml", NAMESPACE)]).await;
    create_git_repository(&client).await;
    publish(&client, &server, "3333333333333333333333333333333333333333").await;
    let ks = kustomization(
        "apps",
        "repo",
        json!({"path": "./apps",
               "ignore": [{"paths": ["/spec"], "target": {"name": "web("}}]}),
    );
    ks_api.create(&PostParams::default(), &ks).await.unwrap();
    let ready = crate::harness::ready_message(&ks_api, "apps", "invalid ignore", |m| {
        m.starts_with("invalid spec.ignore: invalid name regex: ")
    })
    .await;
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ReconciliationFailed");
}
