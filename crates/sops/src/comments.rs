//! YAML comments, which the YAML reader drops. sops keeps every comment as an item of the
//! mapping or sequence that holds it: in a mapping, before the key it precedes (a comment at
//! the end of a key's line moves before that key) or at the mapping's end; in a sequence,
//! before the item it precedes (a comment at the end of a plain item's line moves before that
//! item) or at the sequence's end. It encrypts them with the holder's path. This module finds
//! comments with a line scan of block-style YAML, attaches them to the loaded tree in the same
//! places (as go-yaml v3, which sops uses, assigns them), and writes them back into emitted
//! YAML.
//!
//! The scan follows block structure by indentation only: it recognises keys, sequence items,
//! block scalars, quoted scalars spanning lines and flow collections spanning lines, and
//! never needs to understand values. The few comments it cannot place (inside a flow
//! collection written over several lines) are counted, so callers can say they were left out.

use std::collections::HashMap;

use crate::tree::{Item, Node};

/// One step from a document's root to a mapping or sequence.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Step {
    Key(String),
    Index(usize),
}

/// Where in its holder (a mapping or a sequence) a comment goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Anchor {
    /// Before this key of a mapping.
    Key(String),
    /// Before this item of a sequence (counting data items only, not comments).
    Item(usize),
    /// At the end of the mapping or sequence.
    End,
}

/// Where a comment goes: at `anchor` in the mapping or sequence at `path`.
#[derive(Debug, Clone, PartialEq)]
struct Placement {
    doc: usize,
    path: Vec<Step>,
    anchor: Anchor,
    text: String,
}

/// What the scan found in a text: placed comments and the number it could not place.
#[derive(Debug, Default)]
pub(crate) struct Found {
    placed: Vec<Placement>,
    pub(crate) unplaced: usize,
}

#[derive(Debug)]
enum Frame {
    Map {
        col: usize,
        path: Vec<Step>,
        last: Option<String>,
    },
    Seq {
        col: usize,
        path: Vec<Step>,
        next: usize,
    },
}

impl Frame {
    fn col(&self) -> usize {
        match self {
            Frame::Map { col, .. } | Frame::Seq { col, .. } => *col,
        }
    }

    fn path(&self) -> &Vec<Step> {
        match self {
            Frame::Map { path, .. } | Frame::Seq { path, .. } => path,
        }
    }

    fn into_path(self) -> Vec<Step> {
        match self {
            Frame::Map { path, .. } | Frame::Seq { path, .. } => path,
        }
    }
}

/// A structural line: what it opens, where, and any comment at its end.
#[derive(Debug, PartialEq)]
enum Event {
    /// A key at `col` of the mapping at `path`.
    Key {
        path: Vec<Step>,
        key: String,
        col: usize,
        inline: Option<String>,
    },
    /// A value that is no key: a plain sequence item, or a value on the line after its key.
    /// `anchor` is where a comment before it or at its end goes.
    Value {
        anchor: Option<(Vec<Step>, Anchor)>,
        inline: Option<String>,
    },
    /// The end of a quoted or flow value that began on an earlier line, with a comment after
    /// it (sops moves it before the value's key or item).
    LateInline {
        path: Vec<Step>,
        anchor: Anchor,
        text: String,
    },
    /// A value continuing over lines, or a bare `-`.
    Other,
}

/// The indentation-driven walk shared by the scan (of input) and the writer (of output).
#[derive(Default)]
struct Walker {
    stack: Vec<Frame>,
    /// Lines deeper than this column belong to the previous value (block scalar, folded plain
    /// scalar); blank lines too.
    value_deeper_than: Option<usize>,
    /// Inside a quoted scalar or a flow collection that continues on the next line.
    open: Option<Open>,
    /// Mappings and sequences closed by the last line, innermost first: (path, column).
    closed: Vec<(Vec<Step>, usize)>,
    /// Sequence items the last line began, outermost first: (sequence path, index, column).
    items: Vec<(Vec<Step>, usize, usize)>,
    /// A comment right after a bare `-` on the last line: (column, text).
    after_dash: Option<(usize, String)>,
    /// Where a comment goes that ends the value in `open`.
    open_anchor: Option<(Vec<Step>, Anchor)>,
}

#[derive(Debug, Clone, Copy)]
enum Open {
    Double,
    Single,
    Flow(usize),
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Whether a line is a whole-line comment, and its text after `#`.
fn whole_line_comment(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start_matches(' ');
    t.strip_prefix('#').map(|text| (indent(line), text))
}

fn is_document_marker(line: &str) -> bool {
    let l = line.trim_end();
    l == "---" || l.starts_with("--- ") || l == "..." || l.starts_with("... ")
}

impl Walker {
    fn reset(&mut self) {
        *self = Walker::default();
    }

    /// The open mappings and sequences from innermost out: (path, column).
    fn open_containers(&self) -> impl Iterator<Item = (&Vec<Step>, usize)> {
        self.stack.iter().rev().map(|f| (f.path(), f.col()))
    }

    /// Reads one line that is neither blank nor a whole-line comment nor a document marker
    /// (callers check those first, except inside values, see [`Walker::in_value`]).
    fn line(&mut self, line: &str) -> Event {
        self.closed.clear();
        self.items.clear();
        self.after_dash = None;
        if let Some(open) = self.open {
            let (still, rest) = continue_open(line, open);
            self.open = still;
            if still.is_none()
                && let Some((path, anchor)) = self.open_anchor.take()
                && let Some(text) = rest.and_then(trailing_comment)
            {
                return Event::LateInline { path, anchor, text };
            }
            return Event::Other;
        }
        let col = indent(line);
        if let Some(deeper) = self.value_deeper_than {
            if line.trim().is_empty() || col > deeper {
                return Event::Other;
            }
            self.value_deeper_than = None;
        }
        self.structural(&line[col..], col)
    }

    /// Whether the next line (blank or starting with `#`) is part of a value rather than YAML
    /// structure: inside a block scalar or a multi-line quoted or flow scalar.
    fn in_value(&self, line: &str) -> bool {
        if self.open.is_some() {
            return true;
        }
        match self.value_deeper_than {
            Some(deeper) => line.trim().is_empty() || indent(line) > deeper,
            None => false,
        }
    }

    fn close_top(&mut self) {
        if let Some(frame) = self.stack.pop() {
            let col = frame.col();
            self.closed.push((frame.into_path(), col));
        }
    }

    fn pop_to(&mut self, col: usize, keep_equal: bool) {
        while let Some(top) = self.stack.last() {
            let c = top.col();
            if c > col || (c == col && !keep_equal) {
                self.close_top();
            } else {
                break;
            }
        }
    }

    /// The path of the value a new container at `col` belongs to.
    fn child_path(&mut self) -> Vec<Step> {
        match self.stack.last_mut() {
            None => Vec::new(),
            Some(Frame::Map { path, last, .. }) => {
                let mut p = path.clone();
                if let Some(k) = last {
                    p.push(Step::Key(k.clone()));
                }
                p
            }
            Some(Frame::Seq { path, next, .. }) => {
                let mut p = path.clone();
                p.push(Step::Index(next.saturating_sub(1)));
                p
            }
        }
    }

    /// Where a comment before (or ending) a value that is no key goes: before the item this
    /// line began, or before the key whose value it is.
    fn value_anchor(&self) -> Option<(Vec<Step>, Anchor)> {
        if let Some((path, index, _)) = self.items.last() {
            return Some((path.clone(), Anchor::Item(*index)));
        }
        match self.stack.last()? {
            Frame::Map {
                path,
                last: Some(key),
                ..
            } => Some((path.clone(), Anchor::Key(key.clone()))),
            Frame::Seq { path, next, .. } if *next > 0 => {
                Some((path.clone(), Anchor::Item(next - 1)))
            }
            _ => None,
        }
    }

    /// Reads the structure of a line's `content` (what follows its indentation), which starts
    /// at column `col`.
    fn structural(&mut self, content: &str, col: usize) -> Event {
        if is_dash(content) {
            // A sequence item at `col`: a sibling, or the value of the map key at the same
            // column (`key:` then `- a` unindented), or a new nested sequence.
            self.pop_to(col, true);
            let continues =
                matches!(self.stack.last(), Some(Frame::Seq { col: c, .. }) if *c == col);
            if !continues {
                let path = self.child_path();
                self.stack.push(Frame::Seq { col, path, next: 0 });
            }
            let Some(Frame::Seq { next, path, .. }) = self.stack.last_mut() else {
                return Event::Other;
            };
            *next += 1;
            self.items.push((path.clone(), *next - 1, col));
            let after = &content[1..];
            let rest = after.trim_start_matches(' ');
            let rest_col = col + 1 + (after.len() - rest.len());
            if let Some(text) = rest.strip_prefix('#') {
                self.after_dash = Some((rest_col, text.to_string()));
                return Event::Other;
            }
            if rest.is_empty() {
                return Event::Other;
            }
            return self.structural(rest, rest_col);
        }
        // A key, or a value on its own line.
        let Some((key, after_colon)) = split_key(content) else {
            // A value that is no key: a sequence item's (`- a`, reached through the dash
            // above) or one on the line after its key. Everything deeper continues it.
            self.value_deeper_than = Some(col.saturating_sub(1));
            let inline = self.scan_value(content.trim_start(), col);
            let anchor = self.value_anchor();
            if self.open.is_some() {
                self.open_anchor = anchor.clone();
            }
            return Event::Value { anchor, inline };
        };
        // A sequence at this column ends where a key of the enclosing map appears.
        self.pop_to(col, true);
        if matches!(self.stack.last(), Some(Frame::Seq { col: c, .. }) if *c == col) {
            self.close_top();
        }
        let same_map = matches!(self.stack.last(), Some(Frame::Map { col: c, .. }) if *c == col);
        if !same_map {
            let path = self.child_path();
            self.stack.push(Frame::Map {
                col,
                path,
                last: None,
            });
        }
        let Some(Frame::Map { path, last, .. }) = self.stack.last_mut() else {
            return Event::Other;
        };
        *last = Some(key.clone());
        let path = path.clone();
        let inline = self.scan_value(after_colon.trim_start_matches(' '), col);
        self.open_anchor = self.open.map(|_| (path.clone(), Anchor::Key(key.clone())));
        Event::Key {
            path,
            key,
            col,
            inline,
        }
    }

    /// Looks at a value after `key:` (or on its own line) at a key column `col`: sets up
    /// what its following lines are, and returns a comment at the line's end.
    fn scan_value(&mut self, value: &str, col: usize) -> Option<String> {
        let mut v = value;
        // Anchors and tags come before the value itself.
        while let Some(first) = v.chars().next() {
            if first != '&' && first != '!' {
                break;
            }
            let end = v.find(' ').unwrap_or(v.len());
            v = v[end..].trim_start_matches(' ');
        }
        let first = v.chars().next();
        match first {
            None => None,
            Some('#') => Some(v[1..].to_string()),
            Some('|') | Some('>') => {
                self.value_deeper_than = Some(col);
                v.find(" #").map(|i| v[i + 2..].to_string())
            }
            Some('"') | Some('\'') => {
                let quote = if first == Some('"') {
                    Open::Double
                } else {
                    Open::Single
                };
                match close_quote(&v[1..], quote) {
                    Some(end) => trailing_comment(&v[1 + end..]),
                    None => {
                        self.open = Some(quote);
                        None
                    }
                }
            }
            Some('[') | Some('{') => match close_flow(v, 0) {
                Ok(end) => trailing_comment(&v[end..]),
                Err(depth) => {
                    self.open = Some(Open::Flow(depth));
                    None
                }
            },
            Some(_) => {
                // A plain scalar may continue on deeper lines.
                self.value_deeper_than = Some(col);
                v.find(" #").map(|i| v[i + 2..].to_string())
            }
        }
    }
}

fn is_dash(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// Splits `key: rest` (plain, double- or single-quoted key) into the key and what follows the
/// colon; `None` when the line is not a mapping entry.
fn split_key(content: &str) -> Option<(String, &str)> {
    let first = content.chars().next()?;
    let (key, rest) = match first {
        '"' | '\'' => {
            let quote = if first == '"' {
                Open::Double
            } else {
                Open::Single
            };
            let end = close_quote(&content[1..], quote)?;
            let raw = &content[1..end];
            let key = match quote {
                Open::Double => unescape_double(raw),
                _ => raw.replace("''", "'"),
            };
            (key, content[1 + end..].trim_start_matches(' '))
        }
        '#' | '[' | '{' | '|' | '>' | '*' | '?' | '%' | '@' | '`' => return None,
        _ => {
            let colon = find_key_colon(content)?;
            (content[..colon].trim_end().to_string(), &content[colon..])
        }
    };
    let after = rest.strip_prefix(':')?;
    if after.is_empty() || after.starts_with(' ') {
        Some((key, after))
    } else {
        None
    }
}

/// The position of the `:` ending a plain key: the first `:` followed by a space or the end,
/// before any ` #` comment.
fn find_key_colon(content: &str) -> Option<usize> {
    let bytes = content.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'#' if i > 0 && bytes[i - 1] == b' ' => return None,
            b':' if i + 1 == bytes.len() || bytes[i + 1] == b' ' => return Some(i),
            _ => {}
        }
    }
    None
}

fn unescape_double(raw: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or_else(|_| raw.to_string())
}

/// The index (in `s`, which starts after the opening quote) just past the closing quote.
fn close_quote(s: &str, quote: Open) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match (quote, bytes[i]) {
            (Open::Double, b'\\') => i += 2,
            (Open::Double, b'"') => return Some(i + 1),
            (Open::Single, b'\'') => {
                if bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Where a flow collection starting in `s` (at depth `depth` already) closes: `Ok(index past
/// it)`, or `Err(depth still open)` at the end of the line.
fn close_flow(s: &str, mut depth: usize) -> Result<usize, usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            q @ (b'"' | b'\'') => {
                let quote = if q == b'"' {
                    Open::Double
                } else {
                    Open::Single
                };
                match close_quote(&s[i + 1..], quote) {
                    Some(end) => i += end,
                    // A quote left open inside a flow collection: treat the rest as text.
                    None => return Err(depth.max(1)),
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(depth)
}

/// After a complete value, the comment that ends the line, if any.
fn trailing_comment(rest: &str) -> Option<String> {
    let t = rest.trim_start_matches(' ');
    t.strip_prefix('#').map(str::to_string)
}

/// Follows a quoted scalar or flow collection onto a new line: what is still open (`None` once
/// it has closed) and, when it closed, the rest of the line after it.
fn continue_open(line: &str, open: Open) -> (Option<Open>, Option<&str>) {
    match open {
        Open::Double | Open::Single => match close_quote(line, open) {
            Some(end) => (None, Some(&line[end..])),
            None => (Some(open), None),
        },
        Open::Flow(depth) => match close_flow(line, depth) {
            Ok(end) => (None, Some(&line[end..])),
            Err(depth) => (Some(Open::Flow(depth)), None),
        },
    }
}

fn place(found: &mut Found, doc: usize, path: Vec<Step>, anchor: Anchor, text: String) {
    found.placed.push(Placement {
        doc,
        path,
        anchor,
        text,
    })
}

/// Places the comments written before a line at column `col` that closes containers deeper
/// than it, as go-yaml v3 (whose placement sops keeps) assigns them: the first run of
/// comments at one column ends the innermost container, whatever its column (unless it is the
/// only run and not deeper than the line); each later run deeper than the line ends the
/// innermost container not deeper than the run. Returns the comments left for the line itself.
/// These rules were checked case by case against sops 3.11; they also read back every
/// comment as [`render`] writes it.
fn place_ending(
    walker: &Walker,
    pending: Vec<(usize, String)>,
    col: usize,
    found: &mut Found,
    doc: usize,
) -> Vec<(usize, String)> {
    if !walker.open_containers().any(|(_, c)| c > col) {
        return pending;
    }
    let mut runs: Vec<(usize, Vec<String>)> = Vec::new();
    for (c, text) in pending {
        match runs.last_mut() {
            Some((run_col, texts)) if *run_col == c => texts.push(text),
            _ => runs.push((c, vec![text])),
        }
    }
    let several = runs.len() > 1;
    let mut left = Vec::new();
    for (i, (c, texts)) in runs.into_iter().enumerate() {
        let holder = if i == 0 && (c > col || several) {
            walker.open_containers().next()
        } else if c <= col {
            left.extend(texts.into_iter().map(|t| (c, t)));
            continue;
        } else {
            walker.open_containers().find(|(_, m)| *m <= c)
        };
        match holder.map(|(p, _)| p.clone()) {
            Some(path) => {
                for text in texts {
                    place(found, doc, path.clone(), Anchor::End, text);
                }
            }
            None => left.extend(texts.into_iter().map(|t| (c, t))),
        }
    }
    left
}

/// Places the comments left at the end of a document: as before a line at column 0 (in an
/// encrypted file, the `sops:` key follows), then what stays ends the root mapping. When
/// nothing deeper than column 0 is open, by their column (a sequence written at column 0 holds
/// the comments after it).
fn place_document_end(
    walker: &Walker,
    pending: &mut Vec<(usize, String)>,
    found: &mut Found,
    doc: usize,
) {
    let closing = walker.open_containers().any(|(_, c)| c > 0);
    let rest = place_ending(walker, std::mem::take(pending), 0, found, doc);
    for (col, text) in rest {
        // A document of comments only: they belong to its (empty) root mapping.
        let path = walker
            .open_containers()
            .find(|(_, c)| !closing && *c <= col)
            .or_else(|| walker.open_containers().last())
            .map(|(p, _)| p.clone())
            .unwrap_or_default();
        place(found, doc, path, Anchor::End, text);
    }
}

/// Places the whole-line comments written before a structural line, and the comment at its
/// end, by what the line holds (`event`, read by `walker`). Comments with no holder there are
/// counted as unplaced.
fn place_before_line(
    walker: &Walker,
    event: Event,
    pending: &mut Vec<(usize, String)>,
    found: &mut Found,
    doc: usize,
) {
    // Before a line beginning a sequence item, they are items of that sequence.
    if let Some((path, index, _)) = walker.items.first() {
        for (_, text) in pending.drain(..) {
            place(found, doc, path.clone(), Anchor::Item(*index), text);
        }
    }
    match event {
        Event::Key {
            path, key, inline, ..
        } => {
            for (_, text) in pending.drain(..) {
                place(found, doc, path.clone(), Anchor::Key(key.clone()), text);
            }
            if let Some(text) = inline {
                place(found, doc, path, Anchor::Key(key), text);
            }
        }
        Event::Value { anchor, inline } => {
            let texts = pending.drain(..).map(|(_, t)| t).chain(inline);
            match anchor {
                Some((path, anchor)) => {
                    for text in texts {
                        place(found, doc, path.clone(), anchor.clone(), text);
                    }
                }
                None => found.unplaced += texts.count(),
            }
        }
        Event::LateInline { .. } | Event::Other => found.unplaced += std::mem::take(pending).len(),
    }
}

/// Finds the comments of a YAML text and where sops would keep them.
pub(crate) fn scan(text: &str) -> Found {
    let mut found = Found::default();
    let mut walker = Walker::default();
    let mut doc = 0;
    let mut doc_has_content = false;
    // Whole-line comments waiting for what they precede: (column, text).
    let mut pending: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        if walker.in_value(line) {
            // go-yaml keeps a comment inside a flow collection as an item of it; this scan
            // does not follow flow items, so it says it cannot keep it.
            if matches!(walker.open, Some(Open::Flow(_))) && whole_line_comment(line).is_some() {
                found.unplaced += 1;
                continue;
            }
            if let Event::LateInline { path, anchor, text } = walker.line(line) {
                place(&mut found, doc, path, anchor, text);
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if is_document_marker(line) {
            place_document_end(&walker, &mut pending, &mut found, doc);
            if doc_has_content {
                doc += 1;
                doc_has_content = false;
            }
            walker.reset();
            continue;
        }
        if let Some((col, text)) = whole_line_comment(line) {
            pending.push((col, text.to_string()));
            continue;
        }
        doc_has_content = true;
        let col = indent(line);
        pending = place_ending(&walker, pending, col, &mut found, doc);
        let event = walker.line(line);
        place_before_line(&walker, event, &mut pending, &mut found, doc);
        // `- # text`: placed by what the next line holds, like a whole-line comment.
        if let Some(dangling) = walker.after_dash.take() {
            pending.push(dangling);
        }
    }
    place_document_end(&walker, &mut pending, &mut found, doc);
    found
}

/// Puts scanned comments into the loaded documents; returns how many found no place (their
/// container, key or item was not in the tree).
pub(crate) fn attach(docs: &mut [Node], found: Found) -> usize {
    let mut missed = found.unplaced;
    for p in found.placed {
        let Some(node) = docs.get_mut(p.doc).and_then(|d| walk_mut(d, &p.path)) else {
            missed += 1;
            continue;
        };
        let placed = match (node, p.anchor) {
            (Node::Map(items), Anchor::Key(key)) => items
                .iter()
                .position(|i| matches!(i, Item::Entry(k, _) if *k == key))
                .map(|pos| items.insert(pos, Item::Comment(p.text))),
            (Node::Map(items), Anchor::End) => {
                items.push(Item::Comment(p.text));
                Some(())
            }
            (Node::Seq(items), Anchor::Item(index)) => {
                data_position(items, index).map(|pos| items.insert(pos, Node::Comment(p.text)))
            }
            (Node::Seq(items), Anchor::End) => {
                items.push(Node::Comment(p.text));
                Some(())
            }
            _ => None,
        };
        if placed.is_none() {
            missed += 1;
        }
    }
    missed
}

/// Where the `index`-th data item (comments not counted) of a sequence is.
fn data_position(items: &[Node], index: usize) -> Option<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, n)| !matches!(n, Node::Comment(_)))
        .nth(index)
        .map(|(pos, _)| pos)
}

fn walk_mut<'a>(node: &'a mut Node, path: &[Step]) -> Option<&'a mut Node> {
    let Some((step, rest)) = path.split_first() else {
        return Some(node);
    };
    let next = match (node, step) {
        (Node::Map(items), Step::Key(key)) => items.iter_mut().find_map(|i| match i {
            Item::Entry(k, v) if k == key => Some(v),
            _ => None,
        })?,
        (Node::Seq(items), Step::Index(i)) => {
            let pos = data_position(items, *i)?;
            items.get_mut(pos)?
        }
        _ => return None,
    };
    walk_mut(next, rest)
}

/// Whether a container holds any data item (comments left out): an entry, or a sequence item.
fn has_data(node: &Node) -> bool {
    match node {
        Node::Map(items) => items.iter().any(|i| matches!(i, Item::Entry(..))),
        Node::Seq(items) => items.iter().any(|n| !matches!(n, Node::Comment(_))),
        _ => false,
    }
}

/// The position among a container's items of its last data item, when that item is itself a
/// container holding data (written in block style, it ends on the same line as its parent, so
/// both close at the same dedent).
fn closing_position(node: &Node) -> Option<usize> {
    let (pos, last) = match node {
        Node::Map(items) => items
            .iter()
            .enumerate()
            .rev()
            .find_map(|(pos, i)| match i {
                Item::Entry(_, v) => Some((pos, v)),
                Item::Comment(_) => None,
            })?,
        Node::Seq(items) => items
            .iter()
            .enumerate()
            .rev()
            .find(|(_, n)| !matches!(n, Node::Comment(_)))?,
        _ => return None,
    };
    has_data(last).then_some(pos)
}

/// The container closing with `node`, see [`closing_position`].
fn closing_child(node: &mut Node) -> Option<&mut Node> {
    let pos = closing_position(node)?;
    match node {
        Node::Map(items) => match items.get_mut(pos)? {
            Item::Entry(_, v) => Some(v),
            Item::Comment(_) => None,
        },
        Node::Seq(items) => items.get_mut(pos),
        _ => None,
    }
}

/// Removes the comments after a container's last data item.
fn take_end_comments(node: &mut Node) -> Vec<String> {
    let mut taken = Vec::new();
    match node {
        Node::Map(items) => {
            while let Some(Item::Comment(_)) = items.last() {
                if let Some(Item::Comment(text)) = items.pop() {
                    taken.push(text);
                }
            }
        }
        Node::Seq(items) => {
            while let Some(Node::Comment(_)) = items.last() {
                if let Some(Node::Comment(text)) = items.pop() {
                    taken.push(text);
                }
            }
        }
        _ => {}
    }
    taken.reverse();
    taken
}

/// Before encryption: makes every comment sit where go-yaml will read it back from the
/// encrypted file. Containers closing at one dedent write their end comments innermost first,
/// and go-yaml gives the first run of comment lines there to the innermost container. An
/// encrypted comment ending a sequence is no comment line but a list item, so when the
/// innermost container is a sequence, the end comments of the containers around it would be
/// read (and their encryption checked) as the sequence's: they are moved there first, which
/// is where sops will read them. Comments ending a document's root need no move (they stay
/// before the `sops:` key).
pub(crate) fn settle_for_encryption(docs: &mut [Node]) {
    for doc in docs {
        if let Node::Map(items) = doc {
            for item in items.iter_mut() {
                if let Item::Entry(_, value) = item {
                    settle(value, true);
                }
            }
        }
    }
}

fn settle(node: &mut Node, top: bool) {
    // Every block child but the closing one starts a chain of its own.
    let children: Vec<&mut Node> = match node {
        Node::Map(items) => items
            .iter_mut()
            .filter_map(|i| match i {
                Item::Entry(_, v) => Some(v),
                Item::Comment(_) => None,
            })
            .collect(),
        Node::Seq(items) => items
            .iter_mut()
            .filter(|n| !matches!(n, Node::Comment(_)))
            .collect(),
        _ => return,
    };
    let count = children.len();
    for (i, child) in children.into_iter().enumerate() {
        if has_data(child) {
            settle(child, i + 1 < count);
        }
    }
    if !top || !ends_in_seq(node) {
        return;
    }
    let mut moved: Vec<Vec<String>> = Vec::new();
    let mut cur = node;
    loop {
        let ends = take_end_comments(cur);
        if closing_position(cur).is_none() {
            // The innermost sequence: its own end comments first, then the outer ones,
            // innermost first (the order they were written in).
            if let Node::Seq(items) = cur {
                items.extend(ends.into_iter().map(Node::Comment));
                for group in moved.into_iter().rev() {
                    items.extend(group.into_iter().map(Node::Comment));
                }
            }
            return;
        }
        moved.push(ends);
        let Some(next) = closing_child(cur) else {
            return;
        };
        cur = next;
    }
}

/// [`closing_child`], read only.
fn closing_of(node: &Node) -> Option<&Node> {
    let pos = closing_position(node)?;
    match node {
        Node::Map(items) => match items.get(pos)? {
            Item::Entry(_, v) => Some(v),
            Item::Comment(_) => None,
        },
        Node::Seq(items) => items.get(pos),
        _ => None,
    }
}

/// Whether the innermost container closing with `node` is a sequence.
fn ends_in_seq(node: &Node) -> bool {
    let mut cur = node;
    while let Some(next) = closing_of(cur) {
        cur = next;
    }
    matches!(cur, Node::Seq(_))
}

/// The comments held in a document's mappings and sequences, by (holder path, anchor).
type Held = HashMap<(Vec<Step>, Anchor), Vec<String>>;

fn collect(node: &Node, path: &mut Vec<Step>, out: &mut Held) {
    match node {
        Node::Map(items) => {
            let mut waiting = Vec::new();
            for item in items {
                match item {
                    Item::Comment(text) => waiting.push(text.clone()),
                    Item::Entry(key, value) => {
                        if !waiting.is_empty() {
                            out.insert(
                                (path.clone(), Anchor::Key(key.clone())),
                                std::mem::take(&mut waiting),
                            );
                        }
                        path.push(Step::Key(key.clone()));
                        collect(value, path, out);
                        path.pop();
                    }
                }
            }
            if !waiting.is_empty() {
                out.insert((path.clone(), Anchor::End), waiting);
            }
        }
        Node::Seq(items) => {
            let mut waiting = Vec::new();
            let mut index = 0;
            for item in items {
                if let Node::Comment(text) = item {
                    waiting.push(text.clone());
                    continue;
                }
                if !waiting.is_empty() {
                    out.insert(
                        (path.clone(), Anchor::Item(index)),
                        std::mem::take(&mut waiting),
                    );
                }
                path.push(Step::Index(index));
                collect(item, path, out);
                path.pop();
                index += 1;
            }
            if !waiting.is_empty() {
                out.insert((path.clone(), Anchor::End), waiting);
            }
        }
        _ => {}
    }
}

/// A document's comments, taken before it is turned into the JSON value the YAML writer
/// emits (which has no place for them).
pub(crate) struct Comments(Held);

impl Comments {
    pub(crate) fn of(doc: &Node) -> Comments {
        let mut held = Held::new();
        collect(doc, &mut Vec::new(), &mut held);
        Comments(held)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Writes a document's comments into its YAML text (emitted without them, block style, with
/// sequences indented under their keys so that a comment ending a sequence reads back as
/// part of it).
pub(crate) fn render(text: &str, comments: Comments) -> String {
    let mut held = comments.0;
    let mut out = String::with_capacity(text.len() + 64 * held.len());
    let mut walker = Walker::default();
    let put = |out: &mut String, col: usize, lines: Vec<String>| {
        for l in lines {
            out.extend(std::iter::repeat_n(' ', col));
            out.push('#');
            out.push_str(&l);
            out.push('\n');
        }
    };
    for line in text.lines() {
        let in_value = walker.in_value(line);
        if in_value {
            walker.line(line);
        }
        if in_value || line.trim().is_empty() || whole_line_comment(line).is_some() {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let event = walker.line(line);
        for (path, col) in std::mem::take(&mut walker.closed) {
            if let Some(lines) = held.remove(&(path, Anchor::End)) {
                put(&mut out, col, lines);
            }
        }
        for (path, index, col) in std::mem::take(&mut walker.items) {
            if let Some(lines) = held.remove(&(path, Anchor::Item(index))) {
                put(&mut out, col, lines);
            }
        }
        if let Event::Key { path, key, col, .. } = event
            && let Some(lines) = held.remove(&(path, Anchor::Key(key)))
        {
            // Before the whole line, so a comment before a sequence item's first key stays
            // before its dash.
            let line_col = indent(line).min(col);
            put(&mut out, line_col, lines);
        }
        out.push_str(line);
        out.push('\n');
    }
    // Containers still open at the end, innermost first; then anything left (kept, not lost).
    let open: Vec<(Vec<Step>, usize)> = walker
        .open_containers()
        .map(|(p, c)| (p.clone(), c))
        .collect();
    for (path, col) in open {
        if let Some(lines) = held.remove(&(path, Anchor::End)) {
            put(&mut out, col, lines);
        }
    }
    let mut rest: Vec<_> = held.into_iter().collect();
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, lines) in rest {
        put(&mut out, 0, lines);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (document, holder path, key or `[index]` it precedes or `None` for the end, text).
    type Shown = (usize, String, Option<String>, String);

    fn placements(text: &str) -> Vec<Shown> {
        let show = |path: &[Step]| {
            path.iter()
                .map(|s| match s {
                    Step::Key(k) => k.clone(),
                    Step::Index(i) => format!("[{i}]"),
                })
                .collect::<Vec<_>>()
                .join(".")
        };
        scan(text)
            .placed
            .into_iter()
            .map(|p| {
                let anchor = match p.anchor {
                    Anchor::Key(k) => Some(k),
                    Anchor::Item(i) => Some(format!("[{i}]")),
                    Anchor::End => None,
                };
                (p.doc, show(&p.path), anchor, p.text)
            })
            .collect()
    }

    fn at(doc: usize, path: &str, before: Option<&str>, text: &str) -> Shown {
        (
            doc,
            path.to_string(),
            before.map(str::to_string),
            text.to_string(),
        )
    }

    #[test]
    fn head_inline_and_nested_comments_go_before_their_key() {
        let text = "# head\napiVersion: v1\nmetadata:\n  labels:\n    app: demo # inline\nstringData:\n  # about the script\n  script: |\n    # shell, not YAML\n    echo hi\n\n    # still shell\n  other: \"a # not\" # real\n";
        assert_eq!(
            placements(text),
            vec![
                at(0, "", Some("apiVersion"), " head"),
                at(0, "metadata.labels", Some("app"), " inline"),
                at(0, "stringData", Some("script"), " about the script"),
                at(0, "stringData", Some("other"), " real"),
            ]
        );
    }

    #[test]
    fn sequences_in_both_indentation_styles() {
        for text in [
            "list:\n    - a\n    - name: x\n      # before port\n      port: 1\n    # before second\n    - name: y\n",
            "list:\n- a\n- name: x\n  # before port\n  port: 1\n# before second\n- name: y\n",
        ] {
            let found = scan(text);
            assert_eq!(
                placements(text),
                vec![
                    at(0, "list.[1]", Some("port"), " before port"),
                    // Before a dash, a comment is an item of the sequence, even when the
                    // item is a mapping.
                    at(0, "list", Some("[2]"), " before second"),
                ],
                "{text}"
            );
            assert_eq!(found.unplaced, 0);
        }
    }

    /// Each case as sops 3.11 (go-yaml v3) places it, checked by hand with the real sops:
    /// `- E<comment>` items in what it encrypts are sequence comments, `#E<comment>` lines
    /// mapping comments.
    #[test]
    fn sequence_comments_where_sops_keeps_them() {
        let cases: &[(&str, Vec<Shown>)] = &[
            ("a:\n  - x\n  # end\nb: 1\n", vec![at(0, "a", None, " end")]),
            ("a:\n- x\n# end\nb: 1\n", vec![at(0, "", Some("b"), " end")]),
            (
                "a:\n- x\n  # end\nb: 1\n",
                vec![at(0, "", Some("b"), " end")],
            ),
            ("a:\n- x\n# tail\n", vec![at(0, "a", None, " tail")]),
            ("a:\n  - x\n  - y\n# tail\n", vec![at(0, "", None, " tail")]),
            (
                "a:\n  - x\n    # deeper\n  - y\n",
                vec![at(0, "a", Some("[1]"), " deeper")],
            ),
            (
                "a:\n  - x # inline\n  - y\n",
                vec![at(0, "a", Some("[0]"), " inline")],
            ),
            (
                "a:\n  # first\n  - x\n",
                vec![at(0, "a", Some("[0]"), " first")],
            ),
            (
                "a: # on key\n  - x\n",
                vec![at(0, "", Some("a"), " on key")],
            ),
            (
                "a:\n  - - x\n    # nested\n    - y\n",
                vec![at(0, "a.[0]", Some("[1]"), " nested")],
            ),
            (
                "a:\n  - name: x\n    # end of x\n  - name: y\n",
                vec![at(0, "a.[0]", None, " end of x")],
            ),
            (
                "a:\n  - name: x\n  # between\n  - name: y\n",
                vec![at(0, "a", Some("[1]"), " between")],
            ),
            (
                "a:\n  - name: x\n    l:\n      - 1\n      # in l\n  - 2\n",
                vec![at(0, "a.[0].l", None, " in l")],
            ),
            (
                "a:\n  - name: x\n  - name: y\n  # tail\nb: 1\n",
                vec![at(0, "a.[1]", None, " tail")],
            ),
            (
                "a:\n  - name: x # inl\n  - y\n",
                vec![at(0, "a.[0]", Some("name"), " inl")],
            ),
            (
                "a:\n  - # on dash\n    name: x\n",
                vec![at(0, "a.[0]", Some("name"), " on dash")],
            ),
            (
                "a:\n  b:\n  - x\n  # end\nc: 1\n",
                vec![at(0, "a.b", None, " end")],
            ),
            (
                "a:\n  # c\n  value\nb: 1\n",
                vec![at(0, "", Some("a"), " c")],
            ),
            ("a:\n  value # c\nb: 1\n", vec![at(0, "", Some("a"), " c")]),
            (
                "a:\n  - \"multi\n    line\" # late\n  - y\n",
                vec![at(0, "a", Some("[0]"), " late")],
            ),
            (
                "a:\n  - x\n  - - y\n    # end inner\n  - z\n",
                vec![at(0, "a.[1]", None, " end inner")],
            ),
            (
                "a:\n  - x\n  # c1\n  # c2\n  - y # c3\n",
                vec![
                    at(0, "a", Some("[1]"), " c1"),
                    at(0, "a", Some("[1]"), " c2"),
                    at(0, "a", Some("[1]"), " c3"),
                ],
            ),
            (
                "a:\n  - |\n    text\n  # after block\n  - y\n",
                vec![at(0, "a", Some("[1]"), " after block")],
            ),
        ];
        for (text, want) in cases {
            let found = scan(text);
            assert_eq!(found.unplaced, 0, "{text}");
            assert_eq!(&placements(text), want, "{text}");
        }
    }

    #[test]
    fn comments_ending_a_mapping_stay_in_it() {
        let text = "a:\n    b: 1\n    # end of a\nc: 2\n# end of doc\n---\nd: 1\n";
        assert_eq!(
            placements(text),
            vec![
                at(0, "a", None, " end of a"),
                at(0, "", None, " end of doc"),
            ]
        );
        // As sops (go-yaml) places them: before a dedent, the first comments at the end of the
        // innermost mapping, later ones by their column. The end of the file reads the same way
        // (sops places `# x` there in `a`, but its own encrypted file, where `sops:` follows,
        // then reads it in `a.b`: it cannot decrypt that comment).
        for (text, want) in [
            (
                "a:\n  b:\n    c: 1\n  # x\nd: 1\n",
                vec![at(0, "a.b", None, " x")],
            ),
            (
                "a:\n  b:\n    c: 1\n  # x\n",
                vec![at(0, "a.b", None, " x")],
            ),
            (
                "a:\n  b:\n    c: 1\n    # x4\n  # x2\n# x0\nd: 1\n",
                vec![
                    at(0, "a.b", None, " x4"),
                    at(0, "a", None, " x2"),
                    at(0, "", Some("d"), " x0"),
                ],
            ),
            (
                "a:\n  b:\n    c: 1\n    # x4\n  # x2\n# x0\n",
                vec![
                    at(0, "a.b", None, " x4"),
                    at(0, "a", None, " x2"),
                    at(0, "", None, " x0"),
                ],
            ),
            (
                "a:\n  b:\n    c: 1\n  # x2\n\n  # y2\nd: 1\n",
                vec![at(0, "a.b", None, " x2"), at(0, "a.b", None, " y2")],
            ),
            (
                "a:\n  b:\n    c:\n      e: 1\n    # x4\n  # x2\nd: 1\n",
                vec![at(0, "a.b.c", None, " x4"), at(0, "a", None, " x2")],
            ),
            (
                "a:\n  b:\n    c:\n      e: 1\n  # x2\n    # x4\nd: 1\n",
                vec![at(0, "a.b.c", None, " x2"), at(0, "a.b", None, " x4")],
            ),
            (
                "a:\n  b:\n    c: 1\n# x0\n  # x2\nd: 1\n",
                vec![at(0, "a.b", None, " x0"), at(0, "a", None, " x2")],
            ),
            // After a first run, what is left at the end ends the root, even after a sequence
            // written at column 0 (alone, such a comment ends that sequence).
            (
                "a:\n- x\n- b:\n    c: 1\n    # x4\n# x0\n",
                vec![at(0, "a.[1].b", None, " x4"), at(0, "", None, " x0")],
            ),
            ("a:\n- x\n# x0\n", vec![at(0, "a", None, " x0")]),
            (
                "a:\n- b:\n    - x\n  c: 1\n# x0\n",
                vec![at(0, "", None, " x0")],
            ),
        ] {
            assert_eq!(placements(text), want, "{text}");
        }
        assert_eq!(
            placements("a:\n# before b\n  b: 1\n"),
            vec![at(0, "a", Some("b"), " before b")]
        );
        assert_eq!(
            placements("x: 1\n---\n# second\ny: 2\n"),
            vec![at(1, "", Some("y"), " second")]
        );
    }

    #[test]
    fn quoted_and_flow_values_over_several_lines_are_not_structure() {
        let text = "a: \"one\n  # inside\n  two\"\nb: [1,\n  2] # after\n'c d': 'it''s' # q\n";
        assert_eq!(
            placements(text),
            vec![at(0, "", Some("b"), " after"), at(0, "", Some("c d"), " q"),]
        );
    }

    #[test]
    fn render_puts_comments_back() {
        let text =
            "# head\na:\n  # in a\n  b: 1\n  c:\n  - x: 1\n    # y\n    y: 2\n  # end of a\nz: 3\n";
        let found = scan(text);
        let mut docs = vec![Node::from_json(serde_saphyr::from_str(text).unwrap())];
        assert_eq!(attach(&mut docs, found), 0);
        let plain = "a:\n  b: 1\n  c:\n  - x: 1\n    y: 2\nz: 3\n";
        // `# end of a` belongs to the innermost mapping open before the dedent (as go-yaml
        // reads it), and is written at its indentation.
        let expected = text.replace("  # end of a", "    # end of a");
        assert_eq!(render(plain, Comments::of(&docs[0])), expected);
        let again = scan(&expected);
        let mut docs2 = vec![Node::from_json(serde_saphyr::from_str(text).unwrap())];
        assert_eq!(attach(&mut docs2, again), 0);
        assert_eq!(docs, docs2);
    }

    #[test]
    fn render_puts_sequence_comments_back() {
        let text = "l:\n  # first\n  - a # on a\n  # between\n  - b\n  # end of l\nm:\n  - name: x\n  # before y\n  - name: y\nz: 1\n";
        let mut docs = vec![Node::from_json(serde_saphyr::from_str(text).unwrap())];
        assert_eq!(attach(&mut docs, scan(text)), 0);
        let plain = "l:\n  - a\n  - b\nm:\n  - name: x\n  - name: y\nz: 1\n";
        let expected = text.replace("  - a # on a\n", "  # on a\n  - a\n");
        assert_eq!(render(plain, Comments::of(&docs[0])), expected);
        let mut again = vec![Node::from_json(serde_saphyr::from_str(text).unwrap())];
        assert_eq!(attach(&mut again, scan(&expected)), 0);
        assert_eq!(docs, again);
        // The data is untouched by the comments.
        let json = docs.pop().unwrap().into_json();
        assert_eq!(
            json,
            serde_saphyr::from_str::<serde_json::Value>(text).unwrap()
        );
    }

    #[test]
    fn end_comments_around_a_closing_sequence_move_into_it_before_encryption() {
        let text = "a:\n  b:\n    - x\n    # end b\n  # end a\nc:\n  d: 1\n  # end c\n";
        let mut docs = vec![Node::from_json(serde_saphyr::from_str(text).unwrap())];
        assert_eq!(attach(&mut docs, scan(text)), 0);
        assert_eq!(
            placements(text),
            vec![
                at(0, "a.b", None, " end b"),
                at(0, "a", None, " end a"),
                at(0, "c", None, " end c"),
            ]
        );
        settle_for_encryption(&mut docs);
        let b = walk_mut(
            &mut docs[0],
            &[Step::Key("a".into()), Step::Key("b".into())],
        )
        .unwrap();
        assert_eq!(
            *b,
            Node::Seq(vec![
                Node::Str("x".into()),
                Node::Comment(" end b".into()),
                Node::Comment(" end a".into()),
            ])
        );
        // A mapping closing innermost keeps its own.
        let c = walk_mut(&mut docs[0], &[Step::Key("c".into())]).unwrap();
        assert!(matches!(c, Node::Map(items) if items.len() == 2));
    }

    /// Every slice of these pieces, in many orders, scans and renders without panicking (the
    /// scan slices lines by byte positions; multi-byte text must never land mid-character).
    #[test]
    fn arbitrary_text_never_panics() {
        let pieces = [
            "a: ",
            "- ",
            "  ",
            "\"é\\\"",
            "'ü''",
            "# ç",
            " #",
            "[",
            "{",
            "]",
            "}",
            "|",
            ">-",
            "\n",
            "---\n",
            "&x ",
            "!t ",
            "ключ: ",
            ":",
            "日本",
            "\t",
        ];
        let mut seed = 7u64;
        for _ in 0..4000 {
            let mut text = String::new();
            for _ in 0..24 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            let found = scan(&text);
            // The text's own tree when it parses as a mapping, so comments land in it.
            let doc = match serde_saphyr::from_str::<serde_json::Value>(&text) {
                Ok(v @ serde_json::Value::Object(_)) => Node::from_json(v),
                _ => Node::Map(Vec::new()),
            };
            let mut docs = vec![doc];
            attach(&mut docs, found);
            settle_for_encryption(&mut docs);
            let _ = render(&text, Comments::of(&docs[0]));
        }
    }
}
