//! `ferroflux get` against flux's `testdata/get/` (`fixtures/goldens/get/`): the objects of each
//! of flux's tests put in a devcluster serving Flux's CRDs (statuses written through the status
//! subresource, as the controllers would), then the commands flux's tests run: label selectors
//! (`-l key=value`, `-l 'key notin (a, b)'`), status selectors (`Ready=True`, `Ready=False`,
//! `Ready!=True`, a condition no object has), the synthetic Ready of Alerts and Providers, and
//! `get all` filtered; and the bad selectors.

use crate::run::{ferroflux, stderr, stdout, text};
use crate::trace::create_objects;
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;

fn fixture(file: &str, ns: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/get")
            .join(file),
    )
    .unwrap()
    .replace("{{ .fluxns }}", ns)
}

#[test]
fn get_matches_flux_goldens() {
    let rt = crate::run::runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("get-goldens"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    let mut failed = Vec::new();
    let mut golden = |args: &[&str], ns: &str, want: String| {
        let mut full = args.to_vec();
        full.extend(["-n", ns]);
        let out = ferroflux(&kc, &full);
        if !out.status.success() || stdout(&out) != want {
            failed.push(format!(
                "{args:?}:\n--- got\n{}--- want\n{want}",
                text(&out)
            ));
        }
    };

    // Test_GetCmd: label selectors.
    create_objects(&kubectl, &fixture("objects.yaml", "get-labels"));
    for (selector, file) in [
        (None, "get.golden"),
        (
            Some("sharding.fluxcd.io/key=shard1"),
            "get_label_one.golden",
        ),
        (
            Some("sharding.fluxcd.io/key notin (shard1, shard2)"),
            "get_label_two.golden",
        ),
    ] {
        let mut args = vec!["get", "sources", "git"];
        if let Some(s) = selector {
            args.extend(["-l", s]);
        }
        golden(&args, "get-labels", fixture(file, ""));
    }

    // Test_GetCmdStatusSelector and Test_GetAllCmdStatusSelectorNoMatches.
    create_objects(&kubectl, &fixture("status_objects.yaml", "get-status"));
    for (selector, file) in [
        ("Ready=True", "get_status_ready_true.golden"),
        ("Ready=False", "get_status_ready_false.golden"),
        ("Ready!=True", "get_status_ready_not_true.golden"),
    ] {
        golden(
            &["get", "sources", "git", "--status-selector", selector],
            "get-status",
            fixture(file, ""),
        );
    }
    golden(
        &["get", "all", "--status-selector", "foo=bar"],
        "get-status",
        String::new(),
    );

    // Test_GetCmdStatusSelectorSyntheticReady: Alerts and Providers have no status and are
    // shown ready, so Ready=True keeps them all.
    create_objects(
        &kubectl,
        &fixture("notification_objects.yaml", "get-notifications"),
    );
    // Test_GetAllCmdStatusSelectorKustomizationOnly*.
    create_objects(&kubectl, &fixture("kustomization_only.yaml", "get-ks-only"));
    kubectl.ok(&["create", "namespace", "get-empty"], "");
    let run = |args: &[&str], ns: &str| {
        let mut full = args.to_vec();
        full.extend(["-n", ns]);
        let out = ferroflux(&kc, &full);
        assert!(out.status.success(), "{full:?}: {}", text(&out));
        stdout(&out)
    };
    for command in [
        &["get", "alerts"][..],
        &["get", "alert-providers"],
        &["get", "all"],
    ] {
        let unfiltered = run(command, "get-notifications");
        assert!(!unfiltered.is_empty(), "{command:?}");
        let mut filtered = command.to_vec();
        filtered.extend(["--status-selector", "Ready=True"]);
        assert_eq!(
            run(&filtered, "get-notifications"),
            unfiltered,
            "{command:?}"
        );
    }
    let unfiltered = run(&["get", "all"], "get-ks-only");
    assert!(unfiltered.contains("kustomization/podinfo"), "{unfiltered}");
    assert_eq!(
        run(
            &["get", "all", "--status-selector", "Ready=True"],
            "get-ks-only"
        ),
        unfiltered
    );
    assert_eq!(
        run(
            &["get", "all", "--status-selector", "Ready=False"],
            "get-ks-only"
        ),
        run(&["get", "all"], "get-empty")
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));

    // Bad selectors: flux's messages, before anything is listed.
    for (args, message) in [
        (
            &[
                "get",
                "sources",
                "git",
                "-l",
                "sharding.fluxcd.io/key in (a",
            ][..],
            "unable to parse label selector: ",
        ),
        (
            &["get", "sources", "git", "--status-selector", "ready"],
            "expected status selector in type=status or type!=status format, but found: ready",
        ),
    ] {
        let mut full = args.to_vec();
        full.extend(["-n", "get-labels"]);
        let out = ferroflux(&kc, &full);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).starts_with(&format!("✗ {message}")),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(stdout(&out), "", "{args:?}");
    }
}
