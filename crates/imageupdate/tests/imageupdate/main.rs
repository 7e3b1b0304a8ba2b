//! The crate's one integration-test binary: Flux's own test data and cases.

mod flux_message;
mod flux_setters;
