//! The `ssh` program, configured for one fetch: the secret's key and known hosts in a private
//! temporary directory, host keys always verified, nothing read from the user's ssh config.
//!
//! An encrypted key is unlocked non-interactively with `SSH_ASKPASS` (OpenSSH ≥ 8.4,
//! `SSH_ASKPASS_REQUIRE=force`): a helper script in the same 0700 directory prints the
//! passphrase, so it never appears on a command line or in the environment of this process.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::credentials::Credentials;
use crate::error::{Error, Result};

pub(crate) struct SshSetup {
    // Deleted (key, passphrase and all) when the fetch is over.
    _dir: tempfile::TempDir,
    pub command: PathBuf,
    pub stderr_log: PathBuf,
}

fn write_private(path: &Path, content: &[u8], mode: u32) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Error::storage(path, e))?;
    f.write_all(content).map_err(|e| Error::storage(path, e))?;
    Ok(())
}

/// Quotes `s` for a POSIX shell.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl SshSetup {
    pub(crate) fn new(creds: &Credentials, timeout: Duration) -> Result<Self> {
        let known_hosts = creds.known_hosts.as_ref().ok_or_else(|| {
            Error::InvalidSecret(
                "ssh URLs need 'known_hosts' in the secret: host keys are always verified".into(),
            )
        })?;
        let identity = creds.identity.as_ref().ok_or_else(|| {
            Error::InvalidSecret("ssh URLs need 'identity' (a private key) in the secret".into())
        })?;
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-ssh-")
            .tempdir()
            .map_err(|e| Error::storage(std::env::temp_dir(), e))?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::storage(dir.path(), e))?;
        let key_path = dir.path().join("identity");
        let mut key = identity.clone();
        // ssh refuses a key file without a final newline.
        if !key.ends_with(b"\n") {
            key.push(b'\n');
        }
        write_private(&key_path, &key, 0o600)?;
        let hosts_path = dir.path().join("known_hosts");
        write_private(&hosts_path, known_hosts, 0o600)?;
        let stderr_log = dir.path().join("ssh.stderr");
        let path_str = |p: &Path| {
            p.to_str().map(sh_quote).ok_or_else(|| {
                Error::Archive(format!("temporary path {} is not UTF-8", p.display()))
            })
        };
        let passphrase = creds
            .identity_passphrase
            .clone()
            .or_else(|| creds.basic.as_ref().map(|(_, p)| p.clone()))
            .filter(|p| !p.is_empty());
        let mut env = String::new();
        let batch = match &passphrase {
            Some(p) => {
                let askpass = dir.path().join("askpass");
                let script = format!("#!/bin/sh\nprintf '%s\\n' {}\n", sh_quote(p));
                write_private(&askpass, script.as_bytes(), 0o700)?;
                env = format!(
                    "SSH_ASKPASS={} SSH_ASKPASS_REQUIRE=force DISPLAY=none ",
                    path_str(&askpass)?
                );
                // BatchMode would forbid asking for the passphrase; every prompt other than
                // the passphrase is disabled below instead.
                "no"
            }
            None => "yes",
        };
        let secs = timeout.as_secs().clamp(5, 600);
        let script = format!(
            "#!/bin/sh\nexec env {env}ssh -F /dev/null -i {key} -o IdentitiesOnly=yes \
             -o IdentityAgent=none -o UserKnownHostsFile={hosts} -o GlobalKnownHostsFile=/dev/null \
             -o StrictHostKeyChecking=yes -o UpdateHostKeys=no -o BatchMode={batch} \
             -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
             -o PreferredAuthentications=publickey -o NumberOfPasswordPrompts=1 \
             -o ConnectTimeout={secs} -o ServerAliveInterval=15 -o ServerAliveCountMax=4 \
             -o LogLevel=ERROR \"$@\" 2>>{log}\n",
            key = path_str(&key_path)?,
            hosts = path_str(&hosts_path)?,
            log = path_str(&stderr_log)?,
        );
        let command = dir.path().join("ssh");
        write_private(&command, script.as_bytes(), 0o700)?;
        Ok(SshSetup {
            _dir: dir,
            command,
            stderr_log,
        })
    }

    /// What ssh printed on stderr (host key and authentication problems are reported there).
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }
}
