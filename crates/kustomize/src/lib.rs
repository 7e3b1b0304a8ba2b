//! The kustomize build engine of ferroflux.
//!
//! Owns: reading a kustomization tree from a filesystem root, building it with kustomize v5
//! semantics, and rendering the result as a YAML stream. It is pure: no network, no processes,
//! no Kubernetes client, no global mutable state.

pub mod yaml;

pub use yaml::emit::render_yaml;
