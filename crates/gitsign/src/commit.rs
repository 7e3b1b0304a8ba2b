//! Putting a signature into a commit object the way git does: a `gpgsig` header after the
//! commit's last header line, the signature's lines after the first each starting with one
//! space (git's form of a multi-line header). git verifies the signature over the object with
//! that header taken out, which is exactly the object before it was put in.

/// Why a commit object cannot be signed.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// No blank line ends the headers.
    #[error("not a commit object: no blank line after the headers")]
    NoHeaders,
    /// The commit is signed already.
    #[error("the commit is already signed")]
    AlreadySigned,
}

/// `commit` (the bytes of an unsigned commit object, as `git cat-file commit` prints them) with
/// `signature` (armored, its lines ending in `\n`) in a `gpgsig` header.
pub fn with_signature(commit: &[u8], signature: &str) -> Result<Vec<u8>, CommitError> {
    let end = commit
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or(CommitError::NoHeaders)?;
    let headers = &commit[..=end];
    if headers
        .split(|&b| b == b'\n')
        .any(|l| l.starts_with(b"gpgsig ") || l.starts_with(b"gpgsig-sha256 "))
    {
        return Err(CommitError::AlreadySigned);
    }
    let mut out = headers.to_vec();
    out.extend_from_slice(b"gpgsig");
    for line in signature.trim_end_matches('\n').split('\n') {
        out.push(b' ');
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(&commit[end + 1..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_goes_after_the_committer_with_continuation_lines() {
        let commit = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\n\nmsg\n\nbody\n";
        let signed = with_signature(commit, "-----BEGIN X-----\n\nabc\n-----END X-----\n").unwrap();
        assert_eq!(
            String::from_utf8(signed.clone()).unwrap(),
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\ngpgsig -----BEGIN X-----\n \n abc\n -----END X-----\n\nmsg\n\nbody\n"
        );
        assert!(matches!(
            with_signature(&signed, "x\n"),
            Err(CommitError::AlreadySigned)
        ));
        assert!(matches!(
            with_signature(b"tree x\n", "x\n"),
            Err(CommitError::NoHeaders)
        ));
    }
}
