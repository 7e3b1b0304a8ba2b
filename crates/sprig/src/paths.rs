//! Go's `path` package (`Base`, `Dir`, `Clean`, `Ext`), which `path/filepath` matches on Linux.

/// `path.Clean`: the shortest equivalent path (no `//`, `./`, `x/..`; `""` becomes `"."`).
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// `path.Base`: the last element, trailing slashes removed; `"."` for empty, `"/"` for root.
pub fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// `path.Dir`: everything before the last element, cleaned.
pub fn dir(p: &str) -> String {
    let cut = p.rfind('/').map_or(0, |i| i + 1);
    clean(&p[..cut])
}

/// `path.Ext`: the suffix from the last dot of the last element.
pub fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return p[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_semantics() {
        for (input, want) in [
            ("", "."),
            ("a/c", "a/c"),
            ("a//c", "a/c"),
            ("a/c/.", "a/c"),
            ("a/c/b/..", "a/c"),
            ("/../a/c", "/a/c"),
            ("../../a", "../../a"),
            ("a/../..", ".."),
            ("/", "/"),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(base(""), ".");
        assert_eq!(dir("/a/b/c"), "/a/b");
        assert_eq!(dir("abc"), ".");
        assert_eq!(dir("/"), "/");
        assert_eq!(ext("a/b.c/d"), "");
        assert_eq!(ext("x.tar.gz"), ".gz");
    }
}
