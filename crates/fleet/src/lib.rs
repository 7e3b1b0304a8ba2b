//! The fleet as one thing (issue 18): what `ferroflux fleet` computes over many clusters.
//!
//! Owns: a cluster's report built from its Flux objects ([`report`]), the fleet's rollup —
//! cohorts of clusters per followed source, how many are at each revision and since when, the
//! laggards and why ([`rollup`]) — the fleet kept current by watches ([`live`]), reading a
//! fleet repository's `clusters/<name>/` tree and building what each cluster would apply
//! ([`repo`]) with its HelmReleases rendered ([`helm`]), comparing that against another revision or the live cluster ([`diff`]), the
//! promotion plan ([`plan`]), promoting a commit through its waves ([`promote`]) and the
//! fleet's web page with its live updates ([`web`]).
//!
//! Must not: parse command lines, print, or read kubeconfig files (the CLI does, and hands over
//! connected clients); write to a cluster beyond the reconcile request `promote` makes (the
//! live diff only dry-runs).

pub mod diff;
pub mod helm;
pub mod live;
pub mod plan;
pub mod promote;
pub mod repo;
pub mod report;
pub mod rollup;
pub mod web;

pub use live::{Live, Target};
pub use report::{ClusterReport, HelmReleaseReport, KustomizationReport, Objects, SourceReport};
pub use rollup::{Laggard, Rollup, rollup};
