//! Whether a policy's image reference parses as go-containerregistry's `name.ParseReference`
//! with weak validation accepts it (what Flux checks before it updates anything).
//!
//! The rules, as that library applies them: a reference is a tag reference
//! (`repository[:tag]`) or a digest reference (`repository[:tag]@digest`, the tag then
//! ignored). A repository is an optional registry (the first `/`-separated component, when it
//! holds a `.` or a `:`) and a path of 2 to 255 characters from `a-z0-9_-./`; a Docker Hub
//! name without a `/` must still fit with the implicit `library/` prefix. A registry is a URI
//! authority (`host[:port]`, digits only after the last colon, no userinfo). A tag is 1 to 127
//! characters from `A-Za-z0-9_-.`. A digest is 71 characters from `sh:0-9a-f`
//! (`sha256:` and 64 hex digits in practice).
//!
//! go-containerregistry checks character sets, not the OCI distribution grammar, so it accepts
//! names such as `a__b` or `x-/y` that a registry would refuse; so do we, since Flux does.

/// Why the reference does not parse: go-containerregistry's message (its `ParseReference`
/// reports one reason whatever part was wrong).
pub(crate) fn check_reference(s: &str) -> Result<(), String> {
    if s.starts_with("http://") || s.starts_with("https://") {
        return Err(format!(
            "image reference must not contain a URL scheme (http:// or https://): {s}; \
             to connect to a registry over plain HTTP, use name.Insecure"
        ));
    }
    if is_tag_reference(s) || is_digest_reference(s) {
        Ok(())
    } else {
        Err(format!("could not parse reference: {s}"))
    }
}

const TAG_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";
const DIGEST_CHARS: &str = "sh:0123456789abcdef";
const DEFAULT_REGISTRY: &str = "index.docker.io";

/// Every character of `s` is in `allowed`, and there are `min..=max` of them.
fn element_ok(s: &str, allowed: &str, min: usize, max: usize) -> bool {
    let n = s.chars().count();
    (min..=max).contains(&n) && s.chars().all(|c| allowed.contains(c))
}

/// `repository[:tag]`: the part after the last colon is a tag unless it holds a `/` (then the
/// colon was a registry's port).
fn is_tag_reference(s: &str) -> bool {
    let mut base = s;
    if let Some(i) = s.rfind(':') {
        let tag = &s[i + 1..];
        if !tag.contains('/') {
            base = &s[..i];
            if !tag.is_empty() && !element_ok(tag, TAG_CHARS, 1, 127) {
                return false;
            }
        }
    }
    is_repository(base)
}

/// `repository[:tag]@digest`, with exactly one `@`.
fn is_digest_reference(s: &str) -> bool {
    let mut parts = s.split('@');
    let (Some(base), Some(digest), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    element_ok(digest, DIGEST_CHARS, 71, 71) && is_tag_reference(base)
}

fn is_repository(name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let (registry, repo) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') => (first, rest),
        _ => ("", name),
    };
    if !element_ok(repo, REPOSITORY_CHARS, 2, 255) || !is_authority(registry) {
        return false;
    }
    let on_docker_hub = matches!(registry, "" | "docker.io" | DEFAULT_REGISTRY);
    if on_docker_hub && !repo.contains('/') {
        // Docker Hub's single-component names are `library/…`, and must fit as such.
        return element_ok(&format!("library/{repo}"), REPOSITORY_CHARS, 2, 255);
    }
    true
}

/// Whether Go's `url.Parse("//" + name)` gives back `name` as the host: no userinfo, path,
/// query or fragment, only the characters Go leaves unescaped in a host, and digits only after
/// the port's colon (after `]` for an IPv6 literal).
fn is_authority(name: &str) -> bool {
    let allowed = |c: char| {
        !c.is_ascii() || c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"".contains(c)
    };
    if !name.chars().all(allowed) {
        return false;
    }
    let port = if name.starts_with('[') {
        match name.find(']') {
            Some(i) => &name[i + 1..],
            None => return false,
        }
    } else {
        match name.rfind(':') {
            Some(i) => &name[i..],
            None => "",
        }
    };
    match port.strip_prefix(':') {
        Some(digits) => digits.chars().all(|c| c.is_ascii_digit()),
        None => port.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_go_containerregistry_accepts() {
        for ok in [
            "image:v1.0.0",
            "index.repo.fake/updated:v1.0.1",
            "ghcr.io/stefanprodan/podinfo:6.5.0",
            "localhost:5000/foo/bar:1",
            "localhost/foo",
            "registry.example.com:443/x/y",
            "[::1]:5000/xy:z",
            "helloworld",
            "image:v1.0.0@sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be",
            "image@sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be",
        ] {
            assert_eq!(check_reference(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_what_go_containerregistry_refuses() {
        for bad in [
            "",
            "a:1",
            "Upper/case:1",
            "image:",
            "image:bad tag",
            "image:v1@sha256:short",
            "image@sha256:x@y",
            "reg.io:port/x:1",
            "user@reg.io/x",
            "image:.....................................................................................................................................",
        ] {
            if bad == "image:" {
                // An empty tag is no tag at all: `image` alone.
                assert_eq!(check_reference(bad), Ok(()));
                continue;
            }
            assert_eq!(
                check_reference(bad),
                Err(format!("could not parse reference: {bad}")),
                "{bad}"
            );
        }
        assert!(
            check_reference("https://reg.io/x:1")
                .unwrap_err()
                .starts_with("image reference must not contain a URL scheme")
        );
    }
}
