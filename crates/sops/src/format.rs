//! The four file formats sops writes, and how each stores its metadata:
//! - YAML: one `sops:` mapping appended to every document (read from the first);
//! - JSON: a top-level `"sops"` object;
//! - binary: the whole file as the string `"data"` of a JSON envelope;
//! - dotenv: `KEY=value` lines, newlines escaped as `\n`, metadata flattened into `sops_…` keys.
//!
//! YAML comments are kept as sops keeps them (see `comments`): encrypted as `#ENC[…]` lines
//! in mappings and `- ENC[…,type:comment]` items in sequences, never counted in the MAC.

use serde_json::Value;

use crate::comments;
use crate::error::ErrorKind;
use crate::metadata::{self, Metadata};
use crate::tree::{Item, Node};

/// A sops file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A YAML stream; every document is encrypted, comments kept.
    Yaml,
    /// One JSON document.
    Json,
    /// `KEY=value` lines, as sops reads `.env` files.
    Dotenv,
    /// Any other file: its bytes are one value under `data`.
    Binary,
}

impl Format {
    /// The format sops picks for a path: `.yaml`/`.yml`, `.json`, `.env`, otherwise binary.
    pub fn from_path(path: &str) -> Format {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".yaml") || lower.ends_with(".yml") {
            Format::Yaml
        } else if lower.ends_with(".json") {
            Format::Json
        } else if lower.ends_with(".env") {
            Format::Dotenv
        } else {
            Format::Binary
        }
    }

    /// The format Flux uses for a Secret data key: `.dockerconfigjson` is JSON, otherwise as
    /// [`Format::from_path`].
    pub fn for_secret_key(key: &str) -> Format {
        if key.ends_with(".dockerconfigjson") {
            Format::Json
        } else {
            Format::from_path(key)
        }
    }

    /// Parses a format name as sops' `--input-type` takes it.
    pub fn from_name(name: &str) -> Result<Format, ErrorKind> {
        match name {
            "yaml" | "yml" => Ok(Format::Yaml),
            "json" => Ok(Format::Json),
            "dotenv" | "env" => Ok(Format::Dotenv),
            "binary" => Ok(Format::Binary),
            "ini" => Err(ErrorKind::NotSupported("ini format".into())),
            other => Err(ErrorKind::Format {
                format: "format",
                reason: format!("unknown format {other:?} (use yaml, json, dotenv or binary)"),
            }),
        }
    }

    /// The format's name as sops spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Yaml => "yaml",
            Format::Json => "json",
            Format::Dotenv => "dotenv",
            Format::Binary => "binary",
        }
    }

    /// Detects an encrypted sops file by the MAC marker each format writes (as Flux does).
    /// A JSON marker is reported as [`Format::Json`]; binary files are JSON envelopes.
    pub fn detect_encrypted(data: &[u8]) -> Option<Format> {
        let has = |marker: &[u8]| data.windows(marker.len()).any(|w| w == marker);
        if has(b"\"mac\": \"ENC[") || has(b"\"mac\":\"ENC[") {
            Some(Format::Json)
        } else if has(b"sops_mac=ENC[") {
            Some(Format::Dotenv)
        } else if has(b"mac: ENC[") {
            Some(Format::Yaml)
        } else {
            None
        }
    }
}

fn format_error(format: Format, reason: impl Into<String>) -> ErrorKind {
    ErrorKind::Format {
        format: format.name(),
        reason: reason.into(),
    }
}

fn as_text(data: &[u8], format: Format) -> Result<&str, ErrorKind> {
    std::str::from_utf8(data).map_err(|_| format_error(format, "the file is not UTF-8 text"))
}

/// YAML read like sops reads it with go-yaml v3: `0644` is octal, only true/false are
/// booleans, and `<<` is an ordinary key whose value is the aliased mapping (sops encrypts the
/// copy under `<<` with its own path, so expanding the merge would break the paths).
fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    options.strict_booleans = true;
    options.merge_keys = serde_saphyr::MergeKeyPolicy::AsOrdinary;
    options
}

fn load_yaml(text: &str) -> Result<Vec<Node>, ErrorKind> {
    Ok(load_yaml_counting(text)?.0)
}

/// The documents, with their comments attached, and how many comments found no place.
fn load_yaml_counting(text: &str) -> Result<(Vec<Node>, usize), ErrorKind> {
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml_options())
        .map_err(|e| format_error(Format::Yaml, e.to_string()))?;
    let mut docs = docs
        .into_iter()
        .map(|doc| match doc {
            Value::Object(_) => Ok(Node::from_json(doc)),
            Value::Null => Ok(Node::Map(Vec::new())),
            _ => Err(format_error(
                Format::Yaml,
                "documents that are not mappings are not supported",
            )),
        })
        .collect::<Result<Vec<Node>, ErrorKind>>()?;
    let unkept = comments::attach(&mut docs, comments::scan(text));
    Ok((docs, unkept))
}

/// How many whole-line or end-of-line comments of a YAML file cannot be kept: the few this
/// crate finds no mapping or sequence for (those inside a flow collection written over several
/// lines). Every other comment is kept (and encrypted) where sops keeps it. A file that does not
/// parse counts none (reading it fails with its own error).
pub fn unkept_yaml_comments(data: &[u8]) -> usize {
    std::str::from_utf8(data)
        .ok()
        .and_then(|text| load_yaml_counting(text).ok())
        .map_or(0, |(_, unkept)| unkept)
}

fn load_json(text: &str) -> Result<Vec<Node>, ErrorKind> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format_error(Format::Json, e.to_string()))?;
    if !value.is_object() {
        return Err(format_error(
            Format::Json,
            "only JSON files with a top-level object are supported",
        ));
    }
    Ok(vec![Node::from_json(value)])
}

fn load_dotenv(text: &str) -> Result<Vec<Node>, ErrorKind> {
    let mut items = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            items.push(Item::Comment(comment.to_string()));
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| {
            // Never echo the line: it may hold a secret value.
            format_error(Format::Dotenv, format!("line {} has no '='", n + 1))
        })?;
        items.push(Item::Entry(
            key.to_string(),
            Node::Str(value.replace("\\n", "\n")),
        ));
    }
    Ok(vec![Node::Map(items)])
}

/// Reads a plaintext file into documents.
pub(crate) fn load_plain(data: &[u8], format: Format) -> Result<Vec<Node>, ErrorKind> {
    match format {
        Format::Binary => {
            let text = std::str::from_utf8(data).map_err(|_| {
                format_error(
                    Format::Binary,
                    "the file is not UTF-8 (sops stores binary files as a JSON string, which must be text)",
                )
            })?;
            Ok(vec![Node::Map(vec![Item::Entry(
                "data".into(),
                Node::Str(text.to_string()),
            )])])
        }
        Format::Yaml => load_yaml(as_text(data, format)?),
        Format::Json => load_json(as_text(data, format)?),
        Format::Dotenv => load_dotenv(as_text(data, format)?),
    }
}

/// Removes the metadata from the documents and parses it.
pub(crate) fn split_metadata(docs: &mut [Node], format: Format) -> Result<Metadata, ErrorKind> {
    if format == Format::Dotenv {
        let mut entries = Vec::new();
        if let Some(Node::Map(items)) = docs.first_mut() {
            items.retain(|item| match item {
                Item::Entry(key, Node::Str(value)) if key.starts_with("sops_") => {
                    entries.push((key["sops_".len()..].to_string(), value.clone()));
                    false
                }
                _ => true,
            });
        }
        if entries.is_empty() {
            return Err(ErrorKind::MetadataNotFound);
        }
        return Metadata::from_value(&metadata::unflatten(entries)?);
    }
    let mut found = None;
    for (i, doc) in docs.iter_mut().enumerate() {
        if let Node::Map(items) = doc {
            let mut taken = None;
            items.retain(|item| match item {
                Item::Entry(key, value) if key == "sops" => {
                    taken = Some(value.clone());
                    false
                }
                _ => true,
            });
            if i == 0 {
                found = taken;
            }
        }
    }
    let node = found.ok_or(ErrorKind::MetadataNotFound)?;
    Metadata::from_value(&node.into_json())
}

fn json_text(value: &Value) -> Result<String, ErrorKind> {
    // sops indents JSON with tabs by default.
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut ser)
        .map_err(|e| format_error(Format::Json, e.to_string()))?;
    out.push(b'\n');
    String::from_utf8(out).map_err(|_| format_error(Format::Json, "output is not UTF-8"))
}

/// Long single-line strings (every `ENC[...]` value) stay on one line, as sops writes them;
/// multi-line strings use literal blocks. Sequences are indented under their key, as sops
/// writes them: a comment ending a sequence then reads back as part of it (with `key:` and
/// `- item` in one column, go-yaml gives it to the next key, whose active comments it would
/// join).
fn yaml_writer() -> serde_saphyr::SerializerOptions {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = usize::MAX;
    options.compact_list_indent = false;
    options
}

/// Applies YAML merge keys in a decrypted tree: sops keeps `<<` as an ordinary key holding the
/// merged mapping(s), and a quoted `"<<"` key would lose the merge meaning in the output.
/// Entries of the mapping win over merged ones; earlier merged mappings win over later ones.
fn expand_merge_keys(node: &mut Node) {
    match node {
        Node::Seq(items) => items.iter_mut().for_each(expand_merge_keys),
        Node::Map(items) => {
            for item in items.iter_mut() {
                if let Item::Entry(_, value) = item {
                    expand_merge_keys(value);
                }
            }
            let Some(pos) = items
                .iter()
                .position(|i| matches!(i, Item::Entry(k, _) if k == "<<"))
            else {
                return;
            };
            let sources = match &items[pos] {
                Item::Entry(_, Node::Map(m)) => vec![m.clone()],
                Item::Entry(_, Node::Seq(list))
                    if list
                        .iter()
                        .all(|n| matches!(n, Node::Map(_) | Node::Comment(_))) =>
                {
                    list.iter()
                        .filter_map(|n| match n {
                            Node::Map(m) => Some(m.clone()),
                            _ => None,
                        })
                        .collect()
                }
                // Not a valid merge: keep it as the ordinary key it was.
                _ => return,
            };
            let own = |items: &[Item], key: &str| {
                items
                    .iter()
                    .any(|i| matches!(i, Item::Entry(k, _) if k == key))
            };
            let mut merged: Vec<Item> = Vec::new();
            for source in sources {
                for entry in source {
                    if let Item::Entry(k, v) = entry
                        && !own(items, &k)
                        && !own(&merged, &k)
                    {
                        merged.push(Item::Entry(k, v));
                    }
                }
            }
            items.splice(pos..=pos, merged);
        }
        _ => {}
    }
}

/// `plain`: the documents are decrypted, so merge keys can be applied (encrypted documents must
/// keep `<<` as a key: its values' paths go through it).
fn yaml_text(docs: Vec<Node>, plain: bool) -> Result<String, ErrorKind> {
    let mut out = String::new();
    for (i, mut doc) in docs.into_iter().enumerate() {
        if plain {
            expand_merge_keys(&mut doc);
        }
        if i > 0 {
            out.push_str("---\n");
        }
        let held = comments::Comments::of(&doc);
        let mut text = serde_saphyr::to_string_with_options(&doc.into_json(), yaml_writer())
            .map_err(|e| format_error(Format::Yaml, e.to_string()))?;
        if !held.is_empty() {
            text = comments::render(&text, held);
        }
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

fn dotenv_text(doc: &Node) -> Result<String, ErrorKind> {
    let Node::Map(items) = doc else {
        return Err(format_error(
            Format::Dotenv,
            "the document is not a mapping",
        ));
    };
    let mut out = String::new();
    for item in items {
        match item {
            Item::Comment(c) => {
                out.push('#');
                out.push_str(c);
                out.push('\n');
            }
            Item::Entry(key, value) => {
                let text = match value {
                    Node::Str(s) => s.replace('\n', "\\n"),
                    Node::Int(i) => i.to_string(),
                    Node::Float(f) => crate::tree::format_float(*f),
                    Node::Bool(b) => b.to_string(),
                    Node::Null => String::new(),
                    Node::Seq(_) | Node::Map(_) | Node::Comment(_) => {
                        return Err(format_error(
                            Format::Dotenv,
                            format!("key {key} has a nested value, which dotenv cannot hold"),
                        ));
                    }
                };
                out.push_str(key);
                out.push('=');
                out.push_str(&text);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Writes decrypted documents in a format.
pub(crate) fn emit_plain(docs: Vec<Node>, format: Format) -> Result<Vec<u8>, ErrorKind> {
    match format {
        Format::Binary => {
            if docs.len() != 1 {
                return Err(format_error(
                    Format::Binary,
                    "binary output needs exactly one document",
                ));
            }
            let Some(Node::Map(items)) = docs.into_iter().next() else {
                return Err(format_error(Format::Binary, "no data entry found"));
            };
            for item in items {
                if let Item::Entry(key, value) = item
                    && key == "data"
                {
                    return match value {
                        Node::Str(s) => Ok(s.into_bytes()),
                        _ => Err(format_error(
                            Format::Binary,
                            "the data entry is not a string",
                        )),
                    };
                }
            }
            Err(format_error(
                Format::Binary,
                "no data entry found (is this a binary sops file? choose the output type)",
            ))
        }
        Format::Json => {
            let first = docs
                .into_iter()
                .next()
                .ok_or_else(|| format_error(Format::Json, "no document"))?;
            Ok(json_text(&first.into_json())?.into_bytes())
        }
        Format::Yaml => Ok(yaml_text(docs, true)?.into_bytes()),
        Format::Dotenv => {
            let first = docs
                .first()
                .ok_or_else(|| format_error(Format::Dotenv, "no document"))?;
            Ok(dotenv_text(first)?.into_bytes())
        }
    }
}

/// Writes encrypted documents with their metadata.
pub(crate) fn emit_encrypted(
    mut docs: Vec<Node>,
    meta: &Metadata,
    format: Format,
) -> Result<Vec<u8>, ErrorKind> {
    let md = meta.to_value();
    match format {
        Format::Dotenv => {
            if let Some(Node::Map(items)) = docs.first_mut() {
                for (k, v) in metadata::flatten(&md) {
                    items.push(Item::Entry(k, Node::Str(v)));
                }
            }
            emit_plain(docs, Format::Dotenv)
        }
        Format::Yaml | Format::Json | Format::Binary => {
            for doc in docs.iter_mut() {
                if let Node::Map(items) = doc {
                    items.push(Item::Entry("sops".into(), Node::from_json(md.clone())));
                }
            }
            match format {
                Format::Yaml => Ok(yaml_text(docs, false)?.into_bytes()),
                _ => {
                    let first = docs
                        .into_iter()
                        .next()
                        .ok_or_else(|| format_error(format, "no document"))?;
                    Ok(json_text(&first.into_json())?.into_bytes())
                }
            }
        }
    }
}

/// Refuses keys that would collide with the metadata on encryption.
pub(crate) fn check_reserved(docs: &[Node], format: Format) -> Result<(), ErrorKind> {
    for doc in docs {
        if let Node::Map(items) = doc {
            for item in items {
                if let Item::Entry(key, _) = item {
                    let reserved = match format {
                        Format::Dotenv => key.starts_with("sops_"),
                        _ => key == "sops",
                    };
                    if reserved {
                        return Err(format_error(
                            format,
                            format!(
                                "key {key:?} is reserved for sops metadata (is the file already encrypted?)"
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keys_own_entries_and_earlier_sources_win() {
        let docs =
            load_yaml("a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  x: 0\n")
                .unwrap();
        let out = yaml_text(docs, true).unwrap();
        let v: Value = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(v["c"], serde_json::json!({"x": 0, "y": 1, "z": 2}));
        assert!(!out.contains("<<"), "{out}");
    }
}
