//! Signing Git commit objects so that `git verify-commit` accepts them, for `bootstrap`'s
//! `--gpg-*` and `--ssh-signing-*` flags and image automation's `signingKey`: an SSH signature
//! from an OpenSSH key ([`ssh`]), an OpenPGP signature from a secret key ring ([`pgp`]), and the
//! commit object with its `gpgsig` header ([`commit`]). And the other way, for a
//! GitRepository's `spec.verify`: the signature of a fetched commit or tag checked against
//! OpenPGP key rings or SSH authorized keys ([`verify`]). No `gpg` or `ssh-keygen` program runs.
//!
//! Must not touch: files (callers read the key files and hand over their bytes), the `git`
//! program and repositories (the bootstrap crate writes the signed object), the terminal.
//!
//! Decision, SSH: the `ssh-key` crate (RustCrypto; features `ed25519`, `encryption`, `rsa`,
//! `p256`, `p384`) parses OpenSSH keys, decrypts them (bcrypt-pbkdf, AES-CTR/CBC) and writes
//! SSHSIG. Its dependencies are mostly built already (curve25519-dalek for age, blowfish for
//! sprig's bcrypt, rsa, aes, sha2); it adds ssh-encoding, ssh-cipher, bcrypt-pbkdf,
//! ed25519-dalek and the P-256/P-384 curves. Writing our own OpenSSH key reader, bcrypt-pbkdf
//! and SSHSIG encoder on those crates would be several hundred lines of security-sensitive code
//! to review for no fewer compiled crates in the end. Its RSA signing is broken in 0.6.7 (see
//! [`ssh`]), so RSA keys sign through the `rsa` crate, into ssh-key's SSHSIG.

//! Decision, OpenPGP: our own reader and signer (see [`pgp`]); the OpenPGP crates are large and
//! bootstrap needs one packet type read and one written.

pub mod commit;
pub mod pgp;
pub mod ssh;
pub mod verify;

pub use commit::{CommitError, with_signature};
pub use pgp::{PgpKeyError, PgpSigner};
pub use ssh::{SshKeyError, SshSigner};

/// The key a bootstrap run signs its commits with.
#[derive(Clone, Debug)]
pub enum Signer {
    /// An OpenPGP key from a key ring (`--gpg-key-ring`).
    Pgp(PgpSigner),
    /// An OpenSSH key (`--ssh-signing-key-file`, or the transport key reused).
    Ssh(SshSigner),
}

/// A signature that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The SSH key failed to sign.
    #[error(transparent)]
    Ssh(#[from] SshKeyError),
    /// The OpenPGP key failed to sign.
    #[error(transparent)]
    Pgp(#[from] PgpKeyError),
    /// The object is not an unsigned commit.
    #[error(transparent)]
    Commit(#[from] CommitError),
}

impl Signer {
    /// The signed form of `commit`, an unsigned commit object's bytes; `now` (seconds since the
    /// epoch) dates an OpenPGP signature.
    pub fn sign_commit(&self, commit: &[u8], now: u32) -> Result<Vec<u8>, SignError> {
        let signature = match self {
            Signer::Pgp(key) => key.sign(commit, now)?,
            Signer::Ssh(key) => key.sign(commit)?,
        };
        Ok(with_signature(commit, &signature)?)
    }
}
