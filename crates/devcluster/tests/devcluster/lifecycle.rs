//! Issue 4 behaviour: server-side apply, dry runs, immutable fields, finalizers, namespace
//! deletion, garbage collection, simulated workload readiness, tables and fault injection.
//! Driven by the real kubectl and by kube-rs.

use ferroflux_testkit::Kubectl;
use std::time::Duration;

use crate::api_err;
use ferroflux_devcluster::{Config, DevCluster, FaultConfig, RunningCluster};
use futures_util::TryStreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn deployment(name: &str, replicas: i64, annotations: Value) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: default
  annotations: {annotations}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: c
        image: nginx:1
"
    )
}

async fn start() -> (RunningCluster, kube::Client, Kubectl) {
    let c = DevCluster::start(Config::memory("life")).await.unwrap();
    let client = c.client().await.unwrap();
    let k = Kubectl::new(&[&c]);
    (c, client, k)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_twice_conflicts_and_force() {
    let (c, client, k) = start().await;
    let manifest = deployment("web", 2, json!({}));
    assert!(
        k.ok(&["apply", "--server-side", "-f", "-"], &manifest)
            .contains("serverside-applied")
    );
    let rv = k.ok(
        &[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
        "",
    );
    k.ok(&["apply", "--server-side", "-f", "-"], &manifest);
    let rv2 = k.ok(
        &[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
        "",
    );
    assert_eq!(rv, rv2, "a second identical apply changes nothing");

    let other = deployment("web", 5, json!({}));
    let err = k.fails(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &other,
    );
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        ),
        "{err}"
    );
    k.ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &other,
    );
    let d: Deployment = Api::namespaced(client, "default").get("web").await.unwrap();
    assert_eq!(d.spec.replicas, Some(5));
    let managers: Vec<String> = d
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|m| m.manager.unwrap())
        .collect();
    assert!(managers.contains(&"other".to_string()), "{managers:?}");
    c.shutdown().await;
}

#[tokio::test]
async fn apply_removes_dropped_fields_and_honours_force_and_dry_run() {
    let (c, client, _k) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PatchParams::apply("tester");
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"keep": "1", "drop": "2"}});
    api.patch("a", &pp, &Patch::Apply(&first)).await.unwrap();
    let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"keep": "1"}});
    let cm = api.patch("a", &pp, &Patch::Apply(&second)).await.unwrap();
    assert_eq!(cm.data.unwrap().keys().collect::<Vec<_>>(), ["keep"]);

    // Another manager changing "keep" conflicts; force takes it.
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"keep": "9"}});
    let e = api_err(
        api.patch("a", &PatchParams::apply("intruder"), &Patch::Apply(&theirs))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(
        e.message.contains("conflict with \"tester\""),
        "{}",
        e.message
    );
    // A dry run reports the result and stores nothing.
    let dry = api
        .patch(
            "a",
            &PatchParams::apply("intruder").force().dry_run(),
            &Patch::Apply(&theirs),
        )
        .await
        .unwrap();
    assert_eq!(dry.data.unwrap()["keep"], "9");
    assert_eq!(api.get("a").await.unwrap().data.unwrap()["keep"], "1");
    let forced = api
        .patch(
            "a",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(&theirs),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["keep"], "9");
    // Apply creates; a dry-run create stores nothing.
    let new = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fresh"}, "data": {"x": "1"}});
    api.patch(
        "fresh",
        &PatchParams::apply("tester").dry_run(),
        &Patch::Apply(&new),
    )
    .await
    .unwrap();
    assert!(api.get_opt("fresh").await.unwrap().is_none());
    api.patch("fresh", &pp, &Patch::Apply(&new)).await.unwrap();
    assert!(api.get_opt("fresh").await.unwrap().is_some());
    c.shutdown().await;
}

#[tokio::test]
async fn apply_bad_input() {
    let (c, client, _k) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    // No field manager.
    let e = api_err(
        api.patch("a", &PatchParams::default(), &Patch::Apply(&cm))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "PATCH, application/apply-patch+yaml requests must specify a fieldManager"
    );
    // Wrong kind for the URL.
    let wrong = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}});
    let e = api_err(
        api.patch("a", &PatchParams::apply("m"), &Patch::Apply(&wrong))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "the kind in the data (Secret) does not match the expected kind (ConfigMap)"
    );
    // managedFields in an applied configuration are refused.
    let mf = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "managedFields": [{"manager": "x"}]}});
    let e = api_err(
        api.patch("a", &PatchParams::apply("m"), &Patch::Apply(&mf))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    assert!(
        e.message.contains("managedFields must be nil"),
        "{}",
        e.message
    );
    // A 1,000-element list-map with a duplicate key.
    let mut containers: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("c{i}"), "image": "x"}))
        .collect();
    containers.push(json!({"name": "c7", "image": "y"}));
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dup"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": containers}}}});
    let deploys: Api<Deployment> = Api::namespaced(client, "default");
    let e = api_err(
        deploys
            .patch("dup", &PatchParams::apply("m"), &Patch::Apply(&d))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.reason.as_str()),
        (422, "Invalid"),
        "{}",
        e.message
    );
    assert!(e.message.contains("Duplicate value"), "{}", e.message);
    // Nothing was stored.
    assert!(api.get_opt("a").await.unwrap().is_none());
    assert!(deploys.get_opt("dup").await.unwrap().is_none());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_server_stores_nothing() {
    let (c, client, k) = start().await;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ghost\n  namespace: default\n";
    k.ok(&["create", "--dry-run=server", "-f", "-"], cm);
    k.ok(
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        cm,
    );
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(api.get_opt("ghost").await.unwrap().is_none());
    k.ok(&["create", "-f", "-"], cm);
    k.ok(&["delete", "--dry-run=server", "cm", "ghost"], "");
    assert!(api.get_opt("ghost").await.unwrap().is_some());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_fields_are_refused() {
    let (c, client, k) = start().await;
    k.ok(&["apply", "-f", "-"], &deployment("web", 1, json!({})));
    let changed = deployment("web", 1, json!({}))
        .replace("matchLabels: {app: web}", "matchLabels: {app: other}")
        .replace("labels: {app: web}", "labels: {app: other}");
    let err = k.fails(&["apply", "-f", "-"], &changed);
    assert!(
        err.contains("spec.selector: Invalid value") && err.contains("field is immutable"),
        "{err}"
    );

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let frozen: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": true}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &frozen).await.unwrap();
    let e = api_err(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("data: Forbidden: field is immutable when `immutable` is set"),
        "{}",
        e.message
    );

    let svcs: Api<Service> = Api::namespaced(client, "default");
    let svc: Service = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    let svc = svcs.create(&PostParams::default(), &svc).await.unwrap();
    let ip = svc.spec.unwrap().cluster_ip.unwrap();
    assert!(ip.starts_with("10.96."), "{ip}");
    let e = api_err(
        svcs.patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterIP": "10.96.9.9"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("spec.clusterIP") && e.message.contains("field is immutable"),
        "{}",
        e.message
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_become_available_unless_told_otherwise() {
    let (c, _client, k) = start().await;
    k.ok(&["apply", "-f", "-"], &deployment("ok", 3, json!({})));
    k.ok(
        &[
            "wait",
            "--for=condition=Available",
            "deployment/ok",
            "--timeout=10s",
        ],
        "",
    );
    let table = k.ok(&["get", "deploy", "ok"], "");
    assert!(table.contains("READY") && table.contains("3/3"), "{table}");

    k.ok(
        &["apply", "-f", "-"],
        &deployment("broken", 1, json!({"devcluster.ferroflux.io/fail": "true"})),
    );
    let err = k.fails(
        &[
            "wait",
            "--for=condition=Available",
            "deployment/broken",
            "--timeout=1s",
        ],
        "",
    );
    assert!(err.contains("timed out"), "{err}");
    let reason = k.ok(
        &[
            "get",
            "deploy",
            "broken",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}",
        ],
        "",
    );
    assert_eq!(reason, "ProgressDeadlineExceeded");

    // The object as created (not a later read, which could race the delay) is not available.
    let avail = k.ok(
        &[
            "apply",
            "-f",
            "-",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Available\")].status}",
        ],
        &deployment(
            "slow",
            1,
            json!({"devcluster.ferroflux.io/ready-after": "1s"}),
        ),
    );
    assert_eq!(avail, "False");
    k.ok(
        &[
            "wait",
            "--for=condition=Available",
            "deployment/slow",
            "--timeout=20s",
        ],
        "",
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_deletion_cascades_and_finalizers_hold() {
    let (c, client, k) = start().await;
    k.ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n",
    );
    k.ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: team\n",
    );
    k.ok(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: team\n  finalizers: [example.com/hold]\n");
    k.ok(&["delete", "ns", "team", "--wait=false"], "");
    let ns = k.ok(&["get", "ns", "team", "-o", "jsonpath={.status.phase}"], "");
    assert_eq!(ns, "Terminating");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    assert!(api.get_opt("plain").await.unwrap().is_none());
    let held = api.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    // New content is refused while terminating.
    let err = k.fails(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: team\n",
    );
    assert!(err.contains("because it is being terminated"), "{err}");
    // Removing the finalizer lets both go.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
    k.ok(&["wait", "--for=delete", "ns/team", "--timeout=10s"], "");
    c.shutdown().await;
}

#[tokio::test]
async fn garbage_collection_follows_owner_references() {
    let (c, client, _k) = start().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mk_owner = |name: &str| -> Deployment {
        serde_json::from_str(
            &serde_json::to_string(&serde_yaml_like(&deployment(name, 1, json!({})))).unwrap(),
        )
        .unwrap()
    };
    for (name, policy) in [
        ("fg", DeleteParams::foreground()),
        ("bg", DeleteParams::background()),
        ("or", DeleteParams::orphan()),
    ] {
        let owner = deploys
            .create(&PostParams::default(), &mk_owner(name))
            .await
            .unwrap();
        let oref = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": owner.metadata.uid.unwrap(), "controller": true, "blockOwnerDeletion": true}]);
        let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": format!("{name}-rs"), "ownerReferences": oref},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})).unwrap();
        let rs = rss.create(&PostParams::default(), &rs).await.unwrap();
        let rsref = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{name}-rs"), "uid": rs.metadata.uid.unwrap()}]);
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("{name}-cm"), "ownerReferences": rsref}}),
        )
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        deploys.delete(name, &policy).await.unwrap();
        assert!(
            deploys.get_opt(name).await.unwrap().is_none(),
            "{name}: owner gone"
        );
    }
    // Foreground and background remove the whole chain; orphan keeps the dependents.
    for name in ["fg", "bg"] {
        assert!(
            rss.get_opt(&format!("{name}-rs")).await.unwrap().is_none(),
            "{name}-rs"
        );
        assert!(
            cms.get_opt(&format!("{name}-cm")).await.unwrap().is_none(),
            "{name}-cm"
        );
    }
    let orphan = rss.get("or-rs").await.unwrap();
    assert!(orphan.metadata.owner_references.is_none());
    assert!(cms.get_opt("or-cm").await.unwrap().is_some());
    c.shutdown().await;
}

/// The deployment manifests above are YAML; kube-rs wants JSON.
fn serde_yaml_like(yaml: &str) -> Value {
    serde_saphyr::from_str(yaml).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_and_restart_at_the_same_address() {
    let (mut c, client, _k) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Without Retry-After kubectl (client-go) does not retry these: each code is reported at
    // once.
    let k = Kubectl::new(&[&c]);
    for (code, reason) in [
        (503, "ServiceUnavailable"),
        (429, "TooManyRequests"),
        (500, "InternalError"),
    ] {
        c.set_faults(FaultConfig {
            error_rate: 1.0,
            error_code: code,
            delay: Duration::ZERO,
        })
        .unwrap();
        let err = k.fails(&["get", "cm"], "");
        assert!(err.contains(reason), "{code}: {err}");
    }
    c.set_faults(FaultConfig {
        error_rate: 0.5,
        error_code: 500,
        delay: Duration::ZERO,
    })
    .unwrap();
    // Creates (which the project's clients never send twice) meet exactly that share.
    let mut failed = 0;
    for i in 0..10 {
        let cm: ConfigMap =
            serde_json::from_value(serde_json::json!({"metadata": {"name": format!("rate-{i}")}}))
                .unwrap();
        if let Err(kube::Error::Api(s)) = api.create(&PostParams::default(), &cm).await {
            assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
            failed += 1;
        }
    }
    assert_eq!(failed, 5);
    assert!(
        c.set_faults(FaultConfig {
            error_rate: 1.5,
            error_code: 500,
            delay: Duration::ZERO
        })
        .is_err()
    );
    c.set_faults(FaultConfig {
        error_rate: 0.0,
        error_code: 500,
        delay: Duration::from_millis(50),
    })
    .unwrap();
    let t = std::time::Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(50));
    c.set_faults(FaultConfig::default()).unwrap();

    // A watcher survives a stop and restart at the same address.
    let addr = c.addr();
    let mut stream = Box::pin(kube::runtime::watcher(
        api.clone(),
        kube::runtime::watcher::Config::default(),
    ));
    loop {
        if let kube::runtime::watcher::Event::InitDone = stream.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    c.stop().await;
    assert!(
        api.list(&ListParams::default()).await.is_err(),
        "stopped cluster refuses connections"
    );
    c.restart().await.unwrap();
    assert_eq!(c.addr(), addr);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "after-restart"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match stream.try_next().await {
                Ok(Some(
                    kube::runtime::watcher::Event::Apply(o)
                    | kube::runtime::watcher::Event::InitApply(o),
                )) if o.metadata.name.as_deref() == Some("after-restart") => {
                    return true;
                }
                _ => {}
            }
        }
    })
    .await
    .unwrap();
    assert!(seen);
    c.shutdown().await;
}
