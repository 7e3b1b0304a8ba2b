//! `ferroflux controller` as an operator runs it: flags, JSON logs, probes, a clean stop on
//! SIGTERM, and clear errors for a wrong context or flag.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::runtime;
use ferroflux_devcluster::{Config, DevCluster};

#[test]
fn runs_with_json_logs_and_stops_on_sigterm() {
    let rt = runtime();
    let cluster = rt
        .block_on(DevCluster::start(Config::memory("ops")))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], None).unwrap();
    rt.block_on(async {
        let client = cluster.client().await.unwrap();
        ferroflux_controller::manager::install_crds(&client)
            .await
            .unwrap();
    });

    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["controller", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", "ops", "--storage-path"])
        .arg(dir.path().join("artifacts"))
        .args([
            "--storage-addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
            "--health-addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the controller logged nothing");
        let entry: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        if entry["msg"] == "controllers started" {
            break entry;
        }
    };
    // flux's controllers' JSON: zap's level names.
    assert_eq!(started["level"], "info");
    let metrics = started["metrics"].as_str().unwrap().to_string();
    assert!(metrics.starts_with("http://127.0.0.1:"), "{started}");

    let status = Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "the controller exited with {exit}");
    rt.block_on(cluster.shutdown());
}

#[test]
fn bad_context_and_flags_are_refused_with_the_reason() {
    let rt = runtime();
    let cluster = rt
        .block_on(DevCluster::start(Config::memory("ops")))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], None).unwrap();

    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["controller", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", "prod", "--storage-path"])
        .arg(dir.path().join("artifacts"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("context \"prod\" not found") && err.contains("available contexts: ops"),
        "{err}"
    );

    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["controller", "--storage-addr", "localhost"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("expected host:port or :port"), "{err}");
    rt.block_on(cluster.shutdown());
}
