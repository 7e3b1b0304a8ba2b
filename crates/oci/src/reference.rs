//! OCI references as Flux writes them: `oci://HOST[:PORT]/REPO[:TAG][@sha256:HEX]` (the `oci://`
//! prefix is optional where a bare `HOST/REPO:TAG` is customary, as in skopeo's `docker://`).
//! The first path segment is always the registry: Flux requires one, and there is no implicit
//! Docker Hub.

use std::fmt;

use crate::error::{Error, Result};

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `host[:port]`, as written.
    pub registry: String,
    /// `path/to/repo`, lowercase.
    pub repository: String,
    /// The tag, when given.
    pub tag: Option<String>,
    /// `sha256:<hex>`, when given.
    pub digest: Option<String>,
}

fn bad(reference: &str, why: impl Into<String>) -> Error {
    Error::InvalidReference {
        reference: reference.to_string(),
        why: why.into(),
    }
}

/// A repository path component: lowercase alphanumerics separated by `.`, `_`, `__` or `-`s.
fn valid_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    b.iter()
        .all(|&x| x.is_ascii_lowercase() || x.is_ascii_digit() || matches!(x, b'.' | b'_' | b'-'))
}

/// A tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|&x| x.is_ascii_alphanumeric() || matches!(x, b'_' | b'.' | b'-'))
}

/// `sha256:` followed by 64 lowercase hex digits.
pub fn valid_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    })
}

impl Reference {
    /// Parses `oci://host/repo[:tag][@digest]` or the same without `oci://`.
    pub fn parse(text: &str) -> Result<Self> {
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        if rest.contains("://") {
            return Err(bad(text, "the URL scheme must be oci://"));
        }
        let (name, digest) = match rest.split_once('@') {
            Some((n, d)) => {
                if !valid_digest(d) {
                    return Err(bad(text, format!("{d:?} is not a sha256 digest")));
                }
                (n, Some(d.to_string()))
            }
            None => (rest, None),
        };
        let (registry, path) = name
            .split_once('/')
            .ok_or_else(|| bad(text, "expected HOST/REPOSITORY"))?;
        if registry.is_empty() {
            return Err(bad(text, "the registry host is empty"));
        }
        // A tag is the part after a ':' in the last path segment (a ':' before the first '/'
        // is the registry's port).
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t.to_string())),
            _ => (path, None),
        };
        if repository.is_empty() {
            return Err(bad(text, "the repository is empty"));
        }
        if let Some(c) = repository.split('/').find(|c| !valid_component(c)) {
            return Err(bad(
                text,
                format!(
                    "repository component {c:?} must be lowercase letters and digits, separated by '.', '_' or '-'"
                ),
            ));
        }
        if let Some(t) = &tag
            && !valid_tag(t)
        {
            return Err(bad(text, format!("{t:?} is not a valid tag")));
        }
        Ok(Reference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The same repository with another tag and no digest.
    pub fn with_tag(&self, tag: &str) -> Self {
        Reference {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        }
    }

    /// The same repository at `digest`, keeping the tag for messages.
    pub fn with_digest(&self, digest: &str) -> Self {
        Reference {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// What the registry's manifest endpoint takes: the digest when present, else the tag,
    /// else `latest`.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// `host/repo`, the repository without tag or digest.
    pub fn repo_url(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The host without its port.
    pub fn host(&self) -> &str {
        host_of(&self.registry)
    }
}

/// The host part of `host[:port]` (IPv6 literals in brackets keep their brackets).
pub(crate) fn host_of(registry: &str) -> &str {
    if registry.starts_with('[') {
        return registry
            .find(']')
            .map(|i| &registry[..=i])
            .unwrap_or(registry);
    }
    registry.split(':').next().unwrap_or(registry)
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flux_references() {
        let r = Reference::parse("oci://localhost:5000/apps/podinfo:6.5.0").unwrap();
        assert_eq!(r.registry, "localhost:5000");
        assert_eq!(r.repository, "apps/podinfo");
        assert_eq!(r.tag.as_deref(), Some("6.5.0"));
        assert_eq!(r.manifest_ref(), "6.5.0");
        let d = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("ghcr.io/org/repo@{d}")).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.manifest_ref(), d);
        let r = Reference::parse("oci://127.0.0.1:5000/repo").unwrap();
        assert_eq!(r.manifest_ref(), "latest");
        assert_eq!(r.host(), "127.0.0.1");
    }

    #[test]
    fn refuses_bad_references() {
        for t in [
            "oci://host",
            "https://host/repo",
            "oci://host/Repo:1",
            "oci://host/repo:-x",
            "oci://host/repo@sha256:abc",
            "oci:///repo",
        ] {
            assert!(Reference::parse(t).is_err(), "{t}");
        }
    }
}
