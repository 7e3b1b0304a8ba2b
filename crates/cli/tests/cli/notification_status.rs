//! What a user sees of notification objects that cannot work, and of their events: a Provider
//! whose Secret lacks the key its type needs is Ready=False in `get alert-providers` with the
//! Secret and key named, and so is every Alert sending to it in `get alerts` (Flux's v1beta3
//! Provider and Alert have no status: the CLI reads the Secrets as the dispatcher does);
//! `events --for Alert/NAME` shows the dispatcher's Warning naming the same key, `--for
//! Receiver/NAME` the Receiver controller's Events, `--for Provider/NAME` is accepted; `get
//! alerts|alert-providers|receivers --watch` print flux's columns, a row per change.

use crate::day2::Streaming;
use crate::run::*;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{create, eventually, flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

fn provider(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
           "metadata": {"name": name, "namespace": "flux-system"}, "spec": spec})
}

fn alert(name: &str, provider: &str) -> Value {
    json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
           "metadata": {"name": name, "namespace": "flux-system"},
           "spec": {"providerRef": {"name": provider},
                    "eventSources": [{"kind": "GitRepository", "name": "*"}]}})
}

const MISSING_TOKEN: &str =
    "secret 'flux-system/hmac' has no 'token' key, which provider type 'generic-hmac' needs";

#[test]
fn a_provider_secret_missing_a_key_is_named_by_get_and_events() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("staging").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        for object in [
            // The HMAC key is missing: nothing can be signed.
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "hmac", "namespace": "flux-system"},
                   "stringData": {"address": "http://127.0.0.1:9/hook"}}),
            provider(
                "signed",
                json!({"type": "generic-hmac", "secretRef": {"name": "hmac"}}),
            ),
            alert("to-signed", "signed"),
            provider(
                "plain",
                json!({"type": "generic", "address": "http://127.0.0.1:9/hook"}),
            ),
            alert("to-plain", "plain"),
            alert("orphan", "nope"),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "webhook-token", "namespace": "flux-system"},
                   "stringData": {"token": "s3cr3t"}}),
            json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
                   "metadata": {"name": "github", "namespace": "flux-system"},
                   "spec": {"type": "github", "secretRef": {"name": "webhook-token"},
                            "resources": [{"kind": "GitRepository", "name": "*"}]}}),
            json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
                   "metadata": {"name": "nosecret", "namespace": "flux-system"},
                   "spec": {"type": "generic", "secretRef": {"name": "absent"},
                            "resources": [{"kind": "GitRepository", "name": "*"}]}}),
        ] {
            create(&c, object).await;
        }
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let run = |args: &[&str]| {
        let out = ferroflux(&kc, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        stdout(&out)
    };

    // The watches first: each prints the objects there are, then a row per change.
    let providers_watch = Streaming::start(
        &kc,
        &["get", "alert-providers", "--watch", "--timeout", "10m"],
    );
    let alerts_watch = Streaming::start(&kc, &["get", "alerts", "--watch", "--timeout", "10m"]);
    let receivers_watch =
        Streaming::start(&kc, &["get", "receivers", "--watch", "--timeout", "10m"]);
    assert_eq!(
        cells(&providers_watch.next("header"))[0],
        ["NAME", "READY", "MESSAGE"]
    );
    assert_eq!(
        cells(&providers_watch.next("plain"))[0],
        ["plain", "True", "Provider is Ready"]
    );
    assert_eq!(
        cells(&providers_watch.next("signed"))[0],
        ["signed", "False", MISSING_TOKEN]
    );
    assert_eq!(
        cells(&alerts_watch.next("header"))[0],
        ["NAME", "SUSPENDED", "READY", "MESSAGE"]
    );
    assert_eq!(
        cells(&alerts_watch.next("orphan"))[0],
        [
            "orphan",
            "False",
            "False",
            "provider 'flux-system/nope' not found"
        ]
    );
    assert_eq!(
        cells(&alerts_watch.next("to-plain"))[0],
        ["to-plain", "False", "True", "Alert is Ready"]
    );
    assert_eq!(
        cells(&alerts_watch.next("to-signed"))[0],
        [
            "to-signed",
            "False",
            "False",
            &format!("provider 'signed': {MISSING_TOKEN}")
        ]
    );
    assert_eq!(
        cells(&receivers_watch.next("header"))[0],
        ["NAME", "SUSPENDED", "READY", "MESSAGE"]
    );
    // The Receivers' first rows may come before their controller's status.
    let mut receiver_rows = Vec::new();
    while receiver_rows.len() < 2 {
        let row = cells(&receivers_watch.next("a receiver row"))[0].clone();
        if row[2] != "False" || row[3] != "waiting to be reconciled" {
            receiver_rows.retain(|r: &Vec<String>| r[0] != row[0]);
            receiver_rows.push(row);
        }
    }
    receiver_rows.sort();
    assert_eq!(receiver_rows[0][..3], ["github", "False", "True"]);
    assert_eq!(receiver_rows[1][..3], ["nosecret", "False", "False"]);

    // The same in the listings, and the status selector keeps what is not ready.
    assert_eq!(
        cells(&run(&["get", "alert-providers"])),
        vec![
            vec!["NAME", "READY", "MESSAGE"],
            vec!["plain", "True", "Provider is Ready"],
            vec!["signed", "False", MISSING_TOKEN],
        ]
    );
    let not_ready = cells(&run(&["get", "alerts", "--status-selector", "ready=false"]));
    assert_eq!(
        not_ready,
        vec![
            vec!["NAME", "SUSPENDED", "READY", "MESSAGE"],
            vec![
                "orphan",
                "False",
                "False",
                "provider 'flux-system/nope' not found"
            ],
            vec![
                "to-signed",
                "False",
                "False",
                &format!("provider 'signed': {MISSING_TOKEN}")
            ],
        ]
    );
    let all = run(&["get", "all"]);
    assert!(
        cells(&all).contains(&vec![
            "provider/signed".to_string(),
            "False".into(),
            MISSING_TOKEN.into()
        ]),
        "{all}"
    );

    // A failing source: its Warning goes to every Alert; the one whose Provider lacks the key
    // gets the dispatcher's Event naming it.
    rt.block_on(create(
        &c,
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "broken", "namespace": "flux-system"},
               "spec": {"url": "file:///nonexistent/fleet", "interval": "1h",
                        "ref": {"branch": "main"}}}),
    ));
    let rows = rt.block_on(eventually(
        "the dispatcher's Event on the Alert",
        || async {
            let out = ferroflux(&kc, &["events", "--for", "Alert/to-signed"]);
            let rows = cells(&stdout(&out));
            (rows.len() > 1).then_some(rows)
        },
    ));
    assert_eq!(rows[0][1..], ["TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(
        rows[1][1..],
        [
            "Warning",
            "NotificationDispatchFailed",
            "Alert/to-signed",
            &format!(
                "failed to dispatch notification for GitRepository/flux-system/broken: failed to initialize notifier for provider 'signed': {MISSING_TOKEN}"
            )
        ]
    );
    // Only that Alert's Events.
    assert!(
        rows.iter().skip(1).all(|r| r[3] == "Alert/to-signed"),
        "{rows:?}"
    );
    let rows = rt.block_on(eventually("the orphan Alert's Event", || async {
        let out = ferroflux(&kc, &["events", "--for", "Alert/orphan"]);
        let rows = cells(&stdout(&out));
        (rows.len() > 1).then_some(rows)
    }));
    assert_eq!(
        rows[1][4],
        "failed to dispatch notification for GitRepository/flux-system/broken: failed to read provider: provider 'flux-system/nope' not found"
    );
    // The Receiver controller's Events, as Flux's: Normal when ready, Warning with the reason.
    let rows = cells(&run(&["events", "--for", "Receiver/github"]));
    assert_eq!(
        rows[1][1..],
        [
            "Normal",
            "Succeeded",
            "Receiver/github",
            "Reconciliation finished, next run in 10m0s"
        ]
    );
    let rows = cells(&run(&["events", "--for", "Receiver/nosecret"]));
    assert_eq!(
        rows[1][1..4],
        ["Warning", "TokenNotFound", "Receiver/nosecret"]
    );
    assert!(rows[1][4].contains("absent"), "{rows:?}");
    // Nothing records Events on a Provider (neither does Flux's v1beta3): the kind is accepted.
    let out = ferroflux(&kc, &["events", "--for", "Provider/signed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        stderr(&out),
        "✗ No events found in flux-system namespace.\n"
    );

    // A Provider created while watching is a new row; with the key added, the listing is ready.
    rt.block_on(create(
        &c,
        provider(
            "late",
            json!({"type": "slack", "secretRef": {"name": "absent"}}),
        ),
    ));
    assert_eq!(
        cells(&providers_watch.next("late"))[0],
        [
            "late",
            "False",
            "failed to get secret 'flux-system/absent': not found"
        ]
    );
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "flux-system");
    rt.block_on(secrets.patch(
        "hmac",
        &PatchParams::default(),
        &Patch::Merge(json!({"stringData": {"token": "k3y"}})),
    ))
    .unwrap();
    assert_eq!(
        cells(&run(&["get", "alert-providers", "signed"]))[1],
        ["signed", "True", "Provider is Ready"]
    );
    assert_eq!(
        cells(&run(&["get", "alerts", "to-signed"]))[1],
        ["to-signed", "False", "True", "Alert is Ready"]
    );
    providers_watch.interrupt();
    alerts_watch.interrupt();
    receivers_watch.interrupt();
    rt.block_on(manager.shutdown()).unwrap();
    drop(cl);
}
