//! The Kustomization reconciler against a local cluster on the paths of issue 6 that decide
//! what stays in a cluster: deletion under each `deletionPolicy`, immutable fields with and
//! without force, CRDs before their custom resources (across `dependsOn`, inside one
//! Kustomization, and a CRD recreated with another scope), unset substitution variables and
//! the source's quoting, and an object for a namespace that does not exist. Bad input is
//! checked twice: the message a user reads, and that nothing was applied, changed or pruned.
//! Every wait is on a status or an object.

use crate::harness::{
    create_git_repository, kustomization, publish, ready_with_reason, serve_artifact, start,
    start_with, tarball,
};
use ferroflux_api::Kustomization;
use ferroflux_controller::kustomization::build::Strictness;
use ferroflux_controller::kustomization::reconciler::Options;
use ferroflux_testkit::eventually;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

const C1: &str = "1111111111111111111111111111111111111111";
const C2: &str = "2222222222222222222222222222222222222222";
const C3: &str = "3333333333333333333333333333333333333333";

fn configmap(name: &str, namespace: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  v: \"{data}\"\n"
    )
}

/// Waits until `name` is Ready=True having applied `main@sha1:<commit>`.
async fn ready_at(api: &Api<Kustomization>, name: &str, commit: &str) -> Kustomization {
    let revision = format!("main@sha1:{commit}");
    let found = async {
        eventually(&format!("{name} ready at {revision}"), || async {
            let ks = api.get(name).await.ok()?;
            let status = ks.status.clone()?;
            let ready = status
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (ready.status == "True" && status.last_applied_revision.as_deref() == Some(&revision))
                .then_some(ks)
        })
        .await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(25), found).await {
        Ok(ks) => ks,
        Err(_) => panic!(
            "{name} never became ready at {revision}; status: {:?}",
            api.get(name).await.ok().and_then(|k| k.status)
        ),
    }
}

async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + for<'de> k8s_openapi::serde::Deserialize<'de> + std::fmt::Debug,
{
    eventually(&format!("{name} deleted"), || async {
        matches!(api.get_opt(name).await, Ok(None)).then_some(())
    })
    .await;
}

fn inventory_ids(ks: &Kustomization) -> Vec<String> {
    ks.status
        .as_ref()
        .and_then(|s| s.inventory.as_ref())
        .map(|i| i.entries.iter().map(|e| e.id.clone()).collect())
        .unwrap_or_default()
}

/// Each deletion policy, on one cluster: what deleting the Kustomization leaves behind, and
/// that WaitForTermination holds the Kustomization while an applied object is held by a
/// finalizer that is not ours, until its spec.timeout passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_policies_decide_what_stays() {
    let env = start("hub").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    let cases = [
        // (name, prune, deletionPolicy, deleted on deletion)
        ("mirror-prune", true, None, true),
        ("mirror-keep", false, None, false),
        ("delete", false, Some("Delete"), true),
        ("orphan", true, Some("Orphan"), false),
    ];
    let mut files: Vec<(String, String)> = cases
        .iter()
        .map(|(name, ..)| {
            (
                format!("{name}/cm.yaml"),
                configmap(&format!("{name}-cm"), "flux-system", name),
            )
        })
        .collect();
    files.push((
        "wait/held.yaml".into(),
        configmap("held", "flux-system", "x"),
    ));
    files.push((
        "wait/plain.yaml".into(),
        configmap("plain", "flux-system", "y"),
    ));
    files.push((
        "brief/stuck.yaml".into(),
        configmap("stuck", "flux-system", "z"),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let server = serve_artifact(&refs).await;
    create_git_repository(&client).await;
    publish(&client, &server, C1).await;

    for (name, prune, policy, _) in cases {
        let mut extra = json!({"path": format!("./{name}"), "prune": prune});
        if let Some(policy) = policy {
            extra["deletionPolicy"] = json!(policy);
        }
        ks_api
            .create(&PostParams::default(), &kustomization(name, "repo", extra))
            .await
            .unwrap();
    }
    ks_api
        .create(
            &PostParams::default(),
            &kustomization(
                "wait",
                "repo",
                json!({"path": "./wait", "deletionPolicy": "WaitForTermination"}),
            ),
        )
        .await
        .unwrap();
    for (name, ..) in cases {
        ready_at(&ks_api, name, C1).await;
    }
    ready_at(&ks_api, "wait", C1).await;
    // WaitForTermination waits within spec.timeout, then lets the Kustomization go.
    ks_api
        .create(
            &PostParams::default(),
            &kustomization(
                "brief",
                "repo",
                json!({"path": "./brief", "deletionPolicy": "WaitForTermination", "timeout": "1s"}),
            ),
        )
        .await
        .unwrap();
    ready_at(&ks_api, "brief", C1).await;

    // A finalizer of someone else's holds `held` and `stuck` once they are deleted.
    for held in ["held", "stuck"] {
        cms.patch(
            held,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
        )
        .await
        .unwrap();
    }

    for (name, ..) in cases {
        ks_api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for name in ["wait", "brief"] {
        ks_api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    for (name, _, policy, deleted) in cases {
        gone(&ks_api, name).await;
        let left = cms.get_opt(&format!("{name}-cm")).await.unwrap();
        assert_eq!(
            left.is_none(),
            deleted,
            "{name} (policy {policy:?}): ConfigMap left {left:?}"
        );
        if let Some(left) = left {
            assert!(
                left.metadata.deletion_timestamp.is_none(),
                "{name}: kept, not terminating"
            );
        }
    }

    // WaitForTermination: both objects were deleted; `plain` is gone, `held` terminates, and
    // the Kustomization waits for it.
    gone(&cms, "plain").await;
    eventually("held terminating", || async {
        cms.get("held")
            .await
            .ok()?
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    let waiting = ks_api.get("wait").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers.as_deref(),
        Some(&["finalizers.fluxcd.io".to_string()][..]),
        "the Kustomization is held by its finalizer while `held` terminates"
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&cms, "held").await;
    gone(&ks_api, "wait").await;

    // `brief` gave up after its timeout, as Flux does, saying so; `stuck` still terminates.
    gone(&ks_api, "brief").await;
    let stuck = cms.get("stuck").await.unwrap();
    assert!(stuck.metadata.deletion_timestamp.is_some());
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), "flux-system");
    let gave_up = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("brief")
                && e.note.as_deref() == Some("failed to wait for resources termination")
        })
        .expect("a Warning event says the wait was given up");
    assert_eq!(gave_up.type_.as_deref(), Some("Warning"));
    assert_eq!(gave_up.reason.as_deref(), Some("ReconciliationSucceeded"));
    cms.patch(
        "stuck",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

const SELECTOR_V1: &str = "web";
const SELECTOR_V2: &str = "web-v2";

fn deployment(app: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {app}\n  template:\n    metadata:\n      labels:\n        app: {app}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
    )
}

fn frozen(value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: flux-system\n  annotations:\n    kustomize.toolkit.fluxcd.io/force: Enabled\nimmutable: true\ndata:\n  v: \"{value}\"\n"
    )
}

/// A Deployment selector change: refused with the API's message and nothing else applied or
/// pruned; with `spec.force` the Deployment is recreated. An immutable ConfigMap annotated
/// `kustomize.toolkit.fluxcd.io/force: Enabled` is recreated without `spec.force`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_fields_fail_clearly_and_force_recreates() {
    let env = start("hub").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "flux-system");
    let v1_deploy = deployment(SELECTOR_V1);
    let v1_marker = configmap("marker", "flux-system", "v1");
    let stale = configmap("stale", "flux-system", "old");
    let v1_frozen = frozen("1");
    let server = serve_artifact(&[
        ("immutable/deploy.yaml", &v1_deploy),
        ("immutable/marker.yaml", &v1_marker),
        ("immutable/stale.yaml", &stale),
        ("annotated/frozen.yaml", &v1_frozen),
    ])
    .await;
    create_git_repository(&client).await;
    publish(&client, &server, C1).await;
    for (name, path) in [("immutable", "./immutable"), ("annotated", "./annotated")] {
        ks_api
            .create(
                &PostParams::default(),
                &kustomization(name, "repo", json!({"path": path})),
            )
            .await
            .unwrap();
    }
    ready_at(&ks_api, "immutable", C1).await;
    ready_at(&ks_api, "annotated", C1).await;
    let web_uid = deployments.get("web").await.unwrap().metadata.uid.unwrap();
    let frozen_uid = cms.get("frozen").await.unwrap().metadata.uid.unwrap();

    // The next commit changes the selector and the marker, and drops `stale`.
    let v2_deploy = deployment(SELECTOR_V2);
    let v2_marker = configmap("marker", "flux-system", "v2");
    let v2_frozen = frozen("2");
    *server.content.lock().unwrap() = tarball(&[
        ("immutable/deploy.yaml", &v2_deploy),
        ("immutable/marker.yaml", &v2_marker),
        ("annotated/frozen.yaml", &v2_frozen),
    ]);
    publish(&client, &server, C2).await;

    let ready = ready_with_reason(&ks_api, "immutable", "ReconciliationFailed").await;
    assert_eq!(ready["status"], "False");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.starts_with("Deployment/flux-system/web dry-run failed (Invalid): "),
        "{message}"
    );
    assert!(
        message.contains("spec.selector") && message.contains("field is immutable"),
        "the message names the field: {message}"
    );
    let failed = ks_api.get("immutable").await.unwrap();
    let status = failed.status.clone().unwrap();
    assert_eq!(
        status.last_applied_revision.as_deref(),
        Some(format!("main@sha1:{C1}").as_str())
    );
    assert_eq!(
        status.last_attempted_revision.as_deref(),
        Some(format!("main@sha1:{C2}").as_str())
    );
    assert_eq!(
        inventory_ids(&failed),
        [
            "flux-system_marker__ConfigMap",
            "flux-system_stale__ConfigMap",
            "flux-system_web_apps_Deployment"
        ]
    );
    // Nothing of the failed revision reached the cluster, and nothing was pruned.
    let web = deployments.get("web").await.unwrap();
    assert_eq!(web.metadata.uid.as_deref(), Some(web_uid.as_str()));
    assert_eq!(web.spec.selector.match_labels.unwrap()["app"], SELECTOR_V1);
    assert_eq!(cms.get("marker").await.unwrap().data.unwrap()["v"], "v1");
    assert!(cms.get_opt("stale").await.unwrap().is_some(), "not pruned");

    // The annotated object was recreated in the meantime, with no spec.force.
    ready_at(&ks_api, "annotated", C2).await;
    let recreated = cms.get("frozen").await.unwrap();
    assert_ne!(recreated.metadata.uid.as_deref(), Some(frozen_uid.as_str()));
    assert_eq!(recreated.data.unwrap()["v"], "2");

    // spec.force: the Deployment is deleted and created again with the new selector.
    ks_api
        .patch(
            "immutable",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"force": true}})),
        )
        .await
        .unwrap();
    ready_at(&ks_api, "immutable", C2).await;
    let web = deployments.get("web").await.unwrap();
    assert_ne!(web.metadata.uid.as_deref(), Some(web_uid.as_str()));
    assert_eq!(web.spec.selector.match_labels.unwrap()["app"], SELECTOR_V2);
    assert_eq!(cms.get("marker").await.unwrap().data.unwrap()["v"], "v2");
    gone(&cms, "stale").await;
}

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

const WIDGET: &str = "apiVersion: example.com/v1
kind: Widget
metadata:
  name: dial
  namespace: flux-system
spec:
  size: 3
";

fn widgets(client: &kube::Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", kind),
        plural,
    );
    Api::namespaced_with(client.clone(), "flux-system", &ar)
}

fn gate(failing: bool) -> String {
    let annotation = if failing {
        "  annotations:\n    devcluster.ferroflux.io/fail: \"true\"\n"
    } else {
        ""
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gate\n  namespace: flux-system\n{annotation}spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: gate\n  template:\n    metadata:\n      labels:\n        app: gate\n    spec:\n      containers:\n      - name: gate\n        image: nginx:1.27\n"
    )
}

/// The seed's layout: `apps` depends on `infrastructure` (wait: true), which brings the CRD
/// of the custom resource `apps` holds. `apps` waits as DependencyNotReady while
/// infrastructure is missing, then while it is unhealthy (its CRD already applied), and
/// applies once infrastructure is Ready at the same revision. And a CRD with its custom
/// resource in one Kustomization: the CRD is applied and established first, in its own stage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_wait_for_their_crd() {
    let env = start("hub").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let gadget_crd = WIDGET_CRD
        .replace("widget", "gadget")
        .replace("Widget", "Gadget");
    let gadget = WIDGET.replace("Widget", "Gadget");
    let together = "resources:\n- gadget.yaml\n- crd.yaml\n";
    let files = |gate: &str| {
        tarball(&[
            ("infrastructure/crd.yaml", WIDGET_CRD),
            ("infrastructure/gate.yaml", gate),
            ("apps/widget.yaml", WIDGET),
            // The custom resource listed before its CRD: order in Git does not matter.
            ("together/kustomization.yaml", together),
            ("together/gadget.yaml", &gadget),
            ("together/crd.yaml", &gadget_crd),
        ])
    };
    let server = serve_artifact(&[]).await;
    *server.content.lock().unwrap() = files(&gate(true));
    create_git_repository(&client).await;
    publish(&client, &server, C1).await;

    ks_api
        .create(
            &PostParams::default(),
            &kustomization(
                "apps",
                "repo",
                json!({"path": "./apps", "dependsOn": [{"name": "infrastructure"}]}),
            ),
        )
        .await
        .unwrap();
    let ready = ready_with_reason(&ks_api, "apps", "DependencyNotReady").await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "dependency 'flux-system/infrastructure' not found"
    );

    // Infrastructure applies its CRD, but its gate Deployment fails the health check.
    ks_api
        .create(
            &PostParams::default(),
            &kustomization(
                "infrastructure",
                "repo",
                json!({"path": "./infrastructure", "wait": true, "timeout": "20s"}),
            ),
        )
        .await
        .unwrap();
    let ready = ready_with_reason(&ks_api, "infrastructure", "HealthCheckFailed").await;
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("Deployment/flux-system/gate"),
        "{ready}"
    );
    eventually("apps waits on an unready infrastructure", || async {
        let ready = ready_with_reason(&ks_api, "apps", "DependencyNotReady").await;
        (ready["message"] == "dependency 'flux-system/infrastructure' is not ready").then_some(())
    })
    .await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    assert!(crds.get_opt("widgets.example.com").await.unwrap().is_some());
    let widget_api = widgets(&client, "Widget", "widgets");
    assert!(
        widget_api.get_opt("dial").await.unwrap().is_none(),
        "apps applied nothing while waiting"
    );

    // The next commit heals the gate: infrastructure becomes Ready, then apps applies.
    *server.content.lock().unwrap() = files(&gate(false));
    publish(&client, &server, C2).await;
    let infra = ready_at(&ks_api, "infrastructure", C2).await;
    let healthy = infra
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Healthy")
        .unwrap();
    assert_eq!(healthy.status, "True");
    let apps = ready_at(&ks_api, "apps", C2).await;
    assert_eq!(
        inventory_ids(&apps),
        ["flux-system_dial_example.com_Widget"]
    );
    let dial = widget_api.get("dial").await.unwrap();
    assert_eq!(dial.data["spec"]["size"], 3);

    ks_api
        .create(
            &PostParams::default(),
            &kustomization("together", "repo", json!({"path": "./together"})),
        )
        .await
        .unwrap();
    let together = ready_at(&ks_api, "together", C2).await;
    assert_eq!(
        inventory_ids(&together),
        [
            "_gadgets.example.com_apiextensions.k8s.io_CustomResourceDefinition",
            "flux-system_dial_example.com_Gadget"
        ]
    );
    let dial = widgets(&client, "Gadget", "gadgets")
        .get("dial")
        .await
        .unwrap();
    assert_eq!(dial.data["spec"]["size"], 3);
}

/// A CRD deleted and created again with another scope: the controller's discovery cache,
/// shared by every Kustomization for the life of the process, still knows the old namespaced
/// API; the custom resource must be applied through the new cluster-scoped one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_recreated_with_another_scope_is_discovered_again() {
    let env = start("rescoped").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(client.clone());
    let server = serve_artifact(&[
        ("gizmos/crd.yaml", WIDGET_CRD),
        ("gizmos/knob.yaml", WIDGET),
    ])
    .await;
    create_git_repository(&client).await;
    publish(&client, &server, C1).await;
    ks_api
        .create(
            &PostParams::default(),
            &kustomization("gizmos", "repo", json!({"path": "./gizmos", "prune": true})),
        )
        .await
        .unwrap();
    ready_at(&ks_api, "gizmos", C1).await;
    assert!(
        widgets(&client, "Widget", "widgets")
            .get_opt("dial")
            .await
            .unwrap()
            .is_some()
    );

    // The CRD leaves Git (pruned with its resource), then comes back cluster-scoped.
    *server.content.lock().unwrap() = tarball(&[(
        "gizmos/marker.yaml",
        &configmap("marker", "flux-system", "1"),
    )]);
    publish(&client, &server, C2).await;
    ready_at(&ks_api, "gizmos", C2).await;
    gone(&crds, "widgets.example.com").await;

    let cluster_scoped = WIDGET_CRD.replace("scope: Namespaced", "scope: Cluster");
    let cluster_widget = WIDGET.replace("  namespace: flux-system\n", "");
    *server.content.lock().unwrap() = tarball(&[
        ("gizmos/crd.yaml", &cluster_scoped),
        ("gizmos/knob.yaml", &cluster_widget),
    ]);
    publish(&client, &server, C3).await;
    let applied = ready_at(&ks_api, "gizmos", C3).await;
    assert_eq!(
        inventory_ids(&applied),
        [
            "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition",
            "_dial_example.com_Widget"
        ]
    );
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let cluster_widgets: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    assert_eq!(
        cluster_widgets.get("dial").await.unwrap().data["spec"]["size"],
        3
    );
}

const VARS_CM: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: vars
  namespace: flux-system
data:
  count: "${n}"
  single: '${n}'
  unset: "${missing}"
  region: "${region:=eu-west-1}"
  escaped: "$${n}"
"#;

const VARS_DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: flux-system
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:${tag:=1.27}
";

/// Substitution as Flux does it: a default fills in, a quoted `"${n}"` stays a string (the
/// API server refuses a number in ConfigMap data) while a plain `${replicas}` becomes a
/// number. With strict substitution (the default, `StrictPostBuildSubstitutions`) an unset
/// variable fails the build, naming the variable and the object, and nothing is applied;
/// with the gate off it becomes empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn substitution_keeps_quoting_and_reports_unset_variables() {
    let server =
        serve_artifact(&[("vars/cm.yaml", VARS_CM), ("vars/deploy.yaml", VARS_DEPLOY)]).await;
    let spec = json!({"path": "./vars",
        "postBuild": {"substitute": {"n": "5", "replicas": "2"}}});

    let lenient = start_with(
        "lenient",
        Options {
            substitution: Strictness::Lenient,
            ..Options::default()
        },
    )
    .await;
    create_git_repository(&lenient.client).await;
    publish(&lenient.client, &server, C1).await;
    let ks_api: Api<Kustomization> = Api::namespaced(lenient.client.clone(), "flux-system");
    ks_api
        .create(
            &PostParams::default(),
            &kustomization("vars", "repo", spec.clone()),
        )
        .await
        .unwrap();
    ready_at(&ks_api, "vars", C1).await;
    let cms: Api<ConfigMap> = Api::namespaced(lenient.client.clone(), "flux-system");
    let data = cms.get("vars").await.unwrap().data.unwrap();
    assert_eq!(data["count"], "5");
    assert_eq!(data["single"], "5");
    assert_eq!(data["unset"], "");
    assert_eq!(data["region"], "eu-west-1");
    assert_eq!(data["escaped"], "${n}");
    let deployments: Api<Deployment> = Api::namespaced(lenient.client.clone(), "flux-system");
    let web = deployments.get("web").await.unwrap();
    assert_eq!(web.spec.replicas, Some(2));
    let image = web.spec.template.spec.unwrap().containers[0].image.clone();
    assert_eq!(image.as_deref(), Some("nginx:1.27"));

    let strict = start("strict").await;
    create_git_repository(&strict.client).await;
    publish(&strict.client, &server, C1).await;
    let ks_api: Api<Kustomization> = Api::namespaced(strict.client.clone(), "flux-system");
    ks_api
        .create(&PostParams::default(), &kustomization("vars", "repo", spec))
        .await
        .unwrap();
    let ready = ready_with_reason(&ks_api, "vars", "BuildFailed").await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "ConfigMap/flux-system/vars: variable substitution failed: variable not set (strict mode): \"missing\""
    );
    let cms: Api<ConfigMap> = Api::namespaced(strict.client.clone(), "flux-system");
    let deployments: Api<Deployment> = Api::namespaced(strict.client.clone(), "flux-system");
    assert!(cms.get_opt("vars").await.unwrap().is_none());
    assert!(
        deployments.get_opt("web").await.unwrap().is_none(),
        "nothing of the build applied"
    );
}

/// An object for a namespace that exists neither in the cluster nor in the build: Ready=False
/// with the API server's message, no object of that stage applied (every object is dry-run
/// before any is applied) and nothing pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_namespace_applies_and_prunes_nothing() {
    let env = start("hub").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "flux-system");
    let first = configmap("first", "flux-system", "v1");
    let old = configmap("old", "flux-system", "old");
    let server = serve_artifact(&[("app/first.yaml", &first), ("app/old.yaml", &old)]).await;
    create_git_repository(&client).await;
    publish(&client, &server, C1).await;
    ks_api
        .create(
            &PostParams::default(),
            &kustomization("app", "repo", json!({"path": "./app"})),
        )
        .await
        .unwrap();
    let before = ready_at(&ks_api, "app", C1).await;

    // The next commit changes `first`, drops `old`, adds `a-new` and an object in `nowhere`.
    let changed = configmap("first", "flux-system", "v2");
    let added = configmap("a-new", "flux-system", "new");
    let lost = configmap("lost", "nowhere", "x");
    *server.content.lock().unwrap() = tarball(&[
        ("app/first.yaml", &changed),
        ("app/added.yaml", &added),
        ("app/lost.yaml", &lost),
    ]);
    publish(&client, &server, C2).await;
    let ready = ready_with_reason(&ks_api, "app", "ReconciliationFailed").await;
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "ConfigMap/nowhere/lost not found: namespaces \"nowhere\" not found"
    );
    let after = ks_api.get("app").await.unwrap();
    assert_eq!(inventory_ids(&after), inventory_ids(&before));
    assert_eq!(cms.get("first").await.unwrap().data.unwrap()["v"], "v1");
    assert!(cms.get_opt("a-new").await.unwrap().is_none(), "not applied");
    assert!(cms.get_opt("old").await.unwrap().is_some(), "not pruned");
}
