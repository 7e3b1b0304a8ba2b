//! Bucket sources of ferroflux below Kubernetes: what a `Bucket` reconciler needs to turn the
//! objects of an S3 bucket into a stored artifact.
//!
//! Owns: a blocking client of the S3 API (`s3`: `HEAD` bucket, `ListObjectsV2` with every page,
//! `GetObject`), AWS Signature Version 4 (`sigv4`, on the workspace's hmac and sha2), the XML
//! of S3's answers (`xml`), and source-controller's bucket semantics (`fetch`): the bucket must
//! exist; a `.sourceignore` object at the bucket's root and `spec.ignore` filter the keys under
//! `spec.prefix` (keys ending in `/` are skipped); the revision is `sha256:<hex>` of the index
//! (`<key> <etag>\n` for every key in byte order, the ETag unquoted, updated from each object's
//! GET); an unchanged revision downloads nothing; otherwise every object is written below a
//! temporary directory at its full key (a key cannot escape it: `..` is resolved within the
//! directory, as `securejoin` does), packed reproducibly with source-controller's default
//! exclusions (VCS files and the default patterns), and stored as
//! `bucket/<ns>/<name>/<hex>.tar.gz`. Errors carry source-controller's wording.
//!
//! Compatibility notes (what differs from source-controller):
//! - Providers: `generic` with static keys (`accesskey`/`secretkey`) or anonymous, and `aws`
//!   with static keys in the same Secret. `aws` without keys (workload identity, instance
//!   profiles), `gcp` and `azure` are not implemented; the reconciler says so in the status.
//! - `proxySecretRef`: [`Options::proxy`] sends every request through the proxy (tunnelled,
//!   so SigV4 still signs the endpoint's Host).
//! - `sts` and `serviceAccountName` are not implemented (said in the status).
//! - Without `spec.region` the bucket's location is asked once per pass (`GetBucketLocation`),
//!   as minio-go does once per client; `us-east-1` when that question is refused.
//! - A server that lists objects without ETags (s3s-fs) gets one `HEAD` per such object (four at
//!   a time) so that an unchanged bucket keeps its revision; source-controller would see a
//!   change on every poll there. S3, MinIO and GCS list ETags, so this costs nothing with them.
//! - Objects are downloaded four at a time (source-controller: up to 20), with one `GET` each
//!   (source-controller: a `HEAD` then a `GET` bound to the ETag).
//!
//! Must not touch: Kubernetes (no client, no CRD types: the reconciler in `crates/controller`
//! reads the Secret and maps [`Error`] onto conditions), and nothing outside the storage root
//! and its own temporary directories.

pub mod s3;
pub mod sigv4;
pub mod xml;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use ferroflux_source::sourceignore::{self, Rules};
use ferroflux_source::{KEEP_ARTIFACTS, ObjectKey, Storage};
use sha2::{Digest, Sha256};

pub use s3::{Client, Options, S3Error};
pub use sigv4::Credentials;

/// Flux's storage folder of the kind.
pub const STORAGE_KIND: &str = "bucket";

/// How many objects are downloaded at once.
const PARALLEL_DOWNLOADS: usize = 4;

/// Flux's reason for every failure of the bucket operations.
pub const BUCKET_OPERATION_FAILED: &str = "BucketOperationFailed";

/// Why a fetch failed, in source-controller's words.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `HEAD` on the bucket failed.
    #[error("failed to confirm existence of '{bucket}' bucket: {source}")]
    Existence {
        /// The bucket.
        bucket: String,
        /// What S3 said.
        source: S3Error,
    },
    /// The bucket does not exist.
    #[error("bucket '{0}' not found")]
    NotFound(String),
    /// The `.sourceignore` object could not be read.
    #[error("failed to get Etag for '.sourceignore' object: {0}")]
    IgnoreFile(S3Error),
    /// The ignore rules could not be parsed.
    #[error("{0}")]
    Rules(String),
    /// Listing failed.
    #[error(
        "indexation of objects from bucket '{bucket}' failed: listing objects from bucket '{bucket}' failed: {source}"
    )]
    List {
        /// The bucket.
        bucket: String,
        /// What S3 said.
        source: S3Error,
    },
    /// An object could not be fetched.
    #[error("fetch from bucket '{bucket}' failed: failed to get '{key}' object: {source}")]
    Get {
        /// The bucket.
        bucket: String,
        /// The object.
        key: String,
        /// What S3 said.
        source: S3Error,
    },
    /// A local file or the artifact storage failed.
    #[error("{0}")]
    Storage(String),
}

/// What the fetch is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// `spec.bucketName`.
    pub bucket: String,
    /// `spec.prefix`.
    pub prefix: String,
    /// `spec.ignore`.
    pub ignore: Option<String>,
    /// Storage key of the object.
    pub key: ObjectKey,
    /// The revision of the artifact in status, if its file is still stored.
    pub previous_revision: Option<String>,
}

/// What a fetch did.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// The index has the stored revision: nothing downloaded.
    Unchanged {
        /// The revision (`sha256:<hex>`).
        revision: String,
        /// Objects in the index.
        files: usize,
    },
    /// A new artifact was stored.
    Stored {
        /// The storage record.
        artifact: ferroflux_source::Artifact,
        /// Objects fetched.
        files: usize,
    },
}

/// source-controller's revision of an index: `sha256:` and the hex SHA-256 of `<key> <etag>\n`
/// for every key, in byte order.
pub fn revision(index: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (key, etag) in index {
        hasher.update(key.as_bytes());
        hasher.update(b" ");
        hasher.update(etag.as_bytes());
        hasher.update(b"\n");
    }
    format!("sha256:{}", sigv4::hex(&hasher.finalize()))
}

/// The local path of `key` below `dir`: `.` and empty segments dropped, `..` resolved without
/// ever leaving `dir`.
pub fn secure_join(dir: &Path, key: &str) -> PathBuf {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(key).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str().unwrap_or_default()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    parts.iter().fold(dir.to_path_buf(), |p, s| p.join(s))
}

fn storage_err(e: impl std::fmt::Display) -> Error {
    Error::Storage(e.to_string())
}

/// The user's rules for the index: the bucket's root `.sourceignore`, then `spec.ignore`.
fn index_rules(sourceignore: &[u8], spec_ignore: Option<&str>) -> Result<Rules, Error> {
    let mut rules = Rules::default();
    let root = Path::new("");
    rules
        .add(root, sourceignore::IGNORE_FILE, sourceignore)
        .map_err(|e| Error::Rules(e.to_string()))?;
    if let Some(ignore) = spec_ignore {
        rules
            .add(root, "spec.ignore", ignore.as_bytes())
            .map_err(|e| Error::Rules(e.to_string()))?;
    }
    Ok(rules)
}

/// Whether the rules exclude object `key`: the key itself or one of its directories, as the
/// gitignore matcher source-controller uses matches a directory pattern against a key's
/// leading segments.
fn key_excluded(rules: &Rules, key: &str) -> bool {
    let mut end = 0;
    for (i, _) in key.match_indices('/') {
        if i > end && rules.excluded_path(Path::new(&key[..i]), true) {
            return true;
        }
        end = i;
    }
    rules.excluded_path(Path::new(key), false)
}

/// The exclusions of source-controller's archive step: the VCS files and the default patterns.
fn archive_rules() -> Result<Rules, Error> {
    let mut rules = Rules::default();
    let root = Path::new("");
    for patterns in [sourceignore::VCS_EXCLUDES, sourceignore::DEFAULT_EXCLUDES] {
        rules
            .add(
                root,
                sourceignore::IGNORE_FILE,
                patterns.join("\n").as_bytes(),
            )
            .map_err(|e| Error::Rules(e.to_string()))?;
    }
    Ok(rules)
}

/// Lists the bucket into its index (the objects the ignore rules keep, with their ETags); the
/// `.sourceignore` object is written to `dir`.
pub fn index(
    client: &Client,
    req: &Request,
    dir: &Path,
) -> Result<BTreeMap<String, String>, Error> {
    let bucket = req.bucket.as_str();
    match client.bucket_exists(bucket) {
        Ok(true) => {}
        Ok(false) => return Err(Error::NotFound(bucket.to_string())),
        Err(source) => {
            return Err(Error::Existence {
                bucket: bucket.to_string(),
                source,
            });
        }
    }
    let mut ignore_bytes = Vec::new();
    client
        .get_object(bucket, sourceignore::IGNORE_FILE, &mut ignore_bytes)
        .map_err(Error::IgnoreFile)?;
    if !ignore_bytes.is_empty() {
        std::fs::write(dir.join(sourceignore::IGNORE_FILE), &ignore_bytes).map_err(storage_err)?;
    }
    let rules = index_rules(&ignore_bytes, req.ignore.as_deref())?;
    let mut index = BTreeMap::new();
    client
        .visit_objects(bucket, &req.prefix, &mut |key, etag| {
            if key.ends_with('/') || key == sourceignore::IGNORE_FILE {
                return;
            }
            if key_excluded(&rules, key) {
                return;
            }
            index.insert(key.to_string(), etag.to_string());
        })
        .map_err(|source| Error::List {
            bucket: bucket.to_string(),
            source,
        })?;
    // A server that lists no ETags (s3s-fs) would make every poll look like a change: such
    // keys get the ETag of a HEAD, the one their GET returns and the revision is made of.
    let missing: Vec<String> = index
        .iter()
        .filter(|(_, etag)| etag.is_empty())
        .map(|(k, _)| k.clone())
        .collect();
    let heads = each_key(missing, |key| {
        client
            .head_object(bucket, key)
            .map_err(|source| Error::List {
                bucket: bucket.to_string(),
                source,
            })
    });
    for (key, result) in heads {
        match result? {
            Some(etag) => {
                index.insert(key, etag);
            }
            None => {
                index.remove(&key);
            }
        }
    }
    Ok(index)
}

/// One object's request: its key, and its ETag (`None`: it disappeared meanwhile).
type PerKey = (String, Result<Option<String>, Error>);

/// Runs `work` for every key, [`PARALLEL_DOWNLOADS`] at a time; a worker stops at its first
/// error (the caller reports the first it finds).
fn each_key(
    keys: Vec<String>,
    work: impl Fn(&str) -> Result<Option<String>, Error> + Sync,
) -> Vec<PerKey> {
    let next = Mutex::new(keys.into_iter());
    let results: Mutex<Vec<PerKey>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_DOWNLOADS {
            scope.spawn(|| {
                loop {
                    let key = match next.lock() {
                        Ok(mut it) => it.next(),
                        Err(_) => None,
                    };
                    let Some(key) = key else { break };
                    let result = work(&key);
                    let failed = result.is_err();
                    if let Ok(mut r) = results.lock() {
                        r.push((key, result));
                    }
                    if failed {
                        break;
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Downloads every object of `index` below `dir`, updating ETags that changed meanwhile and
/// dropping objects that disappeared.
fn download(
    client: &Client,
    bucket: &str,
    index: &mut BTreeMap<String, String>,
    dir: &Path,
) -> Result<(), Error> {
    let keys: Vec<String> = index.keys().cloned().collect();
    let results = each_key(keys, |key| fetch_one(client, bucket, key, dir));
    for (key, result) in results {
        match result? {
            Some(etag) => {
                index.insert(key, etag);
            }
            None => {
                tracing::info!(key, bucket, "indexed object disappeared from the bucket");
                index.remove(&key);
            }
        }
    }
    Ok(())
}

fn fetch_one(
    client: &Client,
    bucket: &str,
    key: &str,
    dir: &Path,
) -> Result<Option<String>, Error> {
    let path = secure_join(dir, key);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::Get {
            bucket: bucket.to_string(),
            key: key.to_string(),
            source: S3Error::Io(e.to_string()),
        })?;
    }
    let mut file = std::fs::File::create(&path).map_err(|e| Error::Get {
        bucket: bucket.to_string(),
        key: key.to_string(),
        source: S3Error::Io(e.to_string()),
    })?;
    let etag = client
        .get_object(bucket, key, &mut file)
        .map_err(|source| Error::Get {
            bucket: bucket.to_string(),
            key: key.to_string(),
            source,
        })?;
    if etag.is_none() {
        drop(file);
        let _ = std::fs::remove_file(&path);
    }
    Ok(etag)
}

/// One fetch: index, and when the revision changed (or nothing is stored), download, pack,
/// store and garbage-collect. Blocking. On error nothing in storage changed.
pub fn fetch(client: &Client, req: &Request, storage: &Storage) -> Result<Fetched, Error> {
    let dir = tempfile::tempdir().map_err(storage_err)?;
    let mut index = index(client, req, dir.path())?;
    let listed = revision(&index);
    if req.previous_revision.as_deref() == Some(listed.as_str()) {
        return Ok(Fetched::Unchanged {
            revision: listed,
            files: index.len(),
        });
    }
    download(client, &req.bucket, &mut index, dir.path())?;
    let rev = revision(&index);
    let hex = rev.trim_start_matches("sha256:");
    let rules = archive_rules()?;
    let exclude = |p: &Path, is_dir: bool| rules.excluded_path(p, is_dir);
    let mut packed = Ok(());
    let written = storage.write_atomic(&req.key, &format!("{hex}.tar.gz"), |w| {
        packed = ferroflux_oci::artifact::pack_dir(dir.path(), &exclude, w).map(|_| ());
        packed
            .as_ref()
            .map(|_| ())
            .map_err(|e| ferroflux_source::Error::Archive(e.to_string()))
    });
    packed.map_err(|e| Error::Storage(format!("unable to archive artifact to storage: {e}")))?;
    let (path, digest, size, ()) = written
        .map_err(|e| Error::Storage(format!("unable to archive artifact to storage: {e}")))?;
    let removed = storage
        .garbage_collect(&req.key, &path, KEEP_ARTIFACTS)
        .map_err(storage_err)?;
    if !removed.is_empty() {
        tracing::debug!(?removed, "garbage-collected bucket artifacts");
    }
    Ok(Fetched::Stored {
        artifact: ferroflux_source::Artifact {
            url: storage.url_for(&path),
            path,
            revision: rev,
            digest,
            size,
            last_update_time: SystemTime::now(),
        },
        files: index.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_is_the_sha256_of_the_sorted_index() {
        let mut index = BTreeMap::new();
        index.insert("b.yaml".to_string(), "2".to_string());
        index.insert("a.yaml".to_string(), "1".to_string());
        let expected = format!(
            "sha256:{}",
            sigv4::hex(&Sha256::digest(b"a.yaml 1\nb.yaml 2\n"))
        );
        assert_eq!(revision(&index), expected);
        // The empty index: the SHA-256 of nothing.
        assert_eq!(
            revision(&BTreeMap::new()),
            format!("sha256:{}", sigv4::EMPTY_PAYLOAD_SHA256)
        );
    }

    #[test]
    fn keys_cannot_leave_the_directory() {
        let dir = Path::new("/tmp/x");
        assert_eq!(secure_join(dir, "a/b.yaml"), dir.join("a/b.yaml"));
        assert_eq!(secure_join(dir, "../../etc/passwd"), dir.join("etc/passwd"));
        assert_eq!(secure_join(dir, "/abs/./c"), dir.join("abs/c"));
        assert_eq!(secure_join(dir, "a/../../b"), dir.join("b"));
    }

    #[test]
    fn ignore_rules_filter_keys_as_flux() {
        let rules = index_rules(b"*.txt\n!keep.txt\n", Some("secret/")).unwrap();
        assert!(rules.excluded_path(Path::new("notes.txt"), false));
        assert!(!rules.excluded_path(Path::new("keep.txt"), false));
        assert!(key_excluded(&rules, "secret/a.yaml"));
        assert!(key_excluded(&rules, "apps/secret/deep/a.yaml"));
        assert!(!key_excluded(&rules, "apps/a.yaml"));
        assert!(!key_excluded(&rules, "secrets.yaml"));
        let archive = archive_rules().unwrap();
        assert!(archive.excluded_path(Path::new("logo.png"), false));
        assert!(archive.excluded_path(Path::new(".git"), true));
        assert!(!archive.excluded_path(Path::new("apps/a.yaml"), false));
    }
}
