//! Helm sources against a real chart repository: testkit's static file server (plain, basic
//! auth, TLS with a test CA) holding an index.yaml and charts packaged from crates/helm's test
//! corpus; every chart produced is loaded back with crates/helm.

mod oci;
mod repository;
