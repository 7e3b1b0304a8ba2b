//! The Kustomization reconciler against a local cluster from `crates/devcluster`, on the paths
//! that must apply nothing: a missing source, a dependency cycle, a failing build, suspension and
//! deletion. Each waits for the status the controller writes; no fixed sleeps.

use crate::harness::{
    create_git_repository, kustomization, publish, ready_message, ready_with_reason,
    serve_artifact, start,
};
use ferroflux_api::Kustomization;
use ferroflux_testkit::eventually;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_source_dependency_cycle_and_build_failure_apply_nothing() {
    let env = start("hub").await;
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
    let server = serve_artifact(&[
        ("broken/kustomization.yaml", "resources:\n- missing.yaml\n"),
        ("good/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n  namespace: flux-system\ndata:\n  a: \"1\"\n"),
    ])
    .await;
    create_git_repository(&env.client).await;
    publish(&env.client, &server, COMMIT).await;
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
        Some(format!("main@sha1:{COMMIT}").as_str())
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
    // `a` first reports `b` missing (it was created first); it is woken again when `b`
    // appears, so wait for the cycle to be reported, not for the first not-ready message.
    let cycle_reported = |name: &'static str| {
        ready_message(&api, name, "the cycle reported", |m| {
            m.starts_with("circular dependency detected")
        })
    };
    let a = cycle_reported("a").await;
    let b = cycle_reported("b").await;
    assert_eq!(a["reason"], "DependencyNotReady");
    assert_eq!(b["reason"], "DependencyNotReady");
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
    let env = start("hub").await;
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
    // the same queue) has been seen too: it carries the finalizer, and no status but the
    // default the CRD declares (`observedGeneration: -1`, filled by the API server).
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
    let status = paused.status.clone().unwrap_or_default();
    assert!(
        status.observed_generation == Some(-1)
            && status.conditions.is_none()
            && status.last_attempted_revision.is_none()
            && status.last_applied_revision.is_none()
            && status.inventory.is_none(),
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
    let server = serve_artifact(&[
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
        let env = start(cluster).await;
        create_git_repository(&env.client).await;
        publish(&env.client, &server, COMMIT).await;
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
