//! `certSecretRef`: the TLS keys read as Flux reads them, and a send to a local HTTPS server
//! that requires a client certificate (mutual TLS).

use crate::test_event;
use ferroflux_api::notification::ProviderType;
use ferroflux_notification::payload::{self, ProviderConfig};
use ferroflux_notification::send::{Retry, Sender};
use ferroflux_notification::tls::{self, TlsFiles};
use ferroflux_testkit::WebhookSink;
use std::collections::BTreeMap;
use std::time::Duration;

fn once() -> Retry {
    Retry {
        attempts: 1,
        first: Duration::from_millis(1),
        max: Duration::from_millis(1),
    }
}

fn secret(keys: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    keys.iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect()
}

fn generic(address: String, files: TlsFiles) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderType::Generic,
        address,
        ca_pem: files.ca_pem,
        client_pem: files.cert_pem.zip(files.key_pem),
        ..Default::default()
    }
}

#[test]
fn a_client_certificate_from_cert_secret_ref_passes_a_server_that_requires_one() {
    let (sink, pem) = WebhookSink::start_mtls();
    let files = tls::from_secret(
        "flux-system/mtls",
        &secret(&[
            ("ca.crt", &pem.ca_pem),
            ("tls.crt", &pem.client_cert_pem),
            ("tls.key", &pem.client_key_pem),
        ]),
    )
    .unwrap();
    let p = generic(format!("{}/hook", sink.url()), files);
    let plan = payload::plan(&p, &test_event()).unwrap();
    Sender::new(&p, once()).unwrap().send(&plan).unwrap();
    let got = sink.wait_for(1, Duration::from_secs(20));
    assert_eq!(got[0].path, "/hook");
    let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body["involvedObject"]["name"], "webapp");
}

#[test]
fn the_server_refuses_a_client_without_a_certificate_or_with_another_cas() {
    let (sink, pem) = WebhookSink::start_mtls();
    let url = format!("{}/hook", sink.url());
    // The CA alone: the server is trusted, but it wants a client certificate.
    let ca_only = tls::from_secret("ns/ca", &secret(&[("ca.crt", &pem.ca_pem)])).unwrap();
    // A pair the server's CA did not sign.
    let stranger = tls::from_secret(
        "ns/stranger",
        &secret(&[
            ("ca.crt", &pem.ca_pem),
            ("tls.crt", &pem.stranger_cert_pem),
            ("tls.key", &pem.stranger_key_pem),
        ]),
    )
    .unwrap();
    for files in [ca_only, stranger] {
        let p = generic(url.clone(), files);
        let plan = payload::plan(&p, &test_event()).unwrap();
        let err = Sender::new(&p, once()).unwrap().send(&plan).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "failed to execute request to {} after 1 attempt(s)",
                sink.url()
            )),
            "{text}"
        );
    }
    // Without ca.crt the system's roots do not know the test CA.
    let pair_only = tls::from_secret(
        "ns/pair",
        &secret(&[
            ("tls.crt", &pem.client_cert_pem),
            ("tls.key", &pem.client_key_pem),
        ]),
    )
    .unwrap();
    assert_eq!(pair_only.ca_pem, None);
    let p = generic(url, pair_only);
    let plan = payload::plan(&p, &test_event()).unwrap();
    Sender::new(&p, once()).unwrap().send(&plan).unwrap_err();
    assert!(sink.received().is_empty(), "no request got through");
}

#[test]
fn deprecated_key_names_are_read_and_the_standard_names_win() {
    let legacy = tls::from_secret(
        "ns/s",
        &secret(&[("caFile", "CA"), ("certFile", "CERT"), ("keyFile", "KEY")]),
    )
    .unwrap();
    assert_eq!(
        legacy,
        TlsFiles {
            ca_pem: Some(b"CA".to_vec()),
            cert_pem: Some(b"CERT".to_vec()),
            key_pem: Some(b"KEY".to_vec()),
        }
    );
    let both = tls::from_secret("ns/s", &secret(&[("ca.crt", "NEW"), ("caFile", "OLD")])).unwrap();
    assert_eq!(both.ca_pem, Some(b"NEW".to_vec()));
}

#[test]
fn half_a_pair_or_no_tls_key_is_refused_naming_the_keys() {
    let err = |keys: &[(&str, &str)]| {
        tls::from_secret("flux-system/certs", &secret(keys))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(&[("tls.crt", "CERT"), ("ca.crt", "CA")]),
        "secret 'flux-system/certs' contains 'tls.crt' but missing 'tls.key'"
    );
    assert_eq!(
        err(&[("keyFile", "KEY")]),
        "secret 'flux-system/certs' contains 'tls.key' but missing 'tls.crt'"
    );
    assert_eq!(
        err(&[("token", "T"), ("ca.crt", "")]),
        "secret 'flux-system/certs' must contain either 'ca.crt' or both 'tls.crt' and 'tls.key'"
    );
}

#[test]
fn an_unreadable_client_key_is_a_config_error() {
    let p = ProviderConfig {
        kind: ProviderType::Generic,
        address: "https://127.0.0.1:1/hook".into(),
        client_pem: Some((b"not a pem".to_vec(), b"not a key".to_vec())),
        ..Default::default()
    };
    let err = Sender::new(&p, once()).err().unwrap().to_string();
    assert!(
        err.starts_with("failed to parse TLS certificate and key:"),
        "{err}"
    );
}

fn provider_object(spec: serde_json::Value) -> ferroflux_api::notification::Provider {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
        "metadata": {"name": "p", "namespace": "ns"}, "spec": spec,
    }))
    .unwrap()
}

#[test]
fn a_provider_reads_tls_from_cert_secret_ref_and_commit_status_types_from_secret_ref() {
    use ferroflux_notification::config::{provider_config, secret_names};
    let secrets = BTreeMap::from([
        (
            "auth".to_string(),
            secret(&[("token", "T"), ("ca.crt", "CA-IN-AUTH")]),
        ),
        (
            "certs".to_string(),
            secret(&[("tls.crt", "CERT"), ("tls.key", "KEY")]),
        ),
    ]);
    // certSecretRef wins; its pair is the client certificate.
    let p = provider_object(serde_json::json!({"type": "github",
        "address": "https://github.com/org/repo", "secretRef": {"name": "auth"},
        "certSecretRef": {"name": "certs"}}));
    assert_eq!(secret_names(&p), ["auth", "certs"]);
    let config = provider_config(&p, "ns", "uid", &secrets).unwrap();
    assert_eq!(config.ca_pem, None);
    assert_eq!(config.client_pem, Some((b"CERT".to_vec(), b"KEY".to_vec())));
    // Without it, a commit-status type takes ca.crt from its secretRef; a chat type does not.
    let p = provider_object(serde_json::json!({"type": "github",
        "address": "https://github.com/org/repo", "secretRef": {"name": "auth"}}));
    let config = provider_config(&p, "ns", "uid", &secrets).unwrap();
    assert_eq!(config.ca_pem, Some(b"CA-IN-AUTH".to_vec()));
    let p = provider_object(serde_json::json!({"type": "slack",
        "address": "https://hooks.slack.com/x", "secretRef": {"name": "auth"}}));
    assert_eq!(
        provider_config(&p, "ns", "uid", &secrets).unwrap().ca_pem,
        None
    );
    // A Secret that is not there, and half a pair, are named.
    let p = provider_object(serde_json::json!({"type": "slack",
        "address": "https://hooks.slack.com/x", "certSecretRef": {"name": "absent"}}));
    assert_eq!(
        provider_config(&p, "ns", "uid", &secrets).unwrap_err(),
        "failed to get secret 'ns/absent': not found"
    );
    let half = BTreeMap::from([("certs".to_string(), secret(&[("tls.key", "KEY")]))]);
    let p = provider_object(serde_json::json!({"type": "generic",
        "address": "https://example.com/hook", "certSecretRef": {"name": "certs"}}));
    assert_eq!(
        provider_config(&p, "ns", "uid", &half).unwrap_err(),
        "failed to get TLS config: secret 'ns/certs' contains 'tls.key' but missing 'tls.crt'"
    );
}
