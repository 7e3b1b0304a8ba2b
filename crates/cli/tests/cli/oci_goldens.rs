//! flux's OCIRepository flow (cmd/flux/source_oci_test.go) against the real OCIRepository
//! controller (in this process) and a real registry (Debian's docker-registry): `create source
//! oci thrfg --tag=6.3.5 --interval 10m`, `get`, `reconcile`, `suspend`, `resume`, `delete
//! --silent`, each compared with flux's golden (`fixtures/goldens/oci/`). flux's test pulls
//! ghcr.io's podinfo manifests; this one pushes an artifact tagged 6.3.5 to the local registry
//! instead, so the goldens' digest stands for the digest of that artifact's manifest.

use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_testkit::{Kubectl, Registry, RegistryOptions, flux_cluster, kubeconfig};
use std::process::Command;

const NS: &str = "oci-test";
/// The manifest digest of ghcr.io/stefanprodan/manifests/podinfo:6.3.5 in flux's goldens.
const FLUX_DIGEST: &str = "6c959c51ccbb952e5fe4737563338a0aaf975675dcf812912cf09e5463181871";

fn golden(file: &str, digest: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/goldens/oci/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("{{ .ns }}", NS)
    .replace(FLUX_DIGEST, digest)
    .replace(&FLUX_DIGEST[..8], &digest[..8])
}

#[test]
fn flux_oci_flow_matches_its_goldens() {
    let reg = Registry::start(RegistryOptions::default());
    let src = tempfile::tempdir().unwrap();
    std::fs::write(
        src.path().join("deployment.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  v: 6.3.5\n",
    )
    .unwrap();
    let url = format!("oci://{}/stefanprodan/manifests/podinfo", reg.host());
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["push", "artifact", &format!("{url}:6.3.5"), "--path"])
        .arg(src.path())
        .args(["--source", "https://github.com/stefanprodan/podinfo"])
        .args([
            "--revision",
            "6.3.5@sha1:67e2c98a60dc92283531412a9e604dd4bae005a9",
        ])
        .env("DOCKER_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // `✔ artifact successfully pushed to HOST/REPO@sha256:<digest>`
    let pushed = stderr(&out);
    let digest = pushed
        .rsplit_once("@sha256:")
        .map(|(_, d)| d.trim().to_string())
        .unwrap();
    assert_eq!(digest.len(), 64, "{pushed}");

    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("oci-goldens"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    Kubectl::at(&kc).ok(&["create", "namespace", NS], "");
    let store = tempfile::tempdir().unwrap();
    let storage = ferroflux_source::Storage::new(store.path(), "http://127.0.0.1:1").unwrap();
    let (_, task) = ferroflux_controller::ocirepository::controller(
        c.clone(),
        ferroflux_controller::ocirepository::Options { storage },
        1,
        std::sync::Arc::new(ferroflux_controller::Metrics::new()),
        Box::pin(std::future::pending()),
    );
    rt.spawn(task);

    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        let ns = format!("-n={NS}");
        all.push(&ns);
        ferroflux(&kc, &all)
    };
    let url_flag = format!("--url={url}");
    let cases: [(&[&str], &str); 6] = [
        (
            &[
                "create",
                "source",
                "oci",
                "thrfg",
                &url_flag,
                "--tag=6.3.5",
                "--interval",
                "10m",
            ],
            "create_source_oci.golden",
        ),
        (&["get", "source", "oci", "thrfg"], "get_oci.golden"),
        (
            &["reconcile", "source", "oci", "thrfg"],
            "reconcile_oci.golden",
        ),
        (&["suspend", "source", "oci", "thrfg"], "suspend_oci.golden"),
        (&["resume", "source", "oci", "thrfg"], "resume_oci.golden"),
        (
            &["delete", "source", "oci", "thrfg", "--silent"],
            "delete_oci.golden",
        ),
    ];
    for (args, file) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        // flux's harness compares stdout and stderr together.
        assert_eq!(
            format!("{}{}", stdout(&out), stderr(&out)),
            golden(file, &digest),
            "{args:?}"
        );
    }
}

/// flux's `diff artifact` cases (cmd/flux/diff_artifact_test.go) with its files
/// (`fixtures/goldens/diff-artifact/`): a single file pushed with `push artifact --path=FILE
/// --source=test --revision=test`, then diffed against itself (flux's golden) and against a
/// changed copy (flux's error, here followed by the number of paths, with the paths on stdout,
/// exit 1).
#[test]
fn flux_diff_artifact_cases() {
    let reg = Registry::start(RegistryOptions::default());
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/goldens/diff-artifact");
    let ff = |args: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(args)
            .env("DOCKER_CONFIG", "/nonexistent")
            .output()
            .unwrap()
    };
    let file = |f: &str| fixtures.join(f).to_string_lossy().into_owned();
    for (tag, local, same) in [
        ("1.0.0", "deployment.yaml", true),
        ("2.0.0", "deployment-diff.yaml", false),
    ] {
        let url = format!("oci://{}/podinfo:{tag}", reg.host());
        let out = ff(&[
            "push".into(),
            "artifact".into(),
            url.clone(),
            format!("--path={}", file("deployment.yaml")),
            "--source=test".into(),
            "--revision=test".into(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = ff(&[
            "diff".into(),
            "artifact".into(),
            url,
            format!("--path={}", file(local)),
        ]);
        if same {
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let golden = std::fs::read_to_string(fixtures.join("success.golden")).unwrap();
            assert_eq!(format!("{}{}", stdout(&out), stderr(&out)), golden);
        } else {
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(
                stderr(&out)
                    .starts_with("✗ the remote artifact contents differs from the local one"),
                "{}",
                stderr(&out)
            );
        }
    }
}
