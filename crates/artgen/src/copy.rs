//! The copy operations of one output artifact, with `cp`'s semantics as source-watcher gives
//! them: a path (no glob) is copied as a file or as a directory (`@src/dir` and `@src/dir/` make
//! `dest/dir/`; `@src/` copies the whole source); a glob selects entries with Go's `fs.Glob`
//! and, when it ends in `/**`, strips the selected directory (`@src/apps/**` → the content of
//! `apps`), otherwise keeps each match's full path under the destination. A destination ending
//! in `/` is a directory; a file copied to an existing directory goes inside it. `exclude`
//! patterns (doublestar) are matched against the source-relative path and the path relative to
//! the selection's literal prefix; a pattern without `/` matches a file name at any depth.
//! `Merge` deep-merges YAML into an existing file (maps merged, everything else replaced, as
//! Helm merges values files); `Extract` unpacks `.tar.gz`/`.tgz` files.

use crate::glob::{self, BadPattern};
use crate::{Error, merge};
use ferroflux_api::artifactgenerator::{CopyOperation, CopyStrategy};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most an `Extract` may unpack (Flux's artifact bound).
const MAX_EXTRACT: u64 = 1024 * 1024 * 1024;

/// Applies `ops` in order into `staging`, reading the sources' trees from `sources` (alias →
/// directory).
pub fn apply_all(
    ops: &[CopyOperation],
    sources: &BTreeMap<String, PathBuf>,
    staging: &Path,
) -> Result<(), Error> {
    for op in ops {
        apply(op, sources, staging).map_err(|reason| Error::Copy {
            from: op.from.clone(),
            to: op.to.clone(),
            reason,
        })?;
    }
    Ok(())
}

/// Splits `@alias/pattern`.
fn parse_from(from: &str) -> Result<(&str, &str), String> {
    let rest = from
        .strip_prefix('@')
        .ok_or_else(|| format!("invalid copy source '{from}': source must start with '@'"))?;
    rest.split_once('/').ok_or_else(|| {
        format!("invalid copy source '{from}': source format must be '@alias/pattern'")
    })
}

/// Normalizes a relative path, refusing one that leaves its root.
fn clean(path: &str, what: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!("{what} '{path}' leaves its root"));
                }
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    }
}

fn base_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn bad(pattern: &str) -> impl Fn(BadPattern) -> String + '_ {
    move |e| format!("invalid glob pattern '{pattern}': {e}")
}

fn apply(
    op: &CopyOperation,
    sources: &BTreeMap<String, PathBuf>,
    staging: &Path,
) -> Result<(), String> {
    let (alias, pattern) = parse_from(&op.from)?;
    let dest = op.to.strip_prefix("@artifact/").ok_or_else(|| {
        format!(
            "invalid copy destination '{}': destination must start with '@artifact/'",
            op.to
        )
    })?;
    let dest_is_dir = op.to.ends_with('/');
    let dest = clean(dest, "destination")?;
    let root = sources
        .get(alias)
        .ok_or_else(|| format!("source alias '{alias}' not found"))?;
    let excludes = op.exclude.clone().unwrap_or_default();
    for p in &excludes {
        glob::doublestar_match(p, ".").map_err(|_| format!("invalid exclude pattern '{p}'"))?;
    }
    let strategy = op.strategy.unwrap_or_default();
    let copy = Copier {
        root,
        staging,
        excludes: &excludes,
        strategy,
    };

    if !glob::has_glob_chars(pattern) {
        let src = clean(pattern, "source")?;
        let full = root.join(&src);
        let meta =
            std::fs::metadata(&full).map_err(|_| format!("source '{src}' does not exist"))?;
        if meta.is_dir() {
            if strategy == CopyStrategy::Extract {
                return Err(format!(
                    "extract strategy is not supported for directories, got '{src}'"
                ));
            }
            let target = join(&dest, if src.is_empty() { "" } else { base_name(&src) });
            return copy.dir(&src, &target, &src);
        }
        if copy.excluded(&src, "") {
            return Ok(());
        }
        if strategy == CopyStrategy::Extract {
            if !is_tarball(&src) {
                return Err(format!(
                    "extract strategy requires tarball file (.tar.gz or .tgz), got '{src}'"
                ));
            }
            return copy.extract(&src, &dest);
        }
        let target = if dest_is_dir || staging.join(&dest).is_dir() {
            join(&dest, base_name(&src))
        } else {
            dest.clone()
        };
        return copy.file(&src, &target);
    }

    let matches = if strategy == CopyStrategy::Extract {
        glob::doublestar_glob(root, pattern).map_err(bad(pattern))?
    } else {
        glob::fs_glob(root, pattern).map_err(bad(pattern))?
    };
    if matches.is_empty() {
        return Err(format!(
            "no files match pattern '{pattern}' in source '{alias}'"
        ));
    }
    let selection_root = selection_root(pattern);
    let kept: Vec<String> = matches
        .into_iter()
        .filter(|m| m != "." && m != ".." && !copy.excluded(m, &selection_root))
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "all files matching pattern '{pattern}' in source '{alias}' were excluded"
        ));
    }
    for m in kept {
        if strategy == CopyStrategy::Extract {
            if is_tarball(&m) {
                copy.extract(&m, &dest)?;
            }
            continue;
        }
        let target = match pattern
            .strip_suffix("/**")
            .and_then(|prefix| m.strip_prefix(&format!("{prefix}/")))
        {
            Some(rel) => join(&dest, rel),
            None => join(&dest, &m),
        };
        if root.join(&m).is_dir() {
            copy.dir(&m, &target, &selection_root)?;
        } else {
            copy.file(&m, &target)?;
        }
    }
    Ok(())
}

/// The literal prefix of a pattern before its first glob segment (`.` when none).
fn selection_root(pattern: &str) -> String {
    let mut parts = Vec::new();
    for seg in pattern.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if glob::has_glob_chars(seg) {
            break;
        }
        parts.push(seg);
    }
    parts.join("/")
}

fn is_tarball(p: &str) -> bool {
    let l = p.to_ascii_lowercase();
    l.ends_with(".tar.gz") || l.ends_with(".tgz")
}

struct Copier<'a> {
    root: &'a Path,
    staging: &'a Path,
    excludes: &'a [String],
    strategy: CopyStrategy,
}

impl Copier<'_> {
    fn excluded(&self, path: &str, base: &str) -> bool {
        if self.excludes.is_empty() {
            return false;
        }
        if matches_any(self.excludes, path) {
            return true;
        }
        let rel = if base.is_empty() {
            Some(path)
        } else {
            path.strip_prefix(base).and_then(|r| r.strip_prefix('/'))
        };
        match rel {
            Some(r) if !r.is_empty() && r != path => matches_any(self.excludes, r),
            _ => false,
        }
    }

    fn mkdirs(&self, rel: &str) -> Result<(), String> {
        let dir = self.staging.join(rel);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("failed to create destination directory '{rel}': {e}"))
    }

    fn file(&self, src: &str, dest: &str) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("failed to copy file '{src}' to '{dest}': {e}");
        if let Some((parent, _)) = dest.rsplit_once('/') {
            self.mkdirs(parent)?;
        }
        let target = self.staging.join(dest);
        if self.strategy == CopyStrategy::Merge && target.is_file() {
            let base = std::fs::read(&target).map_err(fail)?;
            let overlay = std::fs::read(self.root.join(src)).map_err(fail)?;
            let merged = merge::merge_yaml(&base, &overlay)
                .map_err(|e| format!("failed to merge '{src}' into '{dest}': {e}"))?;
            return std::fs::write(&target, merged).map_err(fail);
        }
        if target.is_dir() {
            return Err(format!(
                "failed to copy file '{src}' to '{dest}': the destination is a directory"
            ));
        }
        std::fs::copy(self.root.join(src), &target)
            .map(|_| ())
            .map_err(fail)
    }

    /// Copies the tree at `src` to `dest`, leaving out what `excludes` match.
    fn dir(&self, src: &str, dest: &str, base: &str) -> Result<(), String> {
        self.mkdirs(dest)?;
        let mut entries = Vec::new();
        let start = if src.is_empty() { "" } else { src };
        glob::walk(self.root, start, &mut |p| entries.push(p.to_string()));
        let mut skipped: Vec<String> = Vec::new();
        for path in entries {
            if skipped
                .iter()
                .any(|s| path.starts_with(s.as_str()) && path[s.len()..].starts_with('/'))
            {
                continue;
            }
            let rel = if start.is_empty() {
                path.as_str()
            } else {
                path.strip_prefix(start)
                    .map(|r| r.trim_start_matches('/'))
                    .unwrap_or(&path)
            };
            let is_dir = self.root.join(&path).is_dir();
            if self.excluded(&path, base) {
                if is_dir {
                    skipped.push(path.clone());
                }
                continue;
            }
            let target = join(dest, rel);
            if is_dir {
                self.mkdirs(&target)?;
            } else {
                std::fs::copy(self.root.join(&path), self.staging.join(&target))
                    .map_err(|e| format!("failed to copy file '{path}' to '{target}': {e}"))?;
            }
        }
        Ok(())
    }

    fn extract(&self, src: &str, dest: &str) -> Result<(), String> {
        let fail = |e: String| format!("failed to extract tarball '{src}' to '{dest}': {e}");
        let file = std::fs::File::open(self.root.join(src)).map_err(|e| fail(e.to_string()))?;
        ferroflux_oci::extract::extract_tar_gz(
            std::io::BufReader::new(file),
            &self.staging.join(dest),
            MAX_EXTRACT,
        )
        .map(|_| ())
        .map_err(|e| fail(e.to_string()))
    }
}

fn matches_any(patterns: &[String], path: &str) -> bool {
    let name = base_name(path);
    patterns.iter().any(|p| {
        glob::doublestar_match(p, path).unwrap_or(false)
            || (!p.contains('/') && glob::doublestar_match(p, name).unwrap_or(false))
    })
}
