//! `ferroflux fleet diff` with HelmReleases: a chart kept in the fleet repository (two versions,
//! one folder each), each cluster's overlay pinning one, values from a ConfigMap of the
//! repository (`valuesFrom`) and inline. A chart version bump in staging's overlay shows as the
//! rendered Deployment's change on staging only; a change of the values ConfigMap shows on both
//! clusters' Deployments; a chart that does not render fails its cluster with the HelmRelease
//! named; a chart of a HelmRepository served over HTTP is pulled and rendered, a chartRef is
//! left unrendered with a note, as is a chart whose repository is down; a HelmChart `chartRef`
//! (its source the fleet repository, then a HelmRepository) is rendered from the HelmChart's
//! spec, and one naming no declared HelmChart gets a note; a HelmChart of a Bucket (s3s-fs,
//! keys in the cluster's Secret) is fetched and rendered (its values files merged, its version
//! given the bucket's revision under `reconcileStrategy: Revision`), with a note when the keys cannot be
//! read, the folder is not in the bucket or the store is down; against a live
//! devcluster the rendered Deployment is dry-run against the one running. A repository chart
//! is built as the source controller builds it: `valuesFiles` merged (a missing one fails the
//! cluster unless `ignoreMissingValuesFiles`), the version given the HelmChart's generation,
//! and the commit under `reconcileStrategy: Revision`.

use crate::repo::{Repo, fleet_sync};
use crate::run::*;
use ferroflux_testkit::{flux_cluster, kubeconfig};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn chart(version: &str) -> [(String, String); 3] {
    [
        (
            format!("charts/web/{version}/Chart.yaml"),
            format!("apiVersion: v2\nname: web\nversion: {version}\nappVersion: \"{version}\"\n"),
        ),
        (
            format!("charts/web/{version}/values.yaml"),
            "replicaCount: 1\nmessage: hello\n".to_string(),
        ),
        (
            format!("charts/web/{version}/templates/deployment.yaml"),
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    chart: {{ .Chart.Name }}-{{ .Chart.Version }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
    spec:
      containers:
        - name: web
          image: \"nginx:{{ .Chart.AppVersion }}\"
          env:
            - name: MESSAGE
              value: {{ .Values.message | quote }}
"
            .to_string(),
        ),
    ]
}

const RELEASE: &str = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/web/1.0.0
      sourceRef:
        kind: GitRepository
        name: flux-system
  valuesFrom:
    - kind: ConfigMap
      name: web-values
  values:
    message: from the HelmRelease
";

fn values(replicas: u32) -> String {
    format!(
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: web-values
  namespace: flux-system
data:
  values.yaml: |
    replicaCount: {replicas}
"
    )
}

fn overlay(version: &str) -> String {
    format!(
        "resources: [../base]
patches:
  - target:
      kind: HelmRelease
      name: web
    patch: |
      - op: replace
        path: /spec/chart/spec/chart
        value: ./charts/web/{version}
"
    )
}

fn fleet_repo() -> Repo {
    let mut files: Vec<(String, String)> = vec![
        (
            "clusters/staging/flux-system/gotk-sync.yaml".into(),
            fleet_sync("staging", Some("./apps/staging")),
        ),
        (
            "clusters/production/flux-system/gotk-sync.yaml".into(),
            fleet_sync("production", Some("./apps/production")),
        ),
        (
            "apps/base/kustomization.yaml".into(),
            "resources: [release.yaml, values.yaml]\n".into(),
        ),
        ("apps/base/release.yaml".into(), RELEASE.into()),
        ("apps/base/values.yaml".into(), values(2)),
        ("apps/staging/kustomization.yaml".into(), overlay("1.0.0")),
        (
            "apps/production/kustomization.yaml".into(),
            overlay("1.0.0"),
        ),
    ];
    files.extend(chart("1.0.0"));
    files.extend(chart("2.0.0"));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    Repo::with_files(&refs)
}

fn fleet_diff(repo: &Repo, kc: Option<&std::path::Path>, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflux"));
    c.args(["fleet", "diff"])
        .args(args)
        .current_dir(repo.work());
    if let Some(kc) = kc {
        c.arg("--kubeconfig").arg(kc);
    }
    c.output().unwrap()
}

/// The part of the table output about one cluster.
fn part<'a>(text: &'a str, cluster: &str) -> &'a str {
    let start = text
        .find(&format!("cluster {cluster}:"))
        .unwrap_or_else(|| panic!("no cluster {cluster}:\n{text}"));
    let rest = &text[start..];
    let end = rest[1..]
        .find("cluster ")
        .map_or(rest.len(), |i| i + 1)
        .min(rest.find(" clusters would change").unwrap_or(rest.len()));
    &rest[..end]
}

#[test]
fn fleet_diff_renders_helm_releases_against_another_revision() {
    let repo = fleet_repo();

    // The chart bump in staging's overlay: staging's Deployment changes, production nothing.
    repo.write("apps/staging/kustomization.yaml", &overlay("2.0.0"));
    let out = fleet_diff(&repo, None, &["--against", "HEAD"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let staging = part(&text, "staging");
    assert!(
        staging.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(
        staging.contains("- nginx:1.0.0\n+ nginx:2.0.0"),
        "the image moves with the chart's appVersion:\n{text}"
    );
    assert!(
        staging.contains("- web-1.0.0\n+ web-2.0.0"),
        "the chart label:\n{text}"
    );
    assert!(
        staging
            .contains("► HelmRelease/flux-system/web changed (by Kustomization/flux-system/apps)"),
        "{text}"
    );
    assert!(
        part(&text, "production").contains("no change against HEAD"),
        "{text}"
    );
    assert!(
        text.ends_with("1 of 2 clusters would change: staging\n"),
        "{text}"
    );

    // The rendered objects as JSON: the values ConfigMap of the repository and the inline
    // values went into the render (replicas 2 from valuesFrom, the message inline).
    repo.commit_and_push("staging: web 2.0.0");
    repo.write("apps/base/values.yaml", &values(5));
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["changed"], json!(["production", "staging"]), "{doc:#}");
    for cluster in doc["clusters"].as_array().unwrap() {
        let deployment = cluster["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "Deployment/flux-system/web")
            .unwrap_or_else(|| panic!("{cluster:#}"));
        assert_eq!(deployment["by"], "HelmRelease/flux-system/web");
        let report = deployment["report"].as_str().unwrap();
        assert!(report.contains("spec.replicas"), "{report}");
        assert!(report.contains("- 2\n+ 5"), "{report}");
    }

    // A chart that does not render fails its cluster, naming the HelmRelease.
    repo.write(
        "charts/web/1.0.0/templates/broken.yaml",
        "{{ .Values.nope.deeper }}\n",
    );
    let out = fleet_diff(
        &repo,
        None,
        &["--against", "HEAD", "--cluster", "production"],
    );
    let text = stdout(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("cluster production: HelmRelease/flux-system/web:"),
        "{text}"
    );
    assert!(text.contains("nil pointer evaluating"), "{text}");
    assert!(
        stderr(&out).contains("could not compare: production"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(repo.work().join("charts/web/1.0.0/templates/broken.yaml")).unwrap();

    // A chart of a HelmRepository (declared in the repository, served over HTTP) is pulled as
    // the source controller pulls it: the version range picks 2.1.0, whose appVersion the
    // rendered Deployment shows. A chartRef to an OCIRepository neither the repository nor a
    // cluster holds is not rendered: a note says so.
    let (_charts, mut server) = chart_repository();
    repo.write(
        "apps/base/release.yaml",
        &RELEASE.replace(
            "      chart: ./charts/web/1.0.0\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n",
            "      chart: web\n      version: 2.x\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n",
        ),
    );
    repo.write(
        "apps/base/charts.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {}\n",
            server.url()
        ),
    );
    repo.write(
        "apps/base/other.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: other\n  namespace: flux-system\nspec:\n  interval: 10m\n  chartRef:\n    kind: OCIRepository\n    name: other\n",
    );
    repo.write(
        "apps/base/kustomization.yaml",
        "resources: [release.yaml, values.yaml, charts.yaml, other.yaml]\n",
    );
    repo.write("apps/staging/kustomization.yaml", "resources: [../base]\n");
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "--cluster", "staging"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(
        text.contains("- nginx:2.0.0\n+ nginx:2.1.0"),
        "the pulled chart's appVersion:\n{text}"
    );
    assert!(
        text.contains("HelmRelease/flux-system/other: chart not rendered: it comes from OCIRepository/flux-system/other, which the repository does not hold"),
        "{text}"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|(path, _)| path.ends_with("web-2.1.0.tgz")),
        "{:?}",
        server.requests()
    );

    // The repository down: the chart is not rendered, and the note says why.
    server.stop();
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "--cluster", "staging"]);
    let text = stdout(&out);
    assert!(
        text.contains(
            "HelmRelease/flux-system/web: chart not rendered: fetching the index of http://"
        ),
        "{text}"
    );
    assert!(
        text.contains("► Deployment/flux-system/web deleted"),
        "what HEAD rendered and the work tree cannot:\n{text}"
    );
}

/// Production's overlay of the release, its chart spec given `patch` (JSON patch operations,
/// one per line of YAML).
fn production_chart_patch(ops: &str) -> String {
    format!(
        "resources: [../base]
patches:
  - target:
      kind: HelmRelease
      name: web
    patch: |
{ops}"
    )
}

#[test]
fn fleet_diff_builds_repository_charts_as_the_source_controller() {
    let repo = fleet_repo();
    // A value neither valuesFrom nor the inline values set, and a values file setting it.
    repo.write(
        "charts/web/1.0.0/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  color: {{ .Values.color | default \"none\" | quote }}\n",
    );
    repo.write("charts/web/1.0.0/values-blue.yaml", "color: blue\n");
    repo.commit_and_push("web: a color");

    // valuesFiles: merged in order into the chart's values, and the version given the
    // HelmChart's generation (1: no cluster to ask); staging does not change.
    repo.write(
        "apps/production/kustomization.yaml",
        &production_chart_patch(
            "      - op: add\n        path: /spec/chart/spec/valuesFiles\n        value: [charts/web/1.0.0/values.yaml, charts/web/1.0.0/values-blue.yaml]\n",
        ),
    );
    let out = fleet_diff(&repo, None, &["--against", "HEAD"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let production = part(&text, "production");
    assert!(
        production.contains(
            "► ConfigMap/flux-system/web-config changed (by HelmRelease/flux-system/web)"
        ),
        "{text}"
    );
    assert!(production.contains("- none\n+ blue"), "{text}");
    assert!(
        production.contains("- web-1.0.0\n+ web-1.0.0+1"),
        "the chart label:\n{text}"
    );
    assert!(!production.contains("not merged"), "{text}");
    assert!(
        part(&text, "staging").contains("no change against HEAD"),
        "{text}"
    );

    // A values file that is not there fails the cluster, naming it; nothing else is reported
    // as changed for it.
    repo.write(
        "apps/production/kustomization.yaml",
        &production_chart_patch(
            "      - op: add\n        path: /spec/chart/spec/valuesFiles\n        value: [charts/web/1.0.0/values-gone.yaml]\n",
        ),
    );
    let out = fleet_diff(
        &repo,
        None,
        &["--against", "HEAD", "--cluster", "production"],
    );
    let text = stdout(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("✗ cluster production: HelmRelease/flux-system/web: loading the chart ./charts/web/1.0.0: values files merge error: no values file found at path '/charts/web/1.0.0/values-gone.yaml'"),
        "{text}"
    );
    assert!(!text.contains("► "), "{text}");
    assert!(
        stderr(&out).contains("could not compare: production"),
        "{}",
        stderr(&out)
    );

    // ignoreMissingValuesFiles: the missing file is skipped, the chart renders.
    repo.write(
        "apps/production/kustomization.yaml",
        &production_chart_patch(
            "      - op: add\n        path: /spec/chart/spec/valuesFiles\n        value: [charts/web/1.0.0/values-gone.yaml, charts/web/1.0.0/values-blue.yaml]\n      - op: add\n        path: /spec/chart/spec/ignoreMissingValuesFiles\n        value: true\n",
        ),
    );
    let out = fleet_diff(
        &repo,
        None,
        &["--against", "HEAD", "--cluster", "production"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("- none\n+ blue"), "{text}");

    // reconcileStrategy Revision: the commit's first 12 hex in the version, at each revision.
    repo.write(
        "apps/production/kustomization.yaml",
        &production_chart_patch(
            "      - op: add\n        path: /spec/chart/spec/reconcileStrategy\n        value: Revision\n",
        ),
    );
    let head = repo.commit_and_push("production: web follows every revision");
    let out = fleet_diff(
        &repo,
        None,
        &[
            "--ref",
            "HEAD",
            "--against",
            "HEAD~1",
            "--cluster",
            "production",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!("- web-1.0.0\n+ web-1.0.0+{}", &head[..12])),
        "{head}:\n{text}"
    );
    // The work tree has no commit yet: rendered without it, and said.
    let out = fleet_diff(
        &repo,
        None,
        &["--against", "HEAD", "--cluster", "production"],
    );
    let text = stdout(&out);
    assert!(
        text.contains("HelmRelease/flux-system/web: its chart's version is rendered without the source revision reconcileStrategy Revision adds: the work tree has none yet"),
        "{text}"
    );
}

/// A HelmRelease of `chartRef` HelmChart `web`, and that HelmChart of `source` (its
/// `chart`, `version` and `sourceRef` lines).
fn chart_ref_release(source: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: HelmChart
    name: web
  valuesFrom:
    - kind: ConfigMap
      name: web-values
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 10m
{source}"
    )
}

/// A chart repository served over HTTP holding `web` 2.1.0 (and an index naming 3.0.0, which
/// a `2.x` range must not pick).
fn chart_repository() -> (tempfile::TempDir, ferroflux_testkit::StaticServer) {
    let charts = tempfile::tempdir().unwrap();
    let unpacked = charts.path().join("src");
    for (path, text) in chart("2.1.0") {
        let file = unpacked.join(path.replace("charts/web/2.1.0", "web"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let packed = std::process::Command::new("tar")
        .arg("-czf")
        .arg(charts.path().join("web-2.1.0.tgz"))
        .arg("-C")
        .arg(&unpacked)
        .arg("web")
        .status()
        .unwrap();
    assert!(packed.success());
    std::fs::write(
        charts.path().join("index.yaml"),
        "apiVersion: v1\nentries:\n  web:\n    - name: web\n      version: 2.1.0\n      urls: [web-2.1.0.tgz]\n      created: \"2025-01-01T00:00:00Z\"\n    - name: web\n      version: 3.0.0\n      urls: [web-3.0.0.tgz]\n      created: \"2025-01-01T00:00:00Z\"\ngenerated: \"2025-01-01T00:00:00Z\"\n",
    )
    .unwrap();
    let server =
        ferroflux_testkit::StaticServer::start(charts.path(), ferroflux_testkit::Auth::None, None);
    (charts, server)
}

#[test]
fn fleet_diff_renders_helm_chart_chart_refs() {
    // The HelmChart's source is the fleet repository: a chart folder of its own.
    let repo = fleet_repo();
    let in_repository = |version: &str| {
        chart_ref_release(&format!(
            "  chart: ./charts/web/{version}\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        ))
    };
    repo.write("apps/base/release.yaml", &in_repository("1.0.0"));
    for cluster in ["staging", "production"] {
        repo.write(
            &format!("apps/{cluster}/kustomization.yaml"),
            "resources: [../base]\n",
        );
    }
    repo.commit_and_push("web from a HelmChart");
    repo.write("apps/base/release.yaml", &in_repository("2.0.0"));
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "--cluster", "staging"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(text.contains("- nginx:1.0.0\n+ nginx:2.0.0"), "{text}");
    assert!(
        text.contains("► HelmChart/flux-system/web changed (by Kustomization/flux-system/apps)"),
        "{text}"
    );
    assert!(!text.contains("chart not rendered"), "{text}");

    // The HelmChart's source a HelmRepository: the chart is pulled, its version range applied.
    let (_charts, mut server) = chart_repository();
    repo.write(
        "apps/base/release.yaml",
        &chart_ref_release(
            "  chart: web\n  version: 2.x\n  sourceRef:\n    kind: HelmRepository\n    name: charts\n",
        ),
    );
    repo.write(
        "apps/base/charts.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {}\n",
            server.url()
        ),
    );
    // Bad input: a chartRef to a HelmChart nobody declares, and a HelmChart of a Bucket nobody
    // declares.
    repo.write(
        "apps/base/other.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: other
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: HelmChart
    name: missing
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: bucketed
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: HelmChart
    name: bucketed
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: bucketed
  namespace: flux-system
spec:
  interval: 10m
  chart: ./charts/web
  sourceRef:
    kind: Bucket
    name: charts
",
    );
    repo.write(
        "apps/base/kustomization.yaml",
        "resources: [release.yaml, values.yaml, charts.yaml, other.yaml]\n",
    );
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "--cluster", "staging"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("- nginx:1.0.0\n+ nginx:2.1.0"),
        "the pulled chart's appVersion:\n{text}"
    );
    assert!(
        text.contains("HelmRelease/flux-system/other: chart not rendered: it comes from HelmChart/flux-system/missing, which the repository does not hold"),
        "{text}"
    );
    assert!(
        text.contains("HelmRelease/flux-system/bucketed: chart not rendered: HelmChart/flux-system/bucketed: it comes from Bucket/flux-system/charts, which the repository does not hold"),
        "{text}"
    );

    // The HelmChart's repository down: a note naming it, nothing rendered from it.
    server.stop();
    let out = fleet_diff(&repo, None, &["--against", "HEAD", "--cluster", "staging"]);
    let text = stdout(&out);
    assert!(
        text.contains(
            "HelmRelease/flux-system/web: chart not rendered: fetching the index of http://"
        ),
        "{text}"
    );
    assert!(
        text.contains("► Deployment/flux-system/web deleted"),
        "what HEAD rendered and the work tree cannot:\n{text}"
    );
}

#[test]
fn fleet_diff_renders_helm_charts_of_buckets() {
    // A bucket of s3s-fs holding two chart versions, behind the server's keys.
    let s3 = ferroflux_testkit::S3Server::start();
    s3.create_bucket("charts");
    for version in ["1.0.0", "2.0.0"] {
        for (path, text) in chart(version) {
            s3.put("charts", &path, text);
        }
    }
    let bucket = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: charts
  namespace: flux-system
spec:
  interval: 10m
  provider: generic
  bucketName: charts
  endpoint: {}
  insecure: true
  secretRef:
    name: s3-keys
",
        s3.endpoint()
    );
    let of_bucket = |version: &str| {
        chart_ref_release(&format!(
            "  chart: ./charts/web/{version}\n  sourceRef:\n    kind: Bucket\n    name: charts\n"
        ))
    };
    let repo = fleet_repo();
    repo.write("apps/base/release.yaml", &of_bucket("1.0.0"));
    repo.write("apps/base/bucket.yaml", &bucket);
    repo.write(
        "apps/base/kustomization.yaml",
        "resources: [release.yaml, values.yaml, bucket.yaml]\n",
    );
    repo.write("apps/staging/kustomization.yaml", "resources: [../base]\n");
    repo.commit_and_push("web from a bucket");
    repo.write("apps/base/release.yaml", &of_bucket("2.0.0"));

    // No cluster to read the keys from: a note naming the Secret.
    let args = [
        "--against",
        "HEAD",
        "--cluster",
        "staging",
        "--timeout",
        "30s",
    ];
    let no_kubeconfig = repo.work().join("no-such-kubeconfig");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["fleet", "diff"])
        .args(args)
        .current_dir(repo.work())
        .env("KUBECONFIG", &no_kubeconfig)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("HelmRelease/flux-system/web: chart not rendered: HelmChart/flux-system/web: it comes from Bucket/flux-system/charts, which needs credentials (Secret flux-system/s3-keys): there is no kubeconfig to read them from"),
        "{text}{}",
        stderr(&out)
    );

    // The keys in the cluster's Secret: the bucket's objects are fetched, the chart folder the
    // HelmChart names rendered at each revision.
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let staging = rt.block_on(async {
        let (staging, client) = flux_cluster("staging").await;
        ferroflux_testkit::create(
            &client,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s3-keys", "namespace": "flux-system"},
                   "stringData": {"accesskey": s3.access_key.clone(), "secretkey": s3.secret_key.clone()}}),
        )
        .await;
        staging
    });
    let kc = kubeconfig(dir.path(), &[&staging]);
    let out = fleet_diff(&repo, Some(&kc), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(!text.contains("chart not rendered"), "{text}");
    assert!(
        text.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(text.contains("- nginx:1.0.0\n+ nginx:2.0.0"), "{text}");
    assert!(!text.contains(&s3.secret_key), "{text}");

    // Values files of the bucket merged, and the version given the bucket's revision
    // (reconcileStrategy Revision) and the HelmChart's generation (1: the cluster has none).
    s3.put(
        "charts",
        "charts/web/2.0.0/values-hi.yaml",
        "message: hi from the bucket\n",
    );
    repo.write(
        "apps/base/release.yaml",
        &chart_ref_release(
            "  chart: ./charts/web/2.0.0\n  sourceRef:\n    kind: Bucket\n    name: charts\n  valuesFiles: [charts/web/2.0.0/values.yaml, charts/web/2.0.0/values-hi.yaml]\n  reconcileStrategy: Revision\n",
        ),
    );
    let out = fleet_diff(&repo, Some(&kc), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("- hello\n+ hi from the bucket"), "{text}");
    let version = text
        .split("- web-1.0.0\n+ web-2.0.0+")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("no chart label change:\n{text}"));
    let (revision, generation) = version.split_once('.').unwrap_or((version, ""));
    assert!(
        revision.len() == 12 && revision.bytes().all(|b| b.is_ascii_hexdigit()),
        "{version}"
    );
    assert_eq!(generation, "1", "{version}");
    repo.write("apps/base/release.yaml", &of_bucket("2.0.0"));

    // A folder the bucket does not hold: the note says so.
    repo.write("apps/base/release.yaml", &of_bucket("9.9.9"));
    let out = fleet_diff(&repo, Some(&kc), &args);
    let text = stdout(&out);
    assert!(
        text.contains(
            "HelmRelease/flux-system/web: chart not rendered: bucket charts at 127.0.0.1:"
        ),
        "{text}"
    );
    assert!(
        text.contains("holds no chart at charts/web/9.9.9"),
        "{text}"
    );

    // The object store down: the note names the bucket and the failure.
    drop(s3);
    repo.write("apps/base/release.yaml", &of_bucket("2.0.0"));
    let out = fleet_diff(&repo, Some(&kc), &args);
    let text = stdout(&out);
    assert!(
        text.contains(
            "HelmRelease/flux-system/web: chart not rendered: bucket charts at 127.0.0.1:"
        ),
        "{text}"
    );
    rt.block_on(staging.shutdown());
}

#[test]
fn fleet_diff_renders_helm_releases_against_a_live_cluster() {
    let rt = runtime();
    let repo = fleet_repo();
    repo.write("apps/staging/kustomization.yaml", &overlay("2.0.0"));
    repo.commit_and_push("staging: web 2.0.0");
    let dir = tempfile::tempdir().unwrap();
    let (staging, s) = rt.block_on(async {
        let (staging, s) = flux_cluster("staging").await;
        // The release as 1.0.0 rendered it, running.
        let deployments: Api<Deployment> = Api::namespaced(s.clone(), "flux-system");
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "flux-system", "labels": {"chart": "web-1.0.0"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.0.0",
                                           "env": [{"name": "MESSAGE", "value": "from the HelmRelease"}]}]}}}}))
        .unwrap();
        deployments.create(&PostParams::default(), &d).await.unwrap();
        (staging, s)
    });
    let kc = kubeconfig(dir.path(), &[&staging]);
    let out = fleet_diff(
        &repo,
        Some(&kc),
        &["--ref", "HEAD", "--cluster", "staging", "--timeout", "30s"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(text.contains("- nginx:1.0.0\n+ nginx:2.0.0"), "{text}");
    assert!(!text.contains("spec.replicas"), "replicas agree:\n{text}");

    // With values files the chart's version carries the HelmChart's generation, counted from
    // the live HelmChart: one more when the build changes its spec, the same when it does not.
    let helm_chart = |values_files: Option<Vec<&str>>| {
        let mut spec = json!({
            "chart": "./charts/web/2.0.0", "version": "*",
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            "interval": "10m", "reconcileStrategy": "ChartVersion",
        });
        if let Some(files) = values_files {
            spec["valuesFiles"] = json!(files);
        }
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
               "metadata": {"name": "flux-system-web", "namespace": "flux-system"}, "spec": spec})
    };
    let charts: Api<kube::api::DynamicObject> = Api::namespaced_with(
        s,
        "flux-system",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("source.toolkit.fluxcd.io", "v1", "HelmChart"),
            "helmcharts",
        ),
    );
    let put = |chart: Value| {
        let charts = charts.clone();
        rt.block_on(async move {
            let params = kube::api::PatchParams::apply("test").force();
            charts
                .patch("flux-system-web", &params, &kube::api::Patch::Apply(chart))
                .await
                .unwrap()
                .metadata
                .generation
        })
    };
    assert_eq!(put(helm_chart(None)), Some(1));
    let files = vec!["charts/web/2.0.0/values.yaml"];
    repo.write(
        "apps/staging/kustomization.yaml",
        &overlay("2.0.0").replace(
            "        value: ./charts/web/2.0.0\n",
            "        value: ./charts/web/2.0.0\n      - op: add\n        path: /spec/chart/spec/valuesFiles\n        value: [charts/web/2.0.0/values.yaml]\n",
        ),
    );
    let diff = || {
        let out = fleet_diff(
            &repo,
            Some(&kc),
            &["--cluster", "staging", "--timeout", "30s"],
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    };
    let text = diff();
    assert!(text.contains("- web-1.0.0\n+ web-2.0.0+2"), "{text}");
    // The live HelmChart's spec changed twice, now the build's: its generation, 3.
    assert_eq!(
        put(helm_chart(Some(vec!["charts/web/2.0.0/other.yaml"]))),
        Some(2)
    );
    assert_eq!(put(helm_chart(Some(files))), Some(3));
    let text = diff();
    assert!(text.contains("- web-1.0.0\n+ web-2.0.0+3"), "{text}");
    rt.block_on(staging.shutdown());
}
