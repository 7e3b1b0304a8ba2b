//! HelmReleases with the real source controllers: the `Manager` (every controller, as `ferroflux
//! controller` runs them) on a devcluster, a real Git repository holding examples/fleet-infra's
//! podinfo chart, and each HelmRelease's chart template becoming a HelmChart the HelmChart
//! controller builds from the GitRepository's artifact. Covered: `dependsOn` (Flux's messages
//! while the dependency is missing or not ready, nothing installed meanwhile), hub mode
//! (`kubeConfig.secretRef`: the release lands on a second devcluster, the hub untouched, a
//! missing Secret named) and `serviceAccountName` (impersonation under the devcluster's RBAC: a
//! forbidden install names the service account, and with the `RetryOnFailure` strategy it is
//! retried after `retryInterval` until RBAC allows it, with no change to the HelmRelease). Every
//! wait is on the status the controllers write.

use ferroflux_api::HelmRelease;
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::{eventually, git};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const NS: &str = "flux-system";
const SA: &str = "system:serviceaccount:flux-system:deployer";

/// A cluster with the controllers running and the GitRepository `fleet` following a repository
/// that holds the podinfo chart at `charts/podinfo`.
struct Fleet {
    cluster: RunningCluster,
    client: kube::Client,
    manager: Option<Manager>,
    repo: tempfile::TempDir,
    _storage: tempfile::TempDir,
}

impl Fleet {
    async fn start(name: &str) -> Fleet {
        Fleet::start_with(name, |_| {}).await
    }

    /// [`Fleet::start`] with the manager's settings changed by `configure`.
    async fn start_with(name: &str, configure: impl FnOnce(&mut ManagerConfig)) -> Fleet {
        let repo = tempfile::tempdir().unwrap();
        let chart = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/fleet-infra/charts/podinfo/6.7.1");
        for file in [
            "Chart.yaml",
            "values.yaml",
            "templates/deployment.yaml",
            "templates/service.yaml",
        ] {
            let to = repo.path().join("charts/podinfo").join(file);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(chart.join(file), to).unwrap();
        }
        git(repo.path(), &["init", "-q"]);
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "-m", "chart"]);

        let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
        let client = cluster.client().await.unwrap();
        install_crds(&client).await.unwrap();
        for ns in [NS, "team-a", "team-b"] {
            create_namespace(&client, ns).await;
        }
        let storage = tempfile::tempdir().unwrap();
        let config = cluster.kube_config().await.unwrap();
        let mut settings = ManagerConfig::local(storage.path());
        configure(&mut settings);
        let manager = Manager::start(client.clone(), config, settings)
            .await
            .unwrap();
        let fleet = Fleet {
            cluster,
            client,
            manager: Some(manager),
            repo,
            _storage: storage,
        };
        fleet.create_source("fleet").await;
        fleet
    }

    /// A GitRepository `name` following the repository that holds the chart.
    async fn create_source(&self, name: &str) {
        let repos: Api<ferroflux_api::GitRepository> = Api::namespaced(self.client.clone(), NS);
        let obj = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"interval": "1h", "url": format!("file://{}", self.repo.path().display()),
                     "ref": {"branch": "main"}},
        }))
        .unwrap();
        repos.create(&PostParams::default(), &obj).await.unwrap();
    }

    /// How many times the HelmRelease `name` was reconciled, as `/metrics` counts them.
    fn reconciles(&self, name: &str) -> u64 {
        let series = format!(
            "gotk_reconcile_duration_seconds_count{{kind=\"HelmRelease\",name=\"{name}\",namespace=\"{NS}\"}} "
        );
        let page = self.manager.as_ref().unwrap().metrics();
        page.lines()
            .find_map(|l| l.strip_prefix(&series))
            .map(|n| n.trim().parse().unwrap())
            .unwrap_or(0)
    }

    fn releases(&self) -> Api<HelmRelease> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn create(&self, name: &str, extra: Value) {
        self.releases()
            .create(&PostParams::default(), &release(name, extra))
            .await
            .unwrap();
    }

    async fn stop(mut self) {
        if let Some(m) = self.manager.take() {
            m.shutdown().await.unwrap();
        }
        self.cluster.shutdown().await;
    }
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// A HelmRelease of the repository's podinfo chart, with `extra` merged into its spec.
fn release(name: &str, extra: Value) -> HelmRelease {
    let mut spec = json!({"interval": "1h", "timeout": "30s",
        "chart": {"spec": {"chart": "./charts/podinfo",
            "sourceRef": {"kind": "GitRepository", "name": "fleet"}}}});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }))
    .unwrap()
}

/// The Ready condition of `name` once `accept` takes it; the panic shows the last one seen.
async fn ready_where(
    api: &Api<HelmRelease>,
    name: &str,
    what: &str,
    accept: impl Fn(&Value) -> bool,
) -> Value {
    let last = std::sync::Mutex::new(Value::Null);
    let label = format!("{name}: {what}");
    let wait = eventually(&label, || async {
        let hr = api.get(name).await.ok()?;
        let conditions = serde_json::to_value(hr.status?.conditions?).ok()?;
        let ready = conditions
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Ready")?
            .clone();
        *last.lock().unwrap() = conditions;
        accept(&ready).then_some(ready)
    });
    match tokio::time::timeout(Duration::from_secs(90), wait).await {
        Ok(ready) => ready,
        Err(_) => panic!("{name}: never {what}; last: {}", last.lock().unwrap()),
    }
}

fn installed(ready: &Value) -> bool {
    ready["status"] == "True" && ready["reason"] == "InstallSucceeded"
}

/// The names of the Helm storage Secrets of release `name` in `namespace`.
async fn storage(client: &kube::Client, namespace: &str, name: &str) -> Vec<String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets
        .list(&ListParams::default().labels(&format!("owner=helm,name={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depends_on_waits_for_the_dependency_to_be_ready() {
    let fleet = Fleet::start("depends").await;
    let api = fleet.releases();
    fleet
        .create("frontend", json!({"dependsOn": [{"name": "backend"}]}))
        .await;
    let ready = ready_where(&api, "frontend", "waiting for a missing dependency", |r| {
        r["reason"] == "DependencyNotReady"
    })
    .await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "unable to get 'flux-system/backend' dependency: helmreleases.helm.toolkit.fluxcd.io \"backend\" not found"
    );

    // The dependency exists but cannot install yet: its values ConfigMap is missing.
    fleet
        .create(
            "backend",
            json!({"valuesFrom": [{"kind": "ConfigMap", "name": "backend-values"}]}),
        )
        .await;
    let backend = ready_where(&api, "backend", "failing on its values", |r| {
        r["status"] == "False" && r["reason"] == "ValuesError"
    })
    .await;
    assert!(
        backend["message"]
            .as_str()
            .unwrap()
            .contains("backend-values"),
        "{backend}"
    );
    ready_where(
        &api,
        "frontend",
        "waiting for a dependency not ready",
        |r| {
            r["reason"] == "DependencyNotReady"
                && r["message"] == "dependency 'flux-system/backend' is not ready"
        },
    )
    .await;
    assert!(storage(&fleet.client, NS, "frontend").await.is_empty());
    assert!(storage(&fleet.client, NS, "backend").await.is_empty());

    // The values arrive and a reconcile is asked for (as `ferroflux reconcile hr` does): the
    // backend installs, then the frontend follows on its own.
    let configmaps: Api<ConfigMap> = Api::namespaced(fleet.client.clone(), NS);
    let cm = serde_json::from_value(json!({"metadata": {"name": "backend-values"},
        "data": {"values.yaml": "replicaCount: 2\n"}}))
    .unwrap();
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    api.patch(
        "backend",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {
            "reconcile.fluxcd.io/requestedAt": "values-created"}}})),
    )
    .await
    .unwrap();
    ready_where(&api, "backend", "installed", installed).await;
    ready_where(&api, "frontend", "installed", installed).await;
    let deployments: Api<Deployment> = Api::namespaced(fleet.client.clone(), NS);
    let backend = deployments.get("backend").await.unwrap();
    assert_eq!(backend.spec.replicas, Some(2));
    assert!(deployments.get_opt("frontend").await.unwrap().is_some());
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_releases_onto_a_remote_cluster_through_its_kubeconfig() {
    let hub = Fleet::start("hub").await;
    let remote = DevCluster::start(Config::memory("production"))
        .await
        .unwrap();
    let remote_client = remote.client().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), NS);
    let kubeconfig: Secret = serde_json::from_value(json!({
        "metadata": {"name": "production-kubeconfig", "namespace": NS},
        "data": {"value": k8s_openapi::ByteString(remote.kubeconfig().into_bytes())},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &kubeconfig)
        .await
        .unwrap();
    // On the remote cluster only `default` exists: the release and its storage go there.
    let remote_release = |secret: &str| {
        json!({"kubeConfig": {"secretRef": {"name": secret}},
            "targetNamespace": "default", "storageNamespace": "default"})
    };
    hub.create("podinfo", remote_release("production-kubeconfig"))
        .await;
    hub.create("lost", remote_release("no-such-secret")).await;
    let api = hub.releases();
    ready_where(&api, "podinfo", "installed remotely", installed).await;
    let remote_deployments: Api<Deployment> = Api::namespaced(remote_client.clone(), "default");
    let deployment = remote_deployments.get("default-podinfo").await.unwrap();
    let image = deployment.spec.template.spec.unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("ghcr.io/stefanprodan/podinfo:6.7.1"));
    assert_eq!(
        storage(&remote_client, "default", "default-podinfo").await,
        ["sh.helm.release.v1.default-podinfo.v1"]
    );
    let hub_deployments: Api<Deployment> = Api::namespaced(hub.client.clone(), "default");
    assert!(
        hub_deployments
            .get_opt("default-podinfo")
            .await
            .unwrap()
            .is_none(),
        "the hub is untouched"
    );
    assert!(
        storage(&hub.client, "default", "default-podinfo")
            .await
            .is_empty()
    );

    let ready = ready_where(&api, "lost", "failing on its kubeconfig", |r| {
        r["status"] == "False"
    })
    .await;
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("'flux-system/no-such-secret'"),
        "{ready}"
    );
    hub.stop().await;
    remote.shutdown().await;
}

/// Objects applied as the cluster's admin (RBAC).
async fn apply_admin(client: &kube::Client, objects: Value) {
    for obj in objects.as_array().unwrap() {
        let kind = obj["kind"].as_str().unwrap();
        let resource = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
        ));
        let name = obj["metadata"]["name"].as_str().unwrap();
        let api: Api<kube::api::DynamicObject> = match obj["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(obj),
        )
        .await
        .unwrap();
    }
}

/// A RoleBinding giving the service account everything in `ns`.
fn admin_in(ns: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "deployer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "namespace-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": NS}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_releases_only_where_rbac_allows_and_retries_on_failure() {
    let fleet = Fleet::start("impersonation").await;
    apply_admin(
        &fleet.client,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "namespace-admin"},
             "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
            admin_in("team-a"),
        ]),
    )
    .await;
    // Release and storage in the namespace the service account is bound in.
    let in_namespace = |ns: &str| {
        json!({"serviceAccountName": "deployer", "targetNamespace": ns, "storageNamespace": ns,
            "install": {"strategy": {"name": "RetryOnFailure", "retryInterval": "1s"}}})
    };
    fleet.create("allowed", in_namespace("team-a")).await;
    fleet.create("denied", in_namespace("team-b")).await;
    let api = fleet.releases();
    ready_where(
        &api,
        "allowed",
        "installed as the service account",
        installed,
    )
    .await;
    let team_a: Api<Deployment> = Api::namespaced(fleet.client.clone(), "team-a");
    assert!(team_a.get_opt("team-a-allowed").await.unwrap().is_some());

    let ready = ready_where(&api, "denied", "refused by RBAC", |r| {
        r["status"] == "False" && r["message"].as_str().unwrap_or("").contains("forbidden")
    })
    .await;
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("User \"{SA}\" cannot"))
            && message.contains("in the namespace \"team-b\""),
        "{message}"
    );
    assert!(
        storage(&fleet.client, "team-b", "team-b-denied")
            .await
            .is_empty()
    );
    let hr = api.get("denied").await.unwrap();
    let reconciling = hr
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Reconciling");
    assert!(
        reconciling.is_some_and(|c| c.status == "True"),
        "a failure the strategy retries is still reconciling"
    );

    // RBAC now allows team-b: the retry after `retryInterval` installs, with no change to the
    // HelmRelease and no request to reconcile.
    let generation = api.get("denied").await.unwrap().metadata.generation;
    apply_admin(&fleet.client, json!([admin_in("team-b")])).await;
    ready_where(&api, "denied", "installed once allowed", installed).await;
    let hr = api.get("denied").await.unwrap();
    assert_eq!(hr.metadata.generation, generation);
    assert!(
        !hr.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("reconcile.fluxcd.io/requestedAt")
    );
    let team_b: Api<Deployment> = Api::namespaced(fleet.client.clone(), "team-b");
    assert!(team_b.get_opt("team-b-denied").await.unwrap().is_some());
    fleet.stop().await;
}

/// A HelmRelease whose HelmChart has no artifact yet waits without polling: with the dependency
/// requeue at an hour, only the HelmChart's watch can bring it back, once, when the chart is
/// built; and the wait publishes no event (helm-controller only logs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_waiting_for_its_chart_is_woken_by_the_artifact_not_polled() {
    let fleet = Fleet::start_with("chartwait", |c| {
        c.helmrelease.requeue_dependency = Duration::from_secs(3600);
    })
    .await;
    let api = fleet.releases();
    let chart = json!({"spec": {"chart": "./charts/podinfo",
        "sourceRef": {"kind": "GitRepository", "name": "later"}}});
    api.create(
        &PostParams::default(),
        &release("late", json!({"chart": chart})),
    )
    .await
    .unwrap();
    let waiting = ready_where(&api, "late", "waiting for its chart", |r| {
        r["reason"] == "SourceNotReady"
    })
    .await;
    assert_eq!(waiting["status"], "False");
    assert!(
        waiting["message"]
            .as_str()
            .unwrap()
            .starts_with("HelmChart 'flux-system/flux-system-late' is not ready"),
        "{waiting}"
    );
    let before = fleet.reconciles("late");
    assert!(
        (1..=2).contains(&before),
        "{before} reconciles before the source exists"
    );

    // The source appears: the HelmChart is built and its new artifact wakes the release.
    fleet.create_source("later").await;
    ready_where(&api, "late", "installed", installed).await;
    let after = fleet.reconciles("late");
    assert!(
        after <= before + 2,
        "{after} reconciles in all ({before} before the artifact): the release was polled"
    );
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(fleet.client.clone(), NS);
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("late"))
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        !reasons.iter().any(|r| r == "SourceNotReady"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r == "InstallSucceeded"),
        "{reasons:?}"
    );
    fleet.stop().await;
}
