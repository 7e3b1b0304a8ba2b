//! The Kustomization reconciler's main path against a local cluster: build, substitute, staged
//! server-side apply, wait for health, inventory, then prune when a file leaves Git and correct
//! drift on request.

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::kustomization::reconciler::{self, Options};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

fn tarball(files: &[(&str, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, name, text.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// An artifact server whose content the test can replace, as a new commit would.
async fn artifact_server(current: Arc<Mutex<Vec<u8>>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let data = current.lock().unwrap().clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    data.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&data).await;
            });
        }
    });
    format!("http://{addr}/gitrepository/flux-system/repo/latest.tar.gz")
}

fn digest(data: &[u8]) -> String {
    let hex: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

async fn publish(repos: &Api<GitRepository>, url: &str, data: &[u8], commit: &str) {
    let status = json!({"status": {"artifact": {
        "path": "gitrepository/flux-system/repo/latest.tar.gz",
        "url": url,
        "revision": format!("main@sha1:{commit}"),
        "digest": digest(data),
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }}});
    repos
        .patch_status("repo", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

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
    let cluster: RunningCluster = DevCluster::start(Config::memory("staging")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap(),
        )
        .await
        .unwrap();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    eventually("CRDs served", || async {
        ks_api.list(&ListParams::default()).await.ok()
    })
    .await;

    let first = tarball(&[
        ("apps/ns.yaml", NAMESPACE),
        ("apps/cm.yaml", CONFIGMAP),
        ("apps/deploy.yaml", DEPLOYMENT),
    ]);
    let current = Arc::new(Mutex::new(first.clone()));
    let url = artifact_server(current.clone()).await;
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let repo: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": "https://example.com/fleet"},
    }))
    .unwrap();
    repos.create(&PostParams::default(), &repo).await.unwrap();
    let c1 = "1111111111111111111111111111111111111111";
    publish(&repos, &url, &first, c1).await;

    let kc = kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let options = Options {
        requeue_dependency: Duration::from_secs(1),
        health_poll: Duration::from_millis(100),
        ..Options::default()
    };
    tokio::spawn(reconciler::run(client.clone(), config, options));

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
    let second = tarball(&[
        ("apps/ns.yaml", NAMESPACE),
        ("apps/deploy.yaml", DEPLOYMENT),
    ]);
    *current.lock().unwrap() = second.clone();
    let c2 = "2222222222222222222222222222222222222222";
    publish(&repos, &url, &second, c2).await;
    ready_revision(&ks_api, "apps", &format!("main@sha1:{c2}")).await;
    assert!(
        configmaps.get_opt("greeting").await.unwrap().is_none(),
        "pruned"
    );
    assert!(deployments.get_opt("web").await.unwrap().is_some());
}
