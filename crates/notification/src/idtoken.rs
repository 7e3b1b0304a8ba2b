//! Google ID tokens, as a GCR Receiver's caller (a Pub/Sub push subscription) sends them: an
//! RS256 JWT whose signature is checked against Google's published signing keys (a JWK set the
//! caller fetches from [`GOOGLE_CERTS_URL`] and passes in), then its claims: audience, issuer,
//! expiry, and the service account's verified email. The checks are pure (the time is passed
//! in); [`fetch_keys`] reads the key set, blocking, for the caller to cache.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents};
use serde_json::Value;

/// Where Google publishes the keys its ID tokens are signed with (JWK set).
pub const GOOGLE_CERTS_URL: &str = "https://www.googleapis.com/oauth2/v3/certs";

/// Clock skew allowed on `exp`, as Google's validator allows.
const SKEW_SECONDS: i64 = 300;

/// Why a token was refused. Messages carry claims, never the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidToken(pub String);

fn invalid(message: impl Into<String>) -> InvalidToken {
    InvalidToken(message.into())
}

fn decode_part(part: &str, what: &str) -> Result<Vec<u8>, InvalidToken> {
    URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| invalid(format!("the token's {what} is not base64url")))
}

/// The claims of `token` once its RS256 signature verifies with one of `keys` (a JWK set:
/// `{"keys": [{"kid", "kty": "RSA", "n", "e"}, ...]}`), its audience is `audience` and it has
/// not expired at `now` (Unix seconds).
pub fn verify(token: &str, keys: &Value, audience: &str, now: i64) -> Result<Value, InvalidToken> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("the token is not a JWT"));
    };
    let header: Value = serde_json::from_slice(&decode_part(header, "header")?)
        .map_err(|_| invalid("the token's header is not JSON"))?;
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if alg != "RS256" {
        return Err(invalid(format!(
            "the token is signed with {alg:?}, expected RS256"
        )));
    }
    let kid = header
        .get("kid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = keys
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
        .ok_or_else(|| invalid(format!("no signing key {kid:?} among Google's keys")))?;
    let component = |name: &str| {
        key.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("signing key {kid:?} has no {name:?}")))
            .and_then(|v| decode_part(v, "key"))
    };
    let public = RsaPublicKeyComponents {
        n: component("n")?,
        e: component("e")?,
    };
    let signed = &token[..header_and_payload_len(token)];
    public
        .verify(
            &RSA_PKCS1_2048_8192_SHA256,
            signed.as_bytes(),
            &decode_part(signature, "signature")?,
        )
        .map_err(|_| invalid("the token's signature does not verify"))?;
    let claims: Value = serde_json::from_slice(&decode_part(payload, "payload")?)
        .map_err(|_| invalid("the token's payload is not JSON"))?;
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&audience) {
        return Err(invalid(format!(
            "audience is '{}', want '{audience}'",
            audiences.join(",")
        )));
    }
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    if exp + SKEW_SECONDS < now {
        return Err(invalid("the token has expired"));
    }
    Ok(claims)
}

fn header_and_payload_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

/// Flux's GCR checks over verified claims: Google's issuer, the expected service account, its
/// email verified.
pub fn check_google_claims(claims: &Value, email: &str) -> Result<(), InvalidToken> {
    let issuer = claims
        .get("iss")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if issuer != "accounts.google.com" && issuer != "https://accounts.google.com" {
        return Err(invalid(format!(
            "token issuer is '{issuer}', want 'accounts.google.com' or 'https://accounts.google.com'"
        )));
    }
    let got = claims
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if got != email {
        return Err(invalid(format!("token email is '{got}', want '{email}'")));
    }
    if claims.get("email_verified").and_then(Value::as_bool) != Some(true) {
        return Err(invalid(format!("token email '{got}' is not verified")));
    }
    Ok(())
}

/// Reads a JWK set (Google's at [`GOOGLE_CERTS_URL`]), blocking, within `timeout`.
pub fn fetch_keys(url: &str, timeout: std::time::Duration) -> Result<Value, String> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .build()
        .new_agent();
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| format!("cannot fetch the signing keys from {url}: {e}"))?;
    let body = response
        .body_mut()
        .with_config()
        .limit(1024 * 1024)
        .read_to_vec()
        .map_err(|e| format!("cannot read the signing keys from {url}: {e}"))?;
    let keys: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("the signing keys from {url} are not JSON: {e}"))?;
    if keys.get("keys").and_then(Value::as_array).is_none() {
        return Err(format!("the signing keys from {url} are not a JWK set"));
    }
    Ok(keys)
}
