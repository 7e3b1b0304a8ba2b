//! Fuzz target: the devcluster's request parsing (generator: `ferroflux-fuzzkit`). Random and
//! mutated requests — paths, query parameters (selectors, resource versions, limits, continue
//! tokens, dry-run, watch), content types and bodies (JSON, YAML, the four patch types,
//! protobuf) — are sent over HTTPS to a running cluster. Bad input must be refused the way the
//! API server refuses it: a 4xx answer carrying a `Status` with the same code, never a 5xx,
//! never a dropped connection; and the cluster keeps serving.
//!
//! `FUZZ_CASES=100000 cargo test -p ferroflux-devcluster --test devcluster fuzz` runs longer.

use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_fuzzkit::Rng;
use http_body_util::BodyExt;
use serde_json::{Value, json};

const PATHS: &[&str] = &[
    "/api",
    "/api/v1",
    "/apis",
    "/apis/apps/v1",
    "/api/v1/namespaces",
    "/api/v1/namespaces/default",
    "/api/v1/namespaces/default/status",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/x",
    "/api/v1/configmaps",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/apps/v1/namespaces/default/deployments/d/scale",
    "/apis/apps/v1/namespaces/default/deployments/d/status",
    "/api/v1/namespaces/default/secrets/s",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles/r",
    "/api/v1/namespaces/default/events",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
];

const QUERY_KEYS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "watch",
    "timeoutSeconds",
    "dryRun",
    "fieldManager",
    "force",
    "propagationPolicy",
    "sendInitialEvents",
    "allowWatchBookmarks",
    "gracePeriodSeconds",
    "orphanDependents",
];

const QUERY_VALUES: &[&str] = &[
    "app=x",
    "app in (a,b)",
    "!app",
    "a!=b",
    "a,b",
    "metadata.name=x",
    "metadata.namespace!=y",
    "status.phase=Running",
    "0",
    "1",
    "-1",
    "18446744073709551616",
    "All",
    "true",
    "false",
    "NotOlderThan",
    "Exact",
    "Foreground",
    "Orphan",
    "",
    "(",
    ")",
    "=",
    "==",
    "x y",
    "é",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
];

const DICTIONARY: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "null",
    "true",
    "0",
    "-1",
    "1e999",
    "\"metadata\"",
    "\"name\"",
    "\"apiVersion\"",
    "\"kind\"",
    "\"op\"",
    "\"path\"",
    "\"/data/a\"",
    "\"$patch\"",
    "\"delete\"",
    "\"$setElementOrder/containers\"",
    "\"managedFields\"",
    "\"resourceVersion\"",
    "\n",
    "- ",
    ": ",
    "&a",
    "*a",
    "!!binary",
];

fn protobuf_field(field: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let varint = |mut v: u64, out: &mut Vec<u8>| loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    };
    varint(field << 3 | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

/// A ConfigMap in the protobuf envelope kubectl sends (`runtime.Unknown` after `k8s\0`).
fn protobuf_configmap() -> Vec<u8> {
    let type_meta = [protobuf_field(1, b"v1"), protobuf_field(2, b"ConfigMap")].concat();
    let meta = protobuf_field(1, b"x");
    let entry = [protobuf_field(1, b"a"), protobuf_field(2, b"1")].concat();
    let object = [protobuf_field(1, &meta), protobuf_field(2, &entry)].concat();
    let unknown = [protobuf_field(1, &type_meta), protobuf_field(2, &object)].concat();
    [b"k8s\0".as_slice(), &unknown].concat()
}

fn bodies() -> Vec<Vec<u8>> {
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default", "labels": {"app": "x"}},
        "data": {"a": "1"}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    vec![
        configmap.to_string().into_bytes(),
        deployment.to_string().into_bytes(),
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"1\"\n".to_vec(),
        json!([{"op": "add", "path": "/data/b", "value": "2"}, {"op": "test", "path": "/data/a", "value": "1"}])
            .to_string()
            .into_bytes(),
        json!({"metadata": {"labels": {"b": null}}, "spec": {"template": {"spec":
            {"containers": [{"name": "c", "$patch": "delete"}]}}}})
            .to_string()
            .into_bytes(),
        json!({"spec": {"replicas": 3}}).to_string().into_bytes(),
        protobuf_configmap(),
    ]
}

/// Percent-encodes what may not appear raw in a URI (the server decodes it back).
fn escape(s: &[u8], keep: &[u8]) -> String {
    s.iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

struct Case {
    method: &'static str,
    uri: String,
    content_type: &'static str,
    body: Vec<u8>,
}

fn case(rng: &mut Rng, bodies: &[Vec<u8>]) -> Case {
    let method = rng.pick(&[
        "GET", "GET", "POST", "PUT", "PATCH", "PATCH", "DELETE", "HEAD",
    ]);
    let path = rng.pick(PATHS).as_bytes();
    let path = if rng.one_in(3) {
        rng.mutate(
            path,
            &[
                "/",
                "namespaces",
                "..",
                "%2F",
                "status",
                "scale",
                "v1",
                "apps",
            ],
        )
    } else {
        path.to_vec()
    };
    let mut query = Vec::new();
    for _ in 0..rng.below(4) {
        let key = rng.pick(QUERY_KEYS);
        let value = rng.pick(QUERY_VALUES).as_bytes();
        let value = if rng.one_in(2) {
            rng.mutate(value, QUERY_VALUES)
        } else {
            value.to_vec()
        };
        query.push(format!("{key}={}", escape(&value, &[])));
    }
    // A watch answers with a stream: one with a short server-side timeout keeps the case short.
    if query.iter().any(|q| q.starts_with("watch=")) {
        query.push("timeoutSeconds=1".into());
    }
    let mut uri = escape(&path, b"/");
    if !uri.starts_with('/') {
        uri.insert(0, '/');
    }
    if !query.is_empty() {
        uri = format!("{uri}?{}", query.join("&"));
    }
    let body = &bodies[rng.below(bodies.len())];
    let body = if rng.one_in(4) {
        body.to_vec()
    } else {
        rng.mutate(body, DICTIONARY)
    };
    Case {
        method,
        uri,
        content_type: rng.pick(CONTENT_TYPES),
        body,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_requests_are_refused_with_a_status_never_a_server_error() {
    let cluster = DevCluster::start(Config::memory("fuzz")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let bodies = bodies();
    let base: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let cases = if std::env::var("FUZZ_SEED").is_ok() {
        1
    } else {
        ferroflux_fuzzkit::cases(300)
    };
    let (mut served, mut refused) = (0u64, 0u64);
    for n in 0..cases {
        let seed = base.wrapping_add(n);
        let c = case(&mut Rng::new(seed), &bodies);
        let what = format!(
            "case {n} (replay: FUZZ_SEED={seed}): {} {} ({}) {}",
            c.method,
            c.uri,
            c.content_type,
            String::from_utf8_lossy(&c.body)
        );
        let request = http::Request::builder()
            .method(c.method)
            .uri(&c.uri)
            .header("content-type", c.content_type)
            .body(kube::client::Body::from(c.body))
            .unwrap_or_else(|e| panic!("{what}: the generator made a bad request: {e}"));
        let response = client
            .send(request)
            .await
            .unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
        let code = response.status().as_u16();
        assert!(code < 500, "{what}: answered {code}");
        if code < 400 {
            served += 1;
        } else {
            refused += 1;
        }
        if code >= 400 && c.method != "HEAD" {
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let status: Value = serde_json::from_slice(&body)
                .unwrap_or_else(|e| panic!("{what}: {code} without a Status ({e}): {body:?}"));
            assert_eq!(status["kind"], "Status", "{what}: {status}");
            assert_eq!(status["code"], code, "{what}: {status}");
            assert!(
                status["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{what}: {status}"
            );
        }
    }
    // The generator reaches both sides: requests served and requests refused.
    if cases >= 100 {
        assert!(
            served > cases / 20 && refused > cases / 20,
            "{served} served, {refused} refused"
        );
    }
    // Still serving.
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    namespaces.list(&Default::default()).await.unwrap();
    cluster.shutdown().await;
}
