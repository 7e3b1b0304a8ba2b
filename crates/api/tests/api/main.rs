//! The API types' integration tests, one test binary: the generated CRDs against Flux's.

mod crd_compat;
