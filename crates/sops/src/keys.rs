//! age identities (what decrypts) and recipients (what encrypts), and recovering or wrapping the
//! sops data key through the file's key groups.

use std::io::Read;
use std::iter;

use crate::error::{Error, ErrorKind};
use crate::metadata::{AgeKey, KeyGroup, Metadata};
use crate::shamir;

/// A set of age X25519 identities (secret keys), as read from age key files, `SOPS_AGE_KEY` or
/// the `*.agekey` entries of a Kubernetes Secret.
#[derive(Clone, Default)]
pub struct AgeIdentities {
    identities: Vec<age::x25519::Identity>,
    public: Vec<String>,
    /// Identity kinds that were read but cannot be used yet (post-quantum, plugin).
    skipped: Vec<String>,
}

impl std::fmt::Debug for AgeIdentities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secret keys: the public halves identify them well enough.
        f.debug_struct("AgeIdentities")
            .field("recipients", &self.public)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl AgeIdentities {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses an age key file's text: one identity per line, blank lines and `#` comments
    /// ignored. `source` names where the text came from, for errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, Error> {
        let mut ids = Self::new();
        ids.add(source, text)?;
        Ok(ids)
    }

    /// Adds the identities of one more key file text. Like `SOPS_AGE_KEY`, a line may hold
    /// several identities separated by whitespace.
    pub fn add(&mut self, source: &str, text: &str) -> Result<(), Error> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            for word in line.split_whitespace() {
                self.add_one(word).map_err(|reason| {
                    Error::new(source, ErrorKind::Key(format!("line {}: {reason}", n + 1)))
                })?;
            }
        }
        Ok(())
    }

    fn add_one(&mut self, word: &str) -> Result<(), String> {
        if word.starts_with("AGE-SECRET-KEY-PQ-") {
            self.skip("age post-quantum identities (AGE-SECRET-KEY-PQ-…)");
            return Ok(());
        }
        if word.starts_with("AGE-PLUGIN-") {
            self.skip("age plugin identities");
            return Ok(());
        }
        if !word.starts_with("AGE-SECRET-KEY-1") {
            // Never echo the word: it may be a mangled secret key.
            return Err("not an age identity (expected AGE-SECRET-KEY-1…)".into());
        }
        let identity: age::x25519::Identity = word
            .parse()
            .map_err(|e| format!("invalid age identity: {e}"))?;
        let public = identity.to_public().to_string();
        if !self.public.contains(&public) {
            self.public.push(public);
            self.identities.push(identity);
        }
        Ok(())
    }

    fn skip(&mut self, kind: &str) {
        if !self.skipped.iter().any(|s| s == kind) {
            self.skipped.push(kind.to_string());
        }
    }

    /// Collects the identities of a Kubernetes Secret's entries whose names end in `.agekey`
    /// (Flux's `spec.decryption.secretRef` convention). Fails when the Secret has none.
    pub fn from_secret_entries<'a>(
        secret: &str,
        entries: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Self, Error> {
        let mut ids = Self::new();
        let mut found = false;
        for (name, value) in entries {
            if !name.ends_with(".agekey") {
                continue;
            }
            found = true;
            let source = format!("{secret} entry {name}");
            let text = std::str::from_utf8(value)
                .map_err(|_| Error::new(&source, ErrorKind::Key("not UTF-8 text".into())))?;
            ids.add(&source, text)?;
        }
        if !found {
            return Err(Error::new(
                secret,
                ErrorKind::Key("the key Secret has no *.agekey entry".into()),
            ));
        }
        Ok(ids)
    }

    /// How many usable identities the set holds.
    pub fn len(&self) -> usize {
        self.identities.len()
    }

    /// Whether the set holds no usable identity.
    pub fn is_empty(&self) -> bool {
        self.identities.is_empty()
    }

    /// The public recipients (`age1…`) of the identities held.
    pub fn recipients(&self) -> &[String] {
        &self.public
    }

    /// Kinds of identities that were read but are not supported yet.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Opens one age-encrypted data key; `Ok(None)` when none of the identities is a recipient.
    fn open(&self, key: &AgeKey) -> Result<Option<Vec<u8>>, ErrorKind> {
        let damaged = |reason: String| ErrorKind::BadEnvelope {
            recipient: key.recipient.clone(),
            reason,
        };
        let armored = key.enc.trim();
        let reader = age::armor::ArmoredReader::new(armored.as_bytes());
        let decryptor = age::Decryptor::new_buffered(reader).map_err(|e| damaged(e.to_string()))?;
        let identities = self.identities.iter().map(|i| i as &dyn age::Identity);
        let mut stream = match decryptor.decrypt(identities) {
            Ok(stream) => stream,
            Err(age::DecryptError::NoMatchingKeys) => return Ok(None),
            Err(e) => return Err(damaged(e.to_string())),
        };
        let mut plain = Vec::new();
        stream
            .read_to_end(&mut plain)
            .map_err(|e| damaged(e.to_string()))?;
        Ok(Some(plain))
    }

    fn open_group(&self, group: &KeyGroup) -> Result<Vec<u8>, ErrorKind> {
        if group.age.is_empty() {
            return Err(ErrorKind::NotSupported(format!(
                "{} (the data key is encrypted only with {})",
                group.unsupported.join(", "),
                if group.unsupported.len() == 1 {
                    "this method"
                } else {
                    "these methods"
                }
            )));
        }
        let recipients: Vec<String> = group.age.iter().map(|k| k.recipient.clone()).collect();
        if self.identities.is_empty() {
            return Err(ErrorKind::NoIdentities(recipients));
        }
        let mut damaged = None;
        for key in &group.age {
            match self.open(key) {
                Ok(Some(part)) => return Ok(part),
                Ok(None) => {}
                Err(e) => {
                    damaged.get_or_insert(e);
                }
            }
        }
        Err(damaged.unwrap_or(ErrorKind::NoMatchingKey {
            recipients,
            identities: self.identities.len(),
            unsupported: group.unsupported.clone(),
        }))
    }

    /// Recovers the 32-byte data key of a file from its key groups.
    pub(crate) fn data_key(&self, meta: &Metadata) -> Result<Vec<u8>, ErrorKind> {
        let key = if meta.key_groups.len() == 1 {
            self.open_group(&meta.key_groups[0])?
        } else {
            let threshold = if meta.shamir_threshold == 0 {
                meta.key_groups.len()
            } else {
                meta.shamir_threshold
            };
            let mut parts = Vec::new();
            let mut failures = Vec::new();
            for (i, group) in meta.key_groups.iter().enumerate() {
                match self.open_group(group) {
                    Ok(part) => parts.push(part),
                    Err(e) => failures.push(format!("key group {}: {e}", i + 1)),
                }
            }
            if parts.len() < threshold {
                return Err(ErrorKind::KeyGroups(format!(
                    "only {} of {} key groups could be decrypted and {threshold} are needed; {}",
                    parts.len(),
                    meta.key_groups.len(),
                    failures.join("; ")
                )));
            }
            shamir::combine(&parts).map_err(ErrorKind::KeyGroups)?
        };
        if key.len() != 32 {
            return Err(ErrorKind::KeyGroups(format!(
                "the recovered data key is {} bytes, expected 32",
                key.len()
            )));
        }
        Ok(key)
    }
}

/// Parses an age X25519 recipient (`age1…`), refusing kinds not supported yet.
pub(crate) fn parse_recipient(text: &str) -> Result<age::x25519::Recipient, ErrorKind> {
    if text.starts_with("age1pq1") {
        return Err(ErrorKind::NotSupported(
            "age post-quantum recipients (age1pq1…)".into(),
        ));
    }
    if text.starts_with("ssh-") {
        return Err(ErrorKind::NotSupported("age ssh recipients".into()));
    }
    if text.starts_with("age1") && text.matches('1').count() > 1 {
        return Err(ErrorKind::NotSupported("age plugin recipients".into()));
    }
    text.parse()
        .map_err(|e| ErrorKind::Key(format!("{text:?} is not an age recipient: {e}")))
}

/// Encrypts a data key (or Shamir share) to one recipient as an armored age file.
pub(crate) fn wrap(recipient: &age::x25519::Recipient, part: &[u8]) -> Result<String, ErrorKind> {
    let encryptor = age::Encryptor::with_recipients(iter::once(recipient as &dyn age::Recipient))
        .map_err(|e| ErrorKind::Encrypt(e.to_string()))?;
    let mut out = Vec::new();
    let armor = age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor)
        .map_err(|e| ErrorKind::Encrypt(e.to_string()))?;
    let mut writer = encryptor
        .wrap_output(armor)
        .map_err(|e| ErrorKind::Encrypt(e.to_string()))?;
    std::io::Write::write_all(&mut writer, part).map_err(|e| ErrorKind::Encrypt(e.to_string()))?;
    writer
        .finish()
        .and_then(|armor| armor.finish())
        .map_err(|e| ErrorKind::Encrypt(e.to_string()))?;
    String::from_utf8(out).map_err(|_| ErrorKind::Encrypt("age armor is not text".into()))
}
