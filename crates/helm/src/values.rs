//! User-supplied values as `helm template` collects them (Helm's `cli/values.Options`):
//! `-f` files (every YAML document of a file merged in order), then `--set-json`, `--set`,
//! `--set-string` and `--set-file`, each layer merged over the previous ones.

use std::path::Path;

use serde_json::{Map, Value};

use crate::strvals::{Reader, parse_into};

/// Helm's `LoadValues`: every document of a YAML stream (split on `---` lines) read as a map
/// and merged over the previous ones with [`merge_maps`].
///
/// Values may nest 10,000 levels deep, as in Helm: the reading runs on a grown stack, but the
/// caller drops what it gets back, so a caller on a small stack (under ~4 MB) should drop
/// such values inside `stacker::maybe_grow` or a thread with a bigger stack.
pub fn load_values(text: &str) -> Result<Map<String, Value>, String> {
    crate::util::deep(|| load_values_on_deep_stack(text))
}

fn load_values_on_deep_stack(text: &str) -> Result<Map<String, Value>, String> {
    let mut values = Map::new();
    for doc in split_documents(text)? {
        let current = crate::yaml::unmarshal_map(&doc)
            .map_err(|e| format!("cannot unmarshal yaml document: {e}"))?;
        values = merge_maps(values, current);
    }
    Ok(values)
}

/// k8s.io/apimachinery's `YAMLReader`: documents end at lines starting with `---`, which may
/// only be followed by spaces or a comment; empty documents are skipped.
fn split_documents(text: &str) -> Result<Vec<String>, String> {
    let mut docs = Vec::new();
    let mut buf = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(format!(
                    "error reading yaml document: invalid Yaml document separator: {trimmed}"
                ));
            }
            if !buf.is_empty() {
                docs.push(std::mem::take(&mut buf));
            }
            continue;
        }
        buf.push_str(line);
    }
    if !buf.is_empty() {
        docs.push(buf);
    }
    Ok(docs)
}

/// Helm's `MergeMaps`: `b` over `a`, recursing where both sides hold a map.
pub fn merge_maps(mut a: Map<String, Value>, b: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in b {
        match (a.get_mut(&k), v) {
            (Some(Value::Object(av)), Value::Object(bv)) => {
                let merged = merge_maps(std::mem::take(av), bv);
                *av = merged;
            }
            (_, v) => {
                a.insert(k, v);
            }
        }
    }
    a
}

/// The values flags of `helm template`, in the order Helm applies them.
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// `-f/--values`: files (`-` reads stdin).
    pub value_files: Vec<String>,
    /// `--set-json`
    pub json_values: Vec<String>,
    /// `--set`
    pub values: Vec<String>,
    /// `--set-string`
    pub string_values: Vec<String>,
    /// `--set-file`
    pub file_values: Vec<String>,
    /// `--set-literal`
    pub literal_values: Vec<String>,
    /// Where relative file names are read from (the current directory when `None`).
    pub base_dir: Option<std::path::PathBuf>,
}

impl ValueOptions {
    /// Helm's `Options.MergeValues`, with its error messages. Files are read relative to the
    /// current directory.
    pub fn merge(&self) -> Result<Map<String, Value>, String> {
        crate::util::deep(|| self.merge_on_deep_stack())
    }

    fn merge_on_deep_stack(&self) -> Result<Map<String, Value>, String> {
        let mut base = Map::new();
        for path in &self.value_files {
            let raw = read_file(self.base_dir.as_deref(), path)?;
            let current = load_values(&String::from_utf8_lossy(&raw))
                .map_err(|e| format!("failed to parse {path}: {e}"))?;
            base = merge_maps(base, current);
        }
        for value in &self.json_values {
            let trimmed = value.trim();
            if trimmed.starts_with('{') {
                let parsed: Map<String, Value> = serde_json::from_str(trimmed)
                    .map_err(|_| format!("failed parsing --set-json data JSON: {value}"))?;
                let parsed = match crate::yaml::floats(Value::Object(parsed)) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                base = merge_maps(base, parsed);
            } else {
                parse_into(value, &mut base, Reader::Json)
                    .map_err(|_| format!("failed parsing --set-json data {value}"))?;
            }
        }
        for value in &self.values {
            parse_into(value, &mut base, Reader::Typed)
                .map_err(|e| format!("failed parsing --set data: {e}"))?;
        }
        for value in &self.string_values {
            parse_into(value, &mut base, Reader::String)
                .map_err(|e| format!("failed parsing --set-string data: {e}"))?;
        }
        let read = |name: &str| -> Result<Value, String> {
            let raw = read_file(self.base_dir.as_deref(), name)?;
            // Helm's `string(bytes)`: a file that is not UTF-8 keeps its bytes (gostr's form).
            Ok(Value::String(ferroflux_gotemplate::gostr::from_bytes(&raw)))
        };
        for value in &self.file_values {
            parse_into(value, &mut base, Reader::File(&read))
                .map_err(|e| format!("failed parsing --set-file data: {e}"))?;
        }
        for value in &self.literal_values {
            parse_into(value, &mut base, Reader::Literal)
                .map_err(|e| format!("failed parsing --set-literal data: {e}"))?;
        }
        Ok(base)
    }
}

/// Reads a values file as Helm does: `-` is stdin; errors read like Go's `os.ReadFile`.
fn read_file(base: Option<&Path>, path: &str) -> Result<Vec<u8>, String> {
    if path.trim() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("read /dev/stdin: {e}"))?;
        return Ok(buf);
    }
    let full = match base {
        Some(b) if !Path::new(path).is_absolute() => b.join(path),
        _ => Path::new(path).to_path_buf(),
    };
    std::fs::read(full).map_err(|e| format!("open {path}: {}", go_io_error(&e)))
}

/// The text Go prints for common file errors (`no such file or directory`...).
pub fn go_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        _ => {
            let s = e.to_string();
            // Rust appends " (os error N)"; Go does not.
            match s.find(" (os error") {
                Some(i) => s[..i].to_lowercase(),
                None => s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn multi_document_values_merge() {
        let v =
            load_values("a:\n  b: 1\n  c: 2\n---\na:\n  b: 3\n--- # c\nd: x\n").unwrap_or_default();
        assert_eq!(
            Value::Object(v),
            json!({"a": {"b": 3.0, "c": 2.0}, "d": "x"})
        );
        assert!(
            load_values("a: 1\n--- x\n")
                .err()
                .unwrap_or_default()
                .contains("invalid Yaml document separator: x")
        );
    }
}
