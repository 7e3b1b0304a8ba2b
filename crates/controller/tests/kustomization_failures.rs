//! The Kustomization reconciler against a local cluster from `crates/devcluster`, on the paths
//! that must apply nothing: a missing source, a dependency cycle, a failing build, suspension and
//! deletion. Each waits for the status the controller writes; no fixed sleeps.

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::kustomization::reconciler::{self, Options};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Env {
    _cluster: RunningCluster,
    client: kube::Client,
}

async fn start() -> Env {
    let cluster = DevCluster::start(Config::memory("hub")).await.unwrap();
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
    // The CRDs are served once discovery lists them.
    let ks: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    eventually("Kustomization CRD served", || async {
        ks.list(&ListParams::default()).await.ok()
    })
    .await;
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
    Env {
        _cluster: cluster,
        client,
    }
}

/// Polls `f` until it yields something; the bound only stops a broken test from hanging.
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

fn kustomization(name: &str, source: &str, extra: Value) -> Kustomization {
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

/// The Ready condition once it has the wanted reason.
async fn ready_with_reason(api: &Api<Kustomization>, name: &str, reason: &str) -> Value {
    eventually(&format!("{name} Ready reason {reason}"), || async {
        let ks = api.get(name).await.ok()?;
        let conditions = ks.status?.conditions?;
        let ready = conditions.into_iter().find(|c| c.type_ == "Ready")?;
        (ready.reason == reason).then(|| serde_json::to_value(ready).unwrap())
    })
    .await
}

/// Serves one artifact over HTTP, as the source controller would.
async fn serve_artifact(files: &[(&str, &str)]) -> (String, String) {
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
    let data = builder.into_inner().unwrap().finish().unwrap();
    let digest = format!("sha256:{}", hex(&Sha256::digest(&data)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let data = data.clone();
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
    (
        format!("http://{addr}/gitrepository/flux-system/repo/x.tar.gz"),
        digest,
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn git_repository_with_artifact(client: &kube::Client, url: &str, digest: &str) {
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let repo: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": "https://example.com/fleet"},
    }))
    .unwrap();
    repos.create(&PostParams::default(), &repo).await.unwrap();
    let status = json!({"status": {"artifact": {
        "path": "gitrepository/flux-system/repo/x.tar.gz",
        "url": url,
        "revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
        "digest": digest,
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }}});
    repos
        .patch_status("repo", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_source_dependency_cycle_and_build_failure_apply_nothing() {
    let env = start().await;
    let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");

    // A source that does not exist.
    api.create(
        &PostParams::default(),
        &kustomization("orphan", "missing", json!({})),
    )
    .await
    .unwrap();
    let ready = ready_with_reason(&api, "orphan", "ArtifactFailed").await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "Source 'GitRepository/flux-system/missing' not found"
    );
    let orphan = api.get("orphan").await.unwrap();
    assert!(
        orphan
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"finalizers.fluxcd.io".to_string())
    );

    // A build that fails: the artifact holds a kustomization naming a missing file.
    let (url, digest) = serve_artifact(&[
        ("broken/kustomization.yaml", "resources:\n- missing.yaml\n"),
        ("good/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n  namespace: flux-system\ndata:\n  a: \"1\"\n"),
    ])
    .await;
    git_repository_with_artifact(&env.client, &url, &digest).await;
    api.create(
        &PostParams::default(),
        &kustomization("broken", "repo", json!({"path": "./broken"})),
    )
    .await
    .unwrap();
    let ready = ready_with_reason(&api, "broken", "BuildFailed").await;
    assert!(
        ready["message"].as_str().unwrap().contains("missing.yaml"),
        "{ready}"
    );
    let broken = api.get("broken").await.unwrap().status.unwrap();
    assert_eq!(
        broken.last_attempted_revision.as_deref(),
        Some("main@sha1:0123456789abcdef0123456789abcdef01234567")
    );
    assert!(broken.last_applied_revision.is_none());

    // A path that is not in the artifact.
    api.create(
        &PostParams::default(),
        &kustomization("nowhere", "repo", json!({"path": "./clusters/none"})),
    )
    .await
    .unwrap();
    let ready = ready_with_reason(&api, "nowhere", "ArtifactFailed").await;
    assert_eq!(
        ready["message"],
        "kustomization path not found: ./clusters/none"
    );

    // A dependency cycle is named on every member.
    api.create(
        &PostParams::default(),
        &kustomization(
            "a",
            "repo",
            json!({"dependsOn": [{"name": "b"}], "path": "./good"}),
        ),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &kustomization(
            "b",
            "repo",
            json!({"dependsOn": [{"name": "a"}], "path": "./good"}),
        ),
    )
    .await
    .unwrap();
    let a = ready_with_reason(&api, "a", "DependencyNotReady").await;
    let b = ready_with_reason(&api, "b", "DependencyNotReady").await;
    assert_eq!(
        a["message"],
        "circular dependency detected: flux-system/a -> flux-system/b -> flux-system/a"
    );
    assert_eq!(
        b["message"],
        "circular dependency detected: flux-system/b -> flux-system/a -> flux-system/b"
    );

    // Nothing from Git reached the cluster.
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), "flux-system");
    assert!(configmaps.get_opt("from-git").await.unwrap().is_none());

    // Deleting a Kustomization lets it go once the finalizer ran.
    api.delete("orphan", &DeleteParams::default())
        .await
        .unwrap();
    eventually("orphan deleted", || async {
        matches!(api.get_opt("orphan").await, Ok(None)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_kustomization_is_left_alone() {
    let env = start().await;
    let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &kustomization("watched", "missing", json!({})),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &kustomization("paused", "missing", json!({"suspend": true})),
    )
    .await
    .unwrap();
    // Once the active one has been reconciled, the suspended one (created after it, handled by
    // the same queue) has been seen too: it carries the finalizer but no status.
    ready_with_reason(&api, "watched", "ArtifactFailed").await;
    let paused = eventually("paused has the finalizer", || async {
        let k = api.get("paused").await.ok()?;
        k.metadata
            .finalizers
            .clone()
            .filter(|f| !f.is_empty())
            .map(|_| k)
    })
    .await;
    assert!(
        paused.status.is_none(),
        "a suspended object gets no status: {:?}",
        paused.status
    );
}

/// Each cluster holds only its own age key. On production, the encrypted Secret decrypts and
/// applies; on staging, a Kustomization pointing at the same files with staging's key fails its
/// build naming the recipients it could not match, and applies nothing. A missing key Secret is
/// reported as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_cannot_decrypt_production_secrets() {
    use k8s_openapi::api::core::v1::Secret;
    let fixtures = format!("{}/../sops/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let production_secret =
        std::fs::read_to_string(format!("{fixtures}/algorithms/age.yaml")).unwrap();
    let (url, digest) = serve_artifact(&[
        ("secrets/kustomization.yaml", "resources:\n- secret.yaml\n"),
        ("secrets/secret.yaml", &production_secret),
    ])
    .await;
    let decryption = |secret: &str| {
        json!({"path": "./secrets", "targetNamespace": "flux-system",
               "decryption": {"provider": "sops", "secretRef": {"name": secret}}})
    };
    let mut clusters = Vec::new();
    for (cluster, key_file) in [("production", "age.txt"), ("staging", "age-global.txt")] {
        let env = start().await;
        git_repository_with_artifact(&env.client, &url, &digest).await;
        let key = std::fs::read(format!("{fixtures}/keys/{key_file}")).unwrap();
        let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "flux-system");
        let key: Secret = serde_json::from_value(json!({
            "metadata": {"name": "sops-age", "namespace": "flux-system"},
            "data": {format!("{cluster}.agekey"): k8s_openapi::ByteString(key)},
        }))
        .unwrap();
        secrets.create(&PostParams::default(), &key).await.unwrap();
        let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
        api.create(
            &PostParams::default(),
            &kustomization("secrets", "repo", decryption("sops-age")),
        )
        .await
        .unwrap();
        clusters.push((env, api, secrets));
    }

    let (_, production, production_secrets) = &clusters[0];
    let ready = ready_with_reason(production, "secrets", "ReconciliationSucceeded").await;
    assert_eq!(ready["status"], "True");
    let applied = production_secrets.get("age").await.unwrap();
    let text = serde_json::to_string(&applied).unwrap();
    assert!(
        !text.contains("ENC["),
        "applied in clear on production: {text}"
    );

    let (_, staging, staging_secrets) = &clusters[1];
    let ready = ready_with_reason(staging, "secrets", "BuildFailed").await;
    let message = ready["message"].as_str().unwrap();
    assert!(message.starts_with("decryption failed: "), "{message}");
    assert!(
        message.contains("age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29"),
        "the message names the recipients it could not match: {message}"
    );
    assert!(
        !message.contains("AGE-SECRET-KEY"),
        "no key material in status: {message}"
    );
    assert!(
        staging_secrets.get_opt("age").await.unwrap().is_none(),
        "nothing applied on staging"
    );

    staging
        .create(
            &PostParams::default(),
            &kustomization("nokey", "repo", decryption("missing")),
        )
        .await
        .unwrap();
    let ready = ready_with_reason(staging, "nokey", "BuildFailed").await;
    assert_eq!(
        ready["message"],
        "decryption: Secret flux-system/missing not found"
    );
}
