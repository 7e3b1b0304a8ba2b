//! The client and the fetch against a real S3 server (`s3s-fs`, which checks SigV4): listing
//! across pages, Flux's revision, `.sourceignore` and `spec.ignore`, the prefix, the no-op poll,
//! and the failures a user meets (wrong keys, unknown bucket, unreachable endpoint); HTTPS with
//! a private CA.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use ferroflux_bucket::{Client, Credentials, Error, Fetched, Options, Request, fetch, revision};
use ferroflux_source::{ObjectKey, Storage};
use ferroflux_testkit::S3Server;
use sha2::Digest;

fn client(server: &S3Server, secret: &str) -> Client {
    Client::new(Options {
        endpoint: server.endpoint(),
        insecure: true,
        region: String::new(),
        credentials: Some(Credentials {
            access_key: server.access_key.clone(),
            secret_key: secret.to_string(),
        }),
        ca_pem: None,
        timeout: Duration::from_secs(30),
        proxy: None,
    })
    .unwrap()
}

fn request(bucket: &str, prefix: &str, ignore: Option<&str>, previous: Option<String>) -> Request {
    Request {
        bucket: bucket.into(),
        prefix: prefix.into(),
        ignore: ignore.map(String::from),
        key: ObjectKey::of_kind("bucket", "ns", "b"),
        previous_revision: previous,
    }
}

fn md5_hex(data: &[u8]) -> String {
    // s3s-fs's ETag of a file written directly is the MD5 of its content; computed here with
    // `md5sum`, a second implementation.
    let mut child = std::process::Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_string()
}

fn artifact_files(storage: &Storage, path: &str) -> BTreeMap<String, String> {
    let file = std::fs::File::open(storage.local_path(path)).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.header().entry_type().is_file() {
            let name = entry.path().unwrap().to_string_lossy().to_string();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            out.insert(name, text);
        }
    }
    out
}

#[test]
fn lists_every_page() {
    let server = S3Server::start();
    server.create_bucket("many");
    for i in 0..1005 {
        server.put("many", &format!("k/{i:04}.txt"), "x");
    }
    let c = client(&server, &server.secret_key);
    let mut keys = Vec::new();
    c.visit_objects("many", "k/", &mut |k, e| {
        keys.push((k.to_string(), e.to_string()))
    })
    .unwrap();
    assert_eq!(keys.len(), 1005);
    assert_eq!(keys[1004].0, "k/1004.txt");
    // s3s-fs lists no ETags; a HEAD gives the object's.
    assert_eq!(
        c.head_object("many", "k/0000.txt").unwrap().as_deref(),
        Some(md5_hex(b"x").as_str())
    );
    assert_eq!(c.head_object("many", "k/none.txt").unwrap(), None);
}

#[test]
fn fetches_flux_revision_ignore_prefix_and_no_op() {
    let server = S3Server::start();
    server.create_bucket("podinfo");
    server.put("podinfo", "apps/deploy.yaml", "kind: Deployment\n");
    server.put("podinfo", "apps/notes.txt", "notes\n");
    server.put("podinfo", "apps/keep.txt", "keep\n");
    server.put("podinfo", "apps/logo.png", "png\n");
    server.put("podinfo", "apps/secret/token.yaml", "token\n");
    server.put("podinfo", "other/x.yaml", "x\n");
    server.put("podinfo", ".sourceignore", "*.txt\n!keep.txt\n");
    let storage_dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(storage_dir.path(), "http://localhost:9090").unwrap();
    let c = client(&server, &server.secret_key);

    let req = request("podinfo", "apps/", Some("secret/"), None);
    let Fetched::Stored { artifact, files } = fetch(&c, &req, &storage).unwrap() else {
        panic!("expected a new artifact");
    };
    // The index: the prefix's keys the rules keep (the default exclusions do not apply to it).
    let mut index = BTreeMap::new();
    index.insert(
        "apps/deploy.yaml".to_string(),
        md5_hex(b"kind: Deployment\n"),
    );
    index.insert("apps/keep.txt".to_string(), md5_hex(b"keep\n"));
    index.insert("apps/logo.png".to_string(), md5_hex(b"png\n"));
    assert_eq!(files, 3);
    let mut lines = String::new();
    for (k, e) in &index {
        lines.push_str(&format!("{k} {e}\n"));
    }
    let expected = format!("sha256:{:x}", sha2::Sha256::digest(lines.as_bytes()));
    assert_eq!(artifact.revision, expected);
    assert_eq!(revision(&index), expected);
    assert!(
        artifact.path.starts_with("bucket/ns/b/"),
        "{}",
        artifact.path
    );
    assert!(
        artifact
            .path
            .ends_with(&format!("{}.tar.gz", &expected[7..]))
    );
    // The archive: full keys, the .sourceignore kept as source-controller keeps it, the
    // default exclusions (*.png) applied.
    let files = artifact_files(&storage, &artifact.path);
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        vec![".sourceignore", "apps/deploy.yaml", "apps/keep.txt"]
    );
    assert_eq!(files["apps/deploy.yaml"], "kind: Deployment\n");

    // The same index again: nothing downloaded.
    let again = request("podinfo", "apps/", Some("secret/"), Some(expected.clone()));
    assert!(matches!(
        fetch(&c, &again, &storage).unwrap(),
        Fetched::Unchanged { revision, files: 3 } if revision == expected
    ));
    // An object changes: the revision moves.
    server.put(
        "podinfo",
        "apps/deploy.yaml",
        "kind: Deployment\nmetadata: {}\n",
    );
    let Fetched::Stored { artifact: next, .. } = fetch(&c, &again, &storage).unwrap() else {
        panic!("expected a new artifact after a change");
    };
    assert_ne!(next.revision, expected);
    assert_eq!(
        artifact_files(&storage, &next.path)["apps/deploy.yaml"],
        "kind: Deployment\nmetadata: {}\n"
    );
}

#[test]
fn refusals_say_what_flux_says() {
    let server = S3Server::start();
    server.create_bucket("podinfo");
    server.put("podinfo", "a.yaml", "a\n");
    let storage_dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(storage_dir.path(), "http://localhost:9090").unwrap();

    let wrong = client(&server, "not-the-secret");
    let err = fetch(&wrong, &request("podinfo", "", None, None), &storage).unwrap_err();
    assert!(matches!(err, Error::Existence { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "failed to confirm existence of 'podinfo' bucket: Access Denied."
    );
    // Listing with the wrong keys gives S3's own message (a GET has a body).
    let mut n = 0;
    let list = wrong
        .visit_objects("podinfo", "", &mut |_, _| n += 1)
        .unwrap_err();
    assert_eq!(list.code(), Some("SignatureDoesNotMatch"), "{list:?}");

    let good = client(&server, &server.secret_key);
    let err = fetch(&good, &request("nope", "", None, None), &storage).unwrap_err();
    assert_eq!(err.to_string(), "bucket 'nope' not found");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = Client::new(Options {
        endpoint: format!("127.0.0.1:{port}"),
        insecure: true,
        region: "us-east-1".into(),
        credentials: None,
        ca_pem: None,
        timeout: Duration::from_secs(10),
        proxy: None,
    })
    .unwrap();
    let err = fetch(&unreachable, &request("podinfo", "", None, None), &storage).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "failed to confirm existence of 'podinfo' bucket: Head \"http://127.0.0.1:{port}/podinfo/\": "
        )),
        "{text}"
    );
    // Nothing was stored by any refusal.
    assert!(!storage_dir.path().join("bucket").exists());
    // An endpoint with a scheme is refused before any request, as minio-go refuses it.
    let err = Client::new(Options {
        endpoint: "http://minio:9000".into(),
        insecure: true,
        region: String::new(),
        credentials: None,
        ca_pem: None,
        timeout: Duration::from_secs(1),
        proxy: None,
    })
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .starts_with("invalid endpoint 'http://minio:9000'"),
        "{err}"
    );
}

#[test]
fn https_with_a_private_ca() {
    let server = S3Server::start();
    server.create_bucket("secure");
    server.put("secure", "a.yaml", "a: 1\n");
    let tls = ferroflux_testkit::make_tls();
    let front = server.tls_front(&tls);
    let storage_dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(storage_dir.path(), "http://localhost:9090").unwrap();
    let options = |ca: Option<Vec<u8>>| Options {
        endpoint: front.endpoint(),
        insecure: false,
        region: "us-east-1".into(),
        credentials: Some(Credentials {
            access_key: server.access_key.clone(),
            secret_key: server.secret_key.clone(),
        }),
        ca_pem: ca,
        timeout: Duration::from_secs(30),
        proxy: None,
    };
    let trusted = Client::new(options(Some(tls.ca_pem.clone().into_bytes()))).unwrap();
    let Fetched::Stored { artifact, files } =
        fetch(&trusted, &request("secure", "", None, None), &storage).unwrap()
    else {
        panic!("expected a new artifact over HTTPS");
    };
    assert_eq!(files, 1);
    assert_eq!(artifact_files(&storage, &artifact.path)["a.yaml"], "a: 1\n");
    // Without the CA the certificate is refused, and the message says so.
    let untrusted = Client::new(options(None)).unwrap();
    let err = fetch(&untrusted, &request("secure", "", None, None), &storage)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "failed to confirm existence of 'secure' bucket: Head \"https://{}/secure/\": ",
            front.endpoint()
        )) && err.to_lowercase().contains("certificate"),
        "{err}"
    );
    // A bundle without a certificate is refused when the client is made.
    assert!(Client::new(options(Some(b"not a pem".to_vec()))).is_err());
}

/// `proxySecretRef`: the signed requests reach the server through a forward proxy (tunnelled,
/// so the signature over the endpoint's Host still holds), and the proxy saw them.
#[test]
fn fetches_through_a_proxy() {
    let server = S3Server::start();
    server.put("podinfo", "apps/deploy.yaml", "kind: Deployment\n");
    let proxy = ferroflux_testkit::HttpProxy::start(Some(("u", "bucket-proxy-pw")));
    let c = Client::new(Options {
        endpoint: server.endpoint(),
        insecure: true,
        region: String::new(),
        credentials: Some(Credentials {
            access_key: server.access_key.clone(),
            secret_key: server.secret_key.clone(),
        }),
        ca_pem: None,
        timeout: Duration::from_secs(30),
        proxy: Some(proxy.url().replace("http://", "http://u:bucket-proxy-pw@")),
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(dir.path(), "http://localhost:9090").unwrap();
    let Fetched::Stored { artifact, .. } =
        fetch(&c, &request("podinfo", "", None, None), &storage).unwrap()
    else {
        panic!("nothing stored")
    };
    assert!(artifact_files(&storage, &artifact.path).contains_key("apps/deploy.yaml"));
    assert!(
        proxy
            .requests()
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT {}", server.endpoint()))),
        "{:?}",
        proxy.requests()
    );
}
