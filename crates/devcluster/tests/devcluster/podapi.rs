//! The parts of the API kubectl reaches beyond CRUD, with the real `kubectl`: Pod `exec`,
//! `attach` and `port-forward` (refused: no container runs), evictions held back by a
//! PodDisruptionBudget (`kubectl drain`), a scheduler's Bindings, ComponentStatuses,
//! HorizontalPodAutoscalers at autoscaling/v1 and v2, and protobuf watches (client-go's typed
//! watch inside `kubectl run --attach`, and a frame reader that follows the wire format).

use std::process::Output;

use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_testkit::Kubectl;
use http_body_util::BodyExt;
use serde_json::{Value, json};

const NO_CONTAINERS: &str = "this cluster runs no containers";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_attach_and_port_forward_say_no_container_runs() {
    let c = DevCluster::start(Config::memory("pod-actions"))
        .await
        .unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["run", "web", "--image=nginx"], "");
    k.ok(
        &["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"],
        "",
    );

    for args in [
        vec!["exec", "web", "--", "ls"],
        vec!["attach", "web"],
        vec!["port-forward", "pod/web", "0:80"],
    ] {
        let o = k.run(&args, "");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "kubectl {args:?}: {err}");
        assert!(err.contains(NO_CONTAINERS), "kubectl {args:?}: {err}");
    }
    // A Pod that does not exist is 404 first, as the API server answers.
    let err = k.fails(&["exec", "nowhere", "--", "ls"], "");
    assert!(err.contains("pods \"nowhere\" not found"), "{err}");

    // `kubectl run --attach` waits for the Pod to run (client-go's typed list and watch, which
    // ask for protobuf first); the attach is refused, and kubectl falls back to the Pod's
    // (simulated) log.
    let o = k.run(
        &[
            "run",
            "shell",
            "--image=busybox",
            "--attach",
            "--pod-running-timeout=60s",
        ],
        "",
    );
    let err = stderr(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        err.contains("couldn't attach to pod/shell") && err.contains(NO_CONTAINERS),
        "{err}"
    );
    assert!(
        out.contains("logs are simulated: this cluster runs no containers"),
        "{out}"
    );
    c.shutdown().await;
}

fn eviction(pod: &str) -> String {
    json!({ "apiVersion": "policy/v1", "kind": "Eviction", "metadata": { "name": pod, "namespace": "default" } })
        .to_string()
}

fn pods_of(k: &Kubectl, selector: &str) -> Vec<Value> {
    k.json(&["get", "pods", "-l", selector])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_respect_disruption_budgets_and_drain_works() {
    let c = DevCluster::start(Config::memory("evict")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ],
        "",
    );
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    k.ok(
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=2",
        ],
        "",
    );
    let pods = pods_of(&k, "app=web");
    assert_eq!(pods.len(), 2);
    let victim = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    let path = format!("/api/v1/namespaces/default/pods/{victim}/eviction");

    // Both Pods are needed: 429 with the budget's numbers, and the budget's status says so.
    let o = k.run(&["create", "--raw", &path, "-f", "-"], &eviction(&victim));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("(TooManyRequests)")
            && err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );
    let pdb = k.json(&["get", "pdb", "web"]);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0, "{pdb:#}");
    assert_eq!(pdb["status"]["currentHealthy"], 2, "{pdb:#}");
    assert_eq!(pdb["status"]["desiredHealthy"], 2, "{pdb:#}");
    assert!(
        k.json(&["get", "pod", &victim])["metadata"]
            .get("deletionTimestamp")
            .is_none()
    );

    // With one to spare the eviction goes through, and the Deployment replaces the Pod.
    k.ok(
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":1}}"#,
        ],
        "",
    );
    let out = k.ok(&["create", "--raw", &path, "-f", "-"], &eviction(&victim));
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["status"], "Success", "{status:#}");
    k.ok(
        &[
            "wait",
            "--for=delete",
            &format!("pod/{victim}"),
            "--timeout=60s",
        ],
        "",
    );
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    assert_eq!(pods_of(&k, "app=web").len(), 2);

    // A wrong name in the body, a Pod that is not there.
    let err = k.fails(&["create", "--raw", &path, "-f", "-"], &eviction("other"));
    assert!(
        err.contains("name in URL does not match name in Eviction object"),
        "{err}"
    );
    let err = k.fails(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/gone/eviction",
            "-f",
            "-",
        ],
        &eviction("gone"),
    );
    assert!(err.contains("pods \"gone\" not found"), "{err}");

    // kubectl drain: cordon, evict through the budget, wait for the Pod to go.
    let pods = pods_of(&k, "app=web");
    let node = pods[0]["spec"]["nodeName"].as_str().unwrap().to_string();
    let out = k.ok(
        &["drain", &node, "--ignore-daemonsets", "--timeout=60s"],
        "",
    );
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    let pods = pods_of(&k, "app=web");
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter().all(|p| p["spec"]["nodeName"] != node.as_str()),
        "nothing is scheduled to the cordoned node: {pods:#?}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_binds_pods_to_nodes() {
    let c = DevCluster::start(Config::memory("bind")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  schedulerName: my-scheduler\n  containers: [{{name: c, image: nginx}}]\n"
        )
    };
    k.ok(&["create", "-f", "-"], &pod("one"));
    k.ok(&["create", "-f", "-"], &pod("two"));
    // No scheduler of that name runs: the Pods wait, unassigned.
    let one = k.json(&["get", "pod", "one"]);
    assert_eq!(one["status"]["phase"], "Pending", "{one:#}");
    assert!(one["spec"].get("nodeName").is_none(), "{one:#}");

    let node = k.ok(
        &["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"],
        "",
    );
    let binding = |name: &str| {
        json!({ "apiVersion": "v1", "kind": "Binding", "metadata": { "name": name },
                "target": { "apiVersion": "v1", "kind": "Node", "name": node } })
        .to_string()
    };
    let out = k.ok(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/one/binding",
            "-f",
            "-",
        ],
        &binding("one"),
    );
    assert!(out.contains("\"status\":\"Success\""), "{out}");
    k.ok(
        &["wait", "--for=condition=Ready", "pod/one", "--timeout=60s"],
        "",
    );
    assert_eq!(
        k.ok(
            &["get", "pod", "one", "-o", "jsonpath={.spec.nodeName}"],
            ""
        ),
        node
    );

    // The `bindings` collection, as kube-scheduler posts to it.
    k.ok(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/bindings",
            "-f",
            "-",
        ],
        &binding("two"),
    );
    k.ok(
        &["wait", "--for=condition=Ready", "pod/two", "--timeout=60s"],
        "",
    );

    // A bound Pod cannot be bound again; a Binding needs a Node.
    let err = k.fails(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/one/binding",
            "-f",
            "-",
        ],
        &binding("one"),
    );
    assert!(
        err.contains("(Conflict)") && err.contains("pod one is already assigned to node"),
        "{err}"
    );
    let err = k.fails(
        &["create", "--raw", "/api/v1/namespaces/default/bindings", "-f", "-"],
        &json!({ "apiVersion": "v1", "kind": "Binding", "metadata": { "name": "two" }, "target": { "kind": "Pod", "name": "x" } }).to_string(),
    );
    assert!(
        err.contains("The Binding \"two\" is invalid: target.kind: Unsupported value: \"Pod\""),
        "{err}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn component_statuses_are_read_only() {
    let c = DevCluster::start(Config::memory("cs")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    let o = k.run(&["get", "componentstatuses"], "");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{}",
        stderr(&o)
    );
    assert!(
        out.starts_with("NAME") && out.contains("MESSAGE") && out.contains("ERROR"),
        "{out}"
    );
    for name in ["scheduler", "controller-manager", "etcd-0"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(name) && l.contains("Healthy") && l.contains("ok")),
            "{out}"
        );
    }
    let one = k.json(&["get", "cs", "etcd-0"]);
    assert_eq!(one["conditions"][0]["type"], "Healthy", "{one:#}");
    let err = k.fails(&["delete", "cs", "scheduler"], "");
    assert!(err.contains("(MethodNotAllowed)"), "{err}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autoscalers_at_v1_and_v2() {
    let c = DevCluster::start(Config::memory("hpa")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["create", "deployment", "web", "--image=nginx"], "");
    let out = k.ok(
        &[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=70",
        ],
        "",
    );
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/web autoscaled"),
        "{out}"
    );
    let v1 = k.json(&["get", "horizontalpodautoscalers.v1.autoscaling", "web"]);
    assert_eq!(v1["apiVersion"], "autoscaling/v1", "{v1:#}");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70, "{v1:#}");
    assert_eq!(v1["spec"]["minReplicas"], 2, "{v1:#}");
    let v2 = k.json(&["get", "horizontalpodautoscalers.v2.autoscaling", "web"]);
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 70 } } }]),
        "{v2:#}"
    );

    // A v2 autoscaler with more than v1 can say: v1 carries the rest in annotations, and a v1
    // write brings it back unchanged.
    let api = "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  - type: Pods
    pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: '10'}}
";
    k.ok(&["create", "-f", "-"], api);
    let v1 = k.json(&["get", "horizontalpodautoscalers.v1.autoscaling", "api"]);
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50, "{v1:#}");
    assert_eq!(v1["spec"]["minReplicas"], 1, "{v1:#}");
    let others: Value = serde_json::from_str(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        others,
        json!([{ "type": "Pods", "pods": { "metricName": "rps", "targetAverageValue": "10" } }])
    );
    let mut edited = v1.clone();
    edited["spec"]["maxReplicas"] = json!(6);
    k.ok(&["replace", "-f", "-"], &edited.to_string());
    let v2 = k.json(&["get", "hpa", "api"]);
    assert_eq!(v2["spec"]["maxReplicas"], 6, "{v2:#}");
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 2, "{v2:#}");
    assert_eq!(
        v2["spec"]["metrics"][1]["pods"]["target"]["averageValue"], "10",
        "{v2:#}"
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2:#}");
    let table = k.ok(&["get", "hpa"], "");
    assert!(table.contains("api") && table.contains("web"), "{table}");
    c.shutdown().await;
}

/// Reads protobuf fields (field number, bytes of a length-delimited field); varints are skipped.
fn pb_fields(mut b: &[u8]) -> Vec<(u64, Vec<u8>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => {
                varint(&mut b);
            }
            2 => {
                let len = varint(&mut b) as usize;
                out.push((key >> 3, b[..len].to_vec()));
                b = &b[len..];
            }
            other => panic!("unexpected wire type {other}"),
        }
    }
    out
}

fn pb_field(b: &[u8], n: u64) -> Vec<u8> {
    pb_fields(b)
        .into_iter()
        .find(|(f, _)| *f == n)
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// One decoded frame: (event type, apiVersion, kind, object name).
fn decode_frame(frame: &[u8]) -> (String, String, String, String) {
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let event_type = text(pb_field(frame, 1));
    let raw = pb_field(&pb_field(frame, 2), 1);
    let unknown = raw
        .strip_prefix(b"k8s\0")
        .expect("the embedded object has the protobuf magic");
    let type_meta = pb_field(unknown, 1);
    let object = pb_field(unknown, 2);
    let name = text(pb_field(&pb_field(&object, 1), 1));
    (
        event_type,
        text(pb_field(&type_meta, 1)),
        text(pb_field(&type_meta, 2)),
        name,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_watch_frames() {
    let c = DevCluster::start(Config::memory("pbwatch")).await.unwrap();
    let client = c.client().await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["create", "configmap", "first", "--from-literal=a=1"], "");
    let req = http::Request::builder()
        .uri("/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=false")
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf;stream=watch, application/json",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let mut frames = Vec::new();
    let mut changed = false;
    while frames.len() < 3 {
        // Frames: a 4-byte big-endian length, then a WatchEvent.
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() < 4 + len {
                break;
            }
            frames.push(decode_frame(&buf[4..4 + len]));
            buf.drain(..4 + len);
        }
        if frames.len() == 1 && !changed {
            // The initial state arrived: change the collection.
            k.ok(&["create", "configmap", "second", "--from-literal=b=2"], "");
            k.ok(&["delete", "configmap", "first"], "");
            changed = true;
        }
        if frames.len() >= 3 {
            break;
        }
        let frame = body.frame().await.expect("the watch goes on").unwrap();
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    let expect = |t: &str, n: &str| {
        (
            t.to_string(),
            "v1".to_string(),
            "ConfigMap".to_string(),
            n.to_string(),
        )
    };
    assert_eq!(
        frames,
        vec![
            expect("ADDED", "first"),
            expect("ADDED", "second"),
            expect("DELETED", "first")
        ]
    );

    // A client that asks for JSON first still gets JSON lines.
    let req = http::Request::builder()
        .uri("/api/v1/namespaces/default/configmaps?watch=1")
        .header(
            "accept",
            "application/json, application/vnd.kubernetes.protobuf",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    c.shutdown().await;
}
