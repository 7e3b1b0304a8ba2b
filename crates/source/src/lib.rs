//! The Git source of ferroflux: what a `GitRepository` reconciler needs below the Kubernetes
//! API.
//!
//! Owns: validating a repository URL and `spec.ref`; resolving the ref against the remote
//! (ls-refs only, so an unchanged ref costs one round trip and no download); fetching the one
//! commit with gix (https with basic auth, bearer token or a private CA; ssh through the `ssh`
//! program with host keys always verified; `file://` only when allowed); packing its tree into a
//! reproducible tar.gz with Flux's exclusions; storing artifacts atomically under
//! `gitrepository/<ns>/<name>/<commit>.tar.gz`, garbage-collecting them, and serving them over
//! HTTP. Errors carry Flux's condition reasons and never a credential.
//!
//! Must not touch: Kubernetes (no client, no CRD types, no status writing — the reconciler in
//! `crates/controller` maps [`Outcome`] and [`Error`] onto conditions and events), and nothing
//! outside the storage root and its own temporary directories. The one write to a remote is
//! image automation's: a commit on top of a fetched one, pushed back ([`Fetched::commit_files`],
//! [`GitSource::push`]). The fetched commit and tag objects are handed out raw
//! ([`Fetched::commit_object`], [`Fetched::referencing_tag`]) for `spec.verify`, which
//! [`reconcile_checked`] runs before anything is stored.

mod artifact;
mod credentials;
mod error;
mod fetch;
mod http;
mod push;
/// Masterminds semver, now shared from its own crate.
pub use ferroflux_semver as semver;
mod server;
pub mod sourceignore;
mod ssh;
mod storage;
mod url;

pub use artifact::{
    DEFAULT_MAX_ARTIFACT_SIZE, DEFAULT_MAX_FILE_SIZE, Include, PackOptions, PackStats, pack_tree,
};
pub use credentials::{Credentials, Proxy};
pub use error::{Error, Result, reason};
pub use fetch::{DEFAULT_BRANCH, FetchOptions, Fetched, GitRef, GitSource, RemoteRef, Resolved};
pub use push::{CommitSigner, NewCommit, RefUpdate, Signature};
pub use server::{router, serve};
pub use sourceignore::{DEFAULT_EXCLUDES, IGNORE_FILE, VCS_EXCLUDES};
pub use storage::{Artifact, KEEP_ARTIFACTS, ObjectKey, Storage};
pub use url::{RepoUrl, Scheme};

use std::time::SystemTime;

/// What the last successful reconcile stored (from `status.artifact` and
/// `status.observedIgnore`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    /// `status.artifact`.
    pub artifact: Artifact,
    /// `status.observedIgnore`: the `spec.ignore` the artifact was packed with.
    pub observed_ignore: Option<String>,
    /// `status.observedSparseCheckout`: the directories the artifact was packed with.
    pub observed_sparse: Vec<String>,
    /// What the artifact's includes were ([`include_fingerprint`] of `status.observedInclude`
    /// and `status.includedArtifacts`).
    pub observed_includes: Vec<String>,
}

/// What makes two includes the same for repacking: the paths, the included repository and its
/// artifact's digest.
pub fn include_fingerprint(name: &str, from_path: &str, to_path: &str, digest: &str) -> String {
    format!("{name}\0{from_path}\0{to_path}\0{digest}")
}

/// The result of [`reconcile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The ref still designates the stored commit and the ignore rules did not change:
    /// nothing was downloaded and nothing written.
    Unchanged {
        /// The stored artifact, still current.
        artifact: Artifact,
    },
    /// A new artifact was stored; `removed` lists the artifacts garbage-collected.
    Stored {
        /// The new artifact.
        artifact: Artifact,
        /// What the packing counted.
        stats: PackStats,
        /// Paths of the older artifacts deleted (relative to the storage root).
        removed: Vec<String>,
    },
}

impl Outcome {
    /// The artifact the object now has, stored or kept.
    pub fn artifact(&self) -> &Artifact {
        match self {
            Outcome::Unchanged { artifact } | Outcome::Stored { artifact, .. } => artifact,
        }
    }
}

/// The commit in a revision string (`main@sha1:<hex>` or `sha1:<hex>`).
pub fn revision_commit(revision: &str) -> Option<&str> {
    let hex = revision.rsplit_once("sha1:").map(|(_, h)| h)?;
    (hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// One reconcile of a GitRepository's source: resolve, and when the commit or the ignore
/// rules changed, fetch, pack, store and garbage-collect. Blocking; run it on a blocking
/// thread. On error nothing in storage changed, so the previous artifact is still served.
pub fn reconcile(
    source: &GitSource,
    storage: &Storage,
    key: &ObjectKey,
    pack: &PackOptions,
    previous: Option<&Previous>,
) -> Result<Outcome> {
    reconcile_checked(source, storage, key, pack, previous, |_| Ok(()))
}

/// [`reconcile`], with `check` run on the fetched commit before anything is stored (the
/// signature verification of `spec.verify`): its error is the pass's, and storage is left as
/// it was.
pub fn reconcile_checked(
    source: &GitSource,
    storage: &Storage,
    key: &ObjectKey,
    pack: &PackOptions,
    previous: Option<&Previous>,
    check: impl FnOnce(&Fetched) -> Result<()>,
) -> Result<Outcome> {
    let resolved = source.resolve()?;
    if let Some(prev) = previous
        && revision_commit(&prev.artifact.revision) == Some(resolved.commit.as_str())
        && prev.artifact.revision == resolved.revision
        && prev.observed_ignore == pack.ignore
        && prev.observed_sparse == pack.sparse
        && prev.observed_includes
            == pack
                .includes
                .iter()
                .map(|i| include_fingerprint(&i.name, &i.from_path, &i.to_path, &i.digest))
                .collect::<Vec<_>>()
        && storage.exists(&prev.artifact.path)
    {
        let mut artifact = prev.artifact.clone();
        // Same file, but the server may listen elsewhere than when it was stored.
        artifact.url = storage.url_for(&artifact.path);
        return Ok(Outcome::Unchanged { artifact });
    }
    let fetched = source.fetch(&resolved)?;
    check(&fetched)?;
    store(&fetched, storage, key, pack)
}

/// Packs a fetched commit into storage and garbage-collects older artifacts.
pub fn store(
    fetched: &Fetched,
    storage: &Storage,
    key: &ObjectKey,
    pack: &PackOptions,
) -> Result<Outcome> {
    let file_name = format!("{}.tar.gz", fetched.resolved.commit);
    let (path, digest, size, stats) = storage.write_atomic(key, &file_name, |w| {
        pack_tree(&fetched.repo, fetched.tree, pack, w)
    })?;
    let removed = storage.garbage_collect(key, &path, KEEP_ARTIFACTS)?;
    Ok(Outcome::Stored {
        artifact: Artifact {
            url: storage.url_for(&path),
            path,
            revision: fetched.resolved.revision.clone(),
            digest,
            size,
            last_update_time: SystemTime::now(),
        },
        stats,
        removed,
    })
}

/// Splits `dir` into its components, `.` and empty ones dropped and `..` never above the root
/// (as Flux joins a path of a checkout securely: `spec.update.path`, `sparseCheckout`, an
/// include's paths).
pub fn clean_path(dir: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for comp in dir.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c.to_string()),
        }
    }
    parts
}
