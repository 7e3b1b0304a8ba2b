//! The two glob dialects source-watcher's copy rules use: Go's `path.Match`/`fs.Glob` for `from`
//! (`*`, `?` and `[...]` within one path segment, so `dir/**` selects the entries of `dir`, not
//! the whole tree) and doublestar's for `exclude` and the `Extract` strategy (`**` as a whole
//! segment matches any number of segments, `{a,b}` alternatives).

use std::path::Path;

/// A malformed pattern (Go's `path.ErrBadPattern` text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error in pattern")]
pub struct BadPattern;

/// Whether `s` holds a glob metacharacter, as source-watcher decides between a path and a glob.
pub fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', ']'])
}

/// Go's `path.Match` of one whole `name` (the pattern is checked whole, as Go 1.16+ does).
pub fn path_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let p: Vec<char> = pattern.chars().collect();
    validate(&p)?;
    let n: Vec<char> = name.chars().collect();
    Ok(match_chars(&p, &n, true))
}

fn validate(p: &[char]) -> Result<(), BadPattern> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(BadPattern);
                }
                i += 2;
            }
            '[' => i = class_end(p, i)?,
            ']' => return Err(BadPattern),
            _ => i += 1,
        }
    }
    Ok(())
}

/// The index after the class that opens at `p[start] == '['`.
fn class_end(p: &[char], start: usize) -> Result<usize, BadPattern> {
    let mut i = start + 1;
    if p.get(i) == Some(&'^') {
        i += 1;
    }
    let mut first = true;
    loop {
        match p.get(i) {
            None => return Err(BadPattern),
            Some(']') if !first => return Ok(i + 1),
            Some(']') => return Err(BadPattern),
            Some(_) => {
                let (_, next) = class_char(p, i)?;
                i = next;
                if p.get(i) == Some(&'-') {
                    let (_, next) = class_char(p, i + 1)?;
                    i = next;
                }
            }
        }
        first = false;
    }
}

fn class_char(p: &[char], i: usize) -> Result<(char, usize), BadPattern> {
    match p.get(i) {
        None | Some('-') | Some(']') => Err(BadPattern),
        Some('\\') => p.get(i + 1).map(|c| (*c, i + 2)).ok_or(BadPattern),
        Some(c) => Ok((*c, i + 1)),
    }
}

/// Backtracking match over a validated pattern. With `segment`, `*` and `?` stop at `/`.
fn match_chars(p: &[char], n: &[char], segment: bool) -> bool {
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' if ni < n.len() && !(segment && n[ni] == '/') => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' if ni < n.len() && !(segment && n[ni] == '/') => {
                    if let Some(end) = match_class(p, pi, n[ni]) {
                        pi = end;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if ni < n.len() && p.get(pi + 1) == Some(&n[ni]) => {
                    pi += 2;
                    ni += 1;
                    continue;
                }
                c if c != '?' && c != '[' && c != '\\' && ni < n.len() && c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        } else if ni == n.len() {
            return true;
        }
        // Backtrack: the last `*` takes one more character (never a `/` within a segment).
        match star {
            Some((sp, sn)) if sn < n.len() && !(segment && n[sn] == '/') => {
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            _ => return false,
        }
    }
}

/// Matches `c` against the class at `p[start]`; the index after it when it matches.
fn match_class(p: &[char], start: usize, c: char) -> Option<usize> {
    let mut i = start + 1;
    let negated = p.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        match p.get(i)? {
            ']' if !first => break,
            _ => {
                let (lo, next) = class_char(p, i).ok()?;
                i = next;
                let mut hi = lo;
                if p.get(i) == Some(&'-') {
                    let (h, next) = class_char(p, i + 1).ok()?;
                    hi = h;
                    i = next;
                }
                if lo <= c && c <= hi {
                    matched = true;
                }
            }
        }
        first = false;
    }
    (matched != negated).then_some(i + 1)
}

/// Go's `fs.Glob` over the tree at `root`: the relative paths (files and directories) matching
/// `pattern`, each directory level read in name order.
pub fn fs_glob(root: &Path, pattern: &str) -> Result<Vec<String>, BadPattern> {
    path_match(pattern, "")?;
    if !has_glob_chars(pattern) {
        return Ok(if root.join(pattern).exists() {
            vec![pattern.to_string()]
        } else {
            Vec::new()
        });
    }
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..i], &pattern[i + 1..]),
        None => (".", pattern),
    };
    let dir = if dir.is_empty() { "." } else { dir };
    if !has_glob_chars(dir) {
        return glob_in(root, dir, file);
    }
    let mut out = Vec::new();
    for d in fs_glob(root, dir)? {
        out.extend(glob_in(root, &d, file)?);
    }
    Ok(out)
}

fn glob_in(root: &Path, dir: &str, pattern: &str) -> Result<Vec<String>, BadPattern> {
    path_match(pattern, "")?;
    let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        if path_match(pattern, &name)? {
            out.push(if dir == "." {
                name
            } else {
                format!("{dir}/{name}")
            });
        }
    }
    Ok(out)
}

/// Expands `{a,b}` alternatives (nested ones too) into plain patterns.
fn expand_braces(pattern: &str) -> Vec<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut depth = 0;
    let mut open = None;
    for (i, c) in chars.iter().enumerate() {
        match c {
            '\\' => continue,
            '{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0
                    && let Some(start) = open
                {
                    let head: String = chars[..start].iter().collect();
                    let tail: String = chars[i + 1..].iter().collect();
                    let mut parts = Vec::new();
                    let (mut d, mut from) = (0, start + 1);
                    for (j, c) in chars.iter().enumerate().take(i).skip(start + 1) {
                        match c {
                            '{' => d += 1,
                            '}' => d -= 1,
                            ',' if d == 0 => {
                                parts.push(chars[from..j].iter().collect::<String>());
                                from = j + 1;
                            }
                            _ => {}
                        }
                    }
                    parts.push(chars[from..i].iter().collect());
                    return parts
                        .iter()
                        .flat_map(|p| expand_braces(&format!("{head}{p}{tail}")))
                        .collect();
                }
            }
            _ => {}
        }
    }
    vec![pattern.to_string()]
}

/// doublestar's `Match`: `**` as a whole segment matches zero or more segments.
pub fn doublestar_match(pattern: &str, path: &str) -> Result<bool, BadPattern> {
    for p in expand_braces(pattern) {
        let segs: Vec<&str> = p.split('/').collect();
        for s in &segs {
            if *s != "**" {
                validate(&s.chars().collect::<Vec<_>>())?;
            }
        }
        let names: Vec<&str> = if path.is_empty() {
            Vec::new()
        } else {
            path.split('/').collect()
        };
        if match_segments(&segs, &names) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn match_segments(p: &[&str], n: &[&str]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((&"**", rest)) => (0..=n.len()).any(|k| match_segments(rest, &n[k..])),
        Some((seg, rest)) => match n.split_first() {
            Some((name, more)) => {
                let sc: Vec<char> = seg.chars().collect();
                let nc: Vec<char> = name.chars().collect();
                match_chars(&sc, &nc, true) && match_segments(rest, more)
            }
            None => false,
        },
    }
}

/// doublestar's `Glob` over the tree at `root`: every relative path matching `pattern`, in walk
/// order (the `Extract` strategy's selection).
pub fn doublestar_glob(root: &Path, pattern: &str) -> Result<Vec<String>, BadPattern> {
    doublestar_match(pattern, "")?;
    let mut out = Vec::new();
    walk(root, "", &mut |rel| {
        if doublestar_match(pattern, rel).unwrap_or(false) {
            out.push(rel.to_string());
        }
    });
    Ok(out)
}

/// Every relative path under `root` (directories before their content, names sorted).
pub(crate) fn walk(root: &Path, rel: &str, f: &mut dyn FnMut(&str)) {
    let Ok(rd) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut entries: Vec<(String, bool)> = rd
        .filter_map(|e| e.ok())
        .map(|e| {
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            (e.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    entries.sort();
    for (name, is_dir) in entries {
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        f(&path);
        if is_dir {
            walk(root, &path, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_match() {
        assert!(path_match("*.yaml", "a.yaml").unwrap());
        assert!(!path_match("*.yaml", "d/a.yaml").unwrap());
        assert!(path_match("**", "base").unwrap());
        assert!(!path_match("**", "a/b").unwrap());
        assert!(path_match("a?c", "abc").unwrap());
        assert!(path_match("[a-c]x", "bx").unwrap());
        assert!(!path_match("[^a-c]x", "bx").unwrap());
        assert!(path_match("\\*", "*").unwrap());
        assert_eq!(path_match("[", "a"), Err(BadPattern));
        assert_eq!(path_match("a]", "a"), Err(BadPattern));
    }

    #[test]
    fn doublestar() {
        assert!(doublestar_match("**/testdata/**", "x/testdata/a.yaml").unwrap());
        assert!(doublestar_match("**/testdata/**", "testdata/a.yaml").unwrap());
        assert!(doublestar_match("*.md", "README.md").unwrap());
        assert!(!doublestar_match("*.md", "docs/README.md").unwrap());
        assert!(doublestar_match("subdir/**", "subdir/a/b").unwrap());
        assert!(doublestar_match("**/*.{tgz,tar.gz}", "a/b/c.tar.gz").unwrap());
        assert!(doublestar_match("**", "").unwrap());
        assert_eq!(doublestar_match("[", "a"), Err(BadPattern));
    }
}
