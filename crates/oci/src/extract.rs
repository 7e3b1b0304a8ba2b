//! Extracting a tar+gzip layer into a directory without letting it write anywhere else.
//!
//! Refused (the whole extraction fails, naming the entry): absolute paths, `..` components,
//! symlinks whose target resolves outside the directory, hard links to anything but a file
//! extracted before them, and trees larger than the limit (a gzip bomb is stopped by counting
//! what is written, not by trusting headers alone). Symlinks are created last, so no file is
//! ever written through one. Device files and FIFOs are skipped.
//!
//! Files are created with mode 0644, or 0755 when the entry has an execute bit, less the
//! process umask (as `tar -x` run by a user other than root does).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Default bound on an extracted tree (Flux's untar limit is 100 MiB; ours allows artifacts as
/// large as the Git source's, 1 GiB).
pub const DEFAULT_MAX_EXTRACT_SIZE: u64 = 1024 * 1024 * 1024;

/// What an extraction wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtractStats {
    /// Regular files written (hard links included).
    pub files: usize,
    /// Their total size.
    pub bytes: u64,
}

fn unsafe_entry(entry: &str, why: impl Into<String>) -> Error {
    Error::UnsafeEntry {
        entry: entry.to_string(),
        why: why.into(),
    }
}

/// The entry's path as components below the root; `None` for the root itself.
fn clean(entry: &str, path: &Path) -> Result<Option<PathBuf>> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(unsafe_entry(entry, "its path contains '..'"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_entry(entry, "its path is absolute"));
            }
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Resolves a symlink `target` written at `link` (both relative to the root); `None` when it
/// leaves the root.
fn resolve_link(link: &Path, target: &Path) -> Option<PathBuf> {
    if target.is_absolute() {
        return None;
    }
    let mut parts: Vec<_> = link
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    for c in target.components() {
        match c {
            Component::Normal(_) => parts.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    Some(parts.iter().collect())
}

/// Extracts the tar+gzip stream `r` into `dest` (created if missing), writing at most
/// `max_size` bytes of file content.
pub fn extract_tar_gz(r: impl Read, dest: &Path, max_size: u64) -> Result<ExtractStats> {
    extract_tar(flate2::read::GzDecoder::new(r), dest, max_size)
}

/// Extracts the (uncompressed) tar stream `r` into `dest`; see [`extract_tar_gz`].
pub fn extract_tar(r: impl Read, dest: &Path, max_size: u64) -> Result<ExtractStats> {
    std::fs::create_dir_all(dest).map_err(|e| Error::io(dest, e))?;
    let mut archive = tar::Archive::new(r);
    let mut stats = ExtractStats::default();
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    // Consecutive files of one directory create it once (a tarball lists a folder's files together).
    let mut last_dir: Option<PathBuf> = None;
    let layer_err = |e: std::io::Error| Error::Io {
        path: "the layer's tarball".into(),
        source: e,
    };
    for entry in archive.entries().map_err(layer_err)? {
        let mut entry = entry.map_err(layer_err)?;
        let raw = entry.path().map_err(layer_err)?.into_owned();
        let name = raw.to_string_lossy().into_owned();
        let Some(rel) = clean(&name, &raw)? else {
            continue;
        };
        let out = dest.join(&rel);
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&out).map_err(|e| Error::io(&out, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                let size = entry.header().size().map_err(layer_err)?;
                if stats.bytes.saturating_add(size) > max_size {
                    return Err(Error::TooLarge {
                        what: "the extracted artifact".into(),
                        limit: max_size,
                    });
                }
                if let Some(parent) = out.parent()
                    && last_dir.as_deref() != Some(parent)
                {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                    last_dir = Some(parent.to_path_buf());
                }
                let exec = entry.header().mode().unwrap_or(0o644) & 0o111 != 0;
                let mut file = create_file(&out, if exec { 0o755 } else { 0o644 })?;
                let written = std::io::copy(
                    &mut (&mut entry).take((max_size - stats.bytes).saturating_add(1)),
                    &mut file,
                )
                .map_err(|e| Error::io(&out, e))?;
                stats.bytes += written;
                if stats.bytes > max_size {
                    return Err(Error::TooLarge {
                        what: "the extracted artifact".into(),
                        limit: max_size,
                    });
                }
                stats.files += 1;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(layer_err)?
                    .ok_or_else(|| unsafe_entry(&name, "a symlink without a target"))?
                    .into_owned();
                if resolve_link(&rel, &target).is_none() {
                    return Err(unsafe_entry(
                        &name,
                        format!(
                            "symlink to {:?} leaves the artifact",
                            target.display().to_string()
                        ),
                    ));
                }
                links.push((out, target));
            }
            tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(layer_err)?
                    .ok_or_else(|| unsafe_entry(&name, "a hard link without a target"))?
                    .into_owned();
                let target_rel = clean(&name, &target)
                    .map_err(|_| unsafe_entry(&name, "hard link leaves the artifact"))?
                    .ok_or_else(|| unsafe_entry(&name, "hard link to the root"))?;
                let source = dest.join(&target_rel);
                let meta = std::fs::symlink_metadata(&source).map_err(|_| {
                    unsafe_entry(&name, "hard link to a file not extracted before it")
                })?;
                if !meta.is_file() {
                    return Err(unsafe_entry(
                        &name,
                        "hard link to something that is not a file",
                    ));
                }
                if let Some(parent) = out.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                std::fs::copy(&source, &out).map_err(|e| Error::io(&out, e))?;
                stats.files += 1;
            }
            // Devices, FIFOs, pax/GNU metadata entries: nothing to write.
            _ => {}
        }
    }
    for (at, target) in links {
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        symlink(&target, &at)?;
    }
    Ok(stats)
}

/// Creates `path` with `mode` in the `open` itself (one syscall per file, as `tar -x`; a
/// separate `chmod` costs a path lookup more per file). An entry already there (a file of the
/// same tarball listed twice, or of a directory extracted into before) is removed first rather
/// than opened, so a symlink standing at that path is replaced, never written through.
fn create_file(path: &Path, mode: u32) -> Result<std::fs::File> {
    let open = || {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, mode);
        #[cfg(not(unix))]
        let _ = mode;
        o.open(path)
    };
    match open() {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
            open().map_err(|e| Error::io(path, e))
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(unix)]
fn symlink(target: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).map_err(|e| Error::io(at, e))
}

#[cfg(not(unix))]
fn symlink(_: &Path, at: &Path) -> Result<()> {
    Err(unsafe_entry(
        &at.display().to_string(),
        "symlinks are only supported on Unix",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_resolution() {
        let r = |l: &str, t: &str| resolve_link(Path::new(l), Path::new(t));
        assert_eq!(r("a/l", "../b"), Some(PathBuf::from("b")));
        assert_eq!(r("a/l", "../../b"), None);
        assert_eq!(r("l", "/etc/passwd"), None);
        assert!(clean("x", Path::new("a/../../b")).is_err());
        assert!(clean("x", Path::new("/etc/passwd")).is_err());
        assert_eq!(clean("x", Path::new("./")).unwrap(), None);
    }
}
