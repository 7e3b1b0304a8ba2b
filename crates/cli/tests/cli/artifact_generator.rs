//! The done-when test of ArtifactGenerators (issue 16): a fleet repository laid out like Flux's
//! flux2-kustomize-helm-example (written here: `clusters/{staging,production}` each with an
//! ArtifactGenerator splitting the monorepo into `infrastructure` and `apps` ExternalArtifacts,
//! `infrastructure/{controllers,configs}`, `apps/{base,staging,production}`) served by a real
//! Git server over HTTPS with basic auth, bootstrapped onto two devclusters whose controllers
//! (the `Manager` that `ferroflux controller` and `dev up` run) apply it; kubectl reads what
//! each cluster got, `get artifact generators` prints the generator, and a commit to production's
//! folder changes production's `apps` artifact and cluster while staging's stays as it was.

use crate::repo::Repo;
use crate::run::{args, cells, ferroflux_off_runtime as ferroflux, stdout, text};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_testkit::{Auth, Cluster, GitHttpServer, make_tls};
use std::time::Duration;

fn artifacts_yaml(env: &str) -> String {
    format!(
        r#"apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: flux-system
  namespace: flux-system
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: flux-system
  artifacts:
    - name: infrastructure
      originRevision: "@monorepo"
      copy:
        - from: "@monorepo/infrastructure/**"
          to: "@artifact/"
    - name: apps
      originRevision: "@monorepo"
      copy:
        - from: "@monorepo/apps/base/**"
          to: "@artifact/base/"
        - from: "@monorepo/apps/{env}/**"
          to: "@artifact/{env}/"
"#
    )
}

fn infrastructure_yaml(env: &str) -> String {
    let server = if env == "staging" {
        "https://acme-staging-v02.api.letsencrypt.org/directory"
    } else {
        "https://acme-v02.api.letsencrypt.org/directory"
    };
    format!(
        r#"apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra-controllers
  namespace: flux-system
spec:
  interval: 1h
  retryInterval: 2s
  timeout: 1m
  sourceRef:
    kind: ExternalArtifact
    name: infrastructure
  path: ./controllers
  prune: true
  wait: true
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra-configs
  namespace: flux-system
spec:
  dependsOn:
    - name: infra-controllers
  interval: 1h
  retryInterval: 2s
  timeout: 1m
  sourceRef:
    kind: ExternalArtifact
    name: infrastructure
  path: ./configs
  prune: true
  patches:
    - patch: |
        - op: replace
          path: /data/server
          value: {server}
      target:
        kind: ConfigMap
        name: letsencrypt
"#
    )
}

fn apps_yaml(env: &str) -> String {
    format!(
        r#"apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  dependsOn:
    - name: infra-configs
  interval: 1h
  retryInterval: 2s
  timeout: 1m
  sourceRef:
    kind: ExternalArtifact
    name: apps
  path: ./{env}
  prune: true
  wait: true
"#
    )
}

const PODINFO: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 1
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.7.0
"#;

fn replicas_patch(n: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  replicas: {n}\n"
    )
}

fn env_kustomization() -> &'static str {
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/podinfo\npatches:\n  - path: podinfo-values.yaml\n    target:\n      kind: Deployment\n"
}

/// The repository, as Flux's example lays it out (its contents written here).
fn files() -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = Vec::new();
    let mut add = |p: &str, t: &str| f.push((p.to_string(), t.to_string()));
    for env in ["staging", "production"] {
        add(
            &format!("clusters/{env}/artifacts.yaml"),
            &artifacts_yaml(env),
        );
        add(
            &format!("clusters/{env}/infrastructure.yaml"),
            &infrastructure_yaml(env),
        );
        add(&format!("clusters/{env}/apps.yaml"), &apps_yaml(env));
        add(
            &format!("apps/{env}/kustomization.yaml"),
            env_kustomization(),
        );
    }
    add("apps/staging/podinfo-values.yaml", &replicas_patch(1));
    add("apps/production/podinfo-values.yaml", &replicas_patch(2));
    add(
        "apps/base/podinfo/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: podinfo\nresources:\n  - namespace.yaml\n  - deployment.yaml\n",
    );
    add(
        "apps/base/podinfo/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo\n",
    );
    add("apps/base/podinfo/deployment.yaml", PODINFO);
    add(
        "infrastructure/controllers/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cert-manager.yaml\n",
    );
    add(
        "infrastructure/controllers/cert-manager.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cert-manager\n  namespace: cert-manager\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: cert-manager}\n  template:\n    metadata:\n      labels: {app: cert-manager}\n    spec:\n      containers:\n        - name: cert-manager\n          image: quay.io/jetstack/cert-manager-controller:v1.16.0\n",
    );
    add(
        "infrastructure/configs/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cluster-issuers.yaml\n",
    );
    add(
        "infrastructure/configs/cluster-issuers.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: letsencrypt\n  namespace: cert-manager\ndata:\n  server: https://acme-v02.api.letsencrypt.org/directory\n",
    );
    f
}

async fn controllers(c: &Cluster) -> (Manager, tempfile::TempDir) {
    let client = c.client().await;
    install_crds(&client).await.unwrap();
    let storage = tempfile::tempdir().unwrap();
    let config = c.cluster.kube_config().await.unwrap();
    let manager = Manager::start(client, config, ManagerConfig::local(storage.path()))
        .await
        .unwrap();
    (manager, storage)
}

/// `kubectl get ... -o jsonpath=...` once it prints `want`; on time-out the panic shows what it
/// printed last. The bound only stops a broken controller from hanging the test.
async fn kubectl_until(
    c: &Cluster,
    get: &[&str],
    want: impl Fn(&str) -> bool,
    what: &str,
) -> String {
    let mut last = String::new();
    for _ in 0..1200 {
        let out = c.kubectl(get);
        last = text(&out);
        if out.status.success() && want(&stdout(&out)) {
            return stdout(&out);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: never; last: {last}");
}

fn ea_jsonpath(name: &str, path: &str) -> Vec<String> {
    args(&[
        "-n",
        "flux-system",
        "get",
        "externalartifacts.source.toolkit.fluxcd.io",
        name,
        "-o",
        &format!("jsonpath={path}"),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn the_examples_layout_runs_on_two_clusters() {
    let staging = Cluster::start("staging").await;
    let production = Cluster::start("production").await;
    let (staging_mgr, _s) = controllers(&staging).await;
    let (production_mgr, _p) = controllers(&production).await;
    let files = files();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = Repo::with_files(&refs);
    let tls = make_tls();
    let server = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("git".into(), "fleet-token".into()),
        Some(&tls),
    );
    let ca = repo.root.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();

    for (c, env) in [(&staging, "staging"), (&production, "production")] {
        let out = ferroflux(
            args(&[
                "bootstrap",
                "git",
                "--url",
                &server.url("fleet"),
                "--branch",
                "main",
                "--path",
                &format!("clusters/{env}"),
                "--token-auth",
                "--username",
                "git",
                "--password",
                "fleet-token",
                "--ca-file",
                ca.to_str().unwrap(),
                "--kubeconfig",
                c.kubeconfig.to_str().unwrap(),
                "--timeout",
                "90s",
                "--silent",
            ]),
            vec![],
        )
        .await;
        assert!(out.status.success(), "{env}: {}", text(&out));
    }

    let head = repo.head().unwrap();
    for (c, env, replicas) in [(&staging, "staging", "1"), (&production, "production", "2")] {
        // The generator's two artifacts, with the commit they came from.
        let origin = kubectl_until(
            c,
            &ea_jsonpath(
                "apps",
                "{.status.artifact.metadata.org\\.opencontainers\\.image\\.revision}",
            )
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
            |s| s.contains(&head),
            &format!("{env}: apps ExternalArtifact from {head}"),
        )
        .await;
        assert_eq!(origin, format!("main@sha1:{head}"));
        // Everything applied in dependency order: the apps Kustomization is Ready last.
        kubectl_until(
            c,
            &[
                "-n",
                "flux-system",
                "get",
                "kustomizations.kustomize.toolkit.fluxcd.io",
                "apps",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
            |s| s == "True",
            &format!("{env}: apps Ready"),
        )
        .await;
        let got = c.kubectl(&[
            "-n",
            "podinfo",
            "get",
            "deployment",
            "podinfo",
            "-o",
            "jsonpath={.spec.replicas}",
        ]);
        assert_eq!(stdout(&got), replicas, "{env}: {}", text(&got));
        let server_url = c.kubectl(&[
            "-n",
            "cert-manager",
            "get",
            "configmap",
            "letsencrypt",
            "-o",
            "jsonpath={.data.server}",
        ]);
        assert_eq!(
            stdout(&server_url).contains("acme-staging"),
            env == "staging",
            "{env}: {}",
            text(&server_url)
        );
        let eas = c.kubectl(&["-n", "flux-system", "get", "externalartifacts"]);
        let listed = stdout(&eas);
        assert!(
            listed.contains("apps") && listed.contains("infrastructure"),
            "{}",
            text(&eas)
        );

        // flux's `get artifact generators`.
        let out = ferroflux(
            args(&[
                "get",
                "artifact",
                "generators",
                "--kubeconfig",
                c.kubeconfig.to_str().unwrap(),
            ]),
            vec![],
        )
        .await;
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            cells(&stdout(&out)),
            [
                vec!["NAME", "SUSPENDED", "READY", "MESSAGE"],
                vec![
                    "flux-system",
                    "False",
                    "True",
                    "reconciliation succeeded, generated 2 artifact(s)"
                ]
            ]
        );
    }
    let staging_apps_digest = stdout(
        &staging.kubectl(
            &ea_jsonpath("apps", "{.status.artifact.digest}")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
    );

    // A commit to production's folder reaches production; staging's apps artifact does not move.
    // The work tree catches up with the commits bootstrap pushed.
    ferroflux_testkit::git(&repo.work(), &["pull", "-q", "--rebase", "origin", "main"]);
    repo.write("apps/production/podinfo-values.yaml", &replicas_patch(3));
    repo.commit_and_push("production: 3 replicas");
    let out = ferroflux(
        args(&[
            "reconcile",
            "source",
            "git",
            "flux-system",
            "--kubeconfig",
            production.kubeconfig.to_str().unwrap(),
        ]),
        vec![],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    kubectl_until(
        &production,
        &[
            "-n",
            "podinfo",
            "get",
            "deployment",
            "podinfo",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        |s| s == "3",
        "production scaled to 3",
    )
    .await;
    let out = ferroflux(
        args(&[
            "reconcile",
            "source",
            "git",
            "flux-system",
            "--kubeconfig",
            staging.kubeconfig.to_str().unwrap(),
        ]),
        vec![],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let new_head = repo.head().unwrap();
    // Staging's generator has composed from the new commit (its apps artifact names it as
    // origin), yet that artifact (base + staging) is byte for byte the one it had.
    kubectl_until(
        &staging,
        &ea_jsonpath(
            "apps",
            "{.status.artifact.metadata.org\\.opencontainers\\.image\\.revision}",
        )
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
        |s| s.contains(&new_head),
        "staging's generator read the new commit",
    )
    .await;
    let digest_now = stdout(
        &staging.kubectl(
            &ea_jsonpath("apps", "{.status.artifact.digest}")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
    );
    assert_eq!(digest_now, staging_apps_digest);
    let got = staging.kubectl(&[
        "-n",
        "podinfo",
        "get",
        "deployment",
        "podinfo",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(stdout(&got), "1");
    staging_mgr.shutdown().await.unwrap();
    production_mgr.shutdown().await.unwrap();
}
