//! What the day-2 and fleet tests share: in-process devclusters with Flux's CRDs, Flux objects
//! whose status the test writes through the status subresource (as a controller would), and
//! running the real binary against a kubeconfig naming them.

#![allow(dead_code)] // each test binary uses its own subset

use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

pub const SHA_A: &str = "aaaaaaaa11111111111111111111111111111111";
pub const SHA_B: &str = "bbbbbbbb22222222222222222222222222222222";

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A cluster serving Flux's CRDs, with the `flux-system` namespace.
pub async fn cluster(name: &str) -> (RunningCluster, kube::Client) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let ks: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    eventually("Kustomization CRD served", || async {
        ks.list(&ListParams::default()).await.ok()
    })
    .await;
    (cluster, client)
}

/// Polls `f` until it yields something; the bound only stops a broken test from hanging.
pub async fn eventually<T, F, Fut>(what: &str, f: F) -> T
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

/// Writes a kubeconfig naming `clusters` and returns its path.
pub fn kubeconfig(dir: &Path, clusters: &[&RunningCluster]) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&path, clusters, None).unwrap();
    path
}

/// Runs the binary with `--kubeconfig kc` appended.
pub fn ferroflux(kc: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .output()
        .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A table's rows as trimmed cells (the padding itself is checked against flux's goldens in
/// the unit tests of the table module).
pub fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| {
            l.trim_end_matches('\t')
                .split('\t')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}
