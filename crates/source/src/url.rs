//! Validation of `spec.url`: the schemes Flux accepts, scp-style refused with the form to use,
//! `file://` only when the caller allows it, and user info kept out of every displayed URL.

use crate::error::{Error, Result};

/// The transport a URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`: only when the object allows insecure transport.
    Http,
    /// `https://`.
    Https,
    /// `ssh://` (and scp-like `user@host:path`), through the `ssh` program.
    Ssh,
    /// `file://`: only when the controller allows local repositories.
    File,
}

/// A validated repository URL.
#[derive(Debug, Clone)]
pub struct RepoUrl {
    /// How the repository is reached.
    pub scheme: Scheme,
    /// The parsed URL given to gix: no password, and for http(s) no user either.
    pub(crate) url: gix::Url,
    /// The URL as shown in messages: never holds a password.
    pub display: String,
    /// Credentials written in the URL itself (`https://user:pass@host/…`).
    pub(crate) user: Option<String>,
    pub(crate) password: Option<String>,
}

impl RepoUrl {
    /// Parses and validates `url`. `allow_file_urls` mirrors the controller's
    /// `--allow-file-urls`: in a cluster a `file://` URL would read the controller's own disk.
    pub fn parse(url: &str, allow_file_urls: bool) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidUrl {
            url: redact_userinfo(url),
            reason,
        };
        let Some((scheme, _)) = url.split_once("://") else {
            if let Some(suggestion) = scp_to_ssh(url) {
                return Err(invalid(format!(
                    "scp-style URLs are not supported, use '{suggestion}' (the ssh:// form)"
                )));
            }
            return Err(invalid(
                "expected a URL starting with https://, http:// or ssh://".into(),
            ));
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            "ssh" => Scheme::Ssh,
            "file" if allow_file_urls => Scheme::File,
            "file" => {
                return Err(invalid(
                    "file:// URLs are not allowed: the controller was started without \
                     --allow-file-urls"
                        .into(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "unsupported scheme '{other}': use https://, http:// or ssh://"
                )));
            }
        };
        let mut parsed = gix::url::parse(gix::bstr::BStr::new(url.as_bytes())).map_err(|e| {
            invalid(format!(
                "cannot parse it: {}",
                redact_userinfo(&e.to_string())
            ))
        })?;
        if scheme != Scheme::File && parsed.host().is_none_or(str::is_empty) {
            return Err(invalid("the URL has no host".into()));
        }
        let password = parsed.set_password(None);
        let user = match scheme {
            // ssh needs the user on the command line; http sends it in a header instead.
            Scheme::Ssh => parsed.user().map(str::to_string),
            _ => parsed.set_user(None),
        };
        let display = parsed.to_bstring().to_string();
        Ok(RepoUrl {
            scheme,
            url: parsed,
            display,
            user,
            password,
        })
    }
}

/// `git@host:org/repo` → `ssh://git@host/org/repo`; `None` when `s` is not scp-like.
fn scp_to_ssh(s: &str) -> Option<String> {
    let (host_part, path) = s.split_once(':')?;
    if host_part.is_empty() || host_part.contains('/') || path.is_empty() {
        return None;
    }
    Some(format!(
        "ssh://{host_part}/{}",
        path.trim_start_matches('/')
    ))
}

/// Removes `user:password@` from every URL-looking part of `s`, keeping the user name.
pub(crate) fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                let user = userinfo.split(':').next().unwrap_or("");
                out.push_str(user);
                if userinfo.contains(':') {
                    out.push_str(":***");
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scp_style_is_refused_with_the_ssh_form() {
        let err = RepoUrl::parse("git@github.com:org/repo.git", false).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("use 'ssh://git@github.com/org/repo.git'"),
            "{msg}"
        );
        assert_eq!(err.reason(), "URLInvalid");
        assert!(err.is_stalling());
    }

    #[test]
    fn file_urls_need_permission() {
        let err = RepoUrl::parse("file:///srv/repo", false).unwrap_err();
        assert!(err.to_string().contains("--allow-file-urls"), "{err}");
        assert_eq!(
            RepoUrl::parse("file:///srv/repo", true).unwrap().scheme,
            Scheme::File
        );
    }

    #[test]
    fn passwords_never_reach_the_display_form() {
        let u = RepoUrl::parse("https://bob:s3cret@example.com/org/repo", false).unwrap();
        assert_eq!(u.display, "https://example.com/org/repo");
        assert_eq!(u.user.as_deref(), Some("bob"));
        assert_eq!(u.password.as_deref(), Some("s3cret"));
        let err = RepoUrl::parse("ftp://bob:s3cret@example.com/x", false).unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let s = RepoUrl::parse("ssh://git@example.com:2222/org/repo", false).unwrap();
        assert_eq!(s.display, "ssh://git@example.com:2222/org/repo");
    }

    #[test]
    fn other_schemes_and_garbage_are_refused() {
        assert!(RepoUrl::parse("git://example.com/x", false).is_err());
        assert!(RepoUrl::parse("not a url", false).is_err());
        assert!(RepoUrl::parse("https:///nohost", false).is_err());
    }
}
