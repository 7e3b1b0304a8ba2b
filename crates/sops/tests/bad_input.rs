//! Bad inputs at the library level (the API the Kustomization controller calls): each error
//! names the object or entry and the reason, and none contains plaintext.

use base64::Engine;
use ferroflux_sops::{AgeIdentities, DEFAULT_MAX_SIZE, Decryptor, EncryptOptions, Format, encrypt};
use serde_json::json;

fn read(path: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn ids(file: &str) -> AgeIdentities {
    AgeIdentities::parse(
        file,
        &String::from_utf8(read(&format!("keys/{file}"))).unwrap(),
    )
    .unwrap()
}

#[test]
fn staging_key_cannot_open_production_object() {
    let mut obj: serde_json::Value =
        serde_saphyr::from_slice(&read("algorithms/age.yaml")).unwrap();
    obj["metadata"]["namespace"] = json!("prod");
    let before = obj.clone();
    let err = Decryptor::new(ids("age-global.txt"))
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("Secret prod/age: no age identity can decrypt the data key: the file is encrypted for age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29"), "{err}");
    // The object is left as it was: still encrypted, nothing half-decrypted.
    assert_eq!(obj, before);
}

#[test]
fn secret_data_entry_error_names_the_entry() {
    let plain = b"TOKEN=abc\n";
    let enc = encrypt(
        "t.env",
        plain,
        Format::Dotenv,
        &EncryptOptions::for_recipients([
            "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29",
        ]),
    )
    .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&enc);
    let mut obj = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": {"app.env": b64, "plain": "aGVsbG8="}});
    let err = Decryptor::new(ids("age-global.txt"))
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("Secret ns/s data entry app.env: no age identity"),
        "{err}"
    );
    let res = Decryptor::new(ids("age.txt"))
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap();
    assert_eq!(
        res,
        ferroflux_sops::ObjectDecryption::SecretEntries(vec!["app.env".into()])
    );
    assert_eq!(obj["data"]["app.env"], json!("VE9LRU49YWJjCg=="));
    assert_eq!(obj["data"]["plain"], json!("aGVsbG8="));
}

#[test]
fn key_secret_without_agekey_entries() {
    let err = AgeIdentities::from_secret_entries(
        "Secret flux-system/sops-keys",
        [
            ("identity.asc", &b"-----BEGIN PGP"[..]),
            ("notes.txt", &b"x"[..]),
        ],
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "Secret flux-system/sops-keys: the key Secret has no *.agekey entry"
    );
}

#[test]
fn agekey_entry_with_garbage() {
    let err = AgeIdentities::from_secret_entries(
        "Secret flux-system/sops-keys",
        [("prod.agekey", &b"AGE-SECRET-KEY-1QQQQ"[..])],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "Secret flux-system/sops-keys entry prod.agekey: line 1: invalid age identity"
        ),
        "{err}"
    );
}

#[test]
fn oversized_input_is_refused_before_parsing() {
    let big = vec![b' '; 100 << 20];
    let err = Decryptor::new(ids("age.txt"))
        .decrypt("big.yaml", &big, Format::Yaml)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "big.yaml: file is {} bytes, above the limit of {DEFAULT_MAX_SIZE} bytes for sops-encrypted files",
            100 << 20
        )
    );
}

#[test]
fn file_without_metadata() {
    let err = Decryptor::new(ids("age.txt"))
        .decrypt("plain.yaml", b"a: b\n", Format::Yaml)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "plain.yaml: no sops metadata found: the file is not sops-encrypted"
    );
}

#[test]
fn invalid_yaml_is_a_format_error() {
    let err = Decryptor::new(ids("age.txt"))
        .decrypt("bad.yaml", b"a: [unclosed\n", Format::Yaml)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad.yaml: yaml: "), "{err}");
}

#[test]
fn comment_regex_rules_are_not_supported_yet() {
    let text = String::from_utf8(read("algorithms/age.yaml")).unwrap();
    let edited = text.replace(
        "  encrypted_regex: ^(data|stringData)$\n",
        "  unencrypted_comment_regex: sops:clear\n",
    );
    assert_ne!(text, edited);
    let err = Decryptor::new(ids("age.txt"))
        .decrypt("age.yaml", edited.as_bytes(), Format::Yaml)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "age.yaml: not supported yet: unencrypted_comment_regex"
    );
}

#[test]
fn decryptor_can_be_shared_across_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<Decryptor>();
    shared::<AgeIdentities>();
}
