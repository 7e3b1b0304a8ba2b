//! A Provider and its Secrets made into a [`ProviderConfig`], with every problem a user must fix
//! named: a Secret that is missing, a key its type needs, half a TLS pair, bad headers. Pure:
//! the caller reads the Secrets [`secret_names`] lists (the dispatcher at send time, `get
//! alert-providers` and `get alerts` to show the same problem as the Ready condition) and passes
//! those it found.

use crate::payload::{self, ProviderConfig};
use crate::tls;
use ferroflux_api::notification::Provider;
use std::collections::BTreeMap;

/// The keys of one Secret.
pub type SecretData = BTreeMap<String, Vec<u8>>;

/// The longest address a Secret may hold (Flux's).
const MAX_ADDRESS_BYTES: usize = 2048;

/// The Secrets `provider` reads, in its namespace: `secretRef`, `proxySecretRef`,
/// `certSecretRef` (each once).
pub fn secret_names(provider: &Provider) -> Vec<String> {
    let spec = &provider.spec;
    let mut names: Vec<String> = Vec::new();
    for r in [
        &spec.secret_ref,
        &spec.proxy_secret_ref,
        &spec.cert_secret_ref,
    ]
    .into_iter()
    .flatten()
    {
        if !names.contains(&r.name) {
            names.push(r.name.clone());
        }
    }
    names
}

/// `provider` (in namespace `ns`, with UID `uid`) with `secrets` (name → keys; a name absent is
/// a Secret that does not exist): everything needed to send, or why nothing can be.
pub fn provider_config(
    provider: &Provider,
    ns: &str,
    uid: &str,
    secrets: &BTreeMap<String, SecretData>,
) -> Result<ProviderConfig, String> {
    let spec = &provider.spec;
    let mut config = ProviderConfig {
        kind: spec.r#type,
        address: spec.address.clone().unwrap_or_default(),
        channel: spec.channel.clone().unwrap_or_default(),
        username: spec.username.clone().unwrap_or_default(),
        proxy: spec.proxy.clone(),
        timeout: spec
            .timeout
            .as_deref()
            .and_then(|t| ferroflux_api::duration::parse_duration(t).ok()),
        uid: uid.to_string(),
        ..Default::default()
    };
    let read = |name: &str| {
        secrets
            .get(name)
            .ok_or_else(|| format!("failed to get secret '{ns}/{name}': not found"))
    };
    if let Some(reference) = &spec.secret_ref {
        let name = &reference.name;
        let data = read(name)?;
        let text = |k: &str| {
            data.get(k)
                .map(|v| String::from_utf8_lossy(v).trim().to_string())
        };
        if let Some(address) = text("address") {
            if address.len() > MAX_ADDRESS_BYTES {
                return Err(format!(
                    "invalid address in secret: address exceeds maximum length of {MAX_ADDRESS_BYTES} bytes"
                ));
            }
            config.address = address;
        }
        if let Some(proxy) = text("proxy") {
            config.proxy = Some(proxy);
        }
        if let Some(headers) = text("headers") {
            config.headers = serde_saphyr::from_str(&headers)
                .map_err(|e| format!("failed to read headers from secret '{ns}/{name}': {e}"))?;
        }
        if let Some(token) = text("token") {
            config.token = token;
        }
        if let Some(username) = text("username") {
            config.username = username;
        }
        if let Some(password) = text("password") {
            config.password = password;
        }
        config.secret = Some(format!("{ns}/{name}"));
    }
    if let Some(reference) = &spec.proxy_secret_ref {
        let name = &reference.name;
        let address = read(name)?
            .get("address")
            .map(|v| String::from_utf8_lossy(v).trim().to_string())
            .ok_or_else(|| format!("secret '{ns}/{name}' has no 'address' key"))?;
        config.proxy = Some(address);
    }
    // certSecretRef's TLS keys; without one, a commit-status type takes them from its
    // secretRef when it has any (Flux's order).
    let tls_source = match (&spec.cert_secret_ref, &spec.secret_ref) {
        (Some(reference), _) => Some((&reference.name, read(&reference.name)?)),
        (None, Some(reference)) if spec.r#type.is_commit_status() => {
            let data = read(&reference.name)?;
            tls::has_tls_keys(data).then_some((&reference.name, data))
        }
        _ => None,
    };
    if let Some((name, data)) = tls_source {
        let files = tls::from_secret(&format!("{ns}/{name}"), data)
            .map_err(|e| format!("failed to get TLS config: {e}"))?;
        config.ca_pem = files.ca_pem;
        config.client_pem = files.cert_pem.zip(files.key_pem);
    }
    // The keys and fields each type cannot work without.
    payload::check(&config).map_err(|e| e.to_string())?;
    Ok(config)
}
