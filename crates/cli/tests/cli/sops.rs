//! `ferroflux sops encrypt|decrypt` end to end, including every bad input issue 8 names: each
//! fails with exit code 1 (never a panic) and a message naming the file and the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const A: &str = "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29";
const B: &str = "age1henwn645drkd3fa34t27t2w2x0nsgw3w4h62gmg5x5xflyjpy38s5cncph";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sops/tests/fixtures")
}

fn key(name: &str) -> PathBuf {
    fixtures().join("keys").join(name)
}

/// Runs the binary with a clean environment: no sops variables, an empty HOME (so no default
/// key file is picked up), no backtraces.
fn ferroflux(args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferroflux"));
    cmd.args(args)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The command failed cleanly (exit 1, not a panic) and said `needles`.
fn fails_with(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a clean failure: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected {n:?} in:\n{err}");
    }
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn encrypted_yaml(dir: &tempfile::TempDir) -> PathBuf {
    let plain = dir.path().join("secret.yaml");
    std::fs::write(
        &plain,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n",
    )
    .unwrap();
    let out = ferroflux(
        &[
            "sops",
            "encrypt",
            "--age",
            A,
            "--encrypted-regex",
            "^(data|stringData)$",
            s(&plain),
        ],
        &[],
    );
    let enc = ok(&out);
    assert!(!enc.contains("hunter2"));
    assert!(enc.contains("name: db"));
    let path = dir.path().join("secret.enc.yaml");
    std::fs::write(&path, enc).unwrap();
    path
}

#[test]
fn encrypt_then_decrypt_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in [
        ("a.yaml", "a: 1\nb:\n  c: text\n"),
        (
            "a.json",
            "{\n\t\"a\": 1,\n\t\"b\": {\n\t\t\"c\": \"text\"\n\t}\n}\n",
        ),
        ("a.env", "A=1\nB=text\n"),
        ("a.bin", "raw\nbytes\n"),
    ] {
        let plain = dir.path().join(name);
        std::fs::write(&plain, content).unwrap();
        let enc = ok(&ferroflux(
            &["sops", "encrypt", "--age", A, "--age", B, s(&plain)],
            &[],
        ));
        let enc_path = dir.path().join(format!("enc-{name}"));
        std::fs::write(&enc_path, &enc).unwrap();
        for k in ["age.txt", "age-global.txt"] {
            let out = ok(&ferroflux(
                &[
                    "sops",
                    "decrypt",
                    "--age-key-file",
                    s(&key(k)),
                    s(&enc_path),
                ],
                &[],
            ));
            assert_eq!(out, content, "{name} with {k}");
        }
    }
}

#[test]
fn input_type_overrides_extension() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("values.txt");
    std::fs::write(&plain, "k: v\n").unwrap();
    let enc = ok(&ferroflux(
        &[
            "sops",
            "encrypt",
            "--age",
            A,
            "--input-type",
            "yaml",
            s(&plain),
        ],
        &[],
    ));
    assert!(enc.contains("k: ENC[AES256_GCM,"), "{enc}");
    let enc_path = dir.path().join("values.enc.txt");
    std::fs::write(&enc_path, enc).unwrap();
    let out = ok(&ferroflux(
        &["sops", "decrypt", "--input-type", "yaml", s(&enc_path)],
        &[("SOPS_AGE_KEY_FILE", s(&key("age.txt")))],
    ));
    assert_eq!(out, "k: v\n");
}

#[test]
fn decrypts_real_sops_files_with_sops_environment_variables() {
    let file = fixtures().join("generated/app.enc.env");
    let want = std::fs::read_to_string(fixtures().join("generated/app.plain.env")).unwrap();
    let out = ok(&ferroflux(
        &["sops", "decrypt", s(&file)],
        &[("SOPS_AGE_KEY_FILE", s(&key("age.txt")))],
    ));
    assert_eq!(out, want);
    let key_text = std::fs::read_to_string(key("age.txt")).unwrap();
    let out = ok(&ferroflux(
        &["sops", "decrypt", s(&file)],
        &[("SOPS_AGE_KEY", &key_text)],
    ));
    assert_eq!(out, want);
}

#[test]
fn default_user_key_file_is_read() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/sops/age");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(key("age.txt"), dir.join("keys.txt")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["sops", "decrypt", s(&fixtures().join("files/file.txt"))])
        .env_clear()
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(ok(&out), "value");
}

#[test]
fn wrong_key_names_the_recipients() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age-global.txt")),
            s(&enc),
        ],
        &[],
    );
    fails_with(
        &out,
        &[
            s(&enc),
            "no age identity can decrypt the data key",
            A,
            "the 1 identity given matches none of them",
        ],
    );
}

#[test]
fn corrupted_enc_value_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let text = std::fs::read_to_string(&enc).unwrap();
    // Flip one base64 character of the encrypted password.
    let start = text.find("password: ENC[AES256_GCM,data:").unwrap() + 31;
    let mut bytes = text.into_bytes();
    bytes[start] = if bytes[start] == b'A' { b'B' } else { b'A' };
    std::fs::write(&enc, bytes).unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    let err = fails_with(
        &out,
        &[
            s(&enc),
            "value at stringData.password",
            "authentication failed",
        ],
    );
    assert!(!err.contains("hunter2"));
}

#[test]
fn malformed_enc_value_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let text = std::fs::read_to_string(&enc).unwrap();
    let broken = text.replacen(",iv:", ",xx:", 1);
    std::fs::write(&enc, broken).unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    fails_with(
        &out,
        &[s(&enc), "value at stringData.password", "no iv field"],
    );
}

#[test]
fn truncated_armored_stanza() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let text = std::fs::read_to_string(&enc).unwrap();
    // Keep the armor's first two lines and its end marker: the header is cut short.
    let begin = text.find("-----BEGIN AGE ENCRYPTED FILE-----").unwrap();
    let end_marker = text.find("-----END AGE ENCRYPTED FILE-----").unwrap();
    let end = text[..end_marker].rfind('\n').unwrap() + 1;
    let first_lines: Vec<&str> = text[begin..end].lines().take(2).collect();
    let truncated = format!(
        "{}{}\n{}",
        &text[..begin],
        first_lines.join("\n"),
        &text[end..]
    );
    std::fs::write(&enc, truncated).unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    fails_with(
        &out,
        &[
            s(&enc),
            &format!("the age-encrypted data key for recipient {A} is damaged"),
        ],
    );
}

#[test]
fn unsupported_metadata_version() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let text = std::fs::read_to_string(&enc).unwrap();
    let old = text.replace("version: \"3.10.2\"", "version: 2.0.0");
    assert_ne!(old, text);
    std::fs::write(&enc, old).unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    fails_with(
        &out,
        &[s(&enc), "sops metadata version \"2.0.0\" is not supported"],
    );
}

#[test]
fn hundred_megabyte_file_is_refused_above_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.enc.yaml");
    // A sparse file: 100 MB long without writing 100 MB.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(100 * 1024 * 1024)
        .unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&big),
        ],
        &[],
    );
    fails_with(
        &out,
        &[
            s(&big),
            "file is 104857600 bytes, above the limit of 5242880 bytes",
        ],
    );
}

#[test]
fn missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let out = ferroflux(&["sops", "decrypt", s(&enc)], &[]);
    fails_with(
        &out,
        &[
            "no age key given: pass --age-key-file FILE, or set SOPS_AGE_KEY_FILE or SOPS_AGE_KEY",
            s(&enc),
            A,
        ],
    );
    let missing = dir.path().join("nope.txt");
    let out = ferroflux(
        &["sops", "decrypt", "--age-key-file", s(&missing), s(&enc)],
        &[],
    );
    fails_with(&out, &["reading age key file", s(&missing)]);
}

#[test]
fn key_file_with_garbage_is_refused_without_echoing_it() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "# comment\nAGE-SECRET-KEY-1NOTAKEY\n").unwrap();
    let out = ferroflux(
        &["sops", "decrypt", "--age-key-file", s(&bad), s(&enc)],
        &[],
    );
    let err = fails_with(&out, &[s(&bad), "line 2", "invalid age identity"]);
    assert!(!err.contains("NOTAKEY"), "{err}");
}

#[test]
fn tampered_clear_value_fails_the_mac_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let text = std::fs::read_to_string(&enc).unwrap();
    std::fs::write(&enc, text.replace("name: db", "name: other")).unwrap();
    let age_key = key("age.txt");
    let args = ["sops", "decrypt", "--age-key-file", s(&age_key), s(&enc)];
    fails_with(&ferroflux(&args, &[]), &[s(&enc), "MAC mismatch"]);
    let mut ignore = args.to_vec();
    ignore.insert(2, "--ignore-mac");
    let out = ok(&ferroflux(&ignore, &[]));
    assert!(
        out.contains("name: other") && out.contains("password: hunter2"),
        "{out}"
    );
}

#[test]
fn pgp_and_post_quantum_are_not_supported_yet() {
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&fixtures().join("algorithms/pgp.yaml")),
        ],
        &[],
    );
    fails_with(&out, &["algorithms/pgp.yaml: not supported yet: pgp"]);
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age-pq.txt")),
            s(&fixtures().join("algorithms/age-pq.yaml")),
        ],
        &[],
    );
    fails_with(&out, &["not supported yet: age post-quantum recipients"]);
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("x.yaml");
    std::fs::write(&plain, "a: b\n").unwrap();
    let out = ferroflux(&["sops", "encrypt", "--age", "age1pq1abc", s(&plain)], &[]);
    fails_with(&out, &["not supported yet: age post-quantum recipients"]);
}

#[test]
fn encrypting_an_encrypted_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let enc = encrypted_yaml(&dir);
    let out = ferroflux(&["sops", "encrypt", "--age", A, s(&enc)], &[]);
    fails_with(&out, &[s(&enc), "reserved for sops metadata"]);
}

#[test]
fn binary_input_that_is_not_text_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("blob.bin");
    std::fs::write(&plain, [0xffu8, 0xfe, 0x00, 0x01]).unwrap();
    let out = ferroflux(&["sops", "encrypt", "--age", A, s(&plain)], &[]);
    fails_with(&out, &[s(&plain), "binary: the file is not UTF-8"]);
}

/// YAML comments are kept as sops keeps them, in mappings and between list items; the ones
/// it cannot keep (inside a flow collection over several lines) are reported on stderr
/// instead of disappearing silently.
#[test]
fn yaml_comments_are_kept_or_reported() {
    // Written by the real sops: two encrypted comments, both come back in place.
    let enc = fixtures().join("generated/types.enc.yaml");
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    let plain = ok(&out);
    assert!(
        plain.starts_with("# a head comment\napiVersion: v1\n"),
        "{plain}"
    );
    assert!(
        plain.contains("  labels:\n    # inline comment\n    app: demo\n"),
        "{plain}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let with_comments = dir.path().join("c.yaml");
    let text =
        "# who owns this\nlist:\n  - a\n  # between items\n  - b\nscript: |\n  # not a comment\n";
    std::fs::write(&with_comments, text).unwrap();
    let out = ferroflux(&["sops", "encrypt", "--age", A, s(&with_comments)], &[]);
    let encrypted = ok(&out);
    assert!(!encrypted.contains("who owns"), "{encrypted}");
    assert!(!encrypted.contains("between items"), "{encrypted}");
    assert!(encrypted.starts_with("#ENC[AES256_GCM,"), "{encrypted}");
    assert!(encrypted.contains("  - ENC[AES256_GCM,"), "{encrypted}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let enc_path = dir.path().join("c.enc.yaml");
    std::fs::write(&enc_path, &encrypted).unwrap();
    let back = ok(&ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc_path),
        ],
        &[],
    ));
    assert_eq!(back, text);

    let flow = dir.path().join("flow.yaml");
    std::fs::write(&flow, "a: [1,\n  # inside the list\n  2]\nb: 1\n").unwrap();
    let out = ferroflux(&["sops", "encrypt", "--age", A, s(&flow)], &[]);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("flow.yaml: 1 YAML comment(s) have no mapping or list to hold them (inside a flow collection written over several lines) and are not kept in the encrypted file"),
        "{err}"
    );
}

/// `--encrypted-comment-regex` / `--unencrypted-comment-regex`: comments choose what is
/// encrypted, and the file decrypts back as it was.
#[test]
fn comment_regex_options() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, text, secret, clear) in [
        (
            "--encrypted-comment-regex",
            "s:\n  # sops:enc\n  password: hunter2\n  user: admin\nl:\n  - a\n  # sops:enc\n  - b-secret\n",
            ["hunter2", "b-secret"],
            ["# sops:enc", "user: admin", "- a"],
        ),
        (
            "--unencrypted-comment-regex",
            "s:\n  password: hunter2\n  # sops:enc\n  user: admin\nl:\n  - b-secret\n  # sops:enc\n  - a\n",
            ["hunter2", "b-secret"],
            ["# sops:enc", "user: admin", "- a"],
        ),
    ] {
        let plain = dir.path().join("m.yaml");
        std::fs::write(&plain, text).unwrap();
        let enc = ok(&ferroflux(
            &["sops", "encrypt", "--age", A, flag, "sops:enc", s(&plain)],
            &[],
        ));
        for v in secret {
            assert!(!enc.contains(v), "{flag}: {v} in clear:\n{enc}");
        }
        for v in clear {
            assert!(enc.contains(v), "{flag}: {v} not clear:\n{enc}");
        }
        let enc_path = dir.path().join("m.enc.yaml");
        std::fs::write(&enc_path, &enc).unwrap();
        let back = ok(&ferroflux(
            &[
                "sops",
                "decrypt",
                "--age-key-file",
                s(&key("age.txt")),
                s(&enc_path),
            ],
            &[],
        ));
        assert_eq!(back, text, "{flag}");
    }
}

#[test]
fn bad_comment_regex_options() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("m.yaml");
    std::fs::write(&plain, "a: 1\n").unwrap();
    for flag in ["--encrypted-comment-regex", "--unencrypted-comment-regex"] {
        let out = ferroflux(
            &["sops", "encrypt", "--age", A, flag, "sops:(", s(&plain)],
            &[],
        );
        let name = flag.trim_start_matches("--").replace('-', "_");
        fails_with(
            &out,
            &[&format!(
                "{}: encryption failed: {name}: regex parse error",
                s(&plain)
            )],
        );
        assert!(out.stdout.is_empty());
    }
    for other in [
        ["--unencrypted-comment-regex", "sops:clear"],
        ["--encrypted-regex", "^data$"],
        ["--unencrypted-suffix", "_clear"],
    ] {
        let out = ferroflux(
            &[
                "sops",
                "encrypt",
                "--age",
                A,
                "--encrypted-comment-regex",
                "sops:enc",
                other[0],
                other[1],
                s(&plain),
            ],
            &[],
        );
        fails_with(
            &out,
            &[
                "encryption failed: use at most one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex, unencrypted_comment_regex",
            ],
        );
        assert!(out.stdout.is_empty());
    }
}

/// A marker comment removed after encryption: the value it marked is read as clear, the MAC
/// does not match, and nothing decrypted is written.
#[test]
fn tampered_marker_comment_fails_the_mac() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("m.yaml");
    std::fs::write(
        &plain,
        "s:\n  # sops:enc\n  password: hunter2\n  user: admin\n",
    )
    .unwrap();
    let enc = ok(&ferroflux(
        &[
            "sops",
            "encrypt",
            "--age",
            A,
            "--encrypted-comment-regex",
            "sops:enc",
            s(&plain),
        ],
        &[],
    ));
    let tampered = enc.replace("  # sops:enc\n", "  # (marker removed)\n");
    assert_ne!(tampered, enc);
    let path = dir.path().join("m.enc.yaml");
    std::fs::write(&path, tampered).unwrap();
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&path),
        ],
        &[],
    );
    fails_with(
        &out,
        &[&format!(
            "{}: MAC mismatch: the file's content was changed after it was encrypted",
            s(&path)
        )],
    );
    assert!(out.stdout.is_empty());
}

/// sops 3.11 places a comment ending an outer mapping at the end of a file in that mapping, but
/// reads it back, in its own encrypted file, in the nested mapping before it: the comment does
/// not decrypt (sops warns and leaves it). The output keeps it as written and says so.
#[test]
fn comment_sops_cannot_read_back_is_kept_and_reported() {
    let enc = fixtures().join("generated/outer-end.enc.yaml");
    let out = ferroflux(
        &[
            "sops",
            "decrypt",
            "--age-key-file",
            s(&key("age.txt")),
            s(&enc),
        ],
        &[],
    );
    let plain = ok(&out);
    assert!(
        plain.starts_with("a:\n  b:\n    c: 1\n    #ENC[AES256_GCM,"),
        "{plain}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("outer-end.enc.yaml: 1 comment(s) did not decrypt and are left as written"),
        "{err}"
    );
}
