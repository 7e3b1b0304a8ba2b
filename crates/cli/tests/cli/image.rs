//! ferroflux's own image: `image/build.sh` packages the `ferroflux` binary this test suite
//! already built (no second release build here) with umoci and pushes it with skopeo to a real
//! registry (Debian's docker-registry); the manifest and config are read back with crates/oci's
//! client and compared with what `image/Containerfile` states (entrypoint, a user that is not
//! root, the OCI labels), the layer holds the binary alone, and `install --export --registry
//! --version` names exactly the image that was pushed. The static build itself
//! (`build.sh` without `--binary`) is a release build and is not run by the test suite: a
//! dynamically linked binary is refused unless `--allow-dynamic` says this is a test.

use crate::run::text;
use ferroflux_oci::{Client, ClientOptions, Reference};
use ferroflux_testkit::{Registry, RegistryOptions};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../image/build.sh")
}

fn containerfile() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../image/Containerfile"),
    )
    .unwrap()
}

/// `LABEL k="v" \` lines of the Containerfile, `${VERSION}`/`${REVISION}` filled in.
fn labels(version: &str, revision: &str) -> Vec<(String, String)> {
    let text = containerfile();
    let start = text.find("\nLABEL ").unwrap() + "\nLABEL ".len();
    text[start..]
        .lines()
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            let v = v.trim_matches('"');
            (
                k.to_string(),
                v.replace("${VERSION}", version)
                    .replace("${REVISION}", revision),
            )
        })
        .collect()
}

#[test]
fn build_push_and_read_the_image_back() {
    let reg = Registry::start(RegistryOptions::default());
    let image = format!("{}/ferroflux:v0.0.0-test", reg.host());
    let binary = env!("CARGO_BIN_EXE_ferroflux");

    // The suite's binary is dynamically linked: refused without --allow-dynamic.
    let out = Command::new(script())
        .args(["--image", &image, "--binary", binary, "--insecure"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is dynamically linked (it names a program interpreter)"),
        "{}",
        text(&out)
    );

    let out = Command::new(script())
        .args([
            "--image",
            &image,
            "--binary",
            binary,
            "--revision",
            "0123abc",
            "--insecure",
            "--allow-dynamic",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    // Read back with our own client, as the cluster's runtime would pull it.
    let client = Client::new(&reg.host(), ClientOptions::default()).unwrap();
    let r = Reference::parse(&format!("oci://{image}")).unwrap();
    let manifest = client.get_manifest(&r).unwrap();
    assert_eq!(
        manifest.media_type,
        "application/vnd.oci.image.manifest.v1+json"
    );
    let m: Value = serde_json::from_slice(&manifest.bytes).unwrap();
    let config_desc: ferroflux_oci::manifest::Descriptor =
        serde_json::from_value(m["config"].clone()).unwrap();
    assert_eq!(
        config_desc.media_type,
        "application/vnd.oci.image.config.v1+json"
    );
    let mut config = Vec::new();
    client
        .get_blob(&r.repository, &config_desc, 1 << 20, &mut config)
        .unwrap();
    let config: Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/ferroflux"])
    );
    assert_eq!(config["config"]["Cmd"], serde_json::json!(["controller"]));
    let user = config["config"]["User"].as_str().unwrap();
    assert!(
        containerfile().contains(&format!("\nUSER {user}\n")),
        "{user}"
    );
    let uid = user.split(':').next().unwrap();
    assert!(uid != "0" && uid != "root" && !uid.is_empty(), "{user}");
    let want = labels("v0.0.0-test", "0123abc");
    assert_eq!(want.len(), 6, "{want:?}");
    for (k, v) in want {
        assert_eq!(config["config"]["Labels"][&k], v, "label {k}");
    }

    // One layer: the binary, executable, at /ferroflux, and nothing else (FROM scratch).
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let layer: ferroflux_oci::manifest::Descriptor =
        serde_json::from_value(layers[0].clone()).unwrap();
    let mut blob = Vec::new();
    client
        .get_blob(&r.repository, &layer, 1 << 30, &mut blob)
        .unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&blob[..]));
    let mut files = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        if e.header().entry_type().is_file() {
            let path = e.path().unwrap().display().to_string();
            let mode = e.header().mode().unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            files.push((path, mode, data));
        }
    }
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "ferroflux");
    assert_eq!(files[0].1 & 0o111, 0o111, "executable");
    assert!(
        files[0].2 == std::fs::read(binary).unwrap(),
        "the binary as built"
    );

    // install names exactly that image.
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "install",
            "--export",
            "--registry",
            &reg.host(),
            "--version",
            "v0.0.0-test",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("image: {image}\n")),
        "{}",
        text(&out)
    );
}
