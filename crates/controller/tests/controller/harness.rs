//! The Kustomization controller running on a local cluster with Flux's CRDs, an artifact server
//! standing in for the source controller, and waits on the Ready condition.

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::kustomization::reconciler::{self, Options};
use ferroflux_devcluster::RunningCluster;
use ferroflux_testkit::{eventually, flux_cluster};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct Env {
    pub cluster: RunningCluster,
    pub client: kube::Client,
}

/// A cluster with the CRDs and the `flux-system` namespace, its Kustomization controller
/// running.
pub async fn start(name: &str) -> Env {
    start_with(name, Options::default()).await
}

/// [`start`] with the controller's settings; the dependency requeue and health poll are
/// shortened for tests.
pub async fn start_with(name: &str, options: Options) -> Env {
    let (cluster, client) = flux_cluster(name).await;
    let config = cluster.kube_config().await.unwrap();
    let options = Options {
        requeue_dependency: Duration::from_secs(1),
        health_poll: Duration::from_millis(100),
        ..options
    };
    tokio::spawn(reconciler::run(client.clone(), config, options));
    Env { cluster, client }
}

pub fn kustomization(name: &str, source: &str, extra: Value) -> Kustomization {
    let mut spec = json!({
        "interval": "10m",
        "prune": true,
        "sourceRef": {"kind": "GitRepository", "name": source},
        "path": "./",
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": spec,
    }))
    .unwrap()
}

/// The Ready condition once it has the wanted reason; on time-out the panic shows the last one.
pub async fn ready_with_reason(api: &Api<Kustomization>, name: &str, reason: &str) -> Value {
    let last = Mutex::new(Value::Null);
    let found = async {
        eventually(&format!("{name} Ready reason {reason}"), || async {
            let ks = api.get(name).await.ok()?;
            let conditions = ks.status?.conditions?;
            let ready = conditions.into_iter().find(|c| c.type_ == "Ready")?;
            let ready = serde_json::to_value(ready).unwrap();
            *last.lock().unwrap() = ready.clone();
            (ready["reason"] == reason).then_some(ready)
        })
        .await
    };
    match tokio::time::timeout(Duration::from_secs(25), found).await {
        Ok(v) => v,
        Err(_) => panic!(
            "{name} never reached Ready reason {reason}; last: {}",
            last.lock().unwrap()
        ),
    }
}

pub fn tarball(files: &[(&str, &str)]) -> Vec<u8> {
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

pub fn digest(data: &[u8]) -> String {
    let hex: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Serves one artifact over HTTP as the source controller would; `content` can be replaced,
/// as a new commit would.
pub struct ArtifactServer {
    pub url: String,
    pub content: Arc<Mutex<Vec<u8>>>,
}

pub async fn serve_artifact(files: &[(&str, &str)]) -> ArtifactServer {
    let content = Arc::new(Mutex::new(tarball(files)));
    let shared = content.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let data = shared.lock().unwrap().clone();
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
    ArtifactServer {
        url: format!("http://{addr}/gitrepository/flux-system/repo/latest.tar.gz"),
        content,
    }
}

/// Creates the GitRepository `repo` in `flux-system`.
pub async fn create_git_repository(client: &kube::Client) {
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let repo: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": "https://example.com/fleet"},
    }))
    .unwrap();
    repos.create(&PostParams::default(), &repo).await.unwrap();
}

/// Writes the artifact the server holds into `repo`'s status, at revision `main@sha1:<commit>`.
pub async fn publish(client: &kube::Client, server: &ArtifactServer, commit: &str) {
    let data = server.content.lock().unwrap().clone();
    publish_with_digest(client, &server.url, commit, &digest(&data)).await;
}

/// [`publish`] with the digest given, right or wrong.
pub async fn publish_with_digest(client: &kube::Client, url: &str, commit: &str, digest: &str) {
    let status = json!({"status": {"artifact": {
        "path": "gitrepository/flux-system/repo/latest.tar.gz",
        "url": url,
        "revision": format!("main@sha1:{commit}"),
        "digest": digest,
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }}});
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    repos
        .patch_status("repo", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// The Ready condition of `name` once its message satisfies `accept`.
pub async fn ready_message(
    api: &Api<Kustomization>,
    name: &str,
    what: &str,
    accept: impl Fn(&str) -> bool,
) -> Value {
    eventually(&format!("{name}: {what}"), || async {
        let ks = api.get(name).await.ok()?;
        let ready = ks
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        accept(&ready.message).then(|| serde_json::to_value(ready).unwrap())
    })
    .await
}
