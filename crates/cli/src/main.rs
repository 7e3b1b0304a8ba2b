//! The `ferroflux` binary: every user-facing command lives here and delegates to the library crates.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ferroflux",
    version,
    about = "GitOps for fleets of Kubernetes clusters, compatible with Flux's APIs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version of this binary.
    Version,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("ferroflux {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
