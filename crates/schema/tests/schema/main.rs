//! The schema crate's integration tests, one test binary: the committed merge data is fresh,
//! and strategic merge patch in both flavours against the recorded cases.

mod data_fresh;
mod server_cases;
mod smp_cases;
