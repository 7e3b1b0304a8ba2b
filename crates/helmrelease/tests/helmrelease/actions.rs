//! The release actions on a devcluster: install, upgrade (three-way), rollback, uninstall and
//! test, with hooks, CRDs, Capabilities and `lookup` from the cluster.

use std::time::Duration;

use ferroflux_helmrelease::{
    CrdPolicy, InstallOptions, PostRender, PostRenderStrategy, RollbackOptions, Status,
    TestOptions, UninstallOptions, UpgradeOptions, WaitOptions,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::support::{
    cluster, config_map, corpus_chart, exists, fixture_chart, install_opts, namespace, target,
    values,
};

fn upgrade_opts() -> UpgradeOptions {
    UpgradeOptions {
        wait: WaitOptions {
            timeout: Duration::from_secs(20),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn install_upgrade_rollback_uninstall_of_a_corpus_chart() {
    let (cluster, client, actions) = cluster("actions-lifecycle").await;
    let chart = corpus_chart("app-basic");
    let t = target("web", "apps");
    let opts = InstallOptions {
        create_namespace: true,
        ..install_opts()
    };
    let rel = actions
        .install(&t, chart.clone(), values(json!({"replicaCount": 2})), &opts)
        .await
        .unwrap();
    assert_eq!((rel.version, rel.info.status), (1, Status::Deployed));
    assert_eq!(rel.info.description, "Install complete");
    assert_eq!(rel.chart_name(), "app");
    let deploy: serde_json::Value = serde_json::from_slice(
        &cluster
            .kubectl(&["get", "deployment", "web-app", "-n", "apps", "-o", "json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(
        deploy["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    assert_eq!(
        deploy["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "web"
    );
    assert_eq!(
        deploy["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        "apps"
    );
    assert!(exists(&cluster, "apps", "service", "web-app"));
    assert!(!exists(&cluster, "apps", "ingress", "web-app"));

    // Upgrade: the Ingress appears.
    let prod = values(json!({"replicaCount": 3, "ingress": {"enabled": true}}));
    let rel = actions
        .upgrade(&t, chart.clone(), prod, &upgrade_opts())
        .await
        .unwrap();
    assert_eq!((rel.version, rel.info.status), (2, Status::Deployed));
    assert_eq!(rel.info.description, "Upgrade complete");
    assert!(exists(&cluster, "apps", "ingress", "web-app"));

    // Upgrade again without it: what the previous release had and this one drops is deleted.
    let rel = actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 1})),
            &upgrade_opts(),
        )
        .await
        .unwrap();
    assert_eq!(rel.version, 3);
    assert!(!exists(&cluster, "apps", "ingress", "web-app"));

    // Roll back to revision 2: the Ingress comes back, values are 2's.
    let rel = actions
        .rollback(
            &t,
            &RollbackOptions {
                version: 2,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((rel.version, rel.info.status), (4, Status::Deployed));
    assert_eq!(rel.info.description, "Rollback to 2");
    assert_eq!(rel.info.rollback_revision, 2);
    assert_eq!(rel.config["replicaCount"], 3);
    assert!(exists(&cluster, "apps", "ingress", "web-app"));

    let storage = actions.storage("apps");
    let statuses: Vec<(i64, Status)> = storage
        .history("web")
        .await
        .unwrap()
        .iter()
        .map(|r| (r.version, r.info.status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (1, Status::Superseded),
            (2, Status::Superseded),
            (3, Status::Superseded),
            (4, Status::Deployed)
        ]
    );

    // Uninstall keeping history: objects gone, the latest revision `uninstalled`.
    let gone = actions
        .uninstall(
            &t,
            &UninstallOptions {
                keep_history: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(gone.info.status, Status::Uninstalled);
    assert!(!exists(&cluster, "apps", "deployment", "web-app"));
    assert!(!exists(&cluster, "apps", "ingress", "web-app"));
    let last = storage.last("web").await.unwrap().unwrap();
    assert_eq!((last.version, last.info.status), (4, Status::Uninstalled));
    assert_eq!(last.info.description, "Uninstallation complete");
    assert!(!last.info.deleted.is_empty());
    // Installing again over it needs `replace`; then the next revision is written.
    let e = actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot reuse a name that is still in use"),
        "{e}"
    );
    let rel = actions
        .install(
            &t,
            chart.clone(),
            values(json!({})),
            &InstallOptions {
                replace: true,
                ..install_opts()
            },
        )
        .await
        .unwrap();
    assert_eq!((rel.version, rel.info.status), (5, Status::Deployed));
    // A plain uninstall purges the history.
    actions
        .uninstall(&t, &UninstallOptions::default())
        .await
        .unwrap();
    assert!(storage.history("web").await.unwrap().is_empty());
    let e = actions
        .uninstall(&t, &UninstallOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(e, "uninstall: Release not loaded: web: release: not found");
    assert!(
        actions
            .uninstall(
                &t,
                &UninstallOptions {
                    ignore_not_found: true,
                    ..Default::default()
                }
            )
            .await
            .unwrap()
            .is_none()
    );
    let _ = client;
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_tests_lookup_and_capabilities() {
    let (cluster, client, actions) = cluster("actions-hooks").await;
    namespace(&client, "apps").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    let pre = serde_json::from_value(
        json!({"metadata": {"name": "preexisting"}, "data": {"value": "from-the-cluster"}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &pre).await.unwrap();
    let t = target("hk", "apps");
    let chart = fixture_chart("hooked");
    let rel = actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap();
    assert_eq!(rel.info.status, Status::Deployed);
    assert_eq!(rel.info.notes.trim(), "hk revision 1 runs 1 replica(s).");

    // Rendered with the live cluster: lookup saw the ConfigMap, Capabilities are the server's.
    let seen = config_map(&client, "apps", "hk-cluster").await.unwrap();
    assert_eq!(seen["looked-up"], "from-the-cluster");
    assert_eq!(seen["hasDeployments"], "true");
    let version = client.apiserver_version().await.unwrap().git_version;
    assert_eq!(seen["kubeVersion"], version.as_str());

    // Hooks ran in weight order and were recorded; hook-succeeded deleted the Job, the
    // post-install ConfigMap (default policy before-hook-creation) stays.
    let by_name = |n: &str| rel.hooks.iter().find(|h| h.name == n).unwrap().clone();
    let migrate = by_name("hk-migrate");
    assert_eq!(migrate.last_run.phase, "Succeeded");
    assert!(!migrate.last_run.started_at.is_empty() && !migrate.last_run.completed_at.is_empty());
    assert!(!exists(&cluster, "apps", "job", "hk-migrate"));
    let installed = by_name("hk-installed");
    assert_eq!(installed.last_run.phase, "Succeeded");
    assert_eq!(installed.delete_policies, vec!["before-hook-creation"]);
    assert!(migrate.last_run.completed_at <= installed.last_run.started_at);
    assert_eq!(
        config_map(&client, "apps", "hk-installed").await.unwrap()["revision"],
        "1"
    );
    assert_eq!(by_name("hk-test").last_run.phase, "");

    // The upgrade re-runs pre/post-upgrade hooks (the ConfigMap hook is recreated).
    let rel = actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 2})),
            &upgrade_opts(),
        )
        .await
        .unwrap();
    assert_eq!(
        config_map(&client, "apps", "hk-installed").await.unwrap()["revision"],
        "2"
    );
    assert_eq!(
        config_map(&client, "apps", "hk-cluster").await.unwrap()["revision"],
        "2"
    );
    assert_eq!(rel.info.notes.trim(), "hk revision 2 runs 2 replica(s).");

    // Tests: the result is recorded in the stored release.
    let tested = actions.test(&t, &TestOptions::default()).await.unwrap();
    let test_hook = tested.hooks.iter().find(|h| h.name == "hk-test").unwrap();
    assert_eq!(test_hook.last_run.phase, "Succeeded");
    let stored = actions.storage("apps").last("hk").await.unwrap().unwrap();
    assert_eq!(
        stored
            .hooks
            .iter()
            .find(|h| h.name == "hk-test")
            .unwrap()
            .last_run
            .phase,
        "Succeeded"
    );
    assert_eq!(stored.info.status, Status::Deployed);

    // A failing test: recorded as Failed, the release stays deployed.
    actions
        .upgrade(
            &t,
            chart.clone(),
            values(json!({"failTest": true})),
            &upgrade_opts(),
        )
        .await
        .unwrap();
    let e = actions
        .test(
            &t,
            &TestOptions {
                timeout: Duration::from_secs(10),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "pod hk-test failed");
    let rel = e.release().unwrap();
    assert_eq!(
        rel.hooks
            .iter()
            .find(|h| h.name == "hk-test")
            .unwrap()
            .last_run
            .phase,
        "Failed"
    );
    let stored = actions.storage("apps").last("hk").await.unwrap().unwrap();
    assert_eq!(stored.info.status, Status::Deployed);
    assert_eq!(
        stored
            .hooks
            .iter()
            .find(|h| h.name == "hk-test")
            .unwrap()
            .last_run
            .phase,
        "Failed"
    );

    // Uninstall runs the pre-delete hook (deleted by hook-succeeded) and removes the objects.
    actions
        .uninstall(&t, &UninstallOptions::default())
        .await
        .unwrap();
    assert!(!exists(&cluster, "apps", "deployment", "hk"));
    assert!(!exists(&cluster, "apps", "configmap", "hk-goodbye"));
    assert!(config_map(&client, "apps", "hk-cluster").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn crds_go_first_by_policy() {
    let (cluster, client, actions) = cluster("actions-crds").await;
    namespace(&client, "apps").await;
    let chart = corpus_chart("crds");
    // Skip: the chart's custom resource has no kind to go to.
    let e = actions
        .install(
            &target("skip", "apps"),
            chart.clone(),
            values(json!({})),
            &InstallOptions {
                crds: CrdPolicy::Skip,
                ..install_opts()
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no matches for kind \"Widget\" in version \"example.com/v1\""),
        "{e}"
    );
    assert!(e.contains("ensure CRDs are installed first"), "{e}");
    assert!(
        actions
            .storage("apps")
            .history("skip")
            .await
            .unwrap()
            .is_empty()
    );
    // Create: the CRDs of the chart and its subchart, then the Widget.
    let rel = actions
        .install(
            &target("crd", "apps"),
            chart.clone(),
            values(json!({})),
            &install_opts(),
        )
        .await
        .unwrap();
    assert_eq!(rel.info.status, Status::Deployed);
    for crd in [
        "widgets.example.com",
        "gadgets.example.com",
        "subthings.example.com",
        "things.crd.example.com",
    ] {
        assert!(
            cluster.kubectl(&["get", "crd", crd]).status.success(),
            "{crd}"
        );
    }
    assert!(exists(&cluster, "apps", "widgets.example.com", "w1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn post_renderer_and_keep_policy() {
    let (cluster, client, actions) = cluster("actions-post").await;
    namespace(&client, "apps").await;
    let t = target("pr", "apps");
    let chart = fixture_chart("hooked");
    let label: std::sync::Arc<ferroflux_helmrelease::PostRenderer> =
        std::sync::Arc::new(|mut objects: Vec<serde_json::Value>| {
            for o in objects.iter_mut() {
                o["metadata"]["labels"]["team"] = json!("a");
            }
            Ok(objects)
        });
    let opts = InstallOptions {
        post_renderer: Some(PostRender {
            run: label.clone(),
            strategy: PostRenderStrategy::NoHooks,
        }),
        ..install_opts()
    };
    let rel = actions
        .install(
            &t,
            chart.clone(),
            values(json!({"extraConfig": true})),
            &opts,
        )
        .await
        .unwrap();
    assert!(!rel.manifest.contains("# Source:"), "{}", rel.manifest);
    assert!(rel.manifest.contains("team: a"), "{}", rel.manifest);
    let deploy: serde_json::Value = serde_json::from_slice(
        &cluster
            .kubectl(&["get", "deployment", "pr", "-n", "apps", "-o", "json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(deploy["metadata"]["labels"]["team"], "a");
    // Helm 3's `nohooks`: hooks are not post-rendered.
    assert!(rel.hooks.iter().all(|h| !h.manifest.contains("team: a")));

    // Helm 4's `combined` (Flux's default): hooks go through the post-renderer with the
    // manifests, and the stored manifest keeps its `# Source:` lines.
    let combined = target("pc", "apps");
    let opts = InstallOptions {
        post_renderer: Some(PostRender {
            run: label,
            strategy: PostRenderStrategy::Combined,
        }),
        ..install_opts()
    };
    let rel = actions
        .install(&combined, chart.clone(), values(json!({})), &opts)
        .await
        .unwrap();
    assert!(
        rel.manifest.starts_with("---\n# Source: hooked/templates/"),
        "{}",
        rel.manifest
    );
    assert!(rel.manifest.contains("team: a"), "{}", rel.manifest);
    assert_eq!(rel.hooks.len(), 4, "{:?}", rel.hooks);
    assert!(rel.hooks.iter().all(|h| h.manifest.contains("team: a")));
    assert!(
        rel.hooks
            .iter()
            .all(|h| !h.manifest.contains("postrender-filename"))
    );
    let installed: serde_json::Value = serde_json::from_slice(
        &cluster
            .kubectl(&[
                "get",
                "configmap",
                "pc-installed",
                "-n",
                "apps",
                "-o",
                "json",
            ])
            .stdout,
    )
    .unwrap();
    assert_eq!(installed["metadata"]["labels"]["team"], "a", "{installed}");

    // `helm.sh/resource-policy: keep` survives the upgrade that drops it and the uninstall.
    actions
        .upgrade(&t, chart.clone(), values(json!({})), &upgrade_opts())
        .await
        .unwrap();
    assert!(config_map(&client, "apps", "pr-extra").await.is_some());
    actions
        .uninstall(&t, &UninstallOptions::default())
        .await
        .unwrap();
    assert!(!exists(&cluster, "apps", "deployment", "pr"));
    assert!(config_map(&client, "apps", "pr-extra").await.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_policies_on_upgrade() {
    let (cluster, client, actions) = cluster("actions-crd-upgrade").await;
    namespace(&client, "apps").await;
    let t = target("crd", "apps");
    let chart = corpus_chart("crds");
    actions
        .install(&t, chart.clone(), values(json!({})), &install_opts())
        .await
        .unwrap();
    // The next chart version changes a CRD (a short name added).
    let mut next = (*chart).clone();
    for f in next
        .files
        .iter_mut()
        .filter(|f| f.name == "crds/widgets.yaml")
    {
        let text = String::from_utf8_lossy(&f.data).replace(
            "names: {kind: Widget, plural: widgets}",
            "names: {kind: Widget, plural: widgets, shortNames: [wdg]}",
        );
        f.data = text.into_bytes();
    }
    let next = std::sync::Arc::new(next);
    let short_names = || {
        let out = cluster.kubectl(&["get", "crd", "widgets.example.com", "-o", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["spec"]["names"]["shortNames"].clone()
    };
    // Create leaves an existing CRD alone.
    let create = UpgradeOptions {
        crds: CrdPolicy::Create,
        ..upgrade_opts()
    };
    actions
        .upgrade(&t, next.clone(), values(json!({})), &create)
        .await
        .unwrap();
    assert_eq!(short_names(), serde_json::Value::Null);
    // CreateReplace replaces it.
    let replace = UpgradeOptions {
        crds: CrdPolicy::CreateReplace,
        ..upgrade_opts()
    };
    actions
        .upgrade(&t, next.clone(), values(json!({})), &replace)
        .await
        .unwrap();
    assert_eq!(short_names(), json!(["wdg"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn template_and_objects_match_what_is_installed() {
    let (_cluster, client, actions) = cluster("actions-template").await;
    namespace(&client, "apps").await;
    let t = target("tp", "apps");
    let chart = fixture_chart("hooked");
    let vals = values(json!({"replicaCount": 2}));
    let dry = actions
        .template(&t, chart.clone(), vals.clone(), 1, false, None)
        .await
        .unwrap();
    assert_eq!(dry.info.description, "Dry run complete");
    assert!(
        actions
            .storage("apps")
            .history("tp")
            .await
            .unwrap()
            .is_empty()
    );
    let rel = actions
        .install(&t, chart.clone(), vals, &install_opts())
        .await
        .unwrap();
    assert_eq!(dry.manifest, rel.manifest);
    assert_eq!(dry.hooks.len(), rel.hooks.len());
    let objects = actions.objects(&rel).await.unwrap();
    let names: Vec<String> = objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        vec!["ConfigMap/apps/tp-cluster", "Deployment/apps/tp"]
    );
    for o in &objects {
        assert_eq!(
            o["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "Helm"
        );
        assert_eq!(
            o["metadata"]["annotations"]["meta.helm.sh/release-name"],
            "tp"
        );
    }
}

/// Releases rendered at once share one discovery: eight callers wanting Capabilities (as a
/// fleet of HelmReleases created together does) make the requests of one discovery, not eight,
/// and all get the same answer. Counted on the client, every request it sends.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_renders_share_one_discovery() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let (cluster, _client, _) = cluster("actions-discovery").await;
    let sent = Arc::new(AtomicUsize::new(0));
    let versions = Arc::new(AtomicUsize::new(0));
    let counting = {
        let (sent, versions) = (sent.clone(), versions.clone());
        tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
            sent.fetch_add(1, Ordering::SeqCst);
            if req.uri().path() == "/version" {
                versions.fetch_add(1, Ordering::SeqCst);
            }
            req
        })
    };
    let config = cluster.cluster.kube_config().await.unwrap();
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&counting)
        .build();
    let actions = ferroflux_helmrelease::Actions::new(client, crate::support::MANAGER);

    let first = actions.capabilities().await.unwrap();
    let one_discovery = sent.swap(0, Ordering::SeqCst);
    assert!(one_discovery > 2, "{one_discovery} requests");
    assert_eq!(versions.swap(0, Ordering::SeqCst), 1);

    // A second Actions has a cache of its own: eight concurrent callers, one discovery.
    let config = cluster.cluster.kube_config().await.unwrap();
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&counting)
        .build();
    let actions = Arc::new(ferroflux_helmrelease::Actions::new(
        client,
        crate::support::MANAGER,
    ));
    let all = futures_util::future::join_all((0..8).map(|_| {
        let actions = actions.clone();
        async move { actions.capabilities().await.unwrap() }
    }))
    .await;
    assert_eq!(
        versions.load(Ordering::SeqCst),
        1,
        "one /version for eight callers"
    );
    assert_eq!(sent.load(Ordering::SeqCst), one_discovery);
    for caps in &all {
        assert_eq!(caps.api_versions, first.api_versions);
    }
}

/// The Deployment `name`'s ReplicaSets in `ns` (those the devcluster's Deployment controller
/// made for it), as `kubectl get rs` lists them.
async fn replica_sets_of(client: &kube::Client, ns: &str, name: &str) -> Vec<serde_json::Value> {
    let api: Api<k8s_openapi::api::apps::v1::ReplicaSet> = Api::namespaced(client.clone(), ns);
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|rs| serde_json::to_value(rs).unwrap())
        .filter(|rs| {
            rs["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{name}-")))
        })
        .collect()
}

/// `deletionPropagation` (Helm's `--cascade`): `Orphan` leaves the Deployment's ReplicaSet in
/// place, without its owner; the default (`Background`) lets the garbage collector take it.
#[tokio::test(flavor = "multi_thread")]
async fn uninstall_propagates_deletion_as_asked() {
    let (cluster, client, actions) = cluster("actions-cascade").await;
    namespace(&client, "apps").await;
    let chart = fixture_chart("hooked");
    for (release, propagation) in [
        ("orphans", Some(kube::api::PropagationPolicy::Orphan)),
        ("cascades", None),
    ] {
        let t = target(release, "apps");
        actions
            .install(&t, chart.clone(), values(json!({})), &install_opts())
            .await
            .unwrap();
        ferroflux_testkit::eventually(&format!("{release}'s ReplicaSet"), || async {
            (!replica_sets_of(&client, "apps", release).await.is_empty()).then_some(())
        })
        .await;
        actions
            .uninstall(
                &t,
                &UninstallOptions {
                    deletion_propagation: propagation,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert!(!exists(&cluster, "apps", "deployment", release));
    }
    let orphaned = replica_sets_of(&client, "apps", "orphans").await;
    assert_eq!(orphaned.len(), 1, "{orphaned:?}");
    assert!(
        orphaned[0]["metadata"]["ownerReferences"].is_null(),
        "{}",
        orphaned[0]
    );
    ferroflux_testkit::eventually("the cascaded ReplicaSet gone", || async {
        replica_sets_of(&client, "apps", "cascades")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
}

/// Helm's `--reuse-values` (Flux's `upgrade.preserveValues`): an upgrade with only a new
/// replica count keeps the Ingress the previous values turned on; the chart's defaults are the
/// previous release's, so a new chart default is not read (nor is a kept value that a `null`
/// takes out of the release's values: it is a default now); an upgrade without it goes back to
/// the given values over the new chart's defaults.
#[tokio::test(flavor = "multi_thread")]
async fn reuse_values_merges_the_current_release_values_under_the_new_ones() {
    let (cluster, _client, actions) = cluster("actions-reuse").await;
    let chart = corpus_chart("app-basic");
    let t = target("web", "apps");
    let opts = InstallOptions {
        create_namespace: true,
        ..install_opts()
    };
    actions
        .install(
            &t,
            chart.clone(),
            values(json!({"replicaCount": 2, "ingress": {"enabled": true}})),
            &opts,
        )
        .await
        .unwrap();
    let replicas = |cluster: &ferroflux_testkit::Cluster| -> serde_json::Value {
        let deploy: serde_json::Value = serde_json::from_slice(
            &cluster
                .kubectl(&["get", "deployment", "web-app", "-n", "apps", "-o", "json"])
                .stdout,
        )
        .unwrap();
        deploy["spec"]["replicas"].clone()
    };
    // The next chart version defaults to a port the previous one did not have.
    let mut next = (*chart).clone();
    next.values
        .insert("service".into(), json!({"type": "ClusterIP", "port": 9999}));
    let next = std::sync::Arc::new(next);
    let reuse = UpgradeOptions {
        reuse_values: true,
        ..upgrade_opts()
    };
    let rel = actions
        .upgrade(&t, next.clone(), values(json!({"replicaCount": 3})), &reuse)
        .await
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(rel.config.clone()),
        json!({"replicaCount": 3, "ingress": {"enabled": true}})
    );
    assert_eq!(replicas(&cluster), 3);
    assert!(exists(&cluster, "apps", "ingress", "web-app"));
    assert!(
        !rel.manifest.contains("9999"),
        "the previous release's defaults are used, not the new chart's"
    );

    // A null in the new values deletes the kept value from the release's values, but, as in
    // Helm, not from the defaults the previous release's values became: the Ingress stays.
    let rel = actions
        .upgrade(&t, next.clone(), values(json!({"ingress": null})), &reuse)
        .await
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(rel.config.clone()),
        json!({"replicaCount": 3})
    );
    assert!(exists(&cluster, "apps", "ingress", "web-app"));

    // Without it, only the given values count, over the new chart's defaults.
    let rel = actions
        .upgrade(&t, next, values(json!({})), &upgrade_opts())
        .await
        .unwrap();
    assert!(rel.config.is_empty());
    assert_eq!(replicas(&cluster), 1);
    assert!(!exists(&cluster, "apps", "ingress", "web-app"));
    assert!(rel.manifest.contains("9999"));
}
