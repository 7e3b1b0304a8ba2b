//! SSH commit signatures: an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`, as
//! `ssh-keygen` writes it), decrypted with its passphrase when it has one, signs a commit as an
//! armored SSHSIG with namespace `git` and SHA-512, the form `git verify-commit` checks with
//! `gpg.format=ssh` and an allowed-signers file.
//!
//! Only `ssh-ed25519` keys sign. RSA and ECDSA keys are refused when they are read (before any
//! clone), with a message that names the key's algorithm; Flux accepts them, so this is a known
//! gap rather than a rule.

use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey};

/// The namespace git signs and verifies commits in.
pub const NAMESPACE: &str = "git";

/// Why an SSH signing key cannot be used; the messages are Flux's where Flux has one.
#[derive(Debug, thiserror::Error)]
pub enum SshKeyError {
    /// The key is encrypted and no passphrase was given.
    #[error("SSH signing key is encrypted; passphrase required")]
    PassphraseRequired,
    /// Not an OpenSSH private key, or a damaged one.
    #[error("could not parse SSH signing key: {0}")]
    Parse(ssh_key::Error),
    /// The passphrase does not decrypt the key.
    #[error("could not parse SSH signing key: the passphrase does not decrypt it")]
    WrongPassphrase,
    /// A key type ferroflux does not sign with.
    #[error(
        "unsupported SSH signing key algorithm: {0} (ferroflux signs commits with ssh-ed25519 keys only)"
    )]
    Algorithm(String),
    /// The key could not sign (should not happen with a key that was read).
    #[error("cannot sign with the SSH key: {0}")]
    Sign(ssh_key::Error),
}

/// The algorithm an OpenSSH private key names in its (never encrypted) public part: after the
/// `openssh-key-v1` magic come the cipher, KDF and KDF options strings, the key count, then the
/// public key blob, which starts with the algorithm's name.
fn algorithm_of(pem: &[u8]) -> Option<String> {
    use base64::Engine as _;
    let text = std::str::from_utf8(pem).ok()?;
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    let data = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    let mut rest = data.strip_prefix(b"openssh-key-v1\0")?;
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let out = rest.get(..n)?;
        *rest = &rest[n..];
        Some(out)
    }
    fn string<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32::from_be_bytes(take(rest, 4)?.try_into().ok()?) as usize;
        take(rest, len)
    }
    string(&mut rest)?; // cipher
    string(&mut rest)?; // KDF
    string(&mut rest)?; // KDF options
    take(&mut rest, 4)?; // the number of keys
    let mut public = string(&mut rest)?;
    let name = string(&mut public)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

/// A decrypted SSH private key that signs commits.
#[derive(Clone)]
pub struct SshSigner {
    key: PrivateKey,
}

impl std::fmt::Debug for SshSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SshSigner({})", self.key.algorithm())
    }
}

impl SshSigner {
    /// Reads an OpenSSH private key; `passphrase` is used only when the key is encrypted (empty
    /// counts as none, as with Flux).
    pub fn from_openssh(pem: &[u8], passphrase: &[u8]) -> Result<SshSigner, SshKeyError> {
        let key = PrivateKey::from_openssh(pem).map_err(|e| match algorithm_of(pem) {
            // ssh-key reads only the algorithms it was built for: name the others.
            Some(name) if name != "ssh-ed25519" => SshKeyError::Algorithm(name),
            _ => SshKeyError::Parse(e),
        })?;
        let key = if key.is_encrypted() {
            if passphrase.is_empty() {
                return Err(SshKeyError::PassphraseRequired);
            }
            key.decrypt(passphrase).map_err(|e| match e {
                ssh_key::Error::Crypto => SshKeyError::WrongPassphrase,
                other => SshKeyError::Parse(other),
            })?
        } else {
            key
        };
        if key.algorithm() != Algorithm::Ed25519 {
            return Err(SshKeyError::Algorithm(key.algorithm().to_string()));
        }
        Ok(SshSigner { key })
    }

    /// The public key in `authorized_keys` form (`ssh-ed25519 AAAA...`), for an allowed-signers
    /// file.
    pub fn public_key(&self) -> String {
        self.key
            .public_key()
            .to_openssh()
            .unwrap_or_else(|_| String::new())
    }

    /// The armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) of `payload`, ending in a newline.
    pub fn sign(&self, payload: &[u8]) -> Result<String, SshKeyError> {
        let sig = self
            .key
            .sign(NAMESPACE, HashAlg::Sha512, payload)
            .map_err(SshKeyError::Sign)?;
        let mut pem = sig.to_pem(LineEnding::LF).map_err(SshKeyError::Sign)?;
        if !pem.ends_with('\n') {
            pem.push('\n');
        }
        Ok(pem)
    }
}
