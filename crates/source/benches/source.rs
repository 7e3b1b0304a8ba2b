//! Benchmark of the Git source against `git` itself, in one run:
//!
//! - a shallow fetch of a repository with 10,000 files and 5,000 commits, ours versus
//!   `git clone --depth 1` (bare, so both only fetch; and with checkout versus our fetch + pack),
//!   over `file://` and over smart HTTP (`git http-backend`);
//! - the no-op poll (ls-refs only) latency;
//! - artifact packing throughput.
//!
//! Run: `cargo bench -p ferroflux-source --bench source` (results go in BENCHMARKS.md).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferroflux_source::{
    Credentials, FetchOptions, GitRef, GitSource, ObjectKey, PackOptions, Storage, pack_tree,
};

const FILES: usize = 10_000;
const COMMITS: usize = 5_000;
const RUNS: usize = 5;

/// Builds the repository with `git fast-import`: one commit adding every file, then commits
/// that each change one file.
fn make_repo(bare: &std::path::Path) {
    ferroflux_testkit::git(
        bare.parent().unwrap(),
        &["init", "--bare", "-q", bare.to_str().unwrap()],
    );
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(bare)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::io::BufWriter::new(child.stdin.take().unwrap());
    for c in 0..COMMITS {
        writeln!(w, "commit refs/heads/main").unwrap();
        writeln!(
            w,
            "committer Bench <bench@example.com> {} +0000",
            1_700_000_000 + c
        )
        .unwrap();
        let msg = format!("commit {c}");
        writeln!(w, "data {}\n{msg}", msg.len()).unwrap();
        let files: Vec<usize> = if c == 0 {
            (0..FILES).collect()
        } else {
            vec![(c * 7) % FILES]
        };
        for f in files {
            let body = format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{f}\n  namespace: apps-{}\ndata:\n  revision: \"{c}\"\n  payload: \"{}\"\n",
                f % 50,
                "x".repeat(200 + f % 300)
            );
            writeln!(
                w,
                "M 100644 inline apps/{:02}/{:03}/cm-{f}.yaml",
                f % 40,
                f / 40
            )
            .unwrap();
            writeln!(w, "data {}\n{body}", body.len()).unwrap();
        }
    }
    drop(w);
    assert!(child.wait().unwrap().success());
    ferroflux_testkit::git(bare, &["gc", "-q"]);
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t = Instant::now();
    let v = f();
    (t.elapsed(), v)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn git_clone(url: &str, bare: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["clone", "-q", "--depth", "1", "--branch", "main"];
    if bare {
        args.push("--bare");
    }
    let (d, out) = time(|| {
        Command::new("git")
            .args(&args)
            .arg(url)
            .arg(dir.path().join("c"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    let bare = work.path().join("bench.git");
    let (made, ()) = time(|| make_repo(&bare));
    println!(
        "repository: {FILES} files, {COMMITS} commits, built in {:.1} s",
        made.as_secs_f64()
    );

    let server =
        ferroflux_testkit::GitHttpServer::start(work.path(), ferroflux_testkit::Auth::None, None);
    let urls = [
        ("file://", format!("file://{}", bare.display())),
        ("http:// (git http-backend)", server.url("bench")),
    ];
    let main_ref = GitRef {
        branch: Some("main".into()),
        ..Default::default()
    };
    let opts = FetchOptions {
        allow_file_urls: true,
        ..Default::default()
    };
    for (label, url) in &urls {
        let src = GitSource::new(url, &main_ref, Credentials::default(), opts.clone()).unwrap();
        // Warm both sides once (page cache, server start-up).
        git_clone(url, true);
        src.fetch(&src.resolve().unwrap()).unwrap();

        let mut ours_fetch = Vec::new();
        let mut ours_full = Vec::new();
        let mut git_bare = Vec::new();
        let mut git_checkout = Vec::new();
        for _ in 0..RUNS {
            git_bare.push(git_clone(url, true));
            git_checkout.push(git_clone(url, false));
            let (d, fetched) = time(|| src.fetch(&src.resolve().unwrap()).unwrap());
            ours_fetch.push(d);
            let store = tempfile::tempdir().unwrap();
            let storage = Storage::new(store.path(), "http://bench").unwrap();
            let (p, _) = time(|| {
                ferroflux_source::store(
                    &fetched,
                    &storage,
                    &ObjectKey::new("bench", "bench"),
                    &PackOptions::default(),
                )
                .unwrap()
            });
            ours_full.push(d + p);
        }
        let (of, gb) = (median(ours_fetch), median(git_bare));
        let (ofu, gc) = (median(ours_full), median(git_checkout));
        println!("\n[{label}] median of {RUNS}");
        println!(
            "  shallow fetch:  ferroflux {}   git clone --depth 1 --bare {}   ratio {:.2}x",
            ms(of),
            ms(gb),
            of.as_secs_f64() / gb.as_secs_f64()
        );
        println!(
            "  fetch + tar.gz: ferroflux {}   git clone --depth 1 (checkout) {}   ratio {:.2}x",
            ms(ofu),
            ms(gc),
            ofu.as_secs_f64() / gc.as_secs_f64()
        );
        let mut polls = Vec::new();
        for _ in 0..50 {
            polls.push(time(|| src.resolve().unwrap()).0);
        }
        polls.sort();
        println!(
            "  no-op poll (ls-refs only), 50 polls: median {}  p95 {}  max {}",
            ms(polls[25]),
            ms(polls[47]),
            ms(polls[49])
        );
        let mut lsremote = Vec::new();
        for _ in 0..10 {
            lsremote.push(
                time(|| {
                    Command::new("git")
                        .args(["ls-remote", url, "refs/heads/main"])
                        .output()
                        .unwrap()
                })
                .0,
            );
        }
        println!(
            "  git ls-remote of the same ref, 10 runs: median {}",
            ms(median(lsremote))
        );
    }

    // Packing throughput on the fetched 10,000-file tree.
    let src = GitSource::new(&urls[0].1, &main_ref, Credentials::default(), opts).unwrap();
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    let mut runs = Vec::new();
    let mut stats = None;
    let mut out_len = 0;
    for _ in 0..RUNS {
        let mut out = Vec::new();
        let (d, s) = time(|| {
            pack_tree(
                &fetched.repo,
                fetched.tree,
                &PackOptions::default(),
                &mut out,
            )
            .unwrap()
        });
        runs.push(d);
        out_len = out.len();
        stats = Some(s);
    }
    let stats = stats.unwrap();
    let d = median(runs);
    println!(
        "\npacking: {} files, {:.1} MiB of content -> {:.1} MiB tar.gz in {} (median of {RUNS}): {:.0} MiB/s, {:.0} files/s",
        stats.files,
        stats.content_bytes as f64 / 1048576.0,
        out_len as f64 / 1048576.0,
        ms(d),
        stats.content_bytes as f64 / 1048576.0 / d.as_secs_f64(),
        stats.files as f64 / d.as_secs_f64()
    );
}
