//! Push, pull, tag and list against the real registry: plain HTTP on 127.0.0.1, HTTPS with a
//! private CA, htpasswd basic auth.

use ferroflux_oci::artifact::{self, DEFAULT_MAX_LAYER_SIZE};
use ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE;
use ferroflux_oci::manifest::{ANNOTATION_REVISION, ANNOTATION_SOURCE, FLUX_CONTENT};
use ferroflux_oci::{Auth, Client, ClientOptions, Reference};
use ferroflux_testkit::{Registry, RegistryOptions};

use crate::{client, plain_registry, push_sample, read_tree, sample_tree};

fn pull_and_compare(reg: &Registry, c: &Client, r: &Reference) {
    let out = tempfile::tempdir().unwrap();
    let pulled = artifact::pull(
        c,
        r,
        None,
        out.path(),
        DEFAULT_MAX_LAYER_SIZE,
        DEFAULT_MAX_EXTRACT_SIZE,
    )
    .unwrap();
    let src = tempfile::tempdir().unwrap();
    sample_tree(src.path());
    assert_eq!(
        read_tree(out.path()),
        read_tree(src.path()),
        "{}",
        reg.host()
    );
    assert_eq!(pulled.layer.media_type, FLUX_CONTENT);
    assert_eq!(pulled.stats.files, 3);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.path().join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}

#[test]
fn plain_http_push_pull_tag_list() {
    let reg = plain_registry();
    let c = client(&reg, Auth::Anonymous);
    let (r, digest) = push_sample(&reg, &c, "apps/fleet", "v1.0.0");
    let head = c.head_manifest(&r).unwrap();
    assert_eq!(head.digest, digest);
    pull_and_compare(&reg, &c, &r);
    let resolved = artifact::resolve(&c, &r).unwrap();
    assert_eq!(
        resolved
            .manifest
            .annotations
            .get(ANNOTATION_REVISION)
            .map(String::as_str),
        Some("main@sha1:v1.0.0")
    );
    assert_eq!(
        resolved
            .manifest
            .annotations
            .get(ANNOTATION_SOURCE)
            .map(String::as_str),
        Some("https://github.com/example/fleet")
    );

    // Pushing the same tree again is reproducible: same layer, same manifest.
    let (_, again) = push_sample(&reg, &c, "apps/fleet", "v1.0.0");
    assert_eq!(again, digest);

    // Tag: the new tag names the same manifest.
    let tagged = c.tag(&r, "production").unwrap();
    assert_eq!(tagged, digest);
    assert_eq!(
        c.head_manifest(&r.with_tag("production")).unwrap().digest,
        digest
    );
    let mut tags = c.list_tags("apps/fleet").unwrap();
    tags.sort();
    assert_eq!(tags, ["production", "v1.0.0"]);

    // Pull by digest.
    pull_and_compare(&reg, &c, &r.with_tag("x").with_digest(&digest));
}

#[test]
fn tls_with_private_ca() {
    let reg = Registry::start(RegistryOptions {
        tls: true,
        ..Default::default()
    });
    let c = client(&reg, Auth::Anonymous);
    let (r, _) = push_sample(&reg, &c, "secure/fleet", "1.0.0");
    pull_and_compare(&reg, &c, &r);

    // Without the CA, the certificate is refused (and 127.0.0.1's plain HTTP fallback hits a
    // TLS port): the message says the registry cannot be reached.
    let untrusted = Client::new(&reg.host(), ClientOptions::default()).unwrap();
    let err = untrusted.head_manifest(&r).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("cannot reach registry {}", reg.host())),
        "{msg}"
    );
}

#[test]
fn basic_auth() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "s3cr3t-pass".into())),
        ..Default::default()
    });
    let c = client(&reg, Auth::from_creds("flux:s3cr3t-pass"));
    let (r, _) = push_sample(&reg, &c, "private/fleet", "1.0.0");
    pull_and_compare(&reg, &c, &r);
    assert_eq!(c.list_tags("private/fleet").unwrap(), ["1.0.0"]);
}

#[test]
fn bearer_token_flow() {
    let reg = Registry::start(RegistryOptions {
        token_auth: Some(("flux".into(), "tok-pass".into())),
        ..Default::default()
    });
    let c = client(&reg, Auth::from_creds("flux:tok-pass"));
    let (r, digest) = push_sample(&reg, &c, "tokens/fleet", "1.0.0");
    pull_and_compare(&reg, &c, &r);
    // One token per scope (pull,push for the upload, pull for the download), not one per request.
    assert_eq!(reg.tokens_issued(), 2);
    assert_eq!(c.head_manifest(&r).unwrap().digest, digest);
    assert_eq!(reg.tokens_issued(), 2);

    // The token service refuses a wrong password: 401 named, the password never printed.
    let bad = client(&reg, Auth::from_creds("flux:nope-pass-123"));
    let err = bad.head_manifest(&r).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "401 Unauthorized: registry {} refused the credentials for tokens/fleet: the token service refused the credentials",
            reg.host()
        )
    );
    assert!(!err.contains("nope-pass-123"));

    // skopeo goes through the same token service and reads what we pushed.
    let (ok, raw, e) = reg.skopeo(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        "--creds=flux:tok-pass",
        &format!("docker://{}/tokens/fleet:1.0.0", reg.host()),
    ]);
    assert!(ok, "{e}");
    assert_eq!(ferroflux_oci::manifest::digest_of(raw.as_bytes()), digest);
}
