//! Sprig's hashing, password, key, certificate and AES functions on plain Rust types.
//!
//! Crates and why: digests come from `sha2` (already in the workspace) and `ring` (SHA-1 and
//! HMAC; already linked by rustls and rcgen); certificates are built and signed by `rcgen` over
//! `ring`, the workspace's X.509 writer. `ring` cannot generate RSA keys, and Sprig's `genCA`,
//! `genSelfSignedCert`, `genSignedCert` and `genPrivateKey "rsa"` make RSA keys, so the `rsa`
//! crate (RustCrypto, pure Rust, on the `rand` 0.8 already in the lock) holds them and writes
//! PKCS#1 (the prime search is ours, `rsagen`, for speed); ring then signs with them. `bcrypt` gives `htpasswd` Go's `$2a$` hashes,
//! `derivePassword`'s scrypt is ours (`scryptpar`: its two lanes on two threads, PBKDF2 from
//! ring), `aes` (already in the lock through sops' dependencies) serves
//! `encryptAES`/`decryptAES` (CBC is a few lines over the block cipher).
//!
//! Not provided: DSA keys (`genPrivateKey "dsa"`), which no maintained pure-Rust crate generates at
//! Go's L2048N256 size; the function returns an error saying so.

use std::net::IpAddr;

use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use ferroflux_gotemplate::gostr;
use rand::RngCore;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use sha2::Digest;

use crate::encoding;

/// Lower-case hex of bytes.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `sha1sum`.
pub fn sha1sum(s: &str) -> String {
    hex(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &gostr::to_bytes(s)).as_ref())
}

/// `sha256sum`.
pub fn sha256sum(s: &str) -> String {
    hex(&sha2::Sha256::digest(gostr::to_bytes(s)))
}

/// `sha512sum`.
pub fn sha512sum(s: &str) -> String {
    hex(&sha2::Sha512::digest(gostr::to_bytes(s)))
}

/// `adler32sum`: the Adler-32 checksum in decimal.
pub fn adler32sum(s: &str) -> String {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in gostr::to_bytes(s).iter() {
        a = (a + u32::from(byte)) % MOD;
        b = (b + a) % MOD;
    }
    ((b << 16) | a).to_string()
}

/// `bcrypt`: a `$2a$10$` hash, as Go's `bcrypt.GenerateFromPassword` at the default cost.
pub fn bcrypt(password: &str) -> String {
    // Go's bcrypt refuses passwords over 72 bytes; the Rust crate truncates. Sprig prints the
    // error text in place of the hash.
    if password.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match bcrypt::hash_with_result(password, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// `htpasswd user password`.
pub fn htpasswd(user: &str, password: &str) -> String {
    if user.contains(':') {
        return format!("invalid username: {user}");
    }
    format!("{user}:{}", bcrypt(password))
}

/// `randBytes n`: `n` random bytes, base64-encoded.
pub fn rand_bytes(n: i64) -> Result<String, String> {
    if n < 0 {
        return Err("runtime error: makeslice: len out of range".into());
    }
    let mut buf = vec![0u8; n as usize];
    rand::rngs::OsRng.fill_bytes(&mut buf);
    Ok(encoding::b64enc(&buf))
}

/// `uuidv4`: a random (version 4, RFC 4122 variant) UUID.
pub fn uuidv4() -> String {
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The Master Password algorithm's templates by password type.
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_chars(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// `derivePassword counter type password user site`: the Master Password algorithm (scrypt
/// key from the user, HMAC-SHA256 seed from the site and counter, then the type's template).
pub fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    const SEED: &[u8] = b"com.lyndir.masterpassword";
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = SEED.to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    if let Err(e) = crate::scryptpar::scrypt(password.as_bytes(), &salt, 15, 8, 2, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut msg = SEED.to_vec();
    msg.extend_from_slice(&(site.len() as u32).to_be_bytes());
    msg.extend_from_slice(site.as_bytes());
    msg.extend_from_slice(&counter.to_be_bytes());
    let hkey = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let seed = ring::hmac::sign(&hkey, &msg);
    let seed = seed.as_ref();
    let template = templates[seed[0] as usize % templates.len()].as_bytes();
    template
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let chars = template_chars(c);
            chars[seed[i + 1] as usize % chars.len()] as char
        })
        .collect()
}

/// Go's `pem.EncodeToMemory`: base64 in 64-column lines between BEGIN and END lines.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = encoding::b64enc(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Go's `pem.Decode` of the first block: its type and bytes.
pub fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label_end = rest.find("-----")?;
    let label = &rest[..label_end];
    let body = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let end = body.find(&end_marker)?;
    let b64: String = body[..end]
        .lines()
        .filter(|l| !l.contains(':'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = encoding::b64dec_bytes(&b64).ok()?;
    Some((label.to_string(), der))
}

/// A private key Sprig can sign with, kept as PKCS#8 for ring plus the PEM Go would write.
pub struct PrivateKey {
    pkcs8: Vec<u8>,
    pem: String,
    alg: &'static rcgen::SignatureAlgorithm,
}

/// ASN.1 prefix of an Ed25519 PKCS#8 v1 key before its 32-byte seed (Go's form).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// OID 1.2.840.10045.3.1.7 (P-256), DER-encoded with its tag.
const P256_OID: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// OID 1.2.840.10045.2.1 (id-ecPublicKey).
const EC_PUBLIC_KEY_OID: [u8; 9] = [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

fn der_len(n: usize) -> Vec<u8> {
    if n < 0x80 {
        vec![n as u8]
    } else if n < 0x100 {
        vec![0x81, n as u8]
    } else {
        vec![0x82, (n >> 8) as u8, n as u8]
    }
}

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend(der_len(content.len()));
    out.extend_from_slice(content);
    out
}

fn rsa_key(key: rsa::RsaPrivateKey) -> Result<PrivateKey, String> {
    let pkcs1 = key.to_pkcs1_der().map_err(|e| e.to_string())?;
    let pkcs8 = key.to_pkcs8_der().map_err(|e| e.to_string())?;
    Ok(PrivateKey {
        pkcs8: pkcs8.as_bytes().to_vec(),
        pem: pem_encode("RSA PRIVATE KEY", pkcs1.as_bytes()),
        alg: &rcgen::PKCS_RSA_SHA256,
    })
}

/// A new RSA key of `bits` bits.
pub fn generate_rsa(bits: usize) -> Result<PrivateKey, String> {
    crate::rsagen::generate(bits).and_then(rsa_key)
}

/// A new ECDSA P-256 key, written as Go writes it (SEC 1 `EC PRIVATE KEY` with the curve).
fn generate_ecdsa() -> Result<PrivateKey, String> {
    let rng = ring::rand::SystemRandom::new();
    let alg = &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING;
    let pkcs8 =
        ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|e| e.to_string())?;
    let pkcs8 = pkcs8.as_ref().to_vec();
    let pair =
        ring::signature::EcdsaKeyPair::from_pkcs8(alg, &pkcs8, &rng).map_err(|e| e.to_string())?;
    use ring::signature::KeyPair as _;
    let public = pair.public_key().as_ref().to_vec();
    // ring's PKCS#8 holds an ECPrivateKey whose private scalar follows `04 20`.
    let at = pkcs8
        .windows(5)
        .position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20])
        .ok_or("unexpected ECDSA key layout")?;
    let scalar = &pkcs8[at + 5..at + 37];
    Ok(PrivateKey {
        pem: pem_encode("EC PRIVATE KEY", &sec1(scalar, &public)),
        pkcs8,
        alg: &rcgen::PKCS_ECDSA_P256_SHA256,
    })
}

/// SEC 1 `ECPrivateKey` with the P-256 parameters and the public key, as Go marshals it.
fn sec1(scalar: &[u8], public: &[u8]) -> Vec<u8> {
    let mut body = vec![0x02, 0x01, 0x01];
    body.extend(der_tlv(0x04, scalar));
    body.extend(der_tlv(0xa0, &P256_OID));
    let mut bits = vec![0x00];
    bits.extend_from_slice(public);
    body.extend(der_tlv(0xa1, &der_tlv(0x03, &bits)));
    der_tlv(0x30, &body)
}

/// SEC 1 key to PKCS#8 for ring (P-256 only), dropping the curve parameters inside, which the
/// outer algorithm identifier then carries.
fn sec1_to_pkcs8(der: &[u8]) -> Result<Vec<u8>, String> {
    let bad =
        || "parsing EC private key from PEM: x509: failed to parse EC private key".to_string();
    if !der.windows(P256_OID.len()).any(|w| w == P256_OID) {
        return Err("parsing EC private key from PEM: only P-256 keys are supported".into());
    }
    let at = der
        .windows(5)
        .position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20])
        .ok_or_else(bad)?;
    let scalar = der.get(at + 5..at + 37).ok_or_else(bad)?;
    let mut inner = vec![0x02, 0x01, 0x01];
    inner.extend(der_tlv(0x04, scalar));
    // Keep the public key when present: ring wants it.
    if let Some(p) = der.windows(4).position(|w| w == [0xa1, 0x44, 0x03, 0x42]) {
        inner.extend_from_slice(der.get(p..p + 70).ok_or_else(bad)?);
    }
    let inner = der_tlv(0x30, &inner);
    let mut alg = EC_PUBLIC_KEY_OID.to_vec();
    alg.extend_from_slice(&P256_OID);
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend(der_tlv(0x30, &alg));
    body.extend(der_tlv(0x04, &inner));
    Ok(der_tlv(0x30, &body))
}

fn generate_ed25519() -> PrivateKey {
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let mut pkcs8 = ED25519_PKCS8_PREFIX.to_vec();
    pkcs8.extend_from_slice(&seed);
    PrivateKey {
        pem: pem_encode("PRIVATE KEY", &pkcs8),
        pkcs8,
        alg: &rcgen::PKCS_ED25519,
    }
}

/// `genPrivateKey type`: `rsa` (4096 bits, as Sprig), `ecdsa` (P-256) or `ed25519`; errors come
/// back as the text Sprig prints.
pub fn gen_private_key(kind: &str) -> String {
    let key = match kind {
        "" | "rsa" => generate_rsa(4096),
        "ecdsa" => generate_ecdsa(),
        "ed25519" => Ok(generate_ed25519()),
        "dsa" => {
            return "failed to generate dsa params: DSA keys are not supported by ferroflux".into();
        }
        other => return format!("Unknown type {other}"),
    };
    match key {
        Ok(k) => k.pem,
        Err(e) => format!("failed to generate private key: {e}"),
    }
}

/// Go's `parsePrivateKeyPEM`: PKCS#1 RSA, SEC 1 EC (P-256) or PKCS#8 (RSA, P-256, Ed25519).
pub fn parse_private_key_pem(text: &str) -> Result<PrivateKey, String> {
    let (label, der) = pem_decode(text).ok_or("no PEM data in input")?;
    if label == "PRIVATE KEY" {
        let alg = pkcs8_alg(&der)
            .ok_or("decoding PEM as PKCS#8: x509: PKCS#8 wrapping contained private key with unknown algorithm")?;
        if alg == &rcgen::PKCS_RSA_SHA256 {
            // Normalise through the rsa crate so ring sees a well-formed key.
            let k = rsa::RsaPrivateKey::from_pkcs8_der(&der)
                .map_err(|e| format!("decoding PEM as PKCS#8: {e}"))?;
            let mut k = rsa_key(k)?;
            k.pem = text.to_string();
            return Ok(k);
        }
        return Ok(PrivateKey {
            pkcs8: der,
            pem: text.to_string(),
            alg,
        });
    }
    let Some(kind) = label.strip_suffix(" PRIVATE KEY") else {
        return Err(format!("no private key data in PEM block of type {label}"));
    };
    match kind {
        "RSA" => {
            let k = rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map_err(|e| format!("parsing RSA private key from PEM: {e}"))?;
            let mut k = rsa_key(k)?;
            k.pem = text.to_string();
            Ok(k)
        }
        "EC" => Ok(PrivateKey {
            pkcs8: sec1_to_pkcs8(&der)?,
            pem: text.to_string(),
            alg: &rcgen::PKCS_ECDSA_P256_SHA256,
        }),
        "DSA" => {
            Err("parsing DSA private key from PEM: DSA keys are not supported by ferroflux".into())
        }
        _ => Err(format!("invalid private key type {label}")),
    }
}

/// The signature algorithm of a PKCS#8 key, from the OID in its algorithm identifier.
fn pkcs8_alg(der: &[u8]) -> Option<&'static rcgen::SignatureAlgorithm> {
    let has = |oid: &[u8]| der.windows(oid.len()).any(|w| w == oid);
    const RSA: [u8; 11] = [
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
    ];
    const ED25519: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];
    if has(&RSA) {
        Some(&rcgen::PKCS_RSA_SHA256)
    } else if has(&ED25519) {
        Some(&rcgen::PKCS_ED25519)
    } else if has(&EC_PUBLIC_KEY_OID) && has(&P256_OID) {
        Some(&rcgen::PKCS_ECDSA_P256_SHA256)
    } else {
        None
    }
}

/// A PEM certificate and its PEM private key (Sprig's `certificate` struct).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// `.Cert`: the PEM certificate.
    pub cert: String,
    /// `.Key`: the PEM private key.
    pub key: String,
}

/// What goes into a certificate besides its key.
struct Template<'a> {
    cn: &'a str,
    ips: Vec<IpAddr>,
    dns: Vec<String>,
    days: i64,
    ca: bool,
}

/// Go's template for Sprig's certificates. Go gives a CA a subject key identifier (SHA-1 of the
/// public key bits) and a leaf none, and writes `basicConstraints` (critical) on both; a signed
/// leaf's authority key identifier is its CA's subject key identifier.
fn params(t: &Template<'_>, pair: &rcgen::KeyPair) -> Result<rcgen::CertificateParams, String> {
    let mut p = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    if !t.cn.is_empty() {
        dn.push(rcgen::DnType::CommonName, t.cn);
    }
    p.distinguished_name = dn;
    let mut serial = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut serial);
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now;
    p.not_after = now + time::Duration::hours(24 * t.days);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyEncipherment,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    if t.ca {
        p.key_usages.push(rcgen::KeyUsagePurpose::KeyCertSign);
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let skid = ring::digest::digest(
            &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
            pair.public_key_raw(),
        );
        p.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(skid.as_ref().to_vec());
    } else {
        // rcgen writes a subject key identifier with any basicConstraints it writes itself, so
        // the leaf's CA:false goes in as a plain extension (OID 2.5.29.19, an empty SEQUENCE).
        p.is_ca = rcgen::IsCa::NoCa;
        let mut bc = rcgen::CustomExtension::from_oid_content(&[2, 5, 29, 19], vec![0x30, 0x00]);
        bc.set_criticality(true);
        p.custom_extensions.push(bc);
    }
    p.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    // Go writes DNS names before IP addresses.
    for d in &t.dns {
        let name = rcgen::string::Ia5String::try_from(d.as_str()).map_err(|_| {
            format!("error creating certificate: x509: {d:?} cannot be encoded as an IA5String")
        })?;
        p.subject_alt_names.push(rcgen::SanType::DnsName(name));
    }
    for ip in &t.ips {
        p.subject_alt_names.push(rcgen::SanType::IpAddress(*ip));
    }
    Ok(p)
}

fn key_pair(k: &PrivateKey) -> Result<rcgen::KeyPair, String> {
    rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&k.pkcs8.as_slice().into(), k.alg)
        .map_err(|e| format!("error creating certificate: {e}"))
}

/// Go's `net.ParseIP` for Sprig's IP list; entries must be strings.
pub fn parse_ips(ips: &[Option<&str>], shown: &[String]) -> Result<Vec<IpAddr>, String> {
    ips.iter()
        .zip(shown)
        .map(|(ip, text)| {
            let s = ip.ok_or_else(|| format!("error parsing ip: {text} is not a string"))?;
            s.parse::<IpAddr>()
                .map_err(|_| format!("error parsing ip: {s}"))
        })
        .collect()
}

/// `genCA cn days` / `genCAWithKey cn days key`.
pub fn gen_ca(cn: &str, days: i64, key: Option<&str>) -> Result<Certificate, String> {
    let key = match key {
        Some(pem) => parse_private_key_pem(pem).map_err(|e| format!("parsing private key: {e}"))?,
        None => generate_rsa(2048).map_err(|e| format!("error generating rsa key: {e}"))?,
    };
    let t = Template {
        cn,
        ips: vec![],
        dns: vec![],
        days,
        ca: true,
    };
    self_signed(&t, &key)
}

fn self_signed(t: &Template<'_>, key: &PrivateKey) -> Result<Certificate, String> {
    let pair = key_pair(key)?;
    let cert = params(t, &pair)?
        .self_signed(&pair)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(Certificate {
        cert: pem_encode("CERTIFICATE", cert.der()),
        key: key.pem.clone(),
    })
}

/// `genSelfSignedCert cn ips dns days` (and `…WithKey` with `key`).
pub fn gen_self_signed(
    cn: &str,
    ips: Vec<IpAddr>,
    dns: Vec<String>,
    days: i64,
    key: Option<&str>,
) -> Result<Certificate, String> {
    let key = match key {
        Some(pem) => parse_private_key_pem(pem).map_err(|e| format!("parsing private key: {e}"))?,
        None => generate_rsa(2048).map_err(|e| format!("error generating rsa key: {e}"))?,
    };
    let t = Template {
        cn,
        ips,
        dns,
        days,
        ca: false,
    };
    self_signed(&t, &key)
}

/// `genSignedCert cn ips dns days ca` (and `…WithKey` with `key`).
pub fn gen_signed(
    cn: &str,
    ips: Vec<IpAddr>,
    dns: Vec<String>,
    days: i64,
    ca: &Certificate,
    key: Option<&str>,
) -> Result<Certificate, String> {
    let key = match key {
        Some(pem) => parse_private_key_pem(pem).map_err(|e| format!("parsing private key: {e}"))?,
        None => generate_rsa(2048).map_err(|e| format!("error generating rsa key: {e}"))?,
    };
    let (_, ca_der) = pem_decode(&ca.cert)
        .filter(|(l, _)| l == "CERTIFICATE")
        .ok_or("unable to decode certificate")?;
    let signer =
        parse_private_key_pem(&ca.key).map_err(|e| format!("error parsing private key: {e}"))?;
    let signer_pair = key_pair(&signer)?;
    let issuer = rcgen::Issuer::from_ca_cert_der(&ca_der.as_slice().into(), signer_pair)
        .map_err(|e| format!("error parsing certificate: decodedSignerCert.Bytes: {e}"))?;
    let t = Template {
        cn,
        ips,
        dns,
        days,
        ca: false,
    };
    let pair = key_pair(&key)?;
    let mut p = params(&t, &pair)?;
    p.use_authority_key_identifier_extension = true;
    let cert = p
        .signed_by(&pair, &issuer)
        .map_err(|e| format!("error creating certificate: {e}"))?;
    Ok(Certificate {
        cert: pem_encode("CERTIFICATE", cert.der()),
        key: key.pem.clone(),
    })
}

/// `buildCustomCert b64cert b64key`: checks both and returns them decoded.
pub fn build_custom_cert(b64cert: &str, b64key: &str) -> Result<Certificate, String> {
    let cert =
        encoding::b64dec_bytes(b64cert).map_err(|_| "unable to decode base64 certificate")?;
    let key = encoding::b64dec_bytes(b64key).map_err(|_| "unable to decode base64 private key")?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let (_, der) = pem_decode(&cert).ok_or("unable to decode certificate")?;
    x509_parser::parse_x509_certificate(&der)
        .map_err(|e| format!("error parsing certificate: decodedCert.Bytes: {e}"))?;
    parse_private_key_pem(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(Certificate { cert, key })
}

fn aes_key(password: &str) -> aes::Aes256 {
    let mut key = [0u8; 32];
    let p = password.as_bytes();
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    aes::Aes256::new(&key.into())
}

/// `encryptAES password text`: AES-256-CBC with Sprig's padding, base64(IV ‖ ciphertext).
pub fn encrypt_aes(password: &str, plaintext: &str) -> String {
    if plaintext.is_empty() {
        return String::new();
    }
    let cipher = aes_key(password);
    let mut content = gostr::to_bytes(plaintext).into_owned();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let mut iv = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut iv);
    let mut out = iv.to_vec();
    let mut prev = iv;
    for block in content.chunks(16) {
        let mut b = [0u8; 16];
        for i in 0..16 {
            b[i] = block[i] ^ prev[i];
        }
        let mut ga = b.into();
        cipher.encrypt_block(&mut ga);
        prev = ga.into();
        out.extend_from_slice(&prev);
    }
    encoding::b64enc(&out)
}

/// `decryptAES password text`; malformed input gives Go's error (or the panic Go would raise).
pub fn decrypt_aes(password: &str, text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Ok(String::new());
    }
    let crypt = encoding::b64dec_bytes(text)?;
    if crypt.len() < 16 {
        return Err(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        ));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    if body.is_empty() {
        return Err("runtime error: index out of range [-1]".into());
    }
    let cipher = aes_key(password);
    let mut prev: [u8; 16] = iv.try_into().map_err(|_| "bad iv")?;
    let mut out = Vec::with_capacity(body.len());
    for block in body.chunks(16) {
        let mut ga: aes::Block = <[u8; 16]>::try_from(block).map_err(|_| "bad block")?.into();
        cipher.decrypt_block(&mut ga);
        for i in 0..16 {
            out.push(ga[i] ^ prev[i]);
        }
        prev = block.try_into().map_err(|_| "bad block")?;
    }
    let pad = *out.last().unwrap_or(&0) as usize;
    if pad > out.len() {
        return Err(format!(
            "runtime error: slice bounds out of range [:{}]",
            out.len() as i64 - pad as i64
        ));
    }
    out.truncate(out.len() - pad);
    Ok(crate::text::go_string(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::*;

    #[test]
    fn digests_match_known_values() {
        assert_eq!(sha1sum("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sha256sum("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(sha512sum("abc").starts_with("ddaf35a193617aba"));
        assert_eq!(adler32sum("Wikipedia"), "300286872");
        assert_eq!(adler32sum(""), "1");
    }

    #[test]
    fn htpasswd_writes_a_verifiable_2a_hash() {
        let line = htpasswd("admin", "secret");
        let (user, hash) = line.split_once(':').unwrap();
        assert_eq!(user, "admin");
        assert!(hash.starts_with("$2a$10$"), "{hash}");
        assert!(bcrypt::verify("secret", hash).unwrap());
        assert_eq!(htpasswd("a:b", "x"), "invalid username: a:b");
    }

    #[test]
    fn derive_password_matches_sprig() {
        // Sprig's own test vector.
        assert_eq!(
            derive_password(1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*"
        );
        assert_eq!(
            derive_password(1, "nope", "p", "u", "s"),
            "cannot find password template nope"
        );
    }

    #[test]
    fn uuids_and_random_bytes() {
        let u = uuidv4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(uuidv4(), u);
        let b = rand_bytes(24).unwrap();
        assert_eq!(encoding::b64dec_bytes(&b).unwrap().len(), 24);
    }

    #[test]
    fn aes_round_trips() {
        for text in ["x", "exactly sixteen!", "a longer secret text"] {
            let enc = encrypt_aes("key", text);
            assert_eq!(decrypt_aes("key", &enc).unwrap(), text);
            assert_ne!(encrypt_aes("key", text), enc, "fresh IV each time");
        }
        assert_eq!(encrypt_aes("key", ""), "");
        assert_eq!(decrypt_aes("key", "").unwrap(), "");
        assert!(decrypt_aes("key", "AAAA").is_err());
    }

    fn parse(pem: &str) -> Vec<u8> {
        let (label, der) = pem_decode(pem).unwrap();
        assert_eq!(label, "CERTIFICATE");
        der
    }

    #[test]
    fn generated_certificates_chain_to_their_ca() {
        let ca = gen_ca("my-ca", 365, None).unwrap();
        assert!(ca.key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let ca_der = parse(&ca.cert);
        let (_, ca_x509) = parse_x509_certificate(&ca_der).unwrap();
        assert!(ca_x509.is_ca());
        assert_eq!(
            ca_x509
                .subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "my-ca"
        );
        let days = (ca_x509.validity().not_after.timestamp()
            - ca_x509.validity().not_before.timestamp())
            / 86_400;
        assert_eq!(days, 365);

        let ips = vec!["10.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
        let dns = vec!["svc.example.com".to_string(), "svc".to_string()];
        let leaf = gen_signed("svc", ips, dns, 30, &ca, None).unwrap();
        let der = parse(&leaf.cert);
        let (_, x) = parse_x509_certificate(&der).unwrap();
        assert!(!x.is_ca());
        assert_eq!(x.issuer(), ca_x509.subject());
        // Go's extensions: basicConstraints CA:false (critical) on the leaf, no subject key id
        // there; its authority key id is the CA's subject key id, SHA-1 of the key bits.
        let bc = x.basic_constraints().unwrap().unwrap();
        assert!(bc.critical && !bc.value.ca);
        let ca_skid = ca_x509
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
                _ => None,
            })
            .unwrap();
        let key_bits = ca_x509.public_key().subject_public_key.data.to_vec();
        assert_eq!(
            ca_skid,
            ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &key_bits).as_ref()
        );
        assert!(x.extensions().iter().all(|e| !matches!(
            e.parsed_extension(),
            ParsedExtension::SubjectKeyIdentifier(_)
        )));
        let akid = x
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::AuthorityKeyIdentifier(a) => {
                    a.key_identifier.as_ref().map(|k| k.0.to_vec())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(akid, ca_skid);
        x.verify_signature(Some(ca_x509.public_key())).unwrap();
        let san = x.subject_alternative_name().unwrap().unwrap().value;
        let names: Vec<String> = san.general_names.iter().map(|g| g.to_string()).collect();
        assert_eq!(
            names,
            [
                "DNSName(svc.example.com)",
                "DNSName(svc)",
                "IPAddress(0a:00:00:01)",
                "IPAddress(00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:01)"
            ]
        );
        let days =
            (x.validity().not_after.timestamp() - x.validity().not_before.timestamp()) / 86_400;
        assert_eq!(days, 30);
        // The key in the result is the certificate's key.
        let k = parse_private_key_pem(&leaf.key).unwrap();
        let pair = key_pair(&k).unwrap();
        use rcgen::PublicKeyData;
        assert_eq!(pair.subject_public_key_info(), x.public_key().raw.to_vec());
        // buildCustomCert accepts what we generate.
        let rebuilt = build_custom_cert(
            &encoding::b64enc(leaf.cert.as_bytes()),
            &encoding::b64enc(leaf.key.as_bytes()),
        )
        .unwrap();
        assert_eq!(rebuilt, leaf);
        assert_eq!(
            build_custom_cert("!!", "").unwrap_err(),
            "unable to decode base64 certificate"
        );
    }

    #[test]
    fn self_signed_certificates_with_given_keys() {
        for kind in ["ecdsa", "ed25519"] {
            let key = gen_private_key(kind);
            assert!(key.starts_with("-----BEGIN "), "{key}");
            let cert =
                gen_self_signed("me", vec![], vec!["me.local".into()], 1, Some(&key)).unwrap();
            assert_eq!(cert.key, key);
            let der = parse(&cert.cert);
            let (_, x) = parse_x509_certificate(&der).unwrap();
            x.verify_signature(None).unwrap();
            let ca = gen_ca("ca", 2, Some(&key)).unwrap();
            let signed = gen_signed("leaf", vec![], vec![], 1, &ca, Some(&key)).unwrap();
            let (leaf_der, ca_der) = (parse(&signed.cert), parse(&ca.cert));
            let (_, l) = parse_x509_certificate(&leaf_der).unwrap();
            let (_, c) = parse_x509_certificate(&ca_der).unwrap();
            l.verify_signature(Some(c.public_key())).unwrap();
        }
        assert!(gen_private_key("ecdsa").starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
        assert!(gen_private_key("ed25519").starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert_eq!(gen_private_key("x"), "Unknown type x");
        assert_eq!(
            gen_ca("x", 1, Some("junk")).unwrap_err(),
            "parsing private key: no PEM data in input"
        );
    }
}
