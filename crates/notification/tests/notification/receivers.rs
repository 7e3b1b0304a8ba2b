//! Receiver verification per type: good, bad and missing signatures, event filters, pings.

use ferroflux_api::notification::ReceiverType;
use ferroflux_notification::payload::hmac_sha256_hex;
use ferroflux_notification::receiver::verify;
use ferroflux_notification::sha1::hmac_sha1;
use std::collections::BTreeMap;

const TOKEN: &str = "receiver-token";
const BODY: &[u8] = br#"{"ref":"refs/heads/main"}"#;

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect()
}

fn sha1_sig(body: &[u8], token: &str) -> String {
    format!("sha1={}", hex(body, token))
}

fn hex(body: &[u8], token: &str) -> String {
    hmac_sha1(token.as_bytes(), body)
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn github_sig(body: &[u8], token: &str) -> String {
    format!("sha256={}", hmac_sha256_hex(token.as_bytes(), body))
}

#[test]
fn github_push_with_a_good_signature_passes_the_events_filter() {
    let h = headers(&[
        ("X-Hub-Signature-256", &github_sig(BODY, TOKEN)),
        ("X-GitHub-Event", "push"),
    ]);
    let v = verify(ReceiverType::Github, TOKEN, &["push".into()], &h, BODY).unwrap();
    assert_eq!(v.event.as_deref(), Some("push"));
    assert!(!v.ping);
    // An event outside the filter is refused (400), not unauthorised.
    let err = verify(ReceiverType::Github, TOKEN, &["release".into()], &h, BODY).unwrap_err();
    assert_eq!(err.status, 400);
    assert_eq!(err.message, "the GitHub event \"push\" is not authorised");
}

#[test]
fn github_bad_or_missing_signature_is_401_without_the_token() {
    let bad = headers(&[
        ("X-Hub-Signature-256", &github_sig(BODY, "wrong")),
        ("X-GitHub-Event", "push"),
    ]);
    let err = verify(ReceiverType::Github, TOKEN, &[], &bad, BODY).unwrap_err();
    assert_eq!(err.status, 401);
    assert_eq!(
        err.message,
        "the GitHub signature header is invalid: unable to validate HMAC signature: the payload signature does not match"
    );
    assert!(!err.message.contains(TOKEN));
    // A body changed after signing fails too.
    let good = headers(&[("X-Hub-Signature-256", &github_sig(BODY, TOKEN))]);
    assert_eq!(
        verify(ReceiverType::Github, TOKEN, &[], &good, b"{}")
            .unwrap_err()
            .status,
        401
    );
    let missing = headers(&[("X-GitHub-Event", "push")]);
    let err = verify(ReceiverType::Github, TOKEN, &[], &missing, BODY).unwrap_err();
    assert_eq!(err.status, 401);
    assert_eq!(
        err.message,
        "the GitHub signature header is invalid: missing X-Hub-Signature-256"
    );
}

#[test]
fn github_ping_is_answered_every_time_and_reconciles_nothing() {
    let body = br#"{"zen":"Keep it logically awesome."}"#;
    let h = headers(&[
        ("X-Hub-Signature-256", &github_sig(body, TOKEN)),
        ("X-GitHub-Event", "ping"),
    ]);
    for _ in 0..2 {
        let v = verify(ReceiverType::Github, TOKEN, &["push".into()], &h, body).unwrap();
        assert!(v.ping);
    }
    // A replayed ping with another body (or key) is not accepted.
    let err = verify(ReceiverType::Github, TOKEN, &[], &h, b"{}").unwrap_err();
    assert_eq!(err.status, 401);
}

#[test]
fn gitlab_token_header_and_event_filter() {
    let h = headers(&[("X-Gitlab-Token", TOKEN), ("X-Gitlab-Event", "Push Hook")]);
    verify(ReceiverType::Gitlab, TOKEN, &["Push Hook".into()], &h, BODY).unwrap();
    let wrong = headers(&[("X-Gitlab-Token", "nope"), ("X-Gitlab-Event", "Push Hook")]);
    let err = verify(ReceiverType::Gitlab, TOKEN, &[], &wrong, BODY).unwrap_err();
    assert_eq!(err.status, 401);
    assert_eq!(
        err.message,
        "the X-Gitlab-Token header value does not match the receiver token"
    );
    let missing = headers(&[("X-Gitlab-Event", "Push Hook")]);
    assert_eq!(
        verify(ReceiverType::Gitlab, TOKEN, &[], &missing, BODY)
            .unwrap_err()
            .status,
        401
    );
    let tag = headers(&[
        ("X-Gitlab-Token", TOKEN),
        ("X-Gitlab-Event", "Tag Push Hook"),
    ]);
    assert_eq!(
        verify(
            ReceiverType::Gitlab,
            TOKEN,
            &["Push Hook".into()],
            &tag,
            BODY
        )
        .unwrap_err()
        .status,
        400
    );
}

#[test]
fn generic_hmac_and_generic() {
    let h = headers(&[("X-Signature", &github_sig(BODY, TOKEN))]);
    verify(ReceiverType::GenericHmac, TOKEN, &[], &h, BODY).unwrap();
    let err = verify(ReceiverType::GenericHmac, TOKEN, &[], &headers(&[]), BODY).unwrap_err();
    assert_eq!(err.status, 401);
    assert_eq!(
        err.message,
        "unable to validate HMAC signature: missing X-Signature header"
    );
    // SHA-1 signatures are accepted as go-github accepts them; other algorithms are not.
    let sha1 = headers(&[("X-Signature", &sha1_sig(BODY, TOKEN))]);
    verify(ReceiverType::GenericHmac, TOKEN, &[], &sha1, BODY).unwrap();
    let md5 = headers(&[("X-Signature", "md5=0011")]);
    assert_eq!(
        verify(ReceiverType::GenericHmac, TOKEN, &[], &md5, BODY)
            .unwrap_err()
            .message,
        "unable to validate HMAC signature: algorithm 'md5' is not supported, use sha256"
    );
    // generic: the secret path is the authentication.
    verify(ReceiverType::Generic, TOKEN, &[], &headers(&[]), b"").unwrap();
}

#[test]
fn registries_and_unsupported_types() {
    let harbor = headers(&[("Authorization", TOKEN)]);
    verify(ReceiverType::Harbor, TOKEN, &[], &harbor, b"{}").unwrap();
    assert_eq!(
        verify(ReceiverType::Harbor, TOKEN, &[], &headers(&[]), b"{}")
            .unwrap_err()
            .status,
        401
    );
    verify(
        ReceiverType::Dockerhub,
        TOKEN,
        &[],
        &headers(&[]),
        br#"{"push_data":{"tag":"v1"}}"#,
    )
    .unwrap();
    let err = verify(ReceiverType::Quay, TOKEN, &[], &headers(&[]), b"not json").unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (400, "cannot decode Quay webhook payload")
    );
}

#[test]
fn github_legacy_sha1_signature_is_accepted_when_no_sha256_one_is_sent() {
    let legacy = headers(&[
        ("X-Hub-Signature", &sha1_sig(BODY, TOKEN)),
        ("X-GitHub-Event", "push"),
    ]);
    let v = verify(ReceiverType::Github, TOKEN, &["push".into()], &legacy, BODY).unwrap();
    assert_eq!(v.event.as_deref(), Some("push"));
    let bad = headers(&[
        ("X-Hub-Signature", &sha1_sig(BODY, "wrong")),
        ("X-GitHub-Event", "push"),
    ]);
    let err = verify(ReceiverType::Github, TOKEN, &[], &bad, BODY).unwrap_err();
    assert_eq!(err.status, 401);
    assert_eq!(
        err.message,
        "the GitHub signature header is invalid: unable to validate HMAC signature: the payload signature does not match"
    );
    // The SHA-256 header, when sent, is the one checked: a good legacy one does not rescue a
    // bad SHA-256 one.
    let both = headers(&[
        ("X-Hub-Signature-256", &github_sig(BODY, "wrong")),
        ("X-Hub-Signature", &sha1_sig(BODY, TOKEN)),
    ]);
    assert_eq!(
        verify(ReceiverType::Github, TOKEN, &[], &both, BODY)
            .unwrap_err()
            .status,
        401
    );
}

#[test]
fn nexus_signature_is_a_bare_hmac_sha1_of_the_body() {
    let body = br#"{"action":"CREATED","repositoryName":"docker-hosted"}"#;
    let good = headers(&[("X-Nexus-Webhook-Signature", &hex(body, TOKEN))]);
    verify(ReceiverType::Nexus, TOKEN, &[], &good, body).unwrap();
    // Signed with another key, or the body changed after signing.
    let bad = headers(&[("X-Nexus-Webhook-Signature", &hex(body, "wrong"))]);
    let err = verify(ReceiverType::Nexus, TOKEN, &[], &bad, body).unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (401, "invalid Nexus signature")
    );
    assert!(!err.message.contains(TOKEN));
    assert_eq!(
        verify(ReceiverType::Nexus, TOKEN, &[], &good, b"{}")
            .unwrap_err()
            .status,
        401
    );
    // GitHub's prefixed form is not Nexus' form.
    let prefixed = headers(&[("X-Nexus-Webhook-Signature", &sha1_sig(body, TOKEN))]);
    assert_eq!(
        verify(ReceiverType::Nexus, TOKEN, &[], &prefixed, body)
            .unwrap_err()
            .status,
        401
    );
    let err = verify(ReceiverType::Nexus, TOKEN, &[], &headers(&[]), body).unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (401, "the Nexus signature is missing from header")
    );
    // A good signature over a body that is not JSON: refused, 400.
    let text = b"not json";
    let signed = headers(&[("X-Nexus-Webhook-Signature", &hex(text, TOKEN))]);
    let err = verify(ReceiverType::Nexus, TOKEN, &[], &signed, text).unwrap_err();
    assert_eq!(err.status, 400);
    assert!(
        err.message
            .starts_with("cannot decode Nexus webhook payload: "),
        "{}",
        err.message
    );
}

mod gcr {
    use super::headers;
    use base64::Engine;
    use ferroflux_notification::receiver::{GcrCheck, verify_gcr};
    use ferroflux_testkit::GoogleSigner;
    use serde_json::{Value, json};

    const EMAIL: &str = "pusher@project.iam.gserviceaccount.com";
    const AUDIENCE: &str = "https://flux.example.com/hook/abc";
    const NOW: i64 = 1_767_323_045;

    fn claims() -> Value {
        json!({"iss": "https://accounts.google.com", "aud": AUDIENCE, "email": EMAIL,
               "email_verified": true, "iat": NOW - 10, "exp": NOW + 3600})
    }

    fn body() -> Vec<u8> {
        let event = json!({"action": "INSERT", "digest": "gcr.io/p/app@sha256:abc", "tag": "gcr.io/p/app:v1"});
        let data = base64::engine::general_purpose::STANDARD.encode(event.to_string());
        json!({"message": {"data": data, "messageId": "1", "publishTime": "2026-01-02T03:04:05Z"},
               "subscription": "projects/p/subscriptions/flux"})
        .to_string()
        .into_bytes()
    }

    fn call(
        signer: &GoogleSigner,
        claims: &Value,
        keys: &Value,
    ) -> Result<Option<String>, (u16, String)> {
        let token = signer.token(claims);
        let h = headers(&[("Authorization", &format!("Bearer {token}"))]);
        let check = GcrCheck {
            email: EMAIL,
            audience: AUDIENCE,
            keys,
            now: NOW,
        };
        verify_gcr(&check, &h, &body())
            .map(|v| v.event)
            .map_err(|r| {
                assert!(
                    !r.message.contains(&token),
                    "the token is never in a message"
                );
                (r.status, r.message)
            })
    }

    #[test]
    fn a_google_signed_token_for_the_audience_and_account_passes() {
        let signer = GoogleSigner::new();
        assert_eq!(
            call(&signer, &claims(), &signer.keys()),
            Ok(Some("INSERT".into()))
        );
        // `iss` without the scheme is Google's too; `aud` may be a list.
        let mut c = claims();
        c["iss"] = json!("accounts.google.com");
        c["aud"] = json!(["other", AUDIENCE]);
        assert!(call(&signer, &c, &signer.keys()).is_ok());
    }

    #[test]
    fn bad_tokens_are_401_and_say_which_claim_is_wrong() {
        let signer = GoogleSigner::new();
        let keys = signer.keys();
        let refused = |c: Value| call(&signer, &c, &keys).unwrap_err();
        let mut c = claims();
        c["aud"] = json!("https://elsewhere");
        assert_eq!(
            refused(c),
            (
                401,
                format!(
                    "cannot authenticate GCR request: invalid ID token: audience is 'https://elsewhere', want '{AUDIENCE}'"
                )
            )
        );
        let mut c = claims();
        c["exp"] = json!(NOW - 3600);
        assert_eq!(
            refused(c),
            (
                401,
                "cannot authenticate GCR request: invalid ID token: the token has expired".into()
            )
        );
        let mut c = claims();
        c["iss"] = json!("https://evil.example.com");
        assert_eq!(
            refused(c),
            (401, "cannot authenticate GCR request: token issuer is 'https://evil.example.com', want 'accounts.google.com' or 'https://accounts.google.com'".into())
        );
        let mut c = claims();
        c["email"] = json!("someone@else.com");
        assert_eq!(
            refused(c),
            (
                401,
                format!(
                    "cannot authenticate GCR request: token email is 'someone@else.com', want '{EMAIL}'"
                )
            )
        );
        let mut c = claims();
        c["email_verified"] = json!(false);
        assert_eq!(
            refused(c),
            (
                401,
                format!("cannot authenticate GCR request: token email '{EMAIL}' is not verified")
            )
        );
    }

    #[test]
    fn a_forged_signature_or_missing_token_is_401() {
        let signer = GoogleSigner::new();
        let keys = signer.keys();
        let check = GcrCheck {
            email: EMAIL,
            audience: AUDIENCE,
            keys: &keys,
            now: NOW,
        };
        // The claims changed after signing.
        let token = signer.token(&claims());
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut forged = claims();
        forged["email"] = json!("attacker@evil.com");
        parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged.to_string());
        let h = headers(&[("Authorization", &format!("Bearer {}", parts.join(".")))]);
        let err = verify_gcr(&check, &h, &body()).unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (
                401,
                "cannot authenticate GCR request: invalid ID token: the token's signature does not verify"
            )
        );
        // Signed by a key Google does not publish.
        let other = json!({"keys": [{"kid": "another", "kty": "RSA", "n": "AQAB", "e": "AQAB"}]});
        let h = headers(&[("Authorization", &format!("Bearer {token}"))]);
        let check_other = GcrCheck {
            keys: &other,
            ..check
        };
        assert_eq!(
            verify_gcr(&check_other, &h, &body()).unwrap_err().message,
            "cannot authenticate GCR request: invalid ID token: no signing key \"test-key\" among Google's keys"
        );
        for bad in [vec![], vec![("Authorization", "Basic abc")]] {
            let err = verify_gcr(&check, &headers(&bad), &body()).unwrap_err();
            assert_eq!(
                (err.status, err.message.as_str()),
                (
                    401,
                    "cannot authenticate GCR request: the Authorization header is missing or malformed"
                )
            );
        }
        let h = headers(&[("Authorization", "Bearer not-a-jwt")]);
        assert_eq!(
            verify_gcr(&check, &h, &body()).unwrap_err().message,
            "cannot authenticate GCR request: invalid ID token: the token is not a JWT"
        );
        // A good token on a body that is not Pub/Sub's envelope.
        let h = headers(&[("Authorization", &format!("Bearer {token}"))]);
        let err = verify_gcr(&check, &h, b"{\"message\":{}}").unwrap_err();
        assert_eq!(err.status, 400);
        assert!(
            err.message.starts_with("cannot decode GCR webhook body: "),
            "{}",
            err.message
        );
    }
}

/// generic-oidc: the token checks as go-oidc's verifier makes them, over a token signed with the
/// test key and its JWK set (the issuer's, as its discovery document would point to).
mod oidc {
    use ferroflux_notification::oidc::verify;
    use ferroflux_testkit::GoogleSigner;
    use serde_json::{Value, json};

    const ISSUER: &str = "https://token.actions.example";
    const NOW: i64 = 1_767_323_045;

    fn claims() -> Value {
        json!({"iss": ISSUER, "aud": "notification-controller", "repository": "org/fleet",
               "iat": NOW - 10, "nbf": NOW - 10, "exp": NOW + 300})
    }

    fn refused(c: &Value) -> String {
        let signer = GoogleSigner::new();
        verify(
            &signer.token(c),
            &signer.keys(),
            ISSUER,
            "notification-controller",
            NOW,
        )
        .unwrap_err()
        .to_string()
    }

    #[test]
    fn a_token_from_the_issuer_for_the_audience_gives_its_claims() {
        let signer = GoogleSigner::new();
        let got = verify(
            &signer.token(&claims()),
            &signer.keys(),
            ISSUER,
            "notification-controller",
            NOW,
        )
        .unwrap();
        assert_eq!(got["repository"], "org/fleet");
        let mut c = claims();
        c["aud"] = json!(["sts.amazonaws.com", "notification-controller"]);
        assert!(
            verify(
                &signer.token(&c),
                &signer.keys(),
                ISSUER,
                "notification-controller",
                NOW
            )
            .is_ok()
        );
    }

    #[test]
    fn each_wrong_claim_is_named() {
        let mut c = claims();
        c["iss"] = json!("https://elsewhere");
        assert_eq!(
            refused(&c),
            "oidc: id token issued by a different provider, expected \"https://token.actions.example\" got \"https://elsewhere\""
        );
        let mut c = claims();
        c["aud"] = json!("other");
        assert_eq!(
            refused(&c),
            "oidc: expected audience \"notification-controller\" got [\"other\"]"
        );
        let mut c = claims();
        c["exp"] = json!(NOW - 1);
        assert_eq!(
            refused(&c),
            "oidc: token is expired (Token Expiry: 2026-01-02T03:04:04Z)"
        );
        let mut c = claims();
        c["nbf"] = json!(NOW + 301);
        assert!(refused(&c).starts_with("oidc: current time 2026-01-02T03:04:05Z before the nbf"));
        let mut c = claims();
        c.as_object_mut().unwrap().remove("exp");
        assert_eq!(refused(&c), "oidc: token has no expiry ('exp' claim)");
    }

    #[test]
    fn a_token_not_signed_by_the_issuers_keys_is_refused() {
        let signer = GoogleSigner::new();
        let token = signer.token(&claims());
        // The payload swapped for another: the signature no longer covers it.
        let mut forged = claims();
        forged["repository"] = json!("attacker/fleet");
        let other = signer.token(&forged);
        let parts: Vec<&str> = token.split('.').collect();
        let forged_payload = other.split('.').nth(1).unwrap();
        let tampered = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
        let err = verify(
            &tampered,
            &signer.keys(),
            ISSUER,
            "notification-controller",
            NOW,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "the token's signature does not verify");
        // Unknown key id, and `alg: none`.
        let err = verify(
            &token,
            &json!({"keys": []}),
            ISSUER,
            "notification-controller",
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no signing key \"test-key\" among the issuer's keys"
        );
        use base64::Engine;
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let none = format!("{}.{}.", b64(&json!({"alg": "none"})), b64(&claims()));
        let err = verify(
            &none,
            &signer.keys(),
            ISSUER,
            "notification-controller",
            NOW,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the token is signed with \"none\""),
            "{err}"
        );
    }
}
