//! `ferroflux completions bash|zsh|fish|powershell`: shell completion scripts, generated from the same
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
    Powershell,
}

/// Writes the script for `args.shell` to stdout; `command` is the binary's whole CLI.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let shell = match args.shell {
        ShellName::Bash => Shell::Bash,
        ShellName::Zsh => Shell::Zsh,
        ShellName::Fish => Shell::Fish,
        ShellName::Powershell => Shell::PowerShell,
    };
    let name = command.get_name().to_string();
    clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every visible subcommand's path below the binary (`["create", "secret", "git"]`, …),
    /// aliases left out.
    fn paths(command: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            paths(sub, &path, out);
        }
    }

    fn script(shell: Shell) -> String {
        let mut command = crate::Cli::command();
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut command, "ferroflux", &mut out);
        String::from_utf8(out).unwrap()
    }

    /// Whether `script` of `shell` completes the last word of `path` where the words before
    /// it were typed, in the form each generator writes.
    fn completes(shell: Shell, script: &str, path: &[String]) -> bool {
        let (word, parents) = path.split_last().unwrap();
        match shell {
            // Each command's state: `cmd="ferroflux__subcmd__create__subcmd__secret"` (a `-`
            // in a name is written as the separator too).
            Shell::Bash => {
                let state = std::iter::once("ferroflux".to_string())
                    .chain(path.iter().map(|p| p.replace('-', "__subcmd__")))
                    .collect::<Vec<_>>()
                    .join("__subcmd__");
                script.contains(&format!("cmd=\"{state}\""))
            }
            // The parent's `_…_commands` function lists `'word:description'`.
            Shell::Zsh => {
                let function = std::iter::once("_ferroflux")
                    .chain(parents.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join("__subcmd__")
                    + "_commands() {";
                let Some(at) = script.find(&function) else {
                    return false;
                };
                let body = &script[at..];
                let body = &body[..body.find("\n}").unwrap_or(body.len())];
                body.contains(&format!("\n'{word}:"))
            }
            // A `complete` line offering `-a "word"` under the condition naming its parents.
            Shell::Fish => script.lines().any(|line| {
                line.contains(&format!("-a \"{word}\""))
                    && match parents {
                        [] => line.contains("__fish_ferroflux_needs_command"),
                        [first, rest @ ..] => {
                            line.contains(&format!("__fish_ferroflux_using_subcommand {first}"))
                                && rest.iter().all(|p| {
                                    line.contains(&format!("__fish_seen_subcommand_from {p}"))
                                })
                        }
                    }
            }),
            // The parent's case arm `'ferroflux;create'` offers `[CompletionResult]::new('word'`.
            Shell::PowerShell => {
                let arm = std::iter::once("ferroflux")
                    .chain(parents.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(";");
                let Some(at) = script.find(&format!("'{arm}' {{")) else {
                    return false;
                };
                let body = &script[at..];
                let body = &body[..body.find("\n            break").unwrap_or(body.len())];
                body.contains(&format!("[CompletionResult]::new('{word}',"))
            }
            _ => false,
        }
    }

    #[test]
    fn every_subcommand_is_in_every_completion_script() {
        let mut all = Vec::new();
        paths(&crate::Cli::command(), &[], &mut all);
        assert!(all.len() > 50, "{all:?}");
        assert!(all.contains(&vec!["version".to_string()]));
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
            let script = script(shell);
            let missing: Vec<String> = all
                .iter()
                .filter(|p| !completes(shell, &script, p))
                .map(|p| p.join(" "))
                .collect();
            assert!(missing.is_empty(), "{shell:?} misses: {missing:?}");
        }
    }
}
