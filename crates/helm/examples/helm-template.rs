//! `helm template` from the library alone, for side-by-side runs without building the whole
//! `ferroflux` binary: `cargo run -p ferroflux-helm --example helm-template -- [helm template]
//! [NAME] CHART [flags]` (a leading `helm template` is skipped, so it can stand in for
//! `ferroflux` in tests/oracle/compare.sh).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("helm") {
        args.remove(0);
    }
    if args.first().map(String::as_str) == Some("template") {
        args.remove(0);
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match ferroflux_helm::run_template(&args, &cwd) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(&ferroflux_helm::output_bytes(&out))
                .and_then(|_| stdout.flush())
                .is_err()
            {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let message = format!("Error: {}\n", ferroflux_helm::error_message(&e));
            let _ = std::io::stderr().write_all(&ferroflux_helm::output_bytes(&message));
            ExitCode::FAILURE
        }
    }
}
