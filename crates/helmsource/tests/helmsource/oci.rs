//! Charts in a real OCI registry (Debian's docker-registry) with skopeo as the other client:
//! skopeo reads a chart we push (Helm's manifest, the archive as its layer), and we pull a
//! chart skopeo pushed (copied to another repository, digests preserved) through a semver
//! range; a missing tag lists the closest ones. Helm's own SDK pulls a chart we pushed and
//! pushes one we pull.

use ferroflux_helmsource::BuildOptions;
use ferroflux_helmsource::oci::{OciRepository, build_from_oci, push_chart};
use ferroflux_oci::ClientOptions;
use ferroflux_oci::manifest::{HELM_CONFIG, HELM_CONTENT};
use ferroflux_testkit::{Registry, RegistryOptions};
use std::path::Path;

fn chart(version: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../helm/tests/corpus/app-basic/chart");
    let mut files = ferroflux_helm::dir_files(&root).unwrap();
    for f in files.iter_mut().filter(|f| f.name == "Chart.yaml") {
        f.data = String::from_utf8(f.data.clone())
            .unwrap()
            .replace("version: 1.2.3", &format!("version: {version}"))
            .into_bytes();
    }
    ferroflux_helmsource::package("app", &files).unwrap()
}

#[test]
fn skopeo_reads_our_charts_and_we_pull_what_skopeo_pushes() {
    let reg = Registry::start(RegistryOptions::default());
    let ours = OciRepository::new(
        &format!("oci://{}/charts", reg.host()),
        ClientOptions::default(),
    )
    .unwrap();
    let archive = chart("1.2.3+build.1");
    let (pushed, digest) = push_chart(&ours, &archive).unwrap();
    assert_eq!(
        pushed.tag.as_deref(),
        Some("1.2.3_build.1"),
        "Helm's tag for '+'"
    );

    // skopeo sees Helm's manifest, and the chart's metadata as the config.
    let url = format!("docker://{}/charts/app:1.2.3_build.1", reg.host());
    let (ok, raw, err) = reg.skopeo(&["inspect", "--tls-verify=false", "--raw", &url]);
    assert!(ok, "{err}");
    let m: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(m["config"]["mediaType"], HELM_CONFIG);
    assert_eq!(m["layers"][0]["mediaType"], HELM_CONTENT);
    assert_eq!(ferroflux_oci::manifest::digest_of(raw.as_bytes()), digest);
    let (ok, config, err) =
        reg.skopeo(&["inspect", "--tls-verify=false", "--config", "--raw", &url]);
    assert!(ok, "{err}");
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(
        (config["name"].as_str(), config["version"].as_str()),
        (Some("app"), Some("1.2.3+build.1"))
    );
    // skopeo's copy into an OCI layout holds our archive as the layer blob.
    let layout = tempfile::tempdir().unwrap();
    let dest = format!("oci:{}:c", layout.path().display());
    let (ok, _, err) = reg.skopeo(&["copy", "--src-tls-verify=false", &url, &dest]);
    assert!(ok, "{err}");
    let layer_digest = m["layers"][0]["digest"].as_str().unwrap();
    let blob = std::fs::read(
        layout
            .path()
            .join("blobs/sha256")
            .join(layer_digest.trim_start_matches("sha256:")),
    )
    .unwrap();
    assert_eq!(blob, archive);

    // skopeo pushes charts to another repository; we pull them by range and by exact version.
    push_chart(&ours, &chart("1.3.0")).unwrap();
    for tag in ["1.2.3_build.1", "1.3.0"] {
        let (ok, _, err) = reg.skopeo(&[
            "copy",
            "--preserve-digests",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            &format!("docker://{}/charts/app:{tag}", reg.host()),
            &format!("docker://{}/mirror/app:{tag}", reg.host()),
        ]);
        assert!(ok, "{err}");
    }
    let mirror = OciRepository::new(
        &format!("oci://{}/mirror", reg.host()),
        ClientOptions::default(),
    )
    .unwrap();
    let got = build_from_oci(&mirror, "app", "~1.2.0-0", &BuildOptions::default()).unwrap();
    assert_eq!(got.build.version, "1.2.3+build.1");
    assert_eq!(got.build.archive.as_deref(), Some(archive.as_slice()));
    assert_eq!(got.digest.as_deref(), Some(digest.as_str()));
    let got = build_from_oci(&mirror, "app", "", &BuildOptions::default()).unwrap();
    assert_eq!(got.build.version, "1.3.0");

    // A range with no tag, and a version with none: the closest tags named.
    let e = build_from_oci(&mirror, "app", ">=2.0.0", &BuildOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        e,
        format!(
            "invalid chart reference: failed to get chart version for remote reference: could not locate a version matching provided version string >=2.0.0 in {}/mirror/app: closest tags: 1.3.0, 1.2.3+build.1",
            reg.host()
        )
    );
    let e = build_from_oci(&mirror, "app", "1.2.4", &BuildOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "chart pull error: failed to download chart for remote reference: failed to get 'oci://{}/mirror/app:1.2.4': ",
            reg.host()
        )) && e.contains("closest tags"),
        "{e}"
    );
}

/// Helm's own SDK (libhelm_c from PyPI helm-python-sdk, the oracle venv ./test.sh installs):
/// `helm pull` of a chart we pushed gets our archive, and a chart `helm push` wrote is pulled
/// by ours byte for byte.
#[test]
fn helm_sdk_pulls_what_we_push_and_we_pull_what_helm_pushes() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../helm/tests/oracle/venv/bin/python");
    assert!(
        python.exists(),
        "Helm's SDK venv is missing at {}: run ./test.sh",
        python.display()
    );
    let helm = |args: &[&str]| -> String {
        let script = r#"
import json, sys
from helm_python import registry
if sys.argv[1] == "pull":
    out = registry.pull(sys.argv[2], version=sys.argv[3], destination=sys.argv[4], plain_http=True)
else:
    out = registry.push(sys.argv[2], sys.argv[3], plain_http=True)
print(json.dumps(out))
"#;
        let out = std::process::Command::new(&python)
            .arg("-c")
            .arg(script)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "helm {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let reg = Registry::start(RegistryOptions::default());
    let ours = OciRepository::new(
        &format!("oci://{}/charts", reg.host()),
        ClientOptions::default(),
    )
    .unwrap();

    // Helm pulls what we pushed.
    let archive = chart("2.1.0");
    push_chart(&ours, &archive).unwrap();
    let dest = tempfile::tempdir().unwrap();
    helm(&[
        "pull",
        &format!("oci://{}/charts/app", reg.host()),
        "2.1.0",
        &dest.path().display().to_string(),
    ]);
    assert_eq!(
        std::fs::read(dest.path().join("app-2.1.0.tgz")).unwrap(),
        archive,
        "helm pull gets the archive we pushed"
    );

    // We pull what Helm pushed.
    let helm_archive = chart("3.0.0");
    let file = dest.path().join("app-3.0.0.tgz");
    std::fs::write(&file, &helm_archive).unwrap();
    helm(&[
        "push",
        &file.display().to_string(),
        &format!("oci://{}/helm-pushed", reg.host()),
    ]);
    let theirs = OciRepository::new(
        &format!("oci://{}/helm-pushed", reg.host()),
        ClientOptions::default(),
    )
    .unwrap();
    let got = build_from_oci(&theirs, "app", ">=3.0.0", &BuildOptions::default()).unwrap();
    assert_eq!(got.build.version, "3.0.0");
    assert_eq!(got.build.archive.as_deref(), Some(helm_archive.as_slice()));
}
