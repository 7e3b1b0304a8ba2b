//! Flux's "Setters" update strategy: rewrite the YAML scalars marked with an image-policy
//! comment to the policies' latest image references.
//!
//! A marker is a comment holding a JSON object of strings with a `$imagepolicy` entry naming a
//! setter, `NAMESPACE:NAME` (the full reference), `NAMESPACE:NAME:tag`, `NAMESPACE:NAME:name`
//! or `NAMESPACE:NAME:digest`:
//!
//! ```yaml
//! image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
//! images:
//!   - name: app
//!     newTag: 1.0.0 # {"$imagepolicy": "flux-system:app:tag"}
//! args:
//!   # {"$imagepolicy": "flux-system:app:name"}
//!   - ghcr.io/org/app
//! ```
//!
//! It applies to the scalar it follows on the same line (a mapping value or a sequence item),
//! or, for a sequence item with no comment on its line, to the item below the comment line(s)
//! directly above it (go-yaml v3's line and head comments; only the first comment present is
//! read, as kyaml does). Mapping keys and block scalars (`|`, `>`) are never rewritten.
//!
//! The rewrite is textual: only the marked scalars' bytes change, every other byte of the file
//! (comments, indentation, quoting elsewhere, key order) stays. Flux instead re-serialises each
//! changed file through kyaml, which re-indents and re-flows it; the values are the same.

use std::collections::{BTreeMap, HashMap};

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StructureStyle};

use crate::imageref::check_reference;
use crate::scalar::{Style, render};

/// The comment entry naming a setter.
pub const MARKER_KEY: &str = "$imagepolicy";

/// An image reference as an ImagePolicy reports its latest (`status.latestRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageRef {
    /// The image name, with its registry (`ghcr.io/org/app`).
    pub name: String,
    /// The tag (`1.0.1`).
    pub tag: String,
    /// The digest (`sha256:…`), when the policy resolves digests.
    pub digest: Option<String>,
}

impl ImageRef {
    /// The full reference: `name:tag`, then `@digest` when there is one (an empty part is left
    /// out with its separator).
    pub fn full(&self) -> String {
        let mut s = self.name.clone();
        if !self.tag.is_empty() {
            s.push(':');
            s.push_str(&self.tag);
        }
        if let Some(d) = self.digest.as_deref().filter(|d| !d.is_empty()) {
            s.push('@');
            s.push_str(d);
        }
        s
    }
}

/// A ready ImagePolicy: where it is and what it selected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImagePolicy {
    /// The policy's namespace.
    pub namespace: String,
    /// The policy's name.
    pub name: String,
    /// The latest image the policy selected.
    pub latest: ImageRef,
}

/// The identity of the object a changed value belongs to: its document's `apiVersion`, `kind`,
/// `metadata.name` and `metadata.namespace` (each empty when missing or not a scalar; all empty
/// for a document that is not a mapping). Ordered field by field in this order, as Go sorts
/// Flux's `ObjectIdentifier` keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
}

/// One value a setter changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Change {
    /// The scalar's value before.
    pub old_value: String,
    /// The value written.
    pub new_value: String,
    /// The setter that wrote it (`namespace:name`, or with `:tag`, `:name`, `:digest`).
    pub setter: String,
}

/// The changes to the objects of one file, per object, in the order they were made.
pub type ObjectChanges = BTreeMap<ObjectId, Vec<Change>>;

/// Every change an update made: file path → object → changes (Flux's `update.Result`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Per file (relative to the update root), the changed objects.
    pub file_changes: BTreeMap<String, ObjectChanges>,
}

impl Changes {
    /// Records a change of an object in a file.
    pub fn add(&mut self, file: &str, object: ObjectId, change: Change) {
        self.file_changes
            .entry(file.to_string())
            .or_default()
            .entry(object)
            .or_default()
            .push(change);
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.file_changes.is_empty()
    }

    /// Every distinct change, in file then object order (Flux's `Result.Changes`).
    pub fn changes(&self) -> Vec<Change> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for change in self
            .file_changes
            .values()
            .flat_map(|o| o.values())
            .flatten()
        {
            if seen.insert(change) {
                out.push(change.clone());
            }
        }
        out
    }

    /// The changes per object, whatever file they are in (Flux's `Result.Objects`); an object
    /// in several files gets their changes in file order.
    pub fn objects(&self) -> ObjectChanges {
        let mut out = ObjectChanges::new();
        for objects in self.file_changes.values() {
            for (id, changes) in objects {
                out.entry(id.clone())
                    .or_default()
                    .extend(changes.iter().cloned());
            }
        }
        out
    }
}

/// What [`update_with_setters`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetterUpdate {
    /// The new contents of every file with at least one changed value (path as given).
    pub files: BTreeMap<String, Vec<u8>>,
    /// The changes, per file and object.
    pub changes: Changes,
    /// Files that hold the marker text but could not be read as YAML, so were left alone.
    pub problem_files: Vec<String>,
}

/// Why an update could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetterError {
    /// A policy's latest reference is not an image reference (Flux's wording).
    #[error(
        "encountered invalid image ref {}: {reason}",
        ferroflux_gotemplate::fmt::quote(reference)
    )]
    InvalidImageRef {
        /// The reference (`name:tag[@digest]`).
        reference: String,
        /// go-containerregistry's reason.
        reason: String,
    },
}

/// Whether Flux looks at a file of this path: a `.yaml` or `.yml` extension, or a base name of
/// exactly `Kustomization`.
pub fn is_candidate_path(path: &str) -> bool {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    base.ends_with(".yaml") || base.ends_with(".yml") || base == "Kustomization"
}

/// Applies the policies' setters to the files of a tree (path relative to the update root →
/// contents). Files that are not YAML by name, or do not contain `"$imagepolicy"`, are not
/// parsed; files that do but are not valid YAML are listed in
/// [`SetterUpdate::problem_files`]. Fails, before anything is read, when a policy's latest
/// reference is not a valid image reference.
pub fn update_with_setters<P, B>(
    files: impl IntoIterator<Item = (P, B)>,
    policies: &[ImagePolicy],
) -> Result<SetterUpdate, SetterError>
where
    P: AsRef<str>,
    B: AsRef<[u8]>,
{
    let setters = setter_values(policies)?;
    let token = format!("\"{MARKER_KEY}\"");
    let mut out = SetterUpdate::default();
    for (path, bytes) in files {
        let (path, bytes) = (path.as_ref(), bytes.as_ref());
        if !is_candidate_path(path) || !contains(bytes, token.as_bytes()) {
            continue;
        }
        let Some(text) = std::str::from_utf8(bytes).ok() else {
            out.problem_files.push(path.to_string());
            continue;
        };
        let Some(targets) = find_targets(text) else {
            out.problem_files.push(path.to_string());
            continue;
        };
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for t in targets {
            let Some(setter) = marker_setter(&t.comment) else {
                continue;
            };
            let Some(value) = setters.get(setter.as_str()) else {
                continue;
            };
            if *value == t.value {
                continue;
            }
            edits.push((t.start, t.end, render(value, t.style, t.flow)));
            out.changes.add(
                path,
                t.object,
                Change {
                    old_value: t.value,
                    new_value: value.clone(),
                    setter,
                },
            );
        }
        if edits.is_empty() {
            continue;
        }
        let mut new = text.to_string();
        for (start, end, replacement) in edits.into_iter().rev() {
            new.replace_range(start..end, &replacement);
        }
        out.files.insert(path.to_string(), new.into_bytes());
    }
    Ok(out)
}

/// The four setters of every policy and their values; checks each policy's reference.
fn setter_values(policies: &[ImagePolicy]) -> Result<HashMap<String, String>, SetterError> {
    let mut setters = HashMap::new();
    for p in policies {
        let full = p.latest.full();
        check_reference(&full).map_err(|reason| SetterError::InvalidImageRef {
            reference: full.clone(),
            reason,
        })?;
        let base = format!("{}:{}", p.namespace, p.name);
        setters.insert(format!("{base}:tag"), p.latest.tag.clone());
        setters.insert(format!("{base}:name"), p.latest.name.clone());
        setters.insert(
            format!("{base}:digest"),
            p.latest.digest.clone().unwrap_or_default(),
        );
        setters.insert(base, full);
    }
    Ok(setters)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The setter a comment names: leading `#`s stripped, the rest a JSON object of strings with
/// a non-empty `$imagepolicy`. Anything else is an ordinary comment.
fn marker_setter(comment: &str) -> Option<String> {
    let json = comment.trim_start_matches('#');
    let map: HashMap<String, String> = serde_json::from_str(json).ok()?;
    map.get(MARKER_KEY).filter(|s| !s.is_empty()).cloned()
}

/// A scalar that carries a comment and may be rewritten.
struct Target {
    start: usize,
    end: usize,
    style: Style,
    flow: bool,
    value: String,
    /// The comment that applies to it (line comment first, else head comment), with its `#`.
    comment: String,
    object: ObjectId,
}

/// One open collection while walking the events.
struct Frame {
    is_map: bool,
    flow: bool,
    /// In a mapping: the next node is a key.
    expect_key: bool,
    /// In a mapping: the last key, when it was a scalar.
    key: Option<String>,
    /// Inside a mapping key (a complex key): nothing here is a value.
    in_key: bool,
}

/// The commented scalars of every document, or None when the text is not valid YAML.
fn find_targets(text: &str) -> Option<Vec<Target>> {
    let mut targets = Vec::new();
    let mut doc_targets: Vec<Target> = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut object = ObjectId::default();
    for item in Parser::new_from_str(text) {
        let (event, span) = item.ok()?;
        let start = span.start.byte_offset()?;
        let end = span.end.byte_offset()?;
        let mut completes_node = false;
        match event {
            Event::DocumentStart(..) => {
                stack.clear();
                object = ObjectId::default();
            }
            Event::DocumentEnd => {
                for mut t in doc_targets.drain(..) {
                    t.object = object.clone();
                    targets.push(t);
                }
            }
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                let parent_flow = stack.last().is_some_and(|f| f.flow);
                let in_key = stack
                    .last()
                    .is_some_and(|f| f.in_key || (f.is_map && f.expect_key));
                if let Some(f) = stack.last_mut()
                    && f.is_map
                    && f.expect_key
                {
                    f.key = None;
                }
                stack.push(Frame {
                    is_map,
                    flow: parent_flow || style == StructureStyle::Flow,
                    expect_key: true,
                    key: None,
                    in_key,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                completes_node = true;
            }
            Event::Alias(_) => completes_node = true,
            Event::Scalar(value, style, ..) => {
                completes_node = true;
                let parent = stack.last();
                let is_key = parent.is_some_and(|f| f.is_map && f.expect_key);
                if is_key {
                    if let Some(f) = stack.last_mut() {
                        f.key = Some(value.to_string());
                    }
                } else if let Some(f) = parent
                    && !f.in_key
                {
                    record_identity(&stack, &value, &mut object);
                    let style = match style {
                        ScalarStyle::Plain => Some(Style::Plain),
                        ScalarStyle::SingleQuoted => Some(Style::SingleQuoted),
                        ScalarStyle::DoubleQuoted => Some(Style::DoubleQuoted),
                        _ => None,
                    };
                    let comment = line_comment(text, end).or_else(|| {
                        (!f.is_map && !f.flow)
                            .then(|| head_comment(text, start))
                            .flatten()
                    });
                    if let (Some(style), Some(comment)) = (style, comment) {
                        doc_targets.push(Target {
                            start,
                            end,
                            style,
                            flow: f.flow,
                            value: value.to_string(),
                            comment,
                            object: ObjectId::default(),
                        });
                    }
                }
            }
            _ => {}
        }
        if completes_node
            && let Some(f) = stack.last_mut()
            && f.is_map
        {
            f.expect_key = !f.expect_key;
        }
    }
    Some(targets)
}

/// Notes `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` of the document's root
/// mapping as their scalar values arrive.
fn record_identity(stack: &[Frame], value: &str, object: &mut ObjectId) {
    fn key(f: &Frame) -> Option<&str> {
        f.key.as_deref().filter(|_| f.is_map)
    }
    match stack {
        [root] => match key(root) {
            Some("apiVersion") => object.api_version = value.to_string(),
            Some("kind") => object.kind = value.to_string(),
            _ => {}
        },
        [root, meta] if key(root) == Some("metadata") => match key(meta) {
            Some("name") => object.name = value.to_string(),
            Some("namespace") => object.namespace = value.to_string(),
            _ => {}
        },
        _ => {}
    }
}

/// The comment after a scalar ending at `end`, on the same line (with its `#`, without the
/// line break or trailing spaces).
fn line_comment(text: &str, end: usize) -> Option<String> {
    let rest = text.get(end..)?;
    let line = rest.split('\n').next().unwrap_or(rest);
    let trimmed = line.trim_start_matches([' ', '\t']);
    if !trimmed.starts_with('#') || trimmed.len() == line.len() && !line.is_empty() {
        // A `#` must be separated from the scalar by blanks to start a comment.
        return None;
    }
    Some(trimmed.trim_end().to_string())
}

/// The comment lines directly above the line of `start` (a block sequence item), joined with
/// line breaks, as go-yaml v3 gathers a head comment; None when the line above is not a
/// comment.
fn head_comment(text: &str, start: usize) -> Option<String> {
    let line_start = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
    let prefix = text.get(line_start..start)?.trim();
    if !prefix.starts_with('-') {
        return None;
    }
    let mut lines = Vec::new();
    let mut above = text.get(..line_start)?.strip_suffix('\n')?;
    loop {
        let (before, line) = match above.rfind('\n') {
            Some(i) => (Some(&above[..i]), &above[i + 1..]),
            None => (None, above),
        };
        let trimmed = line.trim();
        if !trimmed.starts_with('#') {
            break;
        }
        lines.push(trimmed.to_string());
        match before {
            Some(b) => above = b,
            None => break,
        }
    }
    if lines.is_empty() {
        return None;
    }
    lines.reverse();
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(ns: &str, name: &str, image: &str, tag: &str, digest: Option<&str>) -> ImagePolicy {
        ImagePolicy {
            namespace: ns.into(),
            name: name.into(),
            latest: ImageRef {
                name: image.into(),
                tag: tag.into(),
                digest: digest.map(str::to_string),
            },
        }
    }

    fn policies() -> Vec<ImagePolicy> {
        vec![
            policy("ns", "app", "ghcr.io/org/app", "1.1.0", None),
            policy("ns", "dig", "ghcr.io/org/dig", "2.0.0", Some(DIGEST)),
        ]
    }

    const DIGEST: &str = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";

    /// Runs one file through the update; its new text (None when unchanged) and the changes.
    fn run(path: &str, text: &str) -> (Option<String>, SetterUpdate) {
        let out = update_with_setters([(path, text)], &policies()).unwrap();
        let new = out
            .files
            .get(path)
            .map(|b| String::from_utf8(b.clone()).unwrap());
        (new, out)
    }

    fn change(old: &str, new: &str, setter: &str) -> Change {
        Change {
            old_value: old.into(),
            new_value: new.into(),
            setter: setter.into(),
        }
    }

    #[test]
    fn line_comment_on_a_mapping_value() {
        let (new, out) = run(
            "deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n\
             spec:\n  image: ghcr.io/org/app:1.0.0   # {\"$imagepolicy\": \"ns:app\"}\n",
        );
        assert_eq!(
            new.unwrap(),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n\
             spec:\n  image: ghcr.io/org/app:1.1.0   # {\"$imagepolicy\": \"ns:app\"}\n"
        );
        let id = ObjectId {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: "prod".into(),
        };
        assert_eq!(
            out.changes.file_changes["deploy.yaml"][&id],
            vec![change(
                "ghcr.io/org/app:1.0.0",
                "ghcr.io/org/app:1.1.0",
                "ns:app"
            )]
        );
    }

    #[test]
    fn tag_name_and_digest_setters() {
        let (new, out) = run(
            "kustomization.yml",
            "images:\n- name: app\n  newName: old # {\"$imagepolicy\": \"ns:dig:name\"}\n  \
             newTag: v1 # {\"$imagepolicy\": \"ns:dig:tag\"}\n  \
             digest: x # {\"$imagepolicy\": \"ns:dig:digest\"}\n  \
             full: x # {\"$imagepolicy\": \"ns:dig\"}\n",
        );
        assert_eq!(
            new.unwrap(),
            format!(
                "images:\n- name: app\n  newName: ghcr.io/org/dig # {{\"$imagepolicy\": \"ns:dig:name\"}}\n  \
                 newTag: 2.0.0 # {{\"$imagepolicy\": \"ns:dig:tag\"}}\n  \
                 digest: {DIGEST} # {{\"$imagepolicy\": \"ns:dig:digest\"}}\n  \
                 full: ghcr.io/org/dig:2.0.0@{DIGEST} # {{\"$imagepolicy\": \"ns:dig\"}}\n"
            )
        );
        assert_eq!(out.changes.changes().len(), 4);
    }

    #[test]
    fn digest_setter_without_a_digest_writes_an_empty_string() {
        let (new, out) = run(
            "a.yaml",
            "digest: sha256:abc # {\"$imagepolicy\": \"ns:app:digest\"}\n",
        );
        assert_eq!(
            new.unwrap(),
            "digest: \"\" # {\"$imagepolicy\": \"ns:app:digest\"}\n"
        );
        assert_eq!(
            out.changes.changes(),
            vec![change("sha256:abc", "", "ns:app:digest")]
        );
    }

    #[test]
    fn sequence_items_by_line_and_head_comment() {
        let text = "args:\n  - ghcr.io/org/app:1 # {\"$imagepolicy\": \"ns:app\"}\n  \
                    # {\"$imagepolicy\": \"ns:app:tag\"}\n  - \"1.0\"\n  - keep\n";
        let (new, _) = run("a.yaml", text);
        assert_eq!(
            new.unwrap(),
            "args:\n  - ghcr.io/org/app:1.1.0 # {\"$imagepolicy\": \"ns:app\"}\n  \
             # {\"$imagepolicy\": \"ns:app:tag\"}\n  - \"1.1.0\"\n  - keep\n"
        );
    }

    #[test]
    fn head_comments_apply_to_sequence_items_only_and_one_line_only() {
        // Above a mapping entry: that is the key's comment, not the value's.
        let above_key = "# {\"$imagepolicy\": \"ns:app\"}\nimage: x\n";
        assert_eq!(run("a.yaml", above_key).0, None);
        // Two comment lines read as one comment, which is not JSON.
        let two = "l:\n  # note\n  # {\"$imagepolicy\": \"ns:app\"}\n  - x\n";
        assert_eq!(run("a.yaml", two).0, None);
        // A blank line before the comment is fine.
        let blank = "l:\n\n  # {\"$imagepolicy\": \"ns:app\"}\n  - x\n";
        assert!(run("a.yaml", blank).0.is_some());
        // A line comment of its own hides the head comment (kyaml reads the first present).
        let both = "l:\n  # {\"$imagepolicy\": \"ns:app\"}\n  - x # plain remark\n";
        assert_eq!(run("a.yaml", both).0, None);
    }

    #[test]
    fn keys_are_never_rewritten() {
        let text = "? k # {\"$imagepolicy\": \"ns:app\"}\n: v\n";
        assert_eq!(run("a.yaml", text).0, None);
        let text = "m:\n  k: # {\"$imagepolicy\": \"ns:app\"}\n    v: 1\n";
        assert_eq!(run("a.yaml", text).0, None);
    }

    #[test]
    fn each_style_is_kept() {
        // The parser's span of a quoted scalar includes its quotes: they are replaced too.
        let cases = [
            ("t: v1 # M", "t: 1.1.0 # M"),
            ("t: 'v1' # M", "t: '1.1.0' # M"),
            ("t: \"v1\" # M", "t: \"1.1.0\" # M"),
            ("t: [v1, v2 # M\n  ]", "t: [v1, 1.1.0 # M\n  ]"),
        ];
        for (before, after) in cases {
            let marker = "{\"$imagepolicy\": \"ns:app:tag\"}";
            let (new, _) = run("a.yaml", &format!("{}\n", before.replace('M', marker)));
            let want = format!("{}\n", after.replace('M', marker));
            assert_eq!(new.as_deref(), Some(want.as_str()), "{before}");
        }
        // A comment after a flow collection belongs to no scalar.
        let flow = "t: [v1] # {\"$imagepolicy\": \"ns:app:tag\"}\n";
        assert_eq!(run("a.yaml", flow).0, None);
        // A plain value that would read back as a number is double-quoted.
        let p = vec![policy("ns", "n", "img", "1.10", None)];
        let out = update_with_setters(
            [("a.yaml", "t: v1 # {\"$imagepolicy\": \"ns:n:tag\"}\n")],
            &p,
        )
        .unwrap();
        assert_eq!(
            out.files["a.yaml"],
            b"t: \"1.10\" # {\"$imagepolicy\": \"ns:n:tag\"}\n"
        );
        // Single quotes are doubled inside a single-quoted scalar; double-quoted escapes.
        let p = vec![policy("ns", "n", "img", "it's", None)];
        let out = update_with_setters(
            [(
                "a.yaml",
                "a: 'x' # {\"$imagepolicy\": \"ns:n:tag\"}\nb: \"x\" # {\"$imagepolicy\": \"ns:n:tag\"}\n",
            )],
            &p,
        );
        // `it's` is not a valid tag: the reference check refuses it first.
        assert!(out.is_err());
    }

    #[test]
    fn anchors_and_tags_stay() {
        let text = "a: &x !!str v1 # {\"$imagepolicy\": \"ns:app:tag\"}\nb: *x\n";
        assert_eq!(
            run("a.yaml", text).0.unwrap(),
            "a: &x !!str 1.1.0 # {\"$imagepolicy\": \"ns:app:tag\"}\nb: *x\n"
        );
    }

    #[test]
    fn block_scalars_are_left_alone() {
        let text = "a: | # {\"$imagepolicy\": \"ns:app\"}\n  x\n";
        assert_eq!(run("a.yaml", text).0, None);
    }

    #[test]
    fn unknown_policies_and_malformed_markers_are_ordinary_comments() {
        for comment in [
            "# {\"$imagepolicy\": \"ns:other\"}",
            "# {\"$imagepolicy\": \"ns:app:nope\"}",
            "# {\"$imagepolicy\": \"\"}",
            "# {\"$imagepolicy\": \"ns:app\"",
            "# {\"$imagepolicy\": \"ns:app\"} trailing",
            "# {\"$imagepolicy\": \"ns:app\", \"n\": 1}",
            "# \"$imagepolicy\": \"ns:app\"",
        ] {
            let text = format!("image: x {comment}\n");
            let (new, out) = run("a.yaml", &text);
            assert_eq!(new, None, "{comment}");
            assert!(out.changes.is_empty());
        }
        // Extra string entries and several leading `#` are fine.
        let (new, _) = run(
            "a.yaml",
            "image: x ### {\"$imagepolicy\": \"ns:app\", \"note\": \"y\"}\n",
        );
        assert!(new.is_some());
        // A `#` glued to the value is part of the scalar, not a comment.
        let (new, _) = run("a.yaml", "image: x#{\"$imagepolicy\": \"ns:app\"}\n");
        assert_eq!(new, None);
    }

    #[test]
    fn identical_values_are_no_change() {
        let text = "image: ghcr.io/org/app:1.1.0 # {\"$imagepolicy\": \"ns:app\"}\n";
        let (new, out) = run("a.yaml", text);
        assert_eq!(new, None);
        assert!(out.changes.is_empty());
        assert!(out.files.is_empty());
    }

    #[test]
    fn files_are_screened_by_name_and_token_and_bad_yaml_is_a_problem() {
        let marked = "image: x # {\"$imagepolicy\": \"ns:app\"}\n";
        let files = [
            ("notes.txt", marked),
            ("dir/Kustomization", marked),
            ("dir/a.yml", marked),
            ("b.yaml", "image: x # {'$imagepolicy': 'ns:app'}\n"),
            ("bad.yaml", "a: [\n# \"$imagepolicy\"\n"),
            ("tpl/x.yaml", "{{ .Values }}: \"$imagepolicy\"\n  - : ]\n"),
        ];
        let out = update_with_setters(files, &policies()).unwrap();
        assert_eq!(
            out.files.keys().collect::<Vec<_>>(),
            vec!["dir/Kustomization", "dir/a.yml"]
        );
        assert_eq!(out.problem_files, vec!["bad.yaml", "tpl/x.yaml"]);
        assert!(!is_candidate_path("x.yaml.bak"));
        assert!(is_candidate_path("a/b/.yaml"));
        assert!(!is_candidate_path("kustomization"));
    }

    #[test]
    fn multi_document_files_and_non_mapping_documents() {
        let text = "apiVersion: v1\nkind: A\nmetadata: {name: a}\nimg: x # {\"$imagepolicy\": \"ns:app\"}\n\
                    ---\nkind: B\nimg: y # {\"$imagepolicy\": \"ns:app:tag\"}\nmetadata:\n  namespace: n\n\
                    ---\n- z # {\"$imagepolicy\": \"ns:app:name\"}\n";
        let (new, out) = run("m.yaml", text);
        assert_eq!(
            new.unwrap(),
            "apiVersion: v1\nkind: A\nmetadata: {name: a}\nimg: ghcr.io/org/app:1.1.0 # {\"$imagepolicy\": \"ns:app\"}\n\
             ---\nkind: B\nimg: 1.1.0 # {\"$imagepolicy\": \"ns:app:tag\"}\nmetadata:\n  namespace: n\n\
             ---\n- ghcr.io/org/app # {\"$imagepolicy\": \"ns:app:name\"}\n"
        );
        let ids: Vec<ObjectId> = out.changes.file_changes["m.yaml"].keys().cloned().collect();
        assert_eq!(
            ids,
            vec![
                ObjectId::default(),
                ObjectId {
                    kind: "B".into(),
                    namespace: "n".into(),
                    ..ObjectId::default()
                },
                ObjectId {
                    api_version: "v1".into(),
                    kind: "A".into(),
                    name: "a".into(),
                    ..ObjectId::default()
                },
            ]
        );
    }

    #[test]
    fn offsets_are_bytes_and_crlf_is_kept() {
        let text = "# 컨테이너\r\nspec: # 컨테이너\r\n  image: \"é:1\" # {\"$imagepolicy\": \"ns:app\"}\r\n  l:\r\n  # {\"$imagepolicy\": \"ns:app:tag\"}\r\n  - ü\r\n";
        let (new, out) = run("a.yaml", text);
        assert_eq!(
            new.unwrap(),
            "# 컨테이너\r\nspec: # 컨테이너\r\n  image: \"ghcr.io/org/app:1.1.0\" # {\"$imagepolicy\": \"ns:app\"}\r\n  l:\r\n  # {\"$imagepolicy\": \"ns:app:tag\"}\r\n  - 1.1.0\r\n"
        );
        assert_eq!(out.changes.changes().len(), 2);
    }

    #[test]
    fn invalid_references_fail_the_update() {
        let p = vec![policy("ns", "bad", "Not/Valid", "1", None)];
        let err = update_with_setters(Vec::<(&str, &str)>::new(), &p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "encountered invalid image ref \"Not/Valid:1\": could not parse reference: Not/Valid:1"
        );
    }

    #[test]
    fn changes_and_objects_merge_over_files() {
        let mut c = Changes::default();
        let id = ObjectId {
            kind: "K".into(),
            ..ObjectId::default()
        };
        c.add("b.yaml", id.clone(), change("1", "2", "s"));
        c.add("a.yaml", id.clone(), change("0", "1", "s"));
        c.add("a.yaml", ObjectId::default(), change("1", "2", "s"));
        assert_eq!(
            c.changes(),
            vec![change("1", "2", "s"), change("0", "1", "s")]
        );
        assert_eq!(
            c.objects()[&id],
            vec![change("0", "1", "s"), change("1", "2", "s")]
        );
    }
}
