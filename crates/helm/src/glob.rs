//! The two glob dialects Helm uses: Go's `path.Match` (`.helmignore` rules, `--show-only`) and
//! gobwas/glob with `/` as separator (`.Files.Glob`, which adds `**` and `{a,b}`).

/// Go's `path.Match`: `*` and `?` never match `/`; `[...]` classes with `^` negation and ranges;
/// `\` escapes. A malformed pattern is an error (Go's `syntax error in pattern`), checked over
/// the whole pattern as Go 1.16+ does, even when the name fails to match early.
pub fn path_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let p: Vec<char> = pattern.chars().collect();
    validate(&p)?;
    let n: Vec<char> = name.chars().collect();
    Ok(match_here(&p, &n))
}

/// Go's `path.ErrBadPattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern;

impl std::fmt::Display for BadPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("syntax error in pattern")
    }
}

impl std::error::Error for BadPattern {}

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
            '[' => {
                i = class_end(p, i + 1).ok_or(BadPattern)?;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Index just past the `]` closing a class whose body starts at `i`, or None when malformed.
fn class_end(p: &[char], mut i: usize) -> Option<usize> {
    if i < p.len() && p[i] == '^' {
        i += 1;
    }
    let mut first = true;
    loop {
        if i >= p.len() {
            return None;
        }
        if p[i] == ']' && !first {
            return Some(i + 1);
        }
        first = false;
        // lo
        let lo_len = class_char(p, i)?;
        i += lo_len;
        if i < p.len() && p[i] == '-' {
            i += 1;
            let hi_len = class_char(p, i)?;
            i += hi_len;
        }
    }
}

/// Length of one class character at `i` (1, or 2 for an escape); None when it cannot be one.
fn class_char(p: &[char], i: usize) -> Option<usize> {
    match p.get(i)? {
        '-' | ']' => None,
        '\\' => {
            p.get(i + 1)?;
            Some(2)
        }
        _ => Some(1),
    }
}

fn class_matches(p: &[char], start: usize, c: char) -> (bool, usize) {
    let mut i = start;
    let negate = p.get(i) == Some(&'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        let (lo, lo_len) = if p[i] == '\\' {
            (p[i + 1], 2)
        } else {
            (p[i], 1)
        };
        i += lo_len;
        let mut hi = lo;
        if i < p.len() && p[i] == '-' {
            i += 1;
            let (h, h_len) = if p[i] == '\\' {
                (p[i + 1], 2)
            } else {
                (p[i], 1)
            };
            hi = h;
            i += h_len;
        }
        if lo <= c && c <= hi {
            matched = true;
        }
    }
    (matched != negate, i)
}

fn match_here(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    // Backtracking point for the last `*`: (pattern index after it, name index it resumes at).
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi + 1, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    if ni < n.len() && n[ni] != '/' {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                '[' => {
                    if ni < n.len() && n[ni] != '/' {
                        let (ok, next) = class_matches(p, pi + 1, n[ni]);
                        if ok {
                            pi = next;
                            ni += 1;
                            continue;
                        }
                    }
                }
                '\\' => {
                    if ni < n.len() && n[ni] == p[pi + 1] {
                        pi += 2;
                        ni += 1;
                        continue;
                    }
                }
                c => {
                    if ni < n.len() && n[ni] == c {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
            }
        } else if ni == n.len() {
            return true;
        }
        // Mismatch: let the last star swallow one more character (never a '/').
        match star {
            Some((sp, sn)) if sn < n.len() && n[sn] != '/' => {
                star = Some((sp, sn + 1));
                pi = sp;
                ni = sn + 1;
            }
            _ => return false,
        }
    }
}

/// A compiled gobwas/glob pattern with `/` as the separator, as `.Files.Glob` uses.
pub struct FilesGlob(regex::Regex);

impl FilesGlob {
    /// Compiles `pattern`; an unclosed class or brace is an error, as in gobwas/glob.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut re = String::from("^");
        let mut i = 0;
        let mut depth = 0usize;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '*' if chars.get(i + 1) == Some(&'*') => {
                    re.push_str("(?s:.*)");
                    i += 2;
                    continue;
                }
                '*' => re.push_str("[^/]*"),
                '?' => re.push_str("[^/]"),
                '\\' => {
                    let next = chars.get(i + 1).ok_or("unexpected end of input")?;
                    re.push_str(&regex::escape(&next.to_string()));
                    i += 2;
                    continue;
                }
                '[' => {
                    let mut j = i + 1;
                    let mut class = String::from("[");
                    if chars.get(j) == Some(&'!') {
                        class.push('^');
                        j += 1;
                    }
                    let start = j;
                    while j < chars.len() && (chars[j] != ']' || j == start) {
                        let ch = chars[j];
                        if ch == '\\' || ch == '[' || ch == '&' || ch == '~' || ch == '^' {
                            class.push('\\');
                        }
                        class.push(ch);
                        j += 1;
                    }
                    if j >= chars.len() {
                        return Err("unexpected end of input".into());
                    }
                    class.push(']');
                    re.push_str(&class);
                    i = j + 1;
                    continue;
                }
                '{' => {
                    depth += 1;
                    re.push_str("(?:");
                }
                '}' if depth > 0 => {
                    depth -= 1;
                    re.push(')');
                }
                ',' if depth > 0 => re.push('|'),
                _ => re.push_str(&regex::escape(&c.to_string())),
            }
            i += 1;
        }
        if depth > 0 {
            return Err("unexpected end of input".into());
        }
        re.push('$');
        regex::Regex::new(&re)
            .map(FilesGlob)
            .map_err(|e| e.to_string())
    }

    /// Whether `name` matches.
    pub fn is_match(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_match() {
        assert_eq!(path_match("*.yaml", "a.yaml"), Ok(true));
        assert_eq!(path_match("*.yaml", "x/a.yaml"), Ok(false));
        assert_eq!(path_match("templates/*", "templates/a.yaml"), Ok(true));
        assert_eq!(path_match("a?c", "abc"), Ok(true));
        assert_eq!(path_match("[a-c]x", "bx"), Ok(true));
        assert_eq!(path_match("[^a-c]x", "bx"), Ok(false));
        assert_eq!(path_match("\\*", "*"), Ok(true));
        assert_eq!(path_match("[", "a"), Err(BadPattern));
        assert_eq!(path_match("a[", "b"), Err(BadPattern));
        assert_eq!(path_match(".*", ".git"), Ok(true));
        assert_eq!(path_match("*", ""), Ok(true));
        assert_eq!(path_match("a*b*c", "axxbyyc"), Ok(true));
    }

    #[test]
    fn files_glob() {
        let g = FilesGlob::new("files/*.txt").unwrap_or_else(|e| panic!("{e}"));
        assert!(g.is_match("files/a.txt"));
        assert!(!g.is_match("files/x/a.txt"));
        let g = FilesGlob::new("files/**").unwrap_or_else(|e| panic!("{e}"));
        assert!(g.is_match("files/x/a.txt"));
        let g = FilesGlob::new("{a,b}.conf").unwrap_or_else(|e| panic!("{e}"));
        assert!(g.is_match("b.conf"));
        assert!(!g.is_match("c.conf"));
    }
}
