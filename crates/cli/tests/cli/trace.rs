//! `ferroflux trace` against flux's goldens (`fixtures/goldens/trace/`): each case's objects
//! created in a devcluster serving Flux's CRDs (statuses written through the status subresource,
//! as flux's test does), then traced with flux's command line; and the bad input.

use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use serde_json::Value;
use std::path::Path;

fn fixture(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/trace")
            .join(file),
    )
    .unwrap()
}

/// Creates every document of `yaml`, then writes its status as a controller would.
pub fn create_objects(kubectl: &Kubectl, yaml: &str) {
    for doc in yaml.split("\n---\n").map(|d| d.trim_start_matches("---\n")) {
        if doc.trim().is_empty() {
            continue;
        }
        let value: Value = serde_saphyr::from_str(doc).unwrap();
        let mut without_status = value.clone();
        without_status.as_object_mut().unwrap().remove("status");
        kubectl.ok(&["create", "-f", "-"], &without_status.to_string());
        if let Some(status) = value.get("status") {
            let mut args = vec![
                "patch".to_string(),
                value["kind"].as_str().unwrap().to_lowercase(),
                value["metadata"]["name"].as_str().unwrap().to_string(),
                "--subresource=status".into(),
                "--type=merge".into(),
                "-p".into(),
                serde_json::json!({ "status": status }).to_string(),
            ];
            if let Some(ns) = value["metadata"]["namespace"].as_str() {
                args.extend(["-n".into(), ns.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl.ok(&args, "");
        }
    }
}

#[test]
fn traces_match_flux_goldens() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("trace"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    let times = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, t)| {
                let ts: k8s_openapi::jiff::Timestamp = t.parse().unwrap();
                (
                    format!("{{{{ .{k} }}}}"),
                    ts.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
                )
            })
            .collect()
    };
    let cases = [
        (
            "deployment",
            &[
                "trace",
                "podinfo",
                "--kind",
                "deployment",
                "--api-version=apps/v1",
            ][..],
            times(&[
                ("helmReleaseLastReconcile", "2021-07-16T15:42:20Z"),
                ("helmChartLastReconcile", "2021-07-16T15:32:09Z"),
                ("helmRepositoryLastReconcile", "2021-07-11T00:25:46Z"),
            ]),
        ),
        (
            "helmrelease",
            &[
                "trace",
                "podinfo",
                "--kind",
                "HelmRelease",
                "--api-version=helm.toolkit.fluxcd.io/v2",
            ][..],
            times(&[
                ("kustomizationLastReconcile", "2021-08-01T04:52:56Z"),
                ("gitRepositoryLastReconcile", "2021-07-20T00:48:16Z"),
            ]),
        ),
        (
            "helmrelease-oci",
            &[
                "trace",
                "podinfo",
                "--kind",
                "HelmRelease",
                "--api-version=helm.toolkit.fluxcd.io/v2",
            ][..],
            times(&[
                ("kustomizationLastReconcile", "2021-08-01T04:52:56Z"),
                ("ociRepositoryLastReconcile", "2021-07-20T00:48:16Z"),
            ]),
        ),
        (
            "deployment-hr-ocirepo",
            &[
                "trace",
                "podinfo",
                "--kind",
                "deployment",
                "--api-version=apps/v1",
            ][..],
            times(&[
                ("helmReleaseLastReconcile", "2021-07-16T15:42:20Z"),
                ("ociRepositoryLastReconcile", "2021-07-20T00:48:16Z"),
            ]),
        ),
    ];
    let mut failed = Vec::new();
    for (i, (case, args, times)) in cases.iter().enumerate() {
        // Each case in namespaces of its own, as flux's test allocates them.
        let ns = format!("podinfo-{i}");
        let fluxns = format!("flux-system-{i}");
        let fill = |text: &str| {
            let mut text = text
                .replace("{{ .ns }}", &ns)
                .replace("{{ .fluxns }}", &fluxns);
            for (k, v) in times {
                text = text.replace(k, v);
            }
            text
        };
        create_objects(&kubectl, &fill(&fixture(&format!("{case}.yaml"))));
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["-n", &ns]);
        let out = ferroflux(&kc, &full);
        let want = fill(&fixture(&format!("{case}.golden")));
        if !out.status.success() || stdout(&out) != want {
            failed.push(format!(
                "{case}:\n--- got\n{}{}--- want\n{want}",
                stdout(&out),
                stderr(&out)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));

    // The kind/name form goes through discovery.
    let out = ferroflux(&kc, &["trace", "deployment/podinfo", "-n", "podinfo-0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("\nObject:         deployment/podinfo\n"),
        "{}",
        stdout(&out)
    );

    // Bad input.
    kubectl.ok(&["create", "configmap", "plain", "-n", "podinfo-0"], "");
    for (args, message) in [
        (
            vec!["trace"],
            "either `<resource>/<name>` or `<resource> <name>` is required as an argument"
                .to_string(),
        ),
        (
            vec!["trace", "podinfo", "--kind", "deployment"],
            "object apiVersion is required (--api-version)".into(),
        ),
        (
            vec![
                "trace",
                "nope",
                "--kind",
                "Deployment",
                "--api-version=apps/v1",
                "-n",
                "podinfo-0",
            ],
            "failed to find object: deployments.apps \"nope\" not found".into(),
        ),
    ] {
        let out = ferroflux(&kc, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
    }
    // An object found but managed by no Flux object: flux says so on stderr (no `✗`), prints
    // nothing on stdout and exits 0.
    let out = ferroflux(&kc, &["trace", "configmap", "plain", "-n", "podinfo-0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "failed to trace ConfigMap/plain in namespace podinfo-0: object not managed by Flux\n"
    );
}
