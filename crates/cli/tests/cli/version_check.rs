//! `version` and `check` against a cluster running flux's own controllers beside ferroflux's
//! CRDs (Deployments the devcluster simulates): flux's `check --pre` golden, the cluster info
//! read from the GitRepository CRD's labels in each case of flux's `cluster_info` test (its
//! `gitrepositories.yaml`, labelled as the case says), every installed controller in `check`
//! and in `version`, and the bad input.

use crate::run::{ferroflux, stderr, stdout, text};
use ferroflux_testkit::{Kubectl, eventually};
use serde_json::{Value, json};
use std::path::Path;

const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));

fn fixture(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens")
            .join(file),
    )
    .unwrap()
}

/// flux's controllers as flux installs them: one Deployment each, labelled part of flux.
const CONTROLLERS: &[(&str, &str)] = &[
    ("source-controller", "v1.7.0"),
    ("kustomize-controller", "v1.7.0"),
    ("helm-controller", "v1.4.0"),
    ("notification-controller", "v1.7.0"),
    ("source-watcher", "v2.0.0"),
];

fn deployment(name: &str, image: &str, part_of_flux: bool) -> Value {
    let mut labels = json!({"app.kubernetes.io/component": name});
    if part_of_flux {
        labels["app.kubernetes.io/part-of"] = json!("flux");
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "flux-system", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "manager", "image": image}]},
            },
        },
    })
}

#[test]
fn check_pre_matches_flux_golden() {
    let rt = crate::run::runtime();
    let c = rt.block_on(ferroflux_testkit::Cluster::start("check-pre"));
    let server: Value = Kubectl::at(&c.kubeconfig).json(&["version", "-o", "json"]);
    let version = server["serverVersion"]["gitVersion"]
        .as_str()
        .unwrap()
        .trim_start_matches('v')
        .to_string();
    let out = ferroflux(&c.kubeconfig, &["check", "--pre"]);
    assert!(out.status.success(), "{}", text(&out));
    // flux's logger writes these lines on stderr.
    assert_eq!(
        stderr(&out),
        fixture("check/check_pre.golden").replace("{{ .serverVersion }}", &version)
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn version_and_check_read_every_controller_and_the_cluster_info() {
    let rt = crate::run::runtime();
    let c = rt.block_on(ferroflux_testkit::Cluster::start("cluster-info"));
    let kc = &c.kubeconfig;
    let kubectl = Kubectl::at(kc);
    kubectl.ok(&["create", "namespace", "flux-system"], "");

    // No Deployment yet: flux's message.
    let out = ferroflux(kc, &["version"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        stderr(&out),
        "✗ no deployments found in flux-system namespace\n"
    );
    // --client never asks the cluster.
    let out = ferroflux(kc, &["version", "--client", "--context", "nowhere"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(stdout(&out), format!("ferroflux: {VERSION}\n"));
    let out = ferroflux(kc, &["version", "--client", "-o", "json"]);
    assert_eq!(
        stdout(&out),
        format!("{{\n  \"ferroflux\": \"{VERSION}\"\n}}\n")
    );
    let out = ferroflux(kc, &["version", "-o", "table"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "✗ --output must be json or yaml, not table\n");

    let mut objects: Vec<Value> = CONTROLLERS
        .iter()
        .map(|(name, tag)| deployment(name, &format!("ghcr.io/fluxcd/{name}:{tag}"), true))
        .collect();
    // Not part of flux: neither listed nor checked.
    objects.push(deployment(
        "podinfo",
        "ghcr.io/stefanprodan/podinfo:6.8.0",
        false,
    ));
    for o in &objects {
        kubectl.ok(&["apply", "-f", "-"], &o.to_string());
    }
    let mut controllers = String::new();
    for (name, tag) in {
        let mut sorted = CONTROLLERS.to_vec();
        sorted.sort();
        sorted
    } {
        controllers.push_str(&format!("{name}: {tag}\n"));
    }

    // Without the GitRepository CRD the controllers are listed, without a distribution.
    let out = ferroflux(kc, &["version"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(stdout(&out), format!("ferroflux: {VERSION}\n{controllers}"));
    let check = ferroflux(kc, &["check", "--timeout", "30s"]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(
        stderr(&check).contains(
            "✗ checking failed: customresourcedefinitions.apiextensions.k8s.io \
             \"gitrepositories.source.toolkit.fluxcd.io\" not found\n"
        ),
        "{}",
        stderr(&check)
    );
    // Every controller installed is waited for and its image shown, in the API's order.
    let mut names: Vec<&str> = CONTROLLERS.iter().map(|(n, _)| *n).collect();
    names.sort();
    let mut want = String::from("► checking controllers\n");
    for name in &names {
        let tag = CONTROLLERS.iter().find(|(n, _)| n == name).unwrap().1;
        want.push_str(&format!(
            "✔ {name}: deployment ready\n► ghcr.io/fluxcd/{name}:{tag}\n"
        ));
    }
    want.push_str("► checking crds\n");
    assert!(stderr(&check).contains(&want), "{}", stderr(&check));
    assert!(!stderr(&check).contains("podinfo"), "{}", stderr(&check));

    // flux's CRD, labelled in turn as each case of its cluster_info test.
    kubectl.ok(
        &["apply", "-f", "-"],
        &fixture("cluster_info/gitrepositories.yaml"),
    );
    let crd = "crd/gitrepositories.source.toolkit.fluxcd.io";
    rt.block_on(eventually("the GitRepository CRD served", || async {
        let out = kubectl.run(&["get", "gitrepositories", "-A"], "");
        out.status.success().then_some(())
    }));
    let all_labels = [
        "kustomize.toolkit.fluxcd.io/name",
        "kustomize.toolkit.fluxcd.io/namespace",
        "app.kubernetes.io/version",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/part-of",
    ];
    // The CRD's labels, the distribution flux derives and whether it was bootstrapped.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, bool);
    let cases: &[Case] = &[
        (
            &[
                ("kustomize.toolkit.fluxcd.io/name", "flux-system"),
                ("kustomize.toolkit.fluxcd.io/namespace", "flux-system"),
                ("app.kubernetes.io/version", "v2.1.0"),
            ],
            Some("v2.1.0"),
            true,
        ),
        (
            &[
                ("kustomize.toolkit.fluxcd.io/name", "flux-system"),
                ("kustomize.toolkit.fluxcd.io/namespace", "flux-system"),
                ("app.kubernetes.io/version", "v2.1.0"),
                ("app.kubernetes.io/managed-by", "flux"),
            ],
            Some("v2.1.0"),
            true,
        ),
        (
            &[
                ("app.kubernetes.io/version", "v2.1.0"),
                ("app.kubernetes.io/managed-by", "helm"),
            ],
            Some("v2.1.0"),
            false,
        ),
        (&[], None, false),
        (
            &[("app.kubernetes.io/version", "v2.1.0")],
            Some("v2.1.0"),
            false,
        ),
        (
            &[
                ("app.kubernetes.io/version", "v2.1.0"),
                ("app.kubernetes.io/part-of", "flux"),
            ],
            Some("flux-v2.1.0"),
            false,
        ),
    ];
    for (labels, distribution, bootstrapped) in cases {
        let mut args: Vec<String> = vec!["label".into(), crd.into(), "--overwrite".into()];
        args.extend(all_labels.iter().map(|l| format!("{l}-")));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        kubectl.ok(&refs, "");
        if !labels.is_empty() {
            let mut args: Vec<String> = vec!["label".into(), crd.into()];
            args.extend(labels.iter().map(|(k, v)| format!("{k}={v}")));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl.ok(&refs, "");
        }
        let out = ferroflux(kc, &["version"]);
        assert!(out.status.success(), "{labels:?}: {}", text(&out));
        let line = distribution
            .map(|d| format!("distribution: {d}\n"))
            .unwrap_or_default();
        assert_eq!(
            stdout(&out),
            format!("ferroflux: {VERSION}\n{line}{controllers}"),
            "{labels:?}"
        );
        let json: Value =
            serde_json::from_slice(&ferroflux(kc, &["version", "-o", "json"]).stdout).unwrap();
        assert_eq!(
            json.get("distribution").and_then(Value::as_str),
            *distribution,
            "{labels:?}"
        );
        assert_eq!(json["helm-controller"], "v1.4.0");
        let check = ferroflux(kc, &["check", "--timeout", "30s"]);
        let log = stderr(&check);
        let mut want = String::from("► checking version in cluster\n");
        want.push_str(
            &distribution
                .map(|d| format!("✔ distribution: {d}\n"))
                .unwrap_or_default(),
        );
        want.push_str(&format!("✔ bootstrapped: {bootstrapped}\n"));
        assert!(log.contains(&want), "{labels:?}: {log}");
        // flux's CRD is listed with its stored version when labelled part of flux (the
        // label `check` selects by); ours, missing, fail the check.
        let part_of = labels
            .iter()
            .any(|(k, _)| *k == "app.kubernetes.io/part-of");
        assert_eq!(
            log.contains("✔ gitrepositories.source.toolkit.fluxcd.io/v1\n"),
            part_of,
            "{log}"
        );
        assert_eq!(
            log.contains("✗ gitrepositories.source.toolkit.fluxcd.io is not installed\n"),
            !part_of,
            "{log}"
        );
        assert!(
            log.contains("✗ kustomizations.kustomize.toolkit.fluxcd.io is not installed\n"),
            "{log}"
        );
        assert!(log.ends_with("✗ check failed\n"), "{log}");
        assert_eq!(check.status.code(), Some(1));
    }
}
