//! Notifications on a devcluster: a failing Kustomization alerts a local "Slack" with the
//! cluster's name while a provider that is down is retried and reported on its Alert and a
//! provider Secret missing its key is named; Flux's event JSON posted to `--events-addr` reaches
//! a generic provider; a certSecretRef's client certificate passes a server that requires one;
//! a Receiver call after a push to a real Git repository re-applies the
//! Kustomization without waiting for the interval, and bad calls are refused; a Nexus Receiver
//! checks its HMAC-SHA1 signature; a generic-oidc one verifies tokens against a local issuer
//! (discovery document and key set) and its CEL validations, and its claims reach the filters.

use ferroflux_api::notification::Receiver;
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::manager::{Manager, ManagerConfig, install_crds};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use ferroflux_notification::payload::hmac_sha256_hex;
use ferroflux_notification::send::Retry;
use ferroflux_testkit::{WebhookSink, create, eventually, git};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn cluster(name: &str) -> (RunningCluster, kube::Client, kube::Config) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    install_crds(&client).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let config = cluster.kube_config().await.unwrap();
    (cluster, client, config)
}

/// A plain HTTP/1.0 POST; the status and body of the answer.
async fn http_post(url: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url.strip_prefix("http://").unwrap();
    let (host, path) = url.split_once('/').unwrap_or((url, ""));
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let mut request = format!(
        "POST /{path} HTTP/1.0\r\nHost: {host}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    // A server may answer 413 before reading the whole body.
    let _ = stream.write_all(body).await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

async fn wait_for(
    sink: &std::sync::Arc<WebhookSink>,
    n: usize,
) -> Vec<ferroflux_testkit::Received> {
    let sink = sink.clone();
    tokio::task::spawn_blocking(move || sink.wait_for(n, Duration::from_secs(60)))
        .await
        .unwrap()
}

/// The notes of the Events about the Alert `name`.
async fn alert_events(client: &kube::Client, name: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), "flux-system");
    events
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("Alert")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
        })
        .map(|e| {
            format!(
                "{} {}",
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default()
            )
        })
        .collect()
}

/// The HelmReleases of `flux-system`, read as plain objects.
fn helm_releases(client: &kube::Client) -> Api<kube::api::DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        "flux-system",
        &kube::api::ApiResource {
            group: "helm.toolkit.fluxcd.io".into(),
            version: "v2".into(),
            api_version: "helm.toolkit.fluxcd.io/v2".into(),
            kind: "HelmRelease".into(),
            plural: "helmreleases".into(),
        },
    )
}

/// Whether the HelmRelease `name` carries a reconcile request (a Receiver annotated it).
async fn reconcile_requested(client: &kube::Client, name: &str) -> bool {
    helm_releases(client)
        .get(name)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default()
        .contains_key("reconcile.fluxcd.io/requestedAt")
}

/// The address of Receiver `name`'s webhook on `manager`, once its status gives the path.
async fn hook_url(manager: &Manager, client: &kube::Client, name: &str) -> String {
    let base = manager.receiver_url().unwrap().to_string();
    let receivers: Api<Receiver> = Api::namespaced(client.clone(), "flux-system");
    let what = format!("the {name} Receiver's webhook path");
    let path = eventually(&what, || async {
        receivers.get(name).await.ok()?.status?.webhook_path
    })
    .await;
    format!("{base}{path}")
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_kustomization_alerts_slack_with_the_cluster_name() {
    let (_cluster, client, config) = cluster("alerts").await;
    let slack = std::sync::Arc::new(WebhookSink::start());
    let (mtls, pem) = WebhookSink::start_mtls();
    let mtls = std::sync::Arc::new(mtls);
    let down = closed_port();
    for object in [
        // An HTTPS service that requires a client certificate: certSecretRef's tls.crt and
        // tls.key pass it; a Secret with the certificate but not its key is named on the Alert.
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "client-tls", "namespace": "flux-system"},
               "type": "kubernetes.io/tls",
               "stringData": {"ca.crt": pem.ca_pem, "tls.crt": pem.client_cert_pem,
                              "tls.key": pem.client_key_pem}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "mtls", "namespace": "flux-system"},
               "spec": {"type": "generic", "address": format!("{}/mtls", mtls.url()),
                        "certSecretRef": {"name": "client-tls"}}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-mtls", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "mtls"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "half-tls", "namespace": "flux-system"},
               "stringData": {"ca.crt": pem.ca_pem, "tls.crt": pem.client_cert_pem}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "half-tls", "namespace": "flux-system"},
               "spec": {"type": "generic", "address": format!("{}/half", mtls.url()),
                        "certSecretRef": {"name": "half-tls"}}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-half-tls", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "half-tls"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "slack", "namespace": "flux-system"},
               "spec": {"type": "slack", "channel": "ops", "address": format!("{}/services/T/B/X", slack.url())}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "on-call", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "slack"}, "eventSeverity": "error",
                        "eventSources": [{"kind": "Kustomization", "name": "*"}],
                        "eventMetadata": {"env": "prod"}}}),
        // A provider whose address is down, and one whose Secret lacks the key its type needs.
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "down", "namespace": "flux-system"},
               "spec": {"type": "generic", "address": format!("http://127.0.0.1:{down}/hook")}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-down", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "down"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "hmac", "namespace": "flux-system"},
               "stringData": {"address": slack.url()}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "signed", "namespace": "flux-system"},
               "spec": {"type": "generic-hmac", "secretRef": {"name": "hmac"}}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-signed", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "signed"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        // The same two failures on types of the second batch: a GitLab commit status whose
        // host is down, an Opsgenie whose Secret lacks the API key.
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "gitlab", "namespace": "flux-system"},
               "stringData": {"token": "glpat-secret"}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "gitlab-down", "namespace": "flux-system"},
               "spec": {"type": "gitlab", "address": format!("http://127.0.0.1:{down}/platform/fleet"),
                        "secretRef": {"name": "gitlab"}}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-gitlab-down", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "gitlab-down"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "opsgenie", "namespace": "flux-system"},
               "stringData": {"address": format!("{}/v2/alerts", slack.url())}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "opsgenie", "namespace": "flux-system"},
               "spec": {"type": "opsgenie", "secretRef": {"name": "opsgenie"}}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "to-opsgenie", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "opsgenie"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
    ] {
        create(&client, object).await;
    }

    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("fleet");
    std::fs::create_dir_all(repo.join("apps")).unwrap();
    // Not a Kubernetes object: the build fails.
    std::fs::write(repo.join("apps/broken.yaml"), "kind: [not, an, object\n").unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "broken"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.cluster_name = Some("production".into());
    settings.notification.retry = Retry {
        attempts: 3,
        first: Duration::from_millis(10),
        max: Duration::from_millis(20),
    };
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    create(
        &client,
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system"},
            "spec": {"url": format!("file://{}", repo.display()), "interval": "1h",
                     "ref": {"branch": "main"}},
        }),
    )
    .await;
    eventually("the source's artifact", || async {
        repos.get("fleet").await.ok()?.status?.artifact
    })
    .await;
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = crate::harness::kustomization("apps", "fleet", json!({"path": "./apps"}));
    kss.create(&PostParams::default(), &ks).await.unwrap();

    wait_for(&slack, 1).await;
    let revision = format!("main@sha1:{head}");
    let alert = eventually("an alert about the broken commit", || async {
        slack
            .received()
            .into_iter()
            .find(|r| r.text().contains(&revision))
    })
    .await;
    assert_eq!(alert.path, "/services/T/B/X");
    let payload: Value = serde_json::from_slice(&alert.body).unwrap();
    assert_eq!(payload["channel"], "ops");
    assert_eq!(payload["username"], "kustomize-controller");
    let attachment = &payload["attachments"][0];
    assert_eq!(
        attachment["author_name"],
        "[production] kustomization/apps.flux-system"
    );
    assert_eq!(attachment["color"], "danger");
    let fallback = attachment["fallback"].as_str().unwrap();
    assert!(
        fallback.starts_with("[production] kustomization/apps.flux-system: "),
        "{fallback}"
    );
    let fields: Vec<(String, String)> = attachment["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["title"].as_str().unwrap().to_string(),
                f["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        fields.contains(&("cluster".into(), "production".into())),
        "{fields:?}"
    );
    assert!(
        fields.contains(&("env".into(), "prod".into())),
        "{fields:?}"
    );
    assert!(
        fields.contains(&("revision".into(), format!("main@sha1:{head}"))),
        "{fields:?}"
    );

    // The provider that is down: tried three times, then an Event on its Alert. Slack got its
    // alert all the same (above).
    let notes = eventually("the dispatch failure on the Alert", || async {
        let notes = alert_events(&client, "to-down").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert!(
        notes[0].starts_with(&format!(
            "NotificationDispatchFailed failed to send notification for Kustomization/flux-system/apps: failed to execute request to http://127.0.0.1:{down} after 3 attempt(s)"
        )),
        "{notes:?}"
    );
    let notes = eventually("the missing key on the Alert", || async {
        let notes = alert_events(&client, "to-signed").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(
        notes[0],
        "NotificationDispatchFailed failed to dispatch notification for Kustomization/flux-system/apps: failed to initialize notifier for provider 'signed': secret 'flux-system/hmac' has no 'token' key, which provider type 'generic-hmac' needs"
    );
    let notes = eventually("the GitLab host that is down, on its Alert", || async {
        let notes = alert_events(&client, "to-gitlab-down").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert!(
        notes[0].starts_with(&format!(
            "NotificationDispatchFailed failed to send notification for Kustomization/flux-system/apps: failed to execute request to http://127.0.0.1:{down} after 3 attempt(s)"
        )),
        "{notes:?}"
    );
    assert!(!notes[0].contains("glpat-secret"), "{notes:?}");
    let notes = eventually("the missing API key on the Alert", || async {
        let notes = alert_events(&client, "to-opsgenie").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(
        notes[0],
        "NotificationDispatchFailed failed to dispatch notification for Kustomization/flux-system/apps: failed to initialize notifier for provider 'opsgenie': secret 'flux-system/opsgenie' has no 'token' key, which provider type 'opsgenie' needs"
    );
    // Slack got every alert meant for it all the same; Opsgenie's address (the same sink)
    // got nothing.
    assert!(slack.received().iter().all(|r| r.path != "/v2/alerts"));
    // Mutual TLS: the event arrived through the client certificate.
    let got = wait_for(&mtls, 1).await;
    assert_eq!(got[0].path, "/mtls");
    let event: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(event["involvedObject"]["name"], "apps");
    let notes = eventually("the missing tls.key on the Alert", || async {
        let notes = alert_events(&client, "to-half-tls").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(
        notes[0],
        "NotificationDispatchFailed failed to dispatch notification for Kustomization/flux-system/apps: failed to initialize notifier for provider 'half-tls': failed to get TLS config: secret 'flux-system/half-tls' contains 'tls.crt' but missing 'tls.key'"
    );
    assert!(mtls.received().iter().all(|r| r.path != "/half"));
    manager.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn flux_event_json_posted_to_the_events_address_reaches_a_provider() {
    let (_cluster, client, config) = cluster("events-addr").await;
    let sink = std::sync::Arc::new(WebhookSink::start());
    for object in [
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "generic", "namespace": "flux-system"},
               "spec": {"type": "generic", "address": sink.url()}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "all", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "generic"},
                        "eventSources": [{"kind": "HelmRelease", "name": "*"}]}}),
    ] {
        create(&client, object).await;
    }
    let work = tempfile::tempdir().unwrap();
    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.cluster_name = Some("staging".into());
    settings.events_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = manager.events_url().unwrap().to_string();
    // What Flux's helm-controller posts.
    let event = json!({
        "involvedObject": {"kind": "HelmRelease", "namespace": "flux-system", "name": "podinfo",
                           "apiVersion": "helm.toolkit.fluxcd.io/v2"},
        "severity": "info", "timestamp": "2026-12-01T10:00:00Z",
        "message": "Helm install succeeded", "reason": "InstallSucceeded",
        "metadata": {"helm.toolkit.fluxcd.io/revision": "6.5.0",
                     "helm.toolkit.fluxcd.io/token": "abc", "other.io/dropped": "x"},
        "reportingController": "helm-controller"
    });
    let body = serde_json::to_vec(&event).unwrap();
    let (status, _) = http_post(&format!("{url}/"), &[], &body).await;
    assert_eq!(status, 202);
    let got = wait_for(&sink, 1).await;
    let sent: Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(sent["message"], "Helm install succeeded");
    assert_eq!(
        sent["metadata"],
        json!({"cluster": "staging", "revision": "6.5.0"})
    );
    // The same event again within the rate limit interval is not sent twice; another is.
    assert_eq!(http_post(&format!("{url}/"), &[], &body).await.0, 202);
    let mut other = event.clone();
    other["message"] = json!("Helm upgrade succeeded");
    let other = serde_json::to_vec(&other).unwrap();
    assert_eq!(http_post(&format!("{url}/"), &[], &other).await.0, 202);
    let got = wait_for(&sink, 2).await;
    let second: Value = serde_json::from_slice(&got[1].body).unwrap();
    assert_eq!(second["message"], "Helm upgrade succeeded");
    assert_eq!(sink.received().len(), 2);
    // Bad input.
    let (status, text) = http_post(&format!("{url}/"), &[], b"{not json").await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.starts_with("decoding the request body failed: "),
        "{text}"
    );
    let huge = vec![b' '; 4 * 1024 * 1024];
    assert_eq!(http_post(&format!("{url}/"), &[], &huge).await.0, 413);
    manager.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_call_after_a_push_reapplies_at_once() {
    let (_cluster, client, config) = cluster("receiver").await;
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("fleet");
    std::fs::create_dir_all(repo.join("apps")).unwrap();
    let manifest = |color: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  color: {color}\n"
        )
    };
    std::fs::write(repo.join("apps/settings.yaml"), manifest("blue")).unwrap();
    git(work.path(), &["init", "-q", "-b", "main", "fleet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);

    let token = "webhook-token-123";
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "webhook-token", "namespace": "flux-system"},
               "stringData": {"token": token}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "github", "namespace": "flux-system"},
               "spec": {"type": "github", "events": ["push"],
                        "secretRef": {"name": "webhook-token"},
                        "resources": [{"kind": "GitRepository", "name": "fleet"}]}}),
    ] {
        create(&client, object).await;
    }
    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let base = manager.receiver_url().unwrap().to_string();
    let receivers: Api<Receiver> = Api::namespaced(client.clone(), "flux-system");
    let path = eventually("the Receiver's webhook path", || async {
        receivers.get("github").await.ok()?.status?.webhook_path
    })
    .await;
    assert_eq!(
        path,
        ferroflux_api::notification::webhook_path(token, "github", "flux-system")
    );
    let ready = receivers.get("github").await.unwrap().status.unwrap();
    let cond = &ready.conditions.unwrap()[0];
    assert_eq!(
        (cond.type_.as_str(), cond.status.as_str()),
        ("Ready", "True")
    );
    assert_eq!(
        cond.message,
        format!("Receiver initialized for path: {path}")
    );

    let repos: Api<GitRepository> = Api::namespaced(client.clone(), "flux-system");
    create(
        &client,
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system"},
            "spec": {"url": format!("file://{}", repo.display()), "interval": "1h",
                     "ref": {"branch": "main"}},
        }),
    )
    .await;
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks =
        crate::harness::kustomization("apps", "fleet", json!({"path": "./apps", "interval": "1h"}));
    kss.create(&PostParams::default(), &ks).await.unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    eventually("the first commit applied", || async {
        let cm = configmaps.get_opt("settings").await.ok().flatten()?;
        (cm.data?.get("color").map(String::as_str) == Some("blue")).then_some(())
    })
    .await;

    // The push.
    std::fs::write(repo.join("apps/settings.yaml"), manifest("green")).unwrap();
    git(&repo, &["commit", "-qam", "two"]);
    let body = br#"{"ref":"refs/heads/main"}"#;
    let url = format!("{base}{path}");
    let annotated = || async {
        repos
            .get("fleet")
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap_or_default()
            .get("reconcile.fluxcd.io/requestedAt")
            .cloned()
    };

    // Bad calls first: nothing is annotated.
    let bad = [
        (vec![("X-GitHub-Event", "push".to_string())], 401),
        (
            vec![
                ("X-GitHub-Event", "push".to_string()),
                (
                    "X-Hub-Signature-256",
                    format!("sha256={}", hmac_sha256_hex(b"wrong", body)),
                ),
            ],
            401,
        ),
        (
            vec![
                ("X-GitHub-Event", "release".to_string()),
                (
                    "X-Hub-Signature-256",
                    format!("sha256={}", hmac_sha256_hex(token.as_bytes(), body)),
                ),
            ],
            400,
        ),
    ];
    for (headers, want) in bad {
        let (status, text) = http_post(&url, &headers, body).await;
        assert_eq!(status, want, "{text}");
        assert!(!text.contains(token), "{text}");
    }
    let (status, text) = http_post(&url, &[("X-GitHub-Event", "push".to_string())], body).await;
    assert_eq!(
        text,
        "the GitHub signature header is invalid: missing X-Hub-Signature-256\n"
    );
    assert_eq!(status, 401);
    assert_eq!(
        http_post(&format!("{base}/hook/0000"), &[], body).await.0,
        404
    );
    let huge = vec![b' '; 4 * 1024 * 1024];
    assert_eq!(http_post(&url, &[], &huge).await.0, 413);
    // A ping is answered and reconciles nothing.
    let ping = br#"{"zen":"Design for failure."}"#;
    let (status, text) = http_post(
        &url,
        &[
            ("X-GitHub-Event", "ping".to_string()),
            (
                "X-Hub-Signature-256",
                format!("sha256={}", hmac_sha256_hex(token.as_bytes(), ping)),
            ),
        ],
        ping,
    )
    .await;
    assert_eq!((status, text.as_str()), (200, "pong\n"));
    assert_eq!(
        annotated().await,
        None,
        "nothing annotated by bad calls or a ping"
    );

    let started = Instant::now();
    let (status, text) = http_post(
        &url,
        &[
            ("X-GitHub-Event", "push".to_string()),
            (
                "X-Hub-Signature-256",
                format!("sha256={}", hmac_sha256_hex(token.as_bytes(), body)),
            ),
        ],
        body,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(annotated().await.is_some());
    eventually("the pushed commit applied", || async {
        let cm = configmaps.get_opt("settings").await.ok().flatten()?;
        (cm.data?.get("color").map(String::as_str) == Some("green")).then_some(())
    })
    .await;
    eprintln!("receiver call to re-applied: {:?}", started.elapsed());
    manager.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nexus_receiver_checks_its_signature() {
    let (_cluster, client, config) = cluster("nexus").await;
    let token = "nexus-token-456";
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "nexus-token", "namespace": "flux-system"},
               "stringData": {"token": token}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "nexus", "namespace": "flux-system"},
               "spec": {"type": "nexus", "secretRef": {"name": "nexus-token"},
                        "resources": [{"kind": "HelmRelease", "name": "app"}]}}),
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "app", "namespace": "flux-system"},
               "spec": {"interval": "1h", "suspend": true,
                        "chart": {"spec": {"chart": "app",
                                           "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}}),
    ] {
        create(&client, object).await;
    }
    let mut settings = ManagerConfig::local(tempfile::tempdir().unwrap().keep());
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = hook_url(&manager, &client, "nexus").await;
    let repos = helm_releases(&client);
    let annotated = || async {
        repos
            .get("app")
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap_or_default()
            .get("reconcile.fluxcd.io/requestedAt")
            .cloned()
    };
    let body = br#"{"action":"CREATED","repositoryName":"docker-hosted"}"#;
    let sign = |key: &[u8]| -> String {
        ferroflux_notification::sha1::hmac_sha1(key, body)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let (status, text) = http_post(&url, &[], body).await;
    assert_eq!(
        (status, text.as_str()),
        (401, "the Nexus signature is missing from header\n")
    );
    let (status, text) =
        http_post(&url, &[("X-Nexus-Webhook-Signature", sign(b"wrong"))], body).await;
    assert_eq!((status, text.as_str()), (401, "invalid Nexus signature\n"));
    assert_eq!(annotated().await, None, "nothing annotated by bad calls");
    let (status, text) = http_post(
        &url,
        &[("X-Nexus-Webhook-Signature", sign(token.as_bytes()))],
        body,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(annotated().await.is_some());

    manager.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gcr_receiver_accepts_only_a_google_signed_token_for_its_account() {
    let (_cluster, client, config) = cluster("gcr").await;
    // Google's signing keys, served from a local endpoint in place of googleapis.com.
    let signer = ferroflux_testkit::GoogleSigner::new();
    let google = WebhookSink::start();
    google.set_get_body(&signer.keys().to_string());
    let email = "pusher@project.iam.gserviceaccount.com";
    let audience = "https://flux.example.com/gcr";
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "gcr", "namespace": "flux-system"},
               "stringData": {"token": "gcr-token", "email": email, "audience": audience}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "gcr", "namespace": "flux-system"},
               "spec": {"type": "gcr", "secretRef": {"name": "gcr"},
                        "resources": [{"kind": "HelmRelease", "name": "app"}]}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "gcr-no-email", "namespace": "flux-system"},
               "stringData": {"token": "t", "audience": audience}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "gcr-no-email", "namespace": "flux-system"},
               "spec": {"type": "gcr", "secretRef": {"name": "gcr-no-email"},
                        "resources": [{"kind": "HelmRelease", "name": "app"}]}}),
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "app", "namespace": "flux-system"},
               "spec": {"interval": "1h", "suspend": true,
                        "chart": {"spec": {"chart": "app",
                                           "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}}),
    ] {
        create(&client, object).await;
    }
    let mut settings = ManagerConfig::local(tempfile::tempdir().unwrap().keep());
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    settings.notification.google_keys_url = format!("{}/oauth2/v3/certs", google.url());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = hook_url(&manager, &client, "gcr").await;
    let receivers: Api<Receiver> = Api::namespaced(client.clone(), "flux-system");
    let condition = eventually("the Receiver without an email, not ready", || async {
        let status = receivers.get("gcr-no-email").await.ok()?.status?;
        status.conditions?.into_iter().find(|c| c.type_ == "Ready")
    })
    .await;
    assert_eq!(condition.status, "False");
    assert_eq!(
        condition.message,
        "invalid 'flux-system/gcr-no-email' secret data: required field 'email' for GCR receiver"
    );

    let releases = helm_releases(&client);
    let annotated = || async {
        releases
            .get("app")
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap_or_default()
            .get("reconcile.fluxcd.io/requestedAt")
            .cloned()
    };
    // Pub/Sub's envelope; `data` is base64 of {"action":"INSERT","tag":"gcr.io/p/app:v2"}.
    let body = json!({"message": {"data": "eyJhY3Rpb24iOiJJTlNFUlQiLCJ0YWciOiJnY3IuaW8vcC9hcHA6djIifQ=="}}).to_string();
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let claims = |email: &str| {
        json!({"iss": "https://accounts.google.com", "aud": audience, "email": email,
               "email_verified": true, "iat": now, "exp": now + 600})
    };
    let (status, text) = http_post(&url, &[], body.as_bytes()).await;
    assert_eq!(
        (status, text.as_str()),
        (
            401,
            "cannot authenticate GCR request: the Authorization header is missing or malformed\n"
        )
    );
    let other = signer.token(&claims("someone@else.com"));
    let (status, text) = http_post(
        &url,
        &[("Authorization", format!("Bearer {other}"))],
        body.as_bytes(),
    )
    .await;
    assert_eq!(status, 401, "{text}");
    assert!(!text.contains(&other));
    assert_eq!(annotated().await, None, "nothing annotated by bad calls");
    let good = signer.token(&claims(email));
    let (status, text) = http_post(
        &url,
        &[("Authorization", format!("Bearer {good}"))],
        body.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(annotated().await.is_some());
    // The keys were read from the configured address, once.
    let reads = google.received();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].path, "/oauth2/v3/certs");
    manager.shutdown().await.unwrap();
}

/// A Receiver's CEL filters: `resourceFilter` over `res` (the object's metadata) and `req` (the
/// call's JSON body), stacked with a resource entry's own `filter`; only the objects both accept
/// are annotated. A filter that does not parse makes the Receiver not ready with Flux's reason;
/// a call whose body the filter cannot read annotates nothing and answers 500.
#[tokio::test(flavor = "multi_thread")]
async fn receiver_filters_choose_which_objects_are_reconciled() {
    let (_cluster, client, config) = cluster("receiver-filters").await;
    let release = |name: &str, team: &str| {
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": name, "namespace": "flux-system", "labels": {"team": team, "tier": "web"}},
               "spec": {"interval": "1h", "suspend": true,
                        "chart": {"spec": {"chart": name,
                                           "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}})
    };
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "hook-token", "namespace": "flux-system"},
               "stringData": {"token": "filters-token"}}),
        release("web", "a"),
        release("api", "a"),
        release("admin", "b"),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "images", "namespace": "flux-system"},
               "spec": {"type": "generic", "secretRef": {"name": "hook-token"},
                        "resourceFilter": "req.image.contains(res.metadata.name)",
                        "resources": [{"kind": "HelmRelease", "name": "*", "matchLabels": {"tier": "web"},
                                       "filter": "res.metadata.labels['team'] == 'a'"}]}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "broken", "namespace": "flux-system"},
               "spec": {"type": "generic", "secretRef": {"name": "hook-token"},
                        "resources": [{"kind": "HelmRelease", "name": "web", "filter": "res.metadata.name =="}]}}),
    ] {
        create(&client, object).await;
    }
    let mut settings = ManagerConfig::local(tempfile::tempdir().unwrap().keep());
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = hook_url(&manager, &client, "images").await;
    let receivers: Api<Receiver> = Api::namespaced(client.clone(), "flux-system");
    let annotated = |name: &'static str| reconcile_requested(&client, name);
    let json_type = [("Content-Type", "application/json".to_string())];

    // Not JSON: `req` is empty, so `req.image` cannot be read: nothing annotated.
    let (status, text) = http_post(&url, &[], br#"{"image": "registry/web:1"}"#).await;
    assert_eq!(status, 500, "{text}");
    assert!(text.contains("no such key: image"), "{text}");
    // Malformed JSON.
    let (status, text) = http_post(&url, &json_type, b"{not json").await;
    assert_eq!(status, 500, "{text}");
    assert!(
        text.starts_with("failed to parse request body as JSON"),
        "{text}"
    );
    for name in ["web", "api", "admin"] {
        assert!(!annotated(name).await, "{name} annotated by a bad call");
    }

    // `web` passes both filters; `api` fails the resourceFilter, `admin` the entry's filter.
    let (status, text) = http_post(
        &url,
        &json_type,
        br#"{"image": "registry/web:1 registry/admin:1"}"#,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(annotated("web").await);
    assert!(!annotated("api").await);
    assert!(!annotated("admin").await);

    let condition = eventually("the broken Receiver's Ready condition", || async {
        let status = receivers.get("broken").await.ok()?.status?;
        status.conditions?.into_iter().find(|c| c.type_ == "Ready")
    })
    .await;
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "InvalidCELExpression")
    );
    assert!(
        condition.message.starts_with(
            "Reconciliation failed terminally due to configuration error: invalid filter expression for resources[0] (kind=\"HelmRelease\", name=\"web\"): failed to parse the CEL expression 'res.metadata.name ==': "
        ),
        "{}",
        condition.message
    );
    manager.shutdown().await.unwrap();
}

/// A commit-status Provider's `commitStatusExpr` names the status (GitLab's `name`) from
/// `event`, `provider` and `alert`; an expression that does not evaluate to a string is
/// reported on the Alert and nothing is sent.
#[tokio::test(flavor = "multi_thread")]
async fn commit_status_expr_names_the_status() {
    let (_cluster, client, config) = cluster("status-expr").await;
    let gitlab = std::sync::Arc::new(WebhookSink::start());
    let address = format!("{}/platform/fleet.git", gitlab.url());
    for object in [
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "gitlab-token", "namespace": "flux-system"},
               "stringData": {"token": "glpat"}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "gitlab", "namespace": "flux-system"},
               "spec": {"type": "gitlab", "address": address, "secretRef": {"name": "gitlab-token"},
                        "commitStatusExpr": "(event.involvedObject.kind + '/' + event.involvedObject.name + '/' + provider.metadata.name + '/' + alert.metadata.name).lowerAscii()"}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "status", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "gitlab"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
               "metadata": {"name": "not-a-string", "namespace": "flux-system"},
               "spec": {"type": "gitlab", "address": address, "secretRef": {"name": "gitlab-token"},
                        "commitStatusExpr": "size(event.involvedObject.name)"}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
               "metadata": {"name": "broken", "namespace": "flux-system"},
               "spec": {"providerRef": {"name": "not-a-string"},
                        "eventSources": [{"kind": "Kustomization", "name": "apps"}]}}),
    ] {
        create(&client, object).await;
    }
    let work = tempfile::tempdir().unwrap();
    let mut settings = ManagerConfig::local(work.path().join("storage"));
    settings.events_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = manager.events_url().unwrap().to_string();
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let event = json!({
        "involvedObject": {"kind": "Kustomization", "namespace": "flux-system", "name": "apps",
                           "apiVersion": "kustomize.toolkit.fluxcd.io/v1"},
        "severity": "error", "timestamp": "2026-12-01T10:00:00Z",
        "message": "health check failed", "reason": "HealthCheckFailed",
        "metadata": {"kustomize.toolkit.fluxcd.io/revision": format!("main@sha1:{sha}")},
        "reportingController": "kustomize-controller"
    });
    let (status, _) = http_post(
        &format!("{url}/"),
        &[],
        &serde_json::to_vec(&event).unwrap(),
    )
    .await;
    assert_eq!(status, 202);
    let got = wait_for(&gitlab, 2).await;
    assert_eq!(
        got[0].path,
        format!(
            "/api/v4/projects/platform%2Ffleet/repository/commits/{sha}/statuses?name=kustomization%2Fapps%2Fgitlab%2Fstatus"
        )
    );
    let posted: Value = serde_json::from_slice(&got[1].body).unwrap();
    assert_eq!(posted["name"], "kustomization/apps/gitlab/status");
    let notes = eventually("the broken Alert's event", || async {
        let notes = alert_events(&client, "broken").await;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(
        notes[0],
        "NotificationDispatchFailed failed to dispatch notification for Kustomization/flux-system/apps: failed to initialize notifier for provider 'not-a-string': commitStatusExpr must evaluate to a string, got 4"
    );
    assert_eq!(
        gitlab.received().len(),
        2,
        "nothing sent for the broken Provider"
    );
    manager.shutdown().await.unwrap();
}

/// A generic-oidc Receiver: no Secret; a call's bearer token must come from a listed issuer
/// (here a local one serving its discovery document and key set), be signed with the issuer's
/// key for the provider's audience, and pass every CEL validation (over `claims` and the
/// provider's `vars`); its claims are `claims` in the filters. Bad calls answer 401 with the
/// reason and annotate nothing; a provider whose validation does not parse makes the Receiver
/// Stalled with Flux's terminal message.
#[tokio::test(flavor = "multi_thread")]
async fn a_generic_oidc_receiver_accepts_only_tokens_its_validations_allow() {
    let (_cluster, client, config) = cluster("oidc").await;
    let signer = ferroflux_testkit::GoogleSigner::new();
    let root = tempfile::tempdir().unwrap();
    let issuer_server =
        ferroflux_testkit::StaticServer::start(root.path(), ferroflux_testkit::Auth::None, None);
    let issuer = issuer_server.url();
    std::fs::create_dir_all(root.path().join(".well-known")).unwrap();
    std::fs::write(
        root.path().join(".well-known/openid-configuration"),
        json!({"issuer": issuer, "jwks_uri": format!("{issuer}/keys")}).to_string(),
    )
    .unwrap();
    std::fs::write(root.path().join("keys"), signer.keys().to_string()).unwrap();
    let provider = json!({"issuerURL": issuer, "audience": "fleet-hooks",
        "variables": [{"name": "repo", "expression": "claims.repository"}],
        "validations": [
            {"expression": "vars.repo == 'org/fleet'", "message": "only org/fleet may call"},
            {"expression": "claims.ref == 'refs/heads/main'", "message": "only main may call"}]});
    for object in [
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "ci", "namespace": "flux-system"},
               "spec": {"type": "generic-oidc", "oidcProviders": [provider],
                        "resourceFilter": "res.metadata.name == claims.environment",
                        "resources": [{"kind": "HelmRelease", "name": "*",
                                       "matchLabels": {"team": "web"}}]}}),
        json!({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
               "metadata": {"name": "broken", "namespace": "flux-system"},
               "spec": {"type": "generic-oidc",
                        "oidcProviders": [{"issuerURL": issuer,
                            "validations": [{"expression": "claims.sub ==", "message": "bad"}]}],
                        "resources": [{"kind": "HelmRelease", "name": "staging"}]}}),
    ] {
        create(&client, object).await;
    }
    for name in ["staging", "production"] {
        create(
            &client,
            json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                   "metadata": {"name": name, "namespace": "flux-system", "labels": {"team": "web"}},
                   "spec": {"interval": "1h", "suspend": true,
                            "chart": {"spec": {"chart": "app",
                                               "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}}),
        )
        .await;
    }
    let mut settings = ManagerConfig::local(tempfile::tempdir().unwrap().keep());
    settings.receiver_addr = Some(([127, 0, 0, 1], 0).into());
    let manager = Manager::start(client.clone(), config, settings)
        .await
        .unwrap();
    let url = hook_url(&manager, &client, "ci").await;
    // Without a Secret the path is the digest of the name and namespace alone, as Flux's.
    assert!(url.ends_with(&ferroflux_api::notification::webhook_path(
        "",
        "ci",
        "flux-system"
    )));

    let receivers: Api<Receiver> = Api::namespaced(client.clone(), "flux-system");
    let stalled = eventually("the broken Receiver's Stalled condition", || async {
        let status = receivers.get("broken").await.ok()?.status?;
        status
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Stalled")
    })
    .await;
    assert_eq!(stalled.reason, "InvalidCELExpression");
    assert!(
        stalled.message.starts_with(&format!(
            "Reconciliation failed terminally due to configuration error: oidcProviders[0] (issuerURL={issuer:?}): invalid expression for validation \"bad\": failed to parse the CEL expression 'claims.sub ==': "
        )),
        "{}",
        stalled.message
    );

    let annotated = |name: &'static str| reconcile_requested(&client, name);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let claims = |repo: &str, git_ref: &str| {
        json!({"iss": issuer, "aud": "fleet-hooks", "repository": repo, "ref": git_ref,
               "environment": "staging", "iat": now, "exp": now + 600})
    };
    let bearer = |token: String| vec![("Authorization", format!("Bearer {token}"))];
    let refused: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![], "the Authorization header is missing or malformed"),
        (
            bearer("not-a-jwt".into()),
            "failed to parse bearer token: token is not a JWT",
        ),
        (
            bearer(signer.token(&json!({"iss": "https://elsewhere.example", "exp": now + 60}))),
            "no oidcProvider configured for issuer \"https://elsewhere.example\"",
        ),
        (
            bearer(
                signer.token(
                    &json!({"iss": issuer, "aud": "notification-controller", "exp": now + 60}),
                ),
            ),
            "failed to verify OIDC token: oidc: expected audience \"fleet-hooks\" got [\"notification-controller\"]",
        ),
        (
            bearer(signer.token(&claims("attacker/fleet", "refs/heads/dev"))),
            "token validation failed: only org/fleet may call; only main may call",
        ),
    ];
    for (headers, message) in refused {
        let (status, text) = http_post(&url, &headers, b"{}").await;
        assert_eq!(
            (status, text.as_str()),
            (401, format!("{message}\n").as_str())
        );
    }
    assert!(!annotated("staging").await && !annotated("production").await);

    let good = signer.token(&claims("org/fleet", "refs/heads/main"));
    let (status, text) = http_post(&url, &bearer(good), b"{}").await;
    assert_eq!(status, 200, "{text}");
    // The filter reads the token's `environment` claim: only staging is annotated.
    assert!(annotated("staging").await);
    assert!(!annotated("production").await);
    // Discovery and keys were read once, and kept.
    let reads: Vec<String> = issuer_server
        .requests()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(reads, ["/.well-known/openid-configuration", "/keys"]);
    manager.shutdown().await.unwrap();
}
