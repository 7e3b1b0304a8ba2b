//! The Bucket reconciler against a real API server (the devcluster) and a real S3 server
//! (s3s-fs, checking SigV4), then a Kustomization applying what it stored: the revision, the
//! no-op poll, an object that changes, wrong keys (the last artifact kept, nothing applied or
//! pruned), an unknown bucket, an unreachable endpoint, HTTPS with a CA from
//! `certSecretRef`, a cloud provider refused, suspend and deletion; a HelmChart and an
//! ArtifactGenerator whose source is a Bucket.

use ferroflux_api::{Bucket, Kustomization};
use ferroflux_controller::bucket::{Options, reconcile};
use ferroflux_source::Storage;
use ferroflux_testkit::S3Server;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness;

fn condition(obj: &Bucket, t: &str) -> (String, String, String) {
    let c = obj
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == t))
        .unwrap_or_else(|| panic!("no {t} condition in {:?}", obj.status));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

fn bucket(name: &str, spec: serde_json::Value) -> Bucket {
    serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "Bucket",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": spec,
    }))
    .unwrap()
}

fn config_map(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bucket-config\n  namespace: default\ndata:\n  version: \"{version}\"\n"
    )
}

async fn keys_secret(client: &kube::Client, name: &str, ak: &str, sk: &str) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "flux-system"},
        "stringData": {"accesskey": ak, "secretkey": sk}
    }))
    .unwrap();
    secrets
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&secret),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_follows_changes_refuses_bad_keys_and_feeds_a_kustomization() {
    let s3 = S3Server::start();
    s3.create_bucket("fleet");
    s3.put("fleet", "apps/configmap.yaml", config_map("1"));
    s3.put("fleet", "apps/README.md", "left out by spec.ignore\n");
    s3.put("fleet", "other/ignored.yaml", "outside the prefix\n");
    let env = harness::start("bucket").await;
    let client = env.client.clone();

    let store = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(ferroflux_source::serve(
        store.path().to_path_buf(),
        listener,
    ));
    let settings = Options {
        storage: Storage::new(store.path(), &base).unwrap(),
    };
    keys_secret(&client, "s3-keys", &s3.access_key, &s3.secret_key).await;
    let api: Api<Bucket> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &bucket(
            "fleet",
            json!({
                "bucketName": "fleet", "endpoint": s3.endpoint(), "insecure": true,
                "interval": "5m", "prefix": "apps/", "ignore": "*.md",
                "secretRef": {"name": "s3-keys"}
            }),
        ),
    )
    .await
    .unwrap();

    let done = reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    let event = done.event.unwrap();
    assert_eq!(
        (event.1.as_str(), event.2.as_str()),
        (
            "NewArtifact",
            "stored artifact with 1 fetched files from 'fleet' bucket"
        )
    );
    let got = api.get("fleet").await.unwrap();
    let artifact = got.status.as_ref().unwrap().artifact.clone().unwrap();
    assert!(artifact.revision.starts_with("sha256:"), "{artifact:?}");
    assert_eq!(
        condition(&got, "Ready"),
        (
            "True".into(),
            "Succeeded".into(),
            format!("stored artifact: revision '{}'", artifact.revision)
        )
    );
    assert_eq!(
        artifact.path,
        format!(
            "bucket/flux-system/fleet/{}.tar.gz",
            artifact.revision.trim_start_matches("sha256:")
        )
    );
    assert!(
        got.metadata
            .finalizers
            .unwrap()
            .contains(&"finalizers.fluxcd.io".to_string())
    );

    // A Kustomization from the Bucket applies the object at its full key's path.
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = harness::kustomization(
        "fleet",
        "fleet",
        json!({"sourceRef": {"kind": "Bucket", "name": "fleet"}, "path": "./apps"}),
    );
    kss.create(&PostParams::default(), &ks).await.unwrap();
    let first = artifact.revision.clone();
    harness::ready_message(&kss, "fleet", "applied the bucket", |m| m.contains(&first)).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        cms.get("bucket-config").await.unwrap().data.unwrap()["version"],
        "1"
    );

    // The no-op poll: nothing new, no event.
    let again = reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert!(again.event.is_none());
    assert_eq!(
        api.get("fleet")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .unwrap()
            .revision,
        first
    );

    // An object changes: the revision moves and the Kustomization applies it.
    s3.put("fleet", "apps/configmap.yaml", config_map("2"));
    let moved = reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert_eq!(moved.event.unwrap().1, "NewArtifact");
    let second = api
        .get("fleet")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap()
        .revision;
    assert_ne!(second, first);
    harness::ready_message(&kss, "fleet", "applied the change", |m| m.contains(&second)).await;
    assert_eq!(
        cms.get("bucket-config").await.unwrap().data.unwrap()["version"],
        "2"
    );

    // Wrong keys: Ready=False with Flux's reason and message, the last artifact kept, and the
    // Kustomization keeps what it applied (nothing pruned).
    keys_secret(&client, "s3-keys", &s3.access_key, "not-the-secret").await;
    s3.put("fleet", "apps/configmap.yaml", config_map("3"));
    let failed = reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert_eq!(failed.event.unwrap().0, "Warning");
    let got = api.get("fleet").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "BucketOperationFailed".into(),
            "failed to confirm existence of 'fleet' bucket: Access Denied.".into()
        )
    );
    assert_eq!(condition(&got, "FetchFailed").0, "True");
    assert_eq!(got.status.unwrap().artifact.unwrap().revision, second);
    assert_eq!(
        cms.get("bucket-config").await.unwrap().data.unwrap()["version"],
        "2"
    );
    // A Secret without the keys: AuthenticationFailed, as source-controller says it.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "no-keys", "namespace": "flux-system"},
                "stringData": {"username": "x"}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    api.patch(
        "fleet",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"secretRef": {"name": "no-keys"}}})),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert_eq!(
        condition(&api.get("fleet").await.unwrap(), "Ready"),
        (
            "False".into(),
            "AuthenticationFailed".into(),
            "invalid 'no-keys' secret data: required fields 'accesskey' and 'secretkey'".into()
        )
    );

    // Suspended: the pass does nothing, whatever the bucket holds.
    api.patch(
        "fleet",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true, "secretRef": {"name": "s3-keys"}}})),
    )
    .await
    .unwrap();
    keys_secret(&client, "s3-keys", &s3.access_key, &s3.secret_key).await;
    let suspended = reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert!(suspended.event.is_none() && suspended.requeue_after.is_none());
    // Resumed with a requested reconcile: the change is fetched and the request recorded.
    api.patch(
        "fleet",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "now-1"}},
            "spec": {"suspend": false}
        })),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    let got = api.get("fleet").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True");
    let status = got.status.unwrap();
    assert_eq!(status.last_handled_reconcile_at.as_deref(), Some("now-1"));
    assert_ne!(status.artifact.unwrap().revision, second);

    // An unknown bucket and a cloud provider: said plainly.
    api.create(
        &PostParams::default(),
        &bucket(
            "missing",
            json!({"bucketName": "nope", "endpoint": s3.endpoint(), "insecure": true,
                   "interval": "5m", "secretRef": {"name": "s3-keys"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "missing")
        .await
        .unwrap();
    assert_eq!(
        condition(&api.get("missing").await.unwrap(), "Ready"),
        (
            "False".into(),
            "BucketOperationFailed".into(),
            "bucket 'nope' not found".into()
        )
    );
    // An endpoint nothing listens on: the request's error, as Go words it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    api.create(
        &PostParams::default(),
        &bucket(
            "down",
            json!({"bucketName": "fleet", "endpoint": format!("127.0.0.1:{port}"),
                   "insecure": true, "interval": "5m", "timeout": "10s"}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "down")
        .await
        .unwrap();
    let (st, reason, msg) = condition(&api.get("down").await.unwrap(), "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "BucketOperationFailed")
    );
    assert!(
        msg.starts_with(&format!(
            "failed to confirm existence of 'fleet' bucket: Head \"http://127.0.0.1:{port}/fleet/\": "
        )),
        "{msg}"
    );
    api.create(
        &PostParams::default(),
        &bucket(
            "gcs",
            json!({"bucketName": "fleet", "endpoint": "storage.googleapis.com",
                   "provider": "gcp", "interval": "5m"}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "gcs")
        .await
        .unwrap();
    let gcs = api.get("gcs").await.unwrap();
    let (st, reason, msg) = condition(&gcs, "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "UnsupportedFeature")
    );
    assert!(
        msg.starts_with("not supported yet: provider 'gcp'"),
        "{msg}"
    );
    assert_eq!(condition(&gcs, "Stalled").0, "True");

    // HTTPS with a private CA from certSecretRef (`ca.crt`).
    let tls = ferroflux_testkit::make_tls();
    let front = s3.tls_front(&tls);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s3-ca", "namespace": "flux-system"},
                "stringData": {"ca.crt": tls.ca_pem}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &bucket(
            "secure",
            json!({"bucketName": "fleet", "endpoint": front.endpoint(), "interval": "5m",
                   "prefix": "apps/", "secretRef": {"name": "s3-keys"},
                   "certSecretRef": {"name": "s3-ca"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "secure")
        .await
        .unwrap();
    let secure = api.get("secure").await.unwrap();
    assert_eq!(condition(&secure, "Ready").0, "True", "{:?}", secure.status);

    // Deletion removes the stored artifacts and the finalizer.
    api.delete("fleet", &DeleteParams::default()).await.unwrap();
    reconcile(&client, &settings, "flux-system", "fleet")
        .await
        .unwrap();
    assert!(!store.path().join("bucket/flux-system/fleet").exists());
    assert!(api.get_opt("fleet").await.unwrap().is_none());
}

/// The controller process (`Manager`) builds a HelmChart whose source is a Bucket: the chart's
/// files are objects under `charts/app/`, and a new object version gives a new chart build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helm_chart_from_a_bucket() {
    use ferroflux_api::{FluxObject, HelmChart};
    use ferroflux_controller::manager::{Manager, ManagerConfig};
    use ferroflux_testkit::{eventually, flux_cluster};

    let s3 = S3Server::start();
    s3.create_bucket("charts");
    let chart_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus/app-basic/chart");
    for f in ferroflux_helm::dir_files(&chart_dir).unwrap() {
        s3.put("charts", &format!("charts/app/{}", f.name), f.data);
    }
    let work = tempfile::tempdir().unwrap();
    let (_cluster, client) = flux_cluster("bucketchart").await;
    let config = _cluster.kube_config().await.unwrap();
    let _manager = Manager::start(
        client.clone(),
        config,
        ManagerConfig::local(work.path().join("storage")),
    )
    .await
    .unwrap();
    keys_secret(&client, "s3-keys", &s3.access_key, &s3.secret_key).await;
    let api: Api<Bucket> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &bucket(
            "charts",
            json!({"bucketName": "charts", "endpoint": s3.endpoint(), "insecure": true,
                   "interval": "1h", "secretRef": {"name": "s3-keys"}}),
        ),
    )
    .await
    .unwrap();
    let charts: Api<HelmChart> = Api::namespaced(client.clone(), "flux-system");
    let chart: HelmChart = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"chart": "./charts/app", "interval": "1h",
                 "sourceRef": {"kind": "Bucket", "name": "charts"}}
    }))
    .unwrap();
    charts.create(&PostParams::default(), &chart).await.unwrap();
    let built = eventually("the chart built from the bucket", || async {
        let c = charts.get("app").await.ok()?;
        let ready = c.conditions().iter().find(|c| c.type_ == "Ready")?.clone();
        (ready.status == "True").then_some(c)
    })
    .await;
    let status = built.status.unwrap();
    let source_rev = api
        .get("charts")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap()
        .revision;
    assert_eq!(
        status.observed_source_artifact_revision.as_deref(),
        Some(source_rev.as_str())
    );
    let artifact = status.artifact.unwrap();
    assert_eq!(artifact.revision, "1.2.3");
    let data = ferroflux_controller::artifact::download(&artifact.url, 1 << 20)
        .await
        .unwrap();
    let loaded = ferroflux_helm::load_archive(&data).unwrap();
    assert_eq!(loaded.metadata.name, "app");
}

/// An ArtifactGenerator takes a Bucket as a source: the bucket's `apps/` objects become an
/// ExternalArtifact, and a Kustomization built from it applies them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_generator_from_a_bucket() {
    use ferroflux_api::{ArtifactGenerator, ExternalArtifact, FluxObject};
    use ferroflux_controller::artifactgenerator;

    let s3 = S3Server::start();
    s3.create_bucket("mono");
    s3.put("mono", "apps/app.yaml", config_map("gen"));
    s3.put("mono", "infra/other.yaml", "kind: Namespace\n");
    let env = harness::start("bucketgen").await;
    let client = env.client.clone();
    let store = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(ferroflux_source::serve(
        store.path().to_path_buf(),
        listener,
    ));
    let storage = Storage::new(store.path(), &base).unwrap();
    let settings = Options {
        storage: storage.clone(),
    };
    keys_secret(&client, "s3-keys", &s3.access_key, &s3.secret_key).await;
    let api: Api<Bucket> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &bucket(
            "mono",
            json!({"bucketName": "mono", "endpoint": s3.endpoint(), "insecure": true,
                   "interval": "1h", "secretRef": {"name": "s3-keys"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "mono")
        .await
        .unwrap();
    let gens: Api<ArtifactGenerator> = Api::namespaced(client.clone(), "flux-system");
    let generator: ArtifactGenerator = serde_json::from_value(json!({
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "mono", "namespace": "flux-system"},
        "spec": {
            "sources": [{"alias": "bucket", "kind": "Bucket", "name": "mono"}],
            "artifacts": [{"name": "apps", "copy": [{"from": "@bucket/apps/**", "to": "@artifact/"}]}]
        }
    }))
    .unwrap();
    gens.create(&PostParams::default(), &generator)
        .await
        .unwrap();
    artifactgenerator::reconcile(
        &client,
        &artifactgenerator::Options::new(storage),
        "flux-system",
        "mono",
    )
    .await
    .unwrap();
    let g = gens.get("mono").await.unwrap();
    let ready = g
        .conditions()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap()
        .clone();
    assert_eq!(
        (ready.status.as_str(), ready.message.as_str()),
        ("True", "reconciliation succeeded, generated 1 artifact(s)")
    );
    let eas: Api<ExternalArtifact> = Api::namespaced(client.clone(), "flux-system");
    let ea = eas.get("apps").await.unwrap();
    assert!(ea.status.unwrap().artifact.is_some());
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = harness::kustomization(
        "apps",
        "apps",
        json!({"sourceRef": {"kind": "ExternalArtifact", "name": "apps"}}),
    );
    kss.create(&PostParams::default(), &ks).await.unwrap();
    harness::ready_message(&kss, "apps", "applied from the bucket", |m| {
        m.starts_with("Applied revision")
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        cms.get("bucket-config").await.unwrap().data.unwrap()["version"],
        "gen"
    );
}
