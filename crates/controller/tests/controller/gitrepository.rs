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

/// `spec.include`: while the included GitRepository is missing or has no artifact the
/// including one waits (IncludeUnavailable, its last artifact kept); then `fromPath` of the
/// included artifact is packed under `toPath`, the status records the included artifacts, a
/// new artifact of the included repository repacks the same commit, and a `toPath` the commit
/// already holds fails with Flux's CopyFailure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn included_artifacts_are_copied_in_and_followed() {
    let cluster = DevCluster::start(Config::memory("src-include"))
        .await
        .unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let repo = |name: &str, files: &[(&str, &str)]| {
        git(work.path(), &["init", "-q", "-b", "main", name]);
        let dir = work.path().join(name);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-qm", "one"]);
        dir
    };
    let app = repo(
        "app",
        &[
            ("deploy/kubernetes/a.yaml", "a: 1\n"),
            ("README.md", "app\n"),
        ],
    );
    let fleet = repo("fleet", &[("base/other.yaml", "o: 1\n")]);
    let store = tempfile::tempdir().unwrap();
    let settings = SourceSettings {
        storage: Storage::new(store.path(), "http://127.0.0.1:9090").unwrap(),
        allow_file_urls: true,
    };
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    let object = |name: &str, dir: &std::path::Path, include: serde_json::Value| -> GitRepository {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"url": format!("file://{}", dir.display()), "interval": "5m",
                     "ref": {"branch": "main"}, "include": include}
        }))
        .unwrap()
    };
    let include = serde_json::json!([{"repository": {"name": "app"},
        "fromPath": "deploy/kubernetes", "toPath": "base/app"}]);
    api.create(&PostParams::default(), &object("fleet", &fleet, include))
        .await
        .unwrap();
    let pass = |name: &'static str| {
        let client = client.clone();
        let settings = settings.clone();
        async move {
            reconcile(&client, &settings, "default", name)
                .await
                .unwrap();
        }
    };
    pass("fleet").await;
    let got = api.get("fleet").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "NotFound".into(),
            "could not get resource for include 'app': gitrepositories.source.toolkit.fluxcd.io \"app\" not found".into()
        )
    );
    assert_eq!(condition(&got, "IncludeUnavailable").0, "True");

    api.create(
        &PostParams::default(),
        &object("app", &app, serde_json::json!([])),
    )
    .await
    .unwrap();
    pass("fleet").await;
    assert_eq!(
        condition(&api.get("fleet").await.unwrap(), "Ready"),
        (
            "False".into(),
            "NoArtifact".into(),
            "no artifact available for include 'app'".into()
        )
    );

    pass("app").await;
    pass("fleet").await;
    let got = api.get("fleet").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True");
    let status = got.status.clone().unwrap();
    let app_artifact = api
        .get("app")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(
        status.included_artifacts.as_ref().unwrap()[0].digest,
        app_artifact.digest
    );
    assert_eq!(status.observed_include.as_ref().unwrap().len(), 1);
    assert!(
        status
            .conditions
            .unwrap()
            .iter()
            .all(|c| c.type_ != "IncludeUnavailable")
    );
    let first = status.artifact.unwrap();
    let list = |artifact: &ferroflux_api::Artifact| {
        let out = std::process::Command::new("tar")
            .arg("tzf")
            .arg(store.path().join(&artifact.path))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(
        list(&first),
        "base/\nbase/app/\nbase/app/a.yaml\nbase/other.yaml\n"
    );

    // Nothing changed: nothing repacked.
    pass("fleet").await;
    assert_eq!(
        api.get("fleet")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .unwrap()
            .digest,
        first.digest
    );

    // A new commit of the included repository: the same fleet commit, repacked.
    std::fs::write(app.join("deploy/kubernetes/b.yaml"), "b: 2\n").unwrap();
    git(&app, &["add", "-A"]);
    git(&app, &["commit", "-qm", "two"]);
    pass("app").await;
    pass("fleet").await;
    let second = api
        .get("fleet")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(second.revision, first.revision);
    assert_ne!(second.digest, first.digest);
    assert!(list(&second).contains("base/app/b.yaml\n"));

    // A toPath the commit already holds: CopyFailure, the last artifact kept.
    let taken = serde_json::json!({"spec": {"include": [{"repository": {"name": "app"}, "toPath": "base"}]}});
    api.patch("fleet", &PatchParams::default(), &Patch::Merge(&taken))
        .await
        .unwrap();
    pass("fleet").await;
    let got = api.get("fleet").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "CopyFailure".into(),
            "failed to copy 'app' include from  to base: 'base' is already in the repository"
                .into()
        )
    );
    assert_eq!(got.status.unwrap().artifact.unwrap().digest, second.digest);
    cluster.shutdown().await;
}
