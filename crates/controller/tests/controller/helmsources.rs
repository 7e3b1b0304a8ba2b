//! HelmRepository and HelmChart on a devcluster with the real controller process: a chart
//! repository served by testkit's static file server (basic auth) holding charts packaged from
//! crates/helm's corpus, and a chart in a Git repository served by `git http-backend`. The
//! artifact server must serve the right chart; each bad input of issue 15 must name the
//! problem in Ready's message and keep the last artifact.

use ferroflux_api::{FluxObject, HelmChart, HelmRepository};
use ferroflux_controller::helmrepository::{Options as HelmOptions, reconcile as reconcile_repo};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::{Auth, GitHttpServer, StaticServer, eventually, git};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::{Path, PathBuf};

async fn cluster(name: &str) -> (RunningCluster, kube::Client, kube::Config) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    install_crds(&client).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let config = cluster.kube_config().await.unwrap();
    (cluster, client, config)
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus")
        .join(name)
        .join("chart")
}

/// A chart repository directory: the corpus' app-basic chart at 1.2.3 and 1.3.0.
fn chart_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = String::new();
    for v in ["1.2.3", "1.3.0"] {
        let mut files = ferroflux_helm::dir_files(&corpus("app-basic")).unwrap();
        for f in files.iter_mut().filter(|f| f.name == "Chart.yaml") {
            f.data = String::from_utf8(f.data.clone())
                .unwrap()
                .replace("version: 1.2.3", &format!("version: {v}"))
                .into_bytes();
        }
        let data = ferroflux_helmsource::package("app", &files).unwrap();
        std::fs::write(dir.path().join(format!("app-{v}.tgz")), data).unwrap();
        entries.push_str(&format!(
            "    - name: app\n      version: {v}\n      urls: [app-{v}.tgz]\n"
        ));
    }
    std::fs::write(
        dir.path().join("index.yaml"),
        format!("apiVersion: v1\nentries:\n  app:\n{entries}"),
    )
    .unwrap();
    dir
}

fn ready<K: ferroflux_api::FluxObject>(obj: &K) -> Option<(String, String, String)> {
    let c = obj.conditions().iter().find(|c| c.type_ == "Ready")?;
    (obj.observed_generation() == obj.meta().generation)
        .then(|| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until Ready has `status` and `reason` at the object's current generation.
async fn wait_ready<K: ferroflux_api::FluxObject>(
    api: &Api<K>,
    name: &str,
    status: &str,
    reason: &str,
) -> (K, String) {
    eventually(&format!("{name} Ready={status} {reason}"), || async {
        let obj = api.get(name).await.ok()?;
        let got = ready(&obj);
        if std::env::var_os("HELMSRC_DEBUG").is_some() {
            eprintln!("{name}: {got:?} {:?}", obj.conditions());
        }
        let (s, r, m) = got?;
        (s == status && r == reason).then_some((obj, m))
    })
    .await
}

async fn request_reconcile<K: ferroflux_api::FluxObject>(api: &Api<K>, name: &str, token: &str) {
    let patch = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn handled<K: ferroflux_api::FluxObject>(api: &Api<K>, name: &str, token: &str) -> K {
    eventually(&format!("{name} handled {token}"), || async {
        let obj = api.get(name).await.ok()?;
        (obj.last_handled_reconcile_at() == Some(token)).then_some(obj)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_from_a_repository_and_from_git_reach_ready_and_bad_input_keeps_the_artifact() {
    let (_cluster, client, config) = cluster("helmsrc").await;
    let repo_dir = chart_repository();
    let charts = StaticServer::start(
        repo_dir.path(),
        Auth::Basic("fluxuser".into(), "s3cret".into()),
        None,
    );
    let work = tempfile::tempdir().unwrap();
    let manager = Manager::start(
        client.clone(),
        config,
        ManagerConfig::local(work.path().join("storage")),
    )
    .await
    .unwrap();

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let secret = |password: &str| -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": "charts-auth", "namespace": "flux-system"},
            "stringData": {"username": "fluxuser", "password": password}
        }))
        .unwrap()
    };
    secrets
        .create(&PostParams::default(), &secret("s3cret"))
        .await
        .unwrap();
    let repos: Api<HelmRepository> = Api::namespaced(client.clone(), "flux-system");
    let repo: HelmRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
        "metadata": {"name": "charts", "namespace": "flux-system"},
        "spec": {"url": charts.url(), "interval": "1h", "secretRef": {"name": "charts-auth"}}
    }))
    .unwrap();
    repos.create(&PostParams::default(), &repo).await.unwrap();
    let (repo, msg) = wait_ready(&repos, "charts", "True", "Succeeded").await;
    let index = std::fs::read(repo_dir.path().join("index.yaml")).unwrap();
    let revision = ferroflux_helmsource::sha256_digest(&index);
    assert_eq!(msg, format!("stored artifact: revision '{revision}'"));
    let status = repo.status.clone().unwrap();
    let artifact = status.artifact.unwrap();
    assert!(
        artifact
            .path
            .starts_with("helmrepository/flux-system/charts/index-")
    );
    let served = ferroflux_controller::artifact::download(&artifact.url, 1 << 20)
        .await
        .unwrap();
    assert_eq!(served, index, "the index artifact is the index as fetched");
    assert!(
        status
            .url
            .unwrap()
            .ends_with("/helmrepository/flux-system/charts/index.yaml")
    );

    let charts_api: Api<HelmChart> = Api::namespaced(client.clone(), "flux-system");
    let chart: HelmChart = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"chart": "app", "version": "~1.2", "interval": "1h",
                 "sourceRef": {"kind": "HelmRepository", "name": "charts"}}
    }))
    .unwrap();
    charts_api
        .create(&PostParams::default(), &chart)
        .await
        .unwrap();
    let (chart, msg) = wait_ready(&charts_api, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '1.2.3'");
    let status = chart.status.clone().unwrap();
    let artifact = status.artifact.clone().unwrap();
    assert_eq!(artifact.revision, "1.2.3");
    assert_eq!(artifact.path, "helmchart/flux-system/app/app-1.2.3.tgz");
    assert_eq!(status.observed_chart_name.as_deref(), Some("app"));
    assert_eq!(
        status.observed_source_artifact_revision.as_deref(),
        Some(revision.as_str())
    );
    let served = ferroflux_controller::artifact::download(&artifact.url, 1 << 20)
        .await
        .unwrap();
    assert_eq!(
        served,
        std::fs::read(repo_dir.path().join("app-1.2.3.tgz")).unwrap()
    );
    let latest = ferroflux_controller::artifact::download(&status.url.unwrap(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(latest, served);

    // A version the index does not have: stalled with what the index has, artifact kept.
    let patch = json!({"spec": {"version": ">=2.0.0"}});
    charts_api
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let (chart, msg) = wait_ready(&charts_api, "app", "False", "InvalidChartReference").await;
    assert_eq!(
        msg,
        "invalid chart reference: failed to get chart version for remote reference: no 'app' chart with version matching '>=2.0.0' found (versions in the index: 1.3.0, 1.2.3)"
    );
    assert!(
        chart
            .conditions()
            .iter()
            .any(|c| c.type_ == "Stalled" && c.status == "True")
    );
    assert!(
        chart
            .conditions()
            .iter()
            .any(|c| c.type_ == "BuildFailed" && c.status == "True")
    );
    assert_eq!(
        chart.artifact().unwrap().revision,
        "1.2.3",
        "the last chart is still named"
    );
    ferroflux_controller::artifact::download(&chart.artifact().unwrap().url, 1 << 20)
        .await
        .unwrap();

    // A chart the index does not have.
    let patch = json!({"spec": {"chart": "podinfo", "version": "*"}});
    charts_api
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let (_, msg) = wait_ready(&charts_api, "app", "False", "InvalidChartReference").await;
    assert!(
        msg.ends_with("no chart name found: 'podinfo' is not in the index (charts: app)"),
        "{msg}"
    );

    // Back to the latest: 1.3.0.
    let patch = json!({"spec": {"chart": "app", "version": "*"}});
    charts_api
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let (chart, msg) = wait_ready(&charts_api, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '1.3.0'");
    assert_eq!(chart.artifact().unwrap().revision, "1.3.0");

    // Wrong credentials: 401 named, the password never printed, the index kept.
    secrets
        .replace(
            "charts-auth",
            &PostParams::default(),
            &secret("wrong-password"),
        )
        .await
        .unwrap();
    request_reconcile(&repos, "charts", "creds").await;
    let repo = handled(&repos, "charts", "creds").await;
    let (s, r, msg) = ready(&repo).unwrap();
    assert_eq!((s.as_str(), r.as_str()), ("False", "Failed"));
    assert_eq!(
        msg,
        format!(
            "failed to fetch Helm repository index: failed to fetch {}/index.yaml : 401 Unauthorized",
            charts.url()
        )
    );
    assert!(!msg.contains("wrong-password"));
    assert_eq!(repo.status.unwrap().artifact.unwrap().revision, revision);

    // A malformed index.
    secrets
        .replace("charts-auth", &PostParams::default(), &secret("s3cret"))
        .await
        .unwrap();
    std::fs::write(
        repo_dir.path().join("index.yaml"),
        "apiVersion: v1\nentries:\n  app: [\n",
    )
    .unwrap();
    request_reconcile(&repos, "charts", "malformed").await;
    let repo = handled(&repos, "charts", "malformed").await;
    let (s, r, msg) = ready(&repo).unwrap();
    assert_eq!((s.as_str(), r.as_str()), ("False", "IndexationFailed"));
    assert!(
        msg.starts_with(&format!(
            "failed to load Helm repository from index YAML: {}/index.yaml: ",
            charts.url()
        )),
        "{msg}"
    );
    assert_eq!(repo.status.unwrap().artifact.unwrap().revision, revision);

    // An oversized index (a controller with a 64-byte limit): named, the artifact kept.
    std::fs::write(repo_dir.path().join("index.yaml"), &index).unwrap();
    let storage =
        ferroflux_source::Storage::new(work.path().join("storage"), manager.storage_url()).unwrap();
    let small = HelmOptions {
        max_index_size: 64,
        ..HelmOptions::new(storage)
    };
    manager.shutdown().await.unwrap();
    reconcile_repo(&client, &small, "flux-system", "charts")
        .await
        .unwrap();
    let repo = repos.get("charts").await.unwrap();
    let (s, r, msg) = ready(&repo).unwrap();
    assert_eq!((s.as_str(), r.as_str()), ("False", "Failed"));
    assert_eq!(
        msg,
        format!(
            "failed to fetch Helm repository index: {}/index.yaml is larger than the maximum size of 64 bytes",
            charts.url()
        )
    );
    assert_eq!(repo.status.unwrap().artifact.unwrap().revision, revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_from_a_git_repository_with_values_files_and_revision_strategy() {
    let (_cluster, client, config) = cluster("helmgit").await;
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("fleet");
    for f in ferroflux_helm::dir_files(&corpus("app-basic")).unwrap() {
        let p = repo.join("charts/app").join(&f.name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, f.data).unwrap();
    }
    std::fs::write(
        repo.join("charts/app/values-prod.yaml"),
        "replicaCount: 7\n",
    )
    .unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "chart"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let served = work.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    git(
        &served,
        &["clone", "-q", "--bare", repo.to_str().unwrap(), "fleet.git"],
    );
    let server = GitHttpServer::start(&served, Auth::None, None);

    let manager = Manager::start(
        client.clone(),
        config,
        ManagerConfig::local(work.path().join("storage")),
    )
    .await
    .unwrap();
    let gitrepos: Api<ferroflux_api::GitRepository> =
        Api::namespaced(client.clone(), "flux-system");
    let g: ferroflux_api::GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "flux-system"},
        "spec": {"url": server.url("fleet"), "interval": "1h", "ref": {"branch": "main"}}
    }))
    .unwrap();
    gitrepos.create(&PostParams::default(), &g).await.unwrap();
    let charts_api: Api<HelmChart> = Api::namespaced(client.clone(), "flux-system");
    let chart: HelmChart = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"chart": "./charts/app", "interval": "1h", "reconcileStrategy": "Revision",
                 "valuesFiles": ["charts/app/values.yaml", "charts/app/values-prod.yaml", "charts/app/missing.yaml"],
                 "ignoreMissingValuesFiles": true,
                 "sourceRef": {"kind": "GitRepository", "name": "fleet"}}
    }))
    .unwrap();
    charts_api
        .create(&PostParams::default(), &chart)
        .await
        .unwrap();
    let (chart, msg) = wait_ready(&charts_api, "app", "True", "Succeeded").await;
    let generation = chart.metadata.generation.unwrap();
    let version = format!("1.2.3+{}.{generation}", &head[..12]);
    assert_eq!(
        msg,
        format!(
            "packaged 'app' chart with version '{version}' and merged values files [charts/app/values.yaml charts/app/values-prod.yaml]"
        )
    );
    let status = chart.status.clone().unwrap();
    assert_eq!(
        status.observed_values_files,
        Some(vec![
            "charts/app/values.yaml".to_string(),
            "charts/app/values-prod.yaml".to_string()
        ])
    );
    assert_eq!(
        status.observed_source_artifact_revision,
        Some(format!("main@sha1:{head}"))
    );
    let artifact = status.artifact.unwrap();
    assert_eq!(artifact.revision, version);
    assert_eq!(
        artifact.path,
        format!("helmchart/flux-system/app/app-{version}.tgz")
    );
    let data = ferroflux_controller::artifact::download(&artifact.url, 1 << 20)
        .await
        .unwrap();
    let loaded = ferroflux_helm::load_archive(&data).unwrap();
    assert_eq!(loaded.metadata.version, version);
    assert_eq!(loaded.values["replicaCount"].as_f64(), Some(7.0));
    assert!(loaded.values.contains_key("image"));

    // Built once per change: neither the chart's own status writes nor the GitRepository's
    // status writes without a new artifact reconcile it again. After one requested pass to
    // settle, a requested reconcile of the source (same revision) then one of the chart add
    // exactly one pass.
    let passes = || {
        let series = "gotk_reconcile_duration_seconds_count{kind=\"HelmChart\",name=\"app\",namespace=\"flux-system\"} ";
        manager
            .metrics()
            .lines()
            .find_map(|l| l.strip_prefix(series))
            .map(|n| n.trim().parse::<u64>().unwrap())
            .unwrap_or(0)
    };
    request_reconcile(&charts_api, "app", "settle").await;
    handled(&charts_api, "app", "settle").await;
    let before = passes();
    request_reconcile(&gitrepos, "fleet", "same-revision").await;
    handled(&gitrepos, "fleet", "same-revision").await;
    request_reconcile(&charts_api, "app", "witness").await;
    handled(&charts_api, "app", "witness").await;
    assert_eq!(passes(), before + 1, "passes of HelmChart app");

    // A path that is not in the artifact: named, the chart kept.
    let patch = json!({"spec": {"chart": "charts/nope"}});
    charts_api
        .patch("app", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let (chart, msg) = wait_ready(&charts_api, "app", "False", "InvalidChartReference").await;
    assert_eq!(
        msg,
        "invalid chart reference: path 'charts/nope' does not exist in the source artifact"
    );
    assert_eq!(chart.artifact().unwrap().revision, version);
    manager.shutdown().await.unwrap();
}
