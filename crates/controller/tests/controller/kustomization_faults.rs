//! Applies the cluster refuses or breaks: `serviceAccountName` impersonation denied by RBAC (on
//! the controller's cluster, and on a remote one through `kubeConfig`), API errors and
//! connections dropped mid-apply. In every case the Kustomization says what failed,
//! nothing is pruned, and it converges by itself (retryInterval) once the cause is gone.

use crate::harness::{
    create_git_repository, kustomization, publish, serve_artifact, start, tarball,
};
use ferroflux_api::{Kustomization, KustomizationStatus};
use ferroflux_devcluster::{Config, DevCluster, FaultAction, FaultRule};
use ferroflux_testkit::eventually;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

const SA: &str = "system:serviceaccount:flux-system:deployer";

fn configmap(ns: &str, name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  value: \"{value}\"\n"
    )
}

fn commit(n: u8) -> String {
    format!("{n}").repeat(40)
}

/// Waits until the Ready condition and status satisfy `want`; the panic shows the last ones.
async fn ready_where(
    api: &Api<Kustomization>,
    name: &str,
    what: &str,
    want: impl Fn(&Value, &KustomizationStatus) -> bool,
) -> (Value, KustomizationStatus) {
    let last = Mutex::new(Value::Null);
    let label = format!("{name}: {what}");
    let found = eventually(&label, || async {
        let status = api.get(name).await.ok()?.status?;
        let ready = status
            .conditions
            .clone()?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        let ready = serde_json::to_value(ready).unwrap();
        *last.lock().unwrap() = ready.clone();
        want(&ready, &status).then_some((ready, status))
    });
    match tokio::time::timeout(Duration::from_secs(25), found).await {
        Ok(v) => v,
        Err(_) => panic!(
            "{name}: {what} never happened; last Ready: {}",
            last.lock().unwrap()
        ),
    }
}

fn applied(revision: &str) -> impl Fn(&Value, &KustomizationStatus) -> bool + '_ {
    move |ready, status| {
        ready["status"] == "True" && status.last_applied_revision.as_deref() == Some(revision)
    }
}

fn failed_with(fragment: &str) -> impl Fn(&Value, &KustomizationStatus) -> bool + '_ {
    move |ready, _| {
        ready["status"] == "False"
            && ready["reason"] == "ReconciliationFailed"
            && ready["message"].as_str().unwrap_or("").contains(fragment)
    }
}

fn inventory_ids(status: &KustomizationStatus) -> Vec<String> {
    status
        .inventory
        .clone()
        .unwrap_or_default()
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect()
}

async fn value_of(api: &Api<ConfigMap>, name: &str) -> Option<String> {
    let cm = api.get_opt(name).await.unwrap()?;
    cm.data.and_then(|d| d.get("value").cloned())
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Applies RBAC objects as the cluster admin.
async fn apply_admin(client: &kube::Client, objects: Value) {
    for obj in objects.as_array().unwrap() {
        let obj: kube::api::DynamicObject = serde_json::from_value(obj.clone()).unwrap();
        let (group, version) = obj
            .types
            .as_ref()
            .unwrap()
            .api_version
            .split_once('/')
            .unwrap();
        let kind = obj.types.as_ref().unwrap().kind.clone();
        let plural = format!("{}s", kind.to_lowercase());
        let ar = kube::api::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind,
            plural,
        };
        let api: Api<kube::api::DynamicObject> = match obj.metadata.namespace.as_deref() {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        api.patch(
            obj.metadata.name.as_deref().unwrap(),
            &PatchParams::apply("test").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap();
    }
}

fn editor_binding(ns: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "deployer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "configmap-editor"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "flux-system"}],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_applies_only_where_rbac_allows() {
    let env = start("impersonation").await;
    let client = env.client.clone();
    for ns in ["team-a", "team-b"] {
        create_namespace(&client, ns).await;
    }
    // The service account may edit ConfigMaps in team-a only.
    apply_admin(
        &client,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "configmap-editor"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]},
            editor_binding("team-a"),
        ]),
    )
    .await;
    let a: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let b: Api<ConfigMap> = Api::namespaced(client.clone(), "team-b");
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");

    let files = |mixed: &[(&'static str, String)]| {
        let mut f: Vec<(&str, String)> =
            vec![("only-a/cm.yaml", configmap("team-a", "alpha", "1"))];
        f.extend(mixed.iter().cloned());
        f
    };
    let first = files(&[
        ("mixed/one.yaml", configmap("team-a", "one", "1")),
        ("mixed/old.yaml", configmap("team-a", "old", "1")),
    ]);
    let refs: Vec<(&str, &str)> = first.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let server = serve_artifact(&refs).await;
    create_git_repository(&client).await;
    publish(&client, &server, &commit(1)).await;
    for (name, path) in [("only-a", "./only-a"), ("mixed", "./mixed")] {
        let ks = kustomization(
            name,
            "repo",
            json!({"path": path, "serviceAccountName": "deployer", "retryInterval": "1s"}),
        );
        ks_api.create(&PostParams::default(), &ks).await.unwrap();
    }
    let rev1 = format!("main@sha1:{}", commit(1));
    ready_where(&ks_api, "only-a", "applied", applied(&rev1)).await;
    ready_where(&ks_api, "mixed", "applied", applied(&rev1)).await;
    assert_eq!(value_of(&a, "alpha").await.as_deref(), Some("1"));
    assert_eq!(value_of(&a, "old").await.as_deref(), Some("1"));

    // The next revision changes `one`, drops `old` and adds an object in team-b, where the
    // service account may not write: the whole apply is refused before anything changes.
    let second = files(&[
        ("mixed/one.yaml", configmap("team-a", "one", "2")),
        ("mixed/b.yaml", configmap("team-b", "beta", "2")),
    ]);
    let refs: Vec<(&str, &str)> = second.iter().map(|(p, t)| (*p, t.as_str())).collect();
    *server.content.lock().unwrap() = tarball(&refs);
    publish(&client, &server, &commit(2)).await;
    let rev2 = format!("main@sha1:{}", commit(2));
    let (ready, status) =
        ready_where(&ks_api, "mixed", "refused", failed_with("is forbidden")).await;
    assert_eq!(
        ready["message"],
        format!(
            "ConfigMap/team-b/beta dry-run failed (Forbidden): configmaps \"beta\" is forbidden: User \"{SA}\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        )
    );
    assert_eq!(
        status.last_attempted_revision.as_deref(),
        Some(rev2.as_str())
    );
    assert_eq!(status.last_applied_revision.as_deref(), Some(rev1.as_str()));
    assert_eq!(
        inventory_ids(&status),
        ["team-a_old__ConfigMap", "team-a_one__ConfigMap"],
        "the inventory is the last applied one"
    );
    assert_eq!(
        value_of(&a, "one").await.as_deref(),
        Some("1"),
        "nothing applied"
    );
    assert_eq!(
        value_of(&a, "old").await.as_deref(),
        Some("1"),
        "nothing pruned"
    );
    assert_eq!(value_of(&b, "beta").await, None);
    // The other Kustomization, all in team-a, moves on.
    ready_where(&ks_api, "only-a", "applied", applied(&rev2)).await;

    // Once team-b allows it, the retry converges: applied, and `old` pruned.
    apply_admin(&client, json!([editor_binding("team-b")])).await;
    let (_, status) = ready_where(&ks_api, "mixed", "converged", applied(&rev2)).await;
    assert_eq!(
        inventory_ids(&status),
        ["team-a_one__ConfigMap", "team-b_beta__ConfigMap"]
    );
    assert_eq!(value_of(&a, "one").await.as_deref(), Some("2"));
    assert_eq!(value_of(&b, "beta").await.as_deref(), Some("2"));
    assert_eq!(value_of(&a, "old").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_is_impersonated_on_the_remote_cluster() {
    let hub = start("hub-rbac").await;
    let remote = DevCluster::start(Config::memory("remote-rbac"))
        .await
        .unwrap();
    let remote_client = remote.client().await.unwrap();
    create_namespace(&remote_client, "team-a").await;
    apply_admin(
        &remote_client,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "configmap-editor"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]},
            editor_binding("team-a"),
        ]),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), "flux-system");
    let kubeconfig: Secret = serde_json::from_value(json!({
        "metadata": {"name": "remote", "namespace": "flux-system"},
        "data": {"value": k8s_openapi::ByteString(remote.kubeconfig().into_bytes())},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &kubeconfig)
        .await
        .unwrap();
    let (allowed, denied) = (
        configmap("team-a", "allowed", "1"),
        configmap("default", "denied", "1"),
    );
    let server = serve_artifact(&[
        ("allowed/cm.yaml", allowed.as_str()),
        ("denied/cm.yaml", denied.as_str()),
    ])
    .await;
    create_git_repository(&hub.client).await;
    publish(&hub.client, &server, &commit(1)).await;
    let ks_api: Api<Kustomization> = Api::namespaced(hub.client.clone(), "flux-system");
    for name in ["allowed", "denied"] {
        let ks = kustomization(
            name,
            "repo",
            json!({"path": format!("./{name}"), "serviceAccountName": "deployer",
                   "kubeConfig": {"secretRef": {"name": "remote"}}}),
        );
        ks_api.create(&PostParams::default(), &ks).await.unwrap();
    }
    let rev1 = format!("main@sha1:{}", commit(1));
    ready_where(&ks_api, "allowed", "applied", applied(&rev1)).await;
    let (ready, _) = ready_where(&ks_api, "denied", "refused", failed_with("is forbidden")).await;
    assert_eq!(
        ready["message"],
        format!(
            "ConfigMap/default/denied dry-run failed (Forbidden): configmaps \"denied\" is forbidden: User \"{SA}\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )
    );
    let remote_a: Api<ConfigMap> = Api::namespaced(remote_client.clone(), "team-a");
    assert_eq!(value_of(&remote_a, "allowed").await.as_deref(), Some("1"));
    let remote_default: Api<ConfigMap> = Api::namespaced(remote_client, "default");
    assert_eq!(value_of(&remote_default, "denied").await, None);
    // The hub itself got nothing.
    let hub_default: Api<ConfigMap> = Api::namespaced(hub.client.clone(), "default");
    assert_eq!(value_of(&hub_default, "denied").await, None);
}

/// What [`applied_then_changed`] leaves: the cluster, the APIs a test reads, the two
/// revisions and the artifact server (to publish more).
struct Changed {
    env: crate::harness::Env,
    ks_api: Api<Kustomization>,
    cms: Api<ConfigMap>,
    rev1: String,
    rev2: String,
    server: crate::harness::ArtifactServer,
}

/// A Kustomization applied at revision 1 (ConfigMaps `a` = 1 and `b`), and revision 2 (`a` = 2,
/// `b` removed) published.
async fn applied_then_changed(
    name: &str,
    before_publish: impl FnOnce(&ferroflux_devcluster::RunningCluster),
) -> Changed {
    let env = start(name).await;
    let client = env.client.clone();
    create_namespace(&client, "apps").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let ks_api: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let (a1, b1) = (configmap("apps", "a", "1"), configmap("apps", "b", "1"));
    let server = serve_artifact(&[("a.yaml", a1.as_str()), ("b.yaml", b1.as_str())]).await;
    create_git_repository(&client).await;
    publish(&client, &server, &commit(1)).await;
    let ks = kustomization("app", "repo", json!({"retryInterval": "1s"}));
    ks_api.create(&PostParams::default(), &ks).await.unwrap();
    let rev1 = format!("main@sha1:{}", commit(1));
    let (_, status) = ready_where(&ks_api, "app", "applied", applied(&rev1)).await;
    assert_eq!(
        inventory_ids(&status),
        ["apps_a__ConfigMap", "apps_b__ConfigMap"]
    );

    before_publish(&env.cluster);
    let a2 = configmap("apps", "a", "2");
    *server.content.lock().unwrap() = tarball(&[("a.yaml", a2.as_str())]);
    publish(&client, &server, &commit(2)).await;
    let rev2 = format!("main@sha1:{}", commit(2));
    Changed {
        env,
        ks_api,
        cms,
        rev1,
        rev2,
        server,
    }
}

/// Revision 2 is not applied yet: `b` is still there and in the inventory.
async fn nothing_pruned(status: &KustomizationStatus, cms: &Api<ConfigMap>, rev1: &str) {
    assert_eq!(status.last_applied_revision.as_deref(), Some(rev1));
    assert_eq!(
        inventory_ids(status),
        ["apps_a__ConfigMap", "apps_b__ConfigMap"]
    );
    assert_eq!(
        value_of(cms, "b").await.as_deref(),
        Some("1"),
        "b not pruned"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_mid_apply_never_prune_and_converge() {
    // Every write to ConfigMaps has its connection closed unanswered, from the dry-run on.
    let Changed {
        env,
        ks_api,
        cms,
        rev1,
        rev2,
        ..
    } = applied_then_changed("drops", |c| {
        c.set_fault_rules(vec![
            FaultRule::new(FaultAction::Drop)
                .writes()
                .resource("configmaps"),
        ])
        .unwrap();
    })
    .await;
    let (ready, status) = ready_where(
        &ks_api,
        "app",
        "dry-run broken",
        failed_with("ConfigMap/apps/a dry-run failed"),
    )
    .await;
    assert!(env.cluster.faults_injected() >= 1);
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("connection error: peer closed connection"),
        "the message says the connection broke: {message}"
    );
    assert_eq!(
        status.last_attempted_revision.as_deref(),
        Some(rev2.as_str())
    );
    nothing_pruned(&status, &cms, &rev1).await;
    assert_eq!(value_of(&cms, "a").await.as_deref(), Some("1"));

    // Now the dry-runs pass and the real apply of `a` is served but its connection closed
    // before the answer, every time the client sends it again (a server-side apply is
    // idempotent: it is retried, five times at most): the change is in, the controller cannot
    // know it, so that reconcile fails and must not prune; the next one finds `a` unchanged
    // and prunes `b`. Watches record the order of what happens (resource versions are one
    // cluster-wide sequence).
    let from = cms.list_metadata(&Default::default()).await.unwrap();
    let from = from.metadata.resource_version.unwrap();
    let mut cm_changes = cms
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let mut ks_changes = ks_api
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let seen = env.cluster.faults_injected();
    let attempts = 1 + u64::from(ferroflux_kubeclient::MAX_TRANSIENT_RETRIES);
    env.cluster
        .set_fault_rules(vec![
            FaultRule::new(FaultAction::DropAfterServing)
                .methods(&["PATCH"])
                .name("a")
                .dry_run(false)
                .times(attempts),
        ])
        .unwrap();
    let (_, status) = ready_where(&ks_api, "app", "converged", applied(&rev2)).await;
    assert_eq!(env.cluster.faults_injected(), seen + attempts);
    assert_eq!(inventory_ids(&status), ["apps_a__ConfigMap"]);
    assert_eq!(value_of(&cms, "b").await, None);
    // The write was whole: the new value with the owner labels, never half an object.
    let a = cms.get("a").await.unwrap();
    assert_eq!(a.data.unwrap()["value"], "2");
    let labels = a.metadata.labels.unwrap();
    assert_eq!(labels["kustomize.toolkit.fluxcd.io/name"], "app");
    assert_eq!(
        labels["kustomize.toolkit.fluxcd.io/namespace"],
        "flux-system"
    );

    let rv = |m: &kube::api::ObjectMeta| -> u64 {
        m.resource_version.as_deref().unwrap().parse().unwrap()
    };
    let mut reported_at = None;
    while reported_at.is_none() {
        let ks = match ks_changes.try_next().await.unwrap() {
            Some(WatchEvent::Modified(ks)) => ks,
            Some(_) => continue,
            None => panic!("the watch ended before the broken apply was reported"),
        };
        let ready = ks
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .cloned();
        if let Some(ready) = ready {
            assert!(
                ready.status == "False" || ready.message != format!("Applied revision: {rev2}"),
                "converged before the broken apply was reported"
            );
            if ready.status == "False"
                && ready.message.starts_with("ConfigMap/apps/a apply failed: ")
                && ready.message.contains("peer closed connection")
            {
                reported_at = Some(rv(&ks.metadata));
            }
        }
    }
    let reported_at = reported_at.unwrap();
    let deleted_at = loop {
        match cm_changes.try_next().await.unwrap() {
            Some(WatchEvent::Deleted(cm)) if cm.metadata.name.as_deref() == Some("b") => {
                break rv(&cm.metadata);
            }
            Some(_) => {}
            None => panic!("the watch ended before b was deleted"),
        }
    };
    assert!(
        reported_at < deleted_at,
        "b was pruned ({deleted_at}) before the failed apply was reported ({reported_at})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_never_prune_and_converge() {
    // 500 on every ConfigMap write: the dry-run (idempotent) is retried five times, then the
    // reconcile fails with the server's answer.
    let Changed {
        env,
        ks_api,
        cms,
        rev1,
        rev2,
        ..
    } = applied_then_changed("errors", |c| {
        c.set_fault_rules(vec![
            FaultRule::new(FaultAction::Error(500))
                .writes()
                .resource("configmaps"),
        ])
        .unwrap();
    })
    .await;
    let (ready, status) = ready_where(
        &ks_api,
        "app",
        "500 reported",
        failed_with("ConfigMap/apps/a dry-run failed"),
    )
    .await;
    assert_eq!(
        ready["message"],
        "ConfigMap/apps/a dry-run failed (InternalError): an error on the server (\"injected fault\") has prevented the request from succeeding"
    );
    nothing_pruned(&status, &cms, &rev1).await;
    assert_eq!(value_of(&cms, "a").await.as_deref(), Some("1"));

    // An overloaded server that does not say when to come back (503, no Retry-After): the
    // client retries the dry-run a few times within seconds, then the reconcile fails with
    // the server's message instead of backing off for minutes; nothing is pruned.
    env.cluster
        .set_fault_rules(vec![
            FaultRule::new(FaultAction::Error(503))
                .writes()
                .resource("configmaps"),
        ])
        .unwrap();
    let (ready, status) = ready_where(
        &ks_api,
        "app",
        "503 reported",
        failed_with("(ServiceUnavailable)"),
    )
    .await;
    assert_eq!(
        ready["message"],
        "ConfigMap/apps/a dry-run failed (ServiceUnavailable): the server is currently unable to handle the request (injected fault)"
    );
    nothing_pruned(&status, &cms, &rev1).await;

    // 429 with Retry-After on every other ConfigMap write: the client waits what the server
    // asks and tries again, and the reconcile converges, pruning `b`.
    let seen = env.cluster.faults_injected();
    env.cluster
        .set_fault_rules(vec![
            FaultRule::new(FaultAction::Error(429))
                .retry_after(1)
                .writes()
                .resource("configmaps")
                .rate(0.5),
        ])
        .unwrap();
    let (_, status) = ready_where(&ks_api, "app", "converged", applied(&rev2)).await;
    assert!(
        env.cluster.faults_injected() > seen,
        "the 429s were met on the way"
    );
    assert_eq!(inventory_ids(&status), ["apps_a__ConfigMap"]);
    assert_eq!(value_of(&cms, "a").await.as_deref(), Some("2"));
    assert_eq!(value_of(&cms, "b").await, None);
}

/// A Conflict at apply time (the object changed after its dry-run): without force the
/// reconcile fails saying so and converges later; with `spec.force` the object is deleted and
/// created again, for real, as Flux's force does on a Conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_at_apply_time_fails_or_recreates_with_force() {
    let conflict = || {
        FaultRule::new(FaultAction::Error(409))
            .writes()
            .resource("configmaps")
            .dry_run(false)
    };
    let Changed {
        env,
        ks_api,
        cms,
        rev1,
        rev2,
        server,
    } = applied_then_changed("conflict", |c| {
        c.set_fault_rules(vec![conflict()]).unwrap();
    })
    .await;
    let (ready, status) = ready_where(
        &ks_api,
        "app",
        "conflict reported",
        failed_with("ConfigMap/apps/a apply failed"),
    )
    .await;
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified"),
        "{ready}"
    );
    nothing_pruned(&status, &cms, &rev1).await;
    let uid = cms.get("a").await.unwrap().metadata.uid;
    env.cluster.set_fault_rules(Vec::new()).unwrap();
    ready_where(&ks_api, "app", "converged", applied(&rev2)).await;
    assert_eq!(
        cms.get("a").await.unwrap().metadata.uid,
        uid,
        "updated in place"
    );

    // With force, the next change meets one Conflict: `a` is recreated with its new value.
    ks_api
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"force": true}})),
        )
        .await
        .unwrap();
    let generation = ks_api.get("app").await.unwrap().metadata.generation;
    ready_where(&ks_api, "app", "force seen", |ready, status| {
        applied(&rev2)(ready, status) && status.observed_generation == generation
    })
    .await;
    let injected = env.cluster.faults_injected();
    env.cluster
        .set_fault_rules(vec![conflict().times(1)])
        .unwrap();
    let a3 = configmap("apps", "a", "3");
    *server.content.lock().unwrap() = tarball(&[("a.yaml", a3.as_str())]);
    publish(&env.client, &server, &commit(3)).await;
    let rev3 = format!("main@sha1:{}", commit(3));
    ready_where(&ks_api, "app", "recreated", applied(&rev3)).await;
    let recreated = cms.get("a").await.unwrap();
    assert_ne!(recreated.metadata.uid, uid, "deleted and created again");
    assert_eq!(recreated.data.unwrap()["value"], "3");
    assert_eq!(env.cluster.faults_injected(), injected + 1);
}

/// The deletion of a stale object fails (its connection dropped unanswered; a DELETE is not
/// sent again by the client): the reconcile fails with PruneFailed and the object stays in the
/// inventory, so the next reconcile deletes it instead of forgetting it was ever applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_prune_is_retried_not_forgotten() {
    let attempts = 1;
    let Changed {
        env,
        ks_api,
        cms,
        rev2,
        ..
    } = applied_then_changed("prune-drops", |c| {
        c.set_fault_rules(vec![
            FaultRule::new(FaultAction::Drop)
                .methods(&["DELETE"])
                .name("b")
                .times(attempts),
        ])
        .unwrap();
    })
    .await;
    let (_, status) = ready_where(&ks_api, "app", "prune failed", |ready, _| {
        ready["status"] == "False" && ready["reason"] == "PruneFailed"
    })
    .await;
    assert_eq!(env.cluster.faults_injected(), attempts);
    assert_eq!(
        inventory_ids(&status),
        ["apps_a__ConfigMap", "apps_b__ConfigMap"],
        "b is still recorded"
    );
    assert_eq!(value_of(&cms, "b").await.as_deref(), Some("1"));
    let (_, status) = ready_where(&ks_api, "app", "converged", applied(&rev2)).await;
    assert_eq!(inventory_ids(&status), ["apps_a__ConfigMap"]);
    assert_eq!(value_of(&cms, "b").await, None, "b pruned on the retry");
}
