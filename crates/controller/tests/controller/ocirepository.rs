//! The OCIRepository reconciler against a real API server (the devcluster) and a real registry
//! (Debian's docker-registry), then a Kustomization applying what it stored: semver and tag
//! refs, the no-op poll, promotion by tag, the registry going down and coming back, wrong
//! credentials, unknown tags, `layerSelector` copy, unsupported providers, deletion.

use std::collections::BTreeMap;
use std::path::Path;

use ferroflux_api::{Kustomization, OCIRepository};
use ferroflux_controller::ocirepository::{Options, reconcile};
use ferroflux_oci::artifact::{self, Metadata};
use ferroflux_oci::{Auth, Client, ClientOptions, Reference};
use ferroflux_source::Storage;
use ferroflux_testkit::{Registry, RegistryOptions};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness;

fn condition(obj: &OCIRepository, t: &str) -> (String, String, String) {
    let c = obj
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == t))
        .unwrap_or_else(|| panic!("no {t} condition in {:?}", obj.status));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// Pushes a ConfigMap manifest whose data says `version`, tagged `tag`; returns the digest.
fn push(reg: &Registry, auth: Auth, repo: &str, tag: &str, version: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("configmap.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: default\ndata:\n  version: \"{version}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.md"), "left out by spec.ignore\n").unwrap();
    let c = Client::new(
        &reg.host(),
        ClientOptions {
            auth,
            ..Default::default()
        },
    )
    .unwrap();
    let r = Reference::parse(&format!("oci://{}/{repo}:{tag}", reg.host())).unwrap();
    let meta = Metadata {
        source: Some("https://github.com/example/fleet".into()),
        revision: Some(format!("main@sha1:{version}")),
        created: None,
        annotations: BTreeMap::new(),
    };
    artifact::push(&c, &r, dir.path(), &meta, &|_: &Path, _| false)
        .unwrap()
        .digest
}

fn oci_repository(name: &str, spec: serde_json::Value) -> OCIRepository {
    serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": spec,
    }))
    .unwrap()
}

fn files_of(storage: &Storage, rel: &str) -> BTreeMap<String, String> {
    let f = std::fs::File::open(storage.local_path(rel)).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = BTreeMap::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        if e.header().entry_type().is_file() {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut e, &mut s).unwrap();
            out.insert(e.path().unwrap().display().to_string(), s);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_promotes_survives_outage_and_feeds_a_kustomization() {
    let mut reg = Registry::start(RegistryOptions::default());
    let d100 = push(&reg, Auth::Anonymous, "fleet/app", "1.0.0", "1.0.0");
    let env = harness::start("oci").await;
    let client = env.client.clone();

    // The artifact server over the storage, as the controller process runs it.
    let store = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(ferroflux_source::serve(
        store.path().to_path_buf(),
        listener,
    ));
    let settings = Options {
        storage: Storage::new(store.path(), &base).unwrap(),
    };
    let api: Api<OCIRepository> = Api::namespaced(client.clone(), "flux-system");
    let url = format!("oci://{}/fleet/app", reg.host());
    api.create(
        &PostParams::default(),
        &oci_repository(
            "app",
            json!({"url": url, "interval": "5m", "ref": {"semver": ">=1.0.0"}, "ignore": "*.md"}),
        ),
    )
    .await
    .unwrap();

    let done = reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    assert_eq!(done.event.as_ref().unwrap().1, "NewArtifact");
    let got = api.get("app").await.unwrap();
    let rev = format!("1.0.0@{d100}");
    assert_eq!(
        condition(&got, "Ready"),
        (
            "True".into(),
            "Succeeded".into(),
            format!("stored artifact for digest '{rev}'")
        )
    );
    let a = got.status.as_ref().unwrap().artifact.clone().unwrap();
    assert_eq!(a.revision, rev);
    assert_eq!(
        a.path,
        format!(
            "ocirepository/flux-system/app/{}.tar.gz",
            d100.trim_start_matches("sha256:")
        )
    );
    assert_eq!(
        a.metadata.as_ref().unwrap()["org.opencontainers.image.revision"],
        "main@sha1:1.0.0"
    );
    let files = files_of(&settings.storage, &a.path);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["configmap.yaml"],
        "spec.ignore applied"
    );

    // A Kustomization built from it applies the ConfigMap.
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let ks = harness::kustomization(
        "app",
        "app",
        json!({"sourceRef": {"kind": "OCIRepository", "name": "app"}}),
    );
    kss.create(&PostParams::default(), &ks).await.unwrap();
    harness::ready_message(&kss, "app", "applied 1.0.0", |m| m.contains(&rev)).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        cms.get("app-config").await.unwrap().data.unwrap()["version"],
        "1.0.0"
    );

    // The no-op poll: nothing downloaded, no event.
    let again = reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    assert!(again.event.is_none());

    // A new version in range is followed, and the Kustomization applies it.
    let d110 = push(&reg, Auth::Anonymous, "fleet/app", "1.1.0", "1.1.0");
    reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    let rev110 = format!("1.1.0@{d110}");
    assert_eq!(
        api.get("app")
            .await
            .unwrap()
            .status
            .unwrap()
            .artifact
            .unwrap()
            .revision,
        rev110
    );
    harness::ready_message(&kss, "app", "applied 1.1.0", |m| m.contains(&rev110)).await;

    // Promotion by tag: production follows `production`, which `tag artifact` moves.
    let c = Client::new(&reg.host(), ClientOptions::default()).unwrap();
    let r = Reference::parse(&format!("{url}:1.0.0")).unwrap();
    c.tag(&r, "production").unwrap();
    api.create(
        &PostParams::default(),
        &oci_repository(
            "prod",
            json!({"url": url, "interval": "5m", "ref": {"tag": "production"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "prod")
        .await
        .unwrap();
    let prod = api
        .get("prod")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(prod.revision, format!("production@{d100}"));
    c.tag(&r.with_tag("1.1.0"), "production").unwrap();
    reconcile(&client, &settings, "flux-system", "prod")
        .await
        .unwrap();
    let prod = api
        .get("prod")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    assert_eq!(prod.revision, format!("production@{d110}"));

    // The registry goes down: Ready=False with the reason, the last artifact stays served.
    reg.stop();
    let failed = reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    assert_eq!(failed.event.as_ref().unwrap().0, "Warning");
    let got = api.get("app").await.unwrap();
    let (st, reason, msg) = condition(&got, "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "OCIArtifactPullFailed")
    );
    assert!(
        msg.starts_with(&format!("cannot reach registry {}", reg.host())),
        "{msg}"
    );
    let kept = got.status.unwrap().artifact.unwrap();
    assert_eq!(kept.revision, rev110);
    let served = http_get(&kept.url).await;
    assert_eq!(
        harness::digest(&served),
        kept.digest,
        "last artifact still served"
    );
    // And it comes back.
    reg.restart();
    reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    let got = api.get("app").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True");

    // An unknown tag: the message lists the closest tags.
    api.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"ref": {"semver": null, "tag": "1.2.0"}}})),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    let (st, reason, msg) = condition(&api.get("app").await.unwrap(), "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "OCIArtifactPullFailed")
    );
    assert_eq!(
        msg,
        format!(
            "fleet/app:1.2.0: not found in {}, closest tags: 1.1.0, 1.0.0, production",
            reg.host()
        )
    );

    // No tag in range.
    api.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"ref": {"tag": null, "semver": "^2"}}})),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "app")
        .await
        .unwrap();
    let (_, _, msg) = condition(&api.get("app").await.unwrap(), "Ready");
    assert_eq!(
        msg,
        format!(
            "no tag of {}/fleet/app matches \"^2\", closest tags: 1.1.0, 1.0.0",
            reg.host()
        )
    );

    // layerSelector copy: the layer is stored byte for byte.
    api.create(
        &PostParams::default(),
        &oci_repository(
            "copy",
            json!({"url": url, "interval": "5m", "ref": {"tag": "1.0.0"},
                   "layerSelector": {"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "operation": "copy"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "copy")
        .await
        .unwrap();
    let copied = api
        .get("copy")
        .await
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap();
    let layer = artifact::resolve(&c, &r).unwrap().manifest.layers[0].clone();
    assert_eq!(copied.digest, layer.digest);
    assert_eq!(
        files_of(&settings.storage, &copied.path).len(),
        2,
        "nothing ignored on copy"
    );

    // A cloud provider: not supported yet, stalled.
    api.create(
        &PostParams::default(),
        &oci_repository(
            "aws",
            json!({"url": url, "interval": "5m", "provider": "aws"}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "aws")
        .await
        .unwrap();
    let got = api.get("aws").await.unwrap();
    assert_eq!(
        condition(&got, "Stalled"),
        (
            "True".into(),
            "UnsupportedFeature".into(),
            "not supported yet: provider 'aws' (only 'generic')".into()
        )
    );

    // Delete: the finalizer removes the artifacts.
    kss.delete("app", &DeleteParams::default()).await.unwrap();
    api.delete("copy", &DeleteParams::default()).await.unwrap();
    reconcile(&client, &settings, "flux-system", "copy")
        .await
        .unwrap();
    assert!(!settings.storage.exists(&copied.path));
    assert!(api.get_opt("copy").await.unwrap().is_none());
}

/// GET over plain HTTP/1.1 (the artifact server's answer body).
async fn http_get(url: &str) -> Vec<u8> {
    let url = url.to_string();
    tokio::task::spawn_blocking(move || {
        let rest = url.trim_start_matches("http://");
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = std::net::TcpStream::connect(host).unwrap();
        use std::io::{Read, Write};
        write!(
            s,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        let at = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        buf[at + 4..].to_vec()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_from_a_docker_config_secret() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "good-pass".into())),
        ..Default::default()
    });
    push(
        &reg,
        Auth::from_creds("flux:good-pass"),
        "private/app",
        "1.0.0",
        "1",
    );
    let (_cluster, client) = ferroflux_testkit::flux_cluster("ocicreds").await;
    let store = tempfile::tempdir().unwrap();
    let settings = Options {
        storage: Storage::new(store.path(), "http://127.0.0.1:1").unwrap(),
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let config = |pass: &str| {
        json!({"auths": {reg.host(): {"username": "flux", "password": pass}}}).to_string()
    };
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "regcred", "namespace": "flux-system"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": config("Wr0ng-S3cret")}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let api: Api<OCIRepository> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &oci_repository(
            "private",
            json!({"url": format!("oci://{}/private/app", reg.host()), "interval": "5m",
                   "ref": {"tag": "1.0.0"}, "secretRef": {"name": "regcred"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "private")
        .await
        .unwrap();
    let got = api.get("private").await.unwrap();
    let (st, reason, msg) = condition(&got, "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "AuthenticationFailed")
    );
    assert!(
        msg.starts_with(&format!(
            "401 Unauthorized: registry {} refused the credentials for private/app",
            reg.host()
        )),
        "{msg}"
    );
    assert!(
        !serde_json::to_string(&got)
            .unwrap()
            .contains("Wr0ng-S3cret")
    );

    // The right password: Ready.
    secrets
        .patch(
            "regcred",
            &PatchParams::default(),
            &Patch::Merge(&json!({"stringData": {".dockerconfigjson": config("good-pass")}})),
        )
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "private")
        .await
        .unwrap();
    assert_eq!(
        condition(&api.get("private").await.unwrap(), "Ready").0,
        "True"
    );
}

/// Mutual TLS: docker-registry requires client certificates signed by its client CA. The
/// OCIRepository's `certSecretRef` (ca.crt, tls.crt, tls.key) gets it in; no client
/// certificate, or one from another CA, gives a message that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_with_a_cert_secret_ref() {
    let reg = Registry::start(RegistryOptions {
        tls: true,
        client_certs: true,
        ..Default::default()
    });
    let ca = reg.ca_pem.clone().unwrap();
    let good = reg.client_cert.clone().unwrap();
    {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("configmap.yaml"), "kind: ConfigMap\n").unwrap();
        let c = Client::new(
            &reg.host(),
            ClientOptions {
                ca_pem: Some(ca.clone().into_bytes()),
                client_cert: Some((
                    good.cert_pem.clone().into_bytes(),
                    good.key_pem.clone().into_bytes(),
                )),
                ..Default::default()
            },
        )
        .unwrap();
        let r = Reference::parse(&format!("oci://{}/mtls/app:1.0.0", reg.host())).unwrap();
        artifact::push(&c, &r, dir.path(), &Metadata::default(), &|_: &Path, _| {
            false
        })
        .unwrap();
    }
    let (_cluster, client) = ferroflux_testkit::flux_cluster("ocimtls").await;
    let store = tempfile::tempdir().unwrap();
    let settings = Options {
        storage: Storage::new(store.path(), "http://127.0.0.1:1").unwrap(),
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    let tls_secret = |data: serde_json::Value| -> Secret {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "registry-tls", "namespace": "flux-system"},
            "stringData": data
        }))
        .unwrap()
    };
    // Only the CA: the registry asks for a client certificate and gets none.
    secrets
        .create(&PostParams::default(), &tls_secret(json!({"ca.crt": ca})))
        .await
        .unwrap();
    let api: Api<OCIRepository> = Api::namespaced(client.clone(), "flux-system");
    api.create(
        &PostParams::default(),
        &oci_repository(
            "mtls",
            json!({"url": format!("oci://{}/mtls/app", reg.host()), "interval": "5m",
                   "ref": {"tag": "1.0.0"}, "certSecretRef": {"name": "registry-tls"}}),
        ),
    )
    .await
    .unwrap();
    reconcile(&client, &settings, "flux-system", "mtls")
        .await
        .unwrap();
    let (st, reason, msg) = condition(&api.get("mtls").await.unwrap(), "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "OCIArtifactPullFailed")
    );
    assert!(
        msg.contains(&reg.host()) && msg.contains("client certificate"),
        "the message names the registry and the missing client certificate: {msg}"
    );

    // A client certificate from a CA the registry does not trust.
    let (_, stranger) = ferroflux_testkit::client_ca_and_cert("another CA");
    secrets
        .replace(
            "registry-tls",
            &PostParams::default(),
            &tls_secret(
                json!({"ca.crt": ca, "tls.crt": stranger.cert_pem, "tls.key": stranger.key_pem}),
            ),
        )
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "mtls")
        .await
        .unwrap();
    let (st, _, msg) = condition(&api.get("mtls").await.unwrap(), "Ready");
    assert_eq!(st, "False");
    assert!(
        msg.contains(&reg.host()) && msg.contains("client certificate"),
        "the message names the refused client certificate: {msg}"
    );
    assert!(!msg.contains("PRIVATE KEY"), "{msg}");

    // The right one: Ready, the artifact stored.
    secrets
        .replace(
            "registry-tls",
            &PostParams::default(),
            &tls_secret(json!({"ca.crt": ca, "tls.crt": good.cert_pem, "tls.key": good.key_pem})),
        )
        .await
        .unwrap();
    reconcile(&client, &settings, "flux-system", "mtls")
        .await
        .unwrap();
    let got = api.get("mtls").await.unwrap();
    let (st, _, msg) = condition(&got, "Ready");
    assert_eq!(st, "True", "{msg}");
    assert!(
        got.status
            .unwrap()
            .artifact
            .unwrap()
            .revision
            .starts_with("1.0.0@sha256:")
    );
}

/// `proxySecretRef`: the registry is reached through the proxy the Secret names (its basic
/// auth included); a proxy Secret without `address` is refused with its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_go_through_the_proxy_secret() {
    let reg = Registry::start(RegistryOptions::default());
    push(&reg, Auth::Anonymous, "app", "1.0.0", "1");
    let proxy = ferroflux_testkit::HttpProxy::start(Some(("user", "oci-proxy-pw")));
    let (_cluster, client) = ferroflux_testkit::flux_cluster("ociproxy").await;
    let store = tempfile::tempdir().unwrap();
    let settings = Options {
        storage: Storage::new(store.path(), "http://127.0.0.1:1").unwrap(),
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "flux-system");
    for (name, data) in [
        (
            "proxy",
            json!({"address": proxy.url(), "username": "user", "password": "oci-proxy-pw"}),
        ),
        ("no-address", json!({"username": "user"})),
    ] {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "flux-system"},
            "stringData": data
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let api: Api<OCIRepository> = Api::namespaced(client.clone(), "flux-system");
    for (name, secret) in [("proxied", "proxy"), ("bad-proxy", "no-address")] {
        api.create(
            &PostParams::default(),
            &oci_repository(
                name,
                json!({"url": format!("oci://{}/app", reg.host()), "interval": "5m",
                       "ref": {"tag": "1.0.0"}, "proxySecretRef": {"name": secret}}),
            ),
        )
        .await
        .unwrap();
        reconcile(&client, &settings, "flux-system", name)
            .await
            .unwrap();
    }
    let got = api.get("proxied").await.unwrap();
    assert_eq!(condition(&got, "Ready").0, "True", "{:?}", got.status);
    assert!(
        proxy
            .requests()
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT {}", reg.host()))),
        "{:?}",
        proxy.requests()
    );
    let (st, reason, msg) = condition(&api.get("bad-proxy").await.unwrap(), "Ready");
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "AuthenticationFailed")
    );
    assert_eq!(
        msg,
        "failed to configure proxy options: secret 'flux-system/no-address': key 'address' not found"
    );
}
