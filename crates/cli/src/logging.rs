//! The process's logging, installed once by `main` before any command runs: `tracing` events
//! (the controllers', the Kubernetes client's retries, …) go to stderr, coloured only when
//! stderr is a terminal (text only, and not when `NO_COLOR` is set).
//!
//! `controller` and `dev up` log what their `--log-level` and `--log-format` say. Every other
//! command is silent unless asked: `--verbose` shows ferroflux's debug events (warnings of the
//! libraries below too), and `RUST_LOG`, when set, chooses instead. So a command's stderr reads
//! like flux's unless a user wants more.

use std::io::IsTerminal;

use anyhow::anyhow;
use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Which events are logged, and how.
pub struct Logging {
    filter: Filter,
    format: LogFormat,
}

enum Filter {
    /// A `--log-level` value: a level or any `tracing` filter directive.
    Level(String),
    /// A command without logging flags.
    Quiet { verbose: bool },
}

impl Logging {
    /// For `controller` and `dev up`: their `--log-level` and `--log-format`.
    pub fn flags(level: &str, format: LogFormat) -> Logging {
        Logging {
            filter: Filter::Level(level.to_string()),
            format,
        }
    }

    /// For every other command: nothing unless `--verbose` or `RUST_LOG`.
    pub fn quiet(verbose: bool) -> Logging {
        Logging {
            filter: Filter::Quiet { verbose },
            format: LogFormat::Text,
        }
    }

    fn env_filter(&self) -> anyhow::Result<EnvFilter> {
        match &self.filter {
            Filter::Level(level) => {
                EnvFilter::try_new(level).map_err(|e| anyhow!("--log-level {level:?}: {e}"))
            }
            Filter::Quiet { .. } if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() => {
                EnvFilter::try_from_default_env()
                    .map_err(|e| anyhow!("{}: {e}", EnvFilter::DEFAULT_ENV))
            }
            // A directive's target matches by prefix: `ferroflux` is every crate of ours.
            Filter::Quiet { verbose: true } => Ok(EnvFilter::new("warn,ferroflux=debug")),
            Filter::Quiet { verbose: false } => Ok(EnvFilter::new("off")),
        }
    }
}

/// Installs the subscriber for the whole process.
pub fn init(logging: &Logging) -> anyhow::Result<()> {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(logging.env_filter()?)
        .with_ansi(use_colour(
            logging.format,
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_writer(std::io::stderr);
    let result = match logging.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(|e| anyhow!("cannot set up logging: {e}"))
}

/// Whether log lines carry ANSI colours: text logs on a terminal, unless `NO_COLOR` is set to
/// something (no-color.org). JSON never does: a colour code inside a string field is noise to
/// every log collector.
fn use_colour(format: LogFormat, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    matches!(format, LogFormat::Text) && terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod colour_tests {
    use super::*;

    #[test]
    fn colours_only_text_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_colour(LogFormat::Text, true, None));
        assert!(use_colour(LogFormat::Text, true, Some(OsStr::new(""))));
        assert!(!use_colour(LogFormat::Text, false, None));
        assert!(!use_colour(LogFormat::Text, true, Some(OsStr::new("1"))));
        assert!(!use_colour(LogFormat::Json, true, None));
        assert!(!use_colour(LogFormat::Json, false, None));
    }
}
