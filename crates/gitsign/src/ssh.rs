//! SSH commit signatures: an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`, as
//! `ssh-keygen` writes it), decrypted with its passphrase when it has one, signs a commit as an
//! armored SSHSIG with namespace `git` and SHA-512, the form `git verify-commit` checks with
//! `gpg.format=ssh` and an allowed-signers file.
//!
//! Keys that sign: `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ecdsa-sha2-nistp384`, and `ssh-rsa`
//! of at least 2048 bits (signed as `rsa-sha2-512`). DSA keys, smaller RSA keys and
//! security-key (`sk-*`) keys are refused when they are read (before any clone), with Flux's
//! messages: OpenSSH 8.7 and later no longer verify the first two. Unlike Flux,
//! `ecdsa-sha2-nistp521` keys are refused too: ssh-key 0.6.7 fails to read about half of them
//! (a private scalar with a leading zero byte), and a key that works one day and not the next
//! is worse than a clear refusal.

use ssh_key::private::KeypairData;
use ssh_key::{HashAlg, LineEnding, PrivateKey, SshSig};

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
    /// A key type that does not sign commits.
    #[error("unsupported SSH signing key algorithm: {0}")]
    Algorithm(String),
    /// An RSA key whose numbers do not make a key.
    #[error("invalid RSA key: {0}")]
    Rsa(String),
    /// An RSA key too small for OpenSSH to verify its signatures.
    #[error("RSA key size {0} bits is below the minimum supported; must be at least 2048")]
    RsaSize(usize),
    /// The key could not sign (should not happen with a key that was read).
    #[error("cannot sign with the SSH key: {0}")]
    Sign(ssh_key::Error),
}

/// The algorithms that sign commits here, as OpenSSH names them.
const SIGNING_ALGORITHMS: [&str; 4] = [
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ssh-rsa",
];

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
    /// RSA keys sign through the `rsa` crate directly: ssh-key 0.6.7 builds its RSA private
    /// key from the primes `p, p` instead of `p, q`, so its own RSA signing always fails.
    rsa: Option<Box<rsa::RsaPrivateKey>>,
}

/// The DER DigestInfo prefix of SHA-512 (RFC 8017, 9.2).
const SHA512_PREFIX: [u8; 19] = [
    0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05,
    0x00, 0x04, 0x40,
];

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
            Some(name) if !SIGNING_ALGORITHMS.contains(&name.as_str()) => {
                SshKeyError::Algorithm(name)
            }
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
        let mut rsa_key = None;
        match key.key_data() {
            KeypairData::Ed25519(_) => {}
            KeypairData::Ecdsa(k) if k.curve() != ssh_key::EcdsaCurve::NistP521 => {}
            KeypairData::Rsa(rsa) => {
                let n = rsa.public.n.as_positive_bytes().unwrap_or_default();
                let bits = match n.first() {
                    Some(&b) => n.len() * 8 - b.leading_zeros() as usize,
                    None => 0,
                };
                if bits < 2048 {
                    return Err(SshKeyError::RsaSize(bits));
                }
                let big = |m: &ssh_key::Mpint| {
                    rsa::BigUint::from_bytes_be(m.as_positive_bytes().unwrap_or_default())
                };
                let private = rsa::RsaPrivateKey::from_components(
                    big(&rsa.public.n),
                    big(&rsa.public.e),
                    big(&rsa.private.d),
                    vec![big(&rsa.private.p), big(&rsa.private.q)],
                )
                .and_then(|k| k.validate().map(|()| k))
                .map_err(|e| SshKeyError::Rsa(e.to_string()))?;
                rsa_key = Some(Box::new(private));
            }
            _ => return Err(SshKeyError::Algorithm(key.algorithm().to_string())),
        }
        Ok(SshSigner { key, rsa: rsa_key })
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
        let sig = match &self.rsa {
            Some(rsa) => {
                use sha2::Digest as _;
                let data = SshSig::signed_data(NAMESPACE, HashAlg::Sha512, payload)
                    .map_err(SshKeyError::Sign)?;
                let digest = sha2::Sha512::digest(&data);
                let scheme = rsa::Pkcs1v15Sign {
                    hash_len: Some(64),
                    prefix: Box::new(SHA512_PREFIX),
                };
                let raw = rsa
                    .sign_with_rng(&mut rand_core::OsRng, scheme, &digest)
                    .map_err(|e| SshKeyError::Rsa(e.to_string()))?;
                let algorithm = ssh_key::Algorithm::Rsa {
                    hash: Some(HashAlg::Sha512),
                };
                let signature =
                    ssh_key::Signature::new(algorithm, raw).map_err(SshKeyError::Sign)?;
                SshSig::new(
                    self.key.public_key().key_data().clone(),
                    NAMESPACE,
                    HashAlg::Sha512,
                    signature,
                )
                .map_err(SshKeyError::Sign)?
            }
            None => self
                .key
                .sign(NAMESPACE, HashAlg::Sha512, payload)
                .map_err(SshKeyError::Sign)?,
        };
        let mut pem = sig.to_pem(LineEnding::LF).map_err(SshKeyError::Sign)?;
        if !pem.ends_with('\n') {
            pem.push('\n');
        }
        Ok(pem)
    }
}
