//! `ferroflux fleet diff` with charts in OCI registries (Debian's docker-registry, as
//! crates/oci's tests): a HelmRelease whose `chartRef` is an OCIRepository of an anonymous
//! registry is rendered from the artifact its `ref` resolves to, with helm-controller's version
//! rule (`<version>+<digest's first 12 hex>`), so a semver range moved in the repository shows
//! as the rendered Deployment's change; a chart of a `type: oci` HelmRepository behind htpasswd
//! is left unrendered with a note against another revision (no cluster to read its Secret
//! from), rendered with the cluster's Secret against the live cluster, and a Secret with a
//! wrong password gives a note naming the refusal, never the password.

use crate::repo::Repo;
use crate::run::*;
use ferroflux_helmsource::oci::{OciRepository, push_chart};
use ferroflux_oci::{Auth, ClientOptions};
use ferroflux_testkit::{Registry, RegistryOptions, flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: https://git.example.invalid/fleet.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/staging
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

/// Chart `web` at `version` (its appVersion the same), packaged as `helm package` does.
fn packaged(version: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "Chart.yaml",
            format!("apiVersion: v2\nname: web\nversion: {version}\nappVersion: \"{version}\"\n"),
        ),
        ("values.yaml", "replicaCount: 1\n".to_string()),
        (
            "templates/deployment.yaml",
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    chart: {{ .Chart.Name }}-{{ .Chart.Version | replace \"+\" \"_\" }}
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
"
            .to_string(),
        ),
    ];
    for (name, text) in &files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let files = ferroflux_helm::dir_files(dir.path()).unwrap();
    ferroflux_helmsource::package("web", &files).unwrap()
}

/// Pushes `web` at each version to `oci://<registry>/charts/web`; the manifests' digests.
fn push(reg: &Registry, auth: Auth, versions: &[&str]) -> Vec<String> {
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
        .map(|v| push_chart(&repo, &packaged(v)).unwrap().1)
        .collect()
}

/// The fleet's apps: `web` from an OCIRepository chartRef following `range`, and `api` from
/// the chart `web` of the password-protected `type: oci` HelmRepository.
fn apps(open: &Registry, locked: &Registry, range: &str) -> String {
    format!(
        "apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 10m
  url: oci://{}/charts/web
  ref:
    semver: \"{range}\"
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: web
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: locked
  namespace: flux-system
spec:
  interval: 10m
  type: oci
  url: oci://{}/charts
  secretRef:
    name: locked-auth
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: api
  namespace: flux-system
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: 1.x
      sourceRef:
        kind: HelmRepository
        name: locked
",
        open.host(),
        locked.host()
    )
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

fn hex12(digest: &str) -> &str {
    &digest["sha256:".len().."sha256:".len() + 12]
}

#[test]
fn fleet_diff_renders_oci_charts_and_uses_the_clusters_secrets() {
    let open = Registry::start(RegistryOptions::default());
    let locked = Registry::start(RegistryOptions {
        basic_auth: Some(("fleet".into(), "s3cret-pw".into())),
        ..Default::default()
    });
    let digests = push(&open, Auth::Anonymous, &["1.0.0", "1.1.0", "2.0.0"]);
    push(
        &locked,
        Auth::Basic {
            username: "fleet".into(),
            password: "s3cret-pw".into(),
        },
        &["1.0.0"],
    );
    let repo = Repo::with_files(&[
        ("clusters/staging/flux-system/gotk-sync.yaml", SYNC),
        ("apps/kustomization.yaml", "resources: [apps.yaml]\n"),
        ("apps/apps.yaml", &apps(&open, &locked, "1.x")),
    ]);

    // Against another revision: the range moved from 1.x (1.1.0) to 2.x (2.0.0) renders the
    // chart of each, its version carrying the artifact's digest as helm-controller does.
    repo.write("apps/apps.yaml", &apps(&open, &locked, "2.x"));
    let out = fleet_diff(&repo, None, &["--against", "HEAD"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("► Deployment/flux-system/web changed (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(text.contains("- nginx:1.1.0\n+ nginx:2.0.0"), "{text}");
    assert!(
        text.contains(&format!(
            "- web-1.1.0_{}\n+ web-2.0.0_{}",
            hex12(&digests[1]),
            hex12(&digests[2])
        )),
        "the chart version with the digest:\n{text}"
    );
    assert!(
        text.contains("HelmRelease/flux-system/api: chart not rendered: it comes from HelmRepository/flux-system/locked, which needs credentials: compared against another revision there is no cluster to read its Secret from"),
        "{text}"
    );

    // Against the live cluster: the HelmRepository's Secret is read from it, and the chart of
    // the password-protected registry renders.
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (staging, client) = rt.block_on(flux_cluster("staging"));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "locked-auth", "namespace": "flux-system"},
        "stringData": {"username": "fleet", "password": "s3cret-pw"},
    }))
    .unwrap();
    rt.block_on(secrets.create(&PostParams::default(), &secret))
        .unwrap();
    let kc = kubeconfig(dir.path(), &[&staging]);
    let out = fleet_diff(&repo, Some(&kc), &["--timeout", "30s"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("► Deployment/flux-system/api created (by HelmRelease/flux-system/api)"),
        "{text}"
    );
    assert!(
        text.contains("► Deployment/flux-system/web created (by HelmRelease/flux-system/web)"),
        "{text}"
    );
    assert!(!text.contains("chart not rendered"), "{text}");

    // A wrong password in the cluster's Secret: the chart is not rendered, the note says the
    // registry refused, and the password is not shown.
    // (base64 of "wrong-pw")
    let wrong = json!({"data": {"password": "d3JvbmctcHc="}});
    rt.block_on(secrets.patch("locked-auth", &PatchParams::default(), &Patch::Merge(wrong)))
        .unwrap();
    let out = fleet_diff(&repo, Some(&kc), &["--timeout", "30s"]);
    let text = stdout(&out);
    let note = text
        .lines()
        .find(|l| l.contains("HelmRelease/flux-system/api: chart not rendered"))
        .unwrap_or_else(|| panic!("no note for api:\n{text}"));
    assert!(
        note.contains("401") || note.to_lowercase().contains("unauthorized"),
        "{note}"
    );
    assert!(!text.contains("wrong-pw"), "{text}");
    rt.block_on(staging.shutdown());
}
