//! The simulated data plane and the API server's exact answers, through the real `kubectl`
//! (which sends protobuf for built-in kinds) and raw requests: Nodes, Deployments → ReplicaSets
//! → Pods, rollouts, scale, StatefulSets, DaemonSets, Jobs, logs, DELETE answers, protobuf
//! bodies and their bad input, `/openapi/v2`, the kinds 1.33 serves and those it does not.

use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::Kubectl;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

async fn start(name: &str) -> (RunningCluster, kube::Client, Kubectl) {
    let c = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = c.client().await.unwrap();
    let k = Kubectl::new(&[&c]);
    (c, client, k)
}

/// Sends a raw request; returns (status code, body bytes).
async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    use http_body_util::BodyExt;
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (code, bytes)
}

fn parse(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or(Value::Null)
}

/// Live (not terminating) Pods matching `selector`, from `kubectl get -o json`.
fn pods(k: &Kubectl, selector: &str) -> Vec<Value> {
    k.json(&["get", "pods", "-l", selector])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .cloned()
        .collect()
}

fn field(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_scale_rollout_logs_delete() {
    let (c, _client, k) = start("plane").await;
    let nodes = k.ok(&["get", "nodes"], "");
    assert_eq!(
        nodes.lines().filter(|l| l.contains(" Ready ")).count(),
        3,
        "{nodes}"
    );
    assert!(nodes.contains("v1.33.1"), "{nodes}");

    // kubectl sends the Deployment as protobuf.
    assert_eq!(
        k.ok(&["create", "deployment", "web", "--image=nginx"], "")
            .trim(),
        "deployment.apps/web created"
    );
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    let first = pods(&k, "app=web");
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(field(&first[0], "/status/phase"), "Running");
    assert!(field(&first[0], "/spec/nodeName").starts_with("plane-node-"));
    assert_eq!(
        field(&first[0], "/metadata/ownerReferences/0/kind"),
        "ReplicaSet"
    );

    assert_eq!(
        k.ok(&["scale", "deployment", "web", "--replicas=3"], "")
            .trim(),
        "deployment.apps/web scaled"
    );
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    assert_eq!(pods(&k, "app=web").len(), 3);
    let wide = k.ok(&["get", "pods", "-o", "wide"], "");
    assert!(
        wide.contains("NODE") && wide.contains("Running") && wide.contains("plane-node-"),
        "{wide}"
    );

    // A rollout replaces every Pod with one of the new template.
    k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"], "");
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    let rolled = pods(&k, "app=web");
    assert_eq!(rolled.len(), 3);
    assert!(
        rolled
            .iter()
            .all(|p| field(p, "/spec/containers/0/image") == "nginx:1.27"),
        "{rolled:?}"
    );
    let history = k.ok(&["rollout", "history", "deployment/web"], "");
    assert!(
        history.contains("\n1 ") && history.contains("\n2 "),
        "{history}"
    );
    k.ok(&["rollout", "undo", "deployment/web"], "");
    k.ok(
        &["rollout", "status", "deployment/web", "--timeout=60s"],
        "",
    );
    assert!(
        pods(&k, "app=web")
            .iter()
            .all(|p| field(p, "/spec/containers/0/image") == "nginx")
    );

    assert_eq!(
        k.ok(&["logs", "deployment/web"], ""),
        "logs are simulated: this cluster runs no containers\n"
    );

    // A Pod deleted from under its ReplicaSet is replaced (kubectl waits until it is gone).
    let victim = field(&pods(&k, "app=web")[0], "/metadata/name");
    k.ok(&["delete", "pod", &victim], "");
    let after = pods(&k, "app=web");
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(after.iter().all(|p| field(p, "/metadata/name") != victim));

    k.ok(&["delete", "deployment", "web"], "");
    assert!(pods(&k, "app=web").is_empty());
    assert!(
        k.json(&["get", "rs"])["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    c.shutdown().await;
}

const WORKLOADS: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:17}]}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: agent:1}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: once, image: busybox}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulsets_daemonsets_and_jobs_run_pods() {
    let (c, _client, k) = start("kinds").await;
    k.ok(&["create", "-f", "-"], WORKLOADS);
    k.ok(
        &["rollout", "status", "statefulset/db", "--timeout=60s"],
        "",
    );
    k.ok(
        &["rollout", "status", "daemonset/agent", "--timeout=60s"],
        "",
    );
    k.ok(
        &[
            "wait",
            "--for=condition=complete",
            "job/once",
            "--timeout=60s",
        ],
        "",
    );

    let mut db: Vec<String> = pods(&k, "app=db")
        .iter()
        .map(|p| field(p, "/metadata/name"))
        .collect();
    db.sort();
    assert_eq!(db, ["db-0", "db-1"]);
    let claim = k.json(&["get", "pvc", "data-db-0"]);
    assert_eq!(field(&claim, "/status/phase"), "Bound");

    let agents = pods(&k, "app=agent");
    let mut nodes: Vec<String> = agents.iter().map(|p| field(p, "/spec/nodeName")).collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!((agents.len(), nodes.len()), (3, 3), "{agents:?}");
    let ds = k.json(&["get", "ds", "agent"]);
    assert_eq!(ds["status"]["numberReady"], 3, "{ds}");

    let job_pods = pods(&k, "batch.kubernetes.io/job-name=once");
    assert_eq!(job_pods.len(), 1);
    assert_eq!(field(&job_pods[0], "/status/phase"), "Succeeded");
    let listed = k.ok(&["get", "pods", "-A"], "");
    assert!(
        listed.contains("Completed") && listed.contains("Running"),
        "{listed}"
    );

    k.ok(&["scale", "statefulset", "db", "--replicas=1"], "");
    let db: Vec<String> = pods(&k, "app=db")
        .iter()
        .map(|p| field(p, "/metadata/name"))
        .collect();
    assert_eq!(db, ["db-0"]);
    c.shutdown().await;
}

/// Kubernetes' protobuf envelope around a message: `k8s\0`, then runtime.Unknown.
fn protobuf(api_version: &str, kind: &str, object: &[u8]) -> Vec<u8> {
    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut put = |mut v: u64| loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        };
        put((n << 3) | 2);
        put(bytes.len() as u64);
        out.extend_from_slice(bytes);
        out
    }
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [
        b"k8s\0".as_slice(),
        &field(1, &type_meta),
        &field(2, object),
    ]
    .concat()
}

/// A ConfigMap message: ObjectMeta {1 name} and one data entry.
fn configmap_message(name: &str) -> Vec<u8> {
    let f = |n: u8, b: &[u8]| [vec![(n << 3) | 2, b.len() as u8], b.to_vec()].concat();
    [
        f(1, &f(1, name.as_bytes())),
        f(2, &[f(1, b"k"), f(2, b"v")].concat()),
    ]
    .concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_answers_protobuf_and_served_kinds() {
    let (c, client, _k) = start("answers").await;
    let pb = "application/vnd.kubernetes.protobuf";

    // A protobuf body decodes; a truncated one or one of another kind is a 400 as the API
    // server words it.
    let body = protobuf("v1", "ConfigMap", &configmap_message("pb"));
    let (code, out) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("content-type", pb)],
        body.clone(),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&out));
    assert_eq!(parse(&out)["data"]["k"], "v");
    let (code, out) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("content-type", pb)],
        body[..body.len() - 3].to_vec(),
    )
    .await;
    let status = parse(&out);
    assert_eq!(
        (code, status["reason"].as_str()),
        (400, Some("BadRequest")),
        "{status}"
    );
    assert_eq!(status["message"], "unexpected EOF", "{status}");
    let (code, out) = raw(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &[("content-type", pb)],
        body,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        parse(&out)["message"],
        "ConfigMap in version \"v1\" cannot be handled as a Deployment: converting (v1.ConfigMap) to (apps.Deployment): unknown conversion"
    );

    // A body without kind and apiVersion takes them from the URL.
    let (code, out) = raw(
        &client,
        "POST",
        "/api/v1/namespaces",
        &[("content-type", "application/json")],
        br#"{"metadata":{"name":"bare"}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&out));
    assert_eq!(parse(&out)["kind"], "Namespace");

    // DELETE: a Status for kinds deleted at once, the object where it stays or where the
    // registry returns it, protobuf DeleteOptions as client-go's typed clients send them.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let s = cms
        .delete("pb", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .expect("a deleted ConfigMap is answered with a Status");
    assert!(s.is_success(), "{s:?}");
    let d = s.details.unwrap();
    assert_eq!((d.name.as_str(), d.kind.as_str()), ("pb", "configmaps"));
    assert!(!d.uid.is_empty());
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &held).await.unwrap();
    let cm = cms
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("an object held by a finalizer is answered with itself");
    assert!(cm.metadata.deletion_timestamp.is_some());
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    svcs.create(&PostParams::default(), &svc).await.unwrap();
    assert!(
        svcs.delete("s", &DeleteParams::default())
            .await
            .unwrap()
            .is_left()
    );
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "d"}}, "template": {"metadata": {"labels": {"a": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let opts = {
        // DeleteOptions { 4 propagationPolicy: "Foreground" }.
        let policy = b"Foreground";
        [vec![(4 << 3) | 2, policy.len() as u8], policy.to_vec()].concat()
    };
    let (code, out) = raw(
        &client,
        "DELETE",
        "/apis/apps/v1/namespaces/default/deployments/d",
        &[("content-type", pb)],
        protobuf("v1", "DeleteOptions", &opts),
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&out));

    // Scale: GET and PUT of autoscaling/v1 Scale; 404 for a kind without it.
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let path = "/apis/apps/v1/namespaces/default/deployments/d/scale";
    let (code, out) = raw(&client, "GET", path, &[], vec![]).await;
    let scale = parse(&out);
    assert_eq!(code, 200);
    assert_eq!(
        (scale["kind"].as_str(), scale["apiVersion"].as_str()),
        (Some("Scale"), Some("autoscaling/v1"))
    );
    assert_eq!(
        (
            scale["spec"]["replicas"].as_i64(),
            scale["status"]["selector"].as_str()
        ),
        (Some(1), Some("a=d"))
    );
    let put = json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 4}});
    let (code, out) = raw(
        &client,
        "PUT",
        path,
        &[("content-type", "application/json")],
        put.to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        (code, parse(&out)["spec"]["replicas"].as_i64()),
        (200, Some(4))
    );
    let live = serde_json::to_value(deploys.get("d").await.unwrap()).unwrap();
    assert_eq!(live["spec"]["replicas"], 4);
    let (code, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/held/scale",
        &[],
        vec![],
    )
    .await;
    assert_eq!(code, 404);

    // Every built-in kind 1.33 serves; none of a later version.
    for path in [
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        "/api/v1/nodes",
        "/api/v1/replicationcontrollers",
        "/apis/discovery.k8s.io/v1/endpointslices",
        "/apis/networking.k8s.io/v1/servicecidrs",
        "/apis/storage.k8s.io/v1/csidrivers",
    ] {
        assert_eq!(
            raw(&client, "GET", path, &[], vec![]).await.0,
            200,
            "{path}"
        );
    }
    for path in [
        "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies",
        "/apis/resource.k8s.io/v1/deviceclasses",
        "/apis/storage.k8s.io/v1/volumeattributesclasses",
    ] {
        assert_eq!(
            raw(&client, "GET", path, &[], vec![]).await.0,
            404,
            "{path}"
        );
    }

    // /openapi/v2: JSON, or gnostic's protobuf Document (field 1 swagger = "2.0").
    let (code, out) = raw(
        &client,
        "GET",
        "/openapi/v2",
        &[("accept", "application/json")],
        vec![],
    )
    .await;
    assert_eq!((code, parse(&out)["swagger"].as_str()), (200, Some("2.0")));
    let (code, out) = raw(
        &client,
        "GET",
        "/openapi/v2",
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(&out[..5], b"\x0a\x032.0");
    c.shutdown().await;
}
