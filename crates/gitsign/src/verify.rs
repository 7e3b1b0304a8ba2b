//! Verifying the signature of a Git commit or tag object, as source-controller does for a
//! GitRepository's `spec.verify`: the signature taken out of the object (a commit's `gpgsig`
//! header, a tag's armored block after its message), its kind told from its armor, then an
//! OpenPGP signature checked against the given key rings ([`crate::pgp::verify_detached`]) or
//! an SSH one (SSHSIG, namespace `git`) against the given authorized keys.

/// A commit object without its `gpgsig` header (what the signature covers), and the signature
/// when there is one.
pub fn split_commit(object: &[u8]) -> (Vec<u8>, Option<String>) {
    let end = object
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(object.len(), |p| p + 1);
    let (headers, rest) = object.split_at(end);
    let mut payload = Vec::with_capacity(object.len());
    let mut signature: Option<String> = None;
    let mut in_signature = false;
    for line in headers.split_inclusive(|&b| b == b'\n') {
        if let Some(first) = line
            .strip_prefix(b"gpgsig ")
            .or_else(|| line.strip_prefix(b"gpgsig-sha256 "))
        {
            in_signature = true;
            signature = Some(String::from_utf8_lossy(first).into_owned());
            continue;
        }
        if in_signature && let Some(more) = line.strip_prefix(b" ") {
            if let Some(s) = signature.as_mut() {
                s.push_str(&String::from_utf8_lossy(more));
            }
            continue;
        }
        in_signature = false;
        payload.extend_from_slice(line);
    }
    payload.extend_from_slice(rest);
    (payload, signature)
}

/// A tag object without the signature appended to its message, and that signature.
pub fn split_tag(object: &[u8]) -> (Vec<u8>, Option<String>) {
    let text = String::from_utf8_lossy(object);
    for armor in [
        "-----BEGIN PGP SIGNATURE-----",
        "-----BEGIN SSH SIGNATURE-----",
        "-----BEGIN SIGNED MESSAGE-----",
    ] {
        if let Some(at) = text.find(armor)
            && (at == 0 || text.as_bytes()[at - 1] == b'\n')
        {
            return (object[..at].to_vec(), Some(text[at..].to_string()));
        }
    }
    (object.to_vec(), None)
}

/// Flux's name of a signature's kind: `openpgp`, `ssh`, `x509`, `empty` or `unknown`.
pub fn signature_type(signature: Option<&str>) -> &'static str {
    match signature.map(str::trim) {
        None | Some("") => "empty",
        Some(s) if s.starts_with("-----BEGIN PGP SIGNATURE-----") => "openpgp",
        Some(s) if s.starts_with("-----BEGIN SSH SIGNATURE-----") => "ssh",
        Some(s) if s.starts_with("-----BEGIN SIGNED MESSAGE-----") => "x509",
        Some(_) => "unknown",
    }
}

/// Verifies `payload`'s `signature` as source-controller's `verifyGitObject`: an OpenPGP one
/// with `pgp_rings`, an SSH one with `ssh_keys` (authorized-keys lines); the signer's key id or
/// SSH fingerprint (`SHA256:…`), or Flux's message why not.
pub fn verify_object(
    payload: &[u8],
    signature: Option<&str>,
    pgp_rings: &[&[u8]],
    ssh_keys: &[&str],
) -> Result<String, String> {
    match signature_type(signature) {
        "openpgp" => {
            if pgp_rings.is_empty() {
                return Err("PGP signature detected but no PGP public keys found in secret (keys with .asc suffix)".into());
            }
            crate::pgp::verify_detached(payload, signature.unwrap_or_default(), pgp_rings)
        }
        "ssh" => {
            if ssh_keys.is_empty() {
                return Err("SSH signature detected but no SSH public keys found in secret (keys with .sshpub suffix)".into());
            }
            verify_ssh(payload, signature.unwrap_or_default(), ssh_keys)
        }
        other => Err(format!("unsupported signature type: {other}")),
    }
}

fn verify_ssh(payload: &[u8], signature: &str, keys: &[&str]) -> Result<String, String> {
    let sig = ssh_key::SshSig::from_pem(signature.trim())
        .map_err(|e| format!("unable to read the SSH signature: {e}"))?;
    for text in keys {
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Ok(key) = ssh_key::PublicKey::from_openssh(line) else {
                continue;
            };
            if key.verify("git", payload, &sig).is_ok() {
                return Ok(key.fingerprint(ssh_key::HashAlg::Sha256).to_string());
            }
        }
    }
    Err("unable to verify Git commit: unable to verify payload with any of the given authorized keys".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpgsig_header_comes_out_of_a_commit() {
        let commit = b"tree 4b82\nparent 1111\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nmsg\n";
        let (payload, sig) = split_commit(commit);
        assert_eq!(
            payload,
            b"tree 4b82\nparent 1111\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\n\nmsg\n"
        );
        assert_eq!(
            sig.as_deref(),
            Some("-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n")
        );
        assert_eq!(signature_type(sig.as_deref()), "openpgp");
        let (payload, sig) = split_commit(b"tree 1\n\nmsg\n");
        assert_eq!(payload, b"tree 1\n\nmsg\n");
        assert_eq!(signature_type(sig.as_deref()), "empty");
        assert_eq!(
            verify_object(&payload, None, &[], &[]).unwrap_err(),
            "unsupported signature type: empty"
        );
    }

    #[test]
    fn a_tag_signature_follows_its_message() {
        let tag = b"object 1\ntype commit\ntag v1\ntagger A <a> 1 +0000\n\nv1\n-----BEGIN SSH SIGNATURE-----\nxyz\n-----END SSH SIGNATURE-----\n";
        let (payload, sig) = split_tag(tag);
        assert_eq!(
            payload,
            b"object 1\ntype commit\ntag v1\ntagger A <a> 1 +0000\n\nv1\n"
        );
        assert_eq!(signature_type(sig.as_deref()), "ssh");
        assert_eq!(
            verify_object(&payload, sig.as_deref(), &[b"k"], &[]).unwrap_err(),
            "SSH signature detected but no SSH public keys found in secret (keys with .sshpub suffix)"
        );
    }
}
