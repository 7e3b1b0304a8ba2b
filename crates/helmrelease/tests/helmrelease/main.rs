//! Integration tests of crates/helmrelease against devclusters (real HTTPS API servers), with
//! charts of crates/helm's corpus and this crate's fixtures, and Helm itself (Helm 4's Go SDK
//! from PyPI `helm-python-sdk`) as the other client of the same release storage.

mod actions;
mod bad_input;
mod helm_interop;
mod realcharts;
mod storage;
mod support;
