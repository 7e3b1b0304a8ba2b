//! The template engine's integration tests, one test binary: the recorded case table
//! (`cases`, over `tests/cases.txt`), host functions and objects (`host`), quick end-to-end
//! checks (`smoke`) and the seeded property tests (`fuzz`).

mod cases;
mod fuzz;
mod host;
mod smoke;
