//! The devcluster's integration tests, one test binary (a module per area): the API server
//! through kube-rs, raw HTTPS and the real `kubectl` (`ferroflux_testkit::Kubectl`).

mod access;
mod api;
mod faithfulness;
mod kubectl;
mod lifecycle;
