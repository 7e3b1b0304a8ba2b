//! The document tree sops encrypts, the rules that choose which values are encrypted, and the
//! walk that encrypts or decrypts the values while computing the MAC.
//!
//! sops semantics reproduced here (learned from sops 3.x):
//! - the associated data of a value is its path of *mapping keys* joined and terminated by `:`
//!   (`stringData:key:`); sequence indexes are not part of the path, and a comment's path is the
//!   path of the mapping that holds it;
//! - the MAC is SHA-512 over the plaintext bytes of every non-null leaf in document order
//!   (strings as is, integers in decimal, floats in shortest form without exponent, booleans as
//!   `True`/`False`), upper-case hex; with `mac_only_encrypted` only encrypted leaves count and
//!   the hash is seeded with SHA-256("sops");
//! - empty strings are never encrypted; nulls are neither encrypted nor hashed.

use regex::Regex;
use sha2::{Digest, Sha512};

use crate::cipher::{self, ValueType};
use crate::error::ErrorKind;

/// A document value, with sops' scalar types kept apart (an integer and a float that print the
/// same are different types to sops).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Item>),
}

/// One entry of a mapping: a key and its value, or a comment line (dotenv keeps comments).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Entry(String, Node),
    Comment(String),
}

impl Node {
    pub(crate) fn from_json(value: serde_json::Value) -> Node {
        use serde_json::Value;
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Node::Int(i),
                // Like sops' JSON store: what is not an int64 is a float64.
                None => Node::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Node::Str(s),
            Value::Array(items) => Node::Seq(items.into_iter().map(Node::from_json).collect()),
            Value::Object(map) => Node::Map(
                map.into_iter()
                    .map(|(k, v)| Item::Entry(k, Node::from_json(v)))
                    .collect(),
            ),
        }
    }

    pub(crate) fn into_json(self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Int(i) => Value::from(i),
            Node::Float(f) => match serde_json::Number::from_f64(f) {
                Some(n) => Value::Number(n),
                // JSON has no NaN/Inf; keep the value readable instead of losing it.
                None => Value::String(format_float(f)),
            },
            Node::Str(s) => Value::String(s),
            Node::Seq(items) => Value::Array(items.into_iter().map(Node::into_json).collect()),
            Node::Map(items) => {
                let mut map = serde_json::Map::new();
                for item in items {
                    if let Item::Entry(k, v) = item {
                        map.insert(k, v.into_json());
                    }
                }
                Value::Object(map)
            }
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest digits that round-trip, no exponent.
/// Rust's `Display` for `f64` has the same contract for finite values.
pub(crate) fn format_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{f}")
    }
}

/// Which values of a document are encrypted: sops' `*_suffix` / `*_regex` options.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub unencrypted_suffix: Option<String>,
    pub encrypted_suffix: Option<String>,
    pub unencrypted_regex: Option<Regex>,
    pub encrypted_regex: Option<Regex>,
    pub mac_only_encrypted: bool,
}

impl Rules {
    /// The rule sops applies when a file names none: keys ending in `_unencrypted` stay clear.
    pub fn default_rules() -> Self {
        Rules {
            unencrypted_suffix: Some("_unencrypted".into()),
            ..Default::default()
        }
    }

    fn should_encrypt(&self, path: &[&str]) -> bool {
        let mut encrypted = true;
        if let Some(suffix) = &self.unencrypted_suffix
            && path.iter().any(|p| p.ends_with(suffix.as_str()))
        {
            encrypted = false;
        }
        if let Some(suffix) = &self.encrypted_suffix {
            encrypted = path.iter().any(|p| p.ends_with(suffix.as_str()));
        }
        if let Some(re) = &self.unencrypted_regex
            && path.iter().any(|p| re.is_match(p))
        {
            encrypted = false;
        }
        if let Some(re) = &self.encrypted_regex {
            encrypted = path.iter().any(|p| re.is_match(p));
        }
        encrypted
    }
}

/// SHA-256("sops"): seeds the MAC when only encrypted values are hashed, so the two MAC modes
/// never collide.
const MAC_ONLY_ENCRYPTED_SEED: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

#[derive(Clone, Copy)]
enum Mode {
    Encrypt,
    Decrypt,
}

struct Walker<'a> {
    rules: &'a Rules,
    key: &'a [u8],
    mode: Mode,
    hash: Sha512,
}

fn path_string(path: &[&str]) -> String {
    let mut s = path.join(":");
    s.push(':');
    s
}

fn leaf_bytes(node: &Node) -> Vec<u8> {
    match node {
        Node::Str(s) => s.as_bytes().to_vec(),
        Node::Int(i) => i.to_string().into_bytes(),
        Node::Float(f) => format_float(*f).into_bytes(),
        Node::Bool(true) => b"True".to_vec(),
        Node::Bool(false) => b"False".to_vec(),
        _ => Vec::new(),
    }
}

fn value_type(node: &Node) -> ValueType {
    match node {
        Node::Int(_) => ValueType::Int,
        Node::Float(_) => ValueType::Float,
        Node::Bool(_) => ValueType::Bool,
        _ => ValueType::Str,
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn typed(plain: Vec<u8>, ty: ValueType) -> Result<Node, String> {
    let text = String::from_utf8(plain)
        .map_err(|_| format!("decrypted {ty:?} value is not UTF-8 text"))?;
    Ok(match ty {
        ValueType::Str | ValueType::Bytes | ValueType::Time | ValueType::Comment => Node::Str(text),
        ValueType::Int => Node::Int(
            text.parse()
                .map_err(|_| "decrypted int value is not an integer".to_string())?,
        ),
        ValueType::Float => Node::Float(
            text.parse()
                .map_err(|_| "decrypted float value is not a number".to_string())?,
        ),
        ValueType::Bool => Node::Bool(
            parse_go_bool(&text)
                .ok_or_else(|| "decrypted bool value is not a boolean".to_string())?,
        ),
    })
}

impl Walker<'_> {
    fn value_error(path: &[&str], reason: String) -> ErrorKind {
        let shown = if path.is_empty() {
            "the top level".to_string()
        } else {
            path.join(".")
        };
        ErrorKind::Value {
            path: shown,
            reason,
        }
    }

    fn leaf(&mut self, node: &mut Node, path: &[&str]) -> Result<(), ErrorKind> {
        let encrypted = self.rules.should_encrypt(path);
        let hashed = !self.rules.mac_only_encrypted || encrypted;
        match self.mode {
            Mode::Encrypt => {
                if hashed {
                    self.hash.update(leaf_bytes(node));
                }
                if encrypted && !matches!(node, Node::Str(s) if s.is_empty()) {
                    let enc = cipher::encrypt(
                        &leaf_bytes(node),
                        value_type(node),
                        self.key,
                        &path_string(path),
                    )
                    .map_err(|e| Self::value_error(path, e))?;
                    *node = Node::Str(enc);
                }
            }
            Mode::Decrypt => {
                if encrypted {
                    match node {
                        Node::Str(s) if s.is_empty() => {}
                        Node::Str(s) => {
                            let (plain, ty) = cipher::decrypt(s, self.key, &path_string(path))
                                .map_err(|e| Self::value_error(path, e))?;
                            *node = typed(plain, ty).map_err(|e| Self::value_error(path, e))?;
                        }
                        _ => {
                            return Err(Self::value_error(
                                path,
                                "expected an encrypted string, found a plain value".into(),
                            ));
                        }
                    }
                }
                if hashed {
                    self.hash.update(leaf_bytes(node));
                }
            }
        }
        Ok(())
    }

    fn comment(&mut self, text: &mut String, path: &[&str]) -> Result<(), ErrorKind> {
        // Comments are encrypted like values but never hashed; a comment that does not decrypt is
        // kept as written, since files from older sops versions hold clear comments.
        if !self.rules.should_encrypt(path) || text.is_empty() {
            return Ok(());
        }
        match self.mode {
            Mode::Encrypt => {
                *text = cipher::encrypt(
                    text.as_bytes(),
                    ValueType::Comment,
                    self.key,
                    &path_string(path),
                )
                .map_err(|e| Self::value_error(path, e))?;
            }
            Mode::Decrypt => {
                if let Ok((plain, _)) = cipher::decrypt(text, self.key, &path_string(path))
                    && let Ok(plain) = String::from_utf8(plain)
                {
                    *text = plain;
                }
            }
        }
        Ok(())
    }

    fn walk<'p>(&mut self, node: &'p mut Node, path: &mut Vec<&'p str>) -> Result<(), ErrorKind> {
        match node {
            Node::Null => Ok(()),
            Node::Map(items) => {
                for item in items.iter_mut() {
                    match item {
                        Item::Comment(text) => self.comment(text, path)?,
                        Item::Entry(key, value) => {
                            let key: &'p String = key;
                            path.push(key.as_str());
                            let res = self.walk(value, path);
                            path.pop();
                            res?;
                        }
                    }
                }
                Ok(())
            }
            Node::Seq(items) => {
                if matches!(self.mode, Mode::Decrypt) {
                    // sops keeps a comment written between list items as an item of its own,
                    // typed `comment` and left out of the MAC. It is not data: it must not
                    // come back as an extra list element.
                    items.retain(|item| !is_list_comment(item));
                }
                for item in items.iter_mut() {
                    self.walk(item, path)?;
                }
                Ok(())
            }
            leaf => self.leaf(leaf, path),
        }
    }
}

fn run(docs: &mut [Node], rules: &Rules, key: &[u8], mode: Mode) -> Result<String, ErrorKind> {
    let mut walker = Walker {
        rules,
        key,
        mode,
        hash: Sha512::new(),
    };
    if rules.mac_only_encrypted {
        walker.hash.update(MAC_ONLY_ENCRYPTED_SEED);
    }
    for doc in docs.iter_mut() {
        let mut path = Vec::new();
        walker.walk(doc, &mut path)?;
    }
    let digest = walker.hash.finalize();
    Ok(digest.iter().map(|b| format!("{b:02X}")).collect())
}

/// Decrypts every value the rules select, in place; returns the MAC of the plaintext.
pub(crate) fn decrypt_docs(
    docs: &mut [Node],
    rules: &Rules,
    key: &[u8],
) -> Result<String, ErrorKind> {
    run(docs, rules, key, Mode::Decrypt)
}

/// Encrypts every value the rules select, in place; returns the MAC of the plaintext.
pub(crate) fn encrypt_docs(
    docs: &mut [Node],
    rules: &Rules,
    key: &[u8],
) -> Result<String, ErrorKind> {
    run(docs, rules, key, Mode::Encrypt)
}

/// A list item sops wrote for a comment: an encrypted value whose type is `comment`.
fn is_list_comment(node: &Node) -> bool {
    matches!(node, Node::Str(s) if is_comment_value(s))
}

/// Whether an encrypted value's type is `comment`.
pub(crate) fn is_comment_value(value: &str) -> bool {
    value.starts_with("ENC[AES256_GCM,") && value.ends_with(",type:comment]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_with_regex(re: &str) -> Rules {
        Rules {
            encrypted_regex: Some(Regex::new(re).unwrap()),
            ..Default::default()
        }
    }

    #[test]
    fn regex_selects_by_any_path_component() {
        let r = rules_with_regex("^(data|stringData)$");
        assert!(r.should_encrypt(&["stringData", "key"]));
        assert!(!r.should_encrypt(&["metadata", "name"]));
    }

    #[test]
    fn default_suffix_leaves_marked_keys_clear() {
        let r = Rules::default_rules();
        assert!(r.should_encrypt(&["a", "b"]));
        assert!(!r.should_encrypt(&["a_unencrypted", "b"]));
    }

    #[test]
    fn encrypt_then_decrypt_restores_types_and_mac() {
        let key = [1u8; 32];
        let original = Node::Map(vec![
            Item::Entry("s".into(), Node::Str("text".into())),
            Item::Entry("i".into(), Node::Int(42)),
            Item::Entry("f".into(), Node::Float(1.5)),
            Item::Entry("b".into(), Node::Bool(false)),
            Item::Entry("n".into(), Node::Null),
            Item::Entry("e".into(), Node::Str(String::new())),
            Item::Entry(
                "l".into(),
                Node::Seq(vec![Node::Str("x".into()), Node::Int(1)]),
            ),
        ]);
        let mut docs = vec![original.clone()];
        let rules = Rules::default_rules();
        let mac1 = encrypt_docs(&mut docs, &rules, &key).unwrap();
        assert_ne!(docs[0], original);
        let mac2 = decrypt_docs(&mut docs, &rules, &key).unwrap();
        assert_eq!(docs[0], original);
        assert_eq!(mac1, mac2);
    }

    #[test]
    fn go_float_format() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(1e21), "1000000000000000000000");
        assert_eq!(format_float(0.1), "0.1");
    }
}
