//! The API server driven by the real `kubectl` over HTTPS, with the kubeconfig the crate writes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_testkit::Kubectl;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const CM: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
  labels:
    app: web
data:
  color: blue
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_output_formats_selectors_delete() {
    let c = DevCluster::start(Config::memory("kind-a")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    let out = k.ok(&["version", "-o", "json"], "");
    assert!(out.contains("\"gitVersion\": \"v1.33.1\""), "{out}");

    let ns = k.ok(&["get", "ns"], "");
    assert!(ns.contains("default") && ns.contains("kube-system"), "{ns}");
    assert!(ns.contains("Active"), "namespace table shows STATUS: {ns}");

    assert_eq!(
        k.ok(&["create", "-f", "-"], CM).trim(),
        "configmap/settings created"
    );
    let yaml = k.ok(&["get", "configmap", "settings", "-o", "yaml"], "");
    assert!(
        yaml.contains("color: blue") && yaml.contains("resourceVersion:") && yaml.contains("uid:"),
        "{yaml}"
    );
    assert_eq!(
        k.ok(
            &["get", "cm", "settings", "-o", "jsonpath={.data.color}"],
            ""
        ),
        "blue"
    );
    assert_eq!(
        k.ok(&["get", "cm", "-l", "app=web", "-o", "name"], "")
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        k.ok(&["get", "cm", "-l", "app!=web", "-o", "name"], "")
            .trim(),
        ""
    );
    let table = k.ok(&["get", "cm", "settings"], "");
    assert!(
        table.starts_with("NAME") && table.contains("DATA") && table.contains("settings"),
        "{table}"
    );

    // Creating it again is AlreadyExists, as kubectl words it.
    let o = k.run(&["create", "-f", "-"], CM);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Error from server (AlreadyExists)")
            && err.contains("configmaps \"settings\" already exists"),
        "{err}"
    );

    assert_eq!(
        k.ok(&["delete", "cm", "settings"], "").trim(),
        "configmap \"settings\" deleted"
    );
    let o = k.run(&["get", "cm", "settings"], "");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Error from server (NotFound): configmaps \"settings\" not found")
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_with_a_stale_version_fails() {
    let c = DevCluster::start(Config::memory("kind-b")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    let dir = tempfile::tempdir().unwrap();
    k.ok(&["create", "-f", "-"], CM);
    let old = k.ok(&["get", "cm", "settings", "-o", "yaml"], "");
    let old_file = write(dir.path(), "old.yaml", &old);
    // Someone else changes it.
    let fresh = write(
        dir.path(),
        "fresh.yaml",
        &old.replace("color: blue", "color: green"),
    );
    assert!(
        k.ok(&["replace", "-f", fresh.to_str().unwrap()], "")
            .contains("replaced")
    );
    // Our copy is stale now.
    let stale = write(
        dir.path(),
        "stale.yaml",
        &std::fs::read_to_string(&old_file)
            .unwrap()
            .replace("color: blue", "color: red"),
    );
    let o = k.run(&["replace", "-f", stale.to_str().unwrap()], "");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Error from server (Conflict)")
            && err.contains("the object has been modified"),
        "{err}"
    );
    assert_eq!(
        k.ok(
            &["get", "cm", "settings", "-o", "jsonpath={.data.color}"],
            ""
        ),
        "green"
    );
    c.shutdown().await;
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: gizmos
    singular: gizmo
    kind: Gizmo
    shortNames: [gz]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
    additionalPrinterColumns:
    - name: Color
      type: string
      jsonPath: .spec.color
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_lists_a_crd_kind_after_creation() {
    let c = DevCluster::start(Config::memory("kind-c")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    let before = k.ok(&["api-resources"], "");
    assert!(!before.contains("Gizmo"));
    assert!(
        before.contains("deployments") && before.contains("deploy"),
        "{before}"
    );
    k.ok(&["create", "-f", "-"], CRD);
    k.ok(
        &[
            "wait",
            "--for=condition=Established",
            "crd/gizmos.example.com",
            "--timeout=10s",
        ],
        "",
    );
    let after = k.ok(&["api-resources", "--api-group=example.com"], "");
    assert!(
        after.contains("gizmos") && after.contains("gz") && after.contains("Gizmo"),
        "{after}"
    );
    k.ok(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\n  namespace: default\nspec:\n  color: teal\n",
    );
    let table = k.ok(&["get", "gz"], "");
    assert!(table.contains("COLOR") && table.contains("teal"), "{table}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_sees_a_later_change() {
    let c = DevCluster::start(Config::memory("kind-d")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["create", "-f", "-"], CM);
    let mut child = k
        .command(&[
            "get",
            "cm",
            "settings",
            "--watch",
            "-o",
            "jsonpath={.data.color}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), "blue");
    k.ok(
        &[
            "patch",
            "cm",
            "settings",
            "--type=merge",
            "-p",
            "{\"data\":{\"color\":\"orange\"}}",
        ],
        "",
    );
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l == "orange") {
        seen.push(
            rx.recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no change seen: {seen:?}")),
        );
    }
    child.kill().unwrap();
    let _ = child.wait();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_are_isolated_and_tokens_do_not_cross() {
    let a = DevCluster::start(Config::memory("alpha")).await.unwrap();
    let b = DevCluster::start(Config::memory("beta")).await.unwrap();
    let k = Kubectl::new(&[&a, &b]);
    k.ok(&["--context", "alpha", "create", "-f", "-"], CM);
    assert_eq!(
        k.ok(&["--context", "alpha", "get", "cm", "-o", "name"], "")
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        k.ok(&["--context", "beta", "get", "cm", "-o", "name"], "")
            .trim(),
        ""
    );
    // beta's token sent to alpha is refused.
    let swapped = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(k.kubeconfig())
        .unwrap()
        .replace(a.token(), "x")
        .replace(b.token(), a.token())
        .replace("token: \"x\"", &format!("token: \"{}\"", b.token()));
    let path = write(swapped.path(), "kc", &text);
    let o = Command::new("kubectl")
        .args([
            "--kubeconfig",
            path.to_str().unwrap(),
            "--context",
            "alpha",
            "get",
            "cm",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Unauthorized") || err.contains("provide credentials"),
        "{err}"
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imperative_create_commands_work() {
    let c = DevCluster::start(Config::memory("kind-e")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    assert_eq!(
        k.ok(&["create", "namespace", "team"], "").trim(),
        "namespace/team created"
    );
    k.ok(
        &[
            "create",
            "configmap",
            "conf",
            "-n",
            "team",
            "--from-literal=color=blue",
            "--from-literal=size=2",
        ],
        "",
    );
    assert_eq!(
        k.ok(
            &[
                "get",
                "cm",
                "conf",
                "-n",
                "team",
                "-o",
                "jsonpath={.data.color}/{.data.size}"
            ],
            ""
        ),
        "blue/2"
    );
    k.ok(
        &[
            "create",
            "secret",
            "generic",
            "s",
            "-n",
            "team",
            "--from-literal=token=abc",
        ],
        "",
    );
    // "abc" in base64.
    assert_eq!(
        k.ok(
            &[
                "get",
                "secret",
                "s",
                "-n",
                "team",
                "-o",
                "jsonpath={.data.token}/{.type}"
            ],
            ""
        ),
        "YWJj/Opaque"
    );
    k.ok(&["create", "serviceaccount", "robot", "-n", "team"], "");
    assert_eq!(
        k.ok(&["get", "sa", "-n", "team", "-o", "name"], "").trim(),
        "serviceaccount/robot"
    );
    c.shutdown().await;
}

/// After compaction the real kubectl (client-go) reads the 410s as an API server's: an exact
/// list of the past is `Error from server (Expired)`, a watch from it opens and ends with one
/// ERROR event carrying the Status. And `kubectl get --watch` does not outlive a restart of the
/// server: its watch ends and kubectl exits 0 without a word (client-go's `UntilWithoutRetry`;
/// only `-v=1` logs the unexpected EOF), missing every later change,
/// which is what `ferroflux get --watch` improves on (crates/cli/tests/day2.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_compacted_versions_as_gone() {
    let mut c = DevCluster::start(Config::memory("kind-g")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["create", "-f", "-"], CM);
    let rv = k.ok(
        &[
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
        "",
    );
    k.ok(
        &[
            "patch",
            "cm",
            "settings",
            "--type=merge",
            "-p",
            "{\"data\":{\"color\":\"green\"}}",
        ],
        "",
    );
    let base = "/api/v1/namespaces/default/configmaps";
    let exact = format!("{base}?resourceVersion={rv}&resourceVersionMatch=Exact");
    let past = k.ok(&["get", "--raw", &exact], "");
    assert!(past.contains("\"color\":\"blue\""), "{past}");
    c.compact_history();
    let out = k.run(&["get", "--raw", &exact], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "Error from server (Expired): The resourceVersion for the provided list is too old."
        ),
        "{err}"
    );
    let events = k.ok(
        &[
            "get",
            "--raw",
            &format!("{base}?watch=true&resourceVersion={rv}"),
        ],
        "",
    );
    let event: serde_json::Value = serde_json::from_str(events.trim()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["kind"], "Status");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");

    // `-v=6` logs each response: the watch's `200 OK` says it is established.
    let mut child = k
        .command(&["get", "cm", "--watch", "-o", "name", "-v=6"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "configmap/settings");
    loop {
        let l = log.next().expect("kubectl opens its watch").unwrap();
        if l.contains("watch=true") && l.contains("200 OK") {
            break;
        }
    }
    c.stop().await;
    c.restart().await.unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
        let _: Vec<_> = log.collect();
        let status = child.wait().unwrap();
        let _ = tx.send((status, rest));
    });
    let (status, rest) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("kubectl get --watch ends when its watch ends");
    assert_eq!(status.code(), Some(0));
    assert!(rest.is_empty(), "{rest:?}");
    c.shutdown().await;
}
