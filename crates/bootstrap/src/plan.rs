//! Checking what a `bootstrap git` run was asked to do before Git or the cluster is touched: the
//! URL's scheme and credentials, the branch, the cluster's folder and the known_hosts entry of an
//! ssh server, turned into a [`Plan`] (how to reach Git, what the cluster's GitRepository and
//! Secret will hold).
//!
//! The rules are Flux's: http:// only when allowed, no password inside the URL (the cluster's
//! copy of the URL carries no user info for https), an ssh user taken from `--username` unless
//! the URL names one and the flag kept its default. Ours on top: ssh needs a key file and a
//! known_hosts entry (no agent, no trust on first use), and https remotes give the cluster the
//! same username and password since ferroflux generates no deploy keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::git::Auth;
use crate::manifests::{self, ManifestError, SyncOptions};

/// What a run was asked for, as the command line gives it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The repository's URL (file://, http(s):// or ssh://).
    pub url: String,
    /// The branch to commit to and to follow.
    pub branch: String,
    /// The cluster's folder in the repository, as typed (cleaned by the plan).
    pub path: String,
    /// The GitRepository's interval.
    pub interval: Duration,
    /// The ssh private key; required for ssh://, refused elsewhere.
    pub private_key_file: Option<PathBuf>,
    /// Where the ssh server's host key must be; `~/.ssh/known_hosts` when `None`.
    pub known_hosts_file: Option<PathBuf>,
    /// The https username, or the ssh user when the URL names none.
    pub username: String,
    /// The https password or token, or the ssh key's passphrase. Empty counts as none.
    pub password: Option<String>,
    /// The user asked for token authentication (https only).
    pub token_auth: bool,
    /// The user allowed http:// and its clear-text credentials.
    pub allow_insecure_http: bool,
    /// A PEM file of the CA that signs the https server's certificate.
    pub ca_file: Option<PathBuf>,
    /// The Secret the cluster reads credentials from; the namespace's name when `None`.
    pub secret_name: Option<String>,
    /// The namespace the engine runs in; also the name of the sync objects, as with Flux.
    pub namespace: String,
}

/// A checked run: how to reach Git and what the cluster will be given.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The credentials for cloning and pushing.
    pub auth: Auth,
    /// What `gotk-sync.yaml` holds (its URL is the one the cluster fetches).
    pub sync: SyncOptions,
    /// The data of the Secret the GitRepository reads; empty when the remote needs nothing.
    pub secret: BTreeMap<String, String>,
    /// The CA file to trust when cloning and pushing over https.
    pub ca_file: Option<PathBuf>,
    /// What the user should know before the run goes on (printed, not fatal).
    pub warnings: Vec<String>,
}

/// A run that must not start, with the message the user sees.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--path` is outside the repository or unprintable.
    #[error(transparent)]
    Path(#[from] ManifestError),
    /// A zero interval would have the controller fetch without pause.
    #[error("--interval must be more than zero")]
    Interval,
    /// A branch that git would read as an option or a range.
    #[error("invalid --branch {0:?}")]
    Branch(String),
    /// No `scheme://` in the URL (an scp-like `git@host:path` among others).
    #[error("--url {0:?} is not a URL: use file://, https:// or ssh://")]
    NotAUrl(String),
    /// A scheme bootstrap cannot push to.
    #[error("scheme {0:?} is not supported: use file://, https:// or ssh://")]
    Scheme(String),
    /// The CA file given cannot be read.
    #[error("unable to read TLS CA file {}", path.display())]
    CaFile {
        /// The file named by the user.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The ssh key file given cannot be read.
    #[error("cannot read the private key file {}", path.display())]
    KeyFile {
        /// The file named by the user.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// `ssh-keygen`, which reads hashed known_hosts entries, could not run.
    #[error("cannot run ssh-keygen to read the known_hosts file")]
    SshKeygen(#[source] std::io::Error),
    /// Flags that contradict the URL's scheme, or credentials the URL must not hold.
    #[error("{0}")]
    Flags(String),
}

fn flags(message: impl Into<String>) -> PlanError {
    PlanError::Flags(message.into())
}

impl Plan {
    /// Checks `req` and works out what the run will use; `Err` names the first problem. Reads
    /// the key, CA and known_hosts files, nothing else.
    pub fn new(req: &Request) -> Result<Plan, PlanError> {
        let namespace = req.namespace.clone();
        let target_path = manifests::clean_target_path(&req.path)?;
        if req.interval.is_zero() {
            return Err(PlanError::Interval);
        }
        if req.branch.is_empty() || req.branch.starts_with('-') || req.branch.contains("..") {
            return Err(PlanError::Branch(req.branch.clone()));
        }
        let (scheme, rest) = req
            .url
            .split_once("://")
            .ok_or_else(|| PlanError::NotAUrl(req.url.clone()))?;
        let ca_pem = match &req.ca_file {
            Some(p) => Some(
                std::fs::read_to_string(p).map_err(|source| PlanError::CaFile {
                    path: p.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        let password = req.password.clone().filter(|p| !p.is_empty());
        let mut secret = BTreeMap::new();
        let mut warnings = Vec::new();
        let (auth, sync_url) = match scheme {
            "file" => {
                if req.private_key_file.is_some() || password.is_some() {
                    return Err(flags(
                        "file:// URLs take no credentials: drop --private-key-file and --password",
                    ));
                }
                (Auth::None, req.url.clone())
            }
            "http" | "https" => {
                if scheme == "http" && !req.allow_insecure_http {
                    return Err(flags(
                        "scheme http is insecure, pass --allow-insecure-http=true to allow it",
                    ));
                }
                if req.private_key_file.is_some() {
                    return Err(flags(format!(
                        "--private-key-file is for ssh:// URLs; use --username and --password \
                         with {scheme}://"
                    )));
                }
                let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
                let host = match authority.rsplit_once('@') {
                    Some((userinfo, host)) => {
                        if userinfo.contains(':') {
                            return Err(flags(
                                "--url must not hold a password: pass it with --password or the \
                                 GIT_PASSWORD variable",
                            ));
                        }
                        host
                    }
                    None => authority,
                };
                let url = format!("{scheme}://{host}/{path}");
                let auth = match &password {
                    Some(p) => {
                        if !req.token_auth {
                            warnings.push(
                                "ferroflux does not generate SSH deploy keys: the cluster will \
                                 use the same username and password (as with --token-auth)"
                                    .to_string(),
                            );
                        }
                        secret.insert("username".to_string(), req.username.clone());
                        secret.insert("password".to_string(), p.clone());
                        Auth::Basic {
                            username: req.username.clone(),
                            password: p.clone(),
                        }
                    }
                    None if req.token_auth => {
                        return Err(flags(
                            "--token-auth needs --password (or the GIT_PASSWORD variable)",
                        ));
                    }
                    None => Auth::None,
                };
                if let Some(ca) = &ca_pem {
                    secret.insert("ca.crt".to_string(), ca.clone());
                }
                (auth, url)
            }
            "ssh" => {
                if req.token_auth {
                    return Err(flags(
                        "--token-auth is for https:// URLs; ssh:// needs --private-key-file",
                    ));
                }
                let key_file = req.private_key_file.clone().ok_or_else(|| {
                    flags(
                        "ssh:// URLs need --private-key-file: ferroflux does not use an ssh \
                         agent or generate deploy keys",
                    )
                })?;
                let identity =
                    std::fs::read_to_string(&key_file).map_err(|source| PlanError::KeyFile {
                        path: key_file.clone(),
                        source,
                    })?;
                if !identity.contains("PRIVATE KEY") {
                    return Err(flags(format!(
                        "{} is not a private key in OpenSSH or PEM format",
                        key_file.display()
                    )));
                }
                let known_hosts = match &req.known_hosts_file {
                    Some(p) => p.clone(),
                    None => std::env::var_os("HOME")
                        .map(|h| PathBuf::from(h).join(".ssh/known_hosts"))
                        .ok_or_else(|| flags("HOME is not set: pass --known-hosts-file"))?,
                };
                let (authority, _) = rest.split_once('/').unwrap_or((rest, ""));
                let (user, hostport) = match authority.rsplit_once('@') {
                    Some((u, h)) => (Some(u), h),
                    None => (None, authority),
                };
                if user.is_some_and(|u| u.contains(':')) {
                    return Err(flags("--url must not hold a password"));
                }
                let host_entry = known_hosts_name(hostport);
                let lines = known_host_lines(&known_hosts, &host_entry)?;
                // Flux sets the URL's user from --username unless the URL names one and the
                // flag was left at its default.
                let user = match user {
                    Some(u) if req.username == "git" => u.to_string(),
                    _ => req.username.clone(),
                };
                let path = &rest[authority.len()..];
                let url = format!("ssh://{user}@{hostport}{path}");
                secret.insert("identity".to_string(), identity);
                let public = key_file.with_extension("pub");
                if let Ok(pub_key) = std::fs::read_to_string(&public) {
                    secret.insert("identity.pub".to_string(), pub_key);
                }
                secret.insert("known_hosts".to_string(), lines);
                if let Some(p) = &password {
                    secret.insert("password".to_string(), p.clone());
                }
                (
                    Auth::Ssh {
                        key_file,
                        passphrase: password.clone(),
                        known_hosts,
                    },
                    url,
                )
            }
            other => return Err(PlanError::Scheme(other.to_string())),
        };
        let secret_name = req.secret_name.clone().unwrap_or_else(|| namespace.clone());
        Ok(Plan {
            auth,
            sync: SyncOptions {
                name: namespace.clone(),
                namespace,
                url: sync_url,
                branch: req.branch.clone(),
                secret_name,
                interval: req.interval,
                target_path,
            },
            secret,
            ca_file: req.ca_file.clone(),
            warnings,
        })
    }

    /// The folder of the repository the engine's files go in: `<path>/<namespace>`.
    pub fn manifests_dir(&self) -> String {
        if self.sync.target_path.is_empty() {
            self.sync.namespace.clone()
        } else {
            format!("{}/{}", self.sync.target_path, self.sync.namespace)
        }
    }
}

/// `host` or `[host]:port`, as known_hosts names a server.
fn known_hosts_name(hostport: &str) -> String {
    match hostport.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') && port != "22" && !port.is_empty() => {
            format!(
                "[{}]:{port}",
                host.trim_start_matches('[').trim_end_matches(']')
            )
        }
        Some((host, "22")) => host.to_string(),
        _ => hostport.to_string(),
    }
}

/// The known_hosts lines for `host` (hashed entries too, through `ssh-keygen -F`).
fn known_host_lines(file: &Path, host: &str) -> Result<String, PlanError> {
    if !file.exists() {
        return Err(flags(format!(
            "known_hosts file {} does not exist: add the SSH server's host key there (after \
             checking its fingerprint) or pass --known-hosts-file",
            file.display()
        )));
    }
    let out = std::process::Command::new("ssh-keygen")
        .arg("-F")
        .arg(host)
        .arg("-f")
        .arg(file)
        .output()
        .map_err(PlanError::SshKeygen)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return Err(flags(format!(
            "no host key for {host} in {}: add the SSH server's host key (after checking its \
             fingerprint) or pass --known-hosts-file",
            file.display()
        )));
    }
    Ok(lines.join("\n") + "\n")
}

#[cfg(test)]
pub(crate) mod tests;
