//! Checking `bootstrap`'s commit-signing flags and reading the key, before Git or the cluster is
//! touched, with Flux's rules and messages: `--gpg-key-ring` (with `--gpg-passphrase` and
//! `--gpg-key-id`), `--ssh-signing-key-file` (with `--ssh-signing-password` or its alias
//! `--ssh-signing-passphrase`), or `--ssh-signing-reuse-private-key` (the `--private-key-file`
//! of an ssh:// remote, with `--password` as its passphrase). A key that cannot sign (malformed,
//! encrypted without a passphrase, a wrong passphrase, a key id not in the ring) stops the run
//! here, so nothing is cloned, committed or pushed.
//!
//! As with Flux, `--gpg-passphrase` and `--gpg-key-id` without `--gpg-key-ring` sign nothing.

use std::path::{Path, PathBuf};

use ferroflux_gitsign::{PgpKeyError, Signer, SshKeyError, SshSigner, pgp};

/// The signing flags as the command line gives them; empty strings count as unset.
#[derive(Clone, Debug, Default)]
pub struct SigningRequest {
    /// `--gpg-key-ring`: an OpenPGP secret key ring (binary or armored).
    pub gpg_key_ring: Option<PathBuf>,
    /// `--gpg-passphrase`.
    pub gpg_passphrase: String,
    /// `--gpg-key-id`: 16 hex digits; the ring's first key when empty.
    pub gpg_key_id: String,
    /// `--ssh-signing-key-file`: an OpenSSH private key.
    pub ssh_signing_key_file: Option<PathBuf>,
    /// `--ssh-signing-password`.
    pub ssh_signing_password: String,
    /// `--ssh-signing-passphrase`, the alias of `--ssh-signing-password`.
    pub ssh_signing_passphrase: String,
    /// `--ssh-signing-reuse-private-key`: sign with `--private-key-file`.
    pub ssh_signing_reuse_private_key: bool,
}

/// Signing flags that contradict each other, or a key that cannot sign; the messages are Flux's.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// Flags that cannot go together.
    #[error("{0}")]
    Flags(&'static str),
    /// The key ring file cannot be read.
    #[error("invalid GPG signing key: unable to open GPG key ring {}: {source}", path.display())]
    GpgRing {
        /// `--gpg-key-ring`.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The ring holds no key that signs with the passphrase and key id given.
    #[error("invalid GPG signing key: {0}")]
    Gpg(PgpKeyError),
    /// The SSH signing key file cannot be read.
    #[error("failed to read SSH signing key file {}: {source}", path.display())]
    SshFile {
        /// `--ssh-signing-key-file`.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The SSH signing key cannot sign.
    #[error("invalid SSH signing key: {0}")]
    Ssh(SshKeyError),
    /// `--private-key-file` cannot be read for signing.
    #[error("failed to read transport private key for signing {}: {source}", path.display())]
    ReuseFile {
        /// `--private-key-file`.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// `--private-key-file` cannot sign.
    #[error("invalid signing key (reused from --private-key-file): {0}")]
    Reuse(SshKeyError),
}

impl SigningRequest {
    /// Checks the flags in Flux's order and reads the key: `None` when no signing was asked
    /// for. `private_key_file` and `password` are the transport's `--private-key-file` and
    /// `--password`, which `--ssh-signing-reuse-private-key` signs with.
    pub fn signer(
        &self,
        private_key_file: Option<&Path>,
        password: Option<&str>,
    ) -> Result<Option<Signer>, SigningError> {
        let ssh_signing = self.ssh_signing_key_file.is_some() || self.ssh_signing_reuse_private_key;
        if self.gpg_key_ring.is_some() && ssh_signing {
            return Err(SigningError::Flags(
                "--gpg-* and --ssh-signing-* are mutually exclusive; pick one signing format",
            ));
        }
        if self.ssh_signing_key_file.is_some() && self.ssh_signing_reuse_private_key {
            return Err(SigningError::Flags(
                "--ssh-signing-key-file and --ssh-signing-reuse-private-key are mutually exclusive",
            ));
        }
        if self.ssh_signing_reuse_private_key && private_key_file.is_none() {
            return Err(SigningError::Flags(
                "--ssh-signing-reuse-private-key requires --private-key-file",
            ));
        }
        let ssh_password = self.ssh_password()?;
        if !ssh_password.is_empty() && self.ssh_signing_key_file.is_none() {
            return Err(SigningError::Flags(
                "--ssh-signing-password requires --ssh-signing-key-file",
            ));
        }
        if let Some(path) = &self.gpg_key_ring {
            let ring = std::fs::read(path).map_err(|source| SigningError::GpgRing {
                path: path.clone(),
                source,
            })?;
            let key = pgp::load_signer(&ring, &self.gpg_passphrase, &self.gpg_key_id)
                .map_err(SigningError::Gpg)?;
            return Ok(Some(Signer::Pgp(key)));
        }
        if let Some(path) = &self.ssh_signing_key_file {
            let pem = std::fs::read(path).map_err(|source| SigningError::SshFile {
                path: path.clone(),
                source,
            })?;
            let key = SshSigner::from_openssh(&pem, ssh_password.as_bytes())
                .map_err(SigningError::Ssh)?;
            return Ok(Some(Signer::Ssh(key)));
        }
        if let (true, Some(path)) = (self.ssh_signing_reuse_private_key, private_key_file) {
            let pem = std::fs::read(path).map_err(|source| SigningError::ReuseFile {
                path: path.to_path_buf(),
                source,
            })?;
            let key = SshSigner::from_openssh(&pem, password.unwrap_or("").as_bytes())
                .map_err(SigningError::Reuse)?;
            return Ok(Some(Signer::Ssh(key)));
        }
        Ok(None)
    }

    /// `--ssh-signing-password` or its alias; both only when they agree.
    fn ssh_password(&self) -> Result<&str, SigningError> {
        let (pw, alias) = (&self.ssh_signing_password, &self.ssh_signing_passphrase);
        if !pw.is_empty() && !alias.is_empty() && pw != alias {
            return Err(SigningError::Flags(
                "--ssh-signing-password and --ssh-signing-passphrase are aliases; do not pass both",
            ));
        }
        Ok(if pw.is_empty() { alias } else { pw })
    }
}
