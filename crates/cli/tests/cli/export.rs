//! `ferroflux export` against flux's goldens (`fixtures/goldens/export/`): flux's objects put in a
//! devcluster serving Flux's CRDs with kubectl, then each kind exported as flux's test does; and
//! the bad input (no name, an object that does not exist, `--all` over an empty namespace).

use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;

const NS: &str = "export-test";

/// A file of flux's export test, rendered as that test renders it: a Go template with `fluxns`
/// (so the objects file's `{{range .Updated.Images}}...` becomes an empty string).
fn fixture(file: &str) -> String {
    use ferroflux_gotemplate::{Template, Value};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/export")
            .join(file),
    )
    .unwrap();
    let mut template = Template::named(file);
    template.parse(file, &text).unwrap();
    let data = Value::from_json(&serde_json::json!({ "fluxns": NS }));
    template.execute(file, &data).unwrap()
}

/// The kinds flux's test exports that ferroflux serves, with flux's command line and golden.
/// The goldens hold the defaults Flux's CRDs declare, which the devcluster fills in as
/// kube-apiserver does; the image kinds' come from ferroflux's image CRDs (Flux's schema).
const CASES: &[(&[&str], &str)] = &[
    (&["alert-provider", "slack"], "provider.yaml"),
    (&["alert", "flux-system"], "alert.yaml"),
    (&["source", "git", "flux-system"], "git-repo.yaml"),
    (&["source", "chart", "flux-system"], "helm-chart.yaml"),
    (&["source", "helm", "flux-system"], "helm-repo.yaml"),
    (&["receiver", "flux-system"], "receiver.yaml"),
    (&["kustomization", "flux-system"], "ks.yaml"),
    (&["helmrelease", "flux-system"], "helm-release.yaml"),
    (
        &["source", "external", "flux-system"],
        "external-artifact.yaml",
    ),
    (&["image", "policy", "flux-system"], "image-policy.yaml"),
    (&["image", "repository", "flux-system"], "image-repo.yaml"),
    (&["image", "update", "flux-system"], "image-update.yaml"),
    (&["source", "bucket", "flux-system"], "bucket.yaml"),
];

#[test]
fn exports_match_flux_goldens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("export"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let served = [
        "Namespace",
        "Provider",
        "Alert",
        "GitRepository",
        "Kustomization",
        "Receiver",
        "HelmRepository",
        "HelmChart",
        "HelmRelease",
        "ExternalArtifact",
        "ImageRepository",
        "ImagePolicy",
        "ImageUpdateAutomation",
        "Bucket",
    ];
    let kubectl = Kubectl::at(&kc);
    let objects: Vec<String> = fixture("objects.yaml")
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n").to_string())
        .filter(|d| {
            d.lines()
                .find_map(|l| l.strip_prefix("kind: "))
                .is_some_and(|k| served.contains(&k.trim()))
        })
        .collect();
    assert_eq!(objects.len(), served.len(), "{objects:?}");
    // Created as flux's test does (no last-applied annotation).
    kubectl.ok(&["create", "-f", "-"], &objects.join("\n---\n"));
    let mut failed = Vec::new();
    for (args, file) in CASES {
        let mut full = vec!["export"];
        full.extend_from_slice(args);
        full.extend(["-n", NS]);
        let out = ferroflux(&kc, &full);
        if !out.status.success() || stdout(&out) != fixture(file) {
            failed.push(format!("{file}:\n{}{}", stdout(&out), stderr(&out)));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));

    // --all prints every object of the kind, each a document.
    let out = ferroflux(&kc, &["export", "ks", "--all", "-n", NS]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), fixture("ks.yaml"));

    // Bad input: flux's messages, nothing on stdout.
    for (args, message) in [
        (
            vec!["export", "ks", "-n", NS],
            "name is required".to_string(),
        ),
        (
            vec!["export", "ks", "nope", "-n", NS],
            "kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found".into(),
        ),
        (
            vec!["export", "hr", "--all", "-n", "default"],
            "no objects found in default namespace".into(),
        ),
    ] {
        let out = ferroflux(&kc, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
    }
}

/// `--with-credentials` prints the Secret a source names after the source.
#[test]
fn with_credentials_prints_the_sources_secret() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("export-creds"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    kubectl.ok(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-auth\n  namespace: flux-system\n\
         type: Opaque\nstringData:\n  username: git\n  password: pw\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n\
         \x20 namespace: flux-system\nspec:\n  interval: 10m\n  timeout: 60s\n  url: https://example.com/fleet\n\
         \x20 ref:\n    branch: main\n  secretRef:\n    name: git-auth\n",
    );
    let out = ferroflux(
        &kc,
        &["export", "source", "git", "fleet", "--with-credentials"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n\
         \x20 namespace: flux-system\nspec:\n  interval: 10m0s\n  ref:\n    branch: main\n  secretRef:\n\
         \x20   name: git-auth\n  timeout: 1m0s\n  url: https://example.com/fleet\n---\napiVersion: v1\n\
         data:\n  password: cHc=\n  username: Z2l0\nkind: Secret\nmetadata:\n  name: git-auth\n\
         \x20 namespace: flux-system\ntype: Opaque\n"
    );
}
