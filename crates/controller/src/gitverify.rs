//! `spec.verify` of a GitRepository, as source-controller does it: the trusted keys from the
//! Secret (`*.asc` OpenPGP key rings, `*.sshpub` SSH authorized keys, anything else read as
//! OpenPGP), then the fetched commit's signature (`HEAD`), the annotated tag's (`Tag`), or both
//! (`TagAndHEAD`), checked before the artifact is stored (crates/gitsign). The messages and
//! reasons are Flux's; the success message becomes the `SourceVerified` condition's.

use ferroflux_api::gitrepository::GitVerificationMode;
use ferroflux_source::{Error, Fetched};

/// Flux's reason when the keys cannot be read.
pub const VERIFICATION_ERROR: &str = "VerificationError";

/// The trusted keys of a `spec.verify` Secret.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// OpenPGP key rings (armored or binary).
    pub pgp: Vec<Vec<u8>>,
    /// SSH authorized-keys texts.
    pub ssh: Vec<String>,
}

/// Sorts a Secret's entries into key kinds by their names' suffixes, as Flux does.
pub fn keys_of(data: std::collections::BTreeMap<String, Vec<u8>>) -> Keys {
    let mut keys = Keys::default();
    for (name, value) in data {
        if name.ends_with(".sshpub") {
            keys.ssh.push(String::from_utf8_lossy(&value).into_owned());
        } else {
            keys.pgp.push(value);
        }
    }
    keys
}

/// `status.sourceVerificationMode`'s spelling of a mode (`head` is read as `HEAD`).
pub fn mode_name(mode: GitVerificationMode) -> &'static str {
    match mode {
        GitVerificationMode::LegacyHead | GitVerificationMode::HEAD => "HEAD",
        GitVerificationMode::Tag => "Tag",
        GitVerificationMode::TagAndHEAD => "TagAndHEAD",
    }
}

fn refused(reason: &'static str, message: String, stalling: bool) -> Error {
    Error::Verification {
        reason,
        message,
        stalling,
    }
}

/// Verifies what `mode` names of `fetched` with `keys`; the `SourceVerified` message.
pub fn check(fetched: &Fetched, mode: GitVerificationMode, keys: &Keys) -> Result<String, Error> {
    use ferroflux_gitsign::verify::{split_commit, split_tag, verify_object};
    let pgp: Vec<&[u8]> = keys.pgp.iter().map(Vec::as_slice).collect();
    let ssh: Vec<&str> = keys.ssh.iter().map(String::as_str).collect();
    let mut verified = Vec::new();
    if matches!(
        mode,
        GitVerificationMode::Tag | GitVerificationMode::TagAndHEAD
    ) {
        let is_tag = fetched
            .resolved
            .ref_name
            .as_deref()
            .is_some_and(|r| r.starts_with("refs/tags/"));
        if !is_tag {
            return Err(refused(
                "InvalidVerificationMode",
                "cannot verify tag object's signature if a tag reference is not specified".into(),
                true,
            ));
        }
        let name = fetched
            .resolved
            .ref_name
            .as_deref()
            .and_then(|r| r.strip_prefix("refs/tags/"))
            .unwrap_or_default()
            .to_string();
        let Some((_, id, object)) = fetched.referencing_tag() else {
            // A lightweight tag has no object to carry a signature.
            return Err(refused(
                "InvalidGitObject",
                format!("cannot verify signature of tag '{name}' since it is not signed"),
                false,
            ));
        };
        let shown = format!("{name}@sha1:{id}");
        let (payload, signature) = split_tag(&object);
        if signature.is_none() {
            return Err(refused(
                "InvalidGitObject",
                format!("cannot verify signature of tag '{shown}' since it is not signed"),
                false,
            ));
        }
        let key = verify_object(&payload, signature.as_deref(), &pgp, &ssh).map_err(|e| {
            refused(
                "InvalidTagSignature",
                format!("signature verification of tag '{shown}' failed: {e}"),
                false,
            )
        })?;
        verified.push(format!("tag '{shown}' with key '{key}'"));
    }
    if mode != GitVerificationMode::Tag {
        let commit = &fetched.resolved.commit;
        let object = fetched.commit_object()?;
        let (payload, signature) = split_commit(&object);
        let key = verify_object(&payload, signature.as_deref(), &pgp, &ssh).map_err(|e| {
            refused(
                "InvalidCommitSignature",
                format!("signature verification of commit '{commit}' failed: {e}"),
                false,
            )
        })?;
        verified.push(format!("commit '{commit}' with key '{key}'"));
    }
    Ok(format!(
        "verified signature of\n\t- {}",
        verified.join("\n\t- ")
    ))
}
