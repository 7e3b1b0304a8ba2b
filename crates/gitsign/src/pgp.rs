//! OpenPGP commit signatures without the `gpg` program: a secret key ring (binary, as `gpg
//! --export-secret-keys` writes it, or ASCII-armored) is read, the key is picked and decrypted
//! with Flux's rules, and a commit is signed as a v4 detached signature over a binary document,
//! armored, the form `git verify-commit` hands to gpg.
//!
//! What is read (RFC 4880 / RFC 9580, version 4 keys only): secret key packets with EdDSA
//! (legacy algorithm 22, curve Ed25519, what GnuPG 2.2–2.4 generate), Ed25519 (algorithm 27) and
//! RSA (algorithm 1) keys; unprotected secret material or material protected by a simple, salted
//! or iterated+salted S2K with AES-128/192/256 in CFB mode and a SHA-1 check (usage 254) or the
//! old 16-bit checksum (usage 255). User ids and others' certifications are skipped; the key
//! flags of self-signatures and subkey bindings are read. Refused with a message: version 3 and
//! 5/6 keys, DSA, ECDSA and ElGamal keys, other ciphers, GnuPG's stubs of keys kept on a card.
//!
//! Picking the key (Flux's rules): with no key id the ring's first entity, which must hold a
//! secret key; with a key id (16 hex digits, `0x` allowed, any case) the entity whose primary
//! key has that id, which must hold a secret key. The key that signs is then, as in Flux's
//! OpenPGP library, the entity's last signing subkey whose secret is in the ring (so keys
//! exported with `gpg --export-secret-subkeys`, the primary key left offline, work), else the
//! primary key unless its flags say it does not sign.
//!
//! Why our own code rather than a crate: the OpenPGP crates (`pgp`, `sequoia-openpgp`) bring
//! dozens of crates for a format of which bootstrap needs a few packets; the maths comes from
//! crates the workspace already builds (`ed25519-dalek` via `ssh-key`, `rsa`, `aes`, `sha2`,
//! `sha1dc`).

use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};
use base64::Engine as _;
use sha2::Digest as _;

/// Why a key ring gives no signing key; the messages are Flux's where Flux has one.
#[derive(Debug, thiserror::Error)]
pub enum PgpKeyError {
    /// The ring file could not be read.
    #[error("unable to open GPG key ring: {0}")]
    Open(std::io::Error),
    /// Not OpenPGP packets, or damaged ones; `offset` is the byte of the (de-armored) ring.
    #[error("unable to read GPG key ring: {message} at byte {offset}")]
    Read {
        /// What is wrong.
        message: String,
        /// Where, in the binary packets.
        offset: usize,
    },
    /// The ring holds no key.
    #[error("empty GPG key ring")]
    Empty,
    /// The key id is not 16 hex digits.
    #[error("invalid GPG key id length; expected 16, got {0}")]
    KeyIdLength(usize),
    /// No entity has that key id.
    #[error("no GPG keyring matching key id '{0}' found")]
    NoKeyId(String),
    /// The entity picked by id holds only the public key.
    #[error("keyring does not contain private key for key id '{0}'")]
    NoPrivateKeyForId(String),
    /// The first entity holds only the public key.
    #[error(
        "keyring does not contain a private key; export the secret key with 'gpg --export-secret-keys' or specify --gpg-key-id"
    )]
    NoPrivateKey,
    /// The passphrase does not decrypt the key (or it is missing).
    #[error("unable to decrypt GPG private key: {0}")]
    Decrypt(String),
    /// A key this code cannot sign with.
    #[error("unsupported GPG signing key {key_id}: {what}")]
    Unsupported {
        /// The key's id.
        key_id: String,
        /// What is not supported.
        what: String,
    },
}

fn read_err(message: impl Into<String>, offset: usize) -> PgpKeyError {
    PgpKeyError::Read {
        message: message.into(),
        offset,
    }
}

/// The public-key algorithms this code signs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    Rsa,
    EdDsaLegacy,
    Ed25519,
}

impl Algo {
    fn id(self) -> u8 {
        match self {
            Algo::Rsa => 1,
            Algo::EdDsaLegacy => 22,
            Algo::Ed25519 => 27,
        }
    }
}

/// The OID of curve Ed25519 in legacy EdDSA keys (1.3.6.1.4.1.11591.15.1).
const ED25519_OID: [u8; 9] = [0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x0f, 0x01];

/// One primary key of a ring, its secret part still as stored.
#[derive(Clone)]
struct Entity {
    key_id: [u8; 8],
    fingerprint: [u8; 20],
    algo: Option<Algo>,
    /// The unsupported algorithm's number, for the message.
    algo_id: u8,
    /// The public key material (after the algorithm byte).
    material: Vec<u8>,
    /// `None` for a public key packet.
    secret: Option<Vec<u8>>,
    /// Where the packet starts, for messages.
    offset: usize,
    /// The key flags (RFC 4880 5.2.3.21) of its latest self-signature or binding signature;
    /// `None` when it has none.
    flags: Option<u8>,
    /// A primary key's subkeys, in the ring's order.
    subkeys: Vec<Entity>,
}

/// The key-flags bit of keys that sign data.
const SIGN_DATA: u8 = 0x02;

/// A decrypted OpenPGP key that signs commits.
#[derive(Clone)]
pub struct PgpSigner {
    key_id: [u8; 8],
    fingerprint: [u8; 20],
    key: SecretKey,
}

#[derive(Clone)]
enum SecretKey {
    Ed25519 {
        legacy: bool,
        key: ed25519_dalek::SigningKey,
    },
    Rsa(rsa::RsaPrivateKey),
}

impl std::fmt::Debug for PgpSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgpSigner({})", self.key_id())
    }
}

/// Reads a key ring (binary or armored) and returns the decrypted signing key Flux's rules
/// pick: `key_id` (16 hex digits) or, when empty, the first entity.
pub fn load_signer(ring: &[u8], passphrase: &str, key_id: &str) -> Result<PgpSigner, PgpKeyError> {
    let entities = read_ring(ring)?;
    if entities.is_empty() {
        return Err(PgpKeyError::Empty);
    }
    let entity = if key_id.is_empty() {
        let first = &entities[0];
        if first.secret.is_none() {
            return Err(PgpKeyError::NoPrivateKey);
        }
        first
    } else {
        let id = key_id.strip_prefix("0x").unwrap_or(key_id);
        if id.len() != 16 {
            return Err(PgpKeyError::KeyIdLength(id.len()));
        }
        let id = id.to_ascii_uppercase();
        // The last entity with the id wins, as in Flux.
        let entity = entities
            .iter()
            .rev()
            .find(|e| hex_upper(&e.key_id) == id)
            .ok_or_else(|| PgpKeyError::NoKeyId(id.clone()))?;
        if entity.secret.is_none() {
            return Err(PgpKeyError::NoPrivateKeyForId(id));
        }
        entity
    };
    decrypt(signing_key(entity)?, passphrase.as_bytes())
}

/// The key of `entity` that signs, as OpenPGP implementations pick it: the last signing subkey
/// whose secret is in the ring, else the primary key unless its flags say it does not sign.
fn signing_key(entity: &Entity) -> Result<&Entity, PgpKeyError> {
    let subkey = entity.subkeys.iter().rev().find(|k| {
        k.flags.is_some_and(|f| f & SIGN_DATA != 0)
            && k.secret.as_deref().is_some_and(|s| !is_stub(s))
    });
    if let Some(subkey) = subkey {
        return Ok(subkey);
    }
    if entity.flags.is_some_and(|f| f & SIGN_DATA == 0) {
        return Err(PgpKeyError::Unsupported {
            key_id: hex_upper(&entity.key_id),
            what: "no key of it signs: the primary key is not for signing and no signing \
                   subkey has its secret in the ring"
                .into(),
        });
    }
    Ok(entity)
}

/// GnuPG's stand-in for a secret key kept elsewhere (S2K specifier 101).
fn is_stub(secret: &[u8]) -> bool {
    matches!(secret, [254 | 255, _, 101, ..])
}

/// The type and key flags of a version 4 signature packet, when `issuer` (a key id) made it or
/// it names no issuer.
fn signature_flags(body: &[u8], issuer: &[u8; 8]) -> Option<(u8, Option<u8>)> {
    if body.first() != Some(&4) {
        return None;
    }
    let sig_type = *body.get(1)?;
    let hashed_len = u16::from_be_bytes([*body.get(4)?, *body.get(5)?]) as usize;
    let hashed = body.get(6..6 + hashed_len)?;
    let at = 6 + hashed_len;
    let unhashed_len = u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]) as usize;
    let unhashed = body.get(at + 2..at + 2 + unhashed_len)?;
    let mut flags = None;
    let mut from = None;
    for (area, is_hashed) in [(hashed, true), (unhashed, false)] {
        let mut rest = area;
        while !rest.is_empty() {
            let (len, header) = match rest[0] {
                n @ 0..=191 => (n as usize, 1),
                n @ 192..=254 => (((n as usize - 192) << 8) + *rest.get(1)? as usize + 192, 2),
                255 => (
                    u32::from_be_bytes(rest.get(1..5)?.try_into().ok()?) as usize,
                    5,
                ),
            };
            let sub = rest.get(header..header + len)?;
            rest = &rest[header + len..];
            let (&kind, data) = sub.split_first()?;
            match kind & 0x7f {
                // Key flags count only where the signature covers them.
                27 if is_hashed => flags = data.first().copied(),
                16 if data.len() == 8 => from = Some(data.to_vec()),
                33 if data.len() == 21 => from = Some(data[13..].to_vec()),
                _ => {}
            }
        }
    }
    if from.as_deref().is_some_and(|f| f != issuer) {
        return None;
    }
    Some((sig_type, flags))
}

/// Reads a key ring's primary keys. Armor is removed first when the data starts with it.
fn read_ring(data: &[u8]) -> Result<Vec<Entity>, PgpKeyError> {
    let binary;
    let data = if looks_armored(data) {
        binary = dearmor(data)?;
        &binary[..]
    } else {
        data
    };
    let mut entities = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let start = pos;
        let (tag, body, next) = packet(data, pos)?;
        pos = next;
        match tag {
            5 | 6 => entities.push(parse_key(body, tag == 5, start)?),
            7 | 14 => {
                let subkey = parse_key(body, tag == 7, start)?;
                let Some(primary) = entities.last_mut() else {
                    return Err(read_err("a subkey before any primary key", start));
                };
                primary.subkeys.push(subkey);
            }
            2 => {
                // Self-signatures (on a user id or the key) and subkey bindings carry the key
                // flags; others' certifications are skipped.
                let Some(primary) = entities.last_mut() else {
                    continue;
                };
                let Some((sig_type, flags)) = signature_flags(body, &primary.key_id) else {
                    continue;
                };
                match (sig_type, primary.subkeys.last_mut()) {
                    (0x10..=0x13 | 0x1f, None) if flags.is_some() => primary.flags = flags,
                    (0x18, Some(subkey)) => subkey.flags = flags,
                    _ => {}
                }
            }
            // User ids, user attributes, trust and marker packets.
            12 | 13 | 17 | 10 => {}
            _ => return Err(read_err(format!("unexpected packet (tag {tag})"), start)),
        }
    }
    Ok(entities)
}

fn looks_armored(data: &[u8]) -> bool {
    let text = data.trim_ascii_start();
    text.starts_with(b"-----BEGIN PGP")
}

/// The bytes of the first armored block: the header lines up to a blank line, then base64 up
/// to the checksum line (`=XXXX`) or the end line.
fn dearmor(data: &[u8]) -> Result<Vec<u8>, PgpKeyError> {
    let text = String::from_utf8_lossy(data);
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .skip_while(|l| l.trim().is_empty());
    lines.next();
    // Armor headers (`Version: ...`, `Comment: ...`) end at the first blank line.
    let mut b64 = String::new();
    let mut in_headers = true;
    for line in lines {
        if line.starts_with("-----END") || line.starts_with('=') {
            break;
        }
        if in_headers {
            if line.trim().is_empty() {
                in_headers = false;
                continue;
            }
            if line.contains(": ") {
                continue;
            }
            in_headers = false;
        }
        b64.push_str(line.trim());
    }
    base64::engine::general_purpose::STANDARD
        .decode(b64.as_bytes())
        .map_err(|e| read_err(format!("armor is not base64: {e}"), 0))
}

/// The packet at `pos`: its tag, body and the offset after it (old and new formats; partial
/// lengths, which key packets never use, are refused).
fn packet(data: &[u8], pos: usize) -> Result<(u8, &[u8], usize), PgpKeyError> {
    let ctb = data[pos];
    if ctb & 0x80 == 0 {
        return Err(read_err("not an OpenPGP packet", pos));
    }
    let byte = |i: usize| {
        data.get(i)
            .copied()
            .ok_or_else(|| read_err("truncated packet header", pos))
    };
    let (tag, len, header) = if ctb & 0x40 != 0 {
        let tag = ctb & 0x3f;
        let first = byte(pos + 1)? as usize;
        match first {
            0..=191 => (tag, first, 2),
            192..=223 => (tag, ((first - 192) << 8) + byte(pos + 2)? as usize + 192, 3),
            255 => {
                let mut n = 0usize;
                for i in 0..4 {
                    n = (n << 8) | byte(pos + 2 + i)? as usize;
                }
                (tag, n, 6)
            }
            _ => return Err(read_err("partial body lengths in a key ring", pos)),
        }
    } else {
        let tag = (ctb >> 2) & 0x0f;
        match ctb & 3 {
            0 => (tag, byte(pos + 1)? as usize, 2),
            1 => (
                tag,
                ((byte(pos + 1)? as usize) << 8) | byte(pos + 2)? as usize,
                3,
            ),
            2 => {
                let mut n = 0usize;
                for i in 0..4 {
                    n = (n << 8) | byte(pos + 1 + i)? as usize;
                }
                (tag, n, 5)
            }
            _ => (tag, data.len() - pos - 1, 1),
        }
    };
    let start = pos + header;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| read_err("packet runs past the end of the data", pos))?;
    Ok((tag, &data[start..end], end))
}

/// A cursor over a packet body.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Where the body starts in the ring, for messages.
    base: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PgpKeyError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| read_err("truncated key packet", self.base))?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, PgpKeyError> {
        Ok(self.take(1)?[0])
    }

    /// A multiprecision integer: a 16-bit bit count, then the bytes.
    fn mpi(&mut self) -> Result<&'a [u8], PgpKeyError> {
        let bits = u16::from_be_bytes([self.u8()?, self.u8()?]) as usize;
        self.take(bits.div_ceil(8))
    }

    fn rest(&mut self) -> &'a [u8] {
        let out = &self.data[self.pos..];
        self.pos = self.data.len();
        out
    }
}

fn parse_key(body: &[u8], secret: bool, offset: usize) -> Result<Entity, PgpKeyError> {
    let mut r = Reader {
        data: body,
        pos: 0,
        base: offset,
    };
    let version = r.u8()?;
    if version != 4 {
        return Err(read_err(
            format!("version {version} keys are not supported (version 4 only)"),
            offset,
        ));
    }
    r.take(4)?; // creation time
    let algo_id = r.u8()?;
    let material_start = r.pos;
    let algo = match algo_id {
        1 | 3 => {
            r.mpi()?;
            r.mpi()?;
            Some(Algo::Rsa)
        }
        22 => {
            let oid_len = r.u8()? as usize;
            let oid = r.take(oid_len)?;
            r.mpi()?;
            (oid == ED25519_OID).then_some(Algo::EdDsaLegacy)
        }
        27 => {
            r.take(32)?;
            Some(Algo::Ed25519)
        }
        // The rest's public material is skipped by its MPIs so the ring can still be read.
        16 | 20 => {
            for _ in 0..3 {
                r.mpi()?;
            }
            None
        }
        17 => {
            for _ in 0..4 {
                r.mpi()?;
            }
            None
        }
        18 | 19 => {
            let oid_len = r.u8()? as usize;
            r.take(oid_len)?;
            r.mpi()?;
            if algo_id == 18 {
                let kdf_len = r.u8()? as usize;
                r.take(kdf_len)?;
            }
            None
        }
        other => {
            return Err(read_err(
                format!("public-key algorithm {other} is not supported"),
                offset,
            ));
        }
    };
    let material = body[material_start..r.pos].to_vec();
    let public = body[..r.pos].to_vec();
    let mut hashed = vec![0x99];
    hashed.extend_from_slice(&(public.len() as u16).to_be_bytes());
    hashed.extend_from_slice(&public);
    let fingerprint =
        sha1(&hashed).ok_or_else(|| read_err("key packet crafted to collide SHA-1", offset))?;
    let mut key_id = [0u8; 8];
    key_id.copy_from_slice(&fingerprint[12..]);
    Ok(Entity {
        key_id,
        fingerprint,
        algo,
        algo_id,
        material,
        secret: secret.then(|| r.rest().to_vec()),
        offset,
        flags: None,
        subkeys: Vec::new(),
    })
}

fn sha1(data: &[u8]) -> Option<[u8; 20]> {
    let mut hasher = sha1dc::Hasher::new();
    hasher.update(data);
    hasher.finalize().ok().map(Into::into)
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// Decrypts (when protected) and checks an entity's secret key.
fn decrypt(entity: &Entity, passphrase: &[u8]) -> Result<PgpSigner, PgpKeyError> {
    let key_id = hex_upper(&entity.key_id);
    let unsupported = |what: String| PgpKeyError::Unsupported {
        key_id: key_id.clone(),
        what,
    };
    let Some(algo) = entity.algo else {
        return Err(unsupported(match entity.algo_id {
            22 => "EdDSA on a curve other than Ed25519".into(),
            n => format!(
                "public-key algorithm {n} (ferroflux signs with Ed25519, EdDSA and RSA keys)"
            ),
        }));
    };
    let secret = entity.secret.as_deref().unwrap_or_default();
    let mut r = Reader {
        data: secret,
        pos: 0,
        base: entity.offset,
    };
    let usage = r.u8()?;
    let plain = match usage {
        0 => {
            let rest = r.rest();
            if rest.len() < 2 {
                return Err(read_err("truncated secret key", entity.offset));
            }
            let (material, sum) = rest.split_at(rest.len() - 2);
            if checksum16(material) != u16::from_be_bytes([sum[0], sum[1]]) {
                return Err(PgpKeyError::Decrypt("private key checksum failure".into()));
            }
            material.to_vec()
        }
        254 | 255 => {
            let cipher = r.u8()?;
            let key_len = match cipher {
                7 => 16,
                8 => 24,
                9 => 32,
                n => return Err(unsupported(format!("secret key cipher {n} (AES only)"))),
            };
            let s2k_type = r.u8()?;
            if s2k_type == 101 {
                return Err(unsupported(
                    "the secret key is a GnuPG stub (kept on a card or offline)".into(),
                ));
            }
            let hash = r.u8()?;
            let (salt, count) = match s2k_type {
                0 => (&[][..], 0),
                1 => (r.take(8)?, 0),
                3 => {
                    let salt = r.take(8)?;
                    let c = r.u8()? as usize;
                    (salt, (16 + (c & 15)) << ((c >> 4) + 6))
                }
                n => return Err(unsupported(format!("S2K specifier {n}"))),
            };
            let iv = r.take(16)?;
            let key = s2k(hash, salt, count, passphrase, key_len)
                .ok_or_else(|| unsupported(format!("S2K hash algorithm {hash}")))?;
            let mut data = r.rest().to_vec();
            cfb_decrypt(&key, iv, &mut data);
            if usage == 254 {
                if data.len() < 20 {
                    return Err(read_err("truncated secret key", entity.offset));
                }
                let (material, check) = data.split_at(data.len() - 20);
                if sha1(material).as_ref().map(|d| &d[..]) != Some(check) {
                    return Err(PgpKeyError::Decrypt(
                        "private key checksum failure (wrong passphrase?)".into(),
                    ));
                }
                material.to_vec()
            } else {
                if data.len() < 2 {
                    return Err(read_err("truncated secret key", entity.offset));
                }
                let (material, sum) = data.split_at(data.len() - 2);
                if checksum16(material) != u16::from_be_bytes([sum[0], sum[1]]) {
                    return Err(PgpKeyError::Decrypt(
                        "private key checksum failure (wrong passphrase?)".into(),
                    ));
                }
                material.to_vec()
            }
        }
        n => {
            return Err(unsupported(format!(
                "secret key protection {n} (an S2K with usage 254 or 255 only)"
            )));
        }
    };
    let bad = || PgpKeyError::Decrypt("the secret key does not match its public key".into());
    let mut m = Reader {
        data: &plain,
        pos: 0,
        base: entity.offset,
    };
    let key = match algo {
        Algo::EdDsaLegacy | Algo::Ed25519 => {
            let seed_bytes = if algo == Algo::Ed25519 {
                m.take(32)?
            } else {
                m.mpi()?
            };
            if seed_bytes.len() > 32 {
                return Err(bad());
            }
            // An MPI drops leading zero bytes.
            let mut seed = [0u8; 32];
            seed[32 - seed_bytes.len()..].copy_from_slice(seed_bytes);
            let key = ed25519_dalek::SigningKey::from_bytes(&seed);
            let public = key.verifying_key().to_bytes();
            let stored = if algo == Algo::Ed25519 {
                &entity.material[..]
            } else {
                // OID length, OID, MPI bit count, 0x40 prefix, then the point.
                let point = &entity.material[1 + ED25519_OID.len() + 2..];
                point.strip_prefix(&[0x40]).unwrap_or(point)
            };
            if stored != public {
                return Err(bad());
            }
            SecretKey::Ed25519 {
                legacy: algo == Algo::EdDsaLegacy,
                key,
            }
        }
        Algo::Rsa => {
            let mut p = Reader {
                data: &entity.material,
                pos: 0,
                base: entity.offset,
            };
            let n = rsa::BigUint::from_bytes_be(p.mpi()?);
            let e = rsa::BigUint::from_bytes_be(p.mpi()?);
            let d = rsa::BigUint::from_bytes_be(m.mpi()?);
            let pp = rsa::BigUint::from_bytes_be(m.mpi()?);
            let q = rsa::BigUint::from_bytes_be(m.mpi()?);
            let key =
                rsa::RsaPrivateKey::from_components(n, e, d, vec![pp, q]).map_err(|_| bad())?;
            key.validate().map_err(|_| bad())?;
            SecretKey::Rsa(key)
        }
    };
    Ok(PgpSigner {
        key_id: entity.key_id,
        fingerprint: entity.fingerprint,
        key,
    })
}

fn checksum16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |s, &b| s.wrapping_add(b as u16))
}

/// The OpenPGP S2K key derivation: `count` bytes of salt+passphrase repeated (at least one
/// copy) through the hash, with one more hash context per missing digest length, each
/// preloaded with one more zero byte. `None` for a hash this code does not have.
fn s2k(hash: u8, salt: &[u8], count: usize, pass: &[u8], key_len: usize) -> Option<Vec<u8>> {
    let mut input = salt.to_vec();
    input.extend_from_slice(pass);
    let total = count.max(input.len());
    let mut key = Vec::with_capacity(key_len);
    let mut round = 0;
    while key.len() < key_len {
        let mut h = Hash::new(hash)?;
        h.update(&vec![0u8; round]);
        let mut left = total;
        while left > 0 {
            let n = left.min(input.len());
            h.update(&input[..n]);
            left -= n;
        }
        key.extend_from_slice(&h.finish()?);
        round += 1;
    }
    key.truncate(key_len);
    Some(key)
}

/// The hashes S2K and signatures use here.
enum Hash {
    Sha1(sha1dc::Hasher),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Sha224(sha2::Sha224),
}

impl Hash {
    fn new(id: u8) -> Option<Hash> {
        Some(match id {
            2 => Hash::Sha1(sha1dc::Hasher::new()),
            8 => Hash::Sha256(sha2::Sha256::new()),
            9 => Hash::Sha384(sha2::Sha384::new()),
            10 => Hash::Sha512(sha2::Sha512::new()),
            11 => Hash::Sha224(sha2::Sha224::new()),
            _ => return None,
        })
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Hash::Sha1(h) => h.update(data),
            Hash::Sha256(h) => h.update(data),
            Hash::Sha384(h) => h.update(data),
            Hash::Sha512(h) => h.update(data),
            Hash::Sha224(h) => h.update(data),
        }
    }

    fn finish(self) -> Option<Vec<u8>> {
        Some(match self {
            Hash::Sha1(h) => {
                let d: [u8; 20] = h.finalize().ok()?.into();
                d.to_vec()
            }
            Hash::Sha256(h) => h.finalize().to_vec(),
            Hash::Sha384(h) => h.finalize().to_vec(),
            Hash::Sha512(h) => h.finalize().to_vec(),
            Hash::Sha224(h) => h.finalize().to_vec(),
        })
    }
}

/// AES in full-block CFB mode (how OpenPGP protects v4 secret keys), decrypting in place.
fn cfb_decrypt(key: &[u8], iv: &[u8], data: &mut [u8]) {
    enum Aes {
        A128(aes::Aes128),
        A192(aes::Aes192),
        A256(aes::Aes256),
    }
    let cipher = match key.len() {
        16 => Aes::A128(aes::Aes128::new(GenericArray::from_slice(key))),
        24 => Aes::A192(aes::Aes192::new(GenericArray::from_slice(key))),
        _ => Aes::A256(aes::Aes256::new(GenericArray::from_slice(key))),
    };
    let mut feedback = [0u8; 16];
    feedback.copy_from_slice(iv);
    for chunk in data.chunks_mut(16) {
        let mut block = GenericArray::clone_from_slice(&feedback);
        match &cipher {
            Aes::A128(c) => c.encrypt_block(&mut block),
            Aes::A192(c) => c.encrypt_block(&mut block),
            Aes::A256(c) => c.encrypt_block(&mut block),
        }
        let mut next = [0u8; 16];
        next[..chunk.len()].copy_from_slice(chunk);
        for (b, k) in chunk.iter_mut().zip(block.iter()) {
            *b ^= k;
        }
        feedback = next;
    }
}

impl PgpSigner {
    /// The key's id, 16 upper-case hex digits.
    pub fn key_id(&self) -> String {
        hex_upper(&self.key_id)
    }

    /// The armored v4 detached signature (`-----BEGIN PGP SIGNATURE-----`) of `payload` as a
    /// binary document, created at `created` (seconds since the epoch), ending in a newline.
    pub fn sign(&self, payload: &[u8], created: u32) -> Result<String, PgpKeyError> {
        let (algo, hash_id) = match &self.key {
            SecretKey::Ed25519 { legacy: true, .. } => (Algo::EdDsaLegacy, 10u8),
            SecretKey::Ed25519 { legacy: false, .. } => (Algo::Ed25519, 10u8),
            SecretKey::Rsa(_) => (Algo::Rsa, 8u8),
        };
        // Hashed subpackets: issuer fingerprint (33), creation time (2).
        let mut hashed_sub = vec![22, 33, 4];
        hashed_sub.extend_from_slice(&self.fingerprint);
        hashed_sub.extend_from_slice(&[5, 2]);
        hashed_sub.extend_from_slice(&created.to_be_bytes());
        let mut head = vec![4, 0x00, algo.id(), hash_id];
        head.extend_from_slice(&(hashed_sub.len() as u16).to_be_bytes());
        head.extend_from_slice(&hashed_sub);

        let mut h = Hash::new(hash_id).ok_or_else(|| PgpKeyError::Decrypt("no hash".into()))?;
        h.update(payload);
        h.update(&head);
        h.update(&[4, 0xff]);
        h.update(&(head.len() as u32).to_be_bytes());
        let digest = h
            .finish()
            .ok_or_else(|| PgpKeyError::Decrypt("no hash".into()))?;

        let mut body = head;
        // Unhashed: the issuer key id (16), which older verifiers look the key up by.
        let mut unhashed = vec![9, 16];
        unhashed.extend_from_slice(&self.key_id);
        body.extend_from_slice(&(unhashed.len() as u16).to_be_bytes());
        body.extend_from_slice(&unhashed);
        body.extend_from_slice(&digest[..2]);
        match &self.key {
            SecretKey::Ed25519 { legacy, key } => {
                use ed25519_dalek::Signer as _;
                let sig = key.sign(&digest).to_bytes();
                if *legacy {
                    push_mpi(&mut body, &sig[..32]);
                    push_mpi(&mut body, &sig[32..]);
                } else {
                    body.extend_from_slice(&sig);
                }
            }
            SecretKey::Rsa(key) => {
                // The DER DigestInfo prefix of SHA-256 (RFC 8017, 9.2).
                const SHA256_PREFIX: [u8; 19] = [
                    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
                    0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
                ];
                let scheme = rsa::Pkcs1v15Sign {
                    hash_len: Some(32),
                    prefix: Box::new(SHA256_PREFIX),
                };
                let sig = key
                    .sign_with_rng(&mut rand_core::OsRng, scheme, &digest)
                    .map_err(|e| PgpKeyError::Decrypt(format!("RSA signing failed: {e}")))?;
                push_mpi(&mut body, &sig);
            }
        }
        let mut packet = vec![0xc2];
        push_length(&mut packet, body.len());
        packet.extend_from_slice(&body);
        Ok(armor(&packet))
    }
}

/// The DER `DigestInfo` prefix PKCS#1 v1.5 puts before a digest of hash algorithm `id`, and the
/// digest's length (RFC 8017, 9.2; OpenPGP's hash ids).
fn rsa_digest_info(id: u8) -> Option<(&'static [u8], usize)> {
    const SHA1: [u8; 15] = [
        0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14,
    ];
    const SHA256: [u8; 19] = [
        0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01,
        0x05, 0x00, 0x04, 0x20,
    ];
    const SHA384: [u8; 19] = [
        0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
        0x05, 0x00, 0x04, 0x30,
    ];
    const SHA512: [u8; 19] = [
        0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03,
        0x05, 0x00, 0x04, 0x40,
    ];
    const SHA224: [u8; 19] = [
        0x30, 0x2d, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x04,
        0x05, 0x00, 0x04, 0x1c,
    ];
    Some(match id {
        2 => (&SHA1[..], 20),
        8 => (&SHA256[..], 32),
        9 => (&SHA384[..], 48),
        10 => (&SHA512[..], 64),
        11 => (&SHA224[..], 28),
        _ => return None,
    })
}

/// A v4 signature packet's parts that verification needs.
struct SignaturePacket {
    sig_type: u8,
    algo: u8,
    hash: u8,
    /// Version through the hashed subpackets: what the digest covers after the data.
    hashed_part: Vec<u8>,
    /// The issuer's key id, from subpacket 16 or the end of subpacket 33's fingerprint.
    issuer: Option<[u8; 8]>,
    /// The signature values (MPIs, or the raw 64 bytes of an Ed25519 v4 signature).
    values: Vec<Vec<u8>>,
}

/// The issuer key id among subpackets (RFC 4880 5.2.3.1).
fn issuer_of(mut area: &[u8]) -> Option<[u8; 8]> {
    let mut found = None;
    while let Some(&first) = area.first() {
        let (len, skip) = match first {
            0..=191 => (first as usize, 1),
            192..=254 => (
                ((first as usize - 192) << 8) + *area.get(1)? as usize + 192,
                2,
            ),
            255 => (
                u32::from_be_bytes(area.get(1..5)?.try_into().ok()?) as usize,
                5,
            ),
        };
        let body = area.get(skip..skip + len)?;
        let (kind, data) = body.split_first()?;
        match kind & 0x7f {
            16 if data.len() == 8 => found = data.try_into().ok(),
            33 if data.len() == 21 && found.is_none() => found = data[13..21].try_into().ok(),
            _ => {}
        }
        area = &area[skip + len..];
    }
    found
}

fn parse_signature(body: &[u8]) -> Result<SignaturePacket, String> {
    let mut r = Reader {
        data: body,
        pos: 0,
        base: 0,
    };
    let bad = |_| "the signature packet is truncated".to_string();
    let version = r.u8().map_err(bad)?;
    if version != 4 {
        return Err(format!(
            "version {version} signatures are not supported (version 4 only)"
        ));
    }
    let sig_type = r.u8().map_err(bad)?;
    let algo = r.u8().map_err(bad)?;
    let hash = r.u8().map_err(bad)?;
    let hashed_len = u16::from_be_bytes([r.u8().map_err(bad)?, r.u8().map_err(bad)?]) as usize;
    let hashed = r.take(hashed_len).map_err(bad)?;
    let hashed_part = body[..r.pos].to_vec();
    let unhashed_len = u16::from_be_bytes([r.u8().map_err(bad)?, r.u8().map_err(bad)?]) as usize;
    let unhashed = r.take(unhashed_len).map_err(bad)?;
    r.take(2).map_err(bad)?; // the digest's first 16 bits, a quick check only
    let values = match algo {
        1 | 3 => vec![r.mpi().map_err(bad)?.to_vec()],
        22 => vec![
            r.mpi().map_err(bad)?.to_vec(),
            r.mpi().map_err(bad)?.to_vec(),
        ],
        27 => vec![r.take(64).map_err(bad)?.to_vec()],
        other => return Err(format!("public-key algorithm {other} is not supported")),
    };
    Ok(SignaturePacket {
        sig_type,
        algo,
        hash,
        hashed_part,
        issuer: issuer_of(hashed).or_else(|| issuer_of(unhashed)),
        values,
    })
}

fn left_pad(bytes: &[u8], len: usize) -> Option<Vec<u8>> {
    if bytes.len() > len {
        return None;
    }
    let mut out = vec![0u8; len - bytes.len()];
    out.extend_from_slice(bytes);
    Some(out)
}

/// Whether `sig` over `digest` verifies with `key`'s public material.
fn verify_with(key: &Entity, sig: &SignaturePacket, digest: &[u8]) -> bool {
    let mut r = Reader {
        data: &key.material,
        pos: 0,
        base: 0,
    };
    match (key.algo, sig.algo) {
        (Some(Algo::Rsa), 1 | 3) => {
            let (Ok(n), Ok(e)) = (r.mpi(), r.mpi()) else {
                return false;
            };
            let Some((prefix, hash_len)) = rsa_digest_info(sig.hash) else {
                return false;
            };
            let Ok(public) = rsa::RsaPublicKey::new(
                rsa::BigUint::from_bytes_be(n),
                rsa::BigUint::from_bytes_be(e),
            ) else {
                return false;
            };
            let scheme = rsa::Pkcs1v15Sign {
                hash_len: Some(hash_len),
                prefix: prefix.into(),
            };
            let Some(value) = left_pad(&sig.values[0], n.len()) else {
                return false;
            };
            use rsa::traits::PublicKeyParts as _;
            let Some(value) = left_pad(&value, public.size()) else {
                return false;
            };
            public.verify(scheme, digest, &value).is_ok()
        }
        (Some(Algo::EdDsaLegacy), 22) | (Some(Algo::Ed25519), 27) => {
            let point: Option<[u8; 32]> = if key.algo == Some(Algo::Ed25519) {
                r.take(32).ok().and_then(|p| p.try_into().ok())
            } else {
                // The OID, then the point as an MPI: 0x40 and the 32 bytes.
                r.u8()
                    .ok()
                    .and_then(|l| r.take(l as usize).ok())
                    .and_then(|_| r.mpi().ok())
                    .and_then(|p| p.strip_prefix(&[0x40]))
                    .and_then(|p| p.try_into().ok())
            };
            let Some(point) = point else {
                return false;
            };
            let bytes: Option<[u8; 64]> = if sig.algo == 27 {
                sig.values[0].as_slice().try_into().ok()
            } else {
                let (Some(rr), Some(ss)) =
                    (left_pad(&sig.values[0], 32), left_pad(&sig.values[1], 32))
                else {
                    return false;
                };
                [rr, ss].concat().try_into().ok()
            };
            let (Ok(key), Some(bytes)) = (ed25519_dalek::VerifyingKey::from_bytes(&point), bytes)
            else {
                return false;
            };
            use ed25519_dalek::Verifier as _;
            key.verify(digest, &ed25519_dalek::Signature::from_bytes(&bytes))
                .is_ok()
        }
        _ => false,
    }
}

/// Verifies an armored detached OpenPGP signature (a commit's or a tag's) of `payload` against
/// the keys of `rings` (armored or binary key rings), as source-controller's `VerifyPGP` does:
/// the first ring whose key verifies it wins, and the result is that key's primary key id
/// (16 upper-case hex digits, subkey signatures included). Flux's messages otherwise.
pub fn verify_detached(payload: &[u8], armored: &str, rings: &[&[u8]]) -> Result<String, String> {
    let binary =
        dearmor(armored.as_bytes()).map_err(|e| format!("unable to read the signature: {e}"))?;
    let mut pos = 0;
    let mut signatures = Vec::new();
    while pos < binary.len() {
        let (tag, body, next) =
            packet(&binary, pos).map_err(|e| format!("unable to read the signature: {e}"))?;
        pos = next;
        if tag == 2 {
            signatures.push(parse_signature(body)?);
        }
    }
    if signatures.is_empty() {
        return Err("unable to read the signature: no signature packet".into());
    }
    for ring in rings {
        let entities =
            read_ring(ring).map_err(|e| format!("unable to read armored key ring: {e}"))?;
        for sig in &signatures {
            let mut h = match Hash::new(sig.hash) {
                Some(h) => h,
                None => continue,
            };
            if sig.sig_type == 0x01 {
                // A text signature covers the data with CRLF line endings.
                let mut canonical = Vec::with_capacity(payload.len());
                for (i, &b) in payload.iter().enumerate() {
                    if b == b'\n' && (i == 0 || payload[i - 1] != b'\r') {
                        canonical.push(b'\r');
                    }
                    canonical.push(b);
                }
                h.update(&canonical);
            } else if sig.sig_type == 0x00 {
                h.update(payload);
            } else {
                continue;
            }
            h.update(&sig.hashed_part);
            h.update(&[4, 0xff]);
            h.update(&(sig.hashed_part.len() as u32).to_be_bytes());
            let Some(digest) = h.finish() else { continue };
            for primary in &entities {
                let keys = std::iter::once(primary).chain(primary.subkeys.iter());
                for key in keys {
                    if sig.issuer.is_some_and(|id| id != key.key_id) {
                        continue;
                    }
                    if verify_with(key, sig, &digest) {
                        return Ok(hex_upper(&primary.key_id));
                    }
                }
            }
        }
    }
    Err(
        "unable to verify Git commit: unable to verify payload with any of the given key rings"
            .into(),
    )
}

fn push_mpi(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let bytes = &bytes[start..];
    let bits = match bytes.first() {
        Some(&b) => bytes.len() * 8 - b.leading_zeros() as usize,
        None => 0,
    };
    out.extend_from_slice(&(bits as u16).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn push_length(out: &mut Vec<u8>, len: usize) {
    if len < 192 {
        out.push(len as u8);
    } else if len < 8384 {
        let l = len - 192;
        out.push((l >> 8) as u8 + 192);
        out.push(l as u8);
    } else {
        out.push(255);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// ASCII armor of a signature, with the CRC-24 line.
fn armor(packet: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::from("-----BEGIN PGP SIGNATURE-----\n\n");
    let text = b64.encode(packet);
    for line in text.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    let crc = crc24(packet).to_be_bytes();
    out.push('=');
    out.push_str(&b64.encode(&crc[1..]));
    out.push_str("\n-----END PGP SIGNATURE-----\n");
    out
}

fn crc24(data: &[u8]) -> u32 {
    let mut crc: u32 = 0xb7_04ce;
    for &b in data {
        crc ^= (b as u32) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= 0x186_4cfb;
            }
        }
    }
    crc & 0xff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unprotected version 4 Ed25519 (algorithm 27) secret key packet. GnuPG 2.2 neither
    /// writes nor verifies these, so the signature is checked here against the RFC 9580 rules
    /// with ed25519-dalek.
    #[test]
    fn ed25519_algorithm_27_keys_sign_what_their_public_key_verifies() {
        let seed = [7u8; 32];
        let public = ed25519_dalek::SigningKey::from_bytes(&seed)
            .verifying_key()
            .to_bytes();
        let mut body = vec![4, 0x65, 0x53, 0xf1, 0x00, 27];
        body.extend_from_slice(&public);
        body.push(0);
        body.extend_from_slice(&seed);
        body.extend_from_slice(&checksum16(&seed).to_be_bytes());
        let mut ring = vec![0xc5, body.len() as u8];
        ring.extend_from_slice(&body);

        let signer = load_signer(&ring, "", "").unwrap();
        let armored = signer.sign(b"payload", 1_700_000_001).unwrap();
        let b64: String = armored
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('='))
            .collect();
        let packet = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let (tag, sig, _) = super::packet(&packet, 0).unwrap();
        assert_eq!(tag, 2);
        // version 4, binary document, algorithm 27, SHA-512
        assert_eq!(&sig[..4], &[4, 0, 27, 10]);
        let hashed_len = u16::from_be_bytes([sig[4], sig[5]]) as usize;
        let head = &sig[..6 + hashed_len];
        let mut h = sha2::Sha512::new();
        h.update(b"payload");
        h.update(head);
        h.update([4, 0xff]);
        h.update((head.len() as u32).to_be_bytes());
        let digest = h.finalize();
        let unhashed_len = u16::from_be_bytes([sig[6 + hashed_len], sig[7 + hashed_len]]) as usize;
        let rest = &sig[8 + hashed_len + unhashed_len..];
        assert_eq!(&rest[..2], &digest[..2]);
        let raw: [u8; 64] = rest[2..].try_into().unwrap();
        let key = ed25519_dalek::VerifyingKey::from_bytes(&public).unwrap();
        key.verify_strict(&digest, &ed25519_dalek::Signature::from_bytes(&raw))
            .unwrap();
        let mut other = digest;
        other[0] ^= 1;
        assert!(
            key.verify_strict(&other, &ed25519_dalek::Signature::from_bytes(&raw))
                .is_err()
        );
    }
}
