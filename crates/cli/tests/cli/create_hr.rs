//! `ferroflux create helmrelease`: flux's cases (cmd/flux/create_helmrelease_test.go) as its test
//! runs them: the sources of `fixtures/goldens/create_hr/setup-source.yaml` put in a devcluster
//! first, then each command with `-n <namespace>`, compared with flux's messages and its export
//! goldens (`fixtures/goldens/helmrelease/{basic,or_basic,hc_basic}.yaml`).

use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;

const NS: &str = "create-hr";

fn fixture(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens")
            .join(path),
    )
    .unwrap()
    .replace("{{ .fluxns }}", NS)
}

#[test]
fn flux_create_helmrelease_cases() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("create-hr"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    Kubectl::at(&kc).ok(
        &["apply", "-f", "-"],
        &fixture("create_hr/setup-source.yaml"),
    );

    let errors = [
        ("create helmrelease --export", "name is required"),
        (
            "create helmrelease podinfo --export",
            "chart or chart-ref is required",
        ),
        (
            "create helmrelease podinfo --chart podinfo --chart-ref foobar/podinfo --export",
            "cannot use --chart in combination with --chart-ref",
        ),
        (
            "create helmrelease podinfo --source foobar/podinfo --chart podinfo --export",
            "invalid argument \"foobar/podinfo\" for \"--source\" flag: source kind 'foobar' is not supported, must be one of: HelmRepository, GitRepository, Bucket",
        ),
        (
            "create helmrelease podinfo --chart-ref foobar/podinfo --export",
            "chart reference kind 'foobar' is not supported, must be one of: OCIRepository, HelmChart",
        ),
    ];
    for (args, message) in errors {
        let mut all: Vec<&str> = args.split_whitespace().collect();
        all.extend(["-n", NS]);
        let out = ferroflux(&kc, &all);
        assert_eq!(out.status.code(), Some(1), "{args}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args}");
    }
    let goldens = [
        (
            "create helmrelease podinfo --source Helmrepository/podinfo --chart podinfo --interval=1m0s --export",
            "helmrelease/basic.yaml",
        ),
        (
            "create helmrelease podinfo --chart-ref OCIRepository/podinfo --interval=1m0s --export",
            "helmrelease/or_basic.yaml",
        ),
        (
            "create helmrelease podinfo --chart-ref HelmChart/podinfo --interval=1m0s --export",
            "helmrelease/hc_basic.yaml",
        ),
    ];
    for (args, golden) in goldens {
        let mut all: Vec<&str> = args.split_whitespace().collect();
        all.extend(["-n", NS]);
        let out = ferroflux(&kc, &all);
        assert_eq!(out.status.code(), Some(0), "{args}: {}", stderr(&out));
        assert_eq!(stdout(&out), fixture(golden), "{args}");
    }
}
