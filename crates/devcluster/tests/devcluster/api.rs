//! The API server driven by kube-rs: CRUD, errors, selectors, paging, watches, CRDs, restart.

use std::time::Duration;

use crate::api_err;
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use serde_json::{Value, json};

async fn cluster() -> (RunningCluster, kube::Client) {
    let c = DevCluster::start(Config::memory("test")).await.unwrap();
    let client = c.client().await.unwrap();
    (c, client)
}

fn cm(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": name, "labels": labels },
        "data": { "k": "v" },
    }))
    .unwrap()
}

/// Sends a raw request and returns (status code, parsed body).
async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    ct: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ct)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = http_body_util_collect(resp.into_body()).await;
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// POSTs `body` as JSON to `path`: the status code and the answer.
async fn post_json(client: &kube::Client, path: &str, body: &Value) -> (u16, Value) {
    let bytes = serde_json::to_vec(body).unwrap();
    raw(client, "POST", path, "application/json", bytes).await
}

/// GETs `path`: the status code and the answer.
async fn get(client: &kube::Client, path: &str) -> (u16, Value) {
    raw(client, "GET", path, "application/json", Vec::new()).await
}

async fn http_body_util_collect(body: kube::client::Body) -> Vec<u8> {
    use http_body_util::BodyExt;
    body.collect().await.unwrap().to_bytes().to_vec()
}

#[tokio::test]
async fn starts_fast_on_a_free_port() {
    let t = std::time::Instant::now();
    let a = DevCluster::start(Config::memory("a")).await.unwrap();
    let b = DevCluster::start(Config::memory("b")).await.unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "two clusters took {:?}",
        t.elapsed()
    );
    assert_ne!(a.addr(), b.addr());
    assert!(a.url().starts_with("https://127.0.0.1:"));
    assert!(a.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn crud_and_server_fields() {
    let (c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &cm("one", json!({"app": "web"})))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

    // AlreadyExists.
    let e = api_err(
        api.create(&PostParams::default(), &cm("one", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(e.message, "configmaps \"one\" already exists");

    // Update bumps the resourceVersion; a stale one conflicts.
    let mut next = created.clone();
    next.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api
        .replace("one", &PostParams::default(), &next)
        .await
        .unwrap();
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    let e = api_err(
        api.replace("one", &PostParams::default(), &next)
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(
        e.message.contains("the object has been modified"),
        "{}",
        e.message
    );

    // generateName.
    let mut g = cm("", json!({}));
    g.metadata.name = None;
    g.metadata.generate_name = Some("gen-".into());
    let gen_obj = api.create(&PostParams::default(), &g).await.unwrap();
    let n = gen_obj.metadata.name.unwrap();
    assert!(n.starts_with("gen-") && n.len() == 9, "{n}");

    // Patches: merge and JSON patch.
    let p = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(p.data.as_ref().unwrap()["m"], "1");
    let p = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([{"op": "remove", "path": "/data/m"}])).unwrap(),
            ),
        )
        .await
        .unwrap();
    assert!(!p.data.as_ref().unwrap().contains_key("m"));

    // Delete, then NotFound.
    api.delete("one", &DeleteParams::default()).await.unwrap();
    let e = api_err(api.get("one").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(e.message, "configmaps \"one\" not found");
    c.shutdown().await;
}

#[tokio::test]
async fn generation_and_status_subresource() {
    let (c, client) = cluster().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "web" },
        "spec": { "replicas": 1, "selector": { "matchLabels": { "app": "web" } },
                  "template": { "metadata": { "labels": { "app": "web" } },
                                "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } },
    }))
    .unwrap();
    let d = api.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    // A label change is metadata: no new generation.
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2));
    // Status goes through the subresource only.
    let d = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 2, "replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(d.status.as_ref().unwrap().replicas, Some(7));
    assert_eq!(d.metadata.generation, Some(2));
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(
        d.status.as_ref().unwrap().replicas,
        Some(7),
        "main resource must not change status"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn selectors_and_paging() {
    let (c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (i, tier) in ["front", "back", "front", "db", "back"].iter().enumerate() {
        api.create(
            &PostParams::default(),
            &cm(
                &format!("cm-{i}"),
                json!({"tier": tier, "n": i.to_string()}),
            ),
        )
        .await
        .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .collect()
    };
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier=front"))
                .await
                .unwrap()
        ),
        ["cm-0", "cm-2"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier in (back,db)"))
                .await
                .unwrap()
        ),
        ["cm-1", "cm-3", "cm-4"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier notin (front),n!=4"))
                .await
                .unwrap()
        ),
        ["cm-1", "cm-3"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=cm-3"))
                .await
                .unwrap()
        ),
        ["cm-3"]
    );
    let all: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(
        all.list(&ListParams::default().fields("metadata.namespace!=default"))
            .await
            .unwrap()
            .items
            .len(),
        0
    );

    // limit/continue walks every object exactly once.
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = api.list(&lp).await.unwrap();
        let cont = page.metadata.continue_.clone();
        seen.extend(names(page));
        match cont {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(seen, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);

    // Every page reports the first page's resourceVersion, so a watch from the list sees what
    // changed on an earlier page while later pages were read.
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let first_rv = first.metadata.resource_version.clone().unwrap();
    api.patch(
        "cm-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"changed": "between pages"}})),
    )
    .await
    .unwrap();
    let cont = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(2).continue_token(&cont))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version.as_deref(),
        Some(first_rv.as_str())
    );
    let mut events = Box::pin(api.watch(&WatchParams::default(), &first_rv).await.unwrap());
    loop {
        match events.next().await {
            Some(Ok(WatchEvent::Modified(cm))) if cm.metadata.name.as_deref() == Some("cm-0") => {
                break;
            }
            Some(Ok(_)) => {}
            other => panic!("no modification of cm-0 replayed: {other:?}"),
        }
    }

    // A selector that does not parse is a 400 naming the problem.
    let e = api_err(
        api.list(&ListParams::default().fields("spec.foo=bar"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    assert!(
        e.message.contains("field label not supported: spec.foo"),
        "{}",
        e.message
    );
    c.shutdown().await;
}

#[tokio::test]
async fn watcher_sees_add_modify_delete() {
    let (c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let stream = kube::runtime::watcher(
        api.clone(),
        kube::runtime::watcher::Config::default().labels("w=1"),
    );
    let mut stream = Box::pin(stream);
    // The initial list completes (no objects yet).
    loop {
        if let kube::runtime::watcher::Event::InitDone = stream.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    api.create(&PostParams::default(), &cm("w", json!({"w": "1"})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("other", json!({"w": "2"})))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            kube::runtime::watcher::Event::Apply(o) => seen.push(format!(
                "apply {} {}",
                o.metadata.name.unwrap(),
                o.data.unwrap()["k"]
            )),
            kube::runtime::watcher::Event::Delete(o) => {
                seen.push(format!("delete {}", o.metadata.name.unwrap()))
            }
            _ => {}
        }
    }
    assert_eq!(seen, ["apply w v", "apply w changed", "delete w"]);
    c.shutdown().await;
}

#[tokio::test]
async fn watch_resumes_from_a_version_and_sends_bookmarks() {
    let (c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let first = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let mut s = Box::pin(api.watch(&WatchParams::default(), &rv).await.unwrap());
    match s.try_next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
        other => panic!("expected b added, got {other:?}"),
    }
    match s.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => assert!(!b.metadata.resource_version.is_empty()),
        other => panic!("expected a bookmark, got {other:?}"),
    }
    c.shutdown().await;
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let (c, client) = cluster().await;
    let base = "/api/v1/namespaces/default/configmaps";
    // Malformed JSON.
    let (code, s) = raw(
        &client,
        "POST",
        base,
        "application/json",
        b"{\"kind\": ".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(s["reason"], "BadRequest");
    assert!(
        s["message"].as_str().unwrap().contains("json parse error"),
        "{s}"
    );
    // Malformed YAML.
    let (code, s) = raw(
        &client,
        "POST",
        base,
        "application/yaml",
        b"kind: [unclosed".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        s["message"].as_str().unwrap().contains("yaml parse error"),
        "{s}"
    );
    // Kind or apiVersion not matching the URL.
    let body = json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let (code, s) = post_json(&client, base, &body).await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    );
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    let (code, s) = post_json(&client, base, &body).await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "the kind in the data (Secret) does not match the expected kind (ConfigMap)"
    );
    // Invalid name: 422 naming the field.
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}});
    let (code, s) = post_json(&client, base, &body).await;
    assert_eq!(code, 422);
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    assert!(s["message"].as_str().unwrap().starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{s}");
    // Body over 3 MiB.
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"x": "a".repeat(3 * 1024 * 1024 + 10)}});
    let (code, s) = post_json(&client, base, &big).await;
    assert_eq!(code, 413);
    assert_eq!(s["reason"], "RequestEntityTooLarge");
    assert_eq!(s["message"], "Request entity too large: limit is 3145728");
    // Unknown resource.
    let (code, s) = get(&client, "/api/v1/namespaces/default/widgets").await;
    assert_eq!(code, 404);
    assert_eq!(s["reason"], "NotFound");
    let (code, _) = get(&client, "/apis/nope.example.com/v1/things").await;
    assert_eq!(code, 404);
    // Wrong verb.
    let (code, s) = raw(&client, "PUT", base, "application/json", b"{}".to_vec()).await;
    assert_eq!(code, 405);
    assert_eq!(s["reason"], "MethodNotAllowed");
    // A namespace that does not exist.
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let (code, s) = post_json(&client, "/api/v1/namespaces/nowhere/configmaps", &body).await;
    assert_eq!(code, 404);
    assert_eq!(s["message"], "namespaces \"nowhere\" not found");
    // Nothing was stored by any of the above.
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    c.shutdown().await;
}

#[tokio::test]
async fn tokens_are_per_cluster() {
    let a = DevCluster::start(Config::memory("a")).await.unwrap();
    let b = DevCluster::start(Config::memory("b")).await.unwrap();
    // b's client pointed at a (a's CA, b's token) is refused.
    let kc = a.kubeconfig().replace(a.token(), b.token());
    let cfg = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&kc).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let wrong = kube::Client::try_from(cfg).unwrap();
    let e = api_err(
        Api::<Namespace>::all(wrong)
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (401, "Unauthorized"));
    // Objects are per cluster.
    let ca = a.client().await.unwrap();
    let cb = b.client().await.unwrap();
    Api::<ConfigMap>::namespaced(ca.clone(), "default")
        .create(&PostParams::default(), &cm("only-a", json!({})))
        .await
        .unwrap();
    assert!(
        Api::<ConfigMap>::namespaced(cb, "default")
            .get_opt("only-a")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<ConfigMap>::namespaced(ca, "default")
            .get_opt("only-a")
            .await
            .unwrap()
            .is_some()
    );
    a.shutdown().await;
    b.shutdown().await;
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.example.com" },
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"] },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
                "subresources": { "status": {} },
                "additionalPrinterColumns": [{ "name": "Size", "type": "integer", "jsonPath": ".spec.size" }],
            }],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn custom_resources_through_dynamic_objects() {
    let (c, client) = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let established = crd
        .status
        .unwrap()
        .conditions
        .unwrap()
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    assert!(established);

    // Discovery knows the kind at once.
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "Widget")
        .expect("Widget in discovery");
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);

    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let mut w = DynamicObject::new("w1", &ar);
    w.data = json!({ "spec": { "size": 3 }, "status": { "ignored": true } });
    let w = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(w.data["spec"]["size"], 3);
    assert!(
        w.data.get("status").is_none(),
        "status is dropped on create with a status subresource"
    );
    let w = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(w.data["status"]["ready"], true);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    // Deleting the CRD deletes its objects and its API.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let gone = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar);
    let e = api_err(gone.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 404);
    // Re-creating it shows an empty collection: the old objects are gone.
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    c.shutdown().await;
}

#[tokio::test]
async fn invalid_crd_is_rejected() {
    let (c, client) = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let mut bad = widget_crd();
    bad.metadata.name = Some("gadgets.example.com".into());
    let e = api_err(crds.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(e.code, 422);
    assert!(e.message.contains("metadata.name"), "{}", e.message);
    c.shutdown().await;
}

/// A file-backed cluster comes back at its address with its token and CA, so a kubeconfig
/// written before the restart still works; a damaged identity file is named, not replaced.
#[tokio::test]
async fn a_restarted_cluster_keeps_its_address_token_and_ca() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let c = DevCluster::start(Config::file("p", &db)).await.unwrap();
    let before = (c.addr(), c.token().to_string(), c.ca_pem().to_string());
    let kubeconfig = dir.path().join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&c], None).unwrap();
    c.shutdown().await;

    let c = DevCluster::start(Config::file("p", &db)).await.unwrap();
    assert_eq!(
        (c.addr(), c.token().to_string(), c.ca_pem().to_string()),
        before
    );
    let old = ferroflux_devcluster::client_from_kubeconfig(&kubeconfig, "p")
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(old, "default");
    api.create(
        &PostParams::default(),
        &cm("through-old-kubeconfig", json!({})),
    )
    .await
    .unwrap();
    c.shutdown().await;

    let identity = dir.path().join("c.identity.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&identity).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "the token and key are readable by others");
    std::fs::write(&identity, "{ not json").unwrap();
    let err = DevCluster::start(Config::file("p", &db))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("c.identity.json") && err.contains("delete the file"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&identity).unwrap(), "{ not json");
}

#[tokio::test]
async fn objects_survive_a_restart_and_versions_keep_growing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let c = DevCluster::start(Config::file("p", &db)).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), "default");
    let mut last = 0u64;
    for i in 0..20 {
        let o = api
            .create(&PostParams::default(), &cm(&format!("p{i}"), json!({})))
            .await
            .unwrap();
        last = o.metadata.resource_version.unwrap().parse().unwrap();
    }
    api.delete("p3", &DeleteParams::default()).await.unwrap();
    c.shutdown().await;

    let c = DevCluster::start(Config::file("p", &db)).await.unwrap();
    let client = c.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let items = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(items.items.len(), 19);
    assert!(api.get_opt("p3").await.unwrap().is_none());
    let o = api
        .create(&PostParams::default(), &cm("after", json!({})))
        .await
        .unwrap();
    let rv: u64 = o.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv > last + 1, "resourceVersion went back: {rv} <= {last}");
    // Watching from before the restart is too old: 410 Gone.
    let mut s = Box::pin(api.watch(&WatchParams::default(), "1").await.unwrap());
    match s.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    c.shutdown().await;
}

/// The version parameters of a list, as the API server reads them: `Exact` reads the past
/// (stamped with that version) while the history keeps it, a continued list reads the state
/// its first page read, and once the history is compacted (etcd's compaction, a restart's
/// empty watch cache) the past is `410 Gone` ("Expired") for lists, continue tokens and
/// watches alike; a version not reached yet is a 504 that asks to retry; bad combinations
/// are the API server's 422 and 400.
#[tokio::test]
async fn compacted_versions_are_gone_and_exact_lists_read_the_past() {
    use kube::api::VersionMatch;
    let (c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let names = |l: &kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect()
    };
    let a = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let at_a = a.metadata.resource_version.unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();

    let exact = ListParams::default()
        .at(&at_a)
        .matching(VersionMatch::Exact);
    let past = api.list(&exact).await.unwrap();
    assert_eq!(names(&past), ["a"]);
    assert_eq!(past.items[0].data.as_ref().unwrap()["k"], "v");
    assert_eq!(
        past.metadata.resource_version.as_deref(),
        Some(at_a.as_str())
    );
    let newest = api
        .list(
            &ListParams::default()
                .at(&at_a)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(names(&newest), ["a", "b"]);
    assert_eq!(newest.items[0].data.as_ref().unwrap()["k"], "changed");

    // A paged list is one snapshot: b, deleted after the first page, is still on the second,
    // and both pages carry the first page's version.
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(names(&first), ["a"]);
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["b"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );

    c.compact_history();
    let e = api_err(api.list(&exact).await.unwrap_err());
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (
            410,
            "Expired",
            "The resourceVersion for the provided list is too old."
        )
    );
    // The legacy reading of a version on a paged list is "exact" too.
    let e = api_err(
        api.list(&ListParams::default().at(&at_a).limit(5))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 410);
    // Without a limit it is "not older than": the newest state.
    assert_eq!(
        names(&api.list(&ListParams::default().at(&at_a)).await.unwrap()),
        ["a"]
    );
    // The continue token of a compacted list: 410, with a token that goes on from the newest
    // state (inconsistently, as the message says).
    let e = api_err(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    assert!(
        e.message.starts_with(
            "The provided continue parameter is too old to display a consistent list result."
        ),
        "{}",
        e.message
    );
    let onwards = e.metadata.unwrap().continue_.unwrap();
    let rest = api
        .list(&ListParams::default().limit(1).continue_token(&onwards))
        .await
        .unwrap();
    assert!(rest.items.is_empty(), "b is gone now: {:?}", names(&rest));
    // A watch from the compacted past: the stream opens and says 410 as its only event.
    let mut s = Box::pin(api.watch(&WatchParams::default(), &at_a).await.unwrap());
    match s.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(
                e.message.starts_with("too old resource version: "),
                "{}",
                e.message
            );
        }
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    assert!(s.next().await.is_none(), "the watch ends after its 410");

    // Raw answers, through a client that retries nothing, to see them as they are.
    let plain = kube::Client::try_from(c.kube_config().await.unwrap()).unwrap();
    let base = "/api/v1/namespaces/default/configmaps";
    let current: u64 = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    let ahead = current + 100;
    let req = http::Request::builder()
        .uri(format!(
            "{base}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan"
        ))
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = plain.send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 504);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value =
        serde_json::from_slice(&http_body_util_collect(resp.into_body()).await).unwrap();
    assert_eq!(body["reason"], "Timeout");
    assert_eq!(
        body["message"],
        format!("Too large resource version: {ahead}, current: {current}")
    );
    assert_eq!(body["details"]["retryAfterSeconds"], 1);
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    // A watch from there opens and says the same as its only event.
    let mut s = Box::pin(
        api.watch(&WatchParams::default(), &ahead.to_string())
            .await
            .unwrap(),
    );
    match s.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
            assert_eq!(
                e.message,
                format!("Too large resource version: {ahead}, current: {current}")
            );
        }
        other => panic!("expected 504, got {other:?}"),
    }
    for (query, code, message) in [
        (
            "resourceVersionMatch=Exact",
            422,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            422,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Latest",
            422,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"Latest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
        (
            "resourceVersion=abc",
            400,
            "resourceVersion: Invalid value: \"abc\": must be an integer",
        ),
    ] {
        let (got, body) = raw(&plain, "GET", &format!("{base}?{query}"), "", Vec::new()).await;
        assert_eq!(
            (got, body["message"].as_str().unwrap()),
            (code, message),
            "{query}"
        );
    }
    let (got, body) = raw(
        &plain,
        "GET",
        &format!("{base}?limit=1&continue={onwards}&resourceVersion=5"),
        "",
        Vec::new(),
    )
    .await;
    assert_eq!(
        (got, body["message"].as_str().unwrap()),
        (
            400,
            "specifying resource version is not allowed when using continue"
        )
    );
    c.shutdown().await;
}
