//! The set-up the day-2 tests share: a devcluster whose controllers (the `Manager` that `ferroflux
//! controller` runs, here in this process) follow a test's Git repository through a GitRepository,
//! and Kustomizations of that source. Intervals are an hour, so nothing is fetched or applied
//! unless a command under test asks for it.

use crate::repo::Repo;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_devcluster::RunningCluster;
use ferroflux_testkit::{create, flux_cluster};
use serde_json::{Value, json};
use std::path::Path;

/// A cluster named `cluster_name` whose controllers keep their artifacts in `storage` and follow
/// `repo`'s `main` through the GitRepository `flux-system/source`.
pub async fn controllers_following(
    cluster_name: &str,
    source: &str,
    repo: &Repo,
    storage: &Path,
) -> (RunningCluster, kube::Client, Manager) {
    let (cluster, client) = flux_cluster(cluster_name).await;
    let config = cluster.kube_config().await.unwrap();
    let manager = Manager::start(client.clone(), config, ManagerConfig::local(storage))
        .await
        .unwrap();
    create(
        &client,
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": source, "namespace": "flux-system"},
            "spec": {"interval": "1h", "url": repo.url(), "ref": {"branch": "main"}},
        }),
    )
    .await;
    (cluster, client, manager)
}

/// Creates the pruning Kustomization `flux-system/name` of `path` in the GitRepository `source`,
/// with `extra` added to its spec.
pub async fn kustomization(
    client: &kube::Client,
    name: &str,
    source: &str,
    path: &str,
    extra: Value,
) {
    let mut spec = json!({"interval": "1h", "prune": true, "path": path,
                          "sourceRef": {"kind": "GitRepository", "name": source}});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    create(
        client,
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": spec,
        }),
    )
    .await;
}
