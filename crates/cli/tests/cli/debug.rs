//! `ferroflux debug kustomization` against flux's goldens (`fixtures/goldens/debug_kustomization/`,
//! flux's command lines): status, variables (read from the ConfigMap and Secret as the controller
//! reads them) and history; and its bad input.

use crate::run::{ferroflux, runtime, stderr, stdout};
use crate::trace::create_objects;
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;

const NS: &str = "debug-test";

fn fixture(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/debug_kustomization")
            .join(file),
    )
    .unwrap()
    .replace("{{ .fluxns }}", NS)
}

#[test]
fn debug_kustomization_matches_flux_goldens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("debug"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    create_objects(&Kubectl::at(&kc), &fixture("objects.yaml"));
    let mut failed = Vec::new();
    for (args, file) in [
        ("test --show-status --show-vars=false", "status.golden.yaml"),
        ("test --show-vars --show-status=false", "vars.golden.env"),
        (
            "test-from --show-vars --show-status=false",
            "vars-from.golden.env",
        ),
        (
            "test-with-history --show-history --show-status=false",
            "history.golden.yaml",
        ),
        (
            "test --show-history --show-status=false",
            "history-empty.golden.yaml",
        ),
    ] {
        let mut full = vec!["debug", "ks"];
        full.extend(args.split(' '));
        full.extend(["-n", NS]);
        let out = ferroflux(&kc, &full);
        if !out.status.success() || stdout(&out) != fixture(file) {
            failed.push(format!(
                "{file}:\n--- got\n{}{}--- want\n{}",
                stdout(&out),
                stderr(&out),
                fixture(file)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    for (args, message) in [
        (
            vec!["debug", "ks", "test", "-n", NS],
            "exactly one of --show-status, --show-vars, or --show-history must be set".to_string(),
        ),
        (
            vec![
                "debug",
                "ks",
                "test",
                "--show-status",
                "--show-vars",
                "-n",
                NS,
            ],
            "exactly one of --show-status, --show-vars, or --show-history must be set".into(),
        ),
        (
            vec!["debug", "ks", "nope", "--show-status", "-n", NS],
            "kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found".into(),
        ),
    ] {
        let out = ferroflux(&kc, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
    }
}

#[test]
fn debug_helmrelease_matches_flux_goldens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("debug-hr"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let fixture = |file: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/goldens/debug_helmrelease")
                .join(file),
        )
        .unwrap()
        .replace("{{ .fluxns }}", NS)
    };
    create_objects(&Kubectl::at(&kc), &fixture("objects.yaml"));
    let mut failed = Vec::new();
    for (args, file) in [
        (
            "test-values-inline --show-status --show-values=false",
            "status.golden.yaml",
        ),
        (
            "test-values-inline --show-values --show-status=false",
            "values-inline.golden.yaml",
        ),
        (
            "test-values-from --show-values --show-status=false",
            "values-from.golden.yaml",
        ),
        (
            "test-with-history --show-history --show-status=false",
            "history.golden.yaml",
        ),
        (
            "test-values-inline --show-history --show-status=false",
            "history-empty.golden.yaml",
        ),
    ] {
        let mut full = vec!["debug", "helmrelease"];
        full.extend(args.split(' '));
        full.extend(["-n", NS]);
        let out = ferroflux(&kc, &full);
        if !out.status.success() || stdout(&out) != fixture(file) {
            failed.push(format!(
                "{file}:\n--- got\n{}{}--- want\n{}",
                stdout(&out),
                stderr(&out),
                fixture(file)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    let out = ferroflux(&kc, &["debug", "hr", "test-values-inline", "-n", NS]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ exactly one of --show-status, --show-values, or --show-history must be set\n"
    );
}
