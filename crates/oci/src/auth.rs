//! Registry credentials: what a caller gives ([`Auth`]), Docker's config JSON (`~/.docker/config.json`,
//! `kubernetes.io/dockerconfigjson` Secrets) and the `WWW-Authenticate` challenges of the
//! registry v2 auth flow. Secrets never reach a `Debug` or `Display` output.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use serde::Deserialize;

use crate::error::{Error, Result};

/// How to authenticate to one registry.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Auth {
    /// No credentials (public repositories; anonymous bearer tokens still work).
    #[default]
    Anonymous,
    /// A user name and password (or personal access token): sent as Basic auth, or to the
    /// token service when the registry asks for a bearer token.
    Basic {
        /// User name.
        username: String,
        /// Password or token.
        password: String,
    },
    /// A registry token sent as `Authorization: Bearer` as is (docker config `registrytoken`).
    Bearer(String),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Anonymous => f.write_str("Anonymous"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

impl Auth {
    /// `user:pass` as the CLI's `--creds` takes it (a value without ':' is a token, sent as
    /// the password of an empty user, as flux does).
    pub fn from_creds(creds: &str) -> Self {
        match creds.split_once(':') {
            Some((u, p)) => Auth::Basic {
                username: u.to_string(),
                password: p.to_string(),
            },
            None => Auth::Basic {
                username: String::new(),
                password: creds.to_string(),
            },
        }
    }

    pub(crate) fn basic_header(&self) -> Option<String> {
        match self {
            Auth::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, ConfigEntry>,
}

#[derive(Deserialize, Default)]
struct ConfigEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// A parsed Docker config JSON: credentials by registry.
#[derive(Clone, Default)]
pub struct DockerConfig {
    auths: BTreeMap<String, Auth>,
}

impl fmt::Debug for DockerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.auths.keys()).finish()
    }
}

/// `https://host:port/v1/` → `host:port`: how Docker keys its `auths` map.
fn normalize_key(key: &str) -> String {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let k = k.split('/').next().unwrap_or(k);
    match k {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        _ => k.to_string(),
    }
}

impl DockerConfig {
    /// Parses `{"auths": {"host": {"auth": base64(user:pass)} | {"username", "password"}}}`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let file: ConfigFile = serde_json::from_slice(bytes).map_err(|e| {
            // serde's message may quote input (a password): keep only the position.
            Error::InvalidCredentials(format!(
                "docker config JSON does not parse (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let mut auths = BTreeMap::new();
        for (key, entry) in file.auths {
            let host = normalize_key(&key);
            let auth = if let Some(t) = entry.registrytoken.filter(|t| !t.is_empty()) {
                Auth::Bearer(t)
            } else if let Some(encoded) = entry.auth.filter(|a| !a.is_empty()) {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .map_err(|_| {
                        Error::InvalidCredentials(format!(
                            "docker config: the auth of {key:?} is not base64"
                        ))
                    })?;
                let text = String::from_utf8(raw).map_err(|_| {
                    Error::InvalidCredentials(format!(
                        "docker config: the auth of {key:?} is not UTF-8"
                    ))
                })?;
                let (u, p) = text.split_once(':').ok_or_else(|| {
                    Error::InvalidCredentials(format!(
                        "docker config: the auth of {key:?} is not user:password"
                    ))
                })?;
                Auth::Basic {
                    username: u.to_string(),
                    password: p.to_string(),
                }
            } else if let (Some(u), Some(p)) = (entry.username, entry.password) {
                Auth::Basic {
                    username: u,
                    password: p,
                }
            } else if entry.identitytoken.is_some() {
                return Err(Error::InvalidCredentials(format!(
                    "docker config: identity tokens (OAuth2 refresh tokens) of {key:?} are not supported yet"
                )));
            } else {
                continue;
            };
            auths.insert(host, auth);
        }
        Ok(DockerConfig { auths })
    }

    /// Reads `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`; empty when absent.
    pub fn load_default() -> Result<Self> {
        let dir = std::env::var_os("DOCKER_CONFIG")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".docker")));
        let Some(dir) = dir else {
            return Ok(DockerConfig::default());
        };
        let path = dir.join("config.json");
        match std::fs::read(&path) {
            Ok(bytes) => DockerConfig::parse(&bytes).map_err(|e| match e {
                Error::InvalidCredentials(m) => {
                    Error::InvalidCredentials(format!("{}: {m}", path.display()))
                }
                e => e,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DockerConfig::default()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The credentials for `registry` (`host[:port]`), anonymous when none are configured.
    pub fn for_registry(&self, registry: &str) -> Auth {
        self.auths
            .get(&normalize_key(registry))
            .cloned()
            .unwrap_or_default()
    }
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parses `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    Some(Challenge::Bearer {
        realm: params.get("realm")?.clone(),
        service: params.get("service").cloned(),
    })
}

/// `k="v", k2=v2` with quoted strings (commas inside quotes belong to the value).
fn parse_params(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if key.is_empty() || chars.next() != Some('=') {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
        }
        out.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into())
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="basic-realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Negotiate"), None);
    }

    #[test]
    fn docker_config() {
        let json = br#"{"auths":{"https://localhost:5000/v1/":{"auth":"dXNlcjpwYXNz"},"ghcr.io":{"username":"u","password":"p"},"x.io":{}}}"#;
        let c = DockerConfig::parse(json).unwrap();
        assert_eq!(
            c.for_registry("localhost:5000"),
            Auth::Basic {
                username: "user".into(),
                password: "pass".into()
            }
        );
        assert!(matches!(c.for_registry("ghcr.io"), Auth::Basic { .. }));
        assert_eq!(c.for_registry("x.io"), Auth::Anonymous);
        assert_eq!(
            format!("{:?}", c.for_registry("ghcr.io")),
            "Basic(u, <redacted>)"
        );
        let err = DockerConfig::parse(br#"{"auths":{"h":{"auth":"secretpassword!"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secretpassword"), "{err}");
    }
}
