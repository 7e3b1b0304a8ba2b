//! Signatures made by ferroflux-gitsign checked by the real verifiers: `ssh-keygen -Y verify`
//! for SSHSIG, `gpg --verify` (in a temporary GNUPGHOME) for OpenPGP, both with flux's key
//! fixtures; a changed payload must not verify. Bad keys and passphrases get their messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ferroflux_gitsign::pgp::load_signer;
use ferroflux_gitsign::{PgpKeyError, SshKeyError, SshSigner};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/fixtures/goldens/bootstrap")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// Now, in seconds: gpg refuses a signature older than its key.
fn now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

const PAYLOAD: &[u8] = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor Flux <> 1700000000 +0000\ncommitter Flux <> 1700000000 +0000\n\nAdd Flux component and sync manifests\n";

/// `ssh-keygen -Y verify` of `sig` over `payload` for the signer's public key.
fn ssh_verifies(dir: &Path, public: &str, sig: &str, payload: &[u8]) -> bool {
    let allowed = dir.join("allowed_signers");
    std::fs::write(&allowed, format!("flux@example.com {public}\n")).unwrap();
    let sig_file = dir.join("sig");
    std::fs::write(&sig_file, sig).unwrap();
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", "git", "-I", "flux@example.com", "-f"])
        .arg(&allowed)
        .arg("-s")
        .arg(&sig_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ssh-keygen");
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait().unwrap().success()
}

#[test]
fn ssh_signatures_verify_with_ssh_keygen_and_a_changed_payload_does_not() {
    let dir = tempfile::tempdir().unwrap();
    for (file, pass) in [
        ("ed25519.private", ""),
        ("ed25519-encrypted.private", "abcde12345"),
    ] {
        let signer = SshSigner::from_openssh(&read(file), pass.as_bytes()).unwrap();
        let sig = signer.sign(PAYLOAD).unwrap();
        assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"), "{sig}");
        assert!(
            ssh_verifies(dir.path(), &signer.public_key(), &sig, PAYLOAD),
            "{file}"
        );
        let mut tampered = PAYLOAD.to_vec();
        tampered[60] ^= 1;
        assert!(!ssh_verifies(
            dir.path(),
            &signer.public_key(),
            &sig,
            &tampered
        ));
    }
}

#[test]
fn bad_ssh_keys_and_passphrases_are_named() {
    let err = |file: &str, pass: &str| {
        SshSigner::from_openssh(&read(file), pass.as_bytes())
            .unwrap_err()
            .to_string()
    };
    assert!(
        err("malformed.private", "").starts_with("could not parse SSH signing key: "),
        "{}",
        err("malformed.private", "")
    );
    assert_eq!(
        err("ed25519-encrypted.private", ""),
        "SSH signing key is encrypted; passphrase required"
    );
    assert_eq!(
        err("ed25519-encrypted.private", "wrong"),
        "could not parse SSH signing key: the passphrase does not decrypt it"
    );
}

/// A key made by ssh-keygen: `-t kind -b bits`, with `pass`.
fn ssh_keygen(dir: &Path, kind: &str, bits: &str, pass: &str) -> Vec<u8> {
    let key = dir.join(format!("{kind}-{bits}"));
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-b", bits, "-N", pass, "-C", "", "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&key).unwrap()
}

#[test]
fn ecdsa_and_rsa_keys_sign_as_flux_allows_and_weak_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, bits) in [("ecdsa", "256"), ("ecdsa", "384"), ("rsa", "2048")] {
        let pem = ssh_keygen(dir.path(), kind, bits, "pw");
        let signer = match SshSigner::from_openssh(&pem, b"pw") {
            Ok(signer) => signer,
            Err(e) => panic!("{kind} {bits}: {e:?}"),
        };
        let sig = match signer.sign(PAYLOAD) {
            Ok(sig) => sig,
            Err(e) => panic!("{kind} {bits}: {e}"),
        };
        assert!(
            ssh_verifies(dir.path(), &signer.public_key(), &sig, PAYLOAD),
            "{kind} {bits}"
        );
        let mut tampered = PAYLOAD.to_vec();
        tampered[1] ^= 1;
        assert!(
            !ssh_verifies(dir.path(), &signer.public_key(), &sig, &tampered),
            "{kind} {bits}"
        );
    }
    let small = ssh_keygen(dir.path(), "rsa", "1024", "");
    let e = SshSigner::from_openssh(&small, b"").unwrap_err();
    assert!(matches!(e, SshKeyError::RsaSize(1024)), "{e}");
    assert_eq!(
        e.to_string(),
        "RSA key size 1024 bits is below the minimum supported; must be at least 2048"
    );
    // P-521 keys: refused (ssh-key 0.6.7 cannot read about half of them).
    for _ in 0..4 {
        let p521 = ssh_keygen(dir.path(), "ecdsa", "521", "");
        let e = SshSigner::from_openssh(&p521, b"").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unsupported SSH signing key algorithm: ecdsa-sha2-nistp521"
        );
        std::fs::remove_file(dir.path().join("ecdsa-521")).unwrap();
    }
    // DSA: OpenSSH may no longer make such keys; when it does, they are refused by name.
    let dsa = dir.path().join("dsa");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "dsa", "-N", "", "-C", "", "-f"])
        .arg(&dsa)
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let e = SshSigner::from_openssh(&std::fs::read(&dsa).unwrap(), b"").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unsupported SSH signing key algorithm: ssh-dss"
        );
    }
}

/// A GNUPGHOME of its own, with `keys` (OpenPGP key files) imported.
fn gnupg_home(keys: &[PathBuf]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    for key in keys {
        let out = Command::new("gpg")
            .env("GNUPGHOME", home.path())
            .args([
                "--batch",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--import",
            ])
            .arg(key)
            .output()
            .expect("gpg");
        assert!(
            out.status.success(),
            "gpg --import: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    home
}

fn gpg_verifies(home: &Path, sig: &str, payload: &[u8]) -> bool {
    let sig_file = home.join("payload.sig");
    let data = home.join("payload");
    std::fs::write(&sig_file, sig).unwrap();
    std::fs::write(&data, payload).unwrap();
    Command::new("gpg")
        .env("GNUPGHOME", home)
        .args(["--batch", "--verify"])
        .arg(&sig_file)
        .arg(&data)
        .output()
        .unwrap()
        .status
        .success()
}

/// The public key of a secret key ring, exported by gpg from a GNUPGHOME it was imported in.
fn public_of(secret: &Path) -> (tempfile::TempDir, PathBuf) {
    let home = gnupg_home(&[secret.to_path_buf()]);
    let out = Command::new("gpg")
        .env("GNUPGHOME", home.path())
        .args(["--batch", "--export"])
        .output()
        .unwrap();
    assert!(out.status.success() && !out.stdout.is_empty());
    let path = home.path().join("public.pgp");
    std::fs::write(&path, out.stdout).unwrap();
    (home, path)
}

#[test]
fn pgp_signatures_verify_with_gpg_and_a_changed_payload_does_not() {
    for (file, pass, id) in [
        ("gpg.pgp", "", "F3F59DE0B9162F04"),
        ("gpg-encrypted.pgp", "right", "F4C0FFD118ADFA83"),
    ] {
        let signer = load_signer(&read(file), pass, "").unwrap();
        assert_eq!(signer.key_id(), id);
        let sig = signer.sign(PAYLOAD, now()).unwrap();
        assert!(
            sig.starts_with("-----BEGIN PGP SIGNATURE-----\n\n"),
            "{sig}"
        );
        // Only the public key goes into the verifier's ring.
        let (_scratch, public) = public_of(&fixture("gpg.pgp"));
        let (_scratch2, public2) = public_of(&fixture(file));
        let home = gnupg_home(&[public, public2]);
        assert!(gpg_verifies(home.path(), &sig, PAYLOAD), "{file}: {sig}");
        let mut tampered = PAYLOAD.to_vec();
        tampered[60] ^= 1;
        assert!(!gpg_verifies(home.path(), &sig, &tampered), "{file}");
    }
}

/// A key generated by gpg itself: `algo` (`ed25519` or `rsa2048`), protected with `pass`,
/// exported as a secret key ring (armored when `armor`).
fn gpg_generated(home: &Path, algo: &str, pass: &str, armor: bool) -> Vec<u8> {
    let gen_out = Command::new("gpg")
        .env("GNUPGHOME", home)
        .args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            pass,
        ])
        .args([
            "--quick-gen-key",
            &format!("gen-{algo} <{algo}@example.com>"),
            algo,
            "sign",
            "never",
        ])
        .output()
        .unwrap();
    assert!(
        gen_out.status.success(),
        "{}",
        String::from_utf8_lossy(&gen_out.stderr)
    );
    let mut export = Command::new("gpg");
    export.env("GNUPGHOME", home).args([
        "--batch",
        "--pinentry-mode",
        "loopback",
        "--passphrase",
        pass,
    ]);
    if armor {
        export.arg("--armor");
    }
    let out = export
        .args(["--export-secret-keys", &format!("{algo}@example.com")])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

#[test]
fn keys_gpg_generates_sign_rsa_and_ed25519_armored_and_protected() {
    let home = gnupg_home(&[]);
    for (algo, pass, armor) in [("ed25519", "s3cret", true), ("rsa2048", "pw", false)] {
        let ring = gpg_generated(home.path(), algo, pass, armor);
        let signer = load_signer(&ring, pass, "").unwrap();
        let sig = signer.sign(PAYLOAD, now()).unwrap();
        assert!(gpg_verifies(home.path(), &sig, PAYLOAD), "{algo}");
        let mut tampered = PAYLOAD.to_vec();
        tampered[0] ^= 1;
        assert!(!gpg_verifies(home.path(), &sig, &tampered), "{algo}");
        assert!(matches!(
            load_signer(&ring, "not-it", ""),
            Err(PgpKeyError::Decrypt(_))
        ));
    }
}

#[test]
fn key_ids_pick_the_key_with_flux_rules() {
    let mut ring = read("gpg.pgp");
    ring.extend(read("gpg-encrypted.pgp"));
    // No id: the first entity.
    assert_eq!(
        load_signer(&ring, "", "").unwrap().key_id(),
        "F3F59DE0B9162F04"
    );
    // With an id, 0x and lower case allowed.
    assert_eq!(
        load_signer(&ring, "right", "0xf4c0ffd118adfa83")
            .unwrap()
            .key_id(),
        "F4C0FFD118ADFA83"
    );
    let msg =
        |ring: &[u8], pass: &str, id: &str| load_signer(ring, pass, id).unwrap_err().to_string();
    assert_eq!(
        msg(&ring, "", "0123456789ABCDEF"),
        "no GPG keyring matching key id '0123456789ABCDEF' found"
    );
    assert_eq!(
        msg(&ring, "", "F3F59DE0"),
        "invalid GPG key id length; expected 16, got 8"
    );
    assert_eq!(
        msg(&read("gpg-encrypted.pgp"), "wrong", ""),
        "unable to decrypt GPG private key: private key checksum failure (wrong passphrase?)"
    );
    assert_eq!(
        msg(&read("gpg-encrypted.pgp"), "", ""),
        "unable to decrypt GPG private key: private key checksum failure (wrong passphrase?)"
    );
    assert_eq!(msg(b"", "", ""), "empty GPG key ring");
    assert!(
        msg(b"not a key ring", "", "").starts_with("unable to read GPG key ring: "),
        "{}",
        msg(b"not a key ring", "", "")
    );
    // A public key only: no private key.
    let (_home, public) = public_of(&fixture("gpg.pgp"));
    let public = std::fs::read(public).unwrap();
    assert!(msg(&public, "", "").starts_with("keyring does not contain a private key; "));
    assert_eq!(
        msg(&public, "", "F3F59DE0B9162F04"),
        "keyring does not contain private key for key id 'F3F59DE0B9162F04'"
    );
}

/// `gpg` in `home` with a loopback passphrase; its stdout.
fn gpg(home: &Path, pass: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new("gpg")
        .env("GNUPGHOME", home)
        .args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            pass,
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gpg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The fingerprint of `uid`'s primary key.
fn fingerprint(home: &Path, uid: &str) -> String {
    let listing = String::from_utf8(gpg(home, "", &["--with-colons", "--list-keys", uid])).unwrap();
    listing
        .lines()
        .find_map(|l| l.strip_prefix("fpr:"))
        .map(|l| l.trim_matches(':').to_string())
        .unwrap()
}

#[test]
fn a_signing_subkey_signs_for_a_certify_only_primary_key() {
    let home = gnupg_home(&[]);
    let h = home.path();
    gpg(
        h,
        "pw",
        &[
            "--quick-gen-key",
            "offline <offline@example.com>",
            "ed25519",
            "cert",
            "never",
        ],
    );
    let fpr = fingerprint(h, "offline@example.com");
    gpg(
        h,
        "pw",
        &["--quick-add-key", &fpr, "ed25519", "sign", "never"],
    );
    let primary_id = &fpr[24..];
    for export in ["--export-secret-keys", "--export-secret-subkeys"] {
        let ring = gpg(h, "pw", &[export, "offline@example.com"]);
        let signer = load_signer(&ring, "pw", primary_id).unwrap();
        assert_ne!(signer.key_id(), primary_id, "{export}: the subkey signs");
        let sig = signer.sign(PAYLOAD, now()).unwrap();
        assert!(gpg_verifies(h, &sig, PAYLOAD), "{export}");
        let mut tampered = PAYLOAD.to_vec();
        tampered[5] ^= 1;
        assert!(!gpg_verifies(h, &sig, &tampered), "{export}");
    }

    // A primary key only for certifying, with only an encryption subkey: nothing signs.
    gpg(
        h,
        "",
        &[
            "--quick-gen-key",
            "nosign <nosign@example.com>",
            "ed25519",
            "cert",
            "never",
        ],
    );
    let fpr = fingerprint(h, "nosign@example.com");
    gpg(
        h,
        "",
        &["--quick-add-key", &fpr, "cv25519", "encr", "never"],
    );
    let ring = gpg(h, "", &["--export-secret-keys", "nosign@example.com"]);
    let e = load_signer(&ring, "", "").unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "unsupported GPG signing key {}: no key of it signs: the primary key is not for \
             signing and no signing subkey has its secret in the ring",
            &fpr[24..]
        )
    );
}

/// The other direction: signatures made by gpg (ed25519 and RSA keys it generated, signing with
/// the primary key or a signing subkey) and by `ssh-keygen -Y sign`, checked by
/// `verify::verify_object` with the public keys as a GitRepository's `spec.verify` Secret holds
/// them; a changed payload, another key and a missing key kind are refused with Flux's words.
#[test]
fn signatures_gpg_and_ssh_keygen_make_are_verified_and_tampering_is_not() {
    use ferroflux_gitsign::verify::verify_object;
    let home = gnupg_home(&[]);
    let gpg = |args: &[&str], stdin: Option<&[u8]>| -> Vec<u8> {
        let mut child = Command::new("gpg")
            .env("GNUPGHOME", home.path())
            .args([
                "--batch",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "pw",
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        let mut input = child.stdin.take().unwrap();
        if let Some(data) = stdin {
            input.write_all(data).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let mut rings = Vec::new();
    let mut sigs = Vec::new();
    for algo in ["ed25519", "rsa2048"] {
        gpg_generated(home.path(), algo, "pw", true);
        let user = format!("{algo}@example.com");
        rings.push(gpg(&["--armor", "--export", &user], None));
        let sig = gpg(&["--armor", "--detach-sign", "-u", &user], Some(PAYLOAD));
        sigs.push((algo, String::from_utf8(sig).unwrap()));
    }
    // A key whose signing subkey signs (gpg picks it over the certify-only primary).
    gpg(
        &[
            "--quick-gen-key",
            "sub <sub@example.com>",
            "ed25519",
            "cert",
            "never",
        ],
        None,
    );
    let fpr_out = String::from_utf8(gpg(
        &["--with-colons", "--list-keys", "sub@example.com"],
        None,
    ))
    .unwrap();
    let fpr = fpr_out
        .lines()
        .find(|l| l.starts_with("fpr:"))
        .and_then(|l| l.split(':').nth(9))
        .unwrap()
        .to_string();
    gpg(&["--quick-add-key", &fpr, "ed25519", "sign", "never"], None);
    rings.push(gpg(&["--armor", "--export", "sub@example.com"], None));
    let sub_sig = String::from_utf8(gpg(
        &["--armor", "--detach-sign", "-u", "sub@example.com"],
        Some(PAYLOAD),
    ))
    .unwrap();
    sigs.push(("subkey", sub_sig));

    let all: Vec<&[u8]> = rings.iter().map(Vec::as_slice).collect();
    let mut tampered = PAYLOAD.to_vec();
    tampered[70] ^= 1;
    for (what, sig) in &sigs {
        let id =
            verify_object(PAYLOAD, Some(sig), &all, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(id.len(), 16, "{what}: {id}");
        assert_eq!(
            verify_object(&tampered, Some(sig), &all, &[]).unwrap_err(),
            "unable to verify Git commit: unable to verify payload with any of the given key rings",
            "{what}"
        );
    }
    // The subkey's signature names the primary key, as go-crypto's KeyIdString does.
    let sub_id = verify_object(PAYLOAD, Some(&sigs[2].1), &all, &[]).unwrap();
    assert!(fpr.ends_with(&sub_id), "{fpr} {sub_id}");
    // Another key's ring does not verify it.
    assert!(verify_object(PAYLOAD, Some(&sigs[0].1), &[&rings[1]], &[]).is_err());
    assert_eq!(
        verify_object(PAYLOAD, Some(&sigs[0].1), &[], &["ssh-ed25519 AAAA"]).unwrap_err(),
        "PGP signature detected but no PGP public keys found in secret (keys with .asc suffix)"
    );

    // SSH: ssh-keygen signs in namespace git, as `git commit -S` with gpg.format=ssh does.
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "", "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success());
    let data = dir.path().join("payload");
    std::fs::write(&data, PAYLOAD).unwrap();
    let out = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", "git", "-f"])
        .arg(&key)
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ssh_sig = std::fs::read_to_string(dir.path().join("payload.sig")).unwrap();
    let public = std::fs::read_to_string(dir.path().join("id.pub")).unwrap();
    let fingerprint = verify_object(PAYLOAD, Some(&ssh_sig), &[], &[&public]).unwrap();
    assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");
    assert!(verify_object(&tampered, Some(&ssh_sig), &[], &[&public]).is_err());
}
