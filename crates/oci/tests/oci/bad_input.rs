//! Each bad input issue 16 names, with the message a user sees: unknown tag and no tag in range
//! (closest tags listed), a manifest of the wrong media type, an oversized layer or tree, `../`
//! paths and links leaving the artifact, wrong credentials (401 named, the password never
//! printed), the registry down, a digest that does not match the content.

use ferroflux_oci::artifact::{self, DEFAULT_MAX_LAYER_SIZE};
use ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE;
use ferroflux_oci::manifest::{FLUX_CONFIG, FLUX_CONTENT, Manifest, OCI_MANIFEST};
use ferroflux_oci::{Auth, Client, Error, Reference, tags};
use ferroflux_testkit::{Registry, RegistryOptions};

use crate::{client, plain_registry, push_sample};

fn pull_err(c: &Client, r: &Reference, layer_limit: u64, tree_limit: u64) -> Error {
    let out = tempfile::tempdir().unwrap();
    artifact::pull(c, r, None, out.path(), layer_limit, tree_limit).unwrap_err()
}

#[test]
fn unknown_tag_lists_closest() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    for t in ["v1.0.0", "v1.1.0", "v2.0.0"] {
        push_sample(&reg, &c, "apps/web", t);
    }
    let r = Reference::parse(&format!("oci://{}/apps/web:v1.2.0", reg.host())).unwrap();
    let err = pull_err(&c, &r, DEFAULT_MAX_LAYER_SIZE, DEFAULT_MAX_EXTRACT_SIZE);
    assert_eq!(
        err.to_string(),
        format!(
            "apps/web:v1.2.0: not found in {}, closest tags: v1.1.0, v1.0.0, v2.0.0",
            reg.host()
        )
    );
    let all = c.list_tags("apps/web").unwrap();
    let err = tags::pick_semver(&r.repo_url(), &all, ">=3.0.0", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no tag of {}/apps/web matches \">=3.0.0\", closest tags: v2.0.0, v1.1.0, v1.0.0",
            reg.host()
        )
    );
    // A repository never pushed to.
    let r = Reference::parse(&format!("oci://{}/apps/none:1.0.0", reg.host())).unwrap();
    let err = pull_err(&c, &r, DEFAULT_MAX_LAYER_SIZE, DEFAULT_MAX_EXTRACT_SIZE);
    assert_eq!(
        err.to_string(),
        format!(
            "apps/none:1.0.0: not found in {}, the repository has no tags",
            reg.host()
        )
    );
}

#[test]
fn wrong_manifest_media_type() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    // A Docker v2 manifest list whose entry is itself an index is not an image: so is a
    // manifest the registry stores under a media type we do not read. distribution accepts an
    // OCI index pointing at an index; resolving it must refuse the inner one.
    let (r, digest) = push_sample(&reg, &c, "apps/idx", "inner");
    let m = c.get_manifest(&r).unwrap();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": OCI_MANIFEST, "digest": digest, "size": m.bytes.len()}]
    });
    let ib = serde_json::to_vec(&index).unwrap();
    let inner = c
        .put_manifest(
            &r.with_tag("idx1"),
            "application/vnd.oci.image.index.v1+json",
            &ib,
        )
        .unwrap();
    let outer = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": inner, "size": ib.len()}]
    });
    c.put_manifest(
        &r.with_tag("idx2"),
        "application/vnd.oci.image.index.v1+json",
        &serde_json::to_vec(&outer).unwrap(),
    )
    .unwrap();
    // The one-level index resolves to the artifact.
    let one = artifact::resolve(&c, &r.with_tag("idx1")).unwrap();
    assert_eq!(one.manifest.layers[0].media_type, FLUX_CONTENT);
    let err = artifact::resolve(&c, &r.with_tag("idx2")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}/apps/idx:idx2 (index entry {inner}): unsupported manifest media type \"application/vnd.oci.image.index.v1+json\" (expected {OCI_MANIFEST})",
            reg.host()
        )
    );
}

#[test]
fn oversized_layer_and_tree() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let (r, _) = push_sample(&reg, &c, "apps/big", "1");
    let layer = artifact::resolve(&c, &r).unwrap().manifest.layers[0].clone();
    let err = pull_err(&c, &r, 10, DEFAULT_MAX_EXTRACT_SIZE);
    assert_eq!(
        err.to_string(),
        format!("blob {} exceeds the size limit of 10 bytes", layer.digest)
    );
    let err = pull_err(&c, &r, DEFAULT_MAX_LAYER_SIZE, 40);
    assert_eq!(
        err.to_string(),
        "the extracted artifact exceeds the size limit of 40 bytes"
    );
}

/// A tarball with one raw entry (name written into the header bytes, bypassing the tar
/// crate's own path checks, as a hostile producer would).
fn hostile_layer(name: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut out, flate2::Compression::default());
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(l) = link {
            h.as_old_mut().linkname[..l.len()].copy_from_slice(l.as_bytes());
        }
        h.set_entry_type(kind);
        h.set_mode(0o644);
        let data: &[u8] = if kind == tar::EntryType::Regular {
            b"pwned\n"
        } else {
            b""
        };
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    out
}

fn push_raw_layer(c: &Client, r: &Reference, layer: &[u8]) {
    let config = c
        .push_blob_bytes(&r.repository, FLUX_CONFIG, b"{}")
        .unwrap();
    let l = c
        .push_blob_bytes(&r.repository, FLUX_CONTENT, layer)
        .unwrap();
    let m = Manifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.into()),
        artifact_type: None,
        config,
        layers: vec![l],
        annotations: Default::default(),
    };
    c.put_manifest(r, OCI_MANIFEST, &serde_json::to_vec(&m).unwrap())
        .unwrap();
}

#[test]
fn paths_and_links_leaving_the_artifact() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let cases = [
        (
            "dotdot",
            hostile_layer("../escape.yaml", tar::EntryType::Regular, None),
            "refusing to extract \"../escape.yaml\": its path contains '..'",
        ),
        (
            "abs",
            hostile_layer("/tmp/escape.yaml", tar::EntryType::Regular, None),
            "refusing to extract \"/tmp/escape.yaml\": its path is absolute",
        ),
        (
            "symlink",
            hostile_layer("link", tar::EntryType::Symlink, Some("../../etc/passwd")),
            "refusing to extract \"link\": symlink to \"../../etc/passwd\" leaves the artifact",
        ),
        (
            "abslink",
            hostile_layer("a/link", tar::EntryType::Symlink, Some("/etc/passwd")),
            "refusing to extract \"a/link\": symlink to \"/etc/passwd\" leaves the artifact",
        ),
        (
            "hardlink",
            hostile_layer("hl", tar::EntryType::Link, Some("../outside")),
            "refusing to extract \"hl\": hard link leaves the artifact",
        ),
    ];
    for (tag, layer, want) in cases {
        let r = Reference::parse(&format!("oci://{}/apps/evil:{tag}", reg.host())).unwrap();
        push_raw_layer(&c, &r, &layer);
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        let err = artifact::pull(
            &c,
            &r,
            None,
            &out,
            DEFAULT_MAX_LAYER_SIZE,
            DEFAULT_MAX_EXTRACT_SIZE,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), want, "{tag}");
        // Nothing was written outside the output directory.
        let outside: Vec<_> = std::fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(outside.iter().all(|n| n == "out"), "{tag}: {outside:?}");
    }
}

#[test]
fn wrong_credentials_named_never_printed() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "right-pass".into())),
        ..Default::default()
    });
    let good = client(&reg, Auth::from_creds("flux:right-pass"));
    let (r, _) = push_sample(&reg, &good, "private/app", "1.0.0");
    for auth in [Auth::from_creds("flux:Wr0ng-Pa55w0rd"), Auth::Anonymous] {
        let bad = client(&reg, auth);
        let err = bad.head_manifest(&r).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "401 Unauthorized: registry {} refused the credentials for private/app",
                reg.host()
            )),
            "{msg}"
        );
        assert!(!msg.contains("Wr0ng-Pa55w0rd") && !format!("{err:?}").contains("Wr0ng-Pa55w0rd"));
        assert_eq!(err.reason(), "AuthenticationFailed");
    }
}

#[test]
fn registry_down_then_back() {
    let mut reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let (r, digest) = push_sample(&reg, &c, "apps/flaky", "1.0.0");
    reg.stop();
    let fresh = client(&reg, Auth::Anonymous);
    let err = fresh.head_manifest(&r).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("cannot reach registry {}: ", reg.host())),
        "{err}"
    );
    reg.restart();
    assert_eq!(
        client(&reg, Auth::Anonymous)
            .head_manifest(&r)
            .unwrap()
            .digest,
        digest
    );
}

#[test]
fn digest_mismatch() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let (r, _) = push_sample(&reg, &c, "apps/tampered", "1.0.0");
    let layer = artifact::resolve(&c, &r).unwrap().manifest.layers[0].clone();
    // Replace the blob's bytes in the registry's storage with other bytes of the same size.
    let hex = layer.digest.trim_start_matches("sha256:");
    let data = reg
        .data_dir()
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    let err = pull_err(&c, &r, DEFAULT_MAX_LAYER_SIZE, DEFAULT_MAX_EXTRACT_SIZE);
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "digest mismatch for blob {}: expected {}, got sha256:",
            layer.digest, layer.digest
        )),
        "{msg}"
    );
}

/// A layer stored without compression whose file content is altered in the registry's storage
/// decompresses and unpacks cleanly (gzip's checksum sits in the trailer, past the tarball's end):
/// only the digest of the streamed bytes, checked when the stream ends, catches it. What the
/// extraction wrote is then removed: a new output directory entirely, in an existing one the
/// entries it added, never what was there before.
#[test]
fn digest_mismatch_after_a_clean_extraction_removes_the_tree() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let mut layer = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut layer, flate2::Compression::none());
        let mut b = tar::Builder::new(gz);
        for (name, body) in [
            ("apps/a.yaml", "kind: ConfigMap # original\n"),
            ("b.yaml", "kind: Secret\n"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(body.len() as u64);
            b.append_data(&mut h, name, body.as_bytes()).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
    }
    let r = Reference::parse(&format!("oci://{}/apps/stored:1.0.0", reg.host())).unwrap();
    push_raw_layer(&c, &r, &layer);
    let desc = artifact::resolve(&c, &r).unwrap().manifest.layers[0].clone();
    let hex = desc.digest.trim_start_matches("sha256:");
    let data = reg
        .data_dir()
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let mut bytes = std::fs::read(&data).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == b"original")
        .expect("the stored layer holds the file's text");
    bytes[at..at + 8].copy_from_slice(b"tampered");
    std::fs::write(&data, &bytes).unwrap();

    let want = format!(
        "digest mismatch for blob {}: expected {}, got sha256:",
        desc.digest, desc.digest
    );
    let parent = tempfile::tempdir().unwrap();
    let fresh = parent.path().join("out");
    let err = artifact::pull(
        &c,
        &r,
        None,
        &fresh,
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap_err();
    assert!(err.to_string().starts_with(&want), "{err}");
    assert!(!fresh.exists(), "the partial tree was left behind");

    let existing = tempfile::tempdir().unwrap();
    std::fs::write(existing.path().join("keep.txt"), "mine\n").unwrap();
    let err = artifact::pull(
        &c,
        &r,
        None,
        existing.path(),
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap_err();
    assert!(err.to_string().starts_with(&want), "{err}");
    let left: Vec<_> = crate::read_tree(existing.path()).into_keys().collect();
    assert_eq!(left, ["keep.txt"]);
}
