//! `ferroflux fleet diff` with charts in OCI registries (Debian's docker-registry, as
//! crates/oci's tests): a HelmRelease whose `chartRef` is an OCIRepository of an anonymous
//! registry is rendered from the artifact its `ref` resolves to, with helm-controller's version
//! rule (`<version>+<digest's first 12 hex>`), so a semver range moved in the repository shows
//! as the rendered Deployment's change; the charts of a `type: oci` HelmRepository and of an
//! OCIRepository behind htpasswd are pulled with the cluster's Secret, against the live
//! cluster and against another revision (the cluster's kubeconfig context reached for the
//! Secret alone); without a kubeconfig, without the cluster's context, with the Secret missing
//! or the cluster down, each such release gets a note naming the Secret and why it could not
//! be read; a Secret with a wrong password gives a note naming the refusal, never the password.

use crate::repo::{Repo, fleet_sync};
use crate::run::*;
use base64::Engine as _;
use ferroflux_helmsource::oci::{OciRepository, push_chart};
use ferroflux_oci::{Auth, ClientOptions};
use ferroflux_testkit::{Registry, RegistryOptions, flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

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
fn apps(open: &Registry, locked: &Registry, range: &str, replicas: u32) -> String {
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
  values:
    replicaCount: {replicas}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: locked-web
  namespace: flux-system
spec:
  interval: 10m
  url: oci://{}/charts/web
  ref:
    semver: \"1.x\"
  secretRef:
    name: locked-docker
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: locked-web
  namespace: flux-system
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: locked-web
  values:
    replicaCount: {replicas}
",
        open.host(),
        locked.host(),
        locked.host()
    )
}

/// `fleet diff` with the kubeconfig `kc`; without one, with no kubeconfig at all (a
/// `$KUBECONFIG` naming no file).
fn fleet_diff(repo: &Repo, kc: Option<&std::path::Path>, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflux"));
    c.args(["fleet", "diff"])
        .args(args)
        .current_dir(repo.work());
    match kc {
        Some(kc) => c.arg("--kubeconfig").arg(kc),
        None => c.env("KUBECONFIG", repo.work().join("no-such-kubeconfig")),
    };
    c.output().unwrap()
}

/// The note of HelmRelease `name` in `text`.
fn note<'a>(text: &'a str, name: &str) -> &'a str {
    let start = format!("HelmRelease/flux-system/{name}: chart not rendered");
    text.lines()
        .find(|l| l.contains(&start))
        .unwrap_or_else(|| panic!("no note for {name}:\n{text}"))
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
        (
            "clusters/staging/flux-system/gotk-sync.yaml",
            &fleet_sync("staging", Some("./apps")),
        ),
        ("apps/kustomization.yaml", "resources: [apps.yaml]\n"),
        ("apps/apps.yaml", &apps(&open, &locked, "1.x", 1)),
    ]);

    // Against another revision: the range moved from 1.x (1.1.0) to 2.x (2.0.0) renders the
    // chart of each, its version carrying the artifact's digest as helm-controller does.
    repo.write("apps/apps.yaml", &apps(&open, &locked, "2.x", 3));
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
    // With no kubeconfig, the password-protected sources' Secrets cannot be read: each
    // release says which Secret and why.
    assert!(
        note(&text, "api").contains("it comes from HelmRepository/flux-system/locked, which needs credentials (Secret flux-system/locked-auth): there is no kubeconfig to read them from"),
        "{text}"
    );
    assert!(
        note(&text, "locked-web").contains("it comes from OCIRepository/flux-system/locked-web, which needs credentials (Secret flux-system/locked-docker): there is no kubeconfig to read them from"),
        "{text}"
    );
    // A kubeconfig without a context of the cluster's name: the same, naming the context.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-kubeconfig");
    std::fs::write(
        &empty,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    let out = fleet_diff(&repo, Some(&empty), &["--against", "HEAD"]);
    let text = stdout(&out);
    assert!(
        note(&text, "api").contains("(Secret flux-system/locked-auth): there is no kubeconfig context \"staging\" to read them from"),
        "{text}"
    );

    // Against the live cluster: the HelmRepository's Secret is read from it, and the chart of
    // the password-protected registry renders.
    let rt = runtime();
    let (staging, client) = rt.block_on(flux_cluster("staging"));
    let kc = kubeconfig(dir.path(), &[&staging]);

    // Against another revision with the cluster's context but no Secret on it: the note names
    // the Secret and the cluster's answer.
    let out = fleet_diff(&repo, Some(&kc), &["--against", "HEAD", "--timeout", "30s"]);
    let text = stdout(&out);
    for (name, secret) in [("api", "locked-auth"), ("locked-web", "locked-docker")] {
        let note = note(&text, name);
        assert!(
            note.contains(&format!("its credentials (Secret flux-system/{secret}) from cluster staging: failed to get secret 'flux-system/{secret}'")),
            "{note}"
        );
        assert!(note.contains("not found"), "{note}");
    }

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "locked-auth", "namespace": "flux-system"},
        "stringData": {"username": "fleet", "password": "s3cret-pw"},
    }))
    .unwrap();
    rt.block_on(secrets.create(&PostParams::default(), &secret))
        .unwrap();
    // An OCIRepository's secretRef is a registry's docker config, as `kubectl create secret
    // docker-registry` writes it.
    let auth = base64::engine::general_purpose::STANDARD.encode("fleet:s3cret-pw");
    let docker = json!({"auths": {locked.host(): {"auth": auth}}});
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "locked-docker", "namespace": "flux-system"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": docker.to_string()},
    }))
    .unwrap();
    rt.block_on(secrets.create(&PostParams::default(), &secret))
        .unwrap();

    // Against another revision with the Secret on the cluster: both password-protected charts
    // are pulled with it and rendered at each revision (the values moved from 1 to 3 replicas).
    let out = fleet_diff(&repo, Some(&kc), &["--against", "HEAD", "--timeout", "30s"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(!text.contains("chart not rendered"), "{text}");
    for name in ["api", "locked-web"] {
        let changed =
            format!("► Deployment/flux-system/{name} changed (by HelmRelease/flux-system/{name})");
        let at = text
            .find(&changed)
            .unwrap_or_else(|| panic!("{changed}:\n{text}"));
        assert!(text[at..].contains("- 1\n+ 3"), "{text}");
    }
    assert!(!text.contains("s3cret-pw"), "{text}");

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
    let refused = note(&text, "api");
    assert!(
        refused.contains("401") || refused.to_lowercase().contains("unauthorized"),
        "{refused}"
    );
    assert!(!text.contains("wrong-pw"), "{text}");

    // The cluster gone: against another revision, the note says its Secret could not be read.
    rt.block_on(staging.shutdown());
    let out = fleet_diff(&repo, Some(&kc), &["--against", "HEAD", "--timeout", "10s"]);
    let text = stdout(&out);
    assert!(
        note(&text, "api").contains(
            "its credentials (Secret flux-system/locked-auth) from cluster staging: failed to get secret"
        ),
        "{text}"
    );
}
