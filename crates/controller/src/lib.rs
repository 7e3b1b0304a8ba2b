//! The reconcilers of ferroflux and what they share.
//!
//! Owns: the reconcile loops of `GitRepository` and `Kustomization` objects, their scheduling
//! (interval, retry, `reconcile.fluxcd.io/requestedAt`, `dependsOn`), status conditions and
//! events, and the steps of a Kustomization's pipeline that are Flux's own rather than
//! kustomize's or the API server's: fetching and unpacking artifacts, generating a
//! `kustomization.yaml` where a path has none, the spec-level overrides and post-build
//! substitution; and the process around them (`manager`): the artifact server, metrics, probes
//! and leader election. Building, applying and fetching Git are delegated to the crates that own
//! them.

pub mod artifact;
pub mod events;
pub mod gitrepository;
pub mod kustomization;
pub mod leader;
pub mod manager;
pub mod metrics;
