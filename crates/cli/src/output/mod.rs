//! What the commands print: flux's progress lines on stderr ([`progress`]), tables on stdout
//! ([`table`]), the `--watch` loop shared by `get` and `events` ([`watchloop`]) and objects as
//! YAML documents ([`document`]).

pub mod document;
pub mod progress;
pub mod table;
pub mod watchloop;
