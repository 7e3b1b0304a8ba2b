//! The HelmRelease reconciler against a devcluster: a chart of crates/helm's corpus packaged as
//! a HelmChart artifact (served over HTTP as the source controller serves it), installed,
//! upgraded and taken through the bad inputs the issue names: a missing `valuesFrom`, values
//! failing the chart's schema, a failing install remediated until Stalled. Helm-compatible
//! storage is checked through the storage Secrets. Every wait is on the status the controller
//! writes.

use crate::harness::{ArtifactServer, digest, serve_artifact};
use ferroflux_api::HelmRelease;
use ferroflux_controller::helmrelease::reconciler::{self, Options};
use ferroflux_controller::metrics::Metrics;
use ferroflux_testkit::{eventually, flux_cluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The files of a corpus chart under `<name>/`, as `helm package` lays them out.
fn chart_files(corpus: &str, top: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus")
        .join(corpus)
        .join("chart");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((
                    format!("{top}/{rel}"),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    for (name, text) in extra {
        out.retain(|(n, _)| n != &format!("{top}/{name}"));
        out.push((format!("{top}/{name}"), text.to_string()));
    }
    out
}

async fn serve_chart(files: &[(String, String)]) -> ArtifactServer {
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    serve_artifact(&refs).await
}

fn helm_chart_api(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "source.toolkit.fluxcd.io".into(),
        version: "v1".into(),
        api_version: "source.toolkit.fluxcd.io/v1".into(),
        kind: "HelmChart".into(),
        plural: "helmcharts".into(),
    };
    Api::namespaced_with(client.clone(), "flux-system", &ar)
}

/// A HelmChart `name` whose status carries the served chart at `version`, as the source
/// controller writes it.
async fn publish_chart(client: &kube::Client, name: &str, server: &ArtifactServer, version: &str) {
    let api = helm_chart_api(client);
    let chart: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"chart": "app", "interval": "1m",
            "sourceRef": {"kind": "GitRepository", "name": "fleet"}},
    }))
    .unwrap();
    if api.get_opt(name).await.unwrap().is_none() {
        api.create(&PostParams::default(), &chart).await.unwrap();
    }
    let generation = api.get(name).await.unwrap().metadata.generation;
    let data = server.content.lock().unwrap().clone();
    let status = json!({"status": {
    "observedGeneration": generation,
    "conditions": [{"type": "Ready", "status": "True", "reason": "ChartPullSucceeded",
        "message": format!("pulled 'app' chart with version '{version}'"),
        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    "artifact": {
        "path": format!("helmchart/flux-system/{name}/app-{version}.tgz"),
        "url": server.url,
        "revision": version,
        "digest": digest(&data),
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

fn helm_release(name: &str, spec: Value) -> HelmRelease {
    let mut base = json!({"interval": "10m", "chartRef": {"kind": "HelmChart", "name": "app"},
        "timeout": "20s"});
    if let (Some(b), Some(s)) = (base.as_object_mut(), spec.as_object()) {
        for (k, v) in s {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": base,
    }))
    .unwrap()
}

/// The condition `type_` of `name` once `accept` takes it; the panic shows the last one.
async fn condition(
    api: &Api<HelmRelease>,
    name: &str,
    type_: &str,
    accept: impl Fn(&Value) -> bool,
) -> Value {
    let last = std::sync::Mutex::new(Value::Null);
    let what = format!("{name} {type_}");
    let wait = eventually(&what, || async {
        let hr = api.get(name).await.ok()?;
        let all = serde_json::to_value(hr.status?.conditions?).ok()?;
        *last.lock().unwrap() = all.clone();
        let c = all.as_array()?.iter().find(|c| c["type"] == type_)?.clone();
        accept(&c).then_some(c)
    });
    match tokio::time::timeout(Duration::from_secs(60), wait).await {
        Ok(c) => c,
        Err(_) => panic!(
            "{name}: {type_} never matched; last: {}",
            last.lock().unwrap()
        ),
    }
}

async fn release_secrets(client: &kube::Client, release: &str) -> Vec<Secret> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let mut list = secrets
        .list(&ListParams::default().labels(&format!("owner=helm,name={release}")))
        .await
        .unwrap()
        .items;
    list.sort_by_key(|s| s.metadata.name.clone());
    list
}

async fn start() -> (ferroflux_devcluster::RunningCluster, kube::Client) {
    let (cluster, client) = flux_cluster("hr").await;
    let config = cluster.kube_config().await.unwrap();
    let options = Options {
        requeue_dependency: Duration::from_millis(500),
        ..Options::default()
    };
    let (_, task) = reconciler::controller(
        client.clone(),
        config,
        options,
        Arc::new(Metrics::new()),
        Some(Box::pin(std::future::pending())),
    );
    tokio::spawn(task);
    (cluster, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_upgrades_and_keeps_the_release_through_bad_values() {
    let (_cluster, client) = start().await;
    let server = serve_chart(&chart_files("app-basic", "app", &[])).await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &helm_release(
            "web",
            json!({"values": {"replicaCount": 2},
                "commonMetadata": {"labels": {"team": "web"}}}),
        ),
    )
    .await
    .unwrap();

    let ready = condition(&api, "web", "Ready", |c| c["status"] == "True").await;
    assert_eq!(ready["reason"], "InstallSucceeded");
    assert_eq!(
        ready["message"],
        "Helm install succeeded for release flux-system/web.v1 with chart app@1.2.3"
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "flux-system");
    let deployment = deployments.get("web-app").await.unwrap();
    assert_eq!(deployment.spec.replicas, Some(2));
    let labels = deployment.metadata.labels.clone().unwrap();
    assert_eq!(labels["helm.toolkit.fluxcd.io/name"], "web");
    assert_eq!(labels["helm.toolkit.fluxcd.io/namespace"], "flux-system");
    assert_eq!(labels["team"], "web");
    let hr = api.get("web").await.unwrap();
    let status = hr.status.clone().unwrap();
    let history = status.history.clone().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].version, 1);
    assert_eq!(history[0].status, "deployed");
    assert_eq!(history[0].chart_version, "1.2.3");
    assert_eq!(status.last_attempted_revision.as_deref(), Some("1.2.3"));
    assert_eq!(status.storage_namespace.as_deref(), Some("flux-system"));
    assert_eq!(
        status.last_attempted_config_digest.as_deref(),
        Some(history[0].config_digest.as_str())
    );
    let secrets = release_secrets(&client, "web").await;
    assert_eq!(secrets.len(), 1);
    assert_eq!(
        secrets[0].metadata.name.as_deref(),
        Some("sh.helm.release.v1.web.v1")
    );

    // New values: an upgrade to revision 2.
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"values": {"replicaCount": 3}}})),
    )
    .await
    .unwrap();
    let ready = condition(&api, "web", "Ready", |c| {
        c["reason"] == "UpgradeSucceeded" && c["status"] == "True"
    })
    .await;
    assert_eq!(
        ready["message"],
        "Helm upgrade succeeded for release flux-system/web.v2 with chart app@1.2.3"
    );
    let deployment = deployments.get("web-app").await.unwrap();
    assert_eq!(deployment.spec.replicas, Some(3));

    // A valuesFrom reference that does not exist: a clear message, revision 2 stays.
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"valuesFrom": [{"kind": "ConfigMap", "name": "web-values"}]}}),
        ),
    )
    .await
    .unwrap();
    let ready = condition(&api, "web", "Ready", |c| c["reason"] == "ValuesError").await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "could not resolve ConfigMap chart values reference 'flux-system/web-values' with key 'values.yaml': resource not found"
    );
    assert_eq!(release_secrets(&client, "web").await.len(), 2);
    assert_eq!(
        deployments.get("web-app").await.unwrap().spec.replicas,
        Some(3)
    );

    // The ConfigMap appears: the next attempt picks it up (values from it, inline wins).
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "web-values", "namespace": "flux-system"},
        "data": {"values.yaml": "replicaCount: 9\nservice:\n  port: 8080\n"},
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let ready = condition(&api, "web", "Ready", |c| {
        c["status"] == "True" && c["message"].as_str().unwrap_or("").contains("web.v3")
    })
    .await;
    assert_eq!(ready["reason"], "UpgradeSucceeded");
    assert_eq!(
        deployments.get("web-app").await.unwrap().spec.replicas,
        Some(3)
    );

    // Deleting the HelmRelease uninstalls the release.
    api.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("web gone", || async {
        api.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(deployments.get_opt("web-app").await.unwrap().is_none());
    assert!(release_secrets(&client, "web").await.is_empty());
}

const SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {"replicaCount": {"type": "integer", "minimum": 1}}
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_failing_the_schema_name_the_schema_and_keep_the_release() {
    let (_cluster, client) = start().await;
    let files = chart_files("app-basic", "app", &[("values.schema.json", SCHEMA)]);
    let server = serve_chart(&files).await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(&PostParams::default(), &helm_release("strict", json!({})))
        .await
        .unwrap();
    condition(&api, "strict", "Ready", |c| c["status"] == "True").await;

    api.patch(
        "strict",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"values": {"replicaCount": 0}}})),
    )
    .await
    .unwrap();
    let ready = condition(&api, "strict", "Ready", |c| c["reason"] == "UpgradeFailed").await;
    assert_eq!(ready["status"], "False");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Helm upgrade failed for release flux-system/strict with chart app@1.2.3: values don't meet the specifications of the schema(s)"
        ),
        "{message}"
    );
    assert!(message.contains("replicaCount"), "{message}");
    // Nothing was recorded: revision 1 is still the deployed one.
    let secrets = release_secrets(&client, "strict").await;
    assert_eq!(secrets.len(), 1);
    let hr = api.get("strict").await.unwrap();
    let history = hr.status.unwrap().history.unwrap();
    assert_eq!(history[0].version, 1);
    assert_eq!(history[0].status, "deployed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_install_is_remediated_then_stalls_with_flux_s_message() {
    let (_cluster, client) = start().await;
    // The devcluster keeps a Deployment carrying this annotation failing: the install's wait
    // times out.
    let deployment = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  annotations:
    devcluster.ferroflux.io/fail: "true"
spec:
  replicas: 1
  selector:
    matchLabels: {app: broken}
  template:
    metadata:
      labels: {app: broken}
    spec:
      containers:
        - name: app
          image: example/app:1
"#;
    let files = vec![
        (
            "app/Chart.yaml".to_string(),
            "apiVersion: v2\nname: app\nversion: 0.1.0\n".to_string(),
        ),
        (
            "app/templates/deployment.yaml".to_string(),
            deployment.to_string(),
        ),
    ];
    let server = serve_chart(&files).await;
    publish_chart(&client, "app", &server, "0.1.0").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &helm_release(
            "broken",
            json!({"timeout": "2s", "install": {"remediation": {"retries": 1}}}),
        ),
    )
    .await
    .unwrap();
    let stalled = condition(&api, "broken", "Stalled", |c| c["status"] == "True").await;
    assert_eq!(stalled["reason"], "RetriesExceeded");
    assert_eq!(stalled["message"], "Failed to install after 2 attempt(s)");
    let hr = api.get("broken").await.unwrap();
    let conditions = serde_json::to_value(hr.status.clone().unwrap().conditions).unwrap();
    let find = |t: &str| {
        conditions
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(find("Ready")["status"], "False");
    assert_eq!(find("Released")["reason"], "InstallFailed");
    assert!(
        find("Released")["message"].as_str().unwrap().starts_with(
            "Helm install failed for release flux-system/broken with chart app@0.1.0: "
        ),
        "{}",
        find("Released")
    );
    assert_eq!(find("Reconciling"), Value::Null);
    let status = hr.status.unwrap();
    assert_eq!(status.install_failures, Some(2));
    assert_eq!(
        status.last_attempted_release_action,
        Some(ferroflux_api::helmrelease::ReleaseAction::Install)
    );
}

/// A Kustomization with `wait: true` that applies a HelmRelease is Healthy only once the
/// HelmRelease is Ready, as in Flux (kstatus reads its Ready and observedGeneration).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_kustomization_waits_for_its_helm_releases() {
    use crate::harness::{create_git_repository, kustomization, publish, ready_with_reason};
    use ferroflux_api::Kustomization;
    let (cluster, client) = start().await;
    let config = cluster.kube_config().await.unwrap();
    tokio::spawn(ferroflux_controller::kustomization::reconciler::run(
        client.clone(),
        config,
        ferroflux_controller::KustomizationOptions {
            requeue_dependency: Duration::from_secs(1),
            health_poll: Duration::from_millis(100),
            ..Default::default()
        },
    ));
    let chart = serve_chart(&chart_files("app-basic", "app", &[])).await;
    let hr = r#"apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: waited
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: HelmChart
    name: app
"#;
    let source = serve_artifact(&[("apps/hr.yaml", hr)]).await;
    create_git_repository(&client).await;
    publish(&client, &source, "0123456789abcdef0123456789abcdef01234567").await;
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    ks_api
        .create(
            &PostParams::default(),
            &kustomization(
                "apps",
                "repo",
                json!({"path": "./apps", "wait": true, "timeout": "3s", "retryInterval": "1s"}),
            ),
        )
        .await
        .unwrap();
    // Without its chart the HelmRelease cannot be Ready: the health check must time out.
    let failed = ready_with_reason(&ks_api, "apps", "HealthCheckFailed").await;
    assert!(
        failed["message"]
            .as_str()
            .unwrap_or("")
            .contains("HelmRelease"),
        "{failed}"
    );
    let hr_api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    publish_chart(&client, "app", &chart, "1.2.3").await;
    ready_with_reason(&ks_api, "apps", "ReconciliationSucceeded").await;
    let hr = hr_api.get("waited").await.unwrap();
    let ready = hr
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "True", "{ready:?}");
}

/// `driftDetection.mode: enabled`: a Deployment of the release changed in the cluster is
/// reported (`Drifted`) and put back at the next reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_detected_and_corrected() {
    let (_cluster, client) = start().await;
    let server = serve_chart(&chart_files("app-basic", "app", &[])).await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &helm_release(
            "drifty",
            json!({"values": {"replicaCount": 2}, "driftDetection": {"mode": "enabled"}}),
        ),
    )
    .await
    .unwrap();
    condition(&api, "drifty", "Ready", |c| c["status"] == "True").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "flux-system");
    let changed = deployments
        .patch(
            "drifty-app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(changed.spec.replicas, Some(7));
    api.patch(
        "drifty",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "now"}}}),
        ),
    )
    .await
    .unwrap();
    eventually("replicas put back", || async {
        let d = deployments.get("drifty-app").await.ok()?;
        (d.spec.replicas == Some(2)).then_some(())
    })
    .await;
    // The correction is reported as Flux reports it.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(client.clone(), "flux-system");
    let notes = eventually("drift events", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let notes: Vec<String> = list
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DriftCorrected"))
            .filter_map(|e| e.message)
            .collect();
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert!(
        notes[0].starts_with("Cluster state of release flux-system/drifty.v1 has been corrected:"),
        "{notes:?}"
    );
}

/// `healthCheckExprs` in a HelmRelease: its wait tells a Deployment's health by the
/// expressions (here failed, whatever kstatus says of it); an expression that does not parse
/// stalls the release before anything is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_expressions_decide_the_wait() {
    let (_cluster, client) = start().await;
    let server = serve_chart(&chart_files("app-basic", "app", &[])).await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");

    api.create(
        &PostParams::default(),
        &helm_release(
            "unparsed",
            json!({"healthCheckExprs": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                         "current": "status.readyReplicas >"}]}),
        ),
    )
    .await
    .unwrap();
    let ready = condition(&api, "unparsed", "Ready", |c| c["status"] == "False").await;
    assert_eq!(ready["reason"], "InvalidCELExpression");
    assert!(
        ready["message"].as_str().unwrap().starts_with(
            "Reconciliation failed terminally due to configuration error: failed to create custom status evaluator for healthchecks[0]: failed to parse the expression Current: failed to parse the CEL expression 'status.readyReplicas >': "
        ),
        "{ready}"
    );
    let stalled = condition(&api, "unparsed", "Stalled", |c| c["status"] == "True").await;
    assert_eq!(stalled["reason"], "InvalidCELExpression");
    assert!(release_secrets(&client, "unparsed").await.is_empty());

    api.create(
        &PostParams::default(),
        &helm_release(
            "judged",
            json!({"values": {"replicaCount": 2},
                   "install": {"remediation": {"retries": 0}},
                   "healthCheckExprs": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                         "current": "status.readyReplicas == 42",
                                         "failed": "spec.replicas == 2"}]}),
        ),
    )
    .await
    .unwrap();
    let ready = condition(&api, "judged", "Ready", |c| c["status"] == "False").await;
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("health check failed for Deployment/flux-system/judged-app"),
        "{ready}"
    );
}

/// `postRenderStrategy`: by default (`combined`, Helm 4's and Flux's) a chart's hooks go through
/// the post-renderers with its manifests, so a patch aimed at a hook, `commonMetadata` and the
/// owner labels reach it; with `nohooks` (Helm 3's) the hook is applied as the chart rendered it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_renderers_reach_hooks_unless_the_strategy_is_nohooks() {
    let (_cluster, client) = start().await;
    let hook = "apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-installed
  annotations:
    helm.sh/hook: post-install
data:
  by: chart
";
    let server = serve_chart(&chart_files(
        "app-basic",
        "app",
        &[("templates/hook.yaml", hook)],
    ))
    .await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    let post = |strategy: Option<&str>| {
        let mut spec = json!({
            "commonMetadata": {"labels": {"team": "web"}},
            "postRenderers": [{"kustomize": {"patches": [{
                "target": {"kind": "ConfigMap"},
                "patch": "[{\"op\": \"replace\", \"path\": \"/data/by\", \"value\": \"post-renderer\"}]"
            }]}}],
        });
        if let Some(s) = strategy {
            spec["postRenderStrategy"] = json!(s);
        }
        spec
    };
    for (name, spec) in [("combined", post(None)), ("nohooks", post(Some("nohooks")))] {
        api.create(&PostParams::default(), &helm_release(name, spec))
            .await
            .unwrap();
        condition(&api, name, "Ready", |c| c["status"] == "True").await;
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    let combined = config_maps.get("combined-installed").await.unwrap();
    assert_eq!(combined.data.unwrap()["by"], "post-renderer");
    let labels = combined.metadata.labels.unwrap();
    assert_eq!(labels["team"], "web");
    assert_eq!(labels["helm.toolkit.fluxcd.io/name"], "combined");
    let nohooks = config_maps.get("nohooks-installed").await.unwrap();
    assert_eq!(nohooks.data.unwrap()["by"], "chart");
    assert!(nohooks.metadata.labels.unwrap_or_default().is_empty());
    // The manifests are post-rendered either way.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "flux-system");
    for name in ["combined-app", "nohooks-app"] {
        let labels = deployments
            .get(name)
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap();
        assert_eq!(labels["team"], "web", "{name}");
    }
}

/// An object the chart would create exists already, made by someone else: Flux takes it over by
/// default (Helm's `--take-ownership`); with `install.disableTakeOwnership` the install fails
/// with Helm's message and the object is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_objects_are_adopted_unless_take_ownership_is_disabled() {
    let (_cluster, client) = start().await;
    let settings = "apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  owner: chart
";
    let server = serve_chart(&chart_files(
        "app-basic",
        "app",
        &[("templates/settings.yaml", settings)],
    ))
    .await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    for name in ["adopt-settings", "refuse-settings"] {
        let theirs =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"owner": "me"}}))
                .unwrap();
        config_maps
            .create(&PostParams::default(), &theirs)
            .await
            .unwrap();
    }
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(&PostParams::default(), &helm_release("adopt", json!({})))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &helm_release("refuse", json!({"install": {"disableTakeOwnership": true}})),
    )
    .await
    .unwrap();

    condition(&api, "adopt", "Ready", |c| c["status"] == "True").await;
    let adopted = config_maps.get("adopt-settings").await.unwrap();
    assert_eq!(adopted.data.unwrap()["owner"], "chart");
    let annotations = adopted.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations["meta.helm.sh/release-name"], "adopt");

    let released = condition(&api, "refuse", "Released", |c| {
        c["reason"] == "InstallFailed"
    })
    .await;
    assert_eq!(
        released["message"],
        "Helm install failed for release flux-system/refuse with chart app@1.2.3: unable to continue with install: ConfigMap \"refuse-settings\" in namespace \"flux-system\" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key \"app.kubernetes.io/managed-by\": must be set to \"Helm\"; annotation validation error: missing key \"meta.helm.sh/release-name\": must be set to \"refuse\"; annotation validation error: missing key \"meta.helm.sh/release-namespace\": must be set to \"flux-system\""
    );
    let kept = config_maps.get("refuse-settings").await.unwrap();
    assert_eq!(kept.data.unwrap()["owner"], "me");
    assert!(kept.metadata.annotations.unwrap_or_default().is_empty());
}

/// Flux's release target change: a HelmRelease whose `targetNamespace` changes (so its release
/// name and namespace move) uninstalls the release it made before installing the new one;
/// a chart that changes its name is reinstalled (`chartNameChangeStrategy: Reinstall`, the
/// default), not upgraded in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_or_renamed_release_is_uninstalled_then_installed() {
    let (_cluster, client) = start().await;
    let server = serve_chart(&chart_files("app-basic", "app", &[])).await;
    publish_chart(&client, "app", &server, "1.2.3").await;
    let api: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    api.create(&PostParams::default(), &helm_release("mover", json!({})))
        .await
        .unwrap();
    condition(&api, "mover", "Ready", |c| c["status"] == "True").await;
    let old: Api<Deployment> = Api::namespaced(client.clone(), "flux-system");
    assert!(old.get_opt("mover-app").await.unwrap().is_some());

    api.patch(
        "mover",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"targetNamespace": "apps", "install": {"createNamespace": true}}}),
        ),
    )
    .await
    .unwrap();
    let latest = |hr: &HelmRelease| {
        hr.status
            .as_ref()
            .and_then(|s| s.history.as_ref())
            .and_then(|h| h.first())
            .map(|s| {
                (
                    s.name.clone(),
                    s.namespace.clone(),
                    s.version,
                    s.chart_name.clone(),
                )
            })
    };
    eventually("the release moved to apps", || async {
        let hr = api.get("mover").await.ok()?;
        (latest(&hr)? == ("apps-mover".into(), "apps".into(), 1, "app".into())).then_some(())
    })
    .await;
    condition(&api, "mover", "Ready", |c| c["status"] == "True").await;
    assert!(
        old.get_opt("mover-app").await.unwrap().is_none(),
        "the old release's objects are gone"
    );
    assert!(
        release_secrets(&client, "mover").await.is_empty(),
        "and its storage"
    );
    let moved: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    // "apps-mover" holds the chart's name, so the helpers' fullname is the release name.
    assert!(moved.get_opt("apps-mover").await.unwrap().is_some());

    // The chart is renamed: reinstalled, so the release starts again at revision 1.
    let renamed = serve_chart(&chart_files(
        "app-basic",
        "web",
        &[("Chart.yaml", "apiVersion: v2\nname: web\nversion: 2.0.0\n")],
    ))
    .await;
    publish_chart(&client, "app", &renamed, "2.0.0").await;
    eventually("the renamed chart reinstalled", || async {
        let hr = api.get("mover").await.ok()?;
        (latest(&hr)? == ("apps-mover".into(), "apps".into(), 1, "web".into())).then_some(())
    })
    .await;
    let hr = api.get("mover").await.unwrap();
    assert_eq!(hr.status.unwrap().history.unwrap().len(), 1);
}
