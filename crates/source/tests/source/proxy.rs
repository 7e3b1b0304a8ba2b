//! `proxySecretRef`: fetching and pushing through a forward proxy (a local one that records
//! what it carried; the client tunnels both HTTP and HTTPS with CONNECT), with the proxy's
//! basic auth; a wrong proxy password, a proxy that is down and a proxy with an ssh URL
//! are refused with messages that never hold the password.

use crate::repo::Repo;
use ferroflux_source::{Credentials, FetchOptions, GitRef, GitSource, Proxy, RefUpdate, Signature};
use ferroflux_testkit::{Auth, GitHttpServer, HttpProxy, closed_port, make_tls};
use std::collections::BTreeMap;

const PROXY_PASSWORD: &str = "proxy-pa55-secret";

fn main_ref() -> GitRef {
    GitRef {
        branch: Some("main".into()),
        ..Default::default()
    }
}

fn proxy_secret(address: &str, password: &str) -> Proxy {
    let data: BTreeMap<String, Vec<u8>> = [
        ("address", address),
        ("username", "proxy-user"),
        ("password", password),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
    .collect();
    Proxy::from_secret_data("flux-system/proxy", &data).unwrap()
}

fn fleet() -> Repo {
    let repo = Repo::new("fleet");
    repo.write("apps/app.yaml", b"kind: ConfigMap\n");
    repo.commit("one");
    repo.push(&["main"]);
    repo
}

#[test]
fn fetches_and_pushes_go_through_the_proxy() {
    let repo = fleet();
    let proxy = HttpProxy::start(Some(("proxy-user", PROXY_PASSWORD)));

    // Plain HTTP: tunnelled with CONNECT too (ureq tunnels every scheme).
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let creds = Credentials::default().with_proxy(proxy_secret(&proxy.url(), PROXY_PASSWORD));
    let src = GitSource::new(
        &server.url("fleet"),
        &main_ref(),
        creds,
        FetchOptions::default(),
    )
    .unwrap();
    let fetched = src.fetch(&src.resolve().unwrap()).unwrap();
    let tunnel = format!("CONNECT 127.0.0.1:{} HTTP/1.1", server.addr.port());
    let tunnels = || proxy.requests().iter().filter(|l| **l == tunnel).count();
    let before_push = tunnels();
    assert!(before_push >= 1, "{:?}", proxy.requests());
    // A push goes the same way.
    let change = vec![("apps/app.yaml".to_string(), b"kind: Secret\n".to_vec())];
    let author = Signature {
        name: "bot".into(),
        email: "bot@example.com".into(),
        time: 1_700_000_000,
    };
    let commit = fetched
        .commit_files(&change, &author, "through the proxy", None)
        .unwrap()
        .unwrap();
    let main = RefUpdate {
        name: "refs/heads/main".into(),
        force: false,
    };
    src.push(&fetched, &commit, &[main], &[]).unwrap();
    assert!(tunnels() > before_push, "{:?}", proxy.requests());
    assert_eq!(
        repo.git(&["ls-remote", "origin", "main"])
            .split('\t')
            .next(),
        Some(commit.id.to_string().as_str())
    );

    // HTTPS: a CONNECT tunnel.
    let tls = make_tls();
    let secure = GitHttpServer::start(repo.root.path(), Auth::None, Some(&tls));
    let data: BTreeMap<String, Vec<u8>> =
        [("ca.crt".to_string(), tls.ca_pem.as_bytes().to_vec())].into();
    let creds = Credentials::from_secret_data(&data)
        .unwrap()
        .with_proxy(proxy_secret(&proxy.url(), PROXY_PASSWORD));
    let src = GitSource::new(
        &secure.url("fleet"),
        &main_ref(),
        creds,
        FetchOptions::default(),
    )
    .unwrap();
    assert_eq!(src.resolve().unwrap().commit, commit.id.to_string());
    assert!(
        proxy
            .requests()
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT localhost:{}", secure.addr.port()))),
        "{:?}",
        proxy.requests()
    );
}

#[test]
fn bad_proxies_are_named_without_their_password() {
    let repo = fleet();
    let server = GitHttpServer::start(repo.root.path(), Auth::None, None);
    let proxy = HttpProxy::start(Some(("proxy-user", PROXY_PASSWORD)));
    let wrong = format!("{PROXY_PASSWORD}-wrong");
    for (address, password) in [
        (proxy.url(), wrong.as_str()),
        (
            format!("http://127.0.0.1:{}", closed_port()),
            PROXY_PASSWORD,
        ),
    ] {
        let creds = Credentials::default().with_proxy(proxy_secret(&address, password));
        let src = GitSource::new(
            &server.url("fleet"),
            &main_ref(),
            creds,
            FetchOptions::default(),
        )
        .unwrap();
        let err = src.resolve().unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains(PROXY_PASSWORD), "{text}");
        assert!(
            text.contains("407") || text.contains("Connection refused"),
            "{text}"
        );
    }
    assert!(
        proxy.requests().is_empty(),
        "nothing passed without the password"
    );

    let ssh = GitSource::new(
        "ssh://git@127.0.0.1:22/fleet.git",
        &main_ref(),
        Credentials {
            identity: Some(b"key".to_vec()),
            known_hosts: Some(b"hosts".to_vec()),
            ..Default::default()
        }
        .with_proxy(proxy_secret(&proxy.url(), PROXY_PASSWORD)),
        FetchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        ssh.to_string(),
        "invalid credentials: a proxy (proxySecretRef) is only used for http(s) URLs"
    );
    let missing = Proxy::from_secret_data("flux-system/proxy", &BTreeMap::new()).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "invalid credentials: secret 'flux-system/proxy': key 'address' not found"
    );
}
