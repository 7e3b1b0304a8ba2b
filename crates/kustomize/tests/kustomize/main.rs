//! The kustomize engine's integration tests, one test binary: the corpus recorded from
//! `kubectl kustomize`, and the load restrictions.

mod corpus;
mod load_restrictions;
