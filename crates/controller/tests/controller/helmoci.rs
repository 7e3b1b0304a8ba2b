//! Helm charts in an OCI registry, end to end on a devcluster with the controller manager and
//! Debian's docker-registry (htpasswd): a `type: oci` HelmRepository (Ready, no artifact), a
//! HelmChart pulling a semver range and an exact version from it (the stored chart is the
//! pushed archive byte for byte), a HelmRelease installing it through its chart template, and
//! the bad inputs of issues 15/16: no tag in the range (closest tags listed), an unknown tag, a
//! manifest that is not a chart, wrong credentials (401 named, password never shown), and
//! `spec.verify` (refused, nothing served).

use ferroflux_api::{FluxObject, HelmChart, HelmRelease, HelmRepository};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_helmsource::oci::{OciRepository, push_chart};
use ferroflux_oci::{Auth, ClientOptions};
use ferroflux_testkit::{Registry, RegistryOptions, eventually, flux_cluster};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::path::Path;

/// The corpus' app-basic chart packaged at `version`.
pub(crate) fn packaged_chart(version: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../helm/tests/corpus/app-basic/chart");
    let mut files = ferroflux_helm::dir_files(&root).unwrap();
    for f in files.iter_mut().filter(|f| f.name == "Chart.yaml") {
        f.data = String::from_utf8(f.data.clone())
            .unwrap()
            .replace("version: 1.2.3", &format!("version: {version}"))
            .into_bytes();
    }
    ferroflux_helmsource::package("app", &files).unwrap()
}

/// Pushes `app` at each version to `oci://<registry>/charts`; returns the archives.
pub(crate) fn push_charts(reg: &Registry, auth: Auth, versions: &[&str]) -> Vec<Vec<u8>> {
    let repo = OciRepository::new(
        &format!("oci://{}/charts", reg.host()),
        ClientOptions {
            auth,
            ..Default::default()
        },
    )
    .unwrap();
    versions
        .iter()
        .map(|v| {
            let data = packaged_chart(v);
            push_chart(&repo, &data).unwrap();
            data
        })
        .collect()
}

fn ready<K: FluxObject>(obj: &K) -> Option<(String, String, String)> {
    let c = obj.conditions().iter().find(|c| c.type_ == "Ready")?;
    (obj.observed_generation() == obj.meta().generation)
        .then(|| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

async fn wait_ready<K: FluxObject>(
    api: &Api<K>,
    name: &str,
    status: &str,
    reason: &str,
) -> (K, String) {
    eventually(&format!("{name} Ready={status} {reason}"), || async {
        let obj = api.get(name).await.ok()?;
        let (s, r, m) = ready(&obj)?;
        (s == status && r == reason).then_some((obj, m))
    })
    .await
}

async fn set_spec<K: FluxObject>(api: &Api<K>, name: &str, spec: serde_json::Value) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "spec": spec })),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_from_an_oci_helm_repository() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "chart-pass".into())),
        ..Default::default()
    });
    let auth = Auth::Basic {
        username: "flux".into(),
        password: "chart-pass".into(),
    };
    let archives = push_charts(
        &reg,
        auth.clone(),
        &["1.2.3", "1.3.0", "2.0.0-rc.1+build.7"],
    );
    // A Flux artifact (not a chart) under the chart's repository, tagged like a version.
    {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "a: 1\n").unwrap();
        let c = ferroflux_oci::Client::new(
            &reg.host(),
            ClientOptions {
                auth,
                ..Default::default()
            },
        )
        .unwrap();
        let r = ferroflux_oci::Reference::parse(&format!("oci://{}/charts/app:0.9.0", reg.host()))
            .unwrap();
        ferroflux_oci::artifact::push(
            &c,
            &r,
            dir.path(),
            &ferroflux_oci::artifact::Metadata::default(),
            &|_: &Path, _| false,
        )
        .unwrap();
    }

    let (_cluster, client) = flux_cluster("helmoci").await;
    let config = _cluster.kube_config().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let _manager = Manager::start(
        client.clone(),
        config,
        ManagerConfig::local(work.path().join("storage")),
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let secret = |password: &str| -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": "registry-auth", "namespace": "flux-system"},
            "stringData": {"username": "flux", "password": password}
        }))
        .unwrap()
    };
    secrets
        .create(&PostParams::default(), &secret("chart-pass"))
        .await
        .unwrap();
    let repos: Api<HelmRepository> = Api::namespaced(client.clone(), "flux-system");
    let repo: HelmRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
        "metadata": {"name": "charts", "namespace": "flux-system"},
        "spec": {"type": "oci", "url": format!("oci://{}/charts", reg.host()),
                 "interval": "1h", "secretRef": {"name": "registry-auth"}}
    }))
    .unwrap();
    repos.create(&PostParams::default(), &repo).await.unwrap();
    let (repo, _) = wait_ready(&repos, "charts", "True", "Succeeded").await;
    assert!(
        repo.status.unwrap().artifact.is_none(),
        "an OCI HelmRepository keeps no artifact"
    );

    // A range: the highest tag in it, the pushed archive as is.
    let charts: Api<HelmChart> = Api::namespaced(client.clone(), "flux-system");
    let chart: HelmChart = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"chart": "app", "version": "~1.2", "interval": "1h",
                 "sourceRef": {"kind": "HelmRepository", "name": "charts"}}
    }))
    .unwrap();
    charts.create(&PostParams::default(), &chart).await.unwrap();
    let (chart, msg) = wait_ready(&charts, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '1.2.3'");
    let status = chart.status.clone().unwrap();
    let artifact = status.artifact.clone().unwrap();
    assert_eq!(artifact.revision, "1.2.3");
    assert_eq!(artifact.path, "helmchart/flux-system/app/app-1.2.3.tgz");
    assert_eq!(status.observed_source_artifact_revision, None);
    let served = ferroflux_controller::artifact::download(&artifact.url, 1 << 20)
        .await
        .unwrap();
    assert_eq!(
        served, archives[0],
        "the stored chart is the pushed archive"
    );

    // No range: the highest stable version; a pre-release with build metadata by its range
    // (its tag holds `_` for `+`, as Helm writes it).
    set_spec(&charts, "app", json!({"version": "*"})).await;
    let (_, msg) = wait_ready(&charts, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '1.3.0'");
    set_spec(&charts, "app", json!({"version": ">=2.0.0-0"})).await;
    let (chart, msg) = wait_ready(&charts, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '2.0.0-rc.1+build.7'");
    let a = chart.status.unwrap().artifact.unwrap();
    let served = ferroflux_controller::artifact::download(&a.url, 1 << 20)
        .await
        .unwrap();
    assert_eq!(served, archives[2]);

    // No tag in the range: stalled, the closest tags listed, the last chart kept.
    set_spec(&charts, "app", json!({"version": ">=3.0.0"})).await;
    let (chart, msg) = wait_ready(&charts, "app", "False", "InvalidChartReference").await;
    assert!(
        msg.contains("could not locate a version matching provided version string >=3.0.0")
            && msg.contains("closest tags: 2.0.0-rc.1+build.7, 1.3.0, 1.2.3, 0.9.0"),
        "{msg}"
    );
    assert!(
        chart
            .conditions()
            .iter()
            .any(|c| c.type_ == "Stalled" && c.status == "True")
    );
    assert_eq!(
        chart.status.unwrap().artifact.unwrap().revision,
        "2.0.0-rc.1+build.7"
    );

    // An exact version that is not there: the registry's 404, with the closest tags.
    set_spec(&charts, "app", json!({"version": "1.2.4"})).await;
    let (_, msg) = wait_ready(&charts, "app", "False", "ChartPullError").await;
    assert!(
        msg.starts_with(&format!(
            "chart pull error: failed to download chart for remote reference: failed to get 'oci://{}/charts/app:1.2.4': ",
            reg.host()
        )) && msg.contains("not found") && msg.contains("1.2.3"),
        "{msg}"
    );

    // A tag holding something other than a chart.
    set_spec(&charts, "app", json!({"version": "0.9.0"})).await;
    let (_, msg) = wait_ready(&charts, "app", "False", "ChartPullError").await;
    assert!(
        msg.contains("is not a Helm chart: its config has media type \"application/vnd.cncf.flux.config.v1+json\""),
        "{msg}"
    );

    // Wrong credentials: 401 named, the password never shown.
    set_spec(&charts, "app", json!({"version": "1.3.0"})).await;
    wait_ready(&charts, "app", "True", "Succeeded").await;
    secrets
        .replace(
            "registry-auth",
            &PostParams::default(),
            &secret("wrong-pass"),
        )
        .await
        .unwrap();
    set_spec(&charts, "app", json!({"version": "1.2.3"})).await;
    let (chart, msg) = wait_ready(&charts, "app", "False", "AuthenticationFailed").await;
    assert!(
        msg.starts_with("failed to authenticate with the Helm repository: 401 Unauthorized"),
        "{msg}"
    );
    assert!(
        !msg.contains("wrong-pass") && !msg.contains("chart-pass"),
        "{msg}"
    );
    assert!(
        chart
            .conditions()
            .iter()
            .any(|c| c.type_ == "FetchFailed" && c.status == "True")
    );
    secrets
        .replace(
            "registry-auth",
            &PostParams::default(),
            &secret("chart-pass"),
        )
        .await
        .unwrap();
    set_spec(&charts, "app", json!({"interval": "30m"})).await;
    let (_, msg) = wait_ready(&charts, "app", "True", "Succeeded").await;
    assert_eq!(msg, "pulled 'app' chart with version '1.2.3'");

    // verify: refused with source-controller's reason; the chart is no longer served.
    set_spec(&charts, "app", json!({"verify": {"provider": "cosign"}})).await;
    let (chart, msg) = wait_ready(&charts, "app", "False", "VerificationError").await;
    assert!(
        msg.starts_with("failed to verify the signature using provider 'cosign keyless': signature verification is not supported yet"),
        "{msg}"
    );
    let verified = chart
        .conditions()
        .iter()
        .find(|c| c.type_ == "SourceVerified")
        .cloned()
        .unwrap();
    assert_eq!(
        (verified.status.as_str(), verified.reason.as_str()),
        ("False", "VerificationError")
    );
    assert!(
        chart.status.unwrap().artifact.is_none(),
        "an unverified chart is not served"
    );

    // A HelmRelease installs a chart of the OCI repository through its chart template.
    let releases: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    let hr: HelmRelease = serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "flux-system"},
        "spec": {"interval": "10m", "timeout": "30s",
            "chart": {"spec": {"chart": "app", "version": "1.3.0",
                "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}
    }))
    .unwrap();
    releases.create(&PostParams::default(), &hr).await.unwrap();
    let (_, msg) = wait_ready(&releases, "web", "True", "InstallSucceeded").await;
    assert_eq!(
        msg,
        "Helm install succeeded for release flux-system/web.v1 with chart app@1.3.0"
    );
    let stored = secrets
        .list(&kube::api::ListParams::default().labels("owner=helm,name=web"))
        .await
        .unwrap()
        .items;
    assert_eq!(stored.len(), 1, "one Helm storage Secret for web.v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helm_release_from_an_oci_repository_chart_ref() {
    let reg = Registry::start(RegistryOptions::default());
    push_charts(&reg, Auth::Anonymous, &["1.2.3", "1.3.0"]);
    let (cluster, client) = flux_cluster("hrociref").await;
    let config = cluster.kube_config().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let _manager = Manager::start(
        client.clone(),
        config,
        ManagerConfig::local(work.path().join("storage")),
    )
    .await
    .unwrap();
    let ocis: Api<ferroflux_api::OCIRepository> = Api::namespaced(client.clone(), "flux-system");
    let oci: ferroflux_api::OCIRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"url": format!("oci://{}/charts/app", reg.host()), "interval": "1h",
            "ref": {"semver": ">=1.0.0"},
            "layerSelector": {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                "operation": "copy"}}
    }))
    .unwrap();
    ocis.create(&PostParams::default(), &oci).await.unwrap();
    let (oci, _) = wait_ready(&ocis, "app", "True", "Succeeded").await;
    let revision = oci.status.unwrap().artifact.unwrap().revision;
    let digest = revision.strip_prefix("1.3.0@").unwrap().to_string();
    let hex12 = &digest["sha256:".len().."sha256:".len() + 12];

    let releases: Api<HelmRelease> = Api::namespaced(client.clone(), "flux-system");
    let hr: HelmRelease = serde_json::from_value(json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "flux-system"},
        "spec": {"interval": "10m", "timeout": "30s",
            "chartRef": {"kind": "OCIRepository", "name": "app"}}
    }))
    .unwrap();
    releases.create(&PostParams::default(), &hr).await.unwrap();
    let (hr, msg) = wait_ready(&releases, "web", "True", "InstallSucceeded").await;
    assert_eq!(
        msg,
        format!(
            "Helm install succeeded for release flux-system/web.v1 with chart app@1.3.0+{hex12}"
        )
    );
    let status = hr.status.unwrap();
    assert_eq!(
        status.last_attempted_revision.as_deref(),
        Some(format!("1.3.0+{hex12}").as_str())
    );
    assert_eq!(
        status.last_attempted_revision_digest.as_deref(),
        Some(digest.as_str())
    );
    let latest = &status.history.as_ref().unwrap()[0];
    assert_eq!(latest.chart_version, format!("1.3.0+{hex12}"));
    assert_eq!(latest.oci_digest.as_deref(), Some(digest.as_str()));

    // A new version in the registry: the OCIRepository follows it and the release upgrades.
    push_charts(&reg, Auth::Anonymous, &["1.4.0"]);
    ocis.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(
            &json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "1"}}}),
        ),
    )
    .await
    .unwrap();
    let (_, msg) = wait_ready(&releases, "web", "True", "UpgradeSucceeded").await;
    assert!(msg.contains("with chart app@1.4.0+"), "{msg}");

    // verify on the OCIRepository: refused, the artifact withdrawn, the release left as it is.
    set_spec(
        &ocis,
        "app",
        json!({"verify": {"provider": "notation", "secretRef": {"name": "trust"}}}),
    )
    .await;
    let (oci, msg) = wait_ready(&ocis, "app", "False", "VerificationError").await;
    assert!(
        msg.starts_with("failed to verify the signature using provider 'notation': signature verification is not supported yet"),
        "{msg}"
    );
    assert!(oci.status.as_ref().unwrap().artifact.is_none());
    let verified = oci
        .conditions()
        .iter()
        .find(|c| c.type_ == "SourceVerified")
        .cloned()
        .unwrap();
    assert_eq!(
        (verified.status.as_str(), verified.reason.as_str()),
        ("False", "VerificationError")
    );
    releases
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"values": {"replicaCount": 3}}})),
        )
        .await
        .unwrap();
    // (a source that is not ready leaves observedGeneration as it was, as in helm-controller)
    let msg = eventually("web waits for its source", || async {
        let hr = releases.get("web").await.ok()?;
        let c = hr.conditions().iter().find(|c| c.type_ == "Ready")?.clone();
        (c.status == "False" && c.reason == "SourceNotReady").then_some(c.message)
    })
    .await;
    assert!(
        msg.starts_with(
            "OCIRepository 'flux-system/app' is not ready: failed to verify the signature"
        ),
        "{msg}"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let stored = secrets
        .list(&kube::api::ListParams::default().labels("owner=helm,name=web"))
        .await
        .unwrap()
        .items;
    assert_eq!(
        stored.len(),
        2,
        "nothing installed from the unverified source"
    );
}
