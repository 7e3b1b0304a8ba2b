//! The Kustomization reconciler's main path against a local cluster: build, substitute, staged
//! server-side apply, wait for health, inventory, then prune when a file leaves Git and correct
//! drift on request.

use crate::harness::{create_git_repository, publish, serve_artifact, start, tarball};
use ferroflux_api::Kustomization;
use ferroflux_testkit::eventually;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n";
const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: apps\ndata:\n  text: ${greeting}\n  replicas: \"x${replicas:=2}\"\n";
const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  replicas: ${replicas:=2}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";

async fn ready_revision(api: &Api<Kustomization>, name: &str, revision: &str) -> Kustomization {
    eventually(&format!("{name} ready at {revision}"), || async {
        let ks = api.get(name).await.ok()?;
        let status = ks.status.clone()?;
        let ready = status
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        (ready.status == "True" && status.last_applied_revision.as_deref() == Some(revision))
            .then_some(ks)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_substitutes_waits_prunes_and_corrects_drift() {
    let env = start("staging").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let server = serve_artifact(&[
        ("apps/ns.yaml", NAMESPACE),
        ("apps/cm.yaml", CONFIGMAP),
        ("apps/deploy.yaml", DEPLOYMENT),
    ])
    .await;
    create_git_repository(&client).await;
    let c1 = "1111111111111111111111111111111111111111";
    publish(&client, &server, c1).await;

    let ks: Kustomization = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"interval": "10m", "prune": true, "wait": true, "timeout": "30s", "path": "./apps",
                 "sourceRef": {"kind": "GitRepository", "name": "repo"},
                 "postBuild": {"substitute": {"greeting": "hello"}}},
    }))
    .unwrap();
    ks_api.create(&PostParams::default(), &ks).await.unwrap();
    let applied = ready_revision(&ks_api, "apps", &format!("main@sha1:{c1}")).await;
    let status = applied.status.unwrap();
    let ready = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready.reason, "ReconciliationSucceeded");
    assert_eq!(ready.message, format!("Applied revision: main@sha1:{c1}"));
    let healthy = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Healthy")
        .unwrap();
    assert_eq!(healthy.status, "True");
    let ids: Vec<String> = status
        .inventory
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(
        ids,
        [
            "_apps__Namespace",
            "apps_greeting__ConfigMap",
            "apps_web_apps_Deployment"
        ]
    );

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let cm = configmaps.get("greeting").await.unwrap();
    let data = cm.data.clone().unwrap();
    assert_eq!(data["text"], "hello");
    assert_eq!(data["replicas"], "x2");
    let labels = cm.metadata.labels.unwrap();
    assert_eq!(labels["kustomize.toolkit.fluxcd.io/name"], "apps");
    assert_eq!(
        labels["kustomize.toolkit.fluxcd.io/namespace"],
        "flux-system"
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    assert_eq!(deployments.get("web").await.unwrap().spec.replicas, Some(2));

    // Drift: someone scales the Deployment by hand; a requested reconcile puts Git back.
    deployments
        .patch("web", &PatchParams::apply("kubectl-edit").force(), &Patch::Apply(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"replicas": 5}})))
        .await
        .unwrap();
    ks_api
        .patch(
            "apps",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
            "reconcile.fluxcd.io/requestedAt": "2026-11-30T00:00:00.000000000Z"}}})),
        )
        .await
        .unwrap();
    eventually("drift corrected", || async {
        let ks = ks_api.get("apps").await.ok()?;
        let handled = ks.status?.last_handled_reconcile_at;
        let replicas = deployments.get("web").await.ok()?.spec.replicas;
        (handled.as_deref() == Some("2026-11-30T00:00:00.000000000Z") && replicas == Some(2))
            .then_some(())
    })
    .await;

    // A commit removes the ConfigMap from Git: it is pruned, the rest stays.
    *server.content.lock().unwrap() = tarball(&[
        ("apps/ns.yaml", NAMESPACE),
        ("apps/deploy.yaml", DEPLOYMENT),
    ]);
    let c2 = "2222222222222222222222222222222222222222";
    publish(&client, &server, c2).await;
    ready_revision(&ks_api, "apps", &format!("main@sha1:{c2}")).await;
    assert!(
        configmaps.get_opt("greeting").await.unwrap().is_none(),
        "pruned"
    );
    assert!(deployments.get_opt("web").await.unwrap().is_some());
}
