//! Credentials from a `GitRepository`'s `secretRef`, with the key names Flux uses.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// What the secret may hold. Debug output shows which keys are set, never their values.
#[derive(Clone, Default)]
pub struct Credentials {
    /// `username` + `password`: HTTP basic auth.
    pub basic: Option<(String, String)>,
    /// `bearerToken`: `Authorization: Bearer`.
    pub bearer_token: Option<String>,
    /// `ca.crt`: PEM certificates trusted for HTTPS instead of the built-in roots.
    pub ca_cert: Option<Vec<u8>>,
    /// `identity`: a private key in OpenSSH or PEM format, for ssh.
    pub identity: Option<Vec<u8>>,
    /// `password` together with `identity`: the key's passphrase.
    pub identity_passphrase: Option<String>,
    /// `known_hosts`: the ssh host keys to trust (required for ssh).
    pub known_hosts: Option<Vec<u8>>,
    /// `spec.proxySecretRef`: the HTTP(S) proxy every request goes through, with the proxy's
    /// credentials when it has any (see [`Credentials::with_proxy`]).
    pub proxy: Option<Proxy>,
}

/// An HTTP(S) proxy, as a `proxySecretRef` Secret gives it.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `address`: `http(s)://host:port`.
    pub address: String,
    /// `username` and `password`, when the proxy wants them.
    pub credentials: Option<(String, Option<String>)>,
}

impl Proxy {
    /// Flux's reading of a proxy Secret's data (`ProxyURLFromSecret`): `address` is required
    /// and must be an http(s) URL; `username` (and `password`) authenticate to the proxy.
    /// `secret` (`ns/name`) names the Secret in messages.
    pub fn from_secret_data(secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<Proxy> {
        let address = text(data, "address")?.ok_or_else(|| {
            Error::InvalidSecret(format!("secret '{secret}': key 'address' not found"))
        })?;
        let address = address.trim().to_string();
        if address.is_empty() {
            return Err(Error::InvalidSecret(format!(
                "secret '{secret}': proxy address is empty"
            )));
        }
        if !address.starts_with("http://") && !address.starts_with("https://") {
            return Err(Error::InvalidSecret(format!(
                "secret '{secret}': proxy address '{address}' is not an http(s) URL"
            )));
        }
        let credentials =
            text(data, "username")?.map(|u| (u, text(data, "password").ok().flatten()));
        Ok(Proxy {
            address,
            credentials,
        })
    }

    /// The proxy URL as an HTTP client takes it, the credentials in its user info.
    pub fn url(&self) -> String {
        match &self.credentials {
            None => self.address.clone(),
            Some((user, password)) => {
                let (scheme, rest) = self
                    .address
                    .split_once("://")
                    .unwrap_or(("http", &self.address));
                let enc = |s: &str| {
                    s.bytes()
                        .map(|b| {
                            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                                (b as char).to_string()
                            } else {
                                format!("%{b:02X}")
                            }
                        })
                        .collect::<String>()
                };
                match password {
                    Some(p) => format!("{scheme}://{}:{}@{rest}", enc(user), enc(p)),
                    None => format!("{scheme}://{}@{rest}", enc(user)),
                }
            }
        }
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("address", &self.address)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|(u, _)| (u, "***")),
            )
            .finish()
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("basic", &self.basic.as_ref().map(|(u, _)| (u, "***")))
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "***"))
            .field("ca_cert", &self.ca_cert.is_some())
            .field("identity", &self.identity.as_ref().map(|_| "***"))
            .field(
                "identity_passphrase",
                &self.identity_passphrase.as_ref().map(|_| "***"),
            )
            .field("known_hosts", &self.known_hosts.is_some())
            .field("proxy", &self.proxy)
            .finish()
    }
}

fn text(data: &BTreeMap<String, Vec<u8>>, key: &str) -> Result<Option<String>> {
    data.get(key)
        .map(|v| {
            String::from_utf8(v.clone())
                .map_err(|_| Error::InvalidSecret(format!("key '{key}' is not UTF-8 text")))
        })
        .transpose()
}

impl Credentials {
    /// Reads the decoded `data` of a Secret. `password` is the basic-auth password when
    /// `username` is present, else the passphrase of `identity`.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<Self> {
        let username = text(data, "username")?;
        let password = text(data, "password")?;
        let identity = data.get("identity").cloned();
        let basic = match (&username, &password) {
            (Some(u), Some(p)) => Some((u.clone(), p.clone())),
            (Some(u), None) => Some((u.clone(), String::new())),
            (None, Some(_)) if identity.is_none() => {
                return Err(Error::InvalidSecret(
                    "key 'password' is set without 'username' or 'identity'".into(),
                ));
            }
            _ => None,
        };
        let identity_passphrase = if identity.is_some() && username.is_none() {
            password.clone()
        } else {
            None
        };
        Ok(Credentials {
            basic,
            bearer_token: text(data, "bearerToken")?,
            ca_cert: data.get("ca.crt").or_else(|| data.get("caFile")).cloned(),
            identity,
            identity_passphrase,
            known_hosts: data.get("known_hosts").cloned(),
            proxy: None,
        })
    }

    /// These credentials with every request going through `proxy`.
    pub fn with_proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// Every secret string that must never appear in a message.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((_, p)) = &self.basic {
            out.push(p.clone());
        }
        out.extend(self.bearer_token.clone());
        out.extend(self.identity_passphrase.clone());
        if let Some(Proxy {
            credentials: Some((_, Some(p))),
            ..
        }) = &self.proxy
        {
            out.push(p.clone());
        }
        if let Some(id) = &self.identity {
            // Any line of the key is secret; the armour lines are not.
            out.extend(
                String::from_utf8_lossy(id)
                    .lines()
                    .filter(|l| !l.starts_with("-----") && l.len() > 8)
                    .map(str::to_string),
            );
        }
        out.retain(|s| s.len() >= 3);
        out
    }

    /// Replaces every secret in `msg` by `***`: the last guard before text leaves the crate.
    pub fn redact(&self, msg: &str) -> String {
        let mut out = crate::url::redact_userinfo(msg);
        for secret in self.secrets() {
            if out.contains(&secret) {
                out = out.replace(&secret, "***");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn keys_as_flux_names_them() {
        let c = Credentials::from_secret_data(&data(&[("username", "u"), ("password", "p4ss")]))
            .unwrap();
        assert_eq!(c.basic, Some(("u".into(), "p4ss".into())));
        assert!(c.identity_passphrase.is_none());
        let c = Credentials::from_secret_data(&data(&[
            ("identity", "KEY"),
            ("password", "phrase"),
            ("known_hosts", "h"),
        ]))
        .unwrap();
        assert_eq!(c.identity_passphrase.as_deref(), Some("phrase"));
        assert!(c.basic.is_none());
        let e = Credentials::from_secret_data(&data(&[("password", "lonely")])).unwrap_err();
        assert!(!e.to_string().contains("lonely"));
    }

    #[test]
    fn debug_and_redact_hide_values() {
        let c = Credentials::from_secret_data(&data(&[
            ("username", "u"),
            ("password", "hunter2"),
            ("bearerToken", "tok-123"),
        ]))
        .unwrap();
        let dbg = format!("{c:?}");
        assert!(
            !dbg.contains("hunter2") && !dbg.contains("tok-123"),
            "{dbg}"
        );
        assert_eq!(
            c.redact("x hunter2 https://u:hunter2@h/p tok-123"),
            "x *** https://u:***@h/p ***"
        );
    }
}
