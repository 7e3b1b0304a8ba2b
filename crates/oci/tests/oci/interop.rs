//! skopeo, a client no one here wrote, reads what we push and pushes what we pull, with Flux's
//! and Helm's media types.

use std::path::Path;

use ferroflux_oci::artifact::{self, DEFAULT_MAX_LAYER_SIZE};
use ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE;
use ferroflux_oci::manifest::{
    ANNOTATION_REVISION, FLUX_CONFIG, FLUX_CONTENT, HELM_CONFIG, HELM_CONTENT, OCI_MANIFEST,
    digest_of,
};
use ferroflux_oci::{Auth, Reference};

use crate::{client, no_exclude, plain_registry, push_sample, read_tree, sample_tree};

fn blob_path(layout: &Path, digest: &str) -> std::path::PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

#[test]
fn skopeo_reads_what_we_push() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let (_, digest) = push_sample(&reg, &c, "interop/out", "v1");
    let url = format!("docker://{}/interop/out:v1", reg.host());
    let (ok, raw, err) = reg.skopeo(&["inspect", "--tls-verify=false", "--raw", &url]);
    assert!(ok, "{err}");
    assert_eq!(digest_of(raw.as_bytes()), digest);
    let m: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(m["mediaType"], OCI_MANIFEST);
    assert_eq!(m["config"]["mediaType"], FLUX_CONFIG);
    assert_eq!(m["layers"][0]["mediaType"], FLUX_CONTENT);
    assert_eq!(m["annotations"][ANNOTATION_REVISION], "main@sha1:v1");

    // skopeo copies it into an OCI layout, digests preserved; the layer is our tarball.
    let layout = tempfile::tempdir().unwrap();
    let dest = format!("oci:{}:v1", layout.path().display());
    let (ok, _, err) = reg.skopeo(&["copy", "--src-tls-verify=false", &url, &dest]);
    assert!(ok, "{err}");
    let layer = m["layers"][0]["digest"].as_str().unwrap();
    let bytes = std::fs::read(blob_path(layout.path(), layer)).unwrap();
    assert_eq!(digest_of(&bytes), layer);
    let out = tempfile::tempdir().unwrap();
    ferroflux_oci::extract::extract_tar_gz(bytes.as_slice(), out.path(), 1 << 30).unwrap();
    let src = tempfile::tempdir().unwrap();
    sample_tree(src.path());
    assert_eq!(read_tree(out.path()), read_tree(src.path()));
}

/// Writes an OCI image layout with one manifest of the given config and layer media types.
fn write_layout(
    dir: &Path,
    tag: &str,
    config_type: &str,
    config: &[u8],
    layer_type: &str,
    layer: &[u8],
) {
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let put = |b: &[u8]| {
        let d = digest_of(b);
        std::fs::write(blob_path(dir, &d), b).unwrap();
        d
    };
    let cd = put(config);
    let ld = put(layer);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": config_type, "digest": cd, "size": config.len()},
        "layers": [{"mediaType": layer_type, "digest": ld, "size": layer.len()}],
        "annotations": {"org.opencontainers.image.revision": "skopeo@sha1:1234"}
    });
    let mbytes = serde_json::to_vec(&manifest).unwrap();
    let md = put(&mbytes);
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": md, "size": mbytes.len(),
            "annotations": {"org.opencontainers.image.ref.name": tag}}]
    });
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
}

#[test]
fn we_pull_what_skopeo_pushes() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let src = tempfile::tempdir().unwrap();
    sample_tree(src.path());
    let mut layer = Vec::new();
    artifact::pack_dir(src.path(), &no_exclude, &mut layer).unwrap();

    // A Flux artifact.
    let layout = tempfile::tempdir().unwrap();
    write_layout(
        layout.path(),
        "v2",
        FLUX_CONFIG,
        b"{}",
        FLUX_CONTENT,
        &layer,
    );
    let url = format!("docker://{}/interop/in:v2", reg.host());
    let (ok, _, err) = reg.skopeo(&[
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:v2", layout.path().display()),
        &url,
    ]);
    assert!(ok, "{err}");
    let r = Reference::parse(&format!("oci://{}/interop/in:v2", reg.host())).unwrap();
    let out = tempfile::tempdir().unwrap();
    let pulled = artifact::pull(
        &c,
        &r,
        None,
        out.path(),
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap();
    assert_eq!(read_tree(out.path()), read_tree(src.path()));
    assert_eq!(
        pulled.metadata.revision.as_deref(),
        Some("skopeo@sha1:1234")
    );

    // A Helm chart: Helm's config and content media types, selected by layer media type.
    let chart = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(chart.path().join("podinfo/templates")).unwrap();
    std::fs::write(
        chart.path().join("podinfo/Chart.yaml"),
        "apiVersion: v2\nname: podinfo\nversion: 6.5.0\n",
    )
    .unwrap();
    let mut tgz = Vec::new();
    artifact::pack_dir(chart.path(), &no_exclude, &mut tgz).unwrap();
    let layout = tempfile::tempdir().unwrap();
    write_layout(
        layout.path(),
        "6.5.0",
        HELM_CONFIG,
        br#"{"name":"podinfo","version":"6.5.0","apiVersion":"v2"}"#,
        HELM_CONTENT,
        &tgz,
    );
    let (ok, _, err) = reg.skopeo(&[
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:6.5.0", layout.path().display()),
        &format!("docker://{}/charts/podinfo:6.5.0", reg.host()),
    ]);
    assert!(ok, "{err}");
    let r = Reference::parse(&format!("oci://{}/charts/podinfo:6.5.0", reg.host())).unwrap();
    let out = tempfile::tempdir().unwrap();
    artifact::pull(
        &c,
        &r,
        Some(HELM_CONTENT),
        out.path(),
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap();
    assert!(out.path().join("podinfo/Chart.yaml").is_file());
    let err = artifact::pull(
        &c,
        &r,
        Some(FLUX_CONTENT),
        out.path(),
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        format!(
            "{}/charts/podinfo:6.5.0: no layer with media type \"{FLUX_CONTENT}\" (layers: {HELM_CONTENT})",
            reg.host()
        )
    );
}

#[test]
fn tls_and_basic_auth_with_skopeo() {
    let reg = ferroflux_testkit::Registry::start(ferroflux_testkit::RegistryOptions {
        tls: true,
        basic_auth: Some(("flux".into(), "pw-123".into())),
        ..Default::default()
    });
    let c = client(&reg, Auth::from_creds("flux:pw-123"));
    push_sample(&reg, &c, "both/fleet", "1.0.0");
    let cert_dir = reg.cert_dir().unwrap();
    let (ok, raw, err) = reg.skopeo(&[
        "inspect",
        "--raw",
        &format!("--cert-dir={}", cert_dir.display()),
        "--creds=flux:pw-123",
        &format!("docker://{}/both/fleet:1.0.0", reg.host()),
    ]);
    assert!(ok, "{err}");
    assert!(raw.contains(FLUX_CONTENT));
}
