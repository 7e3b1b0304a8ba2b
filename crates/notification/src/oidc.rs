//! OIDC tokens, as a `generic-oidc` Receiver's caller sends them (a CI job's ID token from
//! GitHub Actions, GitLab, a Kubernetes service account...): the token names its issuer, the
//! Receiver must list that issuer, whose discovery document (`/.well-known/openid-configuration`)
//! gives the key set the token must be signed with; then the issuer, audience and validity
//! times are checked as go-oidc's verifier checks them, with its messages. The checks are pure
//! (keys and time are passed in); [`fetch_discovery`] and [`crate::idtoken::fetch_keys`] read
//! the documents, blocking, for the caller to cache. The Receiver's CEL variables and
//! validations over the claims are the controller's (it owns the CEL engine).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use crate::idtoken::{InvalidToken, audiences, verified_claims};

/// The default `aud` a `generic-oidc` Receiver expects (notification-controller's).
pub const DEFAULT_AUDIENCE: &str = "notification-controller";

/// Leeway on `nbf` (go-oidc's): a token from a clock slightly ahead is still accepted.
const NOT_BEFORE_LEEWAY_SECONDS: i64 = 300;

/// The `iss` claim of `token`, read without verifying anything: it only selects which of the
/// Receiver's providers verifies the token. Flux's messages.
pub fn unverified_issuer(token: &str) -> Result<String, String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err("token is not a JWT".into());
    }
    let payload = URL_SAFE_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .map_err(|e| format!("failed to decode token payload: {e}"))?;
    let claims: Value = serde_json::from_slice(&payload)
        .map_err(|e| format!("failed to parse token payload: {e}"))?;
    match claims.get("iss").and_then(Value::as_str) {
        Some(iss) if !iss.is_empty() => Ok(iss.to_string()),
        _ => Err("token is missing the 'iss' claim".into()),
    }
}

/// Where an issuer publishes its discovery document.
pub fn discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

/// The key set address of a discovery document, which must name `issuer` exactly (go-oidc's
/// check: a document served for another issuer is refused).
pub fn jwks_uri(issuer: &str, discovery: &Value) -> Result<String, String> {
    let got = discovery
        .get("issuer")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if got != issuer {
        return Err(format!(
            "oidc: issuer did not match the issuer returned by provider, expected {issuer:?} got {got:?}"
        ));
    }
    discovery
        .get("jwks_uri")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "oidc: the provider's discovery document has no jwks_uri".to_string())
}

/// Reads an issuer's discovery document, blocking, within `timeout`.
pub fn fetch_discovery(issuer: &str, timeout: std::time::Duration) -> Result<Value, String> {
    let url = discovery_url(issuer);
    let doc = crate::idtoken::fetch_json(&url, timeout, "the provider's discovery document")?;
    if !doc.is_object() {
        return Err(format!(
            "the provider's discovery document at {url} is not a JSON object"
        ));
    }
    Ok(doc)
}

/// The claims of `token` once its signature verifies with one of `keys` (the issuer's JWK set),
/// its `iss` is `issuer`, `audience` is among its `aud`, it has not expired at `now` (Unix
/// seconds) and is not used before its `nbf`. go-oidc's messages.
pub fn verify(
    token: &str,
    keys: &Value,
    issuer: &str,
    audience: &str,
    now: i64,
) -> Result<Value, InvalidToken> {
    let claims = verified_claims(token, keys, "the issuer's")?;
    let invalid = |m: String| InvalidToken(m);
    let iss = claims
        .get("iss")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if iss != issuer {
        return Err(invalid(format!(
            "oidc: id token issued by a different provider, expected {issuer:?} got {iss:?}"
        )));
    }
    let audiences = audiences(&claims);
    if !audiences.contains(&audience) {
        return Err(invalid(format!(
            "oidc: expected audience {audience:?} got {audiences:?}"
        )));
    }
    let time = |name: &str| claims.get(name).and_then(Value::as_f64).map(|t| t as i64);
    match time("exp") {
        Some(exp) if now > exp => {
            return Err(invalid(format!(
                "oidc: token is expired (Token Expiry: {})",
                rfc3339(exp)
            )));
        }
        Some(_) => {}
        None => return Err(invalid("oidc: token has no expiry ('exp' claim)".into())),
    }
    if let Some(nbf) = time("nbf")
        && now + NOT_BEFORE_LEEWAY_SECONDS < nbf
    {
        return Err(invalid(format!(
            "oidc: current time {} before the nbf (not before) time: {}",
            rfc3339(now),
            rfc3339(nbf)
        )));
    }
    Ok(claims)
}

fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| seconds.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsigned(claims: &Value) -> String {
        let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        format!(
            "{}.{}.sig",
            part(&serde_json::json!({"alg": "RS256"})),
            part(claims)
        )
    }

    #[test]
    fn the_issuer_is_read_before_anything_is_verified() {
        let token =
            unsigned(&serde_json::json!({"iss": "https://token.actions.githubusercontent.com"}));
        assert_eq!(
            unverified_issuer(&token).unwrap(),
            "https://token.actions.githubusercontent.com"
        );
        assert_eq!(unverified_issuer("a.b").unwrap_err(), "token is not a JWT");
        assert_eq!(
            unverified_issuer(&unsigned(&serde_json::json!({"sub": "x"}))).unwrap_err(),
            "token is missing the 'iss' claim"
        );
        assert!(
            unverified_issuer("a.!!!.c")
                .unwrap_err()
                .starts_with("failed to decode token payload")
        );
    }

    /// ES256: a P-256 key made for the test, its JWK (`x`, `y`), a token it signs.
    #[test]
    fn es256_tokens_verify_with_the_issuers_p256_key() {
        use ring::rand::SystemRandom;
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let point = key.public_key().as_ref();
        let jwk = |crv: &str| {
            serde_json::json!({"keys": [{"kid": "ec", "kty": "EC", "crv": crv,
                "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                "y": URL_SAFE_NO_PAD.encode(&point[33..65])}]})
        };
        let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        let claims = serde_json::json!({"iss": "https://i.example", "aud": DEFAULT_AUDIENCE, "exp": 2_000_000_000});
        let signed = format!(
            "{}.{}",
            part(&serde_json::json!({"alg": "ES256", "kid": "ec"})),
            part(&claims)
        );
        let signature = key.sign(&rng, signed.as_bytes()).unwrap();
        let token = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
        let got = verify(
            &token,
            &jwk("P-256"),
            "https://i.example",
            DEFAULT_AUDIENCE,
            1_900_000_000,
        );
        assert_eq!(got.unwrap()["iss"], "https://i.example");
        // A key of another curve is no key for ES256.
        let err = verify(
            &token,
            &jwk("P-384"),
            "https://i.example",
            DEFAULT_AUDIENCE,
            1_900_000_000,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "the token's signature does not verify");
    }

    #[test]
    fn a_discovery_document_must_name_its_issuer() {
        let doc = serde_json::json!({
            "issuer": "https://issuer.example",
            "jwks_uri": "https://issuer.example/keys"
        });
        assert_eq!(
            discovery_url("https://issuer.example/"),
            "https://issuer.example/.well-known/openid-configuration"
        );
        assert_eq!(
            jwks_uri("https://issuer.example", &doc).unwrap(),
            "https://issuer.example/keys"
        );
        assert_eq!(
            jwks_uri("https://other.example", &doc).unwrap_err(),
            "oidc: issuer did not match the issuer returned by provider, expected \"https://other.example\" got \"https://issuer.example\""
        );
        assert!(
            jwks_uri(
                "https://issuer.example",
                &serde_json::json!({"issuer": "https://issuer.example"})
            )
            .is_err()
        );
    }
}
