//! Progress lines in the flux CLI's style, on stderr so stdout stays for data (`--export`).

use std::io::Write;

/// Writes `► action`, `✚ generate`, `◎ waiting`, `✔ success`, `⚠️ warning`, `✗ failure` lines.
#[derive(Clone, Copy, Debug, Default)]
pub struct Logger;

impl Logger {
    fn line(&self, symbol: &str, msg: std::fmt::Arguments<'_>) {
        let mut err = std::io::stderr().lock();
        // A closed stderr must not abort the command whose result is elsewhere.
        let _ = writeln!(err, "{symbol} {msg}");
    }
    pub fn action(&self, msg: std::fmt::Arguments<'_>) {
        self.line("►", msg)
    }
    pub fn generate(&self, msg: std::fmt::Arguments<'_>) {
        self.line("✚", msg)
    }
    pub fn waiting(&self, msg: std::fmt::Arguments<'_>) {
        self.line("◎", msg)
    }
    pub fn success(&self, msg: std::fmt::Arguments<'_>) {
        self.line("✔", msg)
    }
    pub fn warning(&self, msg: std::fmt::Arguments<'_>) {
        self.line("⚠️", msg)
    }
    pub fn failure(&self, msg: std::fmt::Arguments<'_>) {
        self.line("✗", msg)
    }
}
