//! Value parsers shared by the commands' flags, so a bad value is refused by clap, naming the
//! flag, before any work starts.

use std::net::SocketAddr;
use std::time::Duration;

/// A Go duration (`30s`, `1m30s`, `5m`, `1.5h`), as flux's duration flags take them.
pub fn duration(s: &str) -> Result<Duration, String> {
    ferroflux_api::duration::parse_duration(s).map_err(|e| e.to_string())
}

/// A listen address in Go's `:port` form as well as `host:port`.
pub fn addr(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("{s:?} is not an address (expected host:port or :port)"))
}
