//! HelmReleases through the CLI against the real controllers (the `Manager` of `ferroflux
//! controller`, in this process) on a devcluster: a Git repository holds the example's podinfo
//! chart and a Kustomization applies a HelmRelease built from it (a HelmChart from the
//! GitRepository). `reconcile hr --with-source` is compared with flux's golden, `tree` with the
//! objects the release made, and `events`/`stats` must show the HelmRelease. Nothing here writes
//! a Flux object's status.

use crate::repo::Repo;
use crate::run::{cells, ferroflux, runtime, stderr, stdout};
use ferroflux_api::{HelmRelease, Kustomization};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{eventually, flux_cluster, kubeconfig};
use kube::api::{Api, PostParams};
use serde_json::json;

/// The name of the GitRepository and of the HelmRelease, as flux's goldens use one name.
const NAME: &str = "podinfo";
const NS: &str = "flux-system";
const VERSION: &str = "6.7.1";

/// The example's chart of `version`, file by file, under `charts/podinfo/`.
fn chart(version: &str) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fleet-infra/charts/podinfo")
        .join(version);
    [
        "Chart.yaml",
        "values.yaml",
        "templates/deployment.yaml",
        "templates/service.yaml",
    ]
    .iter()
    .map(|f| {
        (
            format!("charts/podinfo/{f}"),
            std::fs::read_to_string(root.join(f)).unwrap(),
        )
    })
    .collect()
}

const RELEASE: &str = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 1h
  timeout: 1m
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef:
        kind: GitRepository
        name: podinfo
";

/// flux's golden `file` of `testdata/helmrelease`, with our names and revisions.
fn golden(file: &str, git_revision: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/goldens/helmrelease/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .replace("{{ .ns }}", NS)
        .replace("thrfg", NAME)
        .replace(
            "6.3.5@sha1:67e2c98a60dc92283531412a9e604dd4bae005a9",
            git_revision,
        )
        .replace("6.3.5", VERSION)
}

#[test]
fn reconcile_with_source_tree_events_and_stats_cover_helm_releases() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let mut files = chart(VERSION);
    files.push(("apps/release.yaml".into(), RELEASE.into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = Repo::with_files(&refs);
    let head = repo.head().unwrap();
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("staging").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        let repos: Api<ferroflux_api::GitRepository> = Api::namespaced(c.clone(), NS);
        let obj = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"interval": "1h", "url": repo.url(), "ref": {"branch": "main"}},
        }))
        .unwrap();
        repos.create(&PostParams::default(), &obj).await.unwrap();
        let kss: Api<Kustomization> = Api::namespaced(c.clone(), NS);
        let obj = serde_json::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": NS},
            "spec": {"interval": "1h", "prune": true, "path": "./apps", "wait": true,
                     "timeout": "1m", "sourceRef": {"kind": "GitRepository", "name": NAME}},
        }))
        .unwrap();
        kss.create(&PostParams::default(), &obj).await.unwrap();
        // `wait: true`: the Kustomization is Ready once the HelmRelease it applied is.
        eventually("apps Ready with the release installed", || async {
            let ks = kss.get("apps").await.ok()?;
            let status = ks.status?;
            let ready = status
                .conditions?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            (ready && status.last_applied_revision? == format!("main@sha1:{head}")).then_some(())
        })
        .await;
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let git_revision = format!("main@sha1:{head}");

    // flux's `reconcile hr --with-source`: the GitRepository, then the HelmChart the template
    // owns (`<namespace>-<name>`), then the HelmRelease, each waited for.
    let out = ferroflux(
        &kc,
        &["reconcile", "hr", NAME, "--with-source", "--timeout", "2m"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        golden("reconcile_helmrelease_from_git.golden", &git_revision)
    );

    // `tree`: the Kustomization applied the HelmRelease, which manages the chart's objects (in
    // Helm's install order).
    let release_objects =
        format!("HelmRelease/{NS}/{NAME}\n├── Service/{NS}/{NAME}\n└── Deployment/{NS}/{NAME}\n");
    let out = ferroflux(&kc, &["tree", "ks", "apps"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let nested: String = release_objects
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("└── {l}\n")
            } else {
                format!("    {l}\n")
            }
        })
        .collect();
    assert_eq!(stdout(&out), format!("Kustomization/{NS}/apps\n{nested}\n"));
    let out = ferroflux(&kc, &["tree", "ks", "apps", "--compact"]);
    assert_eq!(
        stdout(&out),
        format!("Kustomization/{NS}/apps\n└── HelmRelease/{NS}/{NAME}\n\n")
    );
    let out = ferroflux(&kc, &["tree", "hr", NAME]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{release_objects}\n"));
    let out = ferroflux(&kc, &["tree", "helmrelease", "missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("HelmRelease object 'missing' not found in \"flux-system\" namespace"),
        "{}",
        stderr(&out)
    );

    // `events --for HelmRelease/NAME`: the controller's install event.
    let out = ferroflux(&kc, &["events", "--for", &format!("HelmRelease/{NAME}")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = stdout(&out);
    assert!(
        events.contains(&format!("HelmRelease/{NAME}"))
            && events.contains("Helm install succeeded"),
        "{events}"
    );
    // `stats`: one HelmRelease running, none failing.
    let out = ferroflux(&kc, &["stats"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    let row = rows
        .iter()
        .find(|r| r.first().map(String::as_str) == Some("HelmRelease"))
        .unwrap_or_else(|| panic!("no HelmRelease row:\n{}", stdout(&out)));
    assert_eq!(row[1..3], ["1", "0"], "{}", stdout(&out));

    let hrs: Api<HelmRelease> = Api::namespaced(c.clone(), NS);
    let hr = rt.block_on(hrs.get(NAME)).unwrap();
    assert_eq!(
        hr.status.unwrap().helm_chart.as_deref(),
        Some("flux-system/flux-system-podinfo")
    );
    rt.block_on(async {
        manager.shutdown().await.unwrap();
        cl.shutdown().await;
    });
}
