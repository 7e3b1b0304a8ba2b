//! The `sops` metadata block: key groups, encryption rules, MAC, version; read from the nested
//! form (YAML, JSON, binary) or the flattened `sops_…` form (dotenv), and written back.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use crate::error::ErrorKind;
use crate::tree::Rules;

/// The sops file-format version this crate writes into files it encrypts.
pub const WRITTEN_VERSION: &str = "3.10.2";

/// The six options that choose which values are encrypted; a file uses at most one.
pub(crate) const SELECTORS: &str = "encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, unencrypted_comment_regex";

/// One age master key: the recipient and the armored age file holding the data key (or this
/// group's Shamir share of it).
#[derive(Debug, Clone)]
pub(crate) struct AgeKey {
    pub recipient: String,
    pub enc: String,
}

/// A key group: every key in it encrypts the same part of the data key.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyGroup {
    pub age: Vec<AgeKey>,
    /// Key methods present in the group that this crate cannot use (for error messages).
    pub unsupported: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Metadata {
    pub key_groups: Vec<KeyGroup>,
    pub shamir_threshold: usize,
    pub last_modified: String,
    pub mac: String,
    pub rules: Rules,
    pub version: String,
}

/// The metadata keys holding lists of master keys, with the method name shown to users.
const METHODS: [(&str, &str); 7] = [
    ("kms", "aws kms"),
    ("gcp_kms", "gcp kms"),
    ("hckms", "huaweicloud kms"),
    ("azure_kv", "azure key vault"),
    ("hc_vault", "hc_vault"),
    ("pgp", "pgp"),
    ("age", "age"),
];

fn weak_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn opt_string(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(weak_string).filter(|s| !s.is_empty())
}

fn list<'a>(map: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    match map.get(key) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

fn parse_group(map: &Map<String, Value>) -> Result<KeyGroup, ErrorKind> {
    let mut group = KeyGroup::default();
    for (key, method) in METHODS {
        let entries = list(map, key);
        if entries.is_empty() {
            continue;
        }
        if key != "age" {
            group.unsupported.push(method.to_string());
            continue;
        }
        for entry in entries {
            let obj = entry.as_object().ok_or_else(|| {
                ErrorKind::InvalidMetadata("an age key entry is not a mapping".into())
            })?;
            let recipient = opt_string(obj, "recipient").ok_or_else(|| {
                ErrorKind::InvalidMetadata("an age key entry has no recipient".into())
            })?;
            let enc = opt_string(obj, "enc").ok_or_else(|| {
                ErrorKind::InvalidMetadata(format!(
                    "the age key entry for {recipient} has no enc field"
                ))
            })?;
            if recipient.starts_with("age1pq1") {
                push_unique(
                    &mut group.unsupported,
                    "age post-quantum recipients (age1pq1…)",
                );
            } else if recipient.starts_with("age1") && recipient.matches('1').count() > 1 {
                // age1<plugin>1… is a plugin recipient; X25519 recipients have one separator.
                push_unique(&mut group.unsupported, "age plugin recipients");
            } else {
                group.age.push(AgeKey { recipient, enc });
            }
        }
    }
    Ok(group)
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|i| i == item) {
        list.push(item.to_string());
    }
}

fn compile(name: &str, pattern: String) -> Result<Regex, ErrorKind> {
    Regex::new(&pattern).map_err(|e| ErrorKind::InvalidMetadata(format!("{name}: {e}")))
}

/// Checks that the version is one of sops 3.x.
fn check_version(version: &str) -> Result<(), ErrorKind> {
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("");
    let rest_ok = parts.all(|p| !p.is_empty());
    if major == "3" && rest_ok {
        Ok(())
    } else {
        Err(ErrorKind::UnsupportedVersion(version.to_string()))
    }
}

impl Metadata {
    /// Reads the nested metadata object (`sops:` of YAML/JSON, or the unflattened dotenv keys).
    pub(crate) fn from_value(value: &Value) -> Result<Metadata, ErrorKind> {
        let map = value
            .as_object()
            .ok_or_else(|| ErrorKind::InvalidMetadata("the sops entry is not a mapping".into()))?;
        let version = opt_string(map, "version").unwrap_or_default();
        check_version(&version)?;
        let last_modified = opt_string(map, "lastmodified")
            .ok_or_else(|| ErrorKind::InvalidMetadata("lastmodified is missing".into()))?;
        let last_modified = normalize_rfc3339(&last_modified).ok_or_else(|| {
            ErrorKind::InvalidMetadata(format!(
                "lastmodified {last_modified:?} is not an RFC 3339 time"
            ))
        })?;
        let mac = opt_string(map, "mac").unwrap_or_default();

        let mut key_groups = Vec::new();
        let top_level = parse_group(map)?;
        if !top_level.age.is_empty() || !top_level.unsupported.is_empty() {
            key_groups.push(top_level);
        } else {
            for group in list(map, "key_groups") {
                let obj = group.as_object().ok_or_else(|| {
                    ErrorKind::InvalidMetadata("a key group is not a mapping".into())
                })?;
                key_groups.push(parse_group(obj)?);
            }
        }
        if key_groups.is_empty() {
            return Err(ErrorKind::InvalidMetadata(
                "no keys found in the file".into(),
            ));
        }
        let shamir_threshold = match map.get("shamir_threshold").and_then(weak_string) {
            None => 0,
            Some(s) => s.parse().map_err(|_| {
                ErrorKind::InvalidMetadata(format!("shamir_threshold {s:?} is not a number"))
            })?,
        };

        let unencrypted_suffix = opt_string(map, "unencrypted_suffix");
        let encrypted_suffix = opt_string(map, "encrypted_suffix");
        let regex = |name: &str| opt_string(map, name).map(|p| compile(name, p)).transpose();
        let unencrypted_regex = regex("unencrypted_regex")?;
        let encrypted_regex = regex("encrypted_regex")?;
        let unencrypted_comment_regex = regex("unencrypted_comment_regex")?;
        let encrypted_comment_regex = regex("encrypted_comment_regex")?;
        let count = [
            unencrypted_suffix.is_some(),
            encrypted_suffix.is_some(),
            unencrypted_regex.is_some(),
            encrypted_regex.is_some(),
            unencrypted_comment_regex.is_some(),
            encrypted_comment_regex.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if count > 1 {
            return Err(ErrorKind::InvalidMetadata(format!(
                "more than one of {SELECTORS} is set"
            )));
        }
        let mac_only_encrypted = map
            .get("mac_only_encrypted")
            .and_then(weak_string)
            .is_some_and(|s| s == "true");
        let mut rules = Rules {
            unencrypted_suffix,
            encrypted_suffix,
            unencrypted_regex,
            encrypted_regex,
            unencrypted_comment_regex,
            encrypted_comment_regex,
            mac_only_encrypted,
        };
        if count == 0 {
            rules.unencrypted_suffix = Rules::default_rules().unencrypted_suffix;
        }
        Ok(Metadata {
            key_groups,
            shamir_threshold,
            last_modified,
            mac,
            rules,
            version,
        })
    }

    /// The nested metadata object, in the order sops 3.10 writes it.
    pub(crate) fn to_value(&self) -> Value {
        let age_list = |group: &KeyGroup| -> Value {
            Value::Array(
                group
                    .age
                    .iter()
                    .map(|k| {
                        let mut m = Map::new();
                        m.insert("recipient".into(), Value::String(k.recipient.clone()));
                        m.insert("enc".into(), Value::String(k.enc.clone()));
                        Value::Object(m)
                    })
                    .collect(),
            )
        };
        let mut m = Map::new();
        if self.shamir_threshold > 0 && self.key_groups.len() > 1 {
            m.insert(
                "shamir_threshold".into(),
                Value::from(self.shamir_threshold as u64),
            );
        }
        if self.key_groups.len() == 1 {
            m.insert("age".into(), age_list(&self.key_groups[0]));
        } else {
            let groups = self
                .key_groups
                .iter()
                .map(|g| {
                    let mut gm = Map::new();
                    gm.insert("age".into(), age_list(g));
                    Value::Object(gm)
                })
                .collect();
            m.insert("key_groups".into(), Value::Array(groups));
        }
        m.insert(
            "lastmodified".into(),
            Value::String(self.last_modified.clone()),
        );
        m.insert("mac".into(), Value::String(self.mac.clone()));
        let rules = &self.rules;
        let suffixes = [
            ("unencrypted_suffix", &rules.unencrypted_suffix),
            ("encrypted_suffix", &rules.encrypted_suffix),
        ];
        for (name, suffix) in suffixes {
            if let Some(s) = suffix {
                m.insert(name.into(), Value::String(s.clone()));
            }
        }
        let regexes = [
            ("unencrypted_regex", &rules.unencrypted_regex),
            ("encrypted_regex", &rules.encrypted_regex),
            (
                "unencrypted_comment_regex",
                &rules.unencrypted_comment_regex,
            ),
            ("encrypted_comment_regex", &rules.encrypted_comment_regex),
        ];
        for (name, regex) in regexes {
            if let Some(r) = regex {
                m.insert(name.into(), Value::String(r.as_str().into()));
            }
        }
        if rules.mac_only_encrypted {
            m.insert("mac_only_encrypted".into(), Value::Bool(true));
        }
        m.insert("version".into(), Value::String(self.version.clone()));
        Value::Object(m)
    }
}

/// Go's `time.Parse(RFC3339)` then `Format(RFC3339)`: the MAC's associated data is the time in
/// that exact form (fractional seconds dropped, a zero offset written `Z`).
pub(crate) fn normalize_rfc3339(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shape = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let zone = match rest {
        "Z" | "z" | "+00:00" | "-00:00" => "Z".to_string(),
        z if z.len() == 6
            && (z.starts_with('+') || z.starts_with('-'))
            && z.as_bytes()[3] == b':'
            && z[1..3].bytes().all(|c| c.is_ascii_digit())
            && z[4..6].bytes().all(|c| c.is_ascii_digit()) =>
        {
            z.to_string()
        }
        _ => return None,
    };
    Some(format!("{}T{}{}", &s[..10], &s[11..19], zone))
}

/// The current UTC time in RFC 3339 with seconds, as sops writes `lastmodified`.
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

const MAP_SEP: &str = "__map_";
const LIST_SEP: &str = "__list_";

enum Token {
    Key(String),
    Index(usize),
}

fn tokenize(path: &str) -> Result<Vec<Token>, ErrorKind> {
    let mut tokens = Vec::new();
    let mut rest = path;
    let mut current = Token::Key(String::new());
    loop {
        let next_map = rest.find(MAP_SEP);
        let next_list = rest.find(LIST_SEP);
        let (pos, sep_len, is_list) = match (next_map, next_list) {
            (None, None) => (rest.len(), 0, false),
            (Some(m), None) => (m, MAP_SEP.len(), false),
            (None, Some(l)) => (l, LIST_SEP.len(), true),
            (Some(m), Some(l)) if m < l => (m, MAP_SEP.len(), false),
            (_, Some(l)) => (l, LIST_SEP.len(), true),
        };
        let text = &rest[..pos];
        tokens.push(match current {
            Token::Key(_) => Token::Key(text.to_string()),
            Token::Index(_) => Token::Index(text.parse().map_err(|_| {
                ErrorKind::InvalidMetadata(format!("bad list index in flattened key {path:?}"))
            })?),
        });
        if sep_len == 0 {
            break;
        }
        rest = &rest[pos + sep_len..];
        current = if is_list {
            Token::Index(0)
        } else {
            Token::Key(String::new())
        };
    }
    Ok(tokens)
}

#[derive(Default)]
struct Slot {
    value: Option<Value>,
    keys: BTreeMap<String, Slot>,
    indexes: BTreeMap<usize, Slot>,
}

impl Slot {
    fn into_value(self, path: &str) -> Result<Value, ErrorKind> {
        let kinds = self.value.is_some() as u8
            + (!self.keys.is_empty()) as u8
            + (!self.indexes.is_empty()) as u8;
        if kinds > 1 {
            return Err(ErrorKind::InvalidMetadata(format!(
                "flattened metadata key {path:?} is both a value and a container"
            )));
        }
        if let Some(v) = self.value {
            return Ok(v);
        }
        if !self.indexes.is_empty() {
            let n = self.indexes.len();
            if self.indexes.keys().copied().ne(0..n) {
                return Err(ErrorKind::InvalidMetadata(format!(
                    "flattened metadata list {path:?} has gaps"
                )));
            }
            return Ok(Value::Array(
                self.indexes
                    .into_values()
                    .map(|s| s.into_value(path))
                    .collect::<Result<_, _>>()?,
            ));
        }
        let mut map = Map::new();
        for (k, s) in self.keys {
            let v = s.into_value(&k)?;
            map.insert(k, v);
        }
        Ok(Value::Object(map))
    }
}

/// Rebuilds the nested metadata from dotenv's flattened `sops_…` entries (prefix removed).
pub(crate) fn unflatten(entries: Vec<(String, String)>) -> Result<Value, ErrorKind> {
    let mut root = Slot::default();
    for (key, value) in entries {
        let mut slot = &mut root;
        for token in tokenize(&key)? {
            slot = match token {
                Token::Key(k) => slot.keys.entry(k).or_default(),
                Token::Index(i) => slot.indexes.entry(i).or_default(),
            };
        }
        if slot.value.is_some() {
            return Err(ErrorKind::InvalidMetadata(format!(
                "duplicate flattened metadata key {key:?}"
            )));
        }
        slot.value = Some(Value::String(value));
    }
    root.into_value("sops")
}

/// Flattens nested metadata into `sops_…` keys (sorted, as sops writes them) for dotenv.
pub(crate) fn flatten(value: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, prefix: String, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for k in keys {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}{MAP_SEP}{k}")
                    };
                    walk(&map[k], p, out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{prefix}{LIST_SEP}{i}"), out);
                }
            }
            Value::Null => {}
            other => {
                let text = weak_string(other).unwrap_or_default();
                out.push((format!("sops_{prefix}"), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_normalization() {
        assert_eq!(
            normalize_rfc3339("2024-11-12T13:33:42Z").as_deref(),
            Some("2024-11-12T13:33:42Z")
        );
        assert_eq!(
            normalize_rfc3339("2024-11-12T13:33:42.123456Z").as_deref(),
            Some("2024-11-12T13:33:42Z")
        );
        assert_eq!(
            normalize_rfc3339("2024-11-12T13:33:42+00:00").as_deref(),
            Some("2024-11-12T13:33:42Z")
        );
        assert_eq!(
            normalize_rfc3339("2024-11-12T13:33:42+02:00").as_deref(),
            Some("2024-11-12T13:33:42+02:00")
        );
        assert!(normalize_rfc3339("yesterday").is_none());
        assert!(normalize_rfc3339(&now_rfc3339()).is_some());
    }

    #[test]
    fn flatten_round_trip() {
        let v: Value = serde_json::json!({
            "age": [{"recipient": "age1x", "enc": "a\nb"}],
            "key_groups": [{"age": [{"recipient": "r", "enc": "e"}]}],
            "version": "3.9.0"
        });
        let flat = flatten(&v);
        assert!(flat.contains(&("sops_age__list_0__map_enc".into(), "a\nb".into())));
        let back = unflatten(
            flat.into_iter()
                .map(|(k, v)| (k.trim_start_matches("sops_").to_string(), v))
                .collect(),
        )
        .unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn versions() {
        assert!(check_version("3.9.0").is_ok());
        assert!(check_version("3.12.1").is_ok());
        assert!(check_version("2.0.0").is_err());
        assert!(check_version("4.0.0").is_err());
        assert!(check_version("").is_err());
    }
}
