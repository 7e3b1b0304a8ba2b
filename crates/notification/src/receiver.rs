//! How a Receiver verifies a webhook call, per type, as Flux's receiver server does: the
//! signature or token header, the `events` filter, and the payload types that must decode.
//! The answer says what HTTP status the caller gets; messages never contain the token.

use ferroflux_api::notification::ReceiverType;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use std::collections::BTreeMap;

/// Flux's request body limit (3 MiB): a larger body is answered with 413.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// A verified call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    /// The sender's event type (`push`, `Push Hook`), when the type has one.
    pub event: Option<String>,
    /// A GitHub `ping`: answered, nothing reconciled.
    pub ping: bool,
}

/// A refused call: the status the caller gets and why (for the log; the caller gets the
/// status and this message, which never holds the token).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Rejected {
    /// 401 for a bad or missing signature or token, 400 for a payload or event refused.
    pub status: u16,
    /// What was wrong.
    pub message: String,
}

fn unauthorized(message: impl Into<String>) -> Rejected {
    Rejected {
        status: 401,
        message: message.into(),
    }
}

fn bad_request(message: impl Into<String>) -> Rejected {
    Rejected {
        status: 400,
        message: message.into(),
    }
}

/// Compares without leaking the position of the first difference through timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// go-github's `ValidateSignature`: `<algorithm>=<hex HMAC of the body>` with sha256, sha512
/// or sha1 (GitHub's legacy `X-Hub-Signature`, which Flux accepts too).
pub fn check_signature(signature: &str, body: &[u8], token: &str) -> Result<(), Rejected> {
    let Some((algorithm, hex)) = signature.split_once('=') else {
        return Err(unauthorized(
            "unable to validate HMAC signature: the signature is not of the form <algorithm>=<hex>",
        ));
    };
    let Some(given) = unhex(hex) else {
        return Err(unauthorized(
            "unable to validate HMAC signature: the signature is not hexadecimal",
        ));
    };
    let ok = match algorithm {
        "sha256" => Hmac::<Sha256>::new_from_slice(token.as_bytes())
            .map(|mut m| {
                m.update(body);
                m.verify_slice(&given).is_ok()
            })
            .unwrap_or(false),
        "sha512" => Hmac::<Sha512>::new_from_slice(token.as_bytes())
            .map(|mut m| {
                m.update(body);
                m.verify_slice(&given).is_ok()
            })
            .unwrap_or(false),
        "sha1" => {
            crate::sha1::hmac_sha1(token.as_bytes(), body).is_some_and(|mac| same(&mac, &given))
        }
        other => {
            return Err(unauthorized(format!(
                "unable to validate HMAC signature: algorithm '{other}' is not supported, use sha256"
            )));
        }
    };
    if ok {
        Ok(())
    } else {
        Err(unauthorized(
            "unable to validate HMAC signature: the payload signature does not match",
        ))
    }
}

fn allowed(events: &[String], event: &str, who: &str) -> Result<(), Rejected> {
    if events.is_empty() || events.iter().any(|e| e.eq_ignore_ascii_case(event)) {
        Ok(())
    } else {
        Err(bad_request(format!(
            "the {who} event {event:?} is not authorised"
        )))
    }
}

/// Verifies a call to a Receiver of type `kind` whose Secret holds `token`. `headers` have
/// lower-case names.
pub fn verify(
    kind: ReceiverType,
    token: &str,
    events: &[String],
    headers: &BTreeMap<String, String>,
    body: &[u8],
) -> Result<Verified, Rejected> {
    let header = |name: &str| headers.get(name).map(String::as_str);
    match kind {
        // The path itself, a hash over the token, is the secret.
        ReceiverType::Generic => Ok(Verified::default()),
        ReceiverType::GenericHmac => {
            let sig = header("x-signature").ok_or_else(|| {
                unauthorized("unable to validate HMAC signature: missing X-Signature header")
            })?;
            check_signature(sig, body, token)?;
            Ok(Verified::default())
        }
        ReceiverType::Github => {
            let sig = header("x-hub-signature-256")
                .or_else(|| header("x-hub-signature"))
                .ok_or_else(|| {
                    unauthorized(
                        "the GitHub signature header is invalid: missing X-Hub-Signature-256",
                    )
                })?;
            check_signature(sig, body, token).map_err(|e| {
                unauthorized(format!(
                    "the GitHub signature header is invalid: {}",
                    e.message
                ))
            })?;
            let event = header("x-github-event").unwrap_or_default().to_string();
            if event == "ping" {
                return Ok(Verified {
                    event: Some(event),
                    ping: true,
                });
            }
            allowed(events, &event, "GitHub")?;
            Ok(Verified {
                event: Some(event),
                ping: false,
            })
        }
        ReceiverType::Gitlab => {
            let given = header("x-gitlab-token").unwrap_or_default();
            if given.is_empty() || !same(given.as_bytes(), token.as_bytes()) {
                return Err(unauthorized(
                    "the X-Gitlab-Token header value does not match the receiver token",
                ));
            }
            let event = header("x-gitlab-event").unwrap_or_default().to_string();
            allowed(events, &event, "GitLab")?;
            Ok(Verified {
                event: Some(event),
                ping: false,
            })
        }
        ReceiverType::Bitbucket => {
            let sig = header("x-hub-signature").ok_or_else(|| {
                unauthorized(
                    "the Bitbucket server signature header is invalid: missing X-Hub-Signature",
                )
            })?;
            check_signature(sig, body, token).map_err(|e| {
                unauthorized(format!(
                    "the Bitbucket server signature header is invalid: {}",
                    e.message
                ))
            })?;
            let event = header("x-event-key").unwrap_or_default().to_string();
            allowed(events, &event, "Bitbucket server")?;
            Ok(Verified {
                event: Some(event),
                ping: false,
            })
        }
        ReceiverType::Harbor => {
            let given = header("authorization").unwrap_or_default();
            if given.is_empty() || !same(given.as_bytes(), token.as_bytes()) {
                return Err(unauthorized(
                    "the Harbor Authorization header value does not match the receiver token",
                ));
            }
            Ok(Verified::default())
        }
        ReceiverType::Dockerhub | ReceiverType::Quay | ReceiverType::Acr => {
            let what = match kind {
                ReceiverType::Dockerhub => "DockerHub",
                ReceiverType::Quay => "Quay",
                _ => "ACR",
            };
            serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .filter(serde_json::Value::is_object)
                .ok_or_else(|| bad_request(format!("cannot decode {what} webhook payload")))?;
            Ok(Verified::default())
        }
        ReceiverType::Cdevents => {
            let event = header("ce-type").unwrap_or_default().to_string();
            let payload: serde_json::Value = serde_json::from_slice(body)
                .map_err(|e| bad_request(format!("unable to validate CDEvent event: {e}")))?;
            if payload.get("context").and_then(|c| c.get("type")).is_none() {
                return Err(bad_request(
                    "unable to validate CDEvent event: missing context.type",
                ));
            }
            allowed(events, &event, "CDEvent")?;
            Ok(Verified {
                event: Some(event),
                ping: false,
            })
        }
        ReceiverType::Nexus => {
            // Nexus signs with a bare hex HMAC-SHA1 of the body, no `sha1=` prefix.
            let signature = header("x-nexus-webhook-signature")
                .filter(|s| !s.is_empty())
                .ok_or_else(|| unauthorized("the Nexus signature is missing from header"))?;
            let valid = unhex(signature)
                .zip(crate::sha1::hmac_sha1(token.as_bytes(), body))
                .is_some_and(|(given, mac)| same(&given, &mac));
            if !valid {
                return Err(unauthorized("invalid Nexus signature"));
            }
            serde_json::from_slice::<serde_json::Value>(body)
                .map_err(|e| bad_request(format!("cannot decode Nexus webhook payload: {e}")))?;
            Ok(Verified::default())
        }
        // A GCR call is checked against Google's signing keys, which the caller fetches:
        // see [`verify_gcr`].
        ReceiverType::Gcr => Err(Rejected {
            status: 500,
            message: "a GCR call is verified with Google's signing keys (verify_gcr)".into(),
        }),
        // A generic-oidc call is checked against its issuer's keys and the Receiver's CEL
        // validations, which the caller holds: see [`crate::oidc`].
        ReceiverType::GenericOidc => Err(Rejected {
            status: 500,
            message: "a generic-oidc call is verified with its issuer's keys (oidc::verify)".into(),
        }),
    }
}

/// What a GCR Receiver checks a call against.
#[derive(Clone, Copy, Debug)]
pub struct GcrCheck<'a> {
    /// The Secret's `email`: the service account the Pub/Sub subscription pushes as.
    pub email: &'a str,
    /// The Secret's `audience`: the subscription's configured audience.
    pub audience: &'a str,
    /// Google's signing keys (JWK set from [`crate::idtoken::GOOGLE_CERTS_URL`]).
    pub keys: &'a serde_json::Value,
    /// Now, in Unix seconds.
    pub now: i64,
}

/// Verifies a GCR (Pub/Sub push) call as Flux does: the `Authorization: Bearer` Google ID
/// token signed by Google, for the audience, from the service account with a verified email;
/// then the Pub/Sub envelope whose `message.data` is the registry's event (base64 JSON).
pub fn verify_gcr(
    check: &GcrCheck,
    headers: &BTreeMap<String, String>,
    body: &[u8],
) -> Result<Verified, Rejected> {
    let auth = |m: String| unauthorized(format!("cannot authenticate GCR request: {m}"));
    let token = headers
        .get("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .ok_or_else(|| auth("the Authorization header is missing or malformed".into()))?;
    let claims = crate::idtoken::verify(token.trim(), check.keys, check.audience, check.now)
        .map_err(|e| auth(format!("invalid ID token: {e}")))?;
    crate::idtoken::check_google_claims(&claims, check.email).map_err(|e| auth(e.0))?;
    let envelope: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("cannot decode GCR webhook payload: {e}")))?;
    use base64::Engine;
    let data = envelope
        .pointer("/message/data")
        .and_then(serde_json::Value::as_str)
        .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
        .unwrap_or_default();
    let event: serde_json::Value = serde_json::from_slice(&data)
        .map_err(|e| bad_request(format!("cannot decode GCR webhook body: {e}")))?;
    Ok(Verified {
        event: event
            .get("action")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        ping: false,
    })
}
