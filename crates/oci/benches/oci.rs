//! Issue 16's figures against the real registry (Debian's docker-registry on loopback):
//! push and pull+extract of a 10,000-file tree, ours against `tar` + `skopeo copy`, and the
//! no-op poll (a fresh client: `GET /v2/` then `HEAD` of the manifest, what an OCIRepository
//! whose tag did not move costs on the registry side). Each figure is the median of the runs.
//!
//! `cargo bench -p ferroflux-oci --bench oci` (needs docker-registry and skopeo: ./test.sh);
//! `BENCH_RUNS=N` for another number of runs. Beside each wall-clock median the bench prints
//! the CPU time (user + system, from /proc) each side spent, summed over the runs: on a shared
//! machine the wall clock of 10,000 file creations swings with the disk's other writers, the
//! CPU time much less.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ferroflux_oci::artifact::{self, Metadata};
use ferroflux_oci::manifest::{FLUX_CONFIG, FLUX_CONTENT, OCI_MANIFEST, digest_of};
use ferroflux_oci::{Client, ClientOptions, Reference};
use ferroflux_testkit::{Registry, RegistryOptions};

const FILES: usize = 10_000;

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// CPU time (user + system) of this process and of its waited-for children so far, from
/// /proc/self/stat (fields 14-17, in clock ticks of 10 ms).
fn cpu() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name (field 2) may hold spaces; the fields after it follow its ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split(' ')
        .skip(11)
        .take(4)
        .map(|v| v.parse().unwrap())
        .collect();
    let tick = |t: u64| Duration::from_millis(t * 10);
    (tick(f[0] + f[1]), tick(f[2] + f[3]))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// 10,000 small YAML files in 100 folders (~3.4 MB).
fn tree(dir: &Path) {
    for i in 0..FILES {
        let sub = dir.join(format!("app-{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(
            sub.join(format!("cm-{i:05}.yaml")),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: default\ndata:\n  key: value-{i}\n  other: {}\n",
                "x".repeat(200)
            ),
        )
        .unwrap();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tar -czf` the tree, write it as an OCI layout with Flux's media types, `skopeo copy` it.
fn skopeo_push(reg: &Registry, src: &Path, tag: &str) {
    let work = tempfile::tempdir().unwrap();
    let layer = work.path().join("layer.tgz");
    run(Command::new("tar")
        .arg("-czf")
        .arg(&layer)
        .arg("-C")
        .arg(src)
        .arg("."));
    let layout = work.path().join("layout");
    std::fs::create_dir_all(layout.join("blobs/sha256")).unwrap();
    let put = |b: &[u8]| {
        let d = digest_of(b);
        std::fs::write(layout.join("blobs/sha256").join(&d[7..]), b).unwrap();
        d
    };
    let lb = std::fs::read(&layer).unwrap();
    let ld = put(&lb);
    let cd = put(b"{}");
    let m = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": FLUX_CONFIG, "digest": cd, "size": 2},
        "layers": [{"mediaType": FLUX_CONTENT, "digest": ld, "size": lb.len()}]
    }))
    .unwrap();
    let md = put(&m);
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": OCI_MANIFEST, "digest": md, "size": m.len(),
             "annotations": {"org.opencontainers.image.ref.name": tag}}]}))
        .unwrap(),
    )
    .unwrap();
    run(Command::new("skopeo").args([
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:{tag}", layout.display()),
        &format!("docker://{}/bench/skopeo:{tag}", reg.host()),
    ]));
}

/// `skopeo copy` to an OCI layout, then `tar -xzf` of its layer.
fn skopeo_pull(reg: &Registry, tag: &str, out: &Path) {
    let work = tempfile::tempdir().unwrap();
    let layout = work.path().join("layout");
    run(Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{}/bench/ours:{tag}", reg.host()),
        &format!("oci:{}:{tag}", layout.display()),
    ]));
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let md = index["manifests"][0]["digest"].as_str().unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("blobs/sha256").join(&md[7..])).unwrap())
            .unwrap();
    let ld = m["layers"][0]["digest"].as_str().unwrap();
    std::fs::create_dir_all(out).unwrap();
    run(Command::new("tar")
        .arg("-xzf")
        .arg(layout.join("blobs/sha256").join(&ld[7..]))
        .arg("-C")
        .arg(out));
}

fn main() {
    let reg = Registry::start(RegistryOptions::default());
    let src = tempfile::tempdir().unwrap();
    tree(src.path());
    let client = Client::new(&reg.host(), ClientOptions::default()).unwrap();
    let meta = Metadata {
        source: Some("https://example.com/fleet".into()),
        revision: Some("main@sha1:bench".into()),
        created: Some("2026-01-01T00:00:00Z".into()),
        ..Default::default()
    };

    // Push: each run a different tag of a tree that changes by one file, so every run
    // uploads a new layer (as a new commit would).
    let runs = runs();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut ours_cpu, mut theirs_cpu) = (Duration::ZERO, Duration::ZERO);
    for i in 0..runs {
        std::fs::write(src.path().join("run.txt"), format!("{i}")).unwrap();
        let r = Reference::parse(&format!("oci://{}/bench/ours:v{i}", reg.host())).unwrap();
        let (before, _) = cpu();
        let t = Instant::now();
        artifact::push(&client, &r, src.path(), &meta, &|_: &Path, _| false).unwrap();
        ours.push(t.elapsed());
        ours_cpu += cpu().0 - before;
        let (_, before) = cpu();
        let t = Instant::now();
        skopeo_push(&reg, src.path(), &format!("v{i}"));
        theirs.push(t.elapsed());
        theirs_cpu += cpu().1 - before;
    }
    let (po, pt) = (median(ours), median(theirs));
    println!(
        "push of {FILES} files, {runs} runs: ours {} | tar -czf + skopeo copy {} | ratio {:.2} \
         | CPU ours {} theirs {}",
        ms(po),
        ms(pt),
        po.as_secs_f64() / pt.as_secs_f64(),
        ms(ours_cpu),
        ms(theirs_cpu),
    );

    let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_cpu, mut theirs_cpu) = (Duration::ZERO, Duration::ZERO);
    for i in 0..runs {
        let r = Reference::parse(&format!("oci://{}/bench/ours:v{i}", reg.host())).unwrap();
        let ours_first = i % 2 == 0;
        let mut round = [Duration::ZERO; 2];
        for side in [ours_first, !ours_first] {
            // Earlier rounds' files written back first, so neither side pays for them.
            run(&mut Command::new("sync"));
            let out = tempfile::tempdir().unwrap();
            let (self_before, children_before) = cpu();
            let t = Instant::now();
            if side {
                let c = Client::new(&reg.host(), ClientOptions::default()).unwrap();
                artifact::pull(&c, &r, None, out.path(), 1 << 30, 1 << 30).unwrap();
                round[0] = t.elapsed();
                ours_cpu += cpu().0 - self_before;
            } else {
                skopeo_pull(&reg, &format!("v{i}"), &out.path().join("x"));
                round[1] = t.elapsed();
                theirs_cpu += cpu().1 - children_before;
            }
            drop(out);
        }
        ours.push(round[0]);
        theirs.push(round[1]);
        ratios.push(round[0].as_secs_f64() / round[1].as_secs_f64());
    }
    let (lo, lt) = (median(ours), median(theirs));
    ratios.sort_by(f64::total_cmp);
    println!(
        "pull+extract of {FILES} files, {runs} runs: ours {} | skopeo copy + tar -xzf {} | ratio \
         {:.2} (per round, sorted: {}) | CPU ours {} theirs {}",
        ms(lo),
        ms(lt),
        lo.as_secs_f64() / lt.as_secs_f64(),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        ms(ours_cpu),
        ms(theirs_cpu),
    );

    let r = Reference::parse(&format!("oci://{}/bench/ours:v0", reg.host())).unwrap();
    let mut polls = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let c = Client::new(&reg.host(), ClientOptions::default()).unwrap();
        c.head_manifest(&r).unwrap();
        polls.push(t.elapsed());
    }
    let mut sorted = polls.clone();
    sorted.sort();
    println!(
        "no-op poll (fresh client: GET /v2/ + HEAD manifest), 50 runs: median {} | max {}",
        ms(median(polls)),
        ms(*sorted.last().unwrap())
    );
}
