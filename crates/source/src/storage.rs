//! The artifact store: `<root>/gitrepository/<namespace>/<name>/<commit>.tar.gz`, written
//! atomically (temporary file in the same directory, then rename), garbage-collected to the
//! newest few, and addressed by URL under the storage server's base URL.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::artifact::HashingWriter;
use crate::error::{Error, Result};

/// How many artifacts of one object GC keeps (Flux's `--artifact-retention-records` default).
pub const KEEP_ARTIFACTS: usize = 2;

/// Which object an artifact belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The storage folder of the kind (`gitrepository`, `ocirepository`), lowercase as Flux's.
    kind: &'static str,
}

impl ObjectKey {
    /// A GitRepository's key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey::of_kind("gitrepository", namespace, name)
    }
    /// The key of an object of another source kind (`kind`: Flux's lowercase folder name).
    pub fn of_kind(
        kind: &'static str,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
            kind,
        }
    }
    /// `<kind>/<ns>/<name>`, e.g. `gitrepository/flux-system/fleet`.
    pub fn dir(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// An artifact in storage, with the fields of `status.artifact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Relative to the storage root: `gitrepository/<ns>/<name>/<commit>.tar.gz`.
    pub path: String,
    /// Where the artifact server serves it.
    pub url: String,
    /// `<branch>@sha1:<commit>` (or `<tag>@sha1:…`, `sha1:…`), as Flux writes it.
    pub revision: String,
    /// `sha256:<hex>` of the tar.gz file.
    pub digest: String,
    /// The tar.gz file's size in bytes.
    pub size: u64,
    /// When the file was written.
    pub last_update_time: SystemTime,
}

/// The artifact directory (`--storage-path`) and the URL its file server is reached at.
#[derive(Debug, Clone)]
pub struct Storage {
    root: PathBuf,
    base_url: String,
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

impl Storage {
    /// `root` is `--storage-path`; `base_url` is how clients reach the file server
    /// (`http://<storage-addr>`), used to build artifact URLs.
    pub fn new(root: impl Into<PathBuf>, base_url: impl Into<String>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| Error::storage(&root, e))?;
        Ok(Storage {
            root,
            base_url: base_url.into().trim_end_matches('/').to_string(),
        })
    }

    /// The directory artifacts are stored under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file server's URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The file of the artifact at `rel` (relative to the root).
    pub fn local_path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The URL the artifact at `rel` is served at.
    pub fn url_for(&self, rel: &str) -> String {
        format!("{}/{}", self.base_url, rel)
    }

    /// Whether the artifact at `rel` is on disk.
    pub fn exists(&self, rel: &str) -> bool {
        self.local_path(rel).is_file()
    }

    fn object_dir(&self, key: &ObjectKey) -> Result<PathBuf> {
        if !valid_segment(&key.namespace) || !valid_segment(&key.name) {
            return Err(Error::storage(
                &self.root,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("invalid object key {}/{}", key.namespace, key.name),
                ),
            ));
        }
        Ok(self.root.join(key.dir()))
    }

    /// Writes `file_name` for `key` through `fill`, atomically: readers see the old file or
    /// the complete new one, never a part. Returns the relative path, digest and size.
    pub fn write_atomic<T>(
        &self,
        key: &ObjectKey,
        file_name: &str,
        fill: impl FnOnce(&mut dyn Write) -> Result<T>,
    ) -> Result<(String, String, u64, T)> {
        let dir = self.object_dir(key)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::storage(&dir, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&dir)
            .map_err(|e| Error::storage(&dir, e))?;
        let mut w = HashingWriter::new(std::io::BufWriter::new(tmp));
        let value = fill(&mut w)?;
        let (digest, size, buffered) = w.finish();
        let tmp = buffered
            .into_inner()
            .map_err(|e| Error::storage(&dir, e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::storage(tmp.path(), e))?;
        let dest = dir.join(file_name);
        tmp.persist(&dest)
            .map_err(|e| Error::storage(&dest, e.error))?;
        Ok((format!("{}/{}", key.dir(), file_name), digest, size, value))
    }

    /// Deletes all but the `keep` newest `*.tar.gz` of `key`, never `current`.
    /// Returns the removed relative paths.
    pub fn garbage_collect(
        &self,
        key: &ObjectKey,
        current: &str,
        keep: usize,
    ) -> Result<Vec<String>> {
        let dir = self.object_dir(key)?;
        let mut files = Vec::new();
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::storage(&dir, e)),
        };
        for entry in rd {
            let entry = entry.map_err(|e| Error::storage(&dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if !name.ends_with(".tar.gz") || name.starts_with('.') {
                continue;
            }
            let mtime = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            files.push((format!("{}/{}", key.dir(), name), mtime));
        }
        // Newest first; the current artifact always counts as the newest.
        files.sort_by(|a, b| {
            (b.0 == current)
                .cmp(&(a.0 == current))
                .then(b.1.cmp(&a.1))
                .then(a.0.cmp(&b.0))
        });
        let mut removed = Vec::new();
        for (rel, _) in files.into_iter().skip(keep.max(1)) {
            let p = self.local_path(&rel);
            std::fs::remove_file(&p).map_err(|e| Error::storage(&p, e))?;
            removed.push(rel);
        }
        Ok(removed)
    }

    /// Removes every artifact of `key` (the finalizer's job when the object is deleted).
    pub fn remove_all(&self, key: &ObjectKey) -> Result<()> {
        let dir = self.object_dir(key)?;
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::storage(&dir, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::new(dir.path(), "http://h:9090/").unwrap();
        for (ns, name) in [("..", "x"), ("a", "../b"), ("", "x"), ("a/b", "c")] {
            let err = s
                .write_atomic(&ObjectKey::new(ns, name), "f.tar.gz", |_| Ok(()))
                .unwrap_err();
            assert!(err.to_string().contains("invalid object key"), "{err}");
        }
        assert_eq!(
            s.url_for("gitrepository/a/b/c.tar.gz"),
            "http://h:9090/gitrepository/a/b/c.tar.gz"
        );
    }

    #[test]
    fn failed_writes_leave_nothing_and_gc_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::new(dir.path(), "http://h").unwrap();
        let key = ObjectKey::new("ns", "repo");
        let err = s
            .write_atomic(&key, "bad.tar.gz", |w| {
                w.write_all(b"partial").unwrap();
                Err::<(), _>(Error::Archive("boom".into()))
            })
            .unwrap_err();
        assert!(err.to_string().contains("boom"));
        assert_eq!(
            std::fs::read_dir(dir.path().join(key.dir()))
                .unwrap()
                .count(),
            0
        );
        let mut paths = Vec::new();
        for name in ["a", "b", "c"] {
            let (rel, digest, size, ()) = s
                .write_atomic(&key, &format!("{name}.tar.gz"), |w| {
                    w.write_all(name.as_bytes())
                        .map_err(|e| Error::storage("x", e))
                })
                .unwrap();
            assert_eq!(size, 1);
            assert!(digest.starts_with("sha256:"));
            // Distinct mtimes without sleeping: set them explicitly.
            let t =
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + paths.len() as u64);
            std::fs::File::options()
                .write(true)
                .open(s.local_path(&rel))
                .unwrap()
                .set_modified(t)
                .unwrap();
            paths.push(rel);
        }
        // "a" is current (e.g. a rollback to an old commit): it and the newest other stay.
        let removed = s.garbage_collect(&key, &paths[0], KEEP_ARTIFACTS).unwrap();
        assert_eq!(removed, vec![paths[1].clone()]);
        assert!(s.exists(&paths[0]) && s.exists(&paths[2]));
    }
}
