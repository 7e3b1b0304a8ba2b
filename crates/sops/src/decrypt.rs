//! Decrypting files and Kubernetes objects.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::cipher;
use crate::error::{Error, ErrorKind};
use crate::format::{self, Format};
use crate::keys::AgeIdentities;
use crate::metadata::Metadata;
use crate::tree::{self, Node};

/// The largest encrypted input accepted by default: 5 MiB, Flux's limit for sops files.
/// Larger inputs are refused before they are parsed.
pub const DEFAULT_MAX_SIZE: u64 = 5 << 20;

/// The annotation that turns decryption off for one object (value `disabled`, any case).
pub const DECRYPT_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/decrypt";

/// What [`Decryptor::decrypt_object`] did to an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectDecryption {
    /// The object holds nothing sops-encrypted (or decryption is disabled by annotation).
    Unchanged,
    /// The whole object was a sops document and was replaced by its plaintext.
    Whole,
    /// These `data` entries of a Secret were sops files and were replaced by their plaintext.
    SecretEntries(Vec<String>),
}

/// Decrypts sops files and objects with a set of age identities.
#[derive(Debug, Clone)]
pub struct Decryptor {
    identities: AgeIdentities,
    verify_mac: bool,
    max_size: u64,
}

impl Decryptor {
    /// A decryptor that verifies MACs and refuses inputs above [`DEFAULT_MAX_SIZE`].
    pub fn new(identities: AgeIdentities) -> Self {
        Decryptor {
            identities,
            verify_mac: true,
            max_size: DEFAULT_MAX_SIZE,
        }
    }

    /// Whether to check the MAC. Turn it off for objects decrypted after a kustomize build,
    /// which legitimately adds fields (Flux does the same).
    pub fn verify_mac(mut self, verify: bool) -> Self {
        self.verify_mac = verify;
        self
    }

    /// The largest input accepted, in bytes.
    pub fn max_size(mut self, limit: u64) -> Self {
        self.max_size = limit;
        self
    }

    /// The configured size limit.
    pub fn size_limit(&self) -> u64 {
        self.max_size
    }

    /// The identities this decryptor uses.
    pub fn identities(&self) -> &AgeIdentities {
        &self.identities
    }

    /// Refuses an input of `size` bytes if it is above the limit; callers that read files can
    /// call this with the file's length before reading it.
    pub fn check_size(&self, subject: &str, size: u64) -> Result<(), Error> {
        if size > self.max_size {
            return Err(Error::new(
                subject,
                ErrorKind::TooLarge {
                    size,
                    limit: self.max_size,
                },
            ));
        }
        Ok(())
    }

    /// Decrypts a sops file and writes the plaintext in the same format.
    pub fn decrypt(&self, subject: &str, data: &[u8], format: Format) -> Result<Vec<u8>, Error> {
        self.decrypt_as(subject, data, format, format)
    }

    /// Decrypts a sops file read as `input` and writes the plaintext as `output` (a binary
    /// file's plaintext is the original bytes; a JSON document written as binary is its `data`).
    pub fn decrypt_as(
        &self,
        subject: &str,
        data: &[u8],
        input: Format,
        output: Format,
    ) -> Result<Vec<u8>, Error> {
        self.check_size(subject, data.len() as u64)?;
        let docs = self
            .decrypt_docs(data, input)
            .map_err(|kind| Error::new(subject, kind))?;
        format::emit_plain(docs, output).map_err(|kind| Error::new(subject, kind))
    }

    /// Decrypts a file used as a kustomize generator input (`secretGenerator` /
    /// `configMapGenerator` `files` and `envs`, patches). Returns `None` when the content does
    /// not carry the format's sops MAC marker, i.e. is not sops-encrypted.
    pub fn decrypt_generator_input(
        &self,
        subject: &str,
        data: &[u8],
        format: Format,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.check_size(subject, data.len() as u64)?;
        let detected = Format::detect_encrypted(data);
        let marker_matches = match (format, detected) {
            (_, None) => false,
            (Format::Binary | Format::Json, Some(Format::Json)) => true,
            (f, Some(d)) => f == d,
        };
        if !marker_matches {
            return Ok(None);
        }
        let input = if format == Format::Binary {
            Format::Json
        } else {
            format
        };
        self.decrypt_as(subject, data, input, format).map(Some)
    }

    fn decrypt_docs(&self, data: &[u8], format: Format) -> Result<Vec<Node>, ErrorKind> {
        let mut docs = format::load_plain(data, Self::reading_format(format))?;
        let meta = format::split_metadata(&mut docs, Self::reading_format(format))?;
        self.decrypt_tree(&mut docs, &meta)?;
        Ok(docs)
    }

    /// Encrypted binary files are JSON envelopes.
    fn reading_format(format: Format) -> Format {
        if format == Format::Binary {
            Format::Json
        } else {
            format
        }
    }

    fn decrypt_tree(&self, docs: &mut [Node], meta: &Metadata) -> Result<(), ErrorKind> {
        let key = self.identities.data_key(meta)?;
        let computed = tree::decrypt_docs(docs, &meta.rules, &key)?;
        if self.verify_mac {
            if meta.mac.is_empty() {
                return Err(ErrorKind::BadMac("the file has no MAC".into()));
            }
            let (stored, _) =
                cipher::decrypt(&meta.mac, &key, &meta.last_modified).map_err(ErrorKind::BadMac)?;
            if stored != computed.as_bytes() {
                return Err(ErrorKind::MacMismatch);
            }
        }
        Ok(())
    }

    /// Decrypts a Kubernetes object in place, as Flux does after a build: a whole sops-encrypted
    /// object (top-level `sops` with a `mac`) is replaced by its plaintext; in a Secret, each
    /// `data` entry whose base64 content is a sops file (detected by its MAC marker) is replaced
    /// by the plaintext, written in the format of the entry's key name. Objects annotated
    /// `kustomize.toolkit.fluxcd.io/decrypt: disabled` are left alone. Errors name the object
    /// and the entry, never a value.
    pub fn decrypt_object(&self, object: &mut Value) -> Result<ObjectDecryption, Error> {
        if decryption_disabled(object) {
            return Ok(ObjectDecryption::Unchanged);
        }
        let subject = object_subject(object);
        if is_encrypted_object(object) {
            let size = serde_json::to_vec(object).map(|v| v.len()).unwrap_or(0);
            self.check_size(&subject, size as u64)?;
            // Work on a copy so a failure leaves the caller's object exactly as it was.
            let mut docs = vec![Node::from_json(object.clone())];
            format::split_metadata(&mut docs, Format::Json)
                .and_then(|meta| {
                    // An object is JSON by now: the comments marking its encrypted values are
                    // gone, so the rule would read every value as clear (or as encrypted).
                    if let Some(option) = meta.rules.comment_option() {
                        return Err(ErrorKind::NotSupported(format!(
                            "decrypting an object encrypted with {option} after a kustomize build, which drops the comments that mark its values (encrypt it with encrypted_regex, or use it as a secretGenerator file)"
                        )));
                    }
                    self.decrypt_tree(&mut docs, &meta)
                })
                .map_err(|kind| Error::new(&subject, kind))?;
            if let Some(doc) = docs.pop() {
                *object = doc.into_json();
            }
            return Ok(ObjectDecryption::Whole);
        }
        if object.get("kind").and_then(Value::as_str) != Some("Secret") {
            return Ok(ObjectDecryption::Unchanged);
        }
        let Some(Value::Object(data)) = object.get_mut("data") else {
            return Ok(ObjectDecryption::Unchanged);
        };
        let mut changed = Vec::new();
        let mut replacements = Vec::new();
        for (key, value) in data.iter() {
            let Some(encoded) = value.as_str() else {
                continue;
            };
            // Not base64: a user error the apply step reports; not ours to judge here.
            let Ok(bytes) = STANDARD.decode(encoded) else {
                continue;
            };
            let Some(input) = Format::detect_encrypted(&bytes) else {
                continue;
            };
            let entry = format!("{subject} data entry {key}");
            let plain = self.decrypt_as(&entry, &bytes, input, Format::for_secret_key(key))?;
            replacements.push((key.clone(), STANDARD.encode(plain)));
        }
        for (key, value) in replacements {
            data.insert(key.clone(), Value::String(value));
            changed.push(key);
        }
        if changed.is_empty() {
            Ok(ObjectDecryption::Unchanged)
        } else {
            Ok(ObjectDecryption::SecretEntries(changed))
        }
    }
}

/// Whether an object is a whole sops document: a top-level `sops` mapping with a non-empty
/// `mac`.
pub fn is_encrypted_object(object: &Value) -> bool {
    object
        .get("sops")
        .and_then(|s| s.get("mac"))
        .and_then(Value::as_str)
        .is_some_and(|m| !m.is_empty())
}

/// Whether the object carries `kustomize.toolkit.fluxcd.io/decrypt: disabled` (any case).
pub fn decryption_disabled(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DECRYPT_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}

/// `Kind namespace/name` of an object, for messages.
pub fn object_subject(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}
