//! The `ferroflux` binary: every user-facing command lives in [`cmd`] and delegates to the
//! library crates.
//!
//! This file owns what every command shares and none should do on its own: the one tokio
//! runtime, the logging set-up (installed once, before any command runs) and the process's exit
//! code. Commands are `async fn run(args) -> anyhow::Result<ExitCode>`: an `Err` is printed as
//! flux prints an error (one `✗` line with its causes) and exits 1; the few commands with other
//! codes (`diff`'s 1 and 2, 130 after Ctrl-C, see [`exit`]) return them. A command line clap
//! refuses (a bad flag value, a duration that is not Go's syntax) exits the same way.

use std::process::ExitCode;

use clap::Parser;

mod cluster;
mod cmd;
mod exit;
mod flags;
mod fluxobj;
mod logging;
mod nested;
mod output;

#[derive(Parser)]
#[command(
    name = "ferroflux",
    version,
    about = "GitOps for fleets of Kubernetes clusters, compatible with Flux's APIs"
)]
pub(crate) struct Cli {
    /// Print debug logs on stderr (the Kubernetes client's retries among them); RUST_LOG, when
    /// set, chooses instead.
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: cmd::Command,
}

fn main() -> ExitCode {
    // `helm template` needs neither the runtime nor the logging (see its fast path).
    if let Some(code) = cmd::helm::fast_path() {
        return code;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if let Err(e) = logging::init(&cli.command.logging(cli.verbose)) {
        output::progress::failure(format_args!("{e:#}"));
        return ExitCode::from(exit::ERROR);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            output::progress::failure(format_args!("cannot start the async runtime: {e}"));
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(cmd::run(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            // As flux prints an error: one `✗` line with its causes, exit 1.
            output::progress::failure(format_args!("{e:#}"));
            ExitCode::from(exit::ERROR)
        }
    }
}

/// Prints clap's message for `--help`, `--version` or a bad command line. A bad command line
/// exits as any failure of the command would (flux's contract: 1, and 2 for `diff`, whose 1
/// means "changes"); help and version exit as clap says (0).
fn usage_error(e: clap::Error) -> ExitCode {
    let _ = e.print();
    if !e.use_stderr() {
        return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
    }
    // Only `--verbose` may come before the command's name.
    let command = std::env::args_os()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'));
    ExitCode::from(if command.is_some_and(|c| c == "diff") {
        exit::DIFF_ERROR
    } else {
        exit::ERROR
    })
}
