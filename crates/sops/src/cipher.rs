//! The `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` value format: AES-256-GCM with a 32-byte IV
//! and the value's path as associated data.

use aes_gcm::aead::consts::U32;
use aes_gcm::aes::Aes256;
use aes_gcm::{AeadInOut, AesGcm, KeyInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// sops draws a fresh 32-byte IV for every value; GCM then derives its counter block with GHASH.
const IV_SIZE: usize = 32;
const TAG_SIZE: usize = 16;

type Gcm = AesGcm<Aes256, U32>;

/// The sops type of a plaintext value, written as `type:` in the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    Str,
    Int,
    Float,
    Bool,
    Bytes,
    Time,
    Comment,
}

impl ValueType {
    fn name(self) -> &'static str {
        match self {
            ValueType::Str => "str",
            ValueType::Int => "int",
            ValueType::Float => "float",
            ValueType::Bool => "bool",
            ValueType::Bytes => "bytes",
            ValueType::Time => "time",
            ValueType::Comment => "comment",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "str" => ValueType::Str,
            "int" => ValueType::Int,
            "float" => ValueType::Float,
            "bool" => ValueType::Bool,
            "bytes" => ValueType::Bytes,
            "time" => ValueType::Time,
            "comment" => ValueType::Comment,
            _ => return None,
        })
    }
}

struct Envelope {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    ty: ValueType,
}

fn field<'a>(part: Option<&'a str>, name: &str) -> Result<&'a str, String> {
    let part = part.ok_or_else(|| format!("encrypted value has no {name} field"))?;
    part.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(':'))
        .ok_or_else(|| format!("encrypted value has no {name} field"))
}

fn decode(text: &str, name: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(text)
        .map_err(|e| format!("{name} of the encrypted value is not valid base64: {e}"))
}

fn parse(value: &str) -> Result<Envelope, String> {
    let inner = value
        .strip_prefix("ENC[AES256_GCM,")
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(|| "not an ENC[AES256_GCM,...] value".to_string())?;
    // Base64 never contains ',' so the four fields split cleanly.
    let mut parts = inner.split(',');
    let data = decode(field(parts.next(), "data")?, "data")?;
    let iv = decode(field(parts.next(), "iv")?, "iv")?;
    let tag = decode(field(parts.next(), "tag")?, "tag")?;
    let ty_name = field(parts.next(), "type")?;
    if parts.next().is_some() {
        return Err("encrypted value has unexpected extra fields".into());
    }
    let ty = ValueType::parse(ty_name).ok_or_else(|| format!("unknown value type {ty_name:?}"))?;
    if iv.len() != IV_SIZE {
        return Err(format!(
            "IV is {} bytes, sops writes {IV_SIZE}-byte IVs",
            iv.len()
        ));
    }
    if tag.len() != TAG_SIZE {
        return Err(format!("tag is {} bytes, expected {TAG_SIZE}", tag.len()));
    }
    Ok(Envelope { data, iv, tag, ty })
}

fn cipher(key: &[u8]) -> Result<Gcm, String> {
    Gcm::new_from_slice(key).map_err(|_| format!("data key is {} bytes, expected 32", key.len()))
}

/// Decrypts one envelope; returns the plaintext bytes and their sops type. The error never
/// contains plaintext.
pub(crate) fn decrypt(value: &str, key: &[u8], aad: &str) -> Result<(Vec<u8>, ValueType), String> {
    let env = parse(value)?;
    let gcm = cipher(key)?;
    let nonce = aes_gcm::Nonce::<U32>::try_from(env.iv.as_slice())
        .map_err(|_| "IV has the wrong length".to_string())?;
    let tag = aes_gcm::Tag::try_from(env.tag.as_slice())
        .map_err(|_| "tag has the wrong length".to_string())?;
    let mut buf = env.data;
    gcm.decrypt_inout_detached(&nonce, aad.as_bytes(), buf.as_mut_slice().into(), &tag)
        .map_err(|_| {
            "authentication failed (the value, its path or the data key is not the one it was encrypted with)"
                .to_string()
        })?;
    Ok((buf, env.ty))
}

/// Encrypts plaintext bytes with a fresh random IV.
pub(crate) fn encrypt(
    plaintext: &[u8],
    ty: ValueType,
    key: &[u8],
    aad: &str,
) -> Result<String, String> {
    let gcm = cipher(key)?;
    let mut iv = [0u8; IV_SIZE];
    getrandom::fill(&mut iv).map_err(|e| format!("no randomness for the IV: {e}"))?;
    let nonce = aes_gcm::Nonce::<U32>::from(iv);
    let mut buf = plaintext.to_vec();
    let tag = gcm
        .encrypt_inout_detached(&nonce, aad.as_bytes(), buf.as_mut_slice().into())
        .map_err(|_| "AES-GCM refused the value".to_string())?;
    Ok(format!(
        "ENC[AES256_GCM,data:{},iv:{},tag:{},type:{}]",
        STANDARD.encode(&buf),
        STANDARD.encode(iv),
        STANDARD.encode(tag.as_slice()),
        ty.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_aad_binding() {
        let key = [7u8; 32];
        let enc = encrypt(b"hello", ValueType::Str, &key, "a:b:").unwrap();
        assert!(enc.starts_with("ENC[AES256_GCM,data:"));
        let (plain, ty) = decrypt(&enc, &key, "a:b:").unwrap();
        assert_eq!(plain, b"hello");
        assert_eq!(ty, ValueType::Str);
        let err = decrypt(&enc, &key, "a:c:").unwrap_err();
        assert!(err.contains("authentication failed"), "{err}");
    }

    #[test]
    fn malformed_envelopes_are_errors() {
        let key = [7u8; 32];
        for bad in [
            "ENC[AES256_GCM,data:!!,iv:AAAA,tag:AAAA,type:str]",
            "ENC[AES256_GCM,data:AAAA,type:str]",
            "ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:str]",
            "ENC[AES256_GCM,data:AAAA",
        ] {
            assert!(decrypt(bad, &key, "").is_err(), "{bad}");
        }
    }
}
