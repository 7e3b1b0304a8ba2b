//! YAML in and out, matching what kustomize reads and prints.

pub mod emit;
pub mod parse;
pub mod resolve;
