//! What the commands print: flux's progress lines on stderr ([`progress`]), tables on stdout
//! ([`table`]) and the `--watch` loop shared by `get` and `events` ([`watchloop`]).

pub mod progress;
pub mod table;
pub mod watchloop;
