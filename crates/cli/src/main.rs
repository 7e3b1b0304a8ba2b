//! The `ferroflux` binary: every user-facing command lives here and delegates to the library crates.

use clap::{Parser, Subcommand};

mod dev;
mod get;
mod kubecontext;
mod kustomize;
mod sops;
mod table;
mod tree;

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
    /// Show Flux objects and their status, as `flux get` does.
    Get(get::GetArgs),
    /// Show what a Kustomization applied, as `flux tree` does.
    Tree(tree::TreeArgs),
    /// Encrypt and decrypt sops files with age keys.
    Sops(sops::SopsArgs),
    /// Build kustomizations natively (`kustomize build DIR`).
    Kustomize(kustomize::KustomizeArgs),
    /// Local development clusters (`ferroflux dev up`).
    Dev(dev::DevArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("ferroflux {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Get(args) => get::run(args),
        Command::Sops(args) => sops::run(args),
        Command::Tree(args) => tree::run(args),
        Command::Kustomize(args) => kustomize::run(args),
        Command::Dev(args) => dev::run(args),
    }
}
