//! Helm artifacts in the shared artifact storage (crates/source's root and URL scheme):
//! `helmrepository/<ns>/<name>/index-<hex>.yaml` and `helmchart/<ns>/<name>/<chart>-<version>.tgz`,
//! written atomically, with a stable link beside them (`index.yaml`, `latest.tar.gz`, as Flux's
//! `status.url`) and the older files garbage-collected.

use std::io::Write;
use std::path::Path;

use ferroflux_source::Storage;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// How many artifacts of one object are kept (Flux's `--artifact-retention-records` default).
pub const KEEP_ARTIFACTS: usize = 2;

/// A stored file, with the fields of `status.artifact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Relative to the storage root.
    pub path: String,
    /// Where the artifact server serves it.
    pub url: String,
    /// `sha256:<hex>` of the file.
    pub digest: String,
    /// Size in bytes.
    pub size: u64,
    /// The stable address of the object's latest artifact (`status.url`).
    pub stable_url: String,
}

/// `sha256:<hex>` of `data`.
pub fn sha256_digest(data: &[u8]) -> String {
    let hex: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

/// The directory of one object: `<kind>/<ns>/<name>` (kind lower-case).
pub fn object_dir(kind: &str, namespace: &str, name: &str) -> Result<String> {
    if !valid_segment(namespace) || !valid_segment(name) {
        return Err(Error::Storage(format!(
            "invalid object key {namespace}/{name}"
        )));
    }
    Ok(format!("{}/{namespace}/{name}", kind.to_lowercase()))
}

/// Writes `data` as `<dir>/<file_name>` atomically, points `<dir>/<link>` at it, and removes
/// all but the newest [`KEEP_ARTIFACTS`] other files of the directory.
pub fn store(
    storage: &Storage,
    dir: &str,
    file_name: &str,
    link: &str,
    data: &[u8],
) -> Result<Stored> {
    if !valid_segment(file_name) || file_name.starts_with('.') {
        return Err(Error::Storage(format!("invalid artifact name {file_name}")));
    }
    let abs_dir = storage.local_path(dir);
    std::fs::create_dir_all(&abs_dir).map_err(|e| Error::storage(&abs_dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(&abs_dir)
        .map_err(|e| Error::storage(&abs_dir, e))?;
    tmp.write_all(data)
        .map_err(|e| Error::storage(tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::storage(tmp.path(), e))?;
    let dest = abs_dir.join(file_name);
    tmp.persist(&dest)
        .map_err(|e| Error::storage(&dest, e.error))?;
    relink(&abs_dir, link, file_name)?;
    garbage_collect(&abs_dir, file_name)?;
    let path = format!("{dir}/{file_name}");
    Ok(Stored {
        url: storage.url_for(&path),
        stable_url: storage.url_for(&format!("{dir}/{link}")),
        path,
        digest: sha256_digest(data),
        size: data.len() as u64,
    })
}

/// Points the symbolic link `link` at `target`, replacing it atomically.
fn relink(dir: &Path, link: &str, target: &str) -> Result<()> {
    let tmp = dir.join(format!(".tmp-link-{link}"));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(|e| Error::storage(&tmp, e))?;
    let dest = dir.join(link);
    std::fs::rename(&tmp, &dest).map_err(|e| Error::storage(&dest, e))
}

fn garbage_collect(dir: &Path, current: &str) -> Result<()> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::storage(dir, e))? {
        let entry = entry.map_err(|e| Error::storage(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if name.starts_with('.') || name == current || !meta.is_file() {
            continue;
        }
        let mtime = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
        files.push((mtime, name));
    }
    files.sort_by(|a, b| b.cmp(a));
    for (_, name) in files.into_iter().skip(KEEP_ARTIFACTS.saturating_sub(1)) {
        let p = dir.join(&name);
        std::fs::remove_file(&p).map_err(|e| Error::storage(&p, e))?;
    }
    Ok(())
}

/// Whether the artifact at `path` (relative to the root) is in storage.
pub fn exists(storage: &Storage, path: &str) -> bool {
    storage.exists(path)
}

/// Removes every artifact of an object (its finalizer's job).
pub fn remove_all(storage: &Storage, dir: &str) -> Result<()> {
    let abs = storage.local_path(dir);
    match std::fs::remove_dir_all(&abs) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::storage(&abs, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_links_and_collects() {
        let root = tempfile::tempdir().unwrap();
        let storage = Storage::new(root.path(), "http://h:1").unwrap();
        let dir = object_dir("HelmChart", "ns", "c").unwrap();
        let mut last = None;
        for (i, v) in ["1.0.0", "1.1.0", "1.2.0"].iter().enumerate() {
            let name = format!("c-{v}.tgz");
            let s = store(&storage, &dir, &name, "latest.tar.gz", v.as_bytes()).unwrap();
            // Distinct mtimes without sleeping.
            let t =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(10 + i as u64);
            std::fs::File::options()
                .write(true)
                .open(storage.local_path(&s.path))
                .unwrap()
                .set_modified(t)
                .unwrap();
            last = Some(s);
        }
        let s = last.unwrap();
        assert_eq!(s.path, "helmchart/ns/c/c-1.2.0.tgz");
        assert_eq!(s.url, "http://h:1/helmchart/ns/c/c-1.2.0.tgz");
        assert_eq!(s.stable_url, "http://h:1/helmchart/ns/c/latest.tar.gz");
        assert_eq!(
            std::fs::read(storage.local_path("helmchart/ns/c/latest.tar.gz")).unwrap(),
            b"1.2.0"
        );
        assert!(storage.exists("helmchart/ns/c/c-1.1.0.tgz"));
        assert!(!storage.exists("helmchart/ns/c/c-1.0.0.tgz"));
        assert!(object_dir("HelmChart", "..", "c").is_err());
    }
}
