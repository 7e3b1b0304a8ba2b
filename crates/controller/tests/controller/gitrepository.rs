//! The GitRepository reconciler against a real API server (the devcluster) and real Git
//! repositories made with the `git` program, fetched over `file://` with `--allow-file-urls`.

use ferroflux_api::GitRepository;
use ferroflux_controller::gitrepository::{Options as SourceSettings, reconcile};
use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_source::Storage;
use ferroflux_testkit::git;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

fn condition(obj: &GitRepository, t: &str) -> (String, String, String) {
    let c = obj
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == t))
        .unwrap_or_else(|| panic!("no {t} condition in {:?}", obj.status));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciles_status_finalizer_failures_and_deletion() {
    let cluster = DevCluster::start(Config::memory("src")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }

    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["init", "-q", "repo"]);
    let repo = work.path().join("repo");
    std::fs::write(repo.join("app.yaml"), "kind: ConfigMap\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let store = tempfile::tempdir().unwrap();
    let settings = SourceSettings {
        storage: Storage::new(store.path(), "http://127.0.0.1:9090").unwrap(),
        allow_file_urls: true,
    };
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    let obj: GitRepository = serde_json::from_value(serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "default",
                     "annotations": {"reconcile.fluxcd.io/requestedAt": "2026-11-30T00:00:00Z"}},
        "spec": {"url": format!("file://{}", repo.display()), "interval": "5m",
                 "ref": {"branch": "main"}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();

    let done = reconcile(&client, &settings, "default", "fleet")
        .await
        .unwrap();
    assert_eq!(
        done.requeue_after,
        Some(std::time::Duration::from_secs(300))
    );
    assert_eq!(done.event.as_ref().unwrap().1, "NewArtifact");
    let got = api.get("fleet").await.unwrap();
    let rev = format!("main@sha1:{head}");
    assert_eq!(
        condition(&got, "Ready"),
        (
            "True".into(),
            "Succeeded".into(),
            format!("stored artifact for revision '{rev}'")
        )
    );
    let status = got.status.clone().unwrap();
    let artifact = status.artifact.clone().unwrap();
    assert_eq!(artifact.revision, rev);
    assert_eq!(
        artifact.path,
        format!("gitrepository/default/fleet/{head}.tar.gz")
    );
    assert_eq!(
        artifact.url,
        format!("http://127.0.0.1:9090/{}", artifact.path)
    );
    assert_eq!(status.observed_generation, got.metadata.generation);
    assert_eq!(
        status.last_handled_reconcile_at.as_deref(),
        Some("2026-11-30T00:00:00Z")
    );
    assert!(
        got.metadata
            .finalizers
            .unwrap()
            .contains(&"finalizers.fluxcd.io".to_string())
    );

    // Unchanged: no event, same artifact.
    let again = reconcile(&client, &settings, "default", "fleet")
        .await
        .unwrap();
    assert!(again.event.is_none());

    // A branch that does not exist: FetchFailed, Ready=False, the last artifact still named.
    let patch = serde_json::json!({"spec": {"ref": {"branch": "nope"}}});
    api.patch("fleet", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let failed = reconcile(&client, &settings, "default", "fleet")
        .await
        .unwrap();
    assert_eq!(failed.event.as_ref().unwrap().0, "Warning");
    let got = api.get("fleet").await.unwrap();
    let (st, reason, msg) = condition(&got, "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "GitOperationFailed")
    );
    assert!(msg.contains("branch 'nope' does not exist"), "{msg}");
    assert_eq!(condition(&got, "FetchFailed").0, "True");
    assert_eq!(got.status.unwrap().artifact.unwrap().revision, rev);
    assert!(
        settings.storage.exists(&artifact.path),
        "last good artifact still served"
    );

    // Without --allow-file-urls the URL is refused and the object stalls.
    let strict = SourceSettings {
        allow_file_urls: false,
        ..settings.clone()
    };
    reconcile(&client, &strict, "default", "fleet")
        .await
        .unwrap();
    let got = api.get("fleet").await.unwrap();
    let (st, reason, msg) = condition(&got, "Stalled");
    assert_eq!((st.as_str(), reason.as_str()), ("True", "URLInvalid"));
    assert!(msg.contains("--allow-file-urls"), "{msg}");

    // Delete: the finalizer removes the artifacts, then lets the object go.
    api.delete("fleet", &DeleteParams::default()).await.unwrap();
    reconcile(&client, &settings, "default", "fleet")
        .await
        .unwrap();
    assert!(!store.path().join("gitrepository/default/fleet").exists());
    assert!(api.get_opt("fleet").await.unwrap().is_none());
    cluster.shutdown().await;
}

/// Spec fields ferroflux does not do yet are refused, not ignored: `verify` withdraws the
/// artifact (nothing unverified is applied). `sparseCheckout`, once refused here too, narrows
/// the artifact, and a directory the commit lacks fails the fetch with Flux's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_ferroflux_does_not_do_are_refused_not_ignored() {
    let cluster = DevCluster::start(Config::memory("src-refused"))
        .await
        .unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "repo"]);
    let repo = work.path().join("repo");
    std::fs::create_dir(repo.join("apps")).unwrap();
    std::fs::write(repo.join("apps/app.yaml"), "kind: ConfigMap\n").unwrap();
    std::fs::write(repo.join("README.md"), "fleet\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let store = tempfile::tempdir().unwrap();
    let settings = SourceSettings {
        storage: Storage::new(store.path(), "http://127.0.0.1:9090").unwrap(),
        allow_file_urls: true,
    };
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    for name in ["signed", "sparse"] {
        let obj: GitRepository = serde_json::from_value(serde_json::json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"url": format!("file://{}", repo.display()), "interval": "5m",
                     "ref": {"branch": "main"}}
        }))
        .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
        reconcile(&client, &settings, "default", name)
            .await
            .unwrap();
        assert!(
            api.get(name)
                .await
                .unwrap()
                .status
                .unwrap()
                .artifact
                .is_some()
        );
    }

    let verify = serde_json::json!({"spec": {"verify": {"mode": "HEAD", "secretRef": {"name": "pgp-keys"}}}});
    api.patch("signed", &PatchParams::default(), &Patch::Merge(&verify))
        .await
        .unwrap();
    let done = reconcile(&client, &settings, "default", "signed")
        .await
        .unwrap();
    assert_eq!(done.event.as_ref().unwrap().1, "VerificationError");
    let got = api.get("signed").await.unwrap();
    let message = "signature verification of commits and tags (spec.verify) is not supported yet by ferroflux; no artifact is served from this source while spec.verify is set";
    assert_eq!(
        condition(&got, "Ready"),
        ("False".into(), "VerificationError".into(), message.into())
    );
    assert_eq!(condition(&got, "SourceVerified").0, "False");
    assert_eq!(condition(&got, "Stalled").0, "True");
    assert!(
        got.status.unwrap().artifact.is_none(),
        "the artifact is withdrawn"
    );

    // sparseCheckout: the artifact holds the listed directories only, repacked from the same
    // commit; a directory the commit lacks fails the fetch and keeps the last artifact.
    let whole = api
        .get("sparse")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    let sparse = serde_json::json!({"spec": {"sparseCheckout": ["./apps"]}});
    api.patch("sparse", &PatchParams::default(), &Patch::Merge(&sparse))
        .await
        .unwrap();
    reconcile(&client, &settings, "default", "sparse")
        .await
        .unwrap();
    let got = api.get("sparse").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True");
    let status = got.status.unwrap();
    assert_eq!(
        status.observed_sparse_checkout,
        Some(vec!["./apps".to_string()])
    );
    let narrowed = status.artifact.unwrap();
    assert_eq!(narrowed.revision, whole.revision);
    assert_ne!(narrowed.digest, whole.digest);
    let listing = std::process::Command::new("tar")
        .arg("tzf")
        .arg(store.path().join(&narrowed.path))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout),
        "apps/\napps/app.yaml\n"
    );

    let missing = serde_json::json!({"spec": {"sparseCheckout": ["apps", "missing"]}});
    api.patch("sparse", &PatchParams::default(), &Patch::Merge(&missing))
        .await
        .unwrap();
    reconcile(&client, &settings, "default", "sparse")
        .await
        .unwrap();
    let got = api.get("sparse").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "GitOperationFailed".into(),
            "failed to sparse checkout directories : sparse checkout dir 'missing' does not exist in repository".into()
        )
    );
    assert_eq!(
        got.status.unwrap().artifact.unwrap().digest,
        narrowed.digest,
        "the last artifact is kept"
    );
}
