//! Behaviour a user of a real API server relies on, checked through the real `kubectl` and
//! kube-rs: Secret `stringData`, typed ConfigMap values, status-subresource ownership and the
//! two Event APIs over one store.

use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_testkit::Kubectl;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference, Secret};
use k8s_openapi::api::events::v1::Event as NewEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

async fn start(name: &str) -> (RunningCluster, kube::Client, Kubectl) {
    let c = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = c.client().await.unwrap();
    let k = Kubectl::new(&[&c]);
    (c, client, k)
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_string_data_is_folded_into_data() {
    let (c, client, k) = start("secrets").await;
    let manifest = "apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: default
data:
  user: YWRtaW4=
  password: b2xk
stringData:
  password: s3cret
  token: abc
";
    k.ok(&["apply", "-f", "-"], manifest);
    let s = k.json(&["get", "secret", "creds"]);
    assert!(
        s.get("stringData").is_none(),
        "stringData is never stored: {s}"
    );
    assert_eq!(
        s["data"],
        json!({ "user": b64("admin"), "password": b64("s3cret"), "token": b64("abc") }),
        "stringData wins over data"
    );
    assert_eq!(s["type"], "Opaque");
    assert_eq!(
        k.ok(
            &["get", "secret", "creds", "-o", "jsonpath={.data.token}"],
            ""
        ),
        b64("abc")
    );

    // Server-side apply and a merge patch fold it too.
    k.ok(
        &["apply", "--server-side", "--field-manager=ops", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\n  namespace: default\nstringData:\n  url: https://example.com\n");
    let applied = k.json(&["get", "secret", "applied"]);
    assert_eq!(
        applied["data"],
        json!({ "url": b64("https://example.com") })
    );
    assert!(applied.get("stringData").is_none(), "{applied}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let patched = secrets
        .patch(
            "creds",
            &PatchParams::default(),
            &Patch::Merge(json!({ "stringData": { "token": "rotated" } })),
        )
        .await
        .unwrap();
    let data = patched.data.unwrap();
    assert_eq!(data["token"].0, b"rotated");
    assert_eq!(data["user"].0, b"admin");
    assert!(patched.string_data.is_none());
    // Line breaks in base64 are accepted, as Go's decoder skips them, and stored canonical.
    let raw = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: wrapped\n  namespace: default\ndata:\n  k: \"YWJj\\nZGVm\"\n";
    k.ok(&["create", "-f", "-"], raw);
    assert_eq!(
        k.ok(
            &["get", "secret", "wrapped", "-o", "jsonpath={.data.k}"],
            ""
        ),
        b64("abcdef")
    );

    // Bad input: not base64, a number, a bad key. Nothing is stored.
    let bad = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\n  namespace: default\ndata:\n  password: not base64!\n";
    let err = k.fails(&["create", "-f", "-"], bad);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
            ),
        "{err}"
    );
    let err = k.fails(&["get", "secret", "bad"], "");
    assert!(err.contains("NotFound"), "{err}");
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\n  namespace: default\nstringData:\n  port: 8080\n");
    assert!(
        err.contains(
            "json: cannot unmarshal number into Go struct field Secret.stringData of type string"
        ),
        "{err}"
    );
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\n  namespace: default\nstringData:\n  bad key: x\n");
    assert!(
        err.contains("The Secret \"bad\" is invalid: data[bad key]: Invalid value: \"bad key\": a valid config key"),
        "{err}"
    );
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  name: bad\n  namespace: default\nstringData:\n  tls.crt: x\n");
    assert!(err.contains("data[tls.key]: Required value"), "{err}");
    // A merge patch with bad base64 is refused and leaves the object as it was.
    let e = secrets
        .patch(
            "creds",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "user": "%%%" } })),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = e else {
        panic!("{e:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        secrets.get("creds").await.unwrap().data.unwrap()["user"].0,
        b"admin"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_values_must_be_strings() {
    let (c, client, k) = start("configmaps").await;
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  port: 8080\n");
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
        "{err}"
    );
    let err = k.fails(
        &["apply", "--server-side", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  debug: true\n");
    assert!(
        err.contains("cannot unmarshal bool into Go struct field ConfigMap.data of type string"),
        "{err}"
    );
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  nested:\n    a: b\n");
    assert!(
        err.contains("cannot unmarshal object into Go struct field ConfigMap.data of type string"),
        "{err}"
    );
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\nbinaryData:\n  blob: \"***\"\n");
    assert!(
        err.contains("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: illegal base64 data at input byte 0"),
        "{err}"
    );
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  same: a\n  \"a/b\": c\nbinaryData:\n  same: YQ==\n");
    assert!(
        err.contains("The ConfigMap \"app\" is invalid")
            && err.contains(
                "* data[same]: Invalid value: \"same\": duplicate of key present in binaryData"
            )
            && err.contains("data[a/b]: Invalid value: \"a/b\""),
        "{err}"
    );
    assert!(k.fails(&["get", "cm", "app"], "").contains("NotFound"));

    // Good values are kept; binaryData is stored canonical.
    k.ok(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  port: \"8080\"\nbinaryData:\n  blob: \"YW\\nJj\"\n");
    let cm = k.json(&["get", "cm", "app"]);
    assert_eq!(cm["data"], json!({ "port": "8080" }));
    assert_eq!(cm["binaryData"], json!({ "blob": "YWJj" }));
    // An update through kube-rs with a number is refused the same way.
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let e = cms
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "port": 9090 } })),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = e else {
        panic!("{e:?}")
    };
    assert_eq!(status.code, 400);
    assert!(status.message.contains("ConfigMap.data of type string"));
    assert_eq!(cms.get("app").await.unwrap().data.unwrap()["port"], "8080");
    c.shutdown().await;
}

fn managed<'a>(obj: &'a Value, manager: &str, subresource: Option<&str>) -> Option<&'a Value> {
    obj.pointer("/metadata/managedFields")?
        .as_array()?
        .iter()
        .find(|e| {
            e["manager"] == manager && e.get("subresource").and_then(Value::as_str) == subresource
        })
}

fn crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "gadgets.example.com" },
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
                "subresources": { "status": {} },
            }],
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subresource_records_its_own_ownership() {
    let (c, client, k) = start("status").await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd()).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let g: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": { "name": "g" },
        "spec": { "size": 1 },
        "status": { "phase": "ignored on create" },
    }))
    .unwrap();
    let g = gadgets
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..Default::default()
            },
            &g,
        )
        .await
        .unwrap();
    assert!(
        g.data.get("status").is_none(),
        "create drops status: {:?}",
        g.data
    );

    // A status write through the subresource: only status changes, recorded as `status`.
    let g = gadgets
        .patch_status(
            "g",
            &PatchParams {
                field_manager: Some("reporter".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({ "spec": { "size": 99 }, "status": { "phase": "Ready" } })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&g).unwrap();
    assert_eq!(v["status"]["phase"], "Ready");
    assert_eq!(v["spec"]["size"], 1, "a status write must not change spec");
    assert_eq!(v["metadata"]["generation"], 1);
    let entry =
        managed(&v, "reporter", Some("status")).unwrap_or_else(|| panic!("status entry: {v}"));
    assert_eq!(entry["operation"], "Update");
    assert!(
        entry["fieldsV1"].pointer("/f:status/f:phase").is_some(),
        "{entry}"
    );
    assert!(entry["fieldsV1"].get("f:spec").is_none(), "{entry}");
    assert!(managed(&v, "reporter", None).is_none(), "{v}");

    // A main-resource write from the same manager gets its own entry and leaves status alone.
    let g = gadgets
        .patch(
            "g",
            &PatchParams {
                field_manager: Some("reporter".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({ "spec": { "size": 2 }, "status": { "phase": "Broken" } })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&g).unwrap();
    assert_eq!(
        v["status"]["phase"], "Ready",
        "main write must not change status"
    );
    assert_eq!(v["spec"]["size"], 2);
    assert_eq!(v["metadata"]["generation"], 2);
    let main = managed(&v, "reporter", None).expect("main entry");
    assert!(
        main["fieldsV1"].pointer("/f:spec/f:size").is_some(),
        "{main}"
    );
    assert!(main["fieldsV1"].get("f:status").is_none(), "{main}");
    assert!(managed(&v, "reporter", Some("status")).is_some());
    // The creator lost spec.size to the reporter.
    assert!(
        managed(&v, "creator", None)
            .is_none_or(|e| e["fieldsV1"].pointer("/f:spec/f:size").is_none())
    );

    // What a user sees through kubectl.
    let subs = k.ok(
        &[
            "get", "gadget", "g", "--show-managed-fields", "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource};{end}",
        ],
        "");
    assert!(
        subs.contains("reporter/Update/status;") && subs.contains("reporter/Update/;"),
        "{subs}"
    );

    // Server-side apply through the status subresource is an `Apply` entry for `status`.
    let applied = gadgets
        .patch_status(
            "g",
            &PatchParams::apply("status-applier").force(),
            &Patch::Apply(json!({
                "apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": { "name": "g" },
                "spec": { "size": 50 },
                "status": { "phase": "Applied", "ready": true },
            })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&applied).unwrap();
    assert_eq!(v["status"], json!({ "phase": "Applied", "ready": true }));
    assert_eq!(v["spec"]["size"], 2);
    let entry = managed(&v, "status-applier", Some("status")).expect("apply status entry");
    assert_eq!(entry["operation"], "Apply");
    assert!(
        entry["fieldsV1"].pointer("/f:status/f:ready").is_some(),
        "{entry}"
    );
    assert!(entry["fieldsV1"].get("f:spec").is_none(), "{entry}");
    // A main-resource apply that carries status owns no status field and changes none.
    let applied = gadgets
        .patch(
            "g",
            &PatchParams::apply("spec-applier").force(),
            &Patch::Apply(json!({
                "apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": { "name": "g" },
                "spec": { "size": 3 },
                "status": { "phase": "Nope" },
            })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&applied).unwrap();
    assert_eq!(v["status"]["phase"], "Applied");
    let entry = managed(&v, "spec-applier", None).unwrap();
    assert!(
        entry["fieldsV1"].pointer("/f:spec/f:size").is_some(),
        "{entry}"
    );
    assert!(entry["fieldsV1"].get("f:status").is_none(), "{entry}");

    // Forced applies took every field the reporter (and the creator) owned: their entries are gone.
    let subs = k.ok(
        &[
            "get", "gadget", "g", "--show-managed-fields", "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource};{end}",
        ],
        "");
    assert_eq!(subs, "status-applier/Apply/status;spec-applier/Apply/;");

    // The same for a built-in kind with a status subresource.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "web" },
        "spec": { "replicas": 1, "selector": { "matchLabels": { "app": "web" } },
                  "template": { "metadata": { "labels": { "app": "web" } },
                                "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let d = deployments
        .patch_status(
            "web",
            &PatchParams {
                field_manager: Some("kube-controller-manager".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({ "status": { "collisionCount": 3 } })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&d).unwrap();
    assert!(
        managed(&v, "kube-controller-manager", Some("status")).is_some(),
        "{v}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_one_store_seen_through_two_apis() {
    let (c, client, k) = start("events").await;
    // A core v1 Event, the way client-go's legacy recorder writes it.
    k.ok(
        &["create", "-f", "-"],
        "apiVersion: v1
kind: Event
metadata:
  name: web.legacy
  namespace: default
involvedObject:
  kind: Pod
  name: web
  namespace: default
reason: Scheduled
message: assigned default/web to node-1
type: Normal
source:
  component: default-scheduler
count: 1
firstTimestamp: \"2026-01-01T00:00:00Z\"
lastTimestamp: \"2026-01-01T00:00:00Z\"
",
    );
    // An events.k8s.io/v1 Event through kube-rs' recorder, published twice (a series).
    let recorder = kube::runtime::events::Recorder::new(
        client.clone(),
        kube::runtime::events::Reporter {
            controller: "ferroflux-test".into(),
            instance: None,
        },
    );
    let pod = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some("web".into()),
        namespace: Some("default".into()),
        ..Default::default()
    };
    let ev = kube::runtime::events::Event {
        type_: kube::runtime::events::EventType::Warning,
        reason: "BackOff".into(),
        note: Some("Back-off restarting failed container".into()),
        action: "Restarting".into(),
        secondary: None,
    };
    recorder.publish(&ev, &pod).await.unwrap();
    recorder.publish(&ev, &pod).await.unwrap();

    // Both through core v1, with core field names.
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let list = core.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    let new = list
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some("BackOff"))
        .expect("the events.k8s.io event, seen as core");
    assert_eq!(
        new.message.as_deref(),
        Some("Back-off restarting failed container")
    );
    assert_eq!(new.involved_object.name.as_deref(), Some("web"));
    assert_eq!(new.reporting_component.as_deref(), Some("ferroflux-test"));
    assert_eq!(new.series.as_ref().map(|s| s.count), Some(Some(2)));

    // Both through events.k8s.io/v1, with its field names.
    let events: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let list = events.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    let legacy = list
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some("Scheduled"))
        .expect("the core event, seen as events.k8s.io");
    assert_eq!(
        legacy.note.as_deref(),
        Some("assigned default/web to node-1")
    );
    assert_eq!(
        legacy.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("web")
    );
    assert_eq!(
        legacy
            .deprecated_source
            .as_ref()
            .and_then(|s| s.component.as_deref()),
        Some("default-scheduler")
    );
    assert_eq!(legacy.deprecated_count, Some(1));

    // kubectl: `get events`, `get events.events.k8s.io` and `kubectl events` see both.
    let table = k.ok(&["get", "events"], "");
    assert!(
        table.contains("LAST SEEN")
            && table.contains("Scheduled")
            && table.contains("BackOff")
            && table.contains("pod/web")
            && table.contains("Back-off restarting failed container"),
        "{table}"
    );
    let table = k.ok(&["get", "events.events.k8s.io"], "");
    assert!(
        table.contains("Scheduled") && table.contains("BackOff"),
        "{table}"
    );
    let out = k.ok(&["events"], "");
    assert!(
        out.contains("Scheduled") && out.contains("BackOff") && out.contains("Pod/web"),
        "{out}"
    );
    let out = k.ok(&["events", "--for", "pod/web", "--types", "Warning"], "");
    assert!(
        out.contains("BackOff") && !out.contains("Scheduled"),
        "{out}"
    );
    let names = k.ok(
        &[
            "get",
            "events",
            "--field-selector",
            "reason=Scheduled,involvedObject.kind=Pod",
            "-o",
            "name",
        ],
        "",
    );
    assert_eq!(names.trim(), "event/web.legacy");

    // A watch through events.k8s.io sees an Event created through core v1, converted.
    let mut watch = Box::pin(
        events
            .watch(
                &kube::api::WatchParams::default(),
                &list.metadata.resource_version.clone().unwrap(),
            )
            .await
            .unwrap(),
    );
    let later: CoreEvent = serde_json::from_value(json!({
        "metadata": { "name": "web.later" },
        "involvedObject": { "kind": "Pod", "name": "web", "namespace": "default" },
        "reason": "Killing", "message": "stopping container", "type": "Normal",
    }))
    .unwrap();
    core.create(&PostParams::default(), &later).await.unwrap();
    use futures_util::StreamExt;
    loop {
        match watch.next().await {
            Some(Ok(kube::api::WatchEvent::Bookmark(_))) => continue,
            Some(Ok(kube::api::WatchEvent::Added(e))) => {
                assert_eq!(e.metadata.name.as_deref(), Some("web.later"));
                assert_eq!(e.note.as_deref(), Some("stopping container"));
                break;
            }
            other => panic!("expected the core event as ADDED, got {other:?}"),
        }
    }

    // Deleting through one API removes it from the other.
    k.ok(&["delete", "events.events.k8s.io", "web.legacy"], "");
    assert!(
        k.fails(&["get", "event", "web.legacy"], "")
            .contains("NotFound")
    );

    // events.k8s.io/v1 keeps its stricter rules on create.
    let err = k.fails(
        &["create", "-f", "-"],
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: bare\n  namespace: default\nreason: Test\n");
    assert!(
        err.contains("The Event \"bare\" is invalid")
            && err.contains("eventTime: Required value")
            && err.contains("reportingController: Required value"),
        "{err}"
    );
    c.shutdown().await;
}
