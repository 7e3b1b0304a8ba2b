//! The test vectors encrypted by the real sops: every age case decrypts (with MAC verification)
//! to the plaintext Flux's own tests expect of it; PGP and post-quantum cases fail clearly.

use ferroflux_sops::{AgeIdentities, Decryptor, Format, ObjectDecryption};
use serde_json::{Value, json};

use crate::files::{fixture, identities};

fn decryptor() -> Decryptor {
    Decryptor::new(identities("age.txt"))
}

fn yaml(text: &[u8]) -> Value {
    serde_saphyr::from_slice(text).unwrap()
}

#[test]
fn age_yaml_secret_decrypts_with_mac() {
    let out = decryptor()
        .decrypt(
            "algorithms/age.yaml",
            &fixture("algorithms/age.yaml"),
            Format::Yaml,
        )
        .unwrap();
    let doc = yaml(&out);
    assert_eq!(
        doc,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "age"},
            "stringData": {"key": "value"}
        })
    );
    // Key order of the document is kept.
    let text = String::from_utf8(out).unwrap();
    let order: Vec<usize> = ["apiVersion", "kind", "metadata", "stringData"]
        .iter()
        .map(|k| text.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn patches_decrypt_to_merge_values() {
    for (file, key, value) in [
        ("patches/merge1.yaml", "key", "merge1"),
        ("patches/merge2.yaml", "merge2", "merge2"),
    ] {
        let out = decryptor()
            .decrypt(file, &fixture(file), Format::Yaml)
            .unwrap();
        assert_eq!(yaml(&out)["stringData"][key], json!(value), "{file}");
    }
}

#[test]
fn global_key_secret_written_by_sops_3_10() {
    let d = Decryptor::new(identities("age-global.txt"));
    let out = d
        .decrypt(
            "global/secret.yaml",
            &fixture("global/secret.yaml"),
            Format::Yaml,
        )
        .unwrap();
    let doc = yaml(&out);
    assert_eq!(doc["stringData"]["key"], json!("global-value"));
    assert_eq!(doc["metadata"]["namespace"], json!("default"));
    assert_eq!(doc["type"], json!("Opaque"));
    assert!(doc.get("sops").is_none());
}

#[test]
fn dotenv_generator_inputs_decrypt() {
    for file in ["envs/env.env", "component/env.env"] {
        let out = decryptor()
            .decrypt(file, &fixture(file), Format::Dotenv)
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "key=value\n", "{file}");
    }
}

#[test]
fn binary_file_decrypts_to_original_bytes() {
    let out = decryptor()
        .decrypt("files/file.txt", &fixture("files/file.txt"), Format::Binary)
        .unwrap();
    assert_eq!(out, b"value");
}

#[test]
fn generator_input_api_skips_plain_files() {
    let d = decryptor();
    let out = d
        .decrypt_generator_input("files/file.txt", &fixture("files/file.txt"), Format::Binary)
        .unwrap();
    assert_eq!(out.as_deref(), Some(&b"value"[..]));
    let plain = d
        .decrypt_generator_input("plain.env", b"key=value\n", Format::Dotenv)
        .unwrap();
    assert_eq!(plain, None);
}

#[test]
fn sops_file_inside_secret_data_decrypts() {
    let mut obj = yaml(&fixture("inside/secret.yaml"));
    let res = decryptor()
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap();
    assert_eq!(res, ObjectDecryption::SecretEntries(vec!["key".into()]));
    // "key" has no extension: the plaintext is written as binary, i.e. the original bytes.
    assert_eq!(obj["data"]["key"], json!("dmFsdWU="));
}

#[test]
fn whole_object_decrypts_after_a_build_without_mac() {
    let mut obj = yaml(&fixture("algorithms/age.yaml"));
    // A build adds fields (namePrefix, namespace): the MAC no longer matches, which is why
    // objects decrypted after a build skip the check.
    obj["metadata"]["name"] = json!("algo-age");
    obj["metadata"]["namespace"] = json!("team-a");
    let res = decryptor()
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap();
    assert_eq!(res, ObjectDecryption::Whole);
    assert_eq!(obj["stringData"]["key"], json!("value"));
    assert_eq!(obj["metadata"]["name"], json!("algo-age"));
    assert!(obj.get("sops").is_none());

    // With the MAC check on, the same edit is caught.
    let mut obj = yaml(&fixture("algorithms/age.yaml"));
    obj["metadata"]["name"] = json!("algo-age");
    let err = decryptor().decrypt_object(&mut obj).unwrap_err();
    assert!(err.to_string().contains("MAC mismatch"), "{err}");
    assert!(err.to_string().starts_with("Secret algo-age:"), "{err}");
}

#[test]
fn decryption_disabled_annotation_leaves_object() {
    let mut obj = yaml(&fixture("algorithms/age.yaml"));
    obj["metadata"]["annotations"] = json!({"kustomize.toolkit.fluxcd.io/decrypt": "Disabled"});
    let before = obj.clone();
    let res = decryptor().decrypt_object(&mut obj).unwrap();
    assert_eq!(res, ObjectDecryption::Unchanged);
    assert_eq!(obj, before);
}

#[test]
fn pgp_file_is_not_supported_yet() {
    let err = decryptor()
        .decrypt(
            "algorithms/pgp.yaml",
            &fixture("algorithms/pgp.yaml"),
            Format::Yaml,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("algorithms/pgp.yaml: not supported yet: pgp"),
        "{msg}"
    );
}

#[test]
fn post_quantum_file_is_not_supported_yet() {
    let mut ids = identities("age.txt");
    // The post-quantum identity is read but set aside, not an error.
    let pq = String::from_utf8(fixture("keys/age-pq.txt")).unwrap();
    ids.add("age-pq.txt", &pq).unwrap();
    assert_eq!(ids.len(), 1);
    assert_eq!(ids.skipped().len(), 1);
    let err = Decryptor::new(ids)
        .decrypt(
            "algorithms/age-pq.yaml",
            &fixture("algorithms/age-pq.yaml"),
            Format::Yaml,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("algorithms/age-pq.yaml: not supported yet: age post-quantum"),
        "{msg}"
    );
}

#[test]
fn key_secret_entries() {
    let age = fixture("keys/age.txt");
    let pgp = b"-----BEGIN PGP PRIVATE KEY BLOCK-----".to_vec();
    let ids = AgeIdentities::from_secret_entries(
        "Secret flux-system/sops-keys",
        [("age.agekey", age.as_slice()), ("pgp.asc", pgp.as_slice())],
    )
    .unwrap();
    assert_eq!(
        ids.recipients(),
        ["age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29"]
    );
}
