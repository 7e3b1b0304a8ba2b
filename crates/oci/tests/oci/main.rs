//! The OCI client against the real registry (Debian's `docker-registry`, CNCF distribution) and
//! the real second client (`skopeo`): push/pull/tag/list over plain HTTP, TLS and basic auth,
//! interop both ways, and each bad input the issue names.

mod bad_input;
mod interop;
mod roundtrip;

use std::collections::BTreeMap;
use std::path::Path;

use ferroflux_oci::artifact::{self, Metadata};
use ferroflux_oci::{Auth, Client, ClientOptions, Reference};
use ferroflux_testkit::{Registry, RegistryOptions};

/// A small tree: two manifests in a folder, an executable script.
pub fn sample_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("apps/podinfo")).unwrap();
    std::fs::write(
        dir.join("apps/podinfo/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("apps/podinfo/kustomization.yaml"),
        "resources:\n- deployment.yaml\n",
    )
    .unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
}

/// Packs everything.
pub fn no_exclude(_: &Path, _: bool) -> bool {
    false
}

/// A registry over plain HTTP without auth.
pub fn plain_registry() -> Registry {
    Registry::start(RegistryOptions::default())
}

/// A client of `reg` trusting its CA, if any.
pub fn client(reg: &Registry, auth: Auth) -> Client {
    Client::new(
        &reg.host(),
        ClientOptions {
            auth,
            ca_pem: reg.ca_pem.as_ref().map(|p| p.as_bytes().to_vec()),
            ..Default::default()
        },
    )
    .unwrap()
}

/// Flux's annotations with a fixed creation time.
pub fn meta(rev: &str) -> Metadata {
    Metadata {
        source: Some("https://github.com/example/fleet".into()),
        revision: Some(rev.into()),
        created: Some("2026-01-01T00:00:00Z".into()),
        annotations: BTreeMap::new(),
    }
}

/// Pushes the sample tree to `repo:tag`; returns the reference and manifest digest.
pub fn push_sample(reg: &Registry, c: &Client, repo: &str, tag: &str) -> (Reference, String) {
    let src = tempfile::tempdir().unwrap();
    sample_tree(src.path());
    let r = Reference::parse(&format!("oci://{}/{repo}:{tag}", reg.host())).unwrap();
    let pushed = artifact::push(
        c,
        &r,
        src.path(),
        &meta(&format!("main@sha1:{tag}")),
        &no_exclude,
    )
    .unwrap();
    (r, pushed.digest)
}

/// Every file below `dir` with its content, relative paths.
pub fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}
