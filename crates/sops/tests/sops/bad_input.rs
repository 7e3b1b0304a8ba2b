//! Bad inputs at the library level (the API the Kustomization controller calls): each error
//! names the object or entry and the reason, and none contains plaintext.

use base64::Engine;
use ferroflux_sops::{
    AgeIdentities, DEFAULT_MAX_SIZE, Decryptor, EncryptOptions, Format, Selection, encrypt,
};
use serde_json::json;

use crate::files::{fixture, identities};

#[test]
fn staging_key_cannot_open_production_object() {
    let mut obj: serde_json::Value =
        serde_saphyr::from_slice(&fixture("algorithms/age.yaml")).unwrap();
    obj["metadata"]["namespace"] = json!("prod");
    let before = obj.clone();
    let err = Decryptor::new(identities("age-global.txt"))
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
    let err = Decryptor::new(identities("age-global.txt"))
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("Secret ns/s data entry app.env: no age identity"),
        "{err}"
    );
    let res = Decryptor::new(identities("age.txt"))
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
    let err = Decryptor::new(identities("age.txt"))
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
    let err = Decryptor::new(identities("age.txt"))
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
    let err = Decryptor::new(identities("age.txt"))
        .decrypt("bad.yaml", b"a: [unclosed\n", Format::Yaml)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad.yaml: yaml: "), "{err}");
}

const A: &str = "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29";

const SIX: &str = "encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, unencrypted_comment_regex";

fn with_selection(selection: Selection) -> EncryptOptions {
    EncryptOptions {
        selection,
        ..EncryptOptions::for_recipients([A])
    }
}

fn encrypt_error(file: &str, format: Format, data: &str, selection: Selection) -> String {
    encrypt(file, data.as_bytes(), format, &with_selection(selection))
        .unwrap_err()
        .to_string()
}

fn decrypt_error(file: &str, data: &[u8]) -> String {
    Decryptor::new(identities("age.txt"))
        .decrypt(file, data, Format::Yaml)
        .unwrap_err()
        .to_string()
}

#[test]
fn invalid_comment_regexes_are_refused() {
    for (selection, name) in [
        (
            Selection {
                encrypted_comment_regex: Some("sops:(enc".into()),
                ..Default::default()
            },
            "encrypted_comment_regex",
        ),
        (
            Selection {
                unencrypted_comment_regex: Some("sops:(clear".into()),
                ..Default::default()
            },
            "unencrypted_comment_regex",
        ),
    ] {
        let err = encrypt_error("a.yaml", Format::Yaml, "a: 1\n", selection);
        assert!(
            err.starts_with(&format!(
                "a.yaml: encryption failed: {name}: regex parse error:"
            )),
            "{err}"
        );
        assert!(err.contains("unclosed group"), "{err}");
    }
    // In the metadata of a file to decrypt (sops writes the regex without checking it).
    let text = String::from_utf8(fixture("algorithms/age.yaml")).unwrap();
    let edited = text.replace(
        "  encrypted_regex: ^(data|stringData)$\n",
        "  unencrypted_comment_regex: sops:(clear\n",
    );
    assert_ne!(text, edited);
    let err = decrypt_error("age.yaml", edited.as_bytes());
    assert!(
        err.starts_with(
            "age.yaml: invalid sops metadata: unencrypted_comment_regex: regex parse error:"
        ),
        "{err}"
    );
}

/// sops allows one of its six selectors per file (mac_only_encrypted goes with any).
#[test]
fn a_comment_regex_with_another_selector_is_refused() {
    let both = Selection {
        encrypted_comment_regex: Some("sops:enc".into()),
        unencrypted_comment_regex: Some("sops:clear".into()),
        ..Default::default()
    };
    let with_regex = Selection {
        encrypted_comment_regex: Some("sops:enc".into()),
        encrypted_regex: Some("^data$".into()),
        ..Default::default()
    };
    let with_suffix = Selection {
        unencrypted_comment_regex: Some("sops:clear".into()),
        unencrypted_suffix: Some("_clear".into()),
        ..Default::default()
    };
    for selection in [both, with_regex, with_suffix] {
        assert_eq!(
            encrypt_error("a.yaml", Format::Yaml, "a: 1\n", selection),
            format!("a.yaml: encryption failed: use at most one of {SIX}")
        );
    }
    let ok = Selection {
        encrypted_comment_regex: Some("sops:enc".into()),
        mac_only_encrypted: true,
        ..Default::default()
    };
    encrypt("a.yaml", b"a: 1\n", Format::Yaml, &with_selection(ok)).unwrap();

    // A file whose metadata names two of them.
    let text = String::from_utf8(fixture("algorithms/age.yaml")).unwrap();
    let edited = text.replace(
        "  encrypted_regex: ^(data|stringData)$\n",
        "  encrypted_regex: ^(data|stringData)$\n  encrypted_comment_regex: sops:enc\n",
    );
    assert_ne!(text, edited);
    assert_eq!(
        decrypt_error("age.yaml", edited.as_bytes()),
        format!("age.yaml: invalid sops metadata: more than one of {SIX} is set")
    );
}

#[test]
fn comment_regexes_that_would_leave_everything_clear_are_refused() {
    let marked = Selection {
        encrypted_comment_regex: Some("sops:enc".into()),
        ..Default::default()
    };
    assert_eq!(
        encrypt_error("a.json", Format::Json, "{\"a\": 1}", marked.clone()),
        "a.json: encryption failed: encrypted_comment_regex with a JSON file would leave every value in clear: JSON has no comments to mark values with"
    );
    assert_eq!(
        encrypt_error("blob", Format::Binary, "bytes", marked),
        "blob: encryption failed: a binary file is encrypted whole: the options choosing which values are encrypted (and mac_only_encrypted) do not apply to it"
    );
}

#[test]
fn unencrypted_comment_regex_matching_encrypted_comments_is_refused() {
    let selection = Selection {
        unencrypted_comment_regex: Some("ENC".into()),
        ..Default::default()
    };
    let err = encrypt_error("a.yaml", Format::Yaml, "s:\n  # note\n  a: 1\n", selection);
    assert!(
        err.starts_with("a.yaml: encryption failed: unencrypted_comment_regex \"ENC\" matches the encrypted form of a comment at s (ENC[AES256_GCM,data:"),
        "{err}"
    );
    assert!(err.ends_with("…): decryption would take it for a clear comment and leave what follows it in clear; use a regex that cannot match an encrypted comment"), "{err}");
}

/// Comments are outside the MAC, but a marker comment decides what is encrypted: changing it
/// changes what decryption reads as encrypted, which the MAC (or the values) catch. Nothing
/// decrypted comes out.
#[test]
fn tampered_marker_comments_fail() {
    let plain = "s:\n  # sops:enc\n  password: hunter2\n  user: admin\nl:\n  - a\n  # sops:enc\n  - b-secret\n";
    let marked = with_selection(Selection {
        encrypted_comment_regex: Some("sops:enc".into()),
        ..Default::default()
    });
    let enc =
        String::from_utf8(encrypt("m.yaml", plain.as_bytes(), Format::Yaml, &marked).unwrap())
            .unwrap();
    assert!(
        !enc.contains("hunter2") && !enc.contains("b-secret"),
        "{enc}"
    );
    // Removing a marker: its value is now read as clear.
    let removed = enc.replace("  # sops:enc\n  password:", "  password:");
    assert_ne!(removed, enc);
    assert_eq!(
        decrypt_error("m.yaml", removed.as_bytes()),
        "m.yaml: MAC mismatch: the file's content was changed after it was encrypted"
    );
    let removed_in_list = enc.replace("  # sops:enc\n  - ENC[", "  - ENC[");
    assert_ne!(removed_in_list, enc);
    assert_eq!(
        decrypt_error("m.yaml", removed_in_list.as_bytes()),
        "m.yaml: MAC mismatch: the file's content was changed after it was encrypted"
    );
    // Adding a marker: a clear value is now read as encrypted.
    let added = enc.replace("  user: admin", "  # sops:enc\n  user: admin");
    assert_ne!(added, enc);
    assert!(
        decrypt_error("m.yaml", added.as_bytes()).starts_with("m.yaml: value at s.user: "),
        "{enc}"
    );

    let unmarked = with_selection(Selection {
        unencrypted_comment_regex: Some("sops:clear".into()),
        ..Default::default()
    });
    let plain = "s:\n  password: hunter2\n  # sops:clear\n  user: admin\n";
    let enc =
        String::from_utf8(encrypt("u.yaml", plain.as_bytes(), Format::Yaml, &unmarked).unwrap())
            .unwrap();
    // A marker slipped in before an encrypted value: read as clear, the MAC catches it.
    let added = enc.replace("  password:", "  # sops:clear\n  password:");
    assert_ne!(added, enc);
    assert_eq!(
        decrypt_error("u.yaml", added.as_bytes()),
        "u.yaml: MAC mismatch: the file's content was changed after it was encrypted"
    );
}

/// A comment sops encrypted into a list item is data it wrote: damage to it is an error (a
/// damaged comment line, by contrast, is kept as written, as sops does for older files).
#[test]
fn damaged_list_comment_item_fails() {
    let enc = String::from_utf8(
        encrypt(
            "l.yaml",
            b"l:\n  - a\n  # note\n  - b\n",
            Format::Yaml,
            &EncryptOptions::for_recipients([A]),
        )
        .unwrap(),
    )
    .unwrap();
    let start = enc.find("- ENC[AES256_GCM,data:").unwrap() + "- ENC[AES256_GCM,data:".len();
    let mut damaged = enc.clone();
    let flipped = if &enc[start..start + 1] == "A" {
        "B"
    } else {
        "A"
    };
    damaged.replace_range(start..start + 1, flipped);
    let err = decrypt_error("l.yaml", damaged.as_bytes());
    assert!(err.starts_with("l.yaml: value at l: "), "{err}");
    assert!(!err.contains("note"), "{err}");
}

/// After a kustomize build an object is JSON: the marker comments are gone, so an object
/// encrypted with a comment option cannot be decrypted there; it is refused and left as it was
/// (the same file decrypts from its bytes, comments included).
#[test]
fn objects_encrypted_with_comment_markers_are_refused_after_a_build() {
    let plain = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ns\nstringData:\n  # sops:enc\n  password: hunter2\n";
    let enc = encrypt(
        "s.yaml",
        plain.as_bytes(),
        Format::Yaml,
        &with_selection(Selection {
            encrypted_comment_regex: Some("sops:enc".into()),
            ..Default::default()
        }),
    )
    .unwrap();
    let mut obj: serde_json::Value = serde_saphyr::from_slice(&enc).unwrap();
    let before = obj.clone();
    let err = Decryptor::new(identities("age.txt"))
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "Secret ns/s: not supported yet: decrypting an object encrypted with encrypted_comment_regex after a kustomize build, which drops the comments that mark its values (encrypt it with encrypted_regex, or use it as a secretGenerator file)"
    );
    assert_eq!(obj, before);
    let out = Decryptor::new(identities("age.txt"))
        .decrypt("s.yaml", &enc, Format::Yaml)
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), plain);
}

#[test]
fn decryptor_can_be_shared_across_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<Decryptor>();
    shared::<AgeIdentities>();
}
