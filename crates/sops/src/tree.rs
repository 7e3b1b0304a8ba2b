//! The document tree sops encrypts, the rules that choose which values are encrypted, and the
//! walk that encrypts or decrypts the values while computing the MAC.
//!
//! sops semantics reproduced here (learned from sops 3.x):
//! - the associated data of a value is its path of *mapping keys* joined and terminated by `:`
//!   (`stringData:key:`); sequence indexes are not part of the path, and a comment's path is the
//!   path of the mapping or sequence that holds it;
//! - the MAC is SHA-512 over the plaintext bytes of every non-null leaf in document order
//!   (strings as is, integers in decimal, floats in shortest form without exponent, booleans as
//!   `True`/`False`), upper-case hex; with `mac_only_encrypted` only encrypted leaves count and
//!   the hash is seeded with SHA-256("sops");
//! - empty strings are never encrypted; nulls are neither encrypted nor hashed;
//! - a comment between the items of a sequence is an item of that sequence; once encrypted it is
//!   an ordinary string item typed `comment` (sops writes it so), still outside the MAC;
//! - `encrypted_comment_regex` / `unencrypted_comment_regex` decide by the *active comments*:
//!   for each mapping or sequence from the root down to a value, the comments written since that
//!   container's last non-comment item (as they stand in the file: ciphertext once encrypted).
//!   A value is encrypted when one of them matches `encrypted_comment_regex` (a comment never
//!   counts itself, so the marker comment stays readable), and left clear when one matches
//!   `unencrypted_comment_regex` (the marker itself included).

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
    /// A comment between the items of a sequence (only ever an item of a `Seq`).
    Comment(String),
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
            Node::Seq(items) => Value::Array(
                items
                    .into_iter()
                    .filter(|n| !matches!(n, Node::Comment(_)))
                    .map(Node::into_json)
                    .collect(),
            ),
            // Only reached for a comment outside a sequence, which nothing builds.
            Node::Comment(_) => Value::Null,
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
    pub unencrypted_comment_regex: Option<Regex>,
    pub encrypted_comment_regex: Option<Regex>,
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

    /// Whether comments take part in the decision (the walk then keeps the active comments).
    fn uses_comments(&self) -> bool {
        self.comment_option().is_some()
    }

    /// The comment option in use, by its metadata name.
    pub(crate) fn comment_option(&self) -> Option<&'static str> {
        if self.encrypted_comment_regex.is_some() {
            Some("encrypted_comment_regex")
        } else if self.unencrypted_comment_regex.is_some() {
            Some("unencrypted_comment_regex")
        } else {
            None
        }
    }

    /// sops' decision for a value or comment at `path`, given the active comments of every
    /// container from the root down (`comments`, innermost last); `is_comment`: the item
    /// decided is itself the last active comment.
    fn should_encrypt(&self, path: &[&str], comments: &[Vec<String>], is_comment: bool) -> bool {
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
        if let Some(re) = &self.unencrypted_comment_regex
            && comments.iter().flatten().any(|c| re.is_match(c))
        {
            encrypted = false;
        }
        if let Some(re) = &self.encrypted_comment_regex {
            // The marker comment stays clear: a comment is decided by the others only.
            let total: usize = comments.iter().map(Vec::len).sum();
            let others = total.saturating_sub(usize::from(is_comment));
            encrypted = comments
                .iter()
                .flatten()
                .take(others)
                .any(|c| re.is_match(c));
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
    /// The active comments of each container being walked, outermost first (kept only when
    /// the rules look at comments).
    comments: Vec<Vec<String>>,
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
        ErrorKind::Value {
            path: Self::shown(path),
            reason,
        }
    }

    fn decide(&self, path: &[&str], is_comment: bool) -> bool {
        self.rules.should_encrypt(path, &self.comments, is_comment)
    }

    /// Makes `text`, as written in the file, an active comment of the innermost container.
    fn note(&mut self, text: &str) {
        if self.rules.uses_comments()
            && let Some(top) = self.comments.last_mut()
        {
            top.push(text.to_string());
        }
    }

    fn unnote(&mut self) {
        if self.rules.uses_comments()
            && let Some(top) = self.comments.last_mut()
        {
            top.pop();
        }
    }

    /// A non-comment item ends the innermost container's active comments.
    fn clear_active(&mut self) {
        if let Some(top) = self.comments.last_mut() {
            top.clear();
        }
    }

    fn leaf(&mut self, node: &mut Node, path: &[&str]) -> Result<(), ErrorKind> {
        let encrypted = self.decide(path, false);
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

    /// The encrypted form of an active comment, or `None` when it stays clear. Comments are
    /// encrypted like values but never hashed.
    fn encrypt_comment(&self, text: &str, path: &[&str]) -> Result<Option<String>, ErrorKind> {
        if text.is_empty() || !self.decide(path, true) {
            return Ok(None);
        }
        let enc = cipher::encrypt(
            text.as_bytes(),
            ValueType::Comment,
            self.key,
            &path_string(path),
        )
        .map_err(|e| Self::value_error(path, e))?;
        // Decryption sees the encrypted text among the active comments: if the regex matched
        // it, everything after it would be read as clear (sops refuses this too).
        if let Some(re) = &self.rules.unencrypted_comment_regex
            && re.is_match(&enc)
        {
            return Err(ErrorKind::Encrypt(format!(
                "unencrypted_comment_regex {:?} matches the encrypted form of a comment at {} ({}…): decryption would take it for a clear comment and leave what follows it in clear; use a regex that cannot match an encrypted comment",
                re.as_str(),
                Self::shown(path),
                &enc[..enc.len().min(24)],
            )));
        }
        Ok(Some(enc))
    }

    /// A comment that does not decrypt is kept as written (sops does the same: files from older
    /// sops versions hold clear comments).
    fn decrypt_comment(&self, text: &str, path: &[&str]) -> Option<String> {
        if text.is_empty() || !self.decide(path, true) {
            return None;
        }
        let (plain, _) = cipher::decrypt(text, self.key, &path_string(path)).ok()?;
        String::from_utf8(plain).ok()
    }

    fn shown(path: &[&str]) -> String {
        if path.is_empty() {
            "the top level".to_string()
        } else {
            path.join(".")
        }
    }

    /// Encrypting a comment between list items makes it a string item, and sops (3.11) ends a
    /// list's active comments at any non-comment item when it decrypts: a marker comment
    /// earlier in the same list would be forgotten for everything after it.
    fn check_list_marker(&self, path: &[&str], more_items: bool) -> Result<(), ErrorKind> {
        let Some(re) = &self.rules.encrypted_comment_regex else {
            return Ok(());
        };
        if !more_items {
            return Ok(());
        }
        let outer = self.comments.len().saturating_sub(1);
        let marker_outside = self.comments[..outer]
            .iter()
            .flatten()
            .any(|c| re.is_match(c));
        if !marker_outside {
            return Err(ErrorKind::Encrypt(format!(
                "in the list at {}, a comment follows a comment matching encrypted_comment_regex {:?} between the same items, so it would be encrypted into a list item after which sops forgets the marker and could not decrypt the rest of the list; put the marker comment last, directly above the item, or above the list's key",
                Self::shown(path),
                re.as_str()
            )));
        }
        Ok(())
    }

    fn walk<'p>(&mut self, node: &'p mut Node, path: &mut Vec<&'p str>) -> Result<(), ErrorKind> {
        match node {
            Node::Null | Node::Comment(_) => Ok(()),
            Node::Map(items) => {
                self.comments.push(Vec::new());
                for item in items.iter_mut() {
                    match item {
                        Item::Comment(text) => {
                            if let Some(done) = self.comment(text, path)? {
                                *text = done;
                            }
                        }
                        Item::Entry(key, value) => {
                            let key: &'p String = key;
                            path.push(key.as_str());
                            let res = self.walk(value, path);
                            path.pop();
                            res?;
                            self.clear_active();
                        }
                    }
                }
                self.comments.pop();
                Ok(())
            }
            Node::Seq(items) => {
                self.comments.push(Vec::new());
                let count = items.len();
                for (i, item) in items.iter_mut().enumerate() {
                    if self.seq_comment(item, path, i + 1 < count)? {
                        continue;
                    }
                    self.walk(item, path)?;
                    self.clear_active();
                }
                self.comments.pop();
                Ok(())
            }
            leaf => self.leaf(leaf, path),
        }
    }

    /// Makes a comment line active and encrypts or decrypts it: its new text, or `None` when it
    /// stays as written. Mapping and sequence comments share this; only what they become
    /// differs.
    fn comment(&mut self, text: &str, path: &[&str]) -> Result<Option<String>, ErrorKind> {
        self.note(text);
        Ok(match self.mode {
            Mode::Encrypt => self.encrypt_comment(text, path)?,
            Mode::Decrypt => self.decrypt_comment(text, path),
        })
    }

    /// Handles a sequence item that is a comment: a clear one, or on decryption one sops
    /// encrypted into a string typed `comment`. Returns false for any other item.
    fn seq_comment(
        &mut self,
        item: &mut Node,
        path: &[&str],
        more_items: bool,
    ) -> Result<bool, ErrorKind> {
        match (self.mode, &*item) {
            (_, Node::Comment(text)) => {
                if let Some(done) = self.comment(text, path)? {
                    *item = match self.mode {
                        Mode::Encrypt => {
                            self.check_list_marker(path, more_items)?;
                            Node::Str(done)
                        }
                        Mode::Decrypt => Node::Comment(done),
                    };
                }
                Ok(true)
            }
            (Mode::Decrypt, Node::Str(s)) if is_comment_value(s) => {
                self.note(s);
                if !self.decide(path, true) {
                    // The rules say this is no comment of ours (its marker was changed): a
                    // string value, as sops reads it.
                    self.unnote();
                    return Ok(false);
                }
                // Unlike a comment line, an item typed `comment` is one sops wrote encrypted:
                // failing to decrypt it is damage, not an old clear comment.
                let (plain, _) = cipher::decrypt(s, self.key, &path_string(path))
                    .map_err(|e| Self::value_error(path, e))?;
                let plain = String::from_utf8(plain).map_err(|_| {
                    Self::value_error(path, "decrypted comment is not UTF-8 text".into())
                })?;
                *item = Node::Comment(plain);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn run(docs: &mut [Node], rules: &Rules, key: &[u8], mode: Mode) -> Result<String, ErrorKind> {
    let mut walker = Walker {
        rules,
        key,
        mode,
        hash: Sha512::new(),
        comments: Vec::new(),
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

/// Whether an encrypted value's type is `comment`.
fn is_comment_value(value: &str) -> bool {
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
        assert!(r.should_encrypt(&["stringData", "key"], &[], false));
        assert!(!r.should_encrypt(&["metadata", "name"], &[], false));
    }

    #[test]
    fn default_suffix_leaves_marked_keys_clear() {
        let r = Rules::default_rules();
        assert!(r.should_encrypt(&["a", "b"], &[], false));
        assert!(!r.should_encrypt(&["a_unencrypted", "b"], &[], false));
    }

    fn comment_rules(encrypted: Option<&str>, unencrypted: Option<&str>) -> Rules {
        Rules {
            encrypted_comment_regex: encrypted.map(|r| Regex::new(r).unwrap()),
            unencrypted_comment_regex: unencrypted.map(|r| Regex::new(r).unwrap()),
            ..Default::default()
        }
    }

    fn active(levels: &[&[&str]]) -> Vec<Vec<String>> {
        levels
            .iter()
            .map(|l| l.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn comment_regexes_decide_by_the_active_comments() {
        let enc = comment_rules(Some("sops:enc"), None);
        // A value after the marker, in its container or an enclosing one.
        assert!(enc.should_encrypt(&["a"], &active(&[&[" sops:enc"]]), false));
        assert!(enc.should_encrypt(&["a", "b"], &active(&[&[" sops:enc"], &[]]), false));
        assert!(!enc.should_encrypt(&["a"], &active(&[&[" other"]]), false));
        assert!(!enc.should_encrypt(&["a"], &active(&[&[]]), false));
        // The marker never counts for itself, so it stays readable; a comment after it is
        // encrypted.
        assert!(!enc.should_encrypt(&["a"], &active(&[&[" sops:enc"]]), true));
        assert!(enc.should_encrypt(&["a"], &active(&[&[" sops:enc", " why"]]), true));
        assert!(enc.should_encrypt(&["a"], &active(&[&[" sops:enc"], &[" x"]]), true));

        let clear = comment_rules(None, Some("sops:clear"));
        assert!(clear.should_encrypt(&["a"], &active(&[&[" other"]]), false));
        assert!(!clear.should_encrypt(&["a"], &active(&[&[" sops:clear"]]), false));
        assert!(!clear.should_encrypt(&["a", "b"], &active(&[&[" sops:clear"], &[]]), false));
        // The marker itself stays clear too.
        assert!(!clear.should_encrypt(&["a"], &active(&[&[" sops:clear"]]), true));
        assert!(clear.should_encrypt(&["a"], &active(&[&[" other"]]), true));
    }

    fn comments_doc() -> Node {
        Node::Map(vec![
            Item::Comment(" sops:enc".into()),
            Item::Comment(" why".into()),
            Item::Entry("secret".into(), Node::Str("s".into())),
            Item::Entry("plain".into(), Node::Str("p".into())),
            Item::Entry(
                "list".into(),
                Node::Seq(vec![
                    Node::Str("a".into()),
                    Node::Comment(" sops:enc".into()),
                    Node::Str("b".into()),
                    Node::Str("c".into()),
                    Node::Comment(" tail".into()),
                ]),
            ),
        ])
    }

    #[test]
    fn encrypted_comment_regex_walk() {
        let key = [2u8; 32];
        let rules = comment_rules(Some("sops:enc"), None);
        let original = comments_doc();
        let mut docs = vec![original.clone()];
        let mac1 = encrypt_docs(&mut docs, &rules, &key).unwrap();
        let Node::Map(items) = &docs[0] else { panic!() };
        let enc = |i: usize| match &items[i] {
            Item::Comment(t) | Item::Entry(_, Node::Str(t)) => t.starts_with("ENC["),
            _ => panic!(),
        };
        assert!(!enc(0), "the marker stays clear");
        assert!(
            enc(1) && enc(2),
            "the comment and value after it are encrypted"
        );
        assert!(!enc(3), "the marker ends at the next value");
        let Item::Entry(_, Node::Seq(list)) = &items[4] else {
            panic!()
        };
        assert_eq!(list[0], Node::Str("a".into()));
        assert_eq!(list[1], Node::Comment(" sops:enc".into()));
        assert!(matches!(&list[2], Node::Str(s) if s.starts_with("ENC[")));
        assert_eq!(list[3], Node::Str("c".into()));
        assert_eq!(list[4], Node::Comment(" tail".into()));
        let mac2 = decrypt_docs(&mut docs, &rules, &key).unwrap();
        assert_eq!(docs[0], original);
        assert_eq!(mac1, mac2);
    }

    #[test]
    fn list_comments_are_encrypted_into_items_and_come_back() {
        let key = [3u8; 32];
        let rules = Rules::default_rules();
        let original = comments_doc();
        let mut docs = vec![original.clone()];
        let mac1 = encrypt_docs(&mut docs, &rules, &key).unwrap();
        let Node::Map(items) = &docs[0] else { panic!() };
        let Item::Entry(_, Node::Seq(list)) = &items[4] else {
            panic!()
        };
        // As sops writes them: string items typed `comment`.
        assert!(matches!(&list[1], Node::Str(s) if is_comment_value(s)));
        assert!(matches!(&list[4], Node::Str(s) if is_comment_value(s)));
        let mac2 = decrypt_docs(&mut docs, &rules, &key).unwrap();
        assert_eq!(docs[0], original);
        assert_eq!(mac1, mac2, "comments are outside the MAC");
    }

    #[test]
    fn a_marker_between_list_items_followed_by_another_comment_is_refused() {
        let key = [4u8; 32];
        let rules = comment_rules(Some("sops:enc"), None);
        let mut docs = vec![Node::Map(vec![Item::Entry(
            "list".into(),
            Node::Seq(vec![
                Node::Comment(" sops:enc".into()),
                Node::Comment(" why".into()),
                Node::Str("b".into()),
            ]),
        )])];
        let err = encrypt_docs(&mut docs, &rules, &key)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "in the list at list, a comment follows a comment matching encrypted_comment_regex"
            ),
            "{err}"
        );
        // With the marker above the list's key, the same comments are fine.
        let mut docs = vec![Node::Map(vec![
            Item::Comment(" sops:enc".into()),
            Item::Entry(
                "list".into(),
                Node::Seq(vec![Node::Comment(" why".into()), Node::Str("b".into())]),
            ),
        ])];
        encrypt_docs(&mut docs, &rules, &key).unwrap();
    }

    #[test]
    fn unencrypted_comment_regex_must_not_match_encrypted_comments() {
        let key = [5u8; 32];
        let rules = comment_rules(None, Some("ENC"));
        let mut docs = vec![comments_doc()];
        let err = encrypt_docs(&mut docs, &rules, &key)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unencrypted_comment_regex \"ENC\" matches the encrypted form of a comment at the top level"), "{err}");
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
