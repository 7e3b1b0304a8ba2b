//! Running the `ferroflux` binary as a user would, and reading what it prints.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The runtime of a sync test that drives clusters between runs of the binary.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs the binary with `--kubeconfig kc` appended.
pub fn ferroflux(kc: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .output()
        .unwrap()
}

/// Runs the binary off the async runtime, so the test's servers keep answering.
pub async fn ferroflux_off_runtime(args: Vec<String>, env: Vec<(String, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(&args)
            .envs(env)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout then stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A table's rows as trimmed cells (the padding itself is checked against flux's goldens in
/// the unit tests of the table module).
pub fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| {
            l.trim_end_matches('\t')
                .split('\t')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}
