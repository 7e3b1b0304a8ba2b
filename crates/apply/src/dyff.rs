//! The human report of a drift: what a server-side apply would change in one live object,
//! in the layout of dyff's report as the flux CLI configures it (`flux diff`'s output), and
//! the masking of Secret values Flux applies before showing one.
//!
//! It lives here because this crate owns drift: the applier's dry run classifies an object
//! (created / configured / unchanged) and hands back the live and merged versions; this module
//! says how a `Configured` one differs, as fluxcd/pkg's `ssa` package owns both the dry-run
//! diff and the Secret sanitizer the flux CLI prints with. Pure: two JSON values in, text out.
//! Values inside the report are printed with the kustomize engine's go-yaml emitter, so they
//! read as flux's do.

use serde_json::{Map, Value};
use std::fmt::Write as _;

const MASK: &str = "***";
const MASK_BEFORE: &str = "*** (before)";
const MASK_AFTER: &str = "*** (after)";

/// Masks the values of a Secret's `data` and `stringData` in both versions, keeping whether
/// each key was added, removed or changed visible (as Flux's sanitizer writes them: `***`,
/// `*** (before)`, `*** (after)`). Call it before [`report`] for a core `Secret`.
pub fn sanitize_secret(live: &mut Value, merged: &mut Value) {
    for field in ["data", "stringData"] {
        let old = live.get(field).and_then(Value::as_object).cloned();
        let new = merged.get(field).and_then(Value::as_object).cloned();
        let (mut old_masked, mut new_masked) = (Map::new(), Map::new());
        for (k, v) in old.iter().flatten() {
            let differs = new.as_ref().and_then(|n| n.get(k)).is_some_and(|n| n != v);
            let mask = if differs { MASK_BEFORE } else { MASK };
            old_masked.insert(k.clone(), Value::String(mask.into()));
        }
        for (k, v) in new.iter().flatten() {
            let differs = old.as_ref().and_then(|o| o.get(k)).is_some_and(|o| o != v);
            let mask = if differs { MASK_AFTER } else { MASK };
            new_masked.insert(k.clone(), Value::String(mask.into()));
        }
        if let (Some(o), true) = (live.as_object_mut(), old.is_some()) {
            o.insert(field.into(), Value::Object(old_masked));
        }
        if let (Some(o), true) = (merged.as_object_mut(), new.is_some()) {
            o.insert(field.into(), Value::Object(new_masked));
        }
    }
}

/// One step of a path through a document: a map key, a named list entry or an index.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Named(String),
    Index(usize),
}

fn path_string(path: &[Step]) -> String {
    if path.is_empty() {
        return "(root level)".into();
    }
    path.iter()
        .map(|s| match s {
            Step::Key(k) | Step::Named(k) => k.clone(),
            Step::Index(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The differences found at one path, rendered as dyff's blocks.
struct Difference {
    path: Vec<Step>,
    blocks: Vec<String>,
}

/// A report of the differences between `from` (live) and `to` (after apply) in the layout of
/// dyff's human report as flux configures it (no header, Kubernetes-aware paths): each path
/// on its own line after a blank line, then what changed there, and a final blank line.
/// `metadata` noise the API server owns (resourceVersion, generation, timestamps, uid) and
/// `status` are left out, as they are not part of what an apply changes.
pub fn report(from: &Value, to: &Value) -> String {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("status");
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                for f in [
                    "resourceVersion",
                    "generation",
                    "creationTimestamp",
                    "uid",
                    "managedFields",
                ] {
                    m.remove(f);
                }
            }
        }
        v
    };
    let mut diffs = Vec::new();
    compare(&mut Vec::new(), &strip(from), &strip(to), &mut diffs);
    let mut out = String::new();
    for d in diffs {
        out.push('\n');
        out.push_str(&path_string(&d.path));
        out.push('\n');
        out.push_str(&text_blocks(&d.blocks));
    }
    out.push('\n');
    out
}

fn compare(path: &mut Vec<Step>, from: &Value, to: &Value, out: &mut Vec<Difference>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let removed: Map<String, Value> = a
                .iter()
                .filter(|(k, _)| !b.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let added: Map<String, Value> = b
                .iter()
                .filter(|(k, _)| !a.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut blocks = Vec::new();
            if !removed.is_empty() {
                blocks.push(entries_block(
                    '-',
                    &plural(removed.len(), "map entry", "map entries"),
                    "removed",
                    &Value::Object(removed),
                ));
            }
            if !added.is_empty() {
                blocks.push(entries_block(
                    '+',
                    &plural(added.len(), "map entry", "map entries"),
                    "added",
                    &Value::Object(added),
                ));
            }
            if !blocks.is_empty() {
                out.push(Difference {
                    path: path.clone(),
                    blocks,
                });
            }
            let mut keys: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
            keys.sort();
            for k in keys {
                path.push(Step::Key(k.clone()));
                compare(path, &a[k], &b[k], out);
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => compare_lists(path, a, b, out),
        _ if from == to => {}
        _ => out.push(Difference {
            path: path.clone(),
            blocks: vec![modification(from, to)],
        }),
    }
}

/// The identifying field of a list of maps, when every entry has a distinct one.
fn identifier(a: &[Value], b: &[Value]) -> Option<&'static str> {
    ["name", "key", "id"].into_iter().find(|field| {
        let names = |l: &[Value]| -> Option<Vec<String>> {
            l.iter()
                .map(|e| e.get(*field).and_then(Value::as_str).map(str::to_string))
                .collect()
        };
        match (names(a), names(b)) {
            (Some(x), Some(y)) => {
                let unique = |v: &Vec<String>| {
                    let mut s = v.clone();
                    s.sort();
                    s.dedup();
                    s.len() == v.len()
                };
                !(x.is_empty() && y.is_empty()) && unique(&x) && unique(&y)
            }
            _ => false,
        }
    })
}

fn compare_lists(path: &mut Vec<Step>, a: &[Value], b: &[Value], out: &mut Vec<Difference>) {
    if let Some(field) = identifier(a, b) {
        let name = |e: &Value| e[field].as_str().unwrap_or("").to_string();
        let removed: Vec<Value> = a
            .iter()
            .filter(|e| !b.iter().any(|f| name(f) == name(e)))
            .cloned()
            .collect();
        let added: Vec<Value> = b
            .iter()
            .filter(|e| !a.iter().any(|f| name(f) == name(e)))
            .cloned()
            .collect();
        let common_a: Vec<String> = a
            .iter()
            .map(name)
            .filter(|n| b.iter().any(|f| &name(f) == n))
            .collect();
        let common_b: Vec<String> = b
            .iter()
            .map(name)
            .filter(|n| a.iter().any(|f| &name(f) == n))
            .collect();
        let mut blocks = list_blocks(&removed, &added);
        if common_a != common_b {
            blocks.push(format!(
                "⇆ order changed\n- {}\n+ {}\n",
                common_a.join(", "),
                common_b.join(", ")
            ));
        }
        if !blocks.is_empty() {
            out.push(Difference {
                path: path.clone(),
                blocks,
            });
        }
        for e in a {
            if let Some(f) = b.iter().find(|f| name(f) == name(e)) {
                path.push(Step::Named(name(e)));
                compare(path, e, f, out);
                path.pop();
            }
        }
        return;
    }
    let composite = |l: &[Value]| l.iter().any(|e| e.is_object() || e.is_array());
    if a.len() == b.len() && (composite(a) || composite(b)) {
        for (i, (e, f)) in a.iter().zip(b).enumerate() {
            path.push(Step::Index(i));
            compare(path, e, f, out);
            path.pop();
        }
        return;
    }
    let removed: Vec<Value> = a.iter().filter(|e| !b.contains(e)).cloned().collect();
    let added: Vec<Value> = b.iter().filter(|e| !a.contains(e)).cloned().collect();
    let mut blocks = list_blocks(&removed, &added);
    if blocks.is_empty() && a != b {
        let show = |l: &[Value]| l.iter().map(scalar_text).collect::<Vec<_>>().join(", ");
        blocks.push(format!("⇆ order changed\n- {}\n+ {}\n", show(a), show(b)));
    }
    if !blocks.is_empty() {
        out.push(Difference {
            path: path.clone(),
            blocks,
        });
    }
}

fn list_blocks(removed: &[Value], added: &[Value]) -> Vec<String> {
    let mut blocks = Vec::new();
    if !removed.is_empty() {
        blocks.push(entries_block(
            '-',
            &plural(removed.len(), "list entry", "list entries"),
            "removed",
            &Value::Array(removed.to_vec()),
        ));
    }
    if !added.is_empty() {
        blocks.push(entries_block(
            '+',
            &plural(added.len(), "list entry", "list entries"),
            "added",
            &Value::Array(added.to_vec()),
        ));
    }
    blocks
}

fn plural(n: usize, one: &str, many: &str) -> String {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let count = WORDS
        .get(n)
        .map(|w| w.to_string())
        .unwrap_or_else(|| n.to_string());
    format!("{count} {}", if n == 1 { one } else { many })
}

/// `+ one map entry added:` and the entries as YAML under it. dyff indents added entries by
/// two columns and removed ones by the report's indent, which flux sets to none; it writes them
/// with go-yaml v3, whose quoted strings are double-quoted.
fn entries_block(sign: char, what: &str, verb: &str, entries: &Value) -> String {
    let mut block = format!("{sign} {what} {verb}:\n");
    let indent = if sign == '+' { "  " } else { "" };
    let yaml = ferroflux_kustomize::yaml::emit::render_document(entries);
    for line in yaml.lines() {
        let _ = writeln!(block, "{indent}{}", double_quoted(line));
    }
    block
}

/// A line of go-yaml v2 output whose value is a single-quoted scalar, with the value
/// double-quoted as go-yaml v3 writes it; other lines unchanged.
fn double_quoted(line: &str) -> String {
    let Some(body) = line.strip_suffix('\'') else {
        return line.to_string();
    };
    // The opening quote is where a value starts: at the indentation's end, after `key: ` or
    // after `- `.
    let start = body.match_indices('\'').map(|(i, _)| i).find(|&i| {
        let before = &body[..i];
        before.trim().is_empty() || before.ends_with(": ") || before.ends_with("- ")
    });
    let Some(start) = start else {
        return line.to_string();
    };
    let value = &body[start + 1..];
    if value.replace("''", "").contains('\'') {
        return line.to_string();
    }
    let text = value.replace("''", "'");
    format!("{}{}", &body[..start], Value::String(text))
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => ferroflux_kustomize::yaml::emit::render_document(v)
            .trim_end()
            .to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// A changed value: `± value change` (or `± type change from int to string`), then the old
/// and new values; multi-line strings get a line diff.
fn modification(from: &Value, to: &Value) -> String {
    if let (Value::String(a), Value::String(b)) = (from, to)
        && (a.contains('\n') || b.contains('\n'))
    {
        return multiline_change(a, b);
    }
    let (ta, tb) = (type_name(from), type_name(to));
    let mut block = if ta == tb {
        "± value change\n".to_string()
    } else {
        format!("± type change from {ta} to {tb}\n")
    };
    for (sign, v) in [('-', from), ('+', to)] {
        for (i, line) in scalar_text(v).lines().enumerate() {
            if i == 0 {
                let _ = writeln!(block, "{sign} {line}");
            } else {
                let _ = writeln!(block, "  {line}");
            }
        }
    }
    block
}

fn multiline_change(a: &str, b: &str) -> String {
    let old: Vec<&str> = a.trim_end_matches('\n').split('\n').collect();
    let new: Vec<&str> = b.trim_end_matches('\n').split('\n').collect();
    // Longest common subsequence of lines; the texts are field values, small enough.
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let (mut ins, mut del) = (0, 0);
    let mut body = String::new();
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(body, "- {}", old[i]);
            del += 1;
            i += 1;
        } else {
            let _ = writeln!(body, "+ {}", new[j]);
            ins += 1;
            j += 1;
        }
    }
    format!(
        "± value change in multiline text ({}, {})\n{body}\n",
        plural_number(ins, "insert"),
        plural_number(del, "deletion")
    )
}

fn plural_number(n: usize, word: &str) -> String {
    plural(n, word, &format!("{word}s"))
}

/// Blocks side by side when they fit in 80 columns (dyff's table style outside a terminal),
/// one under the other otherwise.
fn text_blocks(blocks: &[String]) -> String {
    const SEPARATOR: &str = "   ";
    const WIDTH: usize = 80;
    let columns: Vec<Vec<&str>> = blocks
        .iter()
        .map(|b| b.trim_end_matches('\n').split('\n').collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .map(|c| c.iter().map(|l| l.chars().count()).max().unwrap_or(0))
        .collect();
    let total = widths.iter().sum::<usize>() + SEPARATOR.len() * blocks.len().saturating_sub(1);
    let mut out = String::new();
    if blocks.len() == 1 || total > WIDTH {
        for b in blocks {
            for line in b.trim_end_matches('\n').split('\n') {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        return out;
    }
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    for r in 0..rows {
        let mut line = String::new();
        for (c, col) in columns.iter().enumerate() {
            if c > 0 {
                line.push_str(SEPARATOR);
            }
            let cell = col.get(r).copied().unwrap_or("");
            line.push_str(cell);
            line.push_str(&" ".repeat(widths[c] - cell.chars().count()));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// flux's `diff-with-drifted-service.golden` case.
    #[test]
    fn a_changed_port_in_a_named_list() {
        let live = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "podinfo", "resourceVersion": "7"},
            "spec": {"ports": [{"name": "http", "port": 9899}, {"name": "grpc", "port": 9999}]}});
        let mut merged = live.clone();
        merged["spec"]["ports"][0]["port"] = json!(9898);
        merged["metadata"]["resourceVersion"] = json!("8");
        assert_eq!(
            report(&live, &merged),
            "\nspec.ports.http.port\n± value change\n- 9899\n+ 9898\n\n"
        );
    }

    /// flux's `diff-taking-ownership.golden` case.
    #[test]
    fn added_labels() {
        let live = json!({"metadata": {"name": "existing-config"}, "data": {"a": "b"}});
        let merged = json!({"metadata": {"name": "existing-config",
            "labels": {"kustomize.toolkit.fluxcd.io/name": "configmaps",
                       "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
            "data": {"a": "b"}});
        assert_eq!(
            report(&live, &merged),
            "\nmetadata\n+ one map entry added:\n  labels:\n    kustomize.toolkit.fluxcd.io/name: configmaps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n\n"
        );
    }

    /// flux's `diff-with-drifted-secret.golden` case: values masked, the change still shown.
    #[test]
    fn secret_values_are_masked_before_and_after() {
        let mut live = json!({"kind": "Secret", "data": {"password": "b2xk", "username": "YQ=="},
                              "stringData": {"token": "plain-old"}});
        let mut merged = json!({"kind": "Secret", "data": {"password": "bmV3", "username": "YQ=="},
                                "stringData": {"token": "plain-new"}});
        sanitize_secret(&mut live, &mut merged);
        let report = report(&live, &merged);
        assert_eq!(
            report,
            "\ndata.password\n± value change\n- *** (before)\n+ *** (after)\n\nstringData.token\n± value change\n- *** (before)\n+ *** (after)\n\n"
        );
        assert!(!report.contains("b2xk") && !report.contains("plain"));
    }

    /// flux's `diff-with-drifted-key-sops-secret.golden` case: removed entries are not
    /// indented, added ones are, and both are written as go-yaml v3 writes them.
    #[test]
    fn removed_and_added_keys_side_by_side() {
        let live = json!({"data": {"drift-key": "*****"}});
        let merged = json!({"data": {"token": "*****"}});
        assert_eq!(
            report(&live, &merged),
            "\ndata\n- one map entry removed:   + one map entry added:\ndrift-key: \"*****\"           token: \"*****\"\n\n"
        );
    }

    #[test]
    fn multiline_text_gets_a_line_diff() {
        let live = json!({"data": {"conf": "a\nb\nc\n"}});
        let merged = json!({"data": {"conf": "a\nB\nc\n"}});
        assert_eq!(
            report(&live, &merged),
            "\ndata.conf\n± value change in multiline text (one insert, one deletion)\n- b\n+ B\n\n"
        );
    }
}
