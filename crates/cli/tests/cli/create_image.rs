//! `ferroflux create image repository|policy|update` and `delete image ...` against a
//! devcluster: without the image automation CRDs, a clear refusal and nothing written; with
//! them (stand-ins of our own, `fixtures/image-automation-crds.yaml`), the objects are created
//! with flux's lines, updated in place, said plainly not to be reconciled by anything here (no
//! wait), read back with kubectl, and deleted with flux's lines. flux's `--export` goldens are
//! run by the unit tests of `create/image.rs`.

use crate::run::{ferroflux, runtime, stderr};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};
use std::path::Path;

const NS: &str = "flux-system";

#[test]
fn image_objects_are_stored_and_deleted_without_a_controller() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, _c) = rt.block_on(flux_cluster("images"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-n", NS]);
        ferroflux(&kc, &all)
    };
    let repository = [
        "create",
        "image",
        "repository",
        "podinfo",
        "--image=ghcr.io/stefanprodan/podinfo",
        "--interval=10m",
    ];

    // No CRD: refused, before anything is printed as applied.
    let out = run(&repository);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ the cluster does not serve ImageRepository (image.toolkit.fluxcd.io/v1): the image \
         automation CRDs are not installed (ferroflux runs no image automation controller and \
         installs none)\n"
    );
    let out = run(&["delete", "image", "policy", "p", "--silent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("✗ the cluster does not serve ImagePolicy"),
        "{}",
        stderr(&out)
    );

    let crds = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/image-automation-crds.yaml"),
    )
    .unwrap();
    kubectl.ok(&["apply", "-f", "-"], &crds);
    for crd in [
        "imagerepositories",
        "imagepolicies",
        "imageupdateautomations",
    ] {
        kubectl.ok(
            &[
                "wait",
                "--for=condition=Established",
                &format!("crd/{crd}.image.toolkit.fluxcd.io"),
            ],
            "",
        );
    }

    let unreconciled = |kind: &str, name: &str| {
        format!(
            "⚠\u{fe0f} {kind} {NS}/{name} is stored, but ferroflux runs no image automation controller: \
             nothing will reconcile it\n"
        )
    };
    let out = run(&repository);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "✚ generating ImageRepository\n► applying ImageRepository\n✔ ImageRepository created\n{}",
            unreconciled("ImageRepository", "podinfo")
        )
    );
    let spec = kubectl.json(&["get", "imagerepository", "podinfo", "-n", NS]);
    assert_eq!(spec["spec"]["image"], "ghcr.io/stefanprodan/podinfo");
    assert_eq!(spec["spec"]["interval"], "10m0s");

    // flux's test's policy, then the same name again: updated in place.
    let policy = [
        "create",
        "image",
        "policy",
        "podinfo-semver",
        "--image-ref=podinfo",
        "--interval=10m",
        "--reflect-digest=Always",
        "--select-semver=5.0.x",
    ];
    let out = run(&policy);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("✔ ImagePolicy created\n"));
    let mut again = policy.to_vec();
    again[7] = "--select-semver=5.1.x";
    let out = run(&again);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "✚ generating ImagePolicy\n► applying ImagePolicy\n✔ ImagePolicy updated\n{}",
            unreconciled("ImagePolicy", "podinfo-semver")
        )
    );
    let got = kubectl.json(&["get", "imagepolicy", "podinfo-semver", "-n", NS]);
    assert_eq!(got["spec"]["policy"]["semver"]["range"], "5.1.x");
    assert_eq!(got["spec"]["digestReflectionPolicy"], "Always");

    let out = run(&[
        "create",
        "image",
        "update",
        "flux-system",
        "--git-repo-ref=flux-system",
        "--checkout-branch=main",
        "--author-name=flux",
        "--author-email=flux@example.com",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = kubectl.json(&["get", "imageupdateautomation", "flux-system", "-n", NS]);
    assert_eq!(got["spec"]["git"]["checkout"]["ref"]["branch"], "main");

    // Deleted with flux's lines; a second delete finds nothing.
    for (kind, human, name) in [
        ("repository", "image repository", "podinfo"),
        ("policy", "image policy", "podinfo-semver"),
        ("update", "image update automation", "flux-system"),
    ] {
        let out = run(&["delete", "image", kind, name, "--silent"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!("► deleting {human} {name} in {NS} namespace\n✔ {human} deleted\n")
        );
    }
    let out = run(&["delete", "image", "repository", "podinfo", "--silent"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ imagerepositories.image.toolkit.fluxcd.io \"podinfo\" not found\n"
    );
}
