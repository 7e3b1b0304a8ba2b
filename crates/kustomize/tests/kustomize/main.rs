//! The kustomize engine's integration tests, one test binary: the corpus recorded from
//! `kubectl kustomize`, the load restrictions, and the fuzz targets of the YAML reader/writer and
//! of the build.

mod corpus;
mod fuzz;
mod load_restrictions;
