//! The controllers' integration tests, one test binary (a module per area): the reconcilers and
//! the controller process against devclusters and real Git repositories. `harness` runs the
//! Kustomization controller beside an artifact server; what other crates' tests share too is in
//! `ferroflux-testkit`.

mod harness;

mod artifactgenerator;
mod bucket;
mod event_revisions;
mod events;
mod gitrepository;
mod helmoci;
mod helmrelease;
mod helmrelease_sources;
mod helmsources;
mod kustomization_apply;
mod kustomization_artifacts;
mod kustomization_cel;
mod kustomization_failures;
mod kustomization_faults;
mod kustomization_ignore;
mod kustomization_lifecycle;
mod kustomization_targets;
mod manager;
mod notifications;
mod ocirepository;
