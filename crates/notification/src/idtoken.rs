//! Google ID tokens, as a GCR Receiver's caller (a Pub/Sub push subscription) sends them: an
//! RS256 JWT whose signature is checked against Google's published signing keys (a JWK set the
//! caller fetches from [`GOOGLE_CERTS_URL`] and passes in), then its claims: audience, issuer,
//! expiry, and the service account's verified email. The checks are pure (the time is passed
//! in); [`fetch_keys`] reads the key set, blocking, for the caller to cache.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, RSA_PKCS1_2048_8192_SHA256,
    RSA_PKCS1_2048_8192_SHA384, RSA_PKCS1_2048_8192_SHA512, RsaPublicKeyComponents,
    UnparsedPublicKey,
};
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
    let claims = verified_claims(token, keys, "Google's")?;
    let audiences = audiences(&claims);
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

/// The `aud` claim, a string or a list of them.
pub fn audiences(claims: &Value) -> Vec<&str> {
    match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The claims of a JWT whose signature verifies with one of `keys` (a JWK set; `owner` names
/// it in messages, e.g. "Google's"): the key whose `kid` the header names, or any key when the
/// header names none. RS256/384/512 with RSA keys, ES256/384 with P-256/P-384 keys; nothing
/// else (in particular never `none`).
pub fn verified_claims(token: &str, keys: &Value, owner: &str) -> Result<Value, InvalidToken> {
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
    let kid = header.get("kid").and_then(Value::as_str);
    let candidates: Vec<&Value> = keys
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|k| kid.is_none() || k.get("kid").and_then(Value::as_str) == kid)
        .collect();
    if candidates.is_empty() {
        return Err(invalid(format!(
            "no signing key {:?} among {owner} keys",
            kid.unwrap_or_default()
        )));
    }
    let signed = &token[..header_and_payload_len(token)];
    let signature = decode_part(signature, "signature")?;
    let mut verified = false;
    for key in candidates {
        let shown = key.get("kid").and_then(Value::as_str).unwrap_or_default();
        let component = |name: &str| {
            key.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(format!("signing key {shown:?} has no {name:?}")))
                .and_then(|v| decode_part(v, "key"))
        };
        let ok = match alg {
            "RS256" | "RS384" | "RS512" => {
                let params = match alg {
                    "RS256" => &RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &RSA_PKCS1_2048_8192_SHA384,
                    _ => &RSA_PKCS1_2048_8192_SHA512,
                };
                let public = RsaPublicKeyComponents {
                    n: component("n")?,
                    e: component("e")?,
                };
                public.verify(params, signed.as_bytes(), &signature).is_ok()
            }
            "ES256" | "ES384" => {
                let (params, curve) = if alg == "ES256" {
                    (&ECDSA_P256_SHA256_FIXED, "P-256")
                } else {
                    (&ECDSA_P384_SHA384_FIXED, "P-384")
                };
                if key.get("crv").and_then(Value::as_str) != Some(curve) {
                    continue;
                }
                // An uncompressed SEC1 point: 0x04, then x and y.
                let mut point = vec![4u8];
                point.extend(component("x")?);
                point.extend(component("y")?);
                UnparsedPublicKey::new(params, point)
                    .verify(signed.as_bytes(), &signature)
                    .is_ok()
            }
            other => {
                return Err(invalid(format!(
                    "the token is signed with {other:?}, expected one of RS256, RS384, RS512, ES256, ES384"
                )));
            }
        };
        if ok {
            verified = true;
            break;
        }
    }
    if !verified {
        return Err(invalid("the token's signature does not verify"));
    }
    serde_json::from_slice(&decode_part(payload, "payload")?)
        .map_err(|_| invalid("the token's payload is not JSON"))
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

/// Reads a JWK set (Google's at [`GOOGLE_CERTS_URL`], an OIDC issuer's at its `jwks_uri`),
/// blocking, within `timeout`.
pub fn fetch_keys(url: &str, timeout: std::time::Duration) -> Result<Value, String> {
    let keys = fetch_json(url, timeout, "the signing keys")?;
    if keys.get("keys").and_then(Value::as_array).is_none() {
        return Err(format!("the signing keys from {url} are not a JWK set"));
    }
    Ok(keys)
}

/// A JSON document (`what` names it in messages), blocking, within `timeout`, at most 1 MiB.
pub fn fetch_json(url: &str, timeout: std::time::Duration, what: &str) -> Result<Value, String> {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .build()
        .new_agent();
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| format!("cannot fetch {what} from {url}: {e}"))?;
    let body = response
        .body_mut()
        .with_config()
        .limit(1024 * 1024)
        .read_to_vec()
        .map_err(|e| format!("cannot read {what} from {url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("{what} from {url} are not JSON: {e}"))
}
