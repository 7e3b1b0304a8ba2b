//! The reconcilers of ferroflux and what they share.
//!
//! Owns: the reconcile loops of `GitRepository`, `HelmRepository`, `HelmChart`, `OCIRepository`,
//! `Bucket`, `ArtifactGenerator` (writing `ExternalArtifact`s), `ImageRepository` and `ImagePolicy`
//! (the image reflector's tag scans and tag selection) and `Kustomization` objects, their scheduling
//! (interval, retry, `reconcile.fluxcd.io/requestedAt`, `dependsOn`), status conditions and
//! events, and the steps of a Kustomization's pipeline that are Flux's own rather than
//! kustomize's or the API server's: fetching and unpacking artifacts, generating a
//! `kustomization.yaml` where a path has none, the spec-level overrides and post-build
//! substitution; and the process around them (`manager`): the artifact server, metrics, probes
//! and leader election; and notifications (`notification`): the dispatcher that sends every
//! controller's events to the Alerts' Providers, the `--events-addr` endpoint and the Receivers'
//! webhook server. Building, applying and fetching Git are delegated to the crates that own
//! them.
//!
//! Every reconciler is written as Flux's named steps over what `step` provides (a typed result or
//! a `Failure`, `.or_fail(reason, retry)`, one log line per outcome, blocking work off the
//! executor), sets conditions through `ferroflux_api::conditions::Conditions`, adds and removes
//! its finalizer through `finalizer`, and reaches remote clusters through `target`.
//!
//! Must not touch: kustomize's build rules (`ferroflux-kustomize`), how objects are applied,
//! pruned and assessed (`ferroflux-apply`), Git and artifact storage (`ferroflux-source`), or
//! how Kubernetes clients are built and retried (`ferroflux-kubeclient`).

pub mod artifact;
pub mod artifactgenerator;
pub mod bucket;
pub mod dependencies;
pub mod events;
pub mod finalizer;
pub mod gitrepository;
pub mod gitverify;
pub mod helmchart;
pub mod helmrelease;
pub mod helmrepository;
pub mod imagepolicy;
pub mod imagerepository;
pub mod imageupdateautomation;
pub mod kustomization;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod notification;
pub mod ocirepository;
mod sourcefetch;
mod sourceloop;
pub mod step;
pub mod target;

pub use gitrepository::Options as GitRepositoryOptions;
pub use kustomization::build::{BuildError, Cluster, Strictness, build, build_with};
pub use kustomization::reconciler::Options as KustomizationOptions;
pub use leader::LeaderElection;
pub use manager::{Manager, ManagerConfig, ManagerError, install_crds};
pub use metrics::Metrics;
