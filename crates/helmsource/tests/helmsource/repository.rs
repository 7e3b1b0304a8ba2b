//! Index fetch, version selection, downloads, packaging, values files, dependencies and the
//! bad inputs of issue 15 (chart or version not found, malformed or oversized index, wrong
//! credentials).

use std::path::{Path, PathBuf};

use ferroflux_helmsource::{
    AnonymousRepositories, BuildOptions, DependencyRepositories, Error, RepositoryAccess,
    build_from_repository, build_from_source, fetch_index, package,
};
use ferroflux_testkit::{Auth, StaticServer, make_tls};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../helm/tests/corpus")
        .join(name)
        .join("chart")
}

/// Packages the corpus chart `name` at `version` into `dir`, returns the archive's file name.
fn package_corpus(dir: &Path, name: &str, version: &str) -> String {
    let mut files = ferroflux_helm::dir_files(&corpus(name)).unwrap();
    let chart = ferroflux_helm::load_files(files.clone()).unwrap();
    for f in files.iter_mut().filter(|f| f.name == "Chart.yaml") {
        let text = String::from_utf8(f.data.clone()).unwrap();
        let text = text.replace(
            &format!("version: {}", chart.metadata.version),
            &format!("version: {version}"),
        );
        f.data = text.into_bytes();
    }
    let data = package(chart.name(), &files).unwrap();
    let file = format!("{}-{version}.tgz", chart.name());
    std::fs::write(dir.join(&file), data).unwrap();
    file
}

/// A repository directory with app 1.2.3 and 1.3.0 (relative URLs) and 2.0.0-rc.1.
fn repo_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for v in ["1.2.3", "1.3.0", "2.0.0-rc.1"] {
        package_corpus(dir.path(), "app-basic", v);
    }
    write_index(dir.path(), "");
    dir
}

/// index.yaml for the archives of `dir`; `url_prefix` before each file name (empty: relative).
fn write_index(dir: &Path, url_prefix: &str) {
    let mut entries = String::new();
    for v in ["1.2.3", "1.3.0", "2.0.0-rc.1"] {
        entries.push_str(&format!(
            "    - name: app\n      version: {v}\n      urls: [\"{url_prefix}app-{v}.tgz\"]\n      created: \"2025-01-01T00:00:00Z\"\n"
        ));
    }
    std::fs::write(
        dir.join("index.yaml"),
        format!("apiVersion: v1\nentries:\n  app:\n{entries}generated: \"2025-01-01T00:00:00Z\"\n"),
    )
    .unwrap();
}

fn access(url: &str) -> RepositoryAccess {
    RepositoryAccess::anonymous(url)
}

fn values_of(archive: &[u8]) -> serde_json::Map<String, serde_json::Value> {
    ferroflux_helm::load_archive(archive).unwrap().values
}

#[test]
fn pulls_the_latest_and_a_range_byte_for_byte() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    let fetched = fetch_index(access(&format!("{}/", server.url())), 1 << 20).unwrap();
    let raw = std::fs::read(dir.path().join("index.yaml")).unwrap();
    assert_eq!(fetched.data, raw);
    assert_eq!(fetched.revision, ferroflux_helmsource::sha256_digest(&raw));
    let build =
        build_from_repository(&fetched.repository, "app", "*", &BuildOptions::default()).unwrap();
    assert_eq!(
        (build.name.as_str(), build.version.as_str()),
        ("app", "1.3.0")
    );
    assert_eq!(build.summary(), "pulled 'app' chart with version '1.3.0'");
    assert_eq!(
        build.archive.as_deref().unwrap(),
        std::fs::read(dir.path().join("app-1.3.0.tgz"))
            .unwrap()
            .as_slice(),
        "an unmodified chart is served as pulled"
    );
    let build = build_from_repository(&fetched.repository, "app", "~1.2", &BuildOptions::default())
        .unwrap();
    assert_eq!(build.version, "1.2.3");
    assert_eq!(build.file_name(), "app-1.2.3.tgz");
}

#[test]
fn absolute_chart_urls_and_credentials_only_to_the_repository_host() {
    let dir = repo_dir();
    let mut server =
        StaticServer::start(dir.path(), Auth::Basic("u".into(), "s3cret".into()), None);
    // The index names the charts on another host (localhost, not 127.0.0.1) of the same server.
    let other_host = server.url().replace("127.0.0.1", "localhost");
    write_index(dir.path(), &format!("{other_host}/"));
    let mut a = access(&server.url());
    a.basic = Some(("u".into(), "s3cret".into()));
    let fetched = fetch_index(a.clone(), 1 << 20).unwrap();
    let err = build_from_repository(
        &fetched.repository,
        "app",
        "1.2.3",
        &BuildOptions::default(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.reason(), "ChartPullError");
    assert!(
        msg.starts_with("chart pull error: failed to download chart for remote reference: failed to fetch http://localhost:")
            && msg.ends_with("/app-1.2.3.tgz : 401 Unauthorized"),
        "{msg}"
    );
    let to_other: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|(p, _)| p.ends_with(".tgz"))
        .collect();
    assert_eq!(
        to_other,
        vec![("/app-1.2.3.tgz".to_string(), false)],
        "no credentials to another host"
    );
    a.pass_credentials = true;
    let fetched = fetch_index(a, 1 << 20).unwrap();
    let build = build_from_repository(
        &fetched.repository,
        "app",
        "1.2.3",
        &BuildOptions::default(),
    )
    .unwrap();
    assert_eq!(build.version, "1.2.3");
    server.stop();
}

#[test]
fn https_with_a_private_ca_and_basic_auth() {
    let dir = repo_dir();
    let tls = make_tls();
    let server = StaticServer::start(
        dir.path(),
        Auth::Basic("u".into(), "s3cret".into()),
        Some(&tls),
    );
    let mut a = access(&server.url());
    a.basic = Some(("u".into(), "s3cret".into()));
    let err = fetch_index(a.clone(), 1 << 20).err().unwrap();
    assert_eq!(err.reason(), "Failed");
    assert!(
        err.to_string().starts_with(
            "failed to fetch Helm repository index: failed to fetch https://127.0.0.1:"
        ),
        "{err}"
    );
    a.ca_cert = Some(tls.ca_pem.clone().into_bytes());
    let fetched = fetch_index(a.clone(), 1 << 20).unwrap();
    assert_eq!(fetched.repository.index.entries["app"].len(), 3);

    a.basic = Some(("u".into(), "wrong-password".into()));
    let err = fetch_index(a, 1 << 20).err().unwrap();
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "failed to fetch Helm repository index: failed to fetch {}/index.yaml : 401 Unauthorized",
            server.url()
        )
    );
    assert!(!msg.contains("wrong-password") && !msg.contains("s3cret"));
}

#[test]
fn secrets_are_checked() {
    let data: std::collections::BTreeMap<String, Vec<u8>> =
        [("username".to_string(), b"u".to_vec())].into();
    let err = RepositoryAccess::anonymous("https://h")
        .with_secrets(Some(("flux-system/creds", &data)), None)
        .unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed");
    assert_eq!(
        err.to_string(),
        "invalid 'flux-system/creds' secret data: required fields 'username' and 'password'"
    );
    let certs: std::collections::BTreeMap<String, Vec<u8>> =
        [("ca.crt".to_string(), b"not pem".to_vec())].into();
    let err = RepositoryAccess::anonymous("https://h")
        .with_secrets(None, Some(("flux-system/tls", &certs)))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("secret 'flux-system/tls' key 'ca.crt'"),
        "{err}"
    );
}

#[test]
fn chart_or_version_not_found_lists_what_the_index_has() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    let fetched = fetch_index(access(&server.url()), 1 << 20).unwrap();
    let err = build_from_repository(
        &fetched.repository,
        "app",
        ">=3.0.0",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.reason(), "InvalidChartReference");
    assert!(err.is_stalling());
    assert_eq!(
        err.to_string(),
        "invalid chart reference: failed to get chart version for remote reference: no 'app' chart with version matching '>=3.0.0' found (versions in the index: 2.0.0-rc.1, 1.3.0, 1.2.3)"
    );
    let err = build_from_repository(
        &fetched.repository,
        "podinfo",
        "*",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid chart reference: failed to get chart version for remote reference: no chart name found: 'podinfo' is not in the index (charts: app)"
    );
}

#[test]
fn malformed_and_oversized_indexes_are_refused() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    std::fs::write(
        dir.path().join("index.yaml"),
        "apiVersion: v1\nentries:\n  app: [\n",
    )
    .unwrap();
    let err = fetch_index(access(&server.url()), 1 << 20).err().unwrap();
    assert_eq!(err.reason(), "IndexationFailed");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "failed to load Helm repository from index YAML: {}/index.yaml: ",
            server.url()
        )),
        "{msg}"
    );
    assert!(msg.contains("line"), "the position is named: {msg}");
    write_index(dir.path(), "");
    let err = fetch_index(access(&server.url()), 100).err().unwrap();
    assert_eq!(err.reason(), "Failed");
    assert_eq!(
        err.to_string(),
        format!(
            "failed to fetch Helm repository index: {}/index.yaml is larger than the maximum size of 100 bytes",
            server.url()
        )
    );
}

#[test]
fn values_files_and_version_metadata_repackage_the_chart() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    let fetched = fetch_index(access(&server.url()), 1 << 20).unwrap();
    // values-prod.yaml is not in the chart: with ignoreMissingValuesFiles it is skipped.
    let opts = BuildOptions {
        values_files: vec!["values.yaml".into(), "values-prod.yaml".into()],
        ignore_missing_values_files: true,
        version_metadata: Some("4".into()),
        ..Default::default()
    };
    let build = build_from_repository(&fetched.repository, "app", "1.2.3", &opts).unwrap();
    assert_eq!(build.version, "1.2.3+4");
    // The chart's values re-encoded differ from its file's bytes: Flux reports the merge too.
    assert_eq!(build.values_files, ["values.yaml"]);
    let chart = ferroflux_helm::load_archive(build.archive.as_deref().unwrap()).unwrap();
    assert_eq!(chart.metadata.version, "1.2.3+4");
    let opts = BuildOptions {
        ignore_missing_values_files: false,
        ..opts
    };
    let err = build_from_repository(&fetched.repository, "app", "1.2.3", &opts).unwrap_err();
    assert_eq!(err.reason(), "ValuesFilesError");
    assert_eq!(
        err.to_string(),
        "values files merge error: no values file found at path 'values-prod.yaml'"
    );
}

/// A GitRepository-like tree: the app chart with values files beside it, a `file://`
/// dependency and a dependency from the chart repository.
fn source_tree(repo_url: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        for f in ferroflux_helm::dir_files(from).unwrap() {
            let p = to.join(&f.name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f.data).unwrap();
        }
    };
    let chart_dir = root.path().join("charts/umbrella");
    copy(&corpus("app-basic"), &chart_dir);
    copy(&corpus("app-basic"), &root.path().join("charts/common"));
    std::fs::write(
        root.path().join("charts/common/Chart.yaml"),
        "apiVersion: v2\nname: common\nversion: 0.4.0\n",
    )
    .unwrap();
    std::fs::write(
        chart_dir.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n  - name: common\n    version: ~0.4\n    repository: file://../common\n  - name: app\n    version: \">=1.3.0 <2\"\n    repository: {repo_url}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.path().join("values-prod.yaml"),
        "replicaCount: 5\nextra: prod\n",
    )
    .unwrap();
    root
}

#[test]
fn packages_a_chart_from_a_source_with_its_dependencies() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    let root = source_tree(&server.url());
    let opts = BuildOptions {
        values_files: vec![
            "charts/umbrella/values.yaml".into(),
            "values-prod.yaml".into(),
        ],
        version_metadata: Some("0123456789ab.3".into()),
        ..Default::default()
    };
    let build = build_from_source(
        root.path(),
        "charts/umbrella",
        &opts,
        &AnonymousRepositories,
    )
    .unwrap();
    assert_eq!(build.name, "umbrella");
    assert_eq!(build.version, "0.1.0+0123456789ab.3");
    assert_eq!(build.resolved_dependencies, 2);
    assert_eq!(
        build.summary(),
        "packaged 'umbrella' chart with version '0.1.0+0123456789ab.3' and merged values files [charts/umbrella/values.yaml values-prod.yaml]"
    );
    let archive = build.archive.unwrap();
    let chart = ferroflux_helm::load_archive(&archive).unwrap();
    let mut deps: Vec<_> = chart
        .dependencies
        .iter()
        .map(|c| format!("{}@{}", c.name(), c.metadata.version))
        .collect();
    deps.sort();
    assert_eq!(deps, ["app@1.3.0", "common@0.4.0"]);
    let values = values_of(&archive);
    assert_eq!(values["replicaCount"].as_f64(), Some(5.0));
    assert_eq!(values["extra"], "prod");
    assert!(
        values.contains_key("image"),
        "the chart's own values.yaml was listed first"
    );
}

#[test]
fn source_build_errors_name_the_path() {
    let dir = repo_dir();
    let server = StaticServer::start(dir.path(), Auth::None, None);
    let root = source_tree(&server.url());
    let err = build_from_source(
        root.path(),
        "charts/missing",
        &BuildOptions::default(),
        &AnonymousRepositories,
    )
    .unwrap_err();
    assert_eq!(err.reason(), "InvalidChartReference");
    assert_eq!(
        err.to_string(),
        "invalid chart reference: path 'charts/missing' does not exist in the source artifact"
    );
    std::fs::write(
        root.path().join("charts/common/Chart.yaml"),
        "apiVersion: v2\nname: common\nversion: 0.5.0\n",
    )
    .unwrap();
    let err = build_from_source(
        root.path(),
        "charts/umbrella",
        &BuildOptions::default(),
        &AnonymousRepositories,
    )
    .unwrap_err();
    assert_eq!(err.reason(), "DependencyBuildError");
    assert_eq!(
        err.to_string(),
        "dependency build error: failed to add local dependency 'common': can't get a valid version for constraint '~0.4' (the chart is at 0.5.0)"
    );
    // A dependency repository that refuses anonymous access, reached with the credentials a
    // HelmRepository of that URL would give.
    struct WithCreds;
    impl DependencyRepositories for WithCreds {
        fn access(&self, url: &str) -> Result<RepositoryAccess, String> {
            let mut a = RepositoryAccess::anonymous(url);
            a.basic = Some(("u".into(), "p".into()));
            Ok(a)
        }
    }
    let locked = StaticServer::start(dir.path(), Auth::Basic("u".into(), "p".into()), None);
    let root = source_tree(&locked.url());
    let err = build_from_source(
        root.path(),
        "charts/umbrella",
        &BuildOptions::default(),
        &AnonymousRepositories,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Build { .. }));
    assert!(
        err.to_string().contains(
            "failed to add remote dependency 'app': failed to get chart repository for URL"
        ),
        "{err}"
    );
    assert!(
        err.to_string().ends_with("/index.yaml : 401 Unauthorized"),
        "{err}"
    );
    build_from_source(
        root.path(),
        "charts/umbrella",
        &BuildOptions::default(),
        &WithCreds,
    )
    .unwrap();
}
