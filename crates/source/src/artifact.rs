//! Packing a commit's tree into a reproducible tar.gz, read straight from the object database
//! (no checkout, so nothing on disk can be reached through a symlink).
//!
//! Reproducible: entries in depth-first order with names sorted bytewise inside each directory,
//! mtime 0, uid/gid 0, no user or group names, modes normalised to 0644/0755, gzip header
//! without a timestamp or file name. The same commit and ignore rules give the same bytes, so
//! the same sha256 digest.
//!
//! Exclusions follow source-controller: `.git/`, `.gitignore`, `.gitmodules`, `.gitattributes`
//! always; the default list (images, archives, CI configs, …) unless some `.sourceignore` file
//! or `spec.ignore` supplies patterns, which then replace it; nested `.sourceignore` files apply
//! below their own directory; `spec.ignore` applies at the root and wins over the files (the
//! rules themselves are [`crate::sourceignore`], shared with the CLI).

use std::io::Write;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::sourceignore::{IGNORE_FILE, Rules};

/// Default largest single file accepted into an artifact: 100 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 100 * 1024 * 1024;
/// Default largest total of file sizes in one artifact: 1 GiB.
pub const DEFAULT_MAX_ARTIFACT_SIZE: u64 = 1024 * 1024 * 1024;

/// How to pack.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// `spec.ignore`, in .gitignore syntax.
    pub ignore: Option<String>,
    /// A file larger than this fails the packing (bytes).
    pub max_file_size: u64,
    /// A tar.gz larger than this fails the packing (bytes).
    pub max_artifact_size: u64,
    /// `spec.sparseCheckout`: when not empty, only these directories (and the directories
    /// above them) are packed, as a sparse checkout holds them; each must exist.
    pub sparse: Vec<String>,
    /// `spec.include`: other GitRepositories' artifacts copied in, in order.
    pub includes: Vec<Include>,
}

/// One `spec.include`: `from_path` of another GitRepository's artifact becomes `to_path` of
/// this one, as source-controller copies it into the checkout before archiving (the including
/// repository's ignore rules then apply to it too). `to_path` must not be in the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    /// The included GitRepository's name (messages only).
    pub name: String,
    /// The path in its artifact; empty for all of it.
    pub from_path: String,
    /// Where it goes; Flux's default is the GitRepository's name.
    pub to_path: String,
    /// Its artifact (a tar.gz in storage).
    pub archive: std::path::PathBuf,
    /// Its artifact's digest: a change of it repacks this repository.
    pub digest: String,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            ignore: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_artifact_size: DEFAULT_MAX_ARTIFACT_SIZE,
            sparse: Vec::new(),
            includes: Vec::new(),
        }
    }
}

/// What packing produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackStats {
    /// How many files were packed.
    pub files: usize,
    /// Sum of the packed files' sizes (uncompressed).
    pub content_bytes: u64,
    /// Symlinks left out, with why (their target leaves the repository, or is not a file).
    pub skipped_symlinks: Vec<String>,
}

#[derive(Debug)]
struct Entry {
    path: BString,
    kind: EntryKind,
    oid: gix::ObjectId,
    /// The bytes of a file copied in from an included artifact (not in the object database).
    content: Option<std::sync::Arc<[u8]>>,
}

fn archive_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Archive(format!("{what}: {e}"))
}

/// Lists the tree depth-first, each directory's entries sorted by name.
fn walk(
    repo: &gix::Repository,
    tree: gix::ObjectId,
    prefix: &BStr,
    out: &mut Vec<Entry>,
) -> Result<()> {
    let tree = repo
        .find_tree(tree)
        .map_err(|e| archive_err("reading a tree", e))?;
    let mut entries: Vec<(BString, EntryKind, gix::ObjectId)> = tree
        .iter()
        .map(|e| {
            e.map(|e| (e.filename().to_owned(), e.mode().kind(), e.oid().to_owned()))
                .map_err(|e| archive_err("decoding a tree", e))
        })
        .collect::<Result<_>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind, oid) in entries {
        let mut path = prefix.to_owned();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(&name);
        out.push(Entry {
            path: path.clone(),
            kind,
            oid,
            content: None,
        });
        if kind == EntryKind::Tree {
            walk(repo, oid, path.as_bstr(), out)?;
        }
    }
    Ok(())
}

/// The entries a sparse checkout of `dirs` holds: those below each directory, the directory
/// itself and the directories above it. Flux's message when a directory is not in the commit.
fn sparse_entries(entries: Vec<Entry>, dirs: &[String]) -> Result<Vec<Entry>> {
    let cleaned: Vec<(String, String)> = dirs
        .iter()
        .map(|d| (d.clone(), crate::clean_path(d).join("/")))
        .collect();
    for (given, dir) in &cleaned {
        let exists = dir.is_empty() || entries.iter().any(|e| e.path == dir.as_bytes());
        if !exists {
            return Err(Error::SparseCheckout(format!(
                "sparse checkout dir '{given}' does not exist in repository"
            )));
        }
    }
    let keep = |path: &[u8]| {
        cleaned.iter().any(|(_, dir)| {
            let dir = dir.as_bytes();
            dir.is_empty()
                || path == dir
                || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
                || (dir.starts_with(path) && dir.get(path.len()) == Some(&b'/'))
        })
    };
    Ok(entries.into_iter().filter(|e| keep(&e.path)).collect())
}

/// `entries` with each include's files copied in under its `to_path` (and the directories
/// above it), in the order a directory walk writes them. Source-controller renames the
/// included directory into the checkout, which fails when the path is taken: so does this.
fn with_includes(
    mut entries: Vec<Entry>,
    includes: &[Include],
    max_file_size: u64,
) -> Result<Vec<Entry>> {
    for incl in includes {
        let fail = |why: String| {
            Error::Include(format!(
                "failed to copy '{}' include from {} to {}: {why}",
                incl.name, incl.from_path, incl.to_path
            ))
        };
        let to = crate::clean_path(&incl.to_path).join("/");
        let from = crate::clean_path(&incl.from_path).join("/");
        if to.is_empty() {
            return Err(fail("the include would replace the whole artifact".into()));
        }
        let taken = entries.iter().any(|e| {
            e.path == to.as_bytes()
                || (e.path.starts_with(to.as_bytes()) && e.path.get(to.len()) == Some(&b'/'))
        });
        if taken {
            return Err(fail(format!("'{to}' is already in the repository")));
        }
        let file = std::fs::File::open(&incl.archive)
            .map_err(|e| fail(format!("reading the included artifact: {e}")))?;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        let mut copied = Vec::new();
        let entries_iter = archive
            .entries()
            .map_err(|e| fail(format!("reading the included artifact: {e}")))?;
        for item in entries_iter {
            let mut item = item.map_err(|e| fail(format!("reading the included artifact: {e}")))?;
            let raw = item
                .path()
                .map_err(|e| fail(format!("reading the included artifact: {e}")))?
                .to_string_lossy()
                .into_owned();
            let rel = crate::clean_path(&raw).join("/");
            let below = if from.is_empty() {
                Some(rel.as_str())
            } else if rel == from {
                Some("")
            } else {
                rel.strip_prefix(&format!("{from}/"))
            };
            let Some(below) = below else { continue };
            let path = if below.is_empty() {
                to.clone()
            } else {
                format!("{to}/{below}")
            };
            let kind = item.header().entry_type();
            if kind.is_dir() {
                copied.push(Entry {
                    path: BString::from(path),
                    kind: EntryKind::Tree,
                    oid: gix::ObjectId::null(gix::hash::Kind::Sha1),
                    content: None,
                });
            } else if kind.is_file() {
                let size = item.header().size().unwrap_or(0);
                if size > max_file_size {
                    return Err(Error::FileTooLarge {
                        path,
                        size,
                        limit: max_file_size,
                    });
                }
                let mut data = Vec::with_capacity(size as usize);
                std::io::Read::read_to_end(&mut item, &mut data)
                    .map_err(|e| fail(format!("reading the included artifact: {e}")))?;
                let executable = item.header().mode().unwrap_or(0o644) & 0o111 != 0;
                copied.push(Entry {
                    path: BString::from(path),
                    kind: if executable {
                        EntryKind::BlobExecutable
                    } else {
                        EntryKind::Blob
                    },
                    oid: gix::ObjectId::null(gix::hash::Kind::Sha1),
                    content: Some(data.into()),
                });
            }
        }
        if copied.is_empty() {
            return Err(fail(format!(
                "'{}' is not in the included artifact",
                if from.is_empty() { "." } else { &from }
            )));
        }
        // The directories down to `to_path`, and `to_path` itself when a file was not copied
        // there: those a checkout would hold.
        let mut dirs: Vec<String> = Vec::new();
        let parts: Vec<&str> = to.split('/').collect();
        for i in 1..=parts.len() {
            let dir = parts[..i].join("/");
            let is_file = i == parts.len()
                && copied
                    .iter()
                    .any(|c| c.path == dir.as_bytes() && c.kind != EntryKind::Tree);
            if !is_file {
                dirs.push(dir);
            }
        }
        for dir in dirs {
            let present = entries
                .iter()
                .chain(copied.iter())
                .any(|e| e.path == dir.as_bytes());
            if !present {
                copied.push(Entry {
                    path: BString::from(dir),
                    kind: EntryKind::Tree,
                    oid: gix::ObjectId::null(gix::hash::Kind::Sha1),
                    content: None,
                });
            }
        }
        entries.extend(copied);
    }
    // A directory walk's order: component by component, each directory before what it holds.
    entries.sort_by(|a, b| a.path.split_str("/").cmp(b.path.split_str("/")));
    Ok(entries)
}

/// Resolves a symlink's target against the tree; `None` when it leaves the repository.
fn resolve_link(link_path: &BStr, target: &[u8]) -> Option<BString> {
    if target.starts_with(b"/") {
        return None;
    }
    let mut parts: Vec<&[u8]> = link_path.split_str("/").collect();
    parts.pop();
    for comp in target.split_str("/") {
        match comp {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(BString::from(parts.join(&b"/"[..])))
}

/// Writes `w` and keeps the count and sha256 of what went through.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }
    /// `("sha256:<hex>", size)` and the inner writer.
    pub(crate) fn finish(self) -> (String, u64, W) {
        let digest = self.hasher.finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        (format!("sha256:{hex}"), self.written, self.inner)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Packs the tree `tree` of `repo` as tar.gz into `out`.
pub fn pack_tree(
    repo: &gix::Repository,
    tree: gix::ObjectId,
    opts: &PackOptions,
    out: impl Write,
) -> Result<PackStats> {
    let mut entries = Vec::new();
    walk(repo, tree, BStr::new(""), &mut entries)?;
    if !opts.sparse.is_empty() {
        entries = sparse_entries(entries, &opts.sparse)?;
    }
    if !opts.includes.is_empty() {
        entries = with_includes(entries, &opts.includes, opts.max_file_size)?;
    }

    let read_blob = |oid: gix::ObjectId| -> Result<Vec<u8>> {
        repo.find_object(oid)
            .map(|o| o.detach().data)
            .map_err(|e| archive_err("reading a file", e))
    };
    let mut sourceignores = Vec::new();
    for e in &entries {
        let name = e.path.rsplit_str("/").next().unwrap_or_default();
        if name == IGNORE_FILE.as_bytes()
            && matches!(e.kind, EntryKind::Blob | EntryKind::BlobExecutable)
        {
            let dir = e
                .path
                .rsplit_once_str("/")
                .map(|(d, _)| d)
                .unwrap_or_default();
            let data = match &e.content {
                Some(data) => data.to_vec(),
                None => read_blob(e.oid)?,
            };
            sourceignores.push((BString::from(dir), data));
        }
    }
    let matcher = Rules::for_artifact(&sourceignores, opts.ignore.as_deref())
        .map_err(|e| Error::Archive(e.to_string()))?;
    let by_path: std::collections::HashMap<&BStr, &Entry> =
        entries.iter().map(|e| (e.path.as_bstr(), e)).collect();

    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(out, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut stats = PackStats::default();
    let mut excluded_dirs: Vec<BString> = Vec::new();

    for e in &entries {
        if excluded_dirs
            .iter()
            .any(|d| e.path.starts_with(d.as_slice()) && e.path.get(d.len()) == Some(&b'/'))
        {
            continue;
        }
        let is_dir = e.kind == EntryKind::Tree;
        if matcher.excluded(e.path.as_bstr(), is_dir) {
            if is_dir {
                excluded_dirs.push(e.path.clone());
            }
            continue;
        }
        let path = e.path.to_str().map_err(|_| {
            Error::Archive(format!("path {:?} is not UTF-8", e.path.to_str_lossy()))
        })?;
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let (oid, mode) = match e.kind {
            EntryKind::Tree => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                tar.append_data(&mut header, format!("{path}/"), std::io::empty())
                    .map_err(|err| archive_err("writing the archive", err))?;
                continue;
            }
            // Submodules are not fetched (recurseSubmodules is not supported).
            EntryKind::Commit => continue,
            EntryKind::Blob | EntryKind::BlobExecutable if e.content.is_some() => {
                let data = e.content.as_deref().unwrap_or_default();
                let size = data.len() as u64;
                stats.content_bytes += size;
                if stats.content_bytes > opts.max_artifact_size {
                    return Err(Error::ArtifactTooLarge {
                        limit: opts.max_artifact_size,
                    });
                }
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if e.kind == EntryKind::BlobExecutable {
                    0o755
                } else {
                    0o644
                });
                header.set_size(size);
                tar.append_data(&mut header, path, data)
                    .map_err(|err| archive_err("writing the archive", err))?;
                stats.files += 1;
                continue;
            }
            EntryKind::Blob => (e.oid, 0o644),
            EntryKind::BlobExecutable => (e.oid, 0o755),
            EntryKind::Link => {
                let target = read_blob(e.oid)?;
                let resolved = resolve_link(e.path.as_bstr(), &target);
                let file = resolved
                    .as_ref()
                    .and_then(|p| by_path.get(p.as_bstr()))
                    .filter(|t| matches!(t.kind, EntryKind::Blob | EntryKind::BlobExecutable));
                match file {
                    Some(t) => (
                        t.oid,
                        if t.kind == EntryKind::BlobExecutable {
                            0o755
                        } else {
                            0o644
                        },
                    ),
                    None => {
                        let why = if resolved.is_none() {
                            "points outside the repository"
                        } else {
                            "does not point to a file of the repository"
                        };
                        tracing::info!(path, why, "symlink left out of the artifact");
                        stats.skipped_symlinks.push(format!("{path}: {why}"));
                        continue;
                    }
                }
            }
        };
        let size = repo
            .find_header(oid)
            .map_err(|err| archive_err("reading a file header", err))?
            .size();
        if size > opts.max_file_size {
            return Err(Error::FileTooLarge {
                path: path.to_string(),
                size,
                limit: opts.max_file_size,
            });
        }
        stats.content_bytes += size;
        if stats.content_bytes > opts.max_artifact_size {
            return Err(Error::ArtifactTooLarge {
                limit: opts.max_artifact_size,
            });
        }
        let data = read_blob(oid)?;
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        tar.append_data(&mut header, path, data.as_slice())
            .map_err(|err| archive_err("writing the archive", err))?;
        stats.files += 1;
    }
    let gz = tar
        .into_inner()
        .map_err(|e| archive_err("finishing the archive", e))?;
    let mut out = gz
        .finish()
        .map_err(|e| archive_err("finishing the archive", e))?;
    out.flush()
        .map_err(|e| archive_err("finishing the archive", e))?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_targets_resolve_inside_only() {
        let r = |l: &str, t: &str| resolve_link(BStr::new(l), t.as_bytes()).map(|b| b.to_string());
        assert_eq!(r("a/link", "../b/file"), Some("b/file".into()));
        assert_eq!(r("link", "./x"), Some("x".into()));
        assert_eq!(r("a/link", "../../etc/passwd"), None);
        assert_eq!(r("link", "/etc/passwd"), None);
        assert_eq!(r("link", ".."), None);
    }
}

#[cfg(test)]
mod entry_tests {
    use super::*;

    fn entry(path: &str, kind: EntryKind) -> Entry {
        Entry {
            path: BString::from(path),
            kind,
            oid: gix::ObjectId::null(gix::hash::Kind::Sha1),
            content: None,
        }
    }

    #[test]
    fn a_sparse_checkout_keeps_its_directories_and_those_above_them() {
        let all = || {
            vec![
                entry("README.md", EntryKind::Blob),
                entry("apps", EntryKind::Tree),
                entry("apps/base", EntryKind::Tree),
                entry("apps/base/a.yaml", EntryKind::Blob),
                entry("apps/prod", EntryKind::Tree),
                entry("apps/prod/p.yaml", EntryKind::Blob),
                entry("apps-old", EntryKind::Tree),
                entry("apps-old/x.yaml", EntryKind::Blob),
            ]
        };
        let kept: Vec<String> = sparse_entries(all(), &["./apps/prod/".into()])
            .unwrap()
            .into_iter()
            .map(|e| e.path.to_string())
            .collect();
        assert_eq!(kept, ["apps", "apps/prod", "apps/prod/p.yaml"]);
        let kept = sparse_entries(all(), &["apps".into()]).unwrap();
        assert_eq!(kept.len(), 5, "a sibling named apps-old is not below apps");
        let err = sparse_entries(all(), &["apps/staging".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to sparse checkout directories : sparse checkout dir 'apps/staging' does not exist in repository"
        );
    }

    /// An included artifact as source-controller stores one: a tar.gz with directories.
    fn artifact(dir: &std::path::Path, files: &[(&str, &str)]) -> std::path::PathBuf {
        let path = dir.join("included.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let mut tar = tar::Builder::new(gz);
        let mut dirs = std::collections::BTreeSet::new();
        for (name, _) in files {
            let mut parts: Vec<&str> = name.split('/').collect();
            parts.pop();
            for i in 1..=parts.len() {
                dirs.insert(parts[..i].join("/"));
            }
        }
        for d in dirs {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            tar.append_data(&mut h, format!("{d}/"), std::io::empty())
                .unwrap();
        }
        for (name, text) in files {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(text.len() as u64);
            tar.append_data(&mut h, name, text.as_bytes()).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn includes_are_copied_under_their_path_in_walk_order() {
        let dir = tempfile::tempdir().unwrap();
        let archive = artifact(
            dir.path(),
            &[
                ("README.md", "other\n"),
                ("deploy/kubernetes/a.yaml", "a\n"),
                ("deploy/kubernetes/sub/b.yaml", "b\n"),
            ],
        );
        let include = |from: &str, to: &str| Include {
            name: "other".into(),
            from_path: from.into(),
            to_path: to.into(),
            archive: archive.clone(),
            digest: "sha256:x".into(),
        };
        let repo = || {
            vec![
                entry("README.md", EntryKind::Blob),
                entry("base", EntryKind::Tree),
                entry("base/other.yaml", EntryKind::Blob),
                entry("base-x.yaml", EntryKind::Blob),
            ]
        };
        let got = with_includes(
            repo(),
            &[include("./deploy/kubernetes", "base/app")],
            u64::MAX,
        )
        .unwrap();
        let paths: Vec<String> = got.iter().map(|e| e.path.to_string()).collect();
        assert_eq!(
            paths,
            [
                "README.md",
                "base",
                "base/app",
                "base/app/a.yaml",
                "base/app/sub",
                "base/app/sub/b.yaml",
                "base/other.yaml",
                "base-x.yaml"
            ]
        );
        let b = got
            .iter()
            .find(|e| e.path == "base/app/sub/b.yaml")
            .unwrap();
        assert_eq!(b.content.as_deref(), Some(&b"b\n"[..]));

        // The whole artifact, under a path of its own.
        let got = with_includes(repo(), &[include("", "vendor/other")], u64::MAX).unwrap();
        assert!(
            got.iter()
                .any(|e| e.path == "vendor/other/deploy/kubernetes/a.yaml")
        );
        assert!(
            got.iter()
                .any(|e| e.path == "vendor" && e.kind == EntryKind::Tree)
        );

        // A path the commit holds, and a path the artifact lacks.
        let err = with_includes(repo(), &[include("deploy", "base")], u64::MAX).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to copy 'other' include from deploy to base: 'base' is already in the repository"
        );
        let err = with_includes(repo(), &[include("nowhere", "x")], u64::MAX).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to copy 'other' include from nowhere to x: 'nowhere' is not in the included artifact"
        );
        assert!(matches!(
            with_includes(repo(), &[include("", "big")], 1),
            Err(Error::FileTooLarge { .. })
        ));
    }
}
