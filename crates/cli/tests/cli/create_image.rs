//! `ferroflux create image repository|policy|update` and `delete image ...` against a
//! devcluster without the image reflector: without the image CRDs (a cluster installed before
//! ferroflux shipped them), a clear refusal and nothing written; with ferroflux's image CRDs, the
//! repository, policy and automation written from their `--export` (their create-and-wait flows
//! are image_reflector.rs's and image_automation.rs's), read back with kubectl, and all three
//! deleted with flux's lines. flux's `--export` goldens are run by the unit tests of
//! `create/image.rs`.

use crate::run::{ferroflux, runtime, stderr};
use ferroflux_testkit::{Kubectl, flux_cluster, kubeconfig};

const NS: &str = "flux-system";

#[test]
fn image_objects_are_stored_and_deleted() {
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
    let image_crds: Vec<_> = ferroflux_api::crds()
        .into_iter()
        .filter(|c| c.spec.group == "image.toolkit.fluxcd.io")
        .collect();
    assert_eq!(image_crds.len(), 3);
    for crd in &image_crds {
        let name = crd.metadata.name.as_deref().unwrap();
        kubectl.ok(&["delete", "crd", name, "--wait"], "");
    }
    let out = run(&repository);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ the cluster does not serve ImageRepository (image.toolkit.fluxcd.io/v1): the image \
         CRDs are not installed (`ferroflux install` installs them)\n"
    );
    let out = run(&["delete", "image", "policy", "p", "--silent"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("✗ the cluster does not serve ImagePolicy"),
        "{}",
        stderr(&out)
    );

    for crd in &image_crds {
        kubectl.ok(&["create", "-f", "-"], &serde_json::to_string(crd).unwrap());
    }
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

    // Without a controller (the image reflector is tested in image_reflector.rs), the
    // repository and the policy are written from their `--export`, then deleted below.
    for args in [
        &repository[..],
        &[
            "create",
            "image",
            "policy",
            "podinfo-semver",
            "--image-ref=podinfo",
            "--interval=10m",
            "--reflect-digest=Always",
            "--select-semver=5.0.x",
        ][..],
    ] {
        let mut export = args.to_vec();
        export.push("--export");
        let out = run(&export);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        kubectl.ok(&["apply", "-f", "-"], &crate::run::stdout(&out));
    }
    let spec = kubectl.json(&["get", "imagerepository", "podinfo", "-n", NS]);
    assert_eq!(spec["spec"]["image"], "ghcr.io/stefanprodan/podinfo");
    assert_eq!(spec["spec"]["interval"], "10m0s");
    // The CRD's defaults, as Flux's.
    assert_eq!(spec["spec"]["provider"], "generic");
    let got = kubectl.json(&["get", "imagepolicy", "podinfo-semver", "-n", NS]);
    assert_eq!(got["spec"]["policy"]["semver"]["range"], "5.0.x");
    assert_eq!(got["spec"]["digestReflectionPolicy"], "Always");

    // The automation too (its create-and-wait flow is image_automation.rs's).
    let out = run(&[
        "create",
        "image",
        "update",
        "flux-system",
        "--git-repo-ref=flux-system",
        "--checkout-branch=main",
        "--author-name=flux",
        "--author-email=flux@example.com",
        "--export",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    kubectl.ok(&["apply", "-f", "-"], &crate::run::stdout(&out));
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
