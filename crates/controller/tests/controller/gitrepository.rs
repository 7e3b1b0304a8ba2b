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

/// A devcluster serving Flux's CRDs, and a client of it.
async fn cluster_with_crds(name: &str) -> (ferroflux_devcluster::RunningCluster, kube::Client) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    (cluster, client)
}

/// Settings storing under `store`, with `--allow-file-urls` as given.
fn source_settings(store: &std::path::Path, allow_file_urls: bool) -> SourceSettings {
    SourceSettings {
        storage: Storage::new(store, "http://127.0.0.1:9090").unwrap(),
        allow_file_urls,
    }
}

/// A GitRepository `default/name` with `spec` and a 5m interval.
fn git_repository(name: &str, mut spec: serde_json::Value) -> GitRepository {
    spec["interval"] = "5m".into();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
    }))
    .unwrap()
}

/// One pass of the reconciler over `default/name`.
async fn pass(client: &kube::Client, settings: &SourceSettings, name: &str) {
    reconcile(client, settings, "default", name).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciles_status_finalizer_failures_and_deletion() {
    let (cluster, client) = cluster_with_crds("src").await;

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

/// `sparseCheckout`, once refused here, narrows the artifact, and a directory the commit lacks
/// fails the fetch with Flux's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparse_checkout_narrows_the_artifact() {
    let (cluster, client) = cluster_with_crds("src-refused").await;
    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "repo"]);
    let repo = work.path().join("repo");
    std::fs::create_dir(repo.join("apps")).unwrap();
    std::fs::write(repo.join("apps/app.yaml"), "kind: ConfigMap\n").unwrap();
    std::fs::write(repo.join("README.md"), "fleet\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let store = tempfile::tempdir().unwrap();
    let settings = source_settings(store.path(), true);
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    let obj = git_repository(
        "sparse",
        serde_json::json!({"url": format!("file://{}", repo.display()), "ref": {"branch": "main"}}),
    );
    api.create(&PostParams::default(), &obj).await.unwrap();
    pass(&client, &settings, "sparse").await;
    assert!(
        api.get("sparse")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .is_some()
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
    pass(&client, &settings, "sparse").await;
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
    pass(&client, &settings, "sparse").await;
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
    cluster.shutdown().await;
}

/// `spec.include`: while the included GitRepository is missing or has no artifact the
/// including one waits (IncludeUnavailable, its last artifact kept); then `fromPath` of the
/// included artifact is packed under `toPath`, the status records the included artifacts, a
/// new artifact of the included repository repacks the same commit, and a `toPath` the commit
/// already holds fails with Flux's CopyFailure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn included_artifacts_are_copied_in_and_followed() {
    let (cluster, client) = cluster_with_crds("src-include").await;
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
    let settings = source_settings(store.path(), true);
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    let object = |name: &str, dir: &std::path::Path, include: serde_json::Value| {
        git_repository(
            name,
            serde_json::json!({"url": format!("file://{}", dir.display()),
                               "ref": {"branch": "main"}, "include": include}),
        )
    };
    let include = serde_json::json!([{"repository": {"name": "app"},
        "fromPath": "deploy/kubernetes", "toPath": "base/app"}]);
    api.create(&PostParams::default(), &object("fleet", &fleet, include))
        .await
        .unwrap();
    pass(&client, &settings, "fleet").await;
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
    pass(&client, &settings, "fleet").await;
    assert_eq!(
        condition(&api.get("fleet").await.unwrap(), "Ready"),
        (
            "False".into(),
            "NoArtifact".into(),
            "no artifact available for include 'app'".into()
        )
    );

    pass(&client, &settings, "app").await;
    pass(&client, &settings, "fleet").await;
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
    pass(&client, &settings, "fleet").await;
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
    pass(&client, &settings, "app").await;
    pass(&client, &settings, "fleet").await;
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
    pass(&client, &settings, "fleet").await;
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

/// `spec.verify` with keys gpg made: a commit signed with the Secret's key is served and
/// `SourceVerified` names the key; an unsigned commit on top is not served (the verified
/// artifact stays, InvalidCommitSignature); a signed annotated tag verifies in `Tag` mode and
/// an unsigned one is InvalidGitObject; `Tag` on a branch is InvalidVerificationMode (Stalled);
/// another key, or no Secret, is refused with Flux's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_are_verified_before_an_artifact_is_served() {
    let (cluster, client) = cluster_with_crds("src-verify").await;
    let work = tempfile::tempdir().unwrap();
    let gnupg = work.path().join("gnupg");
    std::fs::create_dir(&gnupg).unwrap();
    std::fs::set_permissions(&gnupg, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let run = |dir: &std::path::Path, program: &str, args: &[&str]| -> String {
        let out = std::process::Command::new(program)
            .env("GNUPGHOME", &gnupg)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let gpg = |args: &[&str]| {
        let mut all = vec!["--batch", "--pinentry-mode", "loopback", "--passphrase", ""];
        all.extend_from_slice(args);
        run(work.path(), "gpg", &all)
    };
    for who in ["fleet", "stranger"] {
        gpg(&[
            "--quick-gen-key",
            &format!("{who} <{who}@example.com>"),
            "ed25519",
            "sign",
            "never",
        ]);
    }
    let public = |who: &str| gpg(&["--armor", "--export", &format!("{who}@example.com")]);
    let key_id = {
        let listing = gpg(&["--with-colons", "--list-keys", "fleet@example.com"]);
        let fpr = listing
            .lines()
            .find(|l| l.starts_with("fpr:"))
            .and_then(|l| l.split(':').nth(9))
            .unwrap()
            .to_string();
        fpr[fpr.len() - 16..].to_string()
    };
    git(work.path(), &["init", "-q", "-b", "main", "repo"]);
    let repo = work.path().join("repo");
    let git_signed = |args: &[&str]| {
        let mut all = vec![
            "-c",
            "user.name=Fleet",
            "-c",
            "user.email=fleet@example.com",
            "-c",
            "user.signingkey=fleet@example.com",
        ];
        all.extend_from_slice(args);
        run(&repo, "git", &all)
    };
    std::fs::write(repo.join("app.yaml"), "kind: ConfigMap\n").unwrap();
    git_signed(&["add", "-A"]);
    git_signed(&["commit", "-q", "-S", "-m", "signed"]);
    let signed = git_signed(&["rev-parse", "HEAD"]);
    git_signed(&["tag", "-s", "v1.0.0", "-m", "v1.0.0"]);
    git_signed(&["tag", "-a", "v1.0.1", "-m", "unsigned"]);

    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "default");
    for (name, key) in [
        ("pgp-keys", public("fleet")),
        ("other-keys", public("stranger")),
    ] {
        let secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "stringData": {"author.asc": key}
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let store = tempfile::tempdir().unwrap();
    let settings = source_settings(store.path(), true);
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    let object = |name: &str, git_ref: serde_json::Value, verify: serde_json::Value| {
        git_repository(
            name,
            serde_json::json!({"url": format!("file://{}", repo.display()),
                               "ref": git_ref, "verify": verify}),
        )
    };
    let main = serde_json::json!({"branch": "main"});
    let head = serde_json::json!({"mode": "HEAD", "secretRef": {"name": "pgp-keys"}});
    api.create(&PostParams::default(), &object("head", main.clone(), head))
        .await
        .unwrap();
    pass(&client, &settings, "head").await;
    let got = api.get("head").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True");
    assert_eq!(
        condition(&got, "SourceVerified"),
        (
            "True".into(),
            "Succeeded".into(),
            format!("verified signature of\n\t- commit '{signed}' with key '{key_id}'")
        )
    );
    let status = got.status.unwrap();
    assert_eq!(status.source_verification_mode.as_deref(), Some("HEAD"));
    let verified = status.artifact.unwrap();

    // An unsigned commit on top: not served.
    std::fs::write(repo.join("app.yaml"), "kind: Secret\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@example.com",
            "commit",
            "-qm",
            "unsigned",
        ],
    );
    let unsigned = git(&repo, &["rev-parse", "HEAD"]);
    pass(&client, &settings, "head").await;
    let got = api.get("head").await.unwrap();
    let message = format!(
        "signature verification of commit '{unsigned}' failed: unsupported signature type: empty"
    );
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "InvalidCommitSignature".into(),
            message.clone()
        )
    );
    assert_eq!(
        condition(&got, "SourceVerified"),
        ("False".into(), "InvalidCommitSignature".into(), message)
    );
    assert_eq!(
        got.status.unwrap().artifact.unwrap().revision,
        verified.revision
    );

    // Tags: a signed annotated tag verifies, an unsigned one is refused.
    let tag_mode = serde_json::json!({"mode": "Tag", "secretRef": {"name": "pgp-keys"}});
    api.create(
        &PostParams::default(),
        &object(
            "tag",
            serde_json::json!({"tag": "v1.0.0"}),
            tag_mode.clone(),
        ),
    )
    .await
    .unwrap();
    pass(&client, &settings, "tag").await;
    let got = api.get("tag").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True", "{:?}", got.status);
    let verified_tag = condition(&got, "SourceVerified").2;
    assert!(
        verified_tag.starts_with("verified signature of\n\t- tag 'v1.0.0@sha1:")
            && verified_tag.ends_with(&format!("' with key '{key_id}'")),
        "{verified_tag}"
    );
    api.create(
        &PostParams::default(),
        &object(
            "unsigned-tag",
            serde_json::json!({"tag": "v1.0.1"}),
            tag_mode.clone(),
        ),
    )
    .await
    .unwrap();
    pass(&client, &settings, "unsigned-tag").await;
    let got = api.get("unsigned-tag").await.unwrap();
    let (status, reason, message) = condition(&got, "Ready");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "InvalidGitObject")
    );
    assert!(
        message.starts_with("cannot verify signature of tag 'v1.0.1@sha1:"),
        "{message}"
    );
    assert!(got.status.unwrap().artifact.is_none(), "nothing is served");

    // Tag mode on a branch: only a spec change can help.
    api.create(
        &PostParams::default(),
        &object("branch-tag", main.clone(), tag_mode),
    )
    .await
    .unwrap();
    pass(&client, &settings, "branch-tag").await;
    let got = api.get("branch-tag").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "InvalidVerificationMode".into(),
            "cannot verify tag object's signature if a tag reference is not specified".into()
        )
    );
    assert_eq!(condition(&got, "Stalled").0, "True");

    // Another key, and no Secret at all.
    let tagged = serde_json::json!({"tag": "v1.0.0"});
    api.create(
        &PostParams::default(),
        &object(
            "stranger",
            tagged.clone(),
            serde_json::json!({"secretRef": {"name": "other-keys"}}),
        ),
    )
    .await
    .unwrap();
    pass(&client, &settings, "stranger").await;
    let got = api.get("stranger").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "InvalidCommitSignature".into(),
            format!(
                "signature verification of commit '{signed}' failed: unable to verify Git commit: unable to verify payload with any of the given key rings"
            )
        )
    );
    api.create(
        &PostParams::default(),
        &object(
            "no-secret",
            tagged,
            serde_json::json!({"secretRef": {"name": "nope"}}),
        ),
    )
    .await
    .unwrap();
    pass(&client, &settings, "no-secret").await;
    let (status, reason, message) = condition(&api.get("no-secret").await.unwrap(), "Ready");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "VerificationError")
    );
    assert!(
        message.starts_with("public keys secret error: "),
        "{message}"
    );
    cluster.shutdown().await;
}

/// `proxySecretRef`: the fetch goes through the proxy the Secret names (with its basic auth);
/// a Secret without `address` fails with Flux's reason and keeps nothing half-done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_go_through_the_proxy_secret() {
    let (cluster, client) = cluster_with_crds("src-proxy").await;
    let work = tempfile::tempdir().unwrap();
    git(
        work.path(),
        &["init", "-q", "--bare", "-b", "main", "fleet.git"],
    );
    git(work.path(), &["init", "-q", "-b", "main", "w"]);
    let w = work.path().join("w");
    std::fs::write(w.join("app.yaml"), "kind: ConfigMap\n").unwrap();
    git(&w, &["add", "-A"]);
    git(
        &w,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@example.com",
            "commit",
            "-qm",
            "one",
        ],
    );
    git(&w, &["push", "-q", "../fleet.git", "main"]);
    let server =
        ferroflux_testkit::GitHttpServer::start(work.path(), ferroflux_testkit::Auth::None, None);
    let proxy = ferroflux_testkit::HttpProxy::start(Some(("user", "proxy-secret-pw")));
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "default");
    for (name, data) in [
        (
            "proxy",
            serde_json::json!({"address": proxy.url(), "username": "user", "password": "proxy-secret-pw"}),
        ),
        ("bad-proxy", serde_json::json!({"username": "user"})),
    ] {
        let secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "stringData": data
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let store = tempfile::tempdir().unwrap();
    let settings = source_settings(store.path(), false);
    let api: Api<GitRepository> = Api::namespaced(client.clone(), "default");
    for (name, secret) in [("proxied", "proxy"), ("bad", "bad-proxy")] {
        let obj = git_repository(
            name,
            serde_json::json!({"url": server.url("fleet"), "ref": {"branch": "main"},
                               "proxySecretRef": {"name": secret}}),
        );
        api.create(&PostParams::default(), &obj).await.unwrap();
        pass(&client, &settings, name).await;
    }
    let got = api.get("proxied").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True", "{:?}", got.status);
    assert!(
        proxy
            .requests()
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT 127.0.0.1:{}", server.addr.port()))),
        "{:?}",
        proxy.requests()
    );
    let got = api.get("bad").await.unwrap();
    assert_eq!(
        condition(&got, "Ready"),
        (
            "False".into(),
            "AuthenticationFailed".into(),
            "invalid credentials: failed to configure proxy options: secret 'default/bad-proxy': key 'address' not found".into()
        )
    );
    assert!(got.status.unwrap().artifact.is_none());
    cluster.shutdown().await;
}
