//! Resolving `spec.ref` against the remote and fetching the one commit it names.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gix::bstr::ByteSlice;
use gix::protocol::transport::client::blocking_io::Transport;
use gix::remote::Direction;

use crate::credentials::Credentials;
use crate::error::{Error, Result};
use crate::http::{Client, HttpOutcome};
use crate::semver::{Range, latest_matching};
use crate::ssh::SshSetup;
use crate::url::{RepoUrl, Scheme};

/// `spec.ref` of a GitRepository. Empty strings count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitRef {
    /// `spec.ref.branch`: follow the branch's head.
    pub branch: Option<String>,
    /// `spec.ref.tag`: a tag, annotated or not.
    pub tag: Option<String>,
    /// `spec.ref.semver`: the highest tag in this range.
    pub semver: Option<String>,
    /// `spec.ref.name`: a full ref name (`refs/heads/main`, `refs/pull/1/head`).
    pub name: Option<String>,
    /// `spec.ref.commit`: a commit, alone or on `branch`.
    pub commit: Option<String>,
}

/// The branch Flux follows when `spec.ref` names nothing.
pub const DEFAULT_BRANCH: &str = "master";

/// What `spec.ref` asks for, after Flux's precedence: commit > name > semver > tag > branch.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    Commit {
        id: gix::ObjectId,
        branch: Option<String>,
    },
    Name(String),
    Semver(Range),
    Tag(String),
    Branch(String),
}

fn set(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl Plan {
    pub(crate) fn from_ref(r: &GitRef) -> Result<Self> {
        let invalid = |what: &str, detail: String| Error::InvalidRef(format!("{what}: {detail}"));
        if let Some(c) = set(&r.commit) {
            if c.len() != 40 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(
                    "spec.ref.commit",
                    format!("'{c}' is not a full 40-character SHA-1 commit id"),
                ));
            }
            let id = gix::ObjectId::from_hex(c.to_ascii_lowercase().as_bytes())
                .map_err(|e| invalid("spec.ref.commit", e.to_string()))?;
            return Ok(Plan::Commit {
                id,
                branch: set(&r.branch).map(str::to_string),
            });
        }
        if let Some(n) = set(&r.name) {
            if !n.starts_with("refs/") {
                return Err(invalid(
                    "spec.ref.name",
                    format!("'{n}' is not a full reference name such as refs/heads/main"),
                ));
            }
            return Ok(Plan::Name(n.to_string()));
        }
        if let Some(s) = set(&r.semver) {
            let range = Range::parse(s).map_err(|e| invalid("spec.ref.semver", e.to_string()))?;
            return Ok(Plan::Semver(range));
        }
        if let Some(t) = set(&r.tag) {
            return Ok(Plan::Tag(t.to_string()));
        }
        Ok(Plan::Branch(
            set(&r.branch).unwrap_or(DEFAULT_BRANCH).to_string(),
        ))
    }

    /// The refspecs whose listing answers this plan.
    fn list_specs(&self) -> Vec<String> {
        match self {
            Plan::Commit { id, .. } => vec![id.to_string()],
            Plan::Name(n) => vec![n.clone()],
            Plan::Semver(_) => vec!["refs/tags/*:refs/tags/*".into()],
            Plan::Tag(t) => vec![format!("refs/tags/{t}")],
            Plan::Branch(b) => vec![format!("refs/heads/{b}")],
        }
    }
}

/// A ref on the remote.
#[derive(Debug, Clone)]
pub struct RemoteRef {
    /// The full ref name (`refs/heads/main`).
    pub name: String,
    /// What the ref points to (a tag object for annotated tags).
    pub target: gix::ObjectId,
    /// The commit an annotated tag points to, when the server said so.
    pub peeled: Option<gix::ObjectId>,
}

impl RemoteRef {
    fn commit(&self) -> gix::ObjectId {
        self.peeled.unwrap_or(self.target)
    }
}

/// The commit `spec.ref` designates right now, and the revision string Flux would show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// 40 hex digits.
    pub commit: String,
    /// `main@sha1:…`, `v1.2.3@sha1:…`, `refs/heads/main@sha1:…` or `sha1:…`.
    pub revision: String,
    /// The full ref name fetched (`None` for a bare commit).
    pub ref_name: Option<String>,
}

/// Settings that are not in `spec`.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The controller's `--allow-file-urls`.
    pub allow_file_urls: bool,
    /// `spec.timeout` (Flux's default is 60s).
    pub timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            allow_file_urls: false,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Keeps what a transport needs alive, and what it learnt about failures.
pub(crate) enum Diagnostics {
    Http(Arc<Mutex<HttpOutcome>>),
    Ssh(SshSetup),
    File,
}

/// A repository to follow: URL, ref and credentials, validated.
#[derive(Debug, Clone)]
pub struct GitSource {
    pub(crate) url: RepoUrl,
    pub(crate) plan: Plan,
    pub(crate) creds: Credentials,
    pub(crate) opts: FetchOptions,
}

/// The fetched commit in a temporary bare repository.
pub struct Fetched {
    /// The bare repository holding the commit and its tree.
    pub repo: gix::Repository,
    /// What the ref resolved to.
    pub resolved: Resolved,
    /// The commit's root tree.
    pub tree: gix::ObjectId,
    // Removed with the repository when dropped.
    _dir: tempfile::TempDir,
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}

impl GitSource {
    /// Validates the URL (scheme, scp-style, `file://` permission), the ref and the
    /// credentials' fit to the scheme. Nothing touches the network.
    pub fn new(
        url: &str,
        reference: &GitRef,
        creds: Credentials,
        opts: FetchOptions,
    ) -> Result<Self> {
        let url = RepoUrl::parse(url, opts.allow_file_urls)?;
        let plan = Plan::from_ref(reference)?;
        if url.scheme != Scheme::Http && url.scheme != Scheme::Https && creds.proxy.is_some() {
            return Err(Error::InvalidSecret(
                "a proxy (proxySecretRef) is only used for http(s) URLs".into(),
            ));
        }
        if url.scheme == Scheme::Ssh {
            if creds.known_hosts.is_none() {
                return Err(Error::InvalidSecret(
                    "ssh URLs need 'known_hosts' in the secret: host keys are always verified"
                        .into(),
                ));
            }
            if creds.identity.is_none() {
                return Err(Error::InvalidSecret(
                    "ssh URLs need 'identity' (a private key) in the secret".into(),
                ));
            }
        }
        Ok(GitSource {
            url,
            plan,
            creds,
            opts,
        })
    }

    /// The URL as shown in messages (never with a password).
    pub fn display_url(&self) -> &str {
        &self.url.display
    }

    /// Scrubs credentials from a message; use it on anything logged about this source.
    pub fn redact(&self, msg: &str) -> String {
        self.creds.redact(msg)
    }

    fn transport(&self) -> Result<(Box<dyn Transport + Send>, Diagnostics)> {
        self.transport_for(gix::protocol::transport::Protocol::V2)
    }

    /// A transport speaking `protocol` (v2 to fetch; v1 to push, which v2 cannot).
    pub(crate) fn transport_for(
        &self,
        protocol: gix::protocol::transport::Protocol,
    ) -> Result<(Box<dyn Transport + Send>, Diagnostics)> {
        use gix::protocol::transport::client::blocking_io as bio;
        match self.url.scheme {
            Scheme::Http | Scheme::Https => {
                let (client, outcome) = Client::new(
                    &self.creds,
                    self.url.user.as_deref(),
                    self.url.password.as_deref(),
                    self.opts.timeout,
                    self.url.scheme == Scheme::Https,
                )?;
                let t = gix_transport::client::blocking_io::http::Transport::new_http(
                    client,
                    self.url.url.clone(),
                    protocol,
                    false,
                );
                Ok((Box::new(t), Diagnostics::Http(outcome)))
            }
            Scheme::Ssh => {
                let setup = SshSetup::new(&self.creds, self.opts.timeout)?;
                let options = bio::ssh::connect::Options {
                    command: Some(setup.command.clone().into_os_string()),
                    disallow_shell: true,
                    kind: Some(bio::ssh::ProgramKind::Ssh),
                };
                let t = bio::ssh::connect(self.url.url.clone(), protocol, options, false)
                    .map_err(|e| self.git_error(&e))?;
                Ok((Box::new(t), Diagnostics::Ssh(setup)))
            }
            Scheme::File => {
                let t = bio::file::connect(self.url.url.path.clone(), protocol, false)
                    .map_err(|e| self.git_error(&e))?;
                Ok((Box::new(t), Diagnostics::File))
            }
        }
    }

    fn git_error(&self, e: &(dyn std::error::Error + 'static)) -> Error {
        Error::Git {
            url: self.url.display.clone(),
            detail: self.creds.redact(&error_chain(e)),
        }
    }

    /// Turns a transport failure into an error, using what the transport saw to tell an
    /// authentication failure from any other.
    pub(crate) fn classify(
        &self,
        e: &(dyn std::error::Error + 'static),
        diag: &Diagnostics,
    ) -> Error {
        let chain = self.creds.redact(&error_chain(e));
        let url = self.url.display.clone();
        match diag {
            Diagnostics::Http(outcome) => {
                let status = outcome.lock().ok().and_then(|o| o.status);
                match status {
                    Some(401) | Some(403) => {
                        let given = self.creds.basic.is_some()
                            || self.creds.bearer_token.is_some()
                            || self.url.user.is_some();
                        Error::Authentication {
                            url,
                            detail: if given {
                                format!(
                                    "the server refused the credentials (HTTP {})",
                                    status.unwrap_or(401)
                                )
                            } else {
                                "the server requires credentials and the GitRepository has no secretRef \
                                 with username/password or bearerToken"
                                    .into()
                            },
                        }
                    }
                    _ => Error::Git { url, detail: chain },
                }
            }
            Diagnostics::Ssh(setup) => {
                let stderr = self.creds.redact(setup.stderr().trim());
                if stderr.contains("Host key verification failed")
                    || stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
                    || stderr.contains("No ED25519 host key is known")
                    || stderr.contains("host key for")
                {
                    Error::Git {
                        url,
                        detail: format!(
                            "host key verification failed: the server's key is not in known_hosts ({})",
                            last_line(&stderr)
                        ),
                    }
                } else if stderr.contains("Permission denied")
                    || stderr.contains("incorrect passphrase")
                    || stderr.contains("Load key")
                {
                    Error::Authentication {
                        url,
                        detail: format!("ssh authentication failed ({})", last_line(&stderr)),
                    }
                } else if stderr.is_empty() {
                    Error::Git { url, detail: chain }
                } else {
                    Error::Git {
                        url,
                        detail: format!("{chain} (ssh: {})", last_line(&stderr)),
                    }
                }
            }
            Diagnostics::File => Error::Git { url, detail: chain },
        }
    }

    fn scratch_repo() -> Result<(tempfile::TempDir, gix::Repository)> {
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-git-")
            .tempdir()
            .map_err(|e| Error::storage(std::env::temp_dir(), e))?;
        let path = dir.path().to_path_buf();
        gix::init_bare(&path)
            .map_err(|e| Error::Archive(format!("creating a scratch repository: {e}")))?;
        let repo = Self::open_isolated(&path)?;
        Ok((dir, repo))
    }

    fn open_isolated(path: &std::path::Path) -> Result<gix::Repository> {
        // Isolated: no user or system config may redirect URLs or run credential helpers.
        gix::open_opts(
            path,
            gix::open::Options::isolated().config_overrides([
                "user.name=ferroflux",
                "user.email=ferroflux@localhost",
                "protocol.version=2",
            ]),
        )
        .map_err(|e| Error::Archive(format!("opening a scratch repository: {e}")))
    }

    fn list(&self, repo: &gix::Repository, specs: &[String]) -> Result<Vec<RemoteRef>> {
        let (transport, diag) = self.transport()?;
        let remote = repo
            .remote_at(self.url.url.clone())
            .and_then(|r| r.with_refspecs(specs.iter().map(|s| s.as_str()), Direction::Fetch))
            .map_err(|e| self.git_error(&e))?;
        let conn = remote
            .to_connection_with_transport(transport)
            .with_credentials(|_| Ok(None));
        let (map, _) = conn
            .ref_map(gix::progress::Discard, Default::default())
            .map_err(|e| self.classify(&e, &diag))?;
        Ok(map
            .remote_refs
            .iter()
            .filter_map(|r| {
                let (name, target, peeled) = r.unpack();
                Some(RemoteRef {
                    name: name.to_str_lossy().into_owned(),
                    target: target?.to_owned(),
                    peeled: peeled.map(|p| p.to_owned()),
                })
            })
            .collect())
    }

    /// An empty repository used only to list refs, made once per process: listing writes
    /// nothing, and creating a repository per poll would cost more than the poll itself.
    fn listing_repo() -> Result<gix::Repository> {
        static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let path = match DIR.get() {
            Some(dir) => dir.path().to_path_buf(),
            None => {
                let (dir, _) = Self::scratch_repo()?;
                DIR.get_or_init(|| dir).path().to_path_buf()
            }
        };
        Self::open_isolated(&path)
    }

    /// Lists every ref of the remote; an empty list means an empty repository.
    pub fn list_all(&self) -> Result<Vec<RemoteRef>> {
        self.list(
            &Self::listing_repo()?,
            &[
                "+refs/heads/*:refs/heads/*".to_string(),
                "+refs/tags/*:refs/tags/*".to_string(),
            ],
        )
    }

    fn not_found(&self, what: String) -> Error {
        // An empty repository gets its own message: no ref can ever be found there.
        if let Ok(all) = self.list_all()
            && all.is_empty()
        {
            return Error::EmptyRepository {
                url: self.url.display.clone(),
            };
        }
        Error::Git {
            url: self.url.display.clone(),
            detail: what,
        }
    }

    fn resolve_in(&self, refs: &[RemoteRef]) -> Result<Resolved> {
        let find = |full: &str| refs.iter().find(|r| r.name == full);
        let with = |short: &str, full: String, r: &RemoteRef| Resolved {
            commit: r.commit().to_string(),
            revision: format!("{short}@sha1:{}", r.commit()),
            ref_name: Some(full),
        };
        match &self.plan {
            Plan::Commit { id, branch } => Ok(Resolved {
                commit: id.to_string(),
                revision: match branch {
                    Some(b) => format!("{b}@sha1:{id}"),
                    None => format!("sha1:{id}"),
                },
                ref_name: None,
            }),
            Plan::Branch(b) => {
                let full = format!("refs/heads/{b}");
                find(&full)
                    .map(|r| with(b, full.clone(), r))
                    .ok_or_else(|| {
                        self.not_found(format!(
                            "couldn't find remote ref \"{full}\" (branch '{b}' does not exist)"
                        ))
                    })
            }
            Plan::Tag(t) => {
                let full = format!("refs/tags/{t}");
                find(&full)
                    .map(|r| with(t, full.clone(), r))
                    .ok_or_else(|| {
                        self.not_found(format!(
                            "couldn't find remote ref \"{full}\" (tag '{t}' does not exist)"
                        ))
                    })
            }
            Plan::Name(n) => find(n)
                .map(|r| with(n, n.clone(), r))
                .ok_or_else(|| self.not_found(format!("couldn't find remote ref \"{n}\""))),
            Plan::Semver(range) => {
                let tags: Vec<&str> = refs
                    .iter()
                    .filter_map(|r| r.name.strip_prefix("refs/tags/"))
                    .collect();
                let v = latest_matching(range, tags.iter().copied())
                    .ok_or_else(|| self.not_found(format!("no match found for semver: {range}")))?;
                let full = format!("refs/tags/{}", v.original);
                let r =
                    find(&full).ok_or_else(|| self.not_found(format!("tag {full} vanished")))?;
                Ok(with(&v.original, full.clone(), r))
            }
        }
    }

    /// Asks the remote which commit `spec.ref` designates: one ls-refs exchange, no objects
    /// downloaded. A commit ref needs no network at all.
    pub fn resolve(&self) -> Result<Resolved> {
        if let Plan::Commit { .. } = self.plan {
            return self.resolve_in(&[]);
        }
        let refs = self.list(&Self::listing_repo()?, &self.plan.list_specs())?;
        self.resolve_in(&refs)
    }

    /// Fetches the commit of `resolved` (depth 1) into a new temporary bare repository.
    pub fn fetch(&self, resolved: &Resolved) -> Result<Fetched> {
        let (dir, repo) = Self::scratch_repo()?;
        let spec = match &resolved.ref_name {
            Some(full) => format!("+{full}:{full}"),
            None => resolved.commit.clone(),
        };
        let (transport, diag) = self.transport()?;
        let remote = repo
            .remote_at(self.url.url.clone())
            .and_then(|r| r.with_refspecs([spec.as_str()], Direction::Fetch))
            .map_err(|e| self.git_error(&e))?;
        let depth = std::num::NonZeroU32::MIN;
        let interrupt = AtomicBool::new(false);
        let outcome = remote
            .to_connection_with_transport(transport)
            .with_credentials(|_| Ok(None))
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| self.classify(&e, &diag))?
            .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(depth))
            .receive(gix::progress::Discard, &interrupt)
            .map_err(|e| self.classify(&e, &diag))?;
        // The ref may have moved between listing and fetching: the fetched commit wins.
        let fetched_id = outcome
            .ref_map
            .mappings
            .iter()
            .find_map(|m| match &m.remote {
                gix::remote::fetch::refmap::Source::ObjectId(id) => Some(id.to_owned()),
                gix::remote::fetch::refmap::Source::Ref(r) => {
                    let (_, target, peeled) = r.unpack();
                    peeled.or(target).map(|o| o.to_owned())
                }
            })
            .ok_or_else(|| self.not_found(format!("the remote did not send {spec}")))?;
        let commit = repo
            .find_object(fetched_id)
            .map_err(|e| self.git_error(&e))?
            .peel_to_commit()
            .map_err(|e| self.git_error(&e))?;
        let tree = commit.tree_id().map_err(|e| self.git_error(&e))?.detach();
        let mut resolved = resolved.clone();
        let id = commit.id.to_string();
        if id != resolved.commit {
            resolved.revision = resolved.revision.replace(&resolved.commit, &id);
            resolved.commit = id;
        }
        drop(commit);
        Ok(Fetched {
            repo,
            resolved,
            tree,
            _dir: dir,
        })
    }
}

fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
}
