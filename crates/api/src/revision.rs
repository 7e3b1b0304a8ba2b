//! Revision strings in Flux's format: `main@sha1:<hex>`, `v1.2.3@sha1:<hex>`, `sha1:<hex>`.

/// A source revision: an optional ref name and a digest (`sha1:<hex>`, `sha256:<hex>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    /// The branch, tag or full ref name, empty for a bare commit.
    pub reference: String,
    /// `<algorithm>:<hex>`.
    pub digest: String,
}

impl Revision {
    /// A revision of a Git commit reached through `reference` (empty for a bare commit).
    pub fn git(reference: &str, commit_hex: &str) -> Self {
        Revision {
            reference: reference.to_string(),
            digest: format!("sha1:{commit_hex}"),
        }
    }

    /// Parses `ref@algo:hex` or `algo:hex`. Legacy Flux v1beta revisions (`main/<hex>`) are
    /// understood too, since old statuses still carry them.
    pub fn parse(s: &str) -> Option<Self> {
        if let Some((reference, digest)) = s.rsplit_once('@')
            && is_digest(digest)
        {
            return Some(Revision {
                reference: reference.to_string(),
                digest: digest.to_string(),
            });
        }
        if is_digest(s) {
            return Some(Revision {
                reference: String::new(),
                digest: s.to_string(),
            });
        }
        if let Some((reference, hex)) = s.rsplit_once('/')
            && hex.len() == 40
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Some(Revision::git(reference, hex));
        }
        None
    }

    /// The commit or content hash without its algorithm.
    pub fn hash(&self) -> &str {
        self.digest
            .split_once(':')
            .map_or(self.digest.as_str(), |(_, h)| h)
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reference.is_empty() {
            f.write_str(&self.digest)
        } else {
            write!(f, "{}@{}", self.reference, self.digest)
        }
    }
}

fn is_digest(s: &str) -> bool {
    match s.split_once(':') {
        Some((algo, hex)) => {
            !algo.is_empty()
                && algo.bytes().all(|b| b.is_ascii_alphanumeric())
                && !hex.is_empty()
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// The revision as the flux CLI prints it: the hash cut to 8 characters
/// (`main@sha1:696182e5`). Strings that are not revisions are returned unchanged.
pub fn short_revision(s: &str) -> String {
    match Revision::parse(s) {
        Some(rev) => {
            let hash = rev.hash();
            let short = &hash[..hash.len().min(8)];
            let algo = rev.digest.split_once(':').map_or("", |(a, _)| a);
            if rev.reference.is_empty() {
                format!("{algo}:{short}")
            } else {
                format!("{}@{algo}:{short}", rev.reference)
            }
        }
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const SHA: &str = "696182e5a1b2c3d4e5f60718293a4b5c6d7e8f90";

    #[test]
    fn formats_and_parses() {
        let r = Revision::git("main", SHA);
        assert_eq!(r.to_string(), format!("main@sha1:{SHA}"));
        assert_eq!(Revision::parse(&r.to_string()), Some(r.clone()));
        assert_eq!(r.hash(), SHA);
        let bare = Revision::git("", SHA);
        assert_eq!(bare.to_string(), format!("sha1:{SHA}"));
        assert_eq!(Revision::parse(&format!("sha1:{SHA}")), Some(bare));
        let named = Revision::parse(&format!("refs/heads/main@sha1:{SHA}")).unwrap();
        assert_eq!(named.reference, "refs/heads/main");
        assert_eq!(
            Revision::parse(&format!("main/{SHA}")).unwrap().reference,
            "main"
        );
        assert_eq!(Revision::parse("not a revision"), None);
    }

    #[test]
    fn shortens_like_flux() {
        assert_eq!(
            short_revision(&format!("main@sha1:{SHA}")),
            "main@sha1:696182e5"
        );
        assert_eq!(short_revision(&format!("sha1:{SHA}")), "sha1:696182e5");
        assert_eq!(short_revision("v1.2.3@sha1:abc"), "v1.2.3@sha1:abc");
        assert_eq!(short_revision(""), "");
    }
}
