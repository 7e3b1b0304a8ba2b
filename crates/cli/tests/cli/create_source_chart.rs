//! `ferroflux create source chart`: flux's cases (cmd/flux/create_source_chart_test.go) with
//! `--export`, compared with its goldens (`fixtures/goldens/create_source_chart/`, what flux
//! prints on both streams), and its messages for bad flags. As flux's test, the goldens are
//! made after the HelmRepository of `setup-source.yaml` was put in a devcluster.

use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;
use std::process::{Command, Output};

fn create(args: &str) -> Output {
    create_at(None, args)
}

fn create_at(kubeconfig: Option<&Path>, args: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferroflux"));
    cmd.args(["create", "source", "chart"])
        .args(args.split_whitespace())
        .args(["-n", "flux-system"]);
    if let Some(kc) = kubeconfig {
        cmd.arg("--kubeconfig").arg(kc);
    }
    cmd.output().unwrap()
}

fn golden(file: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/goldens/create_source_chart/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("{{ .fluxns }}", "flux-system")
}

#[test]
fn export_matches_flux_goldens() {
    let rt = crate::run::runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("source-chart"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    Kubectl::at(&kc).ok(&["apply", "-f", "-"], &golden("setup-source.yaml"));
    // flux's test harness leaves --interval at zero; a user gets its 1m default.
    let cases = [
        (
            "podinfo --source helmrepository/podinfo --chart podinfo",
            "basic.yaml",
        ),
        (
            "podinfo --source helmrepository/podinfo --chart podinfo --verify-provider cosign",
            "verify_basic.yaml",
        ),
        (
            "podinfo --source helmrepository/podinfo --chart podinfo --verify-provider cosign --verify-issuer foo --verify-subject bar",
            "verify_complete.yaml",
        ),
    ];
    for (args, file) in cases {
        let out = create_at(Some(&kc), &format!("{args} --interval 0s --export"));
        assert_eq!(out.status.code(), Some(0), "{args}");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(printed, golden(file), "{args}");
    }
    let out = create("podinfo --source GitRepository/fleet --chart ./charts/podinfo --export");
    assert!(String::from_utf8_lossy(&out.stdout).contains("  interval: 1m0s\n"));
}

#[test]
fn bad_flags_get_flux_messages() {
    let cases = [
        ("--export", "name is required"),
        ("podinfo --export", "chart source is required"),
        (
            "podinfo --source helmrepository/podinfo --export",
            "chart name or path is required",
        ),
        (
            "podinfo --source foobar/podinfo --export",
            "invalid argument \"foobar/podinfo\" for \"--source\" flag: source kind 'foobar' is not supported, must be one of: HelmRepository, GitRepository, Bucket",
        ),
        (
            "podinfo --source helmrepository/podinfo --chart podinfo --verify-provider foobar --export",
            "invalid argument \"foobar\" for \"--verify-provider\" flag: source OCI verify provider 'foobar' is not supported, must be one of: cosign",
        ),
    ];
    for (args, message) in cases {
        let out = create(args);
        assert_eq!(out.status.code(), Some(1), "{args}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("✗ {message}\n"),
            "{args}"
        );
        assert!(out.stdout.is_empty(), "{args}");
    }
}
