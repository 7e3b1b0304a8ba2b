//! The `ferroflux` binary's integration tests, one test binary (a module per area): the binary
//! run as a user runs it, against in-process devclusters, real Git servers and the real
//! controllers. Helpers of this binary are `following`, `objects`, `repo` and `run`; what other crates'
//! tests share too is in `ferroflux-testkit`.

mod following;
mod objects;
mod repo;
mod run;

mod artifact;
mod artifact_generator;
mod bootstrap;
mod bootstrap_bad_input;
mod bootstrap_signing;
mod build_diff;
mod build_substitute;
mod controller;
mod create_hr;
mod create_image;
mod create_secret;
mod create_source_bucket;
mod create_source_chart;
mod create_source_git;
mod create_tenant;
mod day2;
mod day2_controllers;
mod debug;
mod delete;
mod demo;
mod dev_up;
mod diff_goldens;
mod envsubst;
mod export;
mod fleet_alerts;
mod fleet_diff;
mod fleet_diff_helm;
mod fleet_diff_oci;
mod fleet_promote;
mod fleet_rollup;
mod fleet_serve;
mod fleet_status;
mod get_bad_input;
mod get_goldens;
mod helmrelease;
mod helmrelease_controllers;
mod helmsources;
mod image;
mod image_automation;
mod image_reflector;
mod install;
mod kustomization_goldens;
mod kustomization_progress;
mod kustomize_bad_input;
mod logs;
mod notification;
mod notification_status;
mod oci_goldens;
mod reliability;
mod sops;
mod trace;
mod version_check;
