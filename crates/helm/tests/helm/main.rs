//! The Helm engine's integration tests, one test binary: the conformance corpus recorded from
//! Helm 4.2.3 (`corpus`), the bad inputs issue 14 names with the message a user sees
//! (`bad_input`), `--name-template` (`name_template`) and `--set-file` of bytes that are not
//! UTF-8 (`set_file`).

mod bad_input;
mod corpus;
mod name_template;
mod set_file;
