//! The schema crate's integration tests, one test binary: the committed merge data is fresh,
//! strategic merge patch in both flavours against the recorded cases, and its fuzz target.

mod cases;
mod data_fresh;
mod fuzz;
mod server_cases;
mod smp_cases;
