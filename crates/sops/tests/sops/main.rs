//! The SOPS crate's integration tests, one test binary (a module per area): sops's own test
//! vectors, generated files, interop with the real sops and sops-age, and bad input. `files`
//! reads the fixtures.

mod files;

mod bad_input;
mod fixtures;
mod fuzz;
mod generated;
mod interop;
