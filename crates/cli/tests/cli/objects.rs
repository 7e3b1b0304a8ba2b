//! Flux objects for the day-2 and fleet tests, whose status the test writes through the status
//! subresource (as a controller would).

use ferroflux_api::{GitRepository, Kustomization};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub const SHA_A: &str = "aaaaaaaa11111111111111111111111111111111";
pub const SHA_B: &str = "bbbbbbbb22222222222222222222222222222222";

pub fn cond(type_: &str, status: &str, reason: &str, message: &str, generation: i64) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

pub fn revision(sha: &str) -> String {
    format!("main@sha1:{sha}")
}

/// Creates a GitRepository; with `sha`, writes the status of a fetched artifact.
pub async fn git(client: &kube::Client, name: &str, sha: Option<&str>) -> GitRepository {
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let obj: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": "https://example.invalid/repo.git", "ref": {"branch": "main"}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    match sha {
        Some(sha) => {
            let rev = revision(sha);
            let generation = created.metadata.generation.unwrap_or(1);
            write_status(
                client,
                "GitRepository",
                name,
                json!({
                    "observedGeneration": generation,
                    "conditions": [cond("Ready", "True", "Succeeded",
                        &format!("stored artifact for revision '{rev}'"), generation)],
                    "artifact": {"digest": "sha256:00", "lastUpdateTime": "2026-01-01T00:00:00Z",
                        "path": "gitrepository/flux-system/x.tar.gz", "revision": rev,
                        "url": "http://127.0.0.1/x.tar.gz", "size": 2048},
                }),
            )
            .await;
            api.get(name).await.unwrap()
        }
        None => created,
    }
}

/// Creates a Kustomization of source `source`, suspended or not.
pub async fn ks(client: &kube::Client, name: &str, source: &str, suspend: bool) -> Kustomization {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let mut spec = json!({
        "interval": "10m", "prune": true, "path": "./",
        "sourceRef": {"kind": "GitRepository", "name": source},
    });
    if suspend {
        spec["suspend"] = json!(true);
    }
    let obj: Kustomization = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap()
}

/// Writes a Kustomization's status as the controller would after a reconciliation of its
/// current generation: `ready` is (status, message), `applied` the last applied revision.
pub async fn ks_status(
    client: &kube::Client,
    name: &str,
    ready: (&str, &str),
    applied: Option<&str>,
    extra: Value,
) {
    let api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let generation = api
        .get(name)
        .await
        .unwrap()
        .metadata
        .generation
        .unwrap_or(1);
    let reason = match ready.0 {
        "True" => "ReconciliationSucceeded",
        "False" => "BuildFailed",
        _ => "Progressing",
    };
    let mut status = json!({
        "observedGeneration": generation,
        "conditions": [cond("Ready", ready.0, reason, ready.1, generation)],
    });
    if let Some(a) = applied {
        status["lastAppliedRevision"] = json!(a);
        status["lastAttemptedRevision"] = json!(a);
    }
    if let (Some(s), Some(e)) = (status.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    write_status(client, "Kustomization", name, status).await;
}

/// Merge-patches the status subresource of a Flux object in `flux-system`.
pub async fn write_status(client: &kube::Client, kind: &str, name: &str, status: Value) {
    let patch = Patch::Merge(json!({"status": status}));
    let pp = PatchParams::default();
    match kind {
        "Kustomization" => {
            let api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
            api.patch_status(name, &pp, &patch).await.unwrap();
        }
        "GitRepository" => {
            let api: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
            api.patch_status(name, &pp, &patch).await.unwrap();
        }
        other => panic!("no such kind {other}"),
    }
}
