//! `ferroflux helm template [NAME] CHART [flags]`: Helm v4's `helm template`, rendered natively
//! by crates/helm. The arguments after `template` are parsed with Helm's own flag rules (pflag's
//! `--flag=value`, `-nNS`, comma lists for `-f` and `-a`), so they go to the library untouched.
//! A failure is printed as Helm prints it (`Error: MESSAGE` on stderr), not as a `✗` line,
//! because scripts written for `helm template` read that text; the exit status is 1 either way.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct HelmArgs {
    #[command(subcommand)]
    command: HelmCommand,
}

#[derive(Subcommand)]
enum HelmCommand {
    /// Render chart templates locally and print them, as `helm template` of Helm v4 does
    /// (flags: -n, -f, --set, --set-string, --set-json, --set-file, --set-literal,
    /// --kube-version, -a/--api-versions, --include-crds, --skip-tests, --is-upgrade,
    /// --no-hooks, -s/--show-only, --output-dir, --release-name, --generate-name,
    /// --name-template, --skip-schema-validation).
    Template {
        /// `[NAME] CHART [flags]`, exactly as `helm template` takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

pub fn run(args: HelmArgs) -> anyhow::Result<ExitCode> {
    let HelmCommand::Template { args } = args.command;
    template(&args)
}

/// `ferroflux helm template ARGS…` straight from the process's arguments, before `main` starts
/// the async runtime and the logging, and without clap's parse of every command: scripts run
/// one process per chart, so start-up is most of its cost (issue 14's benchmark). `None` when
/// the command line is not one this path takes (another command, `-h`/`--help`, a non-UTF-8
/// argument); clap then parses it as usual.
pub fn fast_path() -> Option<ExitCode> {
    let mut argv = std::env::args_os().skip(1);
    if argv.next()? != "helm" || argv.next()? != "template" {
        return None;
    }
    let args: Vec<String> = argv.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return None;
    }
    Some(template(&args).unwrap_or_else(|e| {
        eprintln!("Error: {e:#}");
        ExitCode::from(crate::exit::ERROR)
    }))
}

fn template(args: &[String]) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    match ferroflux_helm::run_template(args, &cwd) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&ferroflux_helm::output_bytes(&out))?;
            stdout.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let message = format!("Error: {}\n", ferroflux_helm::error_message(&e));
            std::io::stderr().write_all(&ferroflux_helm::output_bytes(&message))?;
            Ok(ExitCode::from(crate::exit::ERROR))
        }
    }
}
