//! The Git source against real servers: `git http-backend` over HTTPS with basic auth, bearer
//! tokens and a private CA; OpenSSH's sshd; `file://`. Every bad input of issue 5 that concerns
//! fetching and packing has a test here that checks the message a user would see.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::repo::Repo;
use ferroflux_source::{
    Credentials, Error, FetchOptions, GitRef, GitSource, ObjectKey, Outcome, PackOptions, Previous,
    Storage, reconcile,
};
use ferroflux_testkit::{Auth, GitHttpServer, Sshd, closed_port, git, keygen, make_tls};

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
type Files = BTreeMap<String, (u64, u32, Vec<u8>)>;

fn unpack(path: &Path) -> Files {
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
    let creds = secret(&[
        ("username", "flux"),
        ("password", PASSWORD),
        ("ca.crt", &tls.ca_pem),
    ]);
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
    assert_eq!(
        rev(semver(">=1.0.0-0 <2.0.0")),
        format!("v1.3.0-rc.1@sha1:{head}")
    );
    assert_eq!(rev(semver("~1.0")), format!("v1.0.0@sha1:{c1}"));
    assert_eq!(
        rev(semver("<1.0.0 || >=2.0.0")),
        format!("v2.0.0@sha1:{head}")
    );
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
    assert_eq!(
        artifact.path,
        format!("gitrepository/flux-system/fleet/{head}.tar.gz")
    );
    assert_eq!(
        artifact.url,
        format!("http://127.0.0.1:9090/{}", artifact.path)
    );
    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert!(artifact.digest.starts_with("sha256:") && artifact.digest.len() == 71);
    let files = unpack(&storage.local_path(&artifact.path));
    assert_eq!(
        files["clusters/staging/app.yaml"].2,
        b"kind: ConfigMap\nv: 3\n"
    );
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

#[test]
fn wrong_or_missing_credentials_are_authentication_failures_without_the_secret() {
    let (repo, _, _) = fixture_repo();
    let tls = make_tls();
    let basic = GitHttpServer::start(
        repo.root.path(),
        Auth::Basic("flux".into(), "the-right-one".into()),
        Some(&tls),
    );
    let url = basic.url("fleet");
    let wrong = secret(&[
        ("username", "flux"),
        ("password", PASSWORD),
        ("ca.crt", &tls.ca_pem),
    ]);
    let err = source(&url, &branch("main"), wrong).resolve().unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed", "{err}");
    assert!(err.to_string().contains("refused the credentials"), "{err}");
    assert_no_secret(&err);

    // Credentials in the URL itself are used, and hidden from messages too.
    let in_url = url.replace("https://", &format!("https://flux:{PASSWORD}@"));
    let err = source(&in_url, &branch("main"), secret(&[("ca.crt", &tls.ca_pem)]))
        .resolve()
        .unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed", "{err}");
    assert_no_secret(&err);

    let none = secret(&[("ca.crt", &tls.ca_pem)]);
    let err = source(&url, &branch("main"), none).resolve().unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed");
    assert!(err.to_string().contains("requires credentials"), "{err}");

    let bearer = GitHttpServer::start(repo.root.path(), Auth::Bearer(TOKEN.into()), Some(&tls));
    let ok = secret(&[("bearerToken", TOKEN), ("ca.crt", &tls.ca_pem)]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    let url = bearer.url("fleet");
    assert_eq!(
        source(&url, &branch("main"), ok).resolve().unwrap().commit,
        head
    );
    let bad = secret(&[
        ("bearerToken", &format!("{TOKEN}-x")),
        ("ca.crt", &tls.ca_pem),
    ]);
    let err = source(&url, &branch("main"), bad).fetch(&ferroflux_source::Resolved {
        commit: head.clone(),
        revision: format!("main@sha1:{head}"),
        ref_name: Some("refs/heads/main".into()),
    });
    let err = err.err().unwrap();
    assert_eq!(err.reason(), "AuthenticationFailed");
    assert_no_secret(&err);
}

#[test]
fn https_needs_the_private_ca_and_plain_http_works() {
    let (repo, _, _) = fixture_repo();
    let tls = make_tls();
    let server = GitHttpServer::start(repo.root.path(), Auth::None, Some(&tls));
    let err = source(
        &server.url("fleet"),
        &branch("main"),
        Credentials::default(),
    )
    .resolve()
    .unwrap_err();
    assert_eq!(err.reason(), "GitOperationFailed");
    let msg = err.to_string().to_lowercase();
    assert!(
        msg.contains("certificate") || msg.contains("issuer"),
        "{msg}"
    );
    eprintln!("no CA: {err}");
    let plain = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let r = source(&plain.url("fleet"), &branch("main"), Credentials::default())
        .resolve()
        .unwrap();
    assert_eq!(r.commit, repo.git(&["rev-parse", "HEAD"]));
}

#[test]
fn missing_refs_and_unreachable_hosts_say_what_is_wrong() {
    let (repo, _, _) = fixture_repo();
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let url = server.url("fleet");
    let none = Credentials::default();
    let err = source(&url, &branch("nope"), none.clone())
        .resolve()
        .unwrap_err();
    assert_eq!(err.reason(), "GitOperationFailed");
    assert!(
        err.to_string().contains("branch 'nope' does not exist"),
        "{err}"
    );
    // The default branch is master, which this repository does not have.
    let err = source(&url, &GitRef::default(), none.clone())
        .resolve()
        .unwrap_err();
    assert!(err.to_string().contains("refs/heads/master"), "{err}");
    let tag = GitRef {
        tag: Some("v9.9.9".into()),
        ..Default::default()
    };
    let err = source(&url, &tag, none.clone()).resolve().unwrap_err();
    assert!(
        err.to_string().contains("tag 'v9.9.9' does not exist"),
        "{err}"
    );
    let semver = GitRef {
        semver: Some(">=5.0.0".into()),
        ..Default::default()
    };
    let err = source(&url, &semver, none.clone()).resolve().unwrap_err();
    assert!(
        err.to_string()
            .contains("no match found for semver: >=5.0.0"),
        "{err}"
    );
    let bad_range = GitRef {
        semver: Some(">=1.0.0 <".into()),
        ..Default::default()
    };
    let err = GitSource::new(&url, &bad_range, none.clone(), FetchOptions::default()).unwrap_err();
    assert!(err.to_string().contains("spec.ref.semver"), "{err}");
    let short = GitRef {
        commit: Some("abc123".into()),
        ..Default::default()
    };
    let err = GitSource::new(&url, &short, none.clone(), FetchOptions::default()).unwrap_err();
    assert!(err.to_string().contains("40-character"), "{err}");
    let missing = GitRef {
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        ..Default::default()
    };
    let src = source(&url, &missing, none.clone());
    let err = src.fetch(&src.resolve().unwrap()).err().unwrap();
    assert_eq!(err.reason(), "GitOperationFailed", "{err}");
    eprintln!("missing commit: {err}");

    let port = closed_port();
    let err = source(
        &format!("http://127.0.0.1:{port}/x.git"),
        &branch("main"),
        none,
    )
    .resolve()
    .unwrap_err();
    assert_eq!(err.reason(), "GitOperationFailed");
    eprintln!("unreachable: {err}");
    assert!(err.to_string().to_lowercase().contains("connect"), "{err}");
}

#[test]
fn scp_style_and_file_urls_are_refused_unless_allowed() {
    let err = GitSource::new(
        "git@github.com:org/fleet.git",
        &branch("main"),
        Credentials::default(),
        FetchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid URL 'git@github.com:org/fleet.git': scp-style URLs are not supported, \
         use 'ssh://git@github.com/org/fleet.git' (the ssh:// form)"
    );
    let (repo, _, _) = fixture_repo();
    let url = format!("file://{}", repo.bare().display());
    let err = GitSource::new(
        &url,
        &branch("main"),
        Credentials::default(),
        FetchOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("--allow-file-urls"), "{err}");
    let allowed = FetchOptions {
        allow_file_urls: true,
        ..Default::default()
    };
    let missing = GitSource::new(
        &url,
        &branch("nope"),
        Credentials::default(),
        allowed.clone(),
    );
    let err = missing.unwrap().resolve().unwrap_err();
    assert!(
        err.to_string().contains("branch 'nope' does not exist"),
        "{err}"
    );
    let src = GitSource::new(&url, &branch("main"), Credentials::default(), allowed).unwrap();
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://x").unwrap();
    let out = reconcile(
        &src,
        &storage,
        &ObjectKey::new("a", "b"),
        &PackOptions::default(),
        None,
    )
    .unwrap();
    assert!(matches!(out, Outcome::Stored { .. }));
}

#[test]
fn empty_repository_is_reported_as_such() {
    let repo = Repo::new("empty");
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let err = source(
        &server.url("empty"),
        &branch("main"),
        Credentials::default(),
    )
    .resolve()
    .unwrap_err();
    assert_eq!(err.reason(), "EmptyGitRepository");
    assert!(err.to_string().contains("git repository is empty"), "{err}");
}

#[test]
fn no_op_poll_downloads_nothing_and_force_push_is_followed() {
    let repo = Repo::new("fleet");
    repo.write("a.yaml", b"a: 1\n");
    let c1 = repo.commit("one");
    repo.push(&["main"]);
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let src = source(
        &server.url("fleet"),
        &branch("main"),
        Credentials::default(),
    );
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://x").unwrap();
    let key = ObjectKey::new("ns", "fleet");
    let opts = PackOptions::default();
    let first = reconcile(&src, &storage, &key, &opts, None).unwrap();
    let a1 = first.artifact().clone();
    let mtime = |p: &str| {
        std::fs::metadata(storage.local_path(p))
            .unwrap()
            .modified()
            .unwrap()
    };
    let t1 = mtime(&a1.path);
    let prev = Previous {
        artifact: a1.clone(),
        observed_ignore: None,
        observed_sparse: Vec::new(),
        observed_includes: Vec::new(),
    };
    let again = reconcile(&src, &storage, &key, &opts, Some(&prev)).unwrap();
    assert_eq!(
        again,
        Outcome::Unchanged {
            artifact: a1.clone()
        }
    );
    assert_eq!(mtime(&a1.path), t1, "a no-op poll writes nothing");
    // A changed spec.ignore repacks the same commit.
    let ignoring = PackOptions {
        ignore: Some("a.yaml\n".into()),
        ..Default::default()
    };
    assert!(matches!(
        reconcile(&src, &storage, &key, &ignoring, Some(&prev)).unwrap(),
        Outcome::Stored { .. }
    ));

    // Rewrite history: an unrelated root commit force-pushed over main.
    repo.git(&["checkout", "-q", "--orphan", "rewritten"]);
    repo.git(&["rm", "-rq", "--cached", "."]);
    std::fs::remove_file(repo.work().join("a.yaml")).unwrap();
    repo.write("b.yaml", b"b: 2\n");
    let c2 = repo.commit("rewritten");
    repo.push(&["+rewritten:main"]);
    let out = reconcile(&src, &storage, &key, &opts, Some(&prev)).unwrap();
    let Outcome::Stored { artifact: a2, .. } = out else {
        panic!("expected new artifact")
    };
    assert_eq!(a2.revision, format!("main@sha1:{c2}"));
    let files = unpack(&storage.local_path(&a2.path));
    assert!(files.contains_key("b.yaml") && !files.contains_key("a.yaml"));

    // A third commit: GC keeps the newest two artifacts.
    repo.write("c.yaml", b"c: 3\n");
    let c3 = repo.commit("three");
    repo.push(&["+rewritten:main"]);
    let Outcome::Stored {
        artifact: a3,
        removed,
        ..
    } = reconcile(&src, &storage, &key, &opts, None).unwrap()
    else {
        panic!("expected new artifact")
    };
    assert!(a3.path.ends_with(&format!("{c3}.tar.gz")));
    assert_eq!(removed, vec![format!("gitrepository/ns/fleet/{c1}.tar.gz")]);
    let mut left: Vec<String> = std::fs::read_dir(store.path().join("gitrepository/ns/fleet"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    let mut want = vec![format!("{c2}.tar.gz"), format!("{c3}.tar.gz")];
    want.sort();
    assert_eq!(left, want);
    storage.remove_all(&key).unwrap();
    assert!(!store.path().join("gitrepository/ns/fleet").exists());
}

#[test]
fn artifacts_are_reproducible_and_apply_flux_exclusions() {
    let repo = Repo::new("fleet");
    repo.write("apps/app.yaml", b"kind: Deployment\n");
    repo.write("apps/logo.png", b"\x89PNG");
    repo.write(".github/workflows/ci.yaml", b"on: push\n");
    repo.write(".gitignore", b"tmp/\n");
    repo.write("bin/run.sh", b"#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.work().join("bin/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    repo.write("deep/.sops.yaml", b"creation_rules: []\n");
    repo.symlink("apps/inside.yaml", "app.yaml");
    repo.symlink("apps/escape.yaml", "../../../etc/passwd");
    repo.symlink("abs", "/etc/passwd");
    repo.symlink("dirlink", "apps");
    repo.commit("c");
    repo.push(&["main"]);
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let src = source(
        &server.url("fleet"),
        &branch("main"),
        Credentials::default(),
    );
    let resolved = src.resolve().unwrap();
    let fetched = src.fetch(&resolved).unwrap();

    let pack = |ignore: Option<&str>| -> (String, Files) {
        let store = tempfile::tempdir().unwrap();
        let storage = Storage::new(store.path(), "http://x").unwrap();
        let opts = PackOptions {
            ignore: ignore.map(str::to_string),
            ..Default::default()
        };
        let out =
            ferroflux_source::store(&fetched, &storage, &ObjectKey::new("n", "r"), &opts).unwrap();
        let Outcome::Stored {
            artifact, stats, ..
        } = out
        else {
            panic!()
        };
        assert_eq!(
            stats.skipped_symlinks.len(),
            3,
            "{:?}",
            stats.skipped_symlinks
        );
        (artifact.digest, unpack(&storage.local_path(&artifact.path)))
    };
    let (d1, files) = pack(None);
    let (d2, _) = pack(None);
    assert_eq!(d1, d2, "same commit, same digest");
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "apps/",
            "apps/app.yaml",
            "apps/inside.yaml",
            "bin/",
            "bin/run.sh",
            "deep/"
        ],
        "defaults drop .git*, images, CI configs and .sops.yaml; outside symlinks are dropped"
    );
    assert_eq!(files["apps/inside.yaml"].2, b"kind: Deployment\n");
    assert_eq!(files["bin/run.sh"].1, 0o755);
    assert_eq!(files["apps/app.yaml"].1, 0o644);

    // spec.ignore replaces the defaults (VCS files stay excluded).
    let (d3, files) = pack(Some("bin/\n"));
    assert_ne!(d1, d3);
    assert!(files.contains_key("apps/logo.png"));
    assert!(files.contains_key(".github/workflows/ci.yaml"));
    assert!(!files.contains_key("bin/run.sh") && !files.contains_key(".gitignore"));

    // .sourceignore files work per directory and also replace the defaults.
    repo.write(".sourceignore", b"# comment\n*.sh\n");
    repo.write("apps/.sourceignore", b"app.yaml\n!inside.yaml\n");
    repo.commit("ignores");
    repo.push(&["main"]);
    let fetched2 = src.fetch(&src.resolve().unwrap()).unwrap();
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://x").unwrap();
    let out = ferroflux_source::store(
        &fetched2,
        &storage,
        &ObjectKey::new("n", "r"),
        &PackOptions::default(),
    )
    .unwrap();
    let files = unpack(&storage.local_path(&out.artifact().path));
    assert!(!files.contains_key("bin/run.sh"));
    assert!(!files.contains_key("apps/app.yaml"));
    assert!(files.contains_key("apps/inside.yaml"));
    assert!(
        files.contains_key("apps/logo.png"),
        "defaults replaced by .sourceignore"
    );
}

#[test]
fn a_200_mb_file_is_refused_and_nothing_is_written() {
    let repo = Repo::new("big");
    repo.write("small.yaml", b"ok: true\n");
    // Zeros compress to almost nothing, so the test is quick; the limit is on the file size.
    let f = std::fs::File::create(repo.work().join("big.bin")).unwrap();
    f.set_len(200 * 1024 * 1024).unwrap();
    drop(f);
    repo.commit("big");
    repo.push(&["main"]);
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let src = source(&server.url("big"), &branch("main"), Credentials::default());
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://x").unwrap();
    let key = ObjectKey::new("n", "big");
    let err = reconcile(&src, &storage, &key, &PackOptions::default(), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "file 'big.bin' is 209715200 bytes, over the limit of 104857600 bytes per file \
         (max_file_size); the artifact was not written"
    );
    assert_eq!(err.reason(), "ArchiveOperationFailed");
    let dir = store.path().join("gitrepository/n/big");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(
        leftovers.is_empty(),
        "no partial or temporary file stays: {leftovers:?}"
    );
}

#[test]
fn storage_server_serves_artifacts_at_their_url() {
    let (repo, _, _) = fixture_repo();
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), format!("http://{addr}")).unwrap();
    rt.spawn(ferroflux_source::serve(
        store.path().to_path_buf(),
        listener,
    ));
    let src = source(
        &server.url("fleet"),
        &branch("main"),
        Credentials::default(),
    );
    let out = reconcile(
        &src,
        &storage,
        &ObjectKey::new("flux-system", "fleet"),
        &PackOptions::default(),
        None,
    )
    .unwrap();
    let a = out.artifact();
    let body = ureq::get(&a.url)
        .call()
        .unwrap()
        .into_body()
        .read_to_vec()
        .unwrap();
    assert_eq!(body, std::fs::read(storage.local_path(&a.path)).unwrap());
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(a.digest, format!("sha256:{hex}"));
    let missing = ureq::get(&format!("http://{addr}/gitrepository/../../etc/passwd")).call();
    assert!(!matches!(missing, Ok(r) if r.status() == 200));
    rt.shutdown_background();
}

fn ssh_fixture() -> (Repo, tempfile::TempDir) {
    let (repo, _, _) = fixture_repo();
    (repo, tempfile::tempdir().unwrap())
}

#[test]
fn ssh_with_keys_known_hosts_and_passphrases() {
    let (repo, keys) = ssh_fixture();
    let (key, key_pub) = keygen(&keys.path().join("id"), "");
    let (enc, enc_pub) = keygen(&keys.path().join("enc"), PASSPHRASE);
    let (stranger, _) = keygen(&keys.path().join("stranger"), "");
    let sshd = Sshd::start(&[&key_pub, &enc_pub]);
    let url = sshd.url(&repo.bare());
    let head = repo.git(&["rev-parse", "HEAD"]);
    let kh = sshd.known_hosts();

    let ok = secret(&[("identity", &key), ("known_hosts", &kh)]);
    let src = source(&url, &branch("main"), ok);
    assert_eq!(src.resolve().unwrap().revision, format!("main@sha1:{head}"));
    let store = tempfile::tempdir().unwrap();
    let storage = Storage::new(store.path(), "http://x").unwrap();
    let out = reconcile(
        &src,
        &storage,
        &ObjectKey::new("n", "ssh"),
        &PackOptions::default(),
        None,
    )
    .unwrap();
    assert!(
        unpack(&storage.local_path(&out.artifact().path)).contains_key("clusters/staging/app.yaml")
    );

    // An encrypted key with its passphrase in `password`.
    let enc_ok = secret(&[
        ("identity", &enc),
        ("password", PASSPHRASE),
        ("known_hosts", &kh),
    ]);
    assert_eq!(
        source(&url, &branch("main"), enc_ok)
            .resolve()
            .unwrap()
            .commit,
        head
    );

    // Wrong passphrase, unknown key: AuthenticationFailed, and no secret in the message.
    let wrong_phrase = secret(&[
        ("identity", &enc),
        ("password", &format!("{PASSPHRASE}x")),
        ("known_hosts", &kh),
    ]);
    let err = source(&url, &branch("main"), wrong_phrase)
        .resolve()
        .unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed", "{err}");
    assert_no_secret(&err);
    eprintln!("wrong passphrase: {err}");
    let unknown = secret(&[("identity", &stranger), ("known_hosts", &kh)]);
    let err = source(&url, &branch("main"), unknown)
        .resolve()
        .unwrap_err();
    assert_eq!(err.reason(), "AuthenticationFailed", "{err}");
    assert!(
        !err.to_string().contains(stranger.lines().nth(1).unwrap()),
        "{err}"
    );
    eprintln!("unknown key: {err}");

    // A host key that does not match known_hosts is refused.
    let (_, other_host) = keygen(&keys.path().join("otherhost"), "");
    let mismatch = format!("[127.0.0.1]:{} {}", sshd.port, other_host);
    let err = source(
        &url,
        &branch("main"),
        secret(&[("identity", &key), ("known_hosts", &mismatch)]),
    )
    .resolve()
    .unwrap_err();
    assert_eq!(err.reason(), "GitOperationFailed");
    assert!(
        err.to_string().contains("host key verification failed"),
        "{err}"
    );
    eprintln!("host key: {err}");
    // And a secret without known_hosts is refused before connecting.
    let err = GitSource::new(
        &url,
        &branch("main"),
        secret(&[("identity", &key)]),
        FetchOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("known_hosts"), "{err}");
    let _ = git;
}
