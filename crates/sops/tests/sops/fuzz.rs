//! Fuzz target: SOPS decryption of mutated files (generator: `ferroflux-fuzzkit`). The files
//! sops itself encrypted (`tests/fixtures`) are mutated — bytes flipped, lines swapped or cut,
//! sops syntax inserted — and decrypted with the right keys, MAC checked, as a file and as a
//! Kubernetes object. Whatever the file, decryption returns the plaintext or an error, never a
//! panic or a hang, and no error carries a word of the plaintext (a secret).
//!
//! `FUZZ_CASES=100000 cargo test -p ferroflux-sops --test sops fuzz` runs longer.

use crate::files::fixture;
use ferroflux_fuzzkit::run;
use ferroflux_sops::{AgeIdentities, Decryptor, Format};

/// The encrypted files and the plaintext each was made from.
const CORPUS: &[(&str, &str)] = &[
    ("generated/app.enc.env", "generated/app.plain.env"),
    ("generated/groups.enc.yaml", "generated/groups.plain.yaml"),
    (
        "generated/mac-only.enc.yaml",
        "generated/mac-only.plain.yaml",
    ),
    ("generated/marked.enc.yaml", "generated/marked.plain.yaml"),
    ("generated/multi.enc.yaml", "generated/multi.plain.yaml"),
    ("generated/suffix.enc.json", "generated/suffix.plain.json"),
    (
        "generated/threshold.enc.yaml",
        "generated/threshold.plain.yaml",
    ),
    ("generated/types.enc.yaml", "generated/types.plain.yaml"),
    (
        "generated/unenc-regex.enc.yaml",
        "generated/unenc-regex.plain.yaml",
    ),
];

const DICTIONARY: &[&str] = &[
    "ENC[AES256_GCM,data:",
    ",iv:",
    ",tag:",
    ",type:str]",
    ",type:int]",
    ",type:comment]",
    "sops:",
    "mac:",
    "age:",
    "recipient:",
    "enc: |",
    "-----BEGIN AGE ENCRYPTED FILE-----",
    "lastmodified:",
    "version: 3.11.0",
    "encrypted_regex:",
    "shamir_threshold: 2",
    "key_groups:",
    "- ",
    "#ENC[",
    "\"sops\":",
    "{",
    "}",
    "[",
    "]",
    "\n",
    "  ",
    "=",
    "\t",
    "null",
    "~",
    "&a",
    "*a",
    "!!binary",
    "'",
    "\"",
];

fn identities() -> AgeIdentities {
    let mut text = String::from_utf8(fixture("keys/age.txt")).unwrap();
    text += &String::from_utf8(fixture("keys/age-global.txt")).unwrap();
    AgeIdentities::parse("keys", &text).unwrap()
}

/// The distinctive values of the plaintext (after `key: `, `- ` or `KEY=`) that the encrypted
/// file does not show: the secrets an error must never carry.
fn secret_values(plain: &[u8], encrypted: &[u8]) -> Vec<String> {
    let encrypted = String::from_utf8_lossy(encrypted);
    String::from_utf8_lossy(plain)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let l = l.split(" #").next().unwrap_or(l);
            let value = match l.rsplit_once(": ") {
                Some((_, v)) => v,
                None => match l.trim_start().strip_prefix("- ") {
                    Some(v) => v,
                    None => l.split_once('=')?.1,
                },
            };
            Some(value.trim().trim_matches('"').to_string())
        })
        // Distinctive values only: a plain word ("value", "false") is in error texts anyway.
        .filter(|v| v.len() >= 6 && v.contains(|c: char| c.is_ascii_digit() || "-@.=".contains(c)))
        .filter(|v| !encrypted.contains(v.as_str()))
        .collect()
}

#[test]
fn the_corpus_decrypts_before_mutation() {
    let d = Decryptor::new(identities());
    for (enc, _) in CORPUS {
        d.decrypt(enc, &fixture(enc), Format::from_path(enc))
            .unwrap_or_else(|e| panic!("{enc}: {e}"));
    }
}

#[test]
fn fuzz_mutated_sops_files_never_panic_nor_leak() {
    let decryptor = Decryptor::new(identities());
    let corpus: Vec<(&str, Vec<u8>, Vec<String>)> = CORPUS
        .iter()
        .map(|(enc, plain)| {
            let data = fixture(enc);
            // A value that is part of the file's name is shown by every error naming the file.
            let secrets = secret_values(&fixture(plain), &data)
                .into_iter()
                .filter(|v| !enc.contains(v.as_str()))
                .collect();
            (*enc, data, secrets)
        })
        .collect();
    run("sops_decrypt", 400, |rng| {
        let (name, data, secrets) = &corpus[rng.below(corpus.len())];
        let mutated = rng.mutate(data, DICTIONARY);
        let format = Format::from_path(name);
        let outcomes = [
            decryptor.decrypt(name, &mutated, format),
            decryptor.decrypt_as(name, &mutated, format, Format::Binary),
        ];
        for outcome in outcomes {
            if let Err(e) = outcome {
                let message = e.to_string();
                assert!(!message.is_empty(), "{name}: an empty error");
                for w in secrets {
                    assert!(
                        !message.contains(w.as_str()),
                        "{name}: the error shows {w:?}: {message}"
                    );
                }
            }
        }
        // As a Kubernetes object (the controller's path), when the mutation still parses.
        if format == Format::Yaml
            && let Ok(mut object) = serde_saphyr::from_slice::<serde_json::Value>(&mutated)
            && object.is_object()
            && let Err(e) = decryptor.decrypt_object(&mut object)
        {
            let message = e.to_string();
            for w in secrets {
                assert!(
                    !message.contains(w.as_str()),
                    "{name}: the error shows {w:?}: {message}"
                );
            }
        }
    });
}
