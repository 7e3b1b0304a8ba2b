//! Encrypting plaintext files for age recipients, in the layout sops 3.x writes.

use regex::Regex;

use crate::cipher::{self, ValueType};
use crate::comments;
use crate::error::{Error, ErrorKind};
use crate::format::{self, Format};
use crate::keys;
use crate::metadata::{AgeKey, KeyGroup, Metadata, SELECTORS, WRITTEN_VERSION, now_rfc3339};
use crate::shamir;
use crate::tree::{self, Rules};

/// Which values to encrypt: at most one of sops' six selectors (none means sops' default,
/// keys ending in `_unencrypted` stay clear).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Leave clear the values of keys ending in this suffix; encrypt the rest.
    pub unencrypted_suffix: Option<String>,
    /// Encrypt only the values of keys ending in this suffix.
    pub encrypted_suffix: Option<String>,
    /// Leave clear the values of keys matching this regex; encrypt the rest.
    pub unencrypted_regex: Option<String>,
    /// Encrypt only the values of keys matching this regex.
    pub encrypted_regex: Option<String>,
    /// Leave clear the item (a key with its whole value, or a list item) that follows a comment
    /// matching this regex, and the comments between them; the matching comment stays clear
    /// too. Everything else is encrypted.
    pub unencrypted_comment_regex: Option<String>,
    /// Encrypt only the items (a key with its whole value, or a list item) that follow a
    /// comment matching this regex, and the comments between them; the matching comment
    /// stays clear.
    pub encrypted_comment_regex: Option<String>,
    /// Hash only the encrypted values into the MAC (sops' `mac_only_encrypted`).
    pub mac_only_encrypted: bool,
}

impl Selection {
    fn rules(&self, format: Format) -> Result<Rules, ErrorKind> {
        let set = [
            self.unencrypted_suffix.is_some(),
            self.encrypted_suffix.is_some(),
            self.unencrypted_regex.is_some(),
            self.encrypted_regex.is_some(),
            self.unencrypted_comment_regex.is_some(),
            self.encrypted_comment_regex.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if set > 1 {
            return Err(ErrorKind::Encrypt(format!(
                "use at most one of {SELECTORS}"
            )));
        }
        // sops ignores the selectors for binary files (their one value is always encrypted);
        // refusing says so instead of writing a file that is not what was asked for.
        if format == Format::Binary && (set > 0 || self.mac_only_encrypted) {
            return Err(ErrorKind::Encrypt(
                "a binary file is encrypted whole: the options choosing which values are encrypted (and mac_only_encrypted) do not apply to it".into(),
            ));
        }
        if format == Format::Json && self.encrypted_comment_regex.is_some() {
            return Err(ErrorKind::Encrypt(
                "encrypted_comment_regex with a JSON file would leave every value in clear: JSON has no comments to mark values with".into(),
            ));
        }
        let compile = |name: &str, p: &Option<String>| -> Result<Option<Regex>, ErrorKind> {
            p.as_deref()
                .map(|p| Regex::new(p).map_err(|e| ErrorKind::Encrypt(format!("{name}: {e}"))))
                .transpose()
        };
        let mut rules = Rules {
            unencrypted_suffix: self.unencrypted_suffix.clone(),
            encrypted_suffix: self.encrypted_suffix.clone(),
            unencrypted_regex: compile("unencrypted_regex", &self.unencrypted_regex)?,
            encrypted_regex: compile("encrypted_regex", &self.encrypted_regex)?,
            unencrypted_comment_regex: compile(
                "unencrypted_comment_regex",
                &self.unencrypted_comment_regex,
            )?,
            encrypted_comment_regex: compile(
                "encrypted_comment_regex",
                &self.encrypted_comment_regex,
            )?,
            mac_only_encrypted: self.mac_only_encrypted,
        };
        if set == 0 {
            rules.unencrypted_suffix = Rules::default_rules().unencrypted_suffix;
        }
        Ok(rules)
    }
}

/// What to encrypt for.
#[derive(Debug, Clone, Default)]
pub struct EncryptOptions {
    /// Key groups of age recipients. One group: every recipient can decrypt alone. Several
    /// groups: the data key is split with Shamir's scheme, one share per group.
    pub key_groups: Vec<Vec<String>>,
    /// How many groups are needed to decrypt (default: all of them).
    pub shamir_threshold: Option<usize>,
    /// Which values are encrypted.
    pub selection: Selection,
}

impl EncryptOptions {
    /// One key group holding these recipients.
    pub fn for_recipients(recipients: impl IntoIterator<Item = impl Into<String>>) -> Self {
        EncryptOptions {
            key_groups: vec![recipients.into_iter().map(Into::into).collect()],
            ..Default::default()
        }
    }
}

/// Encrypts a plaintext file. `subject` names it in errors.
pub fn encrypt(
    subject: &str,
    data: &[u8],
    format: Format,
    options: &EncryptOptions,
) -> Result<Vec<u8>, Error> {
    encrypt_inner(data, format, options).map_err(|kind| Error::new(subject, kind))
}

fn encrypt_inner(
    data: &[u8],
    format: Format,
    options: &EncryptOptions,
) -> Result<Vec<u8>, ErrorKind> {
    let rules = options.selection.rules(format)?;
    let groups: Vec<Vec<age::x25519::Recipient>> = options
        .key_groups
        .iter()
        .map(|g| g.iter().map(|r| keys::parse_recipient(r)).collect())
        .collect::<Result<_, _>>()?;
    if groups.is_empty() || groups.iter().any(Vec::is_empty) {
        return Err(ErrorKind::Encrypt(
            "at least one age recipient is needed (and no key group may be empty)".into(),
        ));
    }
    let threshold = options.shamir_threshold.unwrap_or(groups.len());

    let mut docs = format::load_plain(data, format)?;
    format::check_reserved(
        &docs,
        if format == Format::Binary {
            Format::Json
        } else {
            format
        },
    )?;

    let mut data_key = [0u8; 32];
    getrandom::fill(&mut data_key)
        .map_err(|e| ErrorKind::Encrypt(format!("no randomness: {e}")))?;
    let parts = if groups.len() == 1 {
        vec![data_key.to_vec()]
    } else {
        shamir::split(&data_key, groups.len(), threshold).map_err(ErrorKind::Encrypt)?
    };
    let mut key_groups = Vec::new();
    for (group, part) in groups.iter().zip(&parts) {
        let mut kg = KeyGroup::default();
        for recipient in group {
            kg.age.push(AgeKey {
                recipient: recipient.to_string(),
                enc: keys::wrap(recipient, part)?,
            });
        }
        key_groups.push(kg);
    }

    if format == Format::Yaml {
        comments::settle_for_encryption(&mut docs);
    }
    let mac = tree::encrypt_docs(&mut docs, &rules, &data_key)?;
    let last_modified = now_rfc3339();
    let mac = cipher::encrypt(mac.as_bytes(), ValueType::Str, &data_key, &last_modified)
        .map_err(ErrorKind::Encrypt)?;
    let meta = Metadata {
        key_groups,
        shamir_threshold: if groups.len() > 1 { threshold } else { 0 },
        last_modified,
        mac,
        rules,
        version: WRITTEN_VERSION.to_string(),
    };
    format::emit_encrypted(docs, &meta, format)
}
