//! What a Bucket source costs against a real S3 server (s3s-fs on loopback, SigV4 checked):
//! the first fetch of 1,000 objects of 1 KiB (location, HEAD, `.sourceignore`, list, 1,000
//! GETs, pack, store), the no-op poll of the same bucket (everything up to the list, nothing
//! downloaded), and the fetch after one object changed. Each figure is the median of the runs,
//! with the slowest beside it.
//!
//! `cargo bench -p ferroflux-bucket --bench bucket` (needs s3s-fs: ./test.sh); `BENCH_RUNS=N`
//! for another number of runs (default 10).

use std::time::{Duration, Instant};

use ferroflux_bucket::{Client, Credentials, Fetched, Options, Request, fetch};
use ferroflux_source::{ObjectKey, Storage};
use ferroflux_testkit::S3Server;

const OBJECTS: usize = 1_000;

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

fn summary(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.1} ms, max {:.1} ms ({} runs)",
        ms(v[v.len() / 2]),
        ms(v[v.len() - 1]),
        v.len()
    )
}

fn main() {
    let server = S3Server::start();
    server.create_bucket("fleet");
    let body = "x".repeat(1024);
    for i in 0..OBJECTS {
        server.put(
            "fleet",
            &format!("apps/app-{:02}/object-{i:04}.yaml", i / 100),
            &body,
        );
    }
    let client = Client::new(Options {
        endpoint: server.endpoint(),
        insecure: true,
        region: String::new(),
        credentials: Some(Credentials {
            access_key: server.access_key.clone(),
            secret_key: server.secret_key.clone(),
        }),
        ca_pem: None,
        timeout: Duration::from_secs(60),
        proxy: None,
    })
    .unwrap();
    let storage_dir = tempfile::tempdir().unwrap();
    let storage = Storage::new(storage_dir.path(), "http://localhost:9090").unwrap();
    let request = |previous: Option<String>| Request {
        bucket: "fleet".into(),
        prefix: String::new(),
        ignore: None,
        key: ObjectKey::of_kind("bucket", "flux-system", "fleet"),
        previous_revision: previous,
    };

    let mut first = Vec::new();
    let mut revision = String::new();
    for _ in 0..runs() {
        let started = Instant::now();
        let Fetched::Stored { artifact, files } = fetch(&client, &request(None), &storage).unwrap()
        else {
            panic!("a first fetch stores an artifact");
        };
        first.push(started.elapsed());
        assert_eq!(files, OBJECTS);
        revision = artifact.revision;
    }
    let mut noop = Vec::new();
    for _ in 0..runs() {
        let started = Instant::now();
        let fetched = fetch(&client, &request(Some(revision.clone())), &storage).unwrap();
        noop.push(started.elapsed());
        assert!(matches!(fetched, Fetched::Unchanged { .. }));
    }
    let mut changed = Vec::new();
    for i in 0..runs() {
        server.put(
            "fleet",
            "apps/app-00/object-0000.yaml",
            format!("{body}{i}"),
        );
        let started = Instant::now();
        let Fetched::Stored { artifact, .. } =
            fetch(&client, &request(Some(revision.clone())), &storage).unwrap()
        else {
            panic!("a changed object stores an artifact");
        };
        changed.push(started.elapsed());
        revision = artifact.revision;
    }
    println!("bucket of {OBJECTS} objects of 1 KiB on s3s-fs (loopback):");
    println!(
        "  first fetch (list, {OBJECTS} GETs, pack, store): {}",
        summary(first)
    );
    println!(
        "  no-op poll (location, HEAD, .sourceignore, list):  {}",
        summary(noop)
    );
    println!(
        "  one object changed (all objects fetched again):  {}",
        summary(changed)
    );
}
