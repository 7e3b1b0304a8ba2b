//! YAML reading: a multi-document stream into JSON values, with go-yaml's scalar resolution,
//! line numbers in every error, and limits on nesting depth and alias expansion so hostile input
//! cannot exhaust the stack or memory.

use std::collections::HashMap;

use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{ErrorKind, Event, Options, Parser, ScalarStyle};

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
    /// What is wrong there, in go-yaml's words where we know them.
    pub message: String,
    /// What kind of fault it is, for callers that word errors as another YAML library does.
    pub fault: Fault,
}

/// The kind of a [`YamlError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A syntax error of the YAML parser (saphyr's kind; `line` and `column` are its marker).
    Syntax(ErrorKind),
    /// Collections nested deeper than the limit; `mapping` says whether the collection that
    /// opened the level too many is a mapping (else a sequence).
    TooDeep {
        /// The collection over the limit is a mapping.
        mapping: bool,
    },
    /// A mapping or sequence used as a mapping key (e.g. a template's `{{ x }}` left in a
    /// file): the key.
    ComplexKey(Box<Value>),
    /// Any other fault (anchors, keys, merges, node count).
    Other,
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
    /// The document as JSON.
    pub value: Value,
    /// `metadata.annotations` entries typed as non-strings: key, source text, typed value.
    pub raw_annotations: Vec<(String, String, Value)>,
    /// JSON pointers of the string values written quoted or as block scalars in the source
    /// whose text holds `${` (what Flux's postBuild substitution keeps a string).
    pub quoted_placeholders: Vec<String>,
}

/// Like [`parse_documents`], keeping the source text of non-string annotation values.
pub fn parse_documents_with_raw(text: &str) -> Result<Vec<Document>, YamlError> {
    parse_with(text, Booleans::Yaml12, MAX_DEPTH)
}

/// Parses every document as `sigs.k8s.io/yaml` (go-yaml v2) reads it, which is how Flux
/// re-reads an object after `postBuild` substitution: plain `yes`, `on`, `y` (and `no`,
/// `off`, `n`, in their three cases) are booleans there, as in YAML 1.1.
pub fn parse_documents_yaml11(text: &str) -> Result<Vec<Value>, YamlError> {
    Ok(parse_with(text, Booleans::Yaml11, MAX_DEPTH)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

/// Like [`parse_documents_yaml11`], but a key repeated in a mapping replaces the earlier value,
/// as go-yaml v2's non-strict decoding into `interface{}` does (how Helm reads values files,
/// Chart.yaml and rendered manifests; `y: 1` and `yes: 2` are then the one key `"true"`).
pub fn parse_documents_yaml11_last_key_wins(text: &str) -> Result<Vec<Value>, YamlError> {
    parse_documents_yaml11_last_key_wins_with_depth(text, MAX_DEPTH)
}

/// [`parse_documents_yaml11_last_key_wins`] with another nesting limit (Helm reads values
/// nested up to Go's JSON limit of 10,000 levels). The reader keeps its own stack, so a deep
/// document costs heap, not call stack; what the caller does with the value is its concern.
pub fn parse_documents_yaml11_last_key_wins_with_depth(
    text: &str,
    max_depth: usize,
) -> Result<Vec<Value>, YamlError> {
    Ok(parse_with(text, Booleans::Yaml11LastKeyWins, max_depth)?
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
    /// YAML 1.1 booleans, and a key repeated in one mapping replaces the earlier value instead
    /// of failing (go-yaml v2's non-strict decoding into `interface{}`, which Helm uses).
    Yaml11LastKeyWins,
}

fn yaml11_boolean(text: &str) -> Option<bool> {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn parse_with(
    text: &str,
    booleans: Booleans,
    max_depth: usize,
) -> Result<Vec<Document>, YamlError> {
    let source = text;
    let mut raw_annotations: Vec<(String, String, Value)> = Vec::new();
    let mut quoted_placeholders: Vec<String> = Vec::new();
    let mut options = Options::default();
    if max_depth > MAX_DEPTH {
        // The parser's own limits (255 by default) must not cut in before ours.
        options.flow_nesting_limit = max_depth + 1;
        options.block_nesting_limit = max_depth + 1;
    }
    let parser = Parser::new_from_str_with_options(text, options);
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, (Value, usize)> = HashMap::new();
    let mut nodes: usize = 0;
    for item in parser {
        let (event, span) = item.map_err(|e| YamlError {
            line: e.marker().line(),
            column: e.marker().col() + 1,
            message: e.info(),
            fault: Fault::Syntax(e.kind().clone()),
        })?;
        let line = span.start.line();
        let column = span.start.col() + 1;
        let err = |message: String| YamlError {
            line,
            column,
            message,
            fault: Fault::Other,
        };
        let too_deep = |mapping: bool| YamlError {
            line,
            column,
            message: format!("nesting deeper than {max_depth} levels"),
            fault: Fault::TooDeep { mapping },
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
                if stack.len() >= max_depth {
                    return Err(too_deep(false));
                }
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                if stack.len() >= max_depth {
                    return Err(too_deep(true));
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
                let text = match style {
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        let header = span
                            .start
                            .byte_offset()
                            .and_then(|o| source.get(o..))
                            .unwrap_or("");
                        let at_end = span.end.byte_offset().is_some_and(|o| {
                            source.get(o..).is_some_and(|rest| rest.trim().is_empty())
                        });
                        let ends_in_break = source.ends_with('\n') || source.ends_with('\r');
                        // The folded write-read is kustomize's (kyaml keeps styles); readers
                        // of sigs.k8s.io/yaml (Helm values, postBuild) never write in between.
                        match block_scalar_as_go_yaml(
                            &text,
                            style == ScalarStyle::Folded && booleans == Booleans::Yaml12,
                            header,
                            at_end && !ends_in_break,
                        ) {
                            Some(t) => t.into(),
                            None => text,
                        }
                    }
                    _ => text,
                };
                is_merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<";
                let v = match yaml11_boolean(&text) {
                    Some(b)
                        if booleans != Booleans::Yaml12
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
                    if let Some(prev) = lines
                        .get(&k)
                        .filter(|_| booleans != Booleans::Yaml11LastKeyWins)
                    {
                        return Err(YamlError {
                            line: key_line,
                            column: 1,
                            message: format!("mapping key {k:?} already defined at line {prev}"),
                            fault: Fault::Other,
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
                        complex => {
                            return Err(YamlError {
                                fault: Fault::ComplexKey(Box::new(complex)),
                                ..err(
                                    "mapping keys must be scalars (complex keys are not supported)"
                                        .into(),
                                )
                            });
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

/// The chomping indicator of a block scalar header (`|-`, `>+2`, `|`): -1 strip, 1 keep, 0 clip.
fn chomping(header: &str) -> i8 {
    for c in header.chars().skip(1) {
        match c {
            '-' => return -1,
            '+' => return 1,
            '1'..='9' => continue,
            _ => break,
        }
    }
    0
}

/// A block scalar's text as kustomize ends up holding it, where that differs from saphyr's
/// reading; `None` when it does not.
///
/// Two differences are known. go-yaml ends a clipped scalar that runs to the end of an input
/// without a final line break without one (saphyr adds it). And kustomize writes every resource
/// with go-yaml v3 and reads it again, keeping each scalar's style: v3's folded writer puts an
/// extra line break after a line that does not start with a blank (it tests the value's first
/// character where it means the next line's), which the reader keeps wherever folding does not
/// apply — before a more-indented line, and at the end under `+` chomping.
fn block_scalar_as_go_yaml(
    text: &str,
    folded: bool,
    header: &str,
    ends_unterminated_input: bool,
) -> Option<String> {
    let chomp = chomping(header);
    let mut out = None;
    if ends_unterminated_input && chomp == 0 && text.ends_with('\n') {
        out = Some(text[..text.len() - 1].to_string());
    }
    if folded {
        let current = out.as_deref().unwrap_or(text);
        let rewritten = folded_write_read(current);
        if rewritten != current {
            out = Some(rewritten);
        }
    }
    out
}

/// go-yaml v3's folded-scalar writer followed by its block-scalar reader, for a value that the
/// writer keeps in folded style. Values holding other line breaks than `\n` are left alone
/// (not seen in practice; modelled nowhere else here either).
fn folded_write_read(value: &str) -> String {
    if value.is_empty() || value.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return value.to_string();
    }
    let blank = |c: Option<char>| matches!(c, Some(' ' | '\t'));
    // The writer: the test that should look at the line after the break looks at the value's
    // first character instead.
    let first_is_blankz = matches!(value.chars().find(|&c| c != '\n'), None | Some(' ' | '\t'));
    let mut written = String::with_capacity(value.len() + 8);
    let (mut breaks, mut leading_spaces) = (true, true);
    for c in value.chars() {
        if c == '\n' {
            if !breaks && !leading_spaces && !first_is_blankz {
                written.push('\n');
            }
            written.push('\n');
            breaks = true;
        } else {
            if breaks {
                leading_spaces = c == ' ' || c == '\t';
            }
            written.push(c);
            breaks = false;
        }
    }
    let chomp = if !value.ends_with('\n') {
        -1
    } else if value.len() == 1 || value[..value.len() - 1].ends_with('\n') {
        1
    } else {
        0
    };
    // The reader, over the written lines (each followed by a line break: the document goes on).
    if !written.ends_with('\n') {
        written.push('\n');
    }
    let lines: Vec<&str> = written[..written.len() - 1].split('\n').collect();
    let mut s = String::with_capacity(value.len());
    let (mut leading_break, mut trailing_breaks) = (false, 0usize);
    let mut leading_blank = false;
    let mut i = 0;
    while i < lines.len() && lines[i].is_empty() {
        trailing_breaks += 1;
        i += 1;
    }
    while i < lines.len() {
        let line = lines[i];
        let trailing_blank = blank(line.chars().next());
        if leading_break && !leading_blank && !trailing_blank {
            if trailing_breaks == 0 {
                s.push(' ');
            }
        } else if leading_break {
            s.push('\n');
        }
        s.extend(std::iter::repeat_n('\n', trailing_breaks));
        trailing_breaks = 0;
        leading_blank = trailing_blank;
        s.push_str(line);
        leading_break = true;
        i += 1;
        while i < lines.len() && lines[i].is_empty() {
            trailing_breaks += 1;
            i += 1;
        }
    }
    if chomp != -1 && leading_break {
        s.push('\n');
    }
    if chomp == 1 {
        s.extend(std::iter::repeat_n('\n', trailing_breaks));
    }
    s
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
    fn block_scalars_read_as_kustomize_holds_them() {
        let doc = |t: &str| parse_documents(t).unwrap().remove(0);
        // A clipped literal ending an input with no final line break gets none.
        assert_eq!(doc("a: |\n  x\n  y"), serde_json::json!({"a": "x\ny"}));
        assert_eq!(doc("a: |\n  x\n  y\n"), serde_json::json!({"a": "x\ny\n"}));
        // Folded: a more-indented line gets the extra line break go-yaml v3's writer puts there.
        assert_eq!(
            doc("a: >-\n  f(c,\n    more\n  )\nb: 1\n"),
            serde_json::json!({"a": "f(c,\n\n  more\n)", "b": 1})
        );
        assert_eq!(
            doc("a: >+\n  x\n  y\n\nb: >+\n  x\n\n    y\n\n\n"),
            serde_json::json!({"a": "x y\n\n\n", "b": "x\n\n\n  y\n\n\n"})
        );
        // Plain folding round-trips unchanged.
        assert_eq!(
            doc("y: >-\n  one\n  two\n\n  three\nz: >2\n    lead\n  normal\n  again\n"),
            serde_json::json!({"y": "one two\nthree", "z": "  lead\nnormal again\n"})
        );
        // Only kustomize writes between its reads: sigs.k8s.io/yaml keeps the value as read.
        assert_eq!(
            parse_documents_yaml11("a: >-\n  f(c,\n    more\n  )\n").unwrap()[0],
            serde_json::json!({"a": "f(c,\n  more\n)"})
        );
    }

    #[test]
    fn duplicate_key_names_line() {
        let e = parse_documents("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.line, 3);
    }
}
