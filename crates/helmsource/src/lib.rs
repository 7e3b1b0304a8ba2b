//! The Helm sources of ferroflux: what the `HelmRepository` and `HelmChart` reconcilers need
//! below the Kubernetes API, as Flux's source-controller does it.
//!
//! Owns: fetching a repository's `index.yaml` over HTTP(S) (basic auth only to the repository's
//! host unless `passCredentials`, a CA and client certificate from `certSecretRef`, a timeout, a
//! size limit), parsing it with Helm's rules, choosing a chart version from a semver range,
//! downloading charts (relative and absolute URLs of the index), packaging a chart from a
//! directory or archive of a source artifact (its `.helmignore` honoured, missing dependencies
//! added from `file://` paths inside the artifact or from chart repositories), merging
//! `valuesFiles` into the packaged `values.yaml`, the version's build metadata
//! (`reconcileStrategy: Revision`, values files), and storing the artifacts
//! (`helmrepository/<ns>/<name>/index-<hex>.yaml`, `helmchart/<ns>/<name>/<chart>-<version>.tgz`);
//! charts of OCI registries (`type: oci`: tags as versions, Helm's media types) through
//! `ferroflux-oci`, and pushing a packaged chart as `helm push` does.
//!
//! A crate of its own rather than a module of crates/source: crates/source is the Git source
//! (gix and its transports), this one needs the chart loader of crates/helm; neither should
//! make the other's users build what they do not use. It shares crates/source's `Storage` (one
//! root, one artifact server) and its HTTP client library (ureq on rustls + ring).
//!
//! Must not touch: Kubernetes (no client, no status writing — crates/controller reads the
//! objects and secrets and maps [`Error`] onto conditions), the OCI protocol itself
//! (crates/oci's), or anything outside the storage root and the directories it is given.

mod build;
mod error;
mod http;
pub mod index;
pub mod oci;
pub mod store;

pub use build::{
    AnonymousRepositories, Build, BuildOptions, DependencyRepositories, MAX_CHART_SIZE,
    MAX_INDEX_SIZE, Repository, build_from_repository, build_from_source, package,
};
pub use error::{Error, Result, reason};
pub use http::{
    Client, DEFAULT_TIMEOUT, RepositoryAccess, normalize_url, redact, resolve_reference,
};
pub use index::{ChartVersion, IndexFile};
pub use store::{Stored, sha256_digest};

use ferroflux_source::Storage;

/// A fetched index: its bytes, its revision (`sha256:<hex>` of the bytes, as Flux's
/// `ChartRepository.Digest`) and the repository to pull charts from.
pub struct FetchedIndex {
    /// The index as served.
    pub data: Vec<u8>,
    /// `sha256:<hex>`.
    pub revision: String,
    /// The repository, with its parsed index.
    pub repository: Repository,
}

/// Downloads and validates `<url>/index.yaml`. Blocking.
pub fn fetch_index(access: RepositoryAccess, max_size: u64) -> Result<FetchedIndex> {
    let (repository, data) = Repository::fetch(access, max_size)?;
    Ok(FetchedIndex {
        revision: sha256_digest(&data),
        data,
        repository,
    })
}

/// Stores an index as the HelmRepository's artifact `index-<hex>.yaml` (link `index.yaml`).
pub fn store_index(
    storage: &Storage,
    namespace: &str,
    name: &str,
    index: &FetchedIndex,
) -> Result<Stored> {
    let dir = store::object_dir("HelmRepository", namespace, name)?;
    let hex = index.revision.trim_start_matches("sha256:");
    store::store(
        storage,
        &dir,
        &format!("index-{hex}.yaml"),
        "index.yaml",
        &index.data,
    )
}

/// Stores a built chart as the HelmChart's artifact `<chart>-<version>.tgz` (link
/// `latest.tar.gz`). A build that kept the cached chart has nothing to store: `None`.
pub fn store_chart(
    storage: &Storage,
    namespace: &str,
    name: &str,
    build: &Build,
) -> Result<Option<Stored>> {
    let Some(data) = &build.archive else {
        return Ok(None);
    };
    let dir = store::object_dir("HelmChart", namespace, name)?;
    store::store(storage, &dir, &build.file_name(), "latest.tar.gz", data).map(Some)
}

/// Removes every artifact of a HelmRepository or HelmChart (`kind`), when it is deleted.
pub fn remove_artifacts(storage: &Storage, kind: &str, namespace: &str, name: &str) -> Result<()> {
    store::remove_all(storage, &store::object_dir(kind, namespace, name)?)
}
