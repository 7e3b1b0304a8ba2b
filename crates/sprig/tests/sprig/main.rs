//! Sprig's integration tests, one test binary: the function tables recorded from Helm's engine
//! (`cases`, over `tests/*.txt`; see `tests/README.md`).

mod cases;
