//! The ArtifactGenerator reconciler against a real API server (the devcluster), a real Git
//! repository fetched by the GitRepository reconciler, and the artifact server: Flux's example
//! decomposition (`infrastructure` and `apps` from one monorepo), a Kustomization built from an
//! ExternalArtifact, a change that touches one artifact only, and the bad inputs the issue names
//! (a copy rule matching nothing, an unknown alias, a source not ready), each keeping the last
//! good ExternalArtifact.

use std::collections::BTreeMap;
use std::path::Path;

use ferroflux_api::{
    ArtifactGenerator, ExternalArtifact, FluxObject, GitRepository, Kustomization,
};
use ferroflux_controller::artifactgenerator::{Options, reconcile};
use ferroflux_controller::gitrepository;
use ferroflux_source::Storage;
use ferroflux_testkit::git;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness;

fn ready(obj: &impl FluxObject) -> (String, String, String) {
    let c = obj
        .conditions()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap_or_else(|| panic!("no Ready condition in {obj:?}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

fn write(root: &Path, rel: &str, data: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

fn configmap(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  value: \"{value}\"\n"
    )
}

/// Files of a stored tar.gz.
fn files_of(storage: &Storage, rel: &str) -> BTreeMap<String, String> {
    let f = std::fs::File::open(storage.local_path(rel)).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = BTreeMap::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        if e.header().entry_type().is_file() {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut e, &mut s).unwrap();
            out.insert(e.path().unwrap().display().to_string(), s);
        }
    }
    out
}

fn generator() -> ArtifactGenerator {
    serde_json::from_value(json!({
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {
            "sources": [{"alias": "monorepo", "kind": "GitRepository", "name": "flux-system"}],
            "artifacts": [
                {"name": "infrastructure", "originRevision": "@monorepo",
                 "copy": [{"from": "@monorepo/infrastructure/**", "to": "@artifact/"}]},
                {"name": "apps", "originRevision": "@monorepo",
                 "copy": [
                    {"from": "@monorepo/apps/base/**", "to": "@artifact/base/"},
                    {"from": "@monorepo/apps/staging/**", "to": "@artifact/staging/"}]}
            ]
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decomposes_a_monorepo_feeds_kustomizations_and_keeps_artifacts_on_bad_input() {
    let env = harness::start("artgen").await;
    let client = env.client.clone();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(
        &repo,
        "infrastructure/configs/infra.yaml",
        &configmap("infra", "1"),
    );
    write(&repo, "apps/base/app.yaml", &configmap("app", "base"));
    write(
        &repo,
        "apps/base/kustomization.yaml",
        "resources: [app.yaml]\n",
    );
    write(
        &repo,
        "apps/staging/kustomization.yaml",
        "resources: [../base]\n",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let store = work.path().join("storage");
    std::fs::create_dir(&store).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(ferroflux_source::serve(store.clone(), listener));
    let storage = Storage::new(&store, &base).unwrap();
    let git_settings = gitrepository::Options {
        storage: storage.clone(),
        allow_file_urls: true,
    };
    let settings = Options::new(storage.clone());

    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let gens: Api<ArtifactGenerator> = Api::namespaced(client.clone(), "flux-system");
    let eas: Api<ExternalArtifact> = Api::namespaced(client.clone(), "flux-system");

    // A generator whose source does not exist yet, then is not ready: SourceFetchFailed.
    gens.create(&PostParams::default(), &generator())
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    assert_eq!(
        ready(&gens.get("flux-system").await.unwrap()),
        (
            "False".into(),
            "SourceFetchFailed".into(),
            "get sources failed: gitrepositories.source.toolkit.fluxcd.io \"flux-system\" not found"
                .into()
        )
    );
    let gitrepo: GitRepository = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"url": format!("file://{}", repo.display()), "interval": "5m",
                 "ref": {"branch": "main"}},
    }))
    .unwrap();
    repos
        .create(&PostParams::default(), &gitrepo)
        .await
        .unwrap();
    let done = reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    assert_eq!(
        ready(&gens.get("flux-system").await.unwrap()).2,
        "get sources failed: source 'GitRepository/flux-system/flux-system' is not ready"
    );
    assert_eq!(done.event.unwrap().1, "SourceFetchFailed");

    // The source fetched: two ExternalArtifacts, served, with the commit as origin revision.
    gitrepository::reconcile(&client, &git_settings, "flux-system", "flux-system")
        .await
        .unwrap();
    let done = reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    let g = gens.get("flux-system").await.unwrap();
    assert_eq!(
        ready(&g),
        (
            "True".into(),
            "Succeeded".into(),
            "reconciliation succeeded, generated 2 artifact(s)".into()
        )
    );
    assert!(
        done.event
            .unwrap()
            .2
            .starts_with("external artifacts reconciled: "),
        "a Normal event names the new artifacts"
    );
    let inventory = g.status.as_ref().unwrap().inventory.clone().unwrap();
    assert_eq!(
        inventory
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["infrastructure", "apps"]
    );
    let apps = eas.get("apps").await.unwrap();
    let a = apps.status.clone().unwrap().artifact.unwrap();
    assert_eq!(a.revision, format!("latest@{}", a.digest));
    assert_eq!(
        a.metadata.as_ref().unwrap()["org.opencontainers.image.revision"],
        format!("main@sha1:{head}")
    );
    assert!(
        a.path.starts_with("externalartifact/flux-system/apps/") && a.path.ends_with(".tar.gz"),
        "{}",
        a.path
    );
    assert_eq!(
        files_of(&storage, &a.path).keys().collect::<Vec<_>>(),
        [
            "base/app.yaml",
            "base/kustomization.yaml",
            "staging/kustomization.yaml"
        ]
    );
    assert_eq!(ready(&apps).0, "True");
    let source_ref = apps.spec.source_ref.clone().unwrap();
    assert_eq!(
        (source_ref.kind.as_str(), source_ref.name.as_str()),
        ("ArtifactGenerator", "flux-system")
    );
    assert_eq!(
        apps.metadata.labels.as_ref().unwrap()["source.extensions.fluxcd.io/generator"],
        g.metadata.uid.clone().unwrap()
    );
    let infra_before = eas.get("infrastructure").await.unwrap();

    // Kustomizations built from the ExternalArtifacts apply what they hold.
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    for (name, source, path) in [
        ("infra-configs", "infrastructure", "./configs"),
        ("apps", "apps", "./staging"),
    ] {
        let ks = harness::kustomization(
            name,
            source,
            json!({"sourceRef": {"kind": "ExternalArtifact", "name": source}, "path": path}),
        );
        kss.create(&PostParams::default(), &ks).await.unwrap();
    }
    let apps_rev = a.revision.clone();
    harness::ready_message(&kss, "apps", "applied the apps artifact", |m| {
        m.contains(&apps_rev)
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(cms.get("app").await.unwrap().data.unwrap()["value"], "base");
    harness::ready_message(&kss, "infra-configs", "applied infrastructure", |m| {
        m.starts_with("Applied revision: latest@sha256:")
    })
    .await;
    assert_eq!(cms.get("infra").await.unwrap().data.unwrap()["value"], "1");

    // Nothing changed: no download, no event.
    let again = reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    assert!(again.event.is_none());

    // A commit under apps/ changes the apps artifact only; its Kustomization follows.
    write(&repo, "apps/base/app.yaml", &configmap("app", "two"));
    git(&repo, &["commit", "-qam", "two"]);
    gitrepository::reconcile(&client, &git_settings, "flux-system", "flux-system")
        .await
        .unwrap();
    let done = reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    let note = done.event.unwrap().2;
    assert!(note.contains("flux-system/apps (sha256:"), "{note}");
    assert!(!note.contains("infrastructure"), "{note}");
    let infra_after = eas.get("infrastructure").await.unwrap();
    assert_eq!(
        infra_before.status.unwrap().artifact.unwrap().digest,
        infra_after.status.unwrap().artifact.unwrap().digest,
        "an artifact whose files did not change keeps its digest"
    );
    let apps2 = eas
        .get("apps")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_ne!(apps2.digest, a.digest);
    let rev2 = apps2.revision.clone();
    harness::ready_message(&kss, "apps", "applied the new apps artifact", |m| {
        m.contains(&rev2)
    })
    .await;
    assert_eq!(cms.get("app").await.unwrap().data.unwrap()["value"], "two");

    // Bad inputs: Ready=False with the reason, the last ExternalArtifact and its file kept.
    let bad_cases = [
        (
            json!([{"from": "@monorepo/apps/nothing/*.yaml", "to": "@artifact/"}]),
            "BuildFailed",
            "apps build failed: failed to apply copy operation from '@monorepo/apps/nothing/*.yaml' to '@artifact/': no files match pattern 'apps/nothing/*.yaml' in source 'monorepo'",
        ),
        (
            json!([{"from": "@nowhere/apps/**", "to": "@artifact/"}]),
            "BuildFailed",
            "apps build failed: failed to apply copy operation from '@nowhere/apps/**' to '@artifact/': source alias 'nowhere' not found",
        ),
    ];
    for (copy, reason, message) in bad_cases {
        gens.patch(
            "flux-system",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/spec/artifacts/1/copy", "value": copy}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
        let done = reconcile(&client, &settings, "flux-system", "flux-system")
            .await
            .unwrap();
        assert_eq!(done.event.unwrap().1, reason);
        assert_eq!(
            ready(&gens.get("flux-system").await.unwrap()),
            ("False".into(), reason.into(), message.into())
        );
        let kept = eas
            .get("apps")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .unwrap();
        assert_eq!(kept.digest, apps2.digest, "the last ExternalArtifact stays");
        assert!(storage.exists(&kept.path), "its file stays served");
    }
    // A revision naming an unknown alias is refused before anything runs (Stalled).
    gens.patch(
        "flux-system",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"artifacts": [
            {"name": "apps", "revision": "@nowhere",
             "copy": [{"from": "@monorepo/apps/**", "to": "@artifact/"}]}
        ]}})),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    let g = gens.get("flux-system").await.unwrap();
    assert_eq!(
        ready(&g),
        (
            "False".into(),
            "ValidationFailed".into(),
            "artifact apps revision source alias 'nowhere' not found".into()
        )
    );
    assert!(g.conditions().iter().any(|c| c.type_ == "Stalled"));

    // Fixed, with one artifact: the other ExternalArtifact and its files are removed.
    gens.patch(
        "flux-system",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"artifacts": [
            {"name": "apps", "revision": "@monorepo",
             "copy": [{"from": "@monorepo/apps/**", "to": "@artifact/"}]}
        ]}})),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    assert_eq!(ready(&gens.get("flux-system").await.unwrap()).0, "True");
    let apps3 = eas
        .get("apps")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(
        apps3.revision,
        repos
            .get("flux-system")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .unwrap()
            .revision,
        "revision: @monorepo takes the source's revision"
    );
    assert!(eas.get_opt("infrastructure").await.unwrap().is_none());
    assert!(
        !store
            .join("externalartifact/flux-system/infrastructure")
            .exists()
    );

    // Deleting the generator deletes what it generated.
    gens.delete("flux-system", &DeleteParams::default())
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "flux-system")
        .await
        .unwrap();
    assert!(eas.get_opt("apps").await.unwrap().is_none());
    assert!(gens.get_opt("flux-system").await.unwrap().is_none());
    assert!(!store.join("externalartifact/flux-system/apps").exists());
}

/// `spec.pathPattern`: one ExternalArtifact per matching directory of the monorepo, named and
/// labelled with the captured value; a directory added by a commit adds one, a removed one's is
/// deleted with its file; a pattern that cannot be expanded stalls the generator and keeps the
/// last good ExternalArtifacts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_pattern_makes_an_artifact_per_directory() {
    let env = harness::start("artgen-pattern").await;
    let client = env.client.clone();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(&repo, "apps/Frontend/app.yaml", &configmap("frontend", "1"));
    write(&repo, "apps/backend/app.yaml", &configmap("backend", "1"));
    write(&repo, "README.md", "docs\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);

    let store = work.path().join("storage");
    std::fs::create_dir(&store).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(ferroflux_source::serve(store.clone(), listener));
    let storage = Storage::new(&store, &base).unwrap();
    let git_settings = gitrepository::Options {
        storage: storage.clone(),
        allow_file_urls: true,
    };
    let settings = Options::new(storage.clone());
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    let gens: Api<ArtifactGenerator> = Api::namespaced(client.clone(), "flux-system");
    let eas: Api<ExternalArtifact> = Api::namespaced(client.clone(), "flux-system");
    repos
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": "monorepo", "namespace": "flux-system"},
                "spec": {"url": format!("file://{}", repo.display()), "interval": "5m",
                         "ref": {"branch": "main"}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    gitrepository::reconcile(&client, &git_settings, "flux-system", "monorepo")
        .await
        .unwrap();
    let generator: ArtifactGenerator = serde_json::from_value(json!({
        "apiVersion": "source.extensions.fluxcd.io/v1beta1",
        "kind": "ArtifactGenerator",
        "metadata": {"name": "per-app", "namespace": "flux-system"},
        "spec": {
            "sources": [{"alias": "monorepo", "kind": "GitRepository", "name": "monorepo"}],
            "pathPattern": "@monorepo/apps/{app}",
            "commonMetadata": {"labels": {"team": "platform"}},
            "artifacts": [{"name": "app-{app}",
                           "copy": [{"from": "@monorepo/apps/{app}/**", "to": "@artifact/"}]}]
        }
    }))
    .unwrap();
    gens.create(&PostParams::default(), &generator)
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "per-app")
        .await
        .unwrap();
    let g = gens.get("per-app").await.unwrap();
    assert_eq!(
        ready(&g),
        (
            "True".into(),
            "Succeeded".into(),
            "reconciliation succeeded, generated 2 artifact(s)".into()
        )
    );
    for (name, app, file_value) in [
        ("app-backend", "backend", "backend"),
        ("app-frontend", "frontend", "frontend"),
    ] {
        let ea = eas.get(name).await.unwrap();
        let labels = ea.metadata.labels.clone().unwrap();
        assert_eq!(labels["app"], app, "{name}");
        assert_eq!(labels["team"], "platform", "{name}");
        let a = ea.status.unwrap().artifact.unwrap();
        let files = files_of(&storage, &a.path);
        assert_eq!(files.keys().collect::<Vec<_>>(), ["app.yaml"], "{name}");
        assert!(files["app.yaml"].contains(&format!("name: {file_value}")));
    }

    // A new directory makes a third artifact; a removed one's ExternalArtifact is deleted.
    write(&repo, "apps/cache/app.yaml", &configmap("cache", "1"));
    git(&repo, &["rm", "-rq", "apps/backend"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "two"]);
    gitrepository::reconcile(&client, &git_settings, "flux-system", "monorepo")
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "per-app")
        .await
        .unwrap();
    let g = gens.get("per-app").await.unwrap();
    let names: Vec<_> = g
        .status
        .unwrap()
        .inventory
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    // In the order Go walks the tree: bytewise, so "Frontend" before "cache".
    assert_eq!(names, ["app-frontend", "app-cache"]);
    assert!(eas.get_opt("app-backend").await.unwrap().is_none());

    // Two directories that lowercase to one name: Stalled, the last artifacts kept.
    write(&repo, "apps/CACHE/app.yaml", &configmap("cache2", "1"));
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "three"]);
    gitrepository::reconcile(&client, &git_settings, "flux-system", "monorepo")
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "per-app")
        .await
        .unwrap();
    let g = gens.get("per-app").await.unwrap();
    assert_eq!(
        ready(&g),
        (
            "False".into(),
            "BuildFailed".into(),
            "failed to expand path pattern: pathPattern \"@monorepo/apps/{app}\": directories \"apps/CACHE\" and \"apps/cache\" both resolve to artifact name \"app-cache\"".into()
        )
    );
    assert!(g.conditions().iter().any(|c| c.type_ == "Stalled"));
    assert!(eas.get_opt("app-cache").await.unwrap().is_some());
    assert!(eas.get_opt("app-frontend").await.unwrap().is_some());
}
