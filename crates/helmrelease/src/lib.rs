//! Helm's release actions against a Kubernetes cluster, with Helm's own release storage, so
//! that Helm and ferroflux see and manage the same releases.
//!
//! Owns: the release record as Helm stores it ([`Release`], [`chart_record`]), Helm's Secret
//! storage driver ([`Storage`]: `sh.helm.release.v1.<name>.v<N>` Secrets, history, pruning to
//! `maxHistory`, unlocking a release stuck in `pending-*`), and the actions ([`Actions`]):
//! install (CRDs first by policy, `createNamespace`), upgrade (three-way: objects the previous
//! release had and the new one drops are deleted), rollback, uninstall (`keepHistory`) and
//! test, each with Helm's hooks (weights, delete policies), Helm's ownership metadata and
//! checks, failure statuses and descriptions, and waiting with kstatus rules. Rendering uses
//! crates/helm with Capabilities from the cluster's discovery and `lookup` answered from the
//! cluster.
//!
//! Must not touch: HelmRelease objects, their status or conditions, remediation policy,
//! sources or artifacts (the HelmRelease controller decides which action to run and reports
//! it); chart loading and rendering rules (crates/helm); server-side apply and health rules
//! (crates/apply).
//!
//! ```no_run
//! # async fn demo(client: kube::Client, chart: std::sync::Arc<ferroflux_helm::Chart>) -> Result<(), ferroflux_helmrelease::Error> {
//! use ferroflux_helmrelease::{Actions, InstallOptions, ReleaseRef};
//! let actions = Actions::new(client, "helm-controller");
//! let target = ReleaseRef::new("podinfo", "apps", "apps");
//! let rel = actions.install(&target, chart, serde_json::Map::new(), &InstallOptions::default()).await?;
//! println!("{} v{} {}", rel.name, rel.version, rel.info.status);
//! # Ok(()) }
//! ```

mod actions;
mod cluster;
mod error;
mod hooks;
mod manifest;
mod postrender;
mod release;
mod storage;

pub use actions::{
    Actions, CrdPolicy, InstallOptions, ReleaseRef, RollbackOptions, TestOptions, UninstallOptions,
    UpgradeOptions, WaitOptions,
};
pub use error::Error;
pub use manifest::{object_key, objects_of_manifest, release_manifest};
pub use postrender::{PostRender, PostRenderStrategy, PostRenderer};
pub use release::{Hook, HookExecution, Info, Release, Status, chart_record, now};
pub use storage::{
    MAX_RECORD_SIZE, SECRET_TYPE, SYSTEM_LABELS, Storage, StorageError, decode_release,
    encode_release, secret_name,
};
