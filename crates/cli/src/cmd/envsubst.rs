//! `ferroflux envsubst [--strict]`: stdin to stdout with `${VAR}` expansions substituted from the
//! process environment, as `flux envsubst` does. Like flux it works line by line (an expansion
//! never spans lines) and ends every line it prints with `\n`; the expansion rules are
//! `ferroflux-envsubst`'s, the same the controller applies to `postBuild.substitute`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub struct EnvsubstArgs {
    /// Fail if a variable without a default value is declared in the input but is missing from
    /// the environment.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: EnvsubstArgs) -> anyhow::Result<ExitCode> {
    // Variables whose name or value is not UTF-8 cannot appear in a UTF-8 text's expansions in
    // a way envsubst could match, so they are left out rather than refused.
    let vars: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for (n, line) in stdin.lines().enumerate() {
        let line = line.with_context(|| format!("reading stdin, line {}", n + 1))?;
        // flux's line scanner drops a line's `\r` with its `\n`.
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let out = ferroflux_envsubst::substitute(line, &vars, args.strict)?;
        // Each line is written as soon as it is substituted (flux flushes per line): what was
        // printed before an error stays printed, as with flux.
        writeln!(stdout, "{out}")?;
        stdout.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
