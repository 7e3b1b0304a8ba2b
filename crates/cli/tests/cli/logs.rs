//! `ferroflux logs` against `dev up`'s controllers: the cluster serves their log as the log of
//! the `ferroflux-controller` Pod, `kubectl logs` reads the JSON lines our controller writes,
//! and `logs` prints each one that its flags keep as flux's `logs` prints it; and the bad input.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::{ferroflux, stderr, stdout, text};
use ferroflux_testkit::{Kubectl, eventually};
use serde_json::Value;

#[test]
fn logs_reads_the_controller_pod_as_kubectl_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["dev", "up", "--clusters", "logs", "--state-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("dev up printed no ready line");
        if line.starts_with("ready") {
            break;
        }
    }
    let kc = dir.path().join("kubeconfig");
    let kubectl = Kubectl::at(&kc);
    // A source that cannot be fetched: the controller logs its failure.
    kubectl.ok(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "broken", "namespace": "default"},
            "spec": {"url": "file:///nowhere/at/all", "interval": "1m", "ref": {"branch": "main"}}}"#,
    );
    let rt = crate::run::runtime();
    let failure: Value = rt.block_on(eventually("the failure in kubectl logs", || async {
        let log = kubectl.run(
            &["logs", "-n", "flux-system", "deploy/ferroflux-controller"],
            "",
        );
        String::from_utf8_lossy(&log.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["name"] == "broken" && v["msg"] == "reconciliation failed")
    }));
    // flux's controllers' line: zap's level, controller-runtime's field names.
    assert_eq!(failure["level"], "error", "{failure}");
    assert_eq!(failure["controllerKind"], "GitRepository", "{failure}");
    assert_eq!(failure["namespace"], "default", "{failure}");
    let want = format!(
        "{} error GitRepository/broken.default - reconciliation failed {}\n",
        failure["ts"].as_str().unwrap(),
        failure["error"].as_str().unwrap()
    );

    let out = ferroflux(
        &kc,
        &[
            "logs",
            "--kind",
            "gitrepository",
            "--name",
            "broken",
            "--level",
            "error",
            "-n",
            "default",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains(&want),
        "{}\nwant {want}",
        stdout(&out)
    );
    // Every line printed is about that object.
    for line in stdout(&out).lines() {
        assert!(
            line.contains(" error GitRepository/broken.default - "),
            "{line}"
        );
    }
    // -n filters by the object's namespace: nothing is about flux-system's objects.
    let out = ferroflux(&kc, &["logs", "--kind", "GitRepository"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!stdout(&out).contains("broken.default"), "{}", stdout(&out));
    let out = ferroflux(&kc, &["logs", "-A", "--tail", "100000"]);
    assert!(stdout(&out).contains(&want), "{}", stdout(&out));
    // --tail 0 reads nothing; kubectl agrees.
    let out = ferroflux(&kc, &["logs", "-A", "--tail", "0"]);
    assert_eq!(stdout(&out), "", "{}", text(&out));
    let none = kubectl.ok(
        &[
            "logs",
            "-n",
            "flux-system",
            "deploy/ferroflux-controller",
            "--tail=0",
        ],
        "",
    );
    assert_eq!(none, "");

    // -f streams: the line comes through the followed log; SIGTERM ends it.
    let mut follow = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["logs", "-f", "-A", "--name", "broken", "--kubeconfig"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.contains(" GitRepository/broken.default - "),
        "{first}"
    );
    let _ = follow.kill();
    let _ = follow.wait();

    // The controller's Deployment is what `version` and `check` read too.
    let out = ferroflux(&kc, &["version"]);
    assert!(
        stdout(&out).contains(&format!(
            "ferroflux-controller: v{}\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        text(&out)
    );

    // Bad input.
    for (args, message) in [
        (
            &["logs", "--flux-namespace", "nope"][..],
            "✗ no Flux pods found in namespace \"nope\"\n",
        ),
        (
            &[
                "logs",
                "--since",
                "1m",
                "--since-time",
                "2026-01-01T00:00:00Z",
            ],
            "✗ at most one of `sinceTime` or `sinceDuration` may be specified\n",
        ),
        (
            &["logs", "--since-time", "yesterday"],
            "✗ yesterday is not a valid (RFC3339) time\n",
        ),
        (&["logs", "podinfo"], "✗ no argument required\n"),
    ] {
        let out = ferroflux(&kc, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), message, "{args:?}");
    }
    let out = ferroflux(&kc, &["logs", "--level", "warn"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unsupported log level 'warn', must be one of: debug, info, error"),
        "{}",
        stderr(&out)
    );

    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "dev up exited with {status}");
}
