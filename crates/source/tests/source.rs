//! The Git source against real servers: `git http-backend` over HTTPS with basic auth, bearer
//! tokens and a private CA; OpenSSH's sshd; `file://`. Every bad input of issue 5 that concerns
//! fetching and packing has a test here that checks the message a user would see.

mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use ferroflux_source::{
    Credentials, Error, FetchOptions, GitRef, GitSource, ObjectKey, Outcome, PackOptions, Previous,
    Storage, reconcile,
};
use support::{Auth, GitHttpServer, Repo, Sshd, git, keygen, make_tls};

const PASSWORD: &str = "pa55-w0rd-very-secret";
const TOKEN: &str = "tok-9f8e7d6c5b4a-secret";
const PASSPHRASE: &str = "key-passphrase-secret";

fn secret(pairs: &[(&str, &str)]) -> Credentials {
    let data: BTreeMap<String, Vec<u8>> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
    Credentials::from_secret_data(&data).unwrap()
}

fn branch(b: &str) -> GitRef {
    GitRef {
        branch: Some(b.into()),
        ..Default::default()
    }
}

fn source(url: &str, r: &GitRef, creds: Credentials) -> GitSource {
    GitSource::new(url, r, creds, FetchOptions::default()).unwrap()
}

/// Every text a user or a log could see of an error.
fn assert_no_secret(err: &Error) {
    for text in [err.to_string(), format!("{err:?}")] {
        for s in [PASSWORD, TOKEN, PASSPHRASE] {
            assert!(!text.contains(s), "secret leaked in {text:?}");
        }
    }
}

/// Paths and bytes of a tar.gz artifact.
fn unpack(path: &Path) -> BTreeMap<String, (u64, u32, Vec<u8>)> {
    let f = std::fs::File::open(path).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = BTreeMap::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().to_string();
        assert_eq!(e.header().mtime().unwrap(), 0, "{name}");
        assert_eq!(e.header().uid().unwrap(), 0, "{name}");
        let mode = e.header().mode().unwrap();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        out.insert(name, (e.header().mtime().unwrap(), mode, data));
    }
    out
}

fn fixture_repo() -> (Repo, String, String) {
    let repo = Repo::new("fleet");
    repo.write("clusters/staging/app.yaml", b"kind: ConfigMap\n");
    let c1 = repo.commit("one");
    repo.git(&["tag", "v1.0.0"]);
    repo.write("clusters/staging/app.yaml", b"kind: ConfigMap\nv: 2\n");
    let c2 = repo.commit("two");
    repo.git(&["tag", "-a", "-m", "annotated", "v1.2.0"]);
    repo.write("clusters/staging/app.yaml", b"kind: ConfigMap\nv: 3\n");
    repo.commit("three");
    repo.git(&["tag", "v1.3.0-rc.1"]);
    repo.git(&["tag", "v2.0.0"]);
    repo.git(&["tag", "not-a-version"]);
    repo.push(&["main", "--tags"]);
    (repo, c1, c2)
}

#[test]
fn https_basic_auth_resolves_every_ref_kind_with_flux_revisions() {
    let (repo, c1, c2) = fixture_repo();
    let head = repo.git(&["rev-parse", "HEAD"]);
    let tls = make_tls();
    let server = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("flux".into(), PASSWORD.into()),
        Some(&tls),
    );
    let url = server.url("fleet");
    let creds = secret(&[("username", "flux"), ("password", PASSWORD), ("ca.crt", &tls.ca_pem)]);
    let rev = |r: GitRef| source(&url, &r, creds.clone()).resolve().unwrap().revision;

    assert_eq!(rev(branch("main")), format!("main@sha1:{head}"));
    let tag = |t: &str| GitRef {
        tag: Some(t.into()),
        ..Default::default()
    };
    assert_eq!(rev(tag("v1.0.0")), format!("v1.0.0@sha1:{c1}"));
    // An annotated tag resolves to its commit, not the tag object.
    assert_eq!(rev(tag("v1.2.0")), format!("v1.2.0@sha1:{c2}"));
    let semver = |s: &str| GitRef {
        semver: Some(s.into()),
        ..Default::default()
    };
    // The pre-release v1.3.0-rc.1 is skipped unless the range asks for pre-releases.
    assert_eq!(rev(semver(">=1.0.0 <2.0.0")), format!("v1.2.0@sha1:{c2}"));
    assert_eq!(rev(semver(">=1.0.0-0 <2.0.0")), format!("v1.3.0-rc.1@sha1:{head}"));
    assert_eq!(rev(semver("~1.0")), format!("v1.0.0@sha1:{c1}"));
    assert_eq!(rev(semver("<1.0.0 || >=2.0.0")), format!("v2.0.0@sha1:{head}"));
    let name = GitRef {
        name: Some("refs/heads/main".into()),
        ..Default::default()
    };
    assert_eq!(rev(name), format!("refs/heads/main@sha1:{head}"));
    let commit = GitRef {
        commit: Some(c1.clone()),
        ..Default::default()
    };
    assert_eq!(rev(commit), format!("sha1:{c1}"));
    // Precedence: commit > name > semver > tag > branch.
    let all = GitRef {
        branch: Some("main".into()),
        tag: Some("v1.0.0".into()),
        semver: Some("^2".into()),
        name: None,
        commit: None,
    };
    assert_eq!(rev(all.clone()), format!("v2.0.0@sha1:{head}"));
    let with_commit = GitRef {
        commit: Some(c2.clone()),
        ..all
    };
    assert_eq!(rev(with_commit), format!("main@sha1:{c2}"));

    // And a full reconcile: fetch, pack, store; then the no-op poll.
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://127.0.0.1:9090").unwrap();
    let key = ObjectKey::new("flux-system", "fleet");
    let src = source(&url, &branch("main"), creds.clone());
    let out = reconcile(&src, &storage, &key, &PackOptions::default(), None).unwrap();
    let Outcome::Stored { artifact, .. } = out else {
        panic!("expected a new artifact")
    };
    assert_eq!(artifact.path, format!("gitrepository/flux-system/fleet/{head}.tar.gz"));
    assert_eq!(artifact.url, format!("http://127.0.0.1:9090/{}", artifact.path));
    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert!(artifact.digest.starts_with("sha256:") && artifact.digest.len() == 71);
    let files = unpack(&storage.local_path(&artifact.path));
    assert_eq!(files["clusters/staging/app.yaml"].2, b"kind: ConfigMap\nv: 3\n");
    // Commit pinned: a commit ref fetches exactly that commit.
    let pinned = source(
        &url,
        &GitRef {
            commit: Some(c1.clone()),
            ..Default::default()
        },
        creds.clone(),
    );
    let key1 = ObjectKey::new("flux-system", "pinned");
    let out = reconcile(&pinned, &storage, &key1, &PackOptions::default(), None).unwrap();
    let files = unpack(&storage.local_path(&out.artifact().path));
    assert_eq!(files["clusters/staging/app.yaml"].2, b"kind: ConfigMap\n");
}
