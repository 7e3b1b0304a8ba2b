//! CEL in Kustomizations: `healthCheckExprs` telling a custom resource's health (failed, then
//! current, by its `status.phase`, where kstatus alone would call it current at once), an
//! expression that does not parse stalling the Kustomization before anything is applied, and
//! `dependsOn[].readyExpr` holding a dependent back until the expression over `dep` holds.

use crate::harness::{
    create_git_repository, kustomization, publish, ready_message, ready_with_reason,
    serve_artifact, start,
};
use ferroflux_api::Kustomization;
use ferroflux_testkit::eventually;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
";
const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n";
const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: apps\nspec:\n  size: 3\n";
const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  namespace: apps\ndata:\n  a: b\n";
const COMMIT: &str = "1111111111111111111111111111111111111111";

fn widget_expressions(current: &str) -> serde_json::Value {
    json!([{
        "apiVersion": "example.com/v1", "kind": "Widget",
        "current": current,
        "failed": "status.phase == 'Failed'",
        "inProgress": "status.phase == 'Pending'",
    }])
}

async fn request_reconcile(api: &Api<Kustomization>, name: &str, token: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}}),
        ),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_expressions_and_ready_expressions() {
    let env = start("cel").await;
    let client = env.client.clone();
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let server = serve_artifact(&[
        ("apps/crd.yaml", CRD),
        ("apps/ns.yaml", NAMESPACE),
        ("apps/widget.yaml", WIDGET),
        ("after/cm.yaml", CONFIGMAP),
    ])
    .await;
    create_git_repository(&client).await;
    publish(&client, &server, COMMIT).await;

    // An expression that does not parse: stalled, worded as Flux words it, nothing applied.
    let bad = kustomization(
        "bad",
        "repo",
        json!({"path": "./after", "wait": true, "timeout": "30s",
               "healthCheckExprs": widget_expressions("status.phase ==")}),
    );
    ks_api.create(&PostParams::default(), &bad).await.unwrap();
    let ready = ready_with_reason(&ks_api, "bad", "InvalidCELExpression").await;
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.starts_with("Reconciliation failed terminally due to configuration error: failed to create custom status evaluator for healthchecks[0]: failed to parse the expression Current: failed to parse the CEL expression 'status.phase ==': "),
        "{message}"
    );
    let stalled = ks_api
        .get("bad")
        .await
        .unwrap()
        .status
        .unwrap()
        .conditions
        .unwrap();
    assert!(
        stalled.iter().any(|c| c.type_ == "Stalled"
            && c.status == "True"
            && c.reason == "InvalidCELExpression"),
        "{stalled:?}"
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    assert!(configmaps.get_opt("later").await.unwrap().is_none());
    ks_api.delete("bad", &Default::default()).await.unwrap();

    // The Widget by its expressions: Failed when its phase says so (kstatus alone would call a
    // resource without conditions current), then current once its phase is Ready.
    let apps = kustomization(
        "apps",
        "repo",
        json!({"path": "./apps", "wait": true, "timeout": "2m", "retryInterval": "1m",
               "healthCheckExprs": widget_expressions("status.phase == 'Ready'")}),
    );
    ks_api.create(&PostParams::default(), &apps).await.unwrap();
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "apps",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        ),
    );
    eventually("the Widget applied", || async {
        widgets.get_opt("w").await.ok().flatten()
    })
    .await;
    let set_phase = |phase: &'static str| {
        let widgets = widgets.clone();
        async move {
            widgets
                .patch_status(
                    "w",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"phase": phase}})),
                )
                .await
                .unwrap();
        }
    };
    set_phase("Failed").await;
    let ready = ready_with_reason(&ks_api, "apps", "HealthCheckFailed").await;
    let message = ready["message"].as_str().unwrap();
    assert!(message.contains("Widget/apps/w"), "{message}");
    set_phase("Ready").await;
    request_reconcile(&ks_api, "apps", "2026-12-02T00:00:00Z").await;
    ready_with_reason(&ks_api, "apps", "ReconciliationSucceeded").await;

    // readyExpr: `after` waits until its dependency carries an annotation, whatever the
    // dependency's own readiness says.
    let after = kustomization(
        "after",
        "repo",
        json!({"path": "./after",
               "dependsOn": [{"name": "apps",
                              "readyExpr": "has(dep.metadata.annotations) && 'promote' in dep.metadata.annotations && dep.metadata.annotations['promote'] == self.metadata.name"}]}),
    );
    ks_api.create(&PostParams::default(), &after).await.unwrap();
    ready_message(&ks_api, "after", "held back by readyExpr", |m| {
        m == "dependency 'flux-system/apps' is not ready according to readyExpr eval"
    })
    .await;
    assert!(configmaps.get_opt("later").await.unwrap().is_none());
    ks_api
        .patch(
            "apps",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"promote": "after"}}})),
        )
        .await
        .unwrap();
    ready_with_reason(&ks_api, "after", "ReconciliationSucceeded").await;
    assert!(configmaps.get_opt("later").await.unwrap().is_some());
}
