//! Vectors encrypted by sops 3.11 (`fixtures/generated/make.sh`) for the features the Flux
//! fixtures do not cover: every value type, comments, several documents, JSON, dotenv, each
//! encryption rule (the comment regexes included), `mac_only_encrypted`, several recipients, key
//! groups with Shamir thresholds.
//! Each decrypts, with MAC verification, to the plaintext it was made from.

use ferroflux_sops::{AgeIdentities, Decryptor, Format};
use serde_json::Value;

use crate::files::{comment_texts, fixture, identities};

fn both_keys() -> AgeIdentities {
    let mut ids = identities("age.txt");
    ids.add(
        "age-global.txt",
        &String::from_utf8(fixture("keys/age-global.txt")).unwrap(),
    )
    .unwrap();
    ids
}

/// YAML parsed the way the decryptor reads it (go-yaml v3 rules: legacy octal, strict booleans).
fn yaml_docs(bytes: &[u8]) -> Vec<Value> {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    options.strict_booleans = true;
    serde_saphyr::from_multiple_with_options(std::str::from_utf8(bytes).unwrap(), options).unwrap()
}

fn check_yaml(name: &str, ids: AgeIdentities) {
    let out = Decryptor::new(ids)
        .decrypt(
            name,
            &fixture(&format!("generated/{name}.enc.yaml")),
            Format::Yaml,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        yaml_docs(&out),
        yaml_docs(&fixture(&format!("generated/{name}.plain.yaml"))),
        "{name}: {}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn every_value_type_and_comments() {
    check_yaml("types", identities("age.txt"));
}

#[test]
fn decrypted_yaml_keeps_key_order_and_types() {
    let out = Decryptor::new(identities("age.txt"))
        .decrypt("types", &fixture("generated/types.enc.yaml"), Format::Yaml)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    let keys = [
        "apiVersion:",
        "kind:",
        "metadata:",
        "stringData:",
        "numbers:",
        "flags:",
        "nothing:",
        "list:",
        "public_unencrypted:",
        "nested_unencrypted:",
    ];
    let positions: Vec<usize> = keys
        .iter()
        .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    let doc = &yaml_docs(text.as_bytes())[0];
    assert_eq!(doc["numbers"]["int"], Value::from(42));
    assert_eq!(doc["numbers"]["octal"], Value::from(420));
    assert_eq!(doc["numbers"]["float"], Value::from(3.25));
    assert_eq!(doc["flags"]["on"], Value::from(true));
    assert_eq!(doc["flags"]["yes_string"], Value::from("yes"));
    assert_eq!(
        doc["stringData"]["multiline"],
        Value::from("line one\nline two\n")
    );
}

#[test]
fn several_documents() {
    check_yaml("multi", identities("age.txt"));
}

#[test]
fn unencrypted_regex() {
    check_yaml("unenc-regex", identities("age.txt"));
}

#[test]
fn mac_only_encrypted() {
    check_yaml("mac-only", identities("age.txt"));
}

#[test]
fn mac_only_encrypted_ignores_edits_to_clear_values() {
    let text = String::from_utf8(fixture("generated/mac-only.enc.yaml")).unwrap();
    let edited = text.replace("extra: not-in-mac", "extra: changed");
    assert_ne!(text, edited);
    let out = Decryptor::new(identities("age.txt"))
        .decrypt("mac-only", edited.as_bytes(), Format::Yaml)
        .unwrap();
    assert!(String::from_utf8(out).unwrap().contains("extra: changed"));
}

#[test]
fn either_of_two_recipients() {
    check_yaml("two-recipients", identities("age.txt"));
    check_yaml("two-recipients", identities("age-global.txt"));
}

#[test]
fn key_groups_need_every_group_at_threshold_two_of_two() {
    check_yaml("groups", both_keys());
    let err = Decryptor::new(identities("age.txt"))
        .decrypt(
            "groups.enc.yaml",
            &fixture("generated/groups.enc.yaml"),
            Format::Yaml,
        )
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("groups.enc.yaml: only 1 of 2 key groups could be decrypted and 2 are needed; key group 2: no age identity can decrypt"), "{err}");
    assert!(
        err.contains("age1henwn645drkd3fa34t27t2w2x0nsgw3w4h62gmg5x5xflyjpy38s5cncph"),
        "{err}"
    );
}

#[test]
fn shamir_threshold_two_of_three_groups() {
    // age.txt opens groups 1 and 3: enough.
    check_yaml("threshold", identities("age.txt"));
    // age-global.txt opens group 2 only.
    let err = Decryptor::new(identities("age-global.txt"))
        .decrypt(
            "threshold",
            &fixture("generated/threshold.enc.yaml"),
            Format::Yaml,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("only 1 of 3 key groups could be decrypted and 2 are needed"),
        "{err}"
    );
}

#[test]
fn json_with_encrypted_suffix() {
    let out = Decryptor::new(identities("age.txt"))
        .decrypt(
            "suffix",
            &fixture("generated/suffix.enc.json"),
            Format::Json,
        )
        .unwrap();
    let got: Value = serde_json::from_slice(&out).unwrap();
    let want: Value = serde_json::from_slice(&fixture("generated/suffix.plain.json")).unwrap();
    assert_eq!(got, want);
    // Keys without the suffix stayed clear in the encrypted file.
    let enc: Value = serde_json::from_slice(&fixture("generated/suffix.enc.json")).unwrap();
    assert_eq!(enc["name"], Value::from("app"));
    assert!(
        enc["db_password_secret"]
            .as_str()
            .unwrap()
            .starts_with("ENC[")
    );
}

#[test]
fn dotenv_round_trips_byte_for_byte() {
    let out = Decryptor::new(identities("age.txt"))
        .decrypt(
            "app.enc.env",
            &fixture("generated/app.enc.env"),
            Format::Dotenv,
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        String::from_utf8(fixture("generated/app.plain.env")).unwrap()
    );
}

#[test]
fn yaml_merge_keys_as_sops_writes_them() {
    // sops keeps `<<` as a key holding a copy of the aliased mapping, each value encrypted with
    // its own path (`derived:<<:user:`).
    check_yaml("merge", identities("age.txt"));
}

/// Files sops 3.11 encrypted with `encrypted_comment_regex` / `unencrypted_comment_regex`
/// (creation rules in `make.sh`): markers in mappings and between list items, a marker before
/// a list item that is a mapping. They decrypt with the MAC verified and give every comment
/// back in order.
#[test]
fn comment_regexes_and_list_comments() {
    for name in ["marked", "unmarked"] {
        check_yaml(name, identities("age.txt"));
        let out = Decryptor::new(identities("age.txt"))
            .decrypt(
                name,
                &fixture(&format!("generated/{name}.enc.yaml")),
                Format::Yaml,
            )
            .unwrap();
        let plain = fixture(&format!("generated/{name}.plain.yaml"));
        assert_eq!(
            comment_texts(std::str::from_utf8(&out).unwrap()),
            comment_texts(std::str::from_utf8(&plain).unwrap()),
            "{name}: {}",
            String::from_utf8_lossy(&out)
        );
    }
}
