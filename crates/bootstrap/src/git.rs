//! Cloning, committing to and pushing a branch for `bootstrap`, through the `git` program; the
//! one way ferroflux runs `git` (the CLI's demo repository too).
//!
//! Decision: the Git writes of bootstrap drive the `git` program rather than gix. gix 0.90 (the
//! version the workspace pins) can clone and fetch but cannot push, and bootstrap must push over
//! file://, https:// and ssh://. Reading (the controllers' fetches) stays on gix in
//! `ferroflux-source`; `./test.sh` installs `git`.
//!
//! Credentials never appear on a command line, in output or in an error: a password or token
//! reaches git through `GIT_ASKPASS` (a script in a private temporary folder that prints a
//! variable only the git child process sees), an ssh key through `GIT_SSH_COMMAND` naming the key
//! file, with `StrictHostKeyChecking=yes` and an explicit known_hosts file. Every message taken
//! from git's stderr is scrubbed of the secret before it is shown. The user's and the system's
//! git configuration are ignored (as Flux's go-git ignores them), so credential helpers, hooks
//! paths or URL rewrites on this machine cannot change what bootstrap does.

use std::ffi::OsString;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use ferroflux_gitsign::Signer;

/// How the CLI authenticates to the remote.
#[derive(Clone)]
pub enum Auth {
    /// file:// remotes, or an https server that needs nothing.
    None,
    /// HTTP basic auth (a password or a token).
    Basic {
        /// The account; git asks for it only when the URL names none.
        username: String,
        /// The password or token, handed to git through `GIT_ASKPASS` only.
        password: String,
    },
    /// An ssh key file, its passphrase, and the known_hosts file that must hold the host's key.
    Ssh {
        /// The private key ssh is told to use, and no other.
        key_file: PathBuf,
        /// The key's passphrase, answered through `SSH_ASKPASS`.
        passphrase: Option<String>,
        /// The only file the server's host key is looked up in.
        known_hosts: PathBuf,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Auth::Ssh { key_file, .. } => write!(f, "Ssh({})", key_file.display()),
        }
    }
}

/// The author of bootstrap commits.
#[derive(Clone, Debug)]
pub struct Signature {
    /// Written as author and committer name.
    pub name: String,
    /// Written as author and committer email; may be empty, as Flux's default is.
    pub email: String,
}

/// A git step that failed, with git's own words scrubbed of every secret.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The `git` program could not be started.
    #[error("cannot run git (is it installed?): {0}")]
    Spawn(std::io::Error),
    /// The private temporary folder of the clone could not be made.
    #[error("cannot prepare a temporary Git work tree: {0}")]
    Io(#[from] std::io::Error),
    /// git ran and failed.
    #[error("git {op} failed: {message}")]
    Command {
        /// The git command, e.g. `ls-remote`.
        op: String,
        /// git's stderr without hints, on one line.
        message: String,
    },
    /// The remote has branches, but not the one asked for (an empty remote is fine).
    #[error("branch {branch:?} does not exist in {url} (it has: {existing})")]
    NoBranch {
        /// The branch asked for.
        branch: String,
        /// The remote.
        url: String,
        /// The branches it has, comma-separated.
        existing: String,
    },
    /// The commit could not be signed; nothing was pushed.
    #[error("failed to sign the commit: {0}")]
    Sign(ferroflux_gitsign::SignError),
    /// The remote moved on since the clone: fetch and try again.
    #[error("the push to {url} was rejected: {reason}")]
    NonFastForward {
        /// The remote.
        url: String,
        /// git's summary of the refused ref update.
        reason: String,
    },
    /// The remote refused the push itself (a hook, a protected branch, permissions).
    #[error("the push to {url} was rejected by the remote: {reason}")]
    Rejected {
        /// The remote.
        url: String,
        /// git's summary and what the remote said.
        reason: String,
    },
}

/// The `git` program with the user's and the system's configuration ignored, no prompts, the C
/// locale, and the credentials' environment when a [`Checkout`] has some; messages taken from
/// its stderr are scrubbed of every secret.
#[derive(Clone)]
pub struct Git {
    env: Vec<(OsString, OsString)>,
    secrets: Vec<String>,
}

impl Default for Git {
    fn default() -> Self {
        Git {
            env: vec![
                ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
                ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
                ("GIT_TERMINAL_PROMPT".into(), "0".into()),
                ("LC_ALL".into(), "C".into()),
            ],
            secrets: Vec::new(),
        }
    }
}

impl Git {
    fn command(&self, cwd: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("git");
        cmd.current_dir(cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Ctrl-C drops the future running git: git must not outlive it.
            .kill_on_drop(true);
        cmd
    }

    /// Runs `git ARGS` in `cwd`; its stdout, or an error naming `op` with git's message.
    pub async fn run(&self, cwd: &Path, op: &str, args: &[&str]) -> Result<String, GitError> {
        let out = self
            .command(cwd)
            .args(args)
            .output()
            .await
            .map_err(GitError::Spawn)?;
        if !out.status.success() {
            return Err(self.failure(op, &out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `git ARGS` in `cwd` with `input` on its stdin; its stdout as bytes.
    async fn run_bytes(
        &self,
        cwd: &Path,
        op: &str,
        args: &[&str],
        input: &[u8],
    ) -> Result<Vec<u8>, GitError> {
        use tokio::io::AsyncWriteExt as _;
        let mut child = self
            .command(cwd)
            .args(args)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(GitError::Spawn)?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input).await.map_err(GitError::Spawn)?;
            // Dropping stdin closes it: git reads to the end.
        }
        let out = child.wait_with_output().await.map_err(GitError::Spawn)?;
        if !out.status.success() {
            return Err(self.failure(op, &out.stderr));
        }
        Ok(out.stdout)
    }

    fn failure(&self, op: &str, stderr: &[u8]) -> GitError {
        let text = String::from_utf8_lossy(stderr);
        let message: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
            .collect();
        GitError::Command {
            op: op.to_string(),
            message: self.scrub(&message.join("; ")),
        }
    }

    /// Removes every secret from a message taken from git's output.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            out = out.replace(s.as_str(), "***");
        }
        out
    }
}

/// A private temporary clone of one branch; removed when dropped.
pub struct Checkout {
    dir: tempfile::TempDir,
    url: String,
    branch: String,
    git: Git,
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"))
}

const ASKPASS: &str = "#!/bin/sh\n\
# Answers git's and ssh's prompts from variables set only for the git child process.\n\
case \"$1\" in\n\
  Username*|username*) printf '%s\\n' \"$FERROFLUX_GIT_USERNAME\" ;;\n\
  *) printf '%s\\n' \"$FERROFLUX_GIT_PASSWORD\" ;;\n\
esac\n";

impl Checkout {
    /// Clones `branch` of `url` into a new private temporary folder. An empty remote gives an
    /// unborn branch (the first push creates it); a remote without that branch is an error.
    pub async fn clone(
        url: &str,
        branch: &str,
        auth: &Auth,
        ca_file: Option<&Path>,
    ) -> Result<Self, GitError> {
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-bootstrap-")
            .tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let Git {
            mut env,
            mut secrets,
        } = Git::default();
        if let Some(ca) = ca_file {
            env.push(("GIT_SSL_CAINFO".into(), ca.as_os_str().to_owned()));
        }
        let askpass = dir.path().join("askpass.sh");
        match auth {
            Auth::None => {}
            Auth::Basic { username, password } => {
                write_askpass(&askpass)?;
                env.push(("GIT_ASKPASS".into(), askpass.as_os_str().to_owned()));
                env.push(("FERROFLUX_GIT_USERNAME".into(), username.into()));
                env.push(("FERROFLUX_GIT_PASSWORD".into(), password.into()));
                if !password.is_empty() {
                    secrets.push(password.clone());
                }
            }
            Auth::Ssh {
                key_file,
                passphrase,
                known_hosts,
            } => {
                // -F /dev/null: the user's ssh config must not swap the key or the host check.
                let mut cmd = format!(
                    "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o IdentityAgent=none \
                     -o StrictHostKeyChecking=yes -o UserKnownHostsFile={} \
                     -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
                     -o ConnectTimeout=30",
                    shell_quote(key_file),
                    shell_quote(known_hosts)
                );
                if let Some(pass) = passphrase {
                    write_askpass(&askpass)?;
                    env.push(("SSH_ASKPASS".into(), askpass.as_os_str().to_owned()));
                    env.push(("SSH_ASKPASS_REQUIRE".into(), "force".into()));
                    env.push(("FERROFLUX_GIT_PASSWORD".into(), pass.into()));
                    if !pass.is_empty() {
                        secrets.push(pass.clone());
                    }
                } else {
                    cmd.push_str(" -o BatchMode=yes");
                }
                env.push(("GIT_SSH_COMMAND".into(), cmd.into()));
            }
        }
        let checkout = Checkout {
            dir,
            url: url.to_string(),
            branch: branch.to_string(),
            git: Git { env, secrets },
        };
        let work = checkout.path();
        let work_str = work.to_string_lossy().to_string();
        checkout
            .git
            .run(
                checkout.dir.path(),
                "init",
                &["init", "-q", "-b", branch, &work_str],
            )
            .await?;
        checkout
            .git("remote add", &["remote", "add", "origin", url])
            .await?;
        let heads = checkout
            .git("ls-remote", &["ls-remote", "--heads", "origin"])
            .await?;
        let names: Vec<&str> = heads
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter_map(|r| r.strip_prefix("refs/heads/"))
            .collect();
        if names.contains(&branch) {
            checkout.fetch_and_reset().await?;
        } else if !names.is_empty() {
            return Err(GitError::NoBranch {
                branch: branch.to_string(),
                url: url.to_string(),
                existing: names.join(", "),
            });
        }
        Ok(checkout)
    }

    /// The work tree.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// The commit the branch points at, `None` while it is unborn.
    pub async fn head(&self) -> Result<Option<String>, GitError> {
        match self
            .git(
                "rev-parse",
                &["rev-parse", "-q", "--verify", "HEAD^{commit}"],
            )
            .await
        {
            Ok(out) => Ok(Some(out.trim().to_string())),
            Err(GitError::Command { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces the work tree with the remote branch as it is now (after a rejected push).
    pub async fn fetch_and_reset(&self) -> Result<(), GitError> {
        let refspec = format!("+refs/heads/{0}:refs/remotes/origin/{0}", self.branch);
        self.git("fetch", &["fetch", "-q", "origin", &refspec])
            .await?;
        let remote = format!("origin/{}", self.branch);
        self.git(
            "checkout",
            &["checkout", "-q", "-f", "-B", &self.branch, &remote],
        )
        .await?;
        self.git("clean", &["clean", "-q", "-f", "-d", "-x"])
            .await?;
        Ok(())
    }

    /// Stages `paths` (relative to the work tree) and commits them when they differ from
    /// HEAD, signed by `signer` when there is one. Returns the new commit, or `None` when
    /// nothing changed.
    pub async fn commit(
        &self,
        paths: &[String],
        message: &str,
        author: &Signature,
        signer: Option<&Signer>,
    ) -> Result<Option<String>, GitError> {
        let mut add = vec!["add", "--"];
        add.extend(paths.iter().map(String::as_str));
        self.git("add", &add).await?;
        let mut diff = vec!["diff", "--cached", "--quiet", "--"];
        diff.extend(paths.iter().map(String::as_str));
        if self.git("diff", &diff).await.is_ok() && self.head().await?.is_some() {
            return Ok(None);
        }
        let out = self
            .git
            .command(&self.path())
            .args([
                "-c",
                &format!("user.name={}", author.name),
                "-c",
                &format!("user.email={}", author.email),
                "commit",
                "-q",
                "--no-verify",
                "-m",
                message,
            ])
            .env("GIT_AUTHOR_NAME", &author.name)
            .env("GIT_AUTHOR_EMAIL", &author.email)
            .env("GIT_COMMITTER_NAME", &author.name)
            .env("GIT_COMMITTER_EMAIL", &author.email)
            .output()
            .await
            .map_err(GitError::Spawn)?;
        if !out.status.success() {
            return Err(self.git.failure("commit", &out.stderr));
        }
        if let Some(signer) = signer {
            self.sign_head(signer).await?;
        }
        self.head().await
    }

    /// Replaces HEAD's commit by the same commit with a `gpgsig` header: git signs the object
    /// it is about to write, and the unsigned object is exactly that, so the signature is made
    /// over `git cat-file commit HEAD` and the signed object written with `hash-object`. The
    /// unsigned commit stays in the temporary clone only.
    async fn sign_head(&self, signer: &Signer) -> Result<(), GitError> {
        let old = self
            .git("rev-parse", &["rev-parse", "--verify", "HEAD^{commit}"])
            .await?;
        let old = old.trim();
        let object = self
            .git
            .run_bytes(&self.path(), "cat-file", &["cat-file", "commit", old], b"")
            .await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
            .unwrap_or(0);
        let signed = signer.sign_commit(&object, now).map_err(GitError::Sign)?;
        let id = self
            .git
            .run_bytes(
                &self.path(),
                "hash-object",
                &["hash-object", "-t", "commit", "-w", "--stdin"],
                &signed,
            )
            .await?;
        let id = String::from_utf8_lossy(&id).trim().to_string();
        // Compare-and-swap: HEAD must still be the unsigned commit.
        self.git(
            "update-ref",
            &["update-ref", "-m", "sign", "HEAD", &id, old],
        )
        .await?;
        Ok(())
    }

    /// Pushes the branch. A remote that moved on gives `NonFastForward`; a remote that refuses
    /// the update itself gives `Rejected`.
    pub async fn push(&self) -> Result<(), GitError> {
        let refspec = format!("refs/heads/{0}:refs/heads/{0}", self.branch);
        let out = self
            .git
            .command(&self.path())
            .args(["push", "--porcelain", "origin", &refspec])
            .output()
            .await
            .map_err(GitError::Spawn)?;
        if out.status.success() {
            return Ok(());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        for line in stdout.lines() {
            // `!<TAB>from:to<TAB>[rejected] (fetch first)` or `[remote rejected] (reason)`.
            let mut fields = line.split('\t');
            if fields.next() != Some("!") {
                continue;
            }
            let summary = self.git.scrub(fields.nth(1).unwrap_or("").trim());
            let url = self.url.clone();
            if summary.starts_with("[remote rejected]") {
                return Err(GitError::Rejected {
                    url,
                    reason: self.git.scrub(&remote_messages(&out.stderr, &summary)),
                });
            }
            if summary.starts_with("[rejected]") {
                return Err(GitError::NonFastForward {
                    url,
                    reason: summary,
                });
            }
        }
        Err(self.git.failure("push", &out.stderr))
    }

    async fn git(&self, op: &str, args: &[&str]) -> Result<String, GitError> {
        self.git.run(&self.path(), op, args).await
    }
}

/// What the remote said about a refused push (`remote: ...` lines), else the summary.
fn remote_messages(stderr: &[u8], summary: &str) -> String {
    let text = String::from_utf8_lossy(stderr);
    let remote: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("remote:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if remote.is_empty() {
        summary.to_string()
    } else {
        format!("{summary}: {}", remote.join("; "))
    }
}

fn write_askpass(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(path)?;
    f.write_all(ASKPASS.as_bytes())?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ferroflux_testkit::git;

    /// An empty bare repository `r.git` in a new temporary folder, and its file:// URL.
    pub(crate) fn bare_remote() -> (tempfile::TempDir, String) {
        let root = tempfile::tempdir().unwrap();
        git(
            root.path(),
            &["init", "-q", "--bare", "-b", "main", "r.git"],
        );
        let url = format!("file://{}", root.path().join("r.git").display());
        (root, url)
    }

    fn author() -> Signature {
        Signature {
            name: "Flux".into(),
            email: String::new(),
        }
    }

    #[tokio::test]
    async fn empty_remote_then_unchanged_then_non_fast_forward_and_retry() {
        let (root, url) = bare_remote();

        let a = Checkout::clone(&url, "main", &Auth::None, None)
            .await
            .unwrap();
        assert_eq!(a.head().await.unwrap(), None);
        std::fs::write(a.path().join("x.yaml"), "a: 1\n").unwrap();
        let first = a
            .commit(&["x.yaml".into()], "first", &author(), None)
            .await
            .unwrap()
            .expect("a commit");
        a.push().await.unwrap();
        // Nothing changed: no commit.
        assert_eq!(
            a.commit(&["x.yaml".into()], "again", &author(), None)
                .await
                .unwrap(),
            None
        );

        // Someone else pushes in between: our push is not a fast-forward.
        let b = Checkout::clone(&url, "main", &Auth::None, None)
            .await
            .unwrap();
        assert_eq!(b.head().await.unwrap(), Some(first.clone()));
        std::fs::write(a.path().join("x.yaml"), "a: 2\n").unwrap();
        a.commit(&["x.yaml".into()], "ours", &author(), None)
            .await
            .unwrap();
        std::fs::write(b.path().join("y.yaml"), "b: 1\n").unwrap();
        b.commit(&["y.yaml".into()], "theirs", &author(), None)
            .await
            .unwrap();
        b.push().await.unwrap();
        match a.push().await {
            Err(GitError::NonFastForward { reason, .. }) => {
                assert!(reason.contains("rejected"), "{reason}")
            }
            other => panic!("expected a non-fast-forward rejection, got {other:?}"),
        }
        // Re-fetch, redo, push: both changes are on the branch.
        a.fetch_and_reset().await.unwrap();
        assert!(a.path().join("y.yaml").exists());
        std::fs::write(a.path().join("x.yaml"), "a: 2\n").unwrap();
        a.commit(&["x.yaml".into()], "ours", &author(), None)
            .await
            .unwrap();
        a.push().await.unwrap();
        let log = git(&root.path().join("r.git"), &["log", "--format=%s", "main"]);
        assert_eq!(log, "ours\ntheirs\nfirst");
        // The author is ours, committer too (no user configuration needed).
        let who = git(
            &root.path().join("r.git"),
            &["log", "-1", "--format=%an <%ae>", "main"],
        );
        assert_eq!(who, "Flux <>");
    }

    #[tokio::test]
    async fn a_missing_branch_is_named_with_the_existing_ones() {
        let (_root, url) = bare_remote();
        let a = Checkout::clone(&url, "dev", &Auth::None, None)
            .await
            .unwrap();
        std::fs::write(a.path().join("x"), "x").unwrap();
        a.commit(&["x".into()], "x", &author(), None).await.unwrap();
        a.push().await.unwrap();
        let err = match Checkout::clone(&url, "main", &Auth::None, None).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("cloned a missing branch"),
        };
        assert!(err.contains("branch \"main\" does not exist"), "{err}");
        assert!(err.contains("(it has: dev)"), "{err}");
    }

    #[test]
    fn secrets_are_scrubbed_and_hidden_from_debug() {
        let auth = Auth::Basic {
            username: "git".into(),
            password: "s3cret".into(),
        };
        assert!(!format!("{auth:?}").contains("s3cret"));
        let dir = tempfile::tempdir().unwrap();
        let c = Checkout {
            dir,
            url: String::new(),
            branch: "main".into(),
            git: Git {
                env: vec![],
                secrets: vec!["s3cret".into()],
            },
        };
        assert_eq!(
            c.git.scrub("fatal: could not read s3cret for x"),
            "fatal: could not read *** for x"
        );
    }
}
