//! What the tests share: clusters, charts, namespaces, reading objects back.

use std::path::PathBuf;
use std::sync::Arc;

use ferroflux_helmrelease::{Actions, InstallOptions, ReleaseRef, WaitOptions};
use ferroflux_testkit::Cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use serde_json::{Map, Value, json};

/// The field manager the tests apply as.
pub const MANAGER: &str = "helm-controller";

/// A chart of crates/helm's corpus (`<case>/chart`).
pub fn corpus_chart(case: &str) -> Arc<ferroflux_helm::Chart> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus")
        .join(case)
        .join("chart");
    Arc::new(ferroflux_helm::load(&dir).unwrap())
}

/// A chart of this crate's `tests/charts`.
pub fn fixture_chart(name: &str) -> Arc<ferroflux_helm::Chart> {
    Arc::new(ferroflux_helm::load(&fixture_dir(name)).unwrap())
}

/// The directory of a fixture chart.
pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/charts")
        .join(name)
}

/// A fresh devcluster (with a kubeconfig file), its client and actions.
pub async fn cluster(name: &str) -> (Cluster, kube::Client, Actions) {
    let cluster = Cluster::start(name).await;
    let client = cluster.client().await;
    let actions = Actions::new(client.clone(), MANAGER);
    (cluster, client, actions)
}

/// Creates a namespace.
pub async fn namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
}

/// Values from a JSON literal.
pub fn values(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("values must be an object"),
    }
}

/// Install options with a short wait.
pub fn install_opts() -> InstallOptions {
    InstallOptions {
        wait: WaitOptions {
            timeout: std::time::Duration::from_secs(20),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A release named `name` in namespace `ns`, stored there too.
pub fn target(name: &str, ns: &str) -> ReleaseRef {
    ReleaseRef::new(name, ns, ns)
}

/// A ConfigMap's data, `None` when it does not exist.
pub async fn config_map(client: &kube::Client, ns: &str, name: &str) -> Option<Map<String, Value>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.get_opt(name).await.unwrap().map(|cm| {
        cm.data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect()
    })
}

/// Whether an object of a built-in kind exists (`kind` as kubectl names it: `deployment`,...).
pub fn exists(cluster: &Cluster, ns: &str, kind: &str, name: &str) -> bool {
    let out = cluster.kubectl(&["get", kind, name, "-n", ns, "-o", "name"]);
    out.status.success()
}
