//! The exit codes of the `ferroflux` binary, flux's: what a script may test. Success is
//! `ExitCode::SUCCESS` (0).

/// The command failed (its `✗` line says why).
pub const ERROR: u8 = 1;
/// `diff` only: the diff itself failed (flux's `diff` tells "changes" (1) from "error" (2)).
pub const DIFF_ERROR: u8 = 2;
/// `diff` only: at least one object would change.
pub const DIFF_CHANGES: u8 = 1;
/// Ctrl-C stopped the command, as shells report a SIGINT death (128 + 2).
pub const INTERRUPTED: u8 = 130;
