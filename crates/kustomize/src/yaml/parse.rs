//! YAML reading: a multi-document stream into JSON values, with go-yaml's scalar resolution,
//! line numbers in every error, and limits on nesting depth and alias expansion so hostile input
//! cannot exhaust the stack or memory.

use std::collections::HashMap;

use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

use super::resolve::{Resolved, resolve_plain};

/// Deepest nesting of collections accepted in one document.
pub const MAX_DEPTH: usize = 500;
/// Most nodes one file may expand to (aliases included).
pub const MAX_NODES: usize = 5_000_000;

/// A YAML syntax or structure error at a position of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} column {}: {}",
            self.line, self.column, self.message
        )
    }
}

enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
    },
    Map {
        map: Map<String, Value>,
        key: Option<(String, usize)>,
        merges: Vec<Value>,
        merge_pending: bool,
        anchor: usize,
        lines: HashMap<String, usize>,
    },
}

/// Parses every document of `text`. Empty documents are skipped (as kustomize does).
pub fn parse_documents(text: &str) -> Result<Vec<Value>, YamlError> {
    Ok(parse_documents_with_raw(text)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

/// A document and the source text of its top-level annotations that YAML typed as something
/// other than a string (key, source text, typed value).
pub struct Document {
    pub value: Value,
    pub raw_annotations: Vec<(String, String, Value)>,
    /// JSON pointers of the string values written quoted or as block scalars in the source
    /// whose text holds `${` (what Flux's postBuild substitution keeps a string).
    pub quoted_placeholders: Vec<String>,
}

/// Like [`parse_documents`], keeping the source text of non-string annotation values.
pub fn parse_documents_with_raw(text: &str) -> Result<Vec<Document>, YamlError> {
    parse_with(text, Booleans::Yaml12)
}

/// Parses every document as `sigs.k8s.io/yaml` (go-yaml v2) reads it, which is how Flux
/// re-reads an object after `postBuild` substitution: plain `yes`, `on`, `y` (and `no`,
/// `off`, `n`, in their three cases) are booleans there, as in YAML 1.1.
pub fn parse_documents_yaml11(text: &str) -> Result<Vec<Value>, YamlError> {
    Ok(parse_with(text, Booleans::Yaml11)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

/// Which plain scalars are booleans: `true`/`false` only (go-yaml v3, YAML 1.2), or also
/// YAML 1.1's yes/no/on/off/y/n (go-yaml v2).
#[derive(Clone, Copy, PartialEq)]
enum Booleans {
    Yaml12,
    Yaml11,
}

fn yaml11_boolean(text: &str) -> Option<bool> {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn parse_with(text: &str, booleans: Booleans) -> Result<Vec<Document>, YamlError> {
    let source = text;
    let mut raw_annotations: Vec<(String, String, Value)> = Vec::new();
    let mut quoted_placeholders: Vec<String> = Vec::new();
    let parser = Parser::new_from_str(text);
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, (Value, usize)> = HashMap::new();
    let mut nodes: usize = 0;
    for item in parser {
        let (event, span) = item.map_err(|e| YamlError {
            line: e.marker().line(),
            column: e.marker().col() + 1,
            message: e.info(),
        })?;
        let line = span.start.line();
        let column = span.start.col() + 1;
        let err = |message: String| YamlError {
            line,
            column,
            message,
        };
        let mut is_merge = false;
        let (value, anchor, weight) = match event {
            Event::DocumentStart(..) => {
                anchors.clear();
                raw_annotations.clear();
                quoted_placeholders.clear();
                continue;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::SequenceStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(err(format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(err(format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                stack.push(Frame::Map {
                    map: Map::new(),
                    key: None,
                    merges: Vec::new(),
                    merge_pending: false,
                    anchor,
                    lines: HashMap::new(),
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor }) => (Value::Array(items), anchor, 1),
                _ => return Err(err("unbalanced sequence end".into())),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map {
                    mut map,
                    merges,
                    anchor,
                    ..
                }) => {
                    for m in merges {
                        merge_into(&mut map, m).map_err(&err)?;
                    }
                    (Value::Object(map), anchor, 1)
                }
                _ => return Err(err("unbalanced mapping end".into())),
            },
            Event::Alias(id) => match anchors.get(&id) {
                Some((v, w)) => (v.clone(), 0, *w),
                None => return Err(err("unknown anchor".into())),
            },
            Event::Scalar(text, style, anchor, tag) => {
                is_merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<";
                let v = match yaml11_boolean(&text) {
                    Some(b)
                        if booleans == Booleans::Yaml11
                            && style == ScalarStyle::Plain
                            && tag.is_none() =>
                    {
                        Value::Bool(b)
                    }
                    _ => scalar_value(&text, style, tag.as_deref()).map_err(&err)?,
                };
                if style == ScalarStyle::Plain
                    && tag.is_none()
                    && !v.is_string()
                    && let Some(key) = top_level_annotation_key(&stack)
                {
                    // kustomize prints annotations as strings of their source text (`0644`
                    // stays "0644"); remember it. An empty value reaches us as "~", so look at
                    // the source to tell `a:` from `a: ~`.
                    let written_tilde = span
                        .start
                        .byte_offset()
                        .and_then(|o| source.get(o..))
                        .is_some_and(|rest| rest.starts_with('~'));
                    let raw = if &*text == "~" && !written_tilde {
                        String::new()
                    } else {
                        text.to_string()
                    };
                    raw_annotations.push((key, raw, v.clone()));
                }
                if style != ScalarStyle::Plain
                    && text.contains("${")
                    && let Some(pointer) = value_pointer(&stack)
                {
                    quoted_placeholders.push(pointer);
                }
                (v, anchor, 1)
            }
            _ => continue,
        };
        nodes = nodes.saturating_add(weight);
        if nodes > MAX_NODES {
            return Err(err(format!(
                "document expands to more than {MAX_NODES} nodes (alias bomb?)"
            )));
        }
        if anchor != 0 {
            anchors.insert(anchor, (value.clone(), weight));
        }
        match stack.last_mut() {
            None => {
                if !value.is_null() {
                    docs.push(Document {
                        value,
                        raw_annotations: std::mem::take(&mut raw_annotations),
                        quoted_placeholders: std::mem::take(&mut quoted_placeholders),
                    });
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map {
                map,
                key,
                merges,
                merge_pending,
                lines,
                ..
            }) => {
                if *merge_pending {
                    *merge_pending = false;
                    merges.push(value);
                } else if let Some((k, key_line)) = key.take() {
                    if let Some(prev) = lines.get(&k) {
                        return Err(YamlError {
                            line: key_line,
                            column: 1,
                            message: format!("mapping key {k:?} already defined at line {prev}"),
                        });
                    }
                    lines.insert(k.clone(), key_line);
                    map.insert(k, value);
                } else {
                    match value {
                        Value::String(_) if is_merge => *merge_pending = true,
                        Value::String(s) => *key = Some((s, line)),
                        Value::Null => *key = Some(("null".into(), line)),
                        Value::Bool(b) => *key = Some((b.to_string(), line)),
                        Value::Number(n) => *key = Some((n.to_string(), line)),
                        _ => {
                            return Err(err(
                                "mapping keys must be scalars (complex keys are not supported)"
                                    .into(),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(docs)
}

/// The JSON pointer of the value the next scalar completes, or None when that scalar is a
/// mapping key or a merge.
fn value_pointer(stack: &[Frame]) -> Option<String> {
    let mut pointer = String::new();
    for frame in stack {
        pointer.push('/');
        match frame {
            Frame::Seq { items, .. } => pointer.push_str(&items.len().to_string()),
            Frame::Map {
                key: Some((k, _)),
                merge_pending: false,
                ..
            } => pointer.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Frame::Map { .. } => return None,
        }
    }
    Some(pointer)
}

/// The key when the next value completes `metadata.annotations.<key>` of a document's root.
fn top_level_annotation_key(stack: &[Frame]) -> Option<String> {
    let pending = |f: &Frame, want: &str| match f {
        Frame::Map {
            key: Some((k, _)), ..
        } => k == want,
        _ => false,
    };
    if stack.len() != 3 || !pending(&stack[0], "metadata") || !pending(&stack[1], "annotations") {
        return None;
    }
    match &stack[2] {
        Frame::Map {
            key: Some((k, _)),
            merge_pending: false,
            ..
        } => Some(k.clone()),
        _ => None,
    }
}

fn merge_into(map: &mut Map<String, Value>, src: Value) -> Result<(), String> {
    match src {
        Value::Object(m) => {
            for (k, v) in m {
                if !map.contains_key(&k) {
                    map.insert(k, v);
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for it in items {
                merge_into(map, it)?;
            }
            Ok(())
        }
        _ => Err("map merge requires map or sequence of maps as the value".into()),
    }
}

fn scalar_value(
    text: &str,
    style: ScalarStyle,
    tag: Option<&serde_saphyr::granit_parser::Tag>,
) -> Result<Value, String> {
    if let Some(tag) = tag {
        let core = tag.handle() == "tag:yaml.org,2002:";
        let suffix = tag.suffix();
        if core {
            return match suffix {
                "str" | "binary" => Ok(Value::String(text.to_string())),
                "null" => Ok(Value::Null),
                "bool" | "int" | "float" => match resolve_plain(text) {
                    Resolved::Value(v) if !v.is_string() => Ok(v),
                    _ => Err(format!("cannot decode {text:?} as !!{suffix}")),
                },
                "timestamp" => Ok(Value::String(text.to_string())),
                _ => Ok(Value::String(text.to_string())),
            };
        }
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_string()));
    }
    match resolve_plain(text) {
        Resolved::Value(v) => Ok(v),
        Resolved::Merge => Ok(Value::String("<<".into())),
        Resolved::NonFinite => Err(format!("{text} cannot be represented in JSON")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_go_yaml() {
        let docs =
            parse_documents("a: 0644\nb: yes\nc: 0x1F\nd: 1.0\ne: 2001-12-14\nf: ~\n").unwrap();
        assert_eq!(
            docs[0],
            serde_json::json!({"a": 420, "b": "yes", "c": 31, "d": 1, "e": "2001-12-14T00:00:00Z", "f": null})
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "[".repeat(10_000) + &"]".repeat(10_000);
        let e = parse_documents(&text).unwrap_err();
        assert!(
            e.message.contains("nesting") || e.message.contains("recursion limit"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_key_names_line() {
        let e = parse_documents("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.line, 3);
    }
}
