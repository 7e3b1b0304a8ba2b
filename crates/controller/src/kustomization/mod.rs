//! The steps of a Kustomization's reconcile that are Flux's own.

pub mod build;
pub mod decrypt;
pub mod generate;
pub mod postbuild;
pub mod reconciler;
