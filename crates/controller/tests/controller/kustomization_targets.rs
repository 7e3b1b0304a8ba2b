//! Health failure through the devcluster's fail annotation, and a hub applying to a second
//! cluster through `spec.kubeConfig.secretRef` while its own cluster is untouched.

use crate::harness::{
    create_git_repository, kustomization, publish, ready_with_reason, serve_artifact, start,
};
use ferroflux_api::Kustomization;
use ferroflux_devcluster::{Config, DevCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use serde_json::json;

const COMMIT: &str = "abcdefabcdefabcdefabcdefabcdefabcdefabcd";

const FAILING: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\n  namespace: flux-system\n  annotations:\n    devcluster.ferroflux.io/fail: \"true\"\nspec:\n  replicas: 1\n  progressDeadlineSeconds: 60\n  selector:\n    matchLabels:\n      app: broken\n  template:\n    metadata:\n      labels:\n        app: broken\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n";

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote-config\n  namespace: default\ndata:\n  where: remote\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_workload_fails_the_health_check() {
    let env = start("staging").await;
    let server = serve_artifact(&[("app/deploy.yaml", FAILING)]).await;
    create_git_repository(&env.client).await;
    publish(&env.client, &server, COMMIT).await;
    let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &kustomization(
            "app",
            "repo",
            json!({"path": "./app", "wait": true, "timeout": "30s"}),
        ),
    )
    .await
    .unwrap();
    let ready = ready_with_reason(&api, "app", "HealthCheckFailed").await;
    assert_eq!(ready["status"], "False");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("Deployment/flux-system/broken"),
        "{message}"
    );
    let status = api.get("app").await.unwrap().status.unwrap();
    let healthy = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Healthy")
        .unwrap();
    assert_eq!(
        (healthy.status.as_str(), healthy.reason.as_str()),
        ("False", "HealthCheckFailed")
    );
    assert!(status.last_applied_revision.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_applies_to_a_remote_cluster_through_its_kubeconfig() {
    let hub = start("hub").await;
    let remote = DevCluster::start(Config::memory("production"))
        .await
        .unwrap();
    let remote_client = remote.client().await.unwrap();
    let server = serve_artifact(&[("remote/cm.yaml", CONFIGMAP)]).await;
    create_git_repository(&hub.client).await;
    publish(&hub.client, &server, COMMIT).await;

    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), "flux-system");
    let kubeconfig: Secret = serde_json::from_value(json!({
        "metadata": {"name": "production-kubeconfig", "namespace": "flux-system"},
        // `data`, not `stringData`: the devcluster does not fold stringData into data yet.
        "data": {"value": k8s_openapi::ByteString(remote.kubeconfig().into_bytes())},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &kubeconfig)
        .await
        .unwrap();
    let broken: Secret = serde_json::from_value(json!({
        "metadata": {"name": "broken-kubeconfig", "namespace": "flux-system"},
        "data": {"value": k8s_openapi::ByteString(b"clusters: [not a kubeconfig".to_vec())},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &broken)
        .await
        .unwrap();

    let api: Api<Kustomization> = Api::namespaced(hub.client.clone(), "flux-system");
    let remote_ks = |name: &str, secret: &str| {
        kustomization(
            name,
            "repo",
            json!({"path": "./remote", "kubeConfig": {"secretRef": {"name": secret}}}),
        )
    };
    api.create(
        &PostParams::default(),
        &remote_ks("production", "production-kubeconfig"),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &remote_ks("missing", "no-such-secret"),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &remote_ks("malformed", "broken-kubeconfig"),
    )
    .await
    .unwrap();
    // Workload identity is not supported: refused, not applied to the hub instead.
    api.create(
        &PostParams::default(),
        &kustomization(
            "identity",
            "repo",
            json!({"path": "./remote", "kubeConfig": {"configMapRef": {"name": "gke-identity"}}}),
        ),
    )
    .await
    .unwrap();

    let ready = ready_with_reason(&api, "production", "ReconciliationSucceeded").await;
    assert_eq!(ready["status"], "True");
    let remote_cms: Api<ConfigMap> = Api::namespaced(remote_client.clone(), "default");
    let cm = remote_cms.get("remote-config").await.unwrap();
    assert_eq!(cm.data.unwrap()["where"], "remote");
    let hub_cms: Api<ConfigMap> = Api::namespaced(hub.client.clone(), "default");
    assert!(
        hub_cms.get_opt("remote-config").await.unwrap().is_none(),
        "the hub is untouched"
    );

    let ready = ready_with_reason(&api, "missing", "ReconciliationFailed").await;
    assert_eq!(
        ready["message"],
        "unable to read KubeConfig secret 'flux-system/no-such-secret': not found"
    );
    let ready = ready_with_reason(&api, "identity", "ReconciliationFailed").await;
    assert_eq!(
        ready["message"],
        "spec.kubeConfig.configMapRef (ConfigMap 'flux-system/gke-identity': a cloud provider's identity for the remote cluster) is not supported yet by ferroflux; nothing was applied: give the remote cluster's kubeconfig in spec.kubeConfig.secretRef"
    );
    assert!(
        hub_cms.get_opt("remote-config").await.unwrap().is_none(),
        "the hub is still untouched"
    );
    let ready = ready_with_reason(&api, "malformed", "ReconciliationFailed").await;
    let message = ready["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("KubeConfig secret 'flux-system/broken-kubeconfig': invalid kubeconfig"),
        "{message}"
    );
}
