//! Bad artifacts reach the Kustomization reconciler and change nothing in the cluster: a
//! digest that does not match what was downloaded, and a tarball entry that escapes the
//! directory it is unpacked into. Each ends Ready=False `ArtifactFailed` with the reason, and
//! neither applies nor prunes anything; a good artifact afterwards converges.

use std::path::Path;

use crate::harness::{
    create_git_repository, digest, kustomization, publish, publish_with_digest, ready_message,
    ready_with_reason, serve_artifact, start, tarball,
};
use ferroflux_api::Kustomization;
use ferroflux_testkit::eventually;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

const C1: &str = "1111111111111111111111111111111111111111";
const C2: &str = "2222222222222222222222222222222222222222";
const C3: &str = "3333333333333333333333333333333333333333";
const C4: &str = "4444444444444444444444444444444444444444";

fn configmap(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: flux-system\ndata:\n  v: \"{value}\"\n"
    )
}

/// A tarball whose entry names are written raw, so `..` survives (the tar crate's own path
/// setter refuses it, as a well-behaved archiver would).
fn raw_tarball(entries: &[(&str, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, text) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, text.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

async fn value_of(cms: &Api<ConfigMap>, name: &str) -> Option<String> {
    cms.get_opt(name)
        .await
        .unwrap()
        .and_then(|cm| cm.data)
        .and_then(|d| d.get("v").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_artifacts_apply_and_prune_nothing() {
    let env = start("artifacts").await;
    let server = serve_artifact(&[
        ("app/cm.yaml", &configmap("settings", "v1")),
        ("app/old.yaml", &configmap("old", "kept")),
    ])
    .await;
    create_git_repository(&env.client).await;
    publish(&env.client, &server, C1).await;
    let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &kustomization("app", "repo", json!({"path": "./app", "prune": true})),
    )
    .await
    .unwrap();
    ready_with_reason(&api, "app", "ReconciliationSucceeded").await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "flux-system");
    assert_eq!(value_of(&cms, "settings").await.as_deref(), Some("v1"));
    let inventory = api.get("app").await.unwrap().status.unwrap().inventory;

    // A new revision whose content does not match the digest the source published.
    let stale_digest = digest(&server.content.lock().unwrap());
    *server.content.lock().unwrap() = tarball(&[("app/cm.yaml", &configmap("settings", "v2"))]);
    publish_with_digest(&env.client, &server.url, C2, &stale_digest).await;
    let ready = ready_with_reason(&api, "app", "ArtifactFailed").await;
    assert_eq!(ready["status"], "False");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "failed to verify artifact: computed digest doesn't match '{stale_digest}'"
        )),
        "{message}"
    );
    assert_eq!(value_of(&cms, "settings").await.as_deref(), Some("v1"));
    assert_eq!(value_of(&cms, "old").await.as_deref(), Some("kept"));

    // A tarball (with the right digest) holding an entry that climbs out of the directory.
    *server.content.lock().unwrap() = raw_tarball(&[
        ("app/cm.yaml", &configmap("settings", "v3")),
        ("../escaped.yaml", &configmap("escaped", "x")),
    ]);
    publish(&env.client, &server, C3).await;
    let ready = ready_message(&api, "app", "the escaping entry reported", |m| {
        m.contains("escapes the target directory")
    })
    .await;
    assert_eq!(ready["reason"], "ArtifactFailed");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("entry '../escaped.yaml' escapes the target directory"),
        "{ready}"
    );
    assert_eq!(value_of(&cms, "settings").await.as_deref(), Some("v1"));
    assert_eq!(value_of(&cms, "old").await.as_deref(), Some("kept"));
    assert!(value_of(&cms, "escaped").await.is_none());
    let status = api.get("app").await.unwrap().status.unwrap();
    assert_eq!(
        status.last_applied_revision.as_deref(),
        Some(format!("main@sha1:{C1}").as_str())
    );
    assert_eq!(status.inventory, inventory, "inventory unchanged");
    // Nothing was written next to the controller's working directories either.
    assert!(!Path::new("/tmp/escaped.yaml").exists());

    // A good artifact converges: applied, and what left Git pruned.
    *server.content.lock().unwrap() = tarball(&[("app/cm.yaml", &configmap("settings", "v4"))]);
    publish(&env.client, &server, C4).await;
    eventually("the good revision applied and old pruned", || async {
        (value_of(&cms, "settings").await.as_deref() == Some("v4")
            && value_of(&cms, "old").await.is_none())
        .then_some(())
    })
    .await;
    ready_with_reason(&api, "app", "ReconciliationSucceeded").await;
}
