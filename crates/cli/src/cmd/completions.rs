//! `ferroflux completions bash|zsh|fish`: shell completion scripts, generated from the same
//! clap definition the binary parses with (clap_complete), so they never drift from the flags.

use clap::{Args, ValueEnum};
use clap_complete::Shell;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    shell: ShellName,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ShellName {
    Bash,
    Zsh,
    Fish,
}

/// Writes the script for `args.shell` to stdout; `command` is the binary's whole CLI.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let shell = match args.shell {
        ShellName::Bash => Shell::Bash,
        ShellName::Zsh => Shell::Zsh,
        ShellName::Fish => Shell::Fish,
    };
    let name = command.get_name().to_string();
    clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
