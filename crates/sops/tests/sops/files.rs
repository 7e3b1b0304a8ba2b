//! The test files and keys under `tests/fixtures`, and the comments of a text.

use ferroflux_sops::AgeIdentities;

/// A file under `tests/fixtures`.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The age identities of a key file under `tests/fixtures/keys`.
pub fn identities(key_file: &str) -> AgeIdentities {
    let text = String::from_utf8(fixture(&format!("keys/{key_file}"))).unwrap();
    AgeIdentities::parse(key_file, &text).unwrap()
}

/// The text of every comment of a YAML or dotenv text, in order (an end-of-line comment where
/// sops puts it: before its key or item, i.e. in the same order).
pub fn comment_texts(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| match l.trim_start().strip_prefix('#') {
            Some(c) => Some(c.trim().to_string()),
            None => l.find(" # ").map(|i| l[i + 3..].trim().to_string()),
        })
        .collect()
}
