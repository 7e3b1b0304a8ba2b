//! The `ferroflux` binary: every user-facing command lives here and delegates to the library crates.

use clap::{CommandFactory, Parser, Subcommand};

mod bootstrap;
mod build;
mod check;
mod completions;
mod controller;
mod demo;
mod dev;
mod diff;
mod events;
mod fleet;
mod fluxobj;
mod get;
mod gitrepo;
mod install;
mod kubecontext;
mod kustomize;
mod manifests;
mod nested;
mod progress;
mod reconcile;
mod sops;
mod stats;
mod suspend;
mod table;
mod tree;
mod uninstall;
mod watchloop;

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
    /// Every cluster of the kubeconfig side by side (beyond flux).
    Fleet(fleet::FleetArgs),
    /// Suspend the reconciliation of Flux objects, as `flux suspend` does.
    Suspend(suspend::SuspendArgs),
    /// Resume suspended Flux objects and wait for them, as `flux resume` does.
    Resume(suspend::SuspendArgs),
    /// Reconcile a Flux object now and wait for it, as `flux reconcile` does.
    Reconcile(reconcile::ReconcileArgs),
    /// Kubernetes events of Flux objects, as `flux events` shows them.
    Events(events::EventsArgs),
    /// Counts of Flux objects per kind, as `flux stats` prints them.
    Stats(stats::StatsArgs),
    /// Shell completion scripts (bash, zsh, fish).
    #[command(alias = "completion")]
    Completions(completions::CompletionsArgs),
    /// Install the engine on a cluster, or print its manifests (`--export`).
    Install(install::InstallArgs),
    /// Remove the engine and its CRDs, keeping what it applied.
    Uninstall(uninstall::UninstallArgs),
    /// Check the prerequisites and the installation.
    Check(check::CheckArgs),
    /// Deploy the engine on a cluster connected to a Git repository.
    Bootstrap(bootstrap::BootstrapArgs),
    /// Build a Kustomization from a local directory, as `flux build` does.
    Build(build::BuildArgs),
    /// Show what a local directory would change in the cluster, as `flux diff` does.
    Diff(diff::DiffArgs),
    /// Run the GitRepository and Kustomization controllers for one cluster.
    Controller(controller::ControllerArgs),
    /// The main job end to end: two local clusters bootstrapped from one repository, then a
    /// promotion from staging to production by commits.
    Demo(demo::DemoArgs),
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli.command) {
        // As flux prints an error: one `✗` line with its causes, exit 1.
        progress::failure(format_args!("{e:#}"));
        std::process::exit(1);
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Version => {
            println!("ferroflux {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Get(args) => get::run(args),
        Command::Sops(args) => sops::run(args),
        Command::Tree(args) => tree::run(args),
        Command::Kustomize(args) => kustomize::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Fleet(args) => fleet::run(args),
        Command::Suspend(args) => suspend::run_suspend(args),
        Command::Resume(args) => suspend::run_resume(args),
        Command::Reconcile(args) => reconcile::run(args),
        Command::Events(args) => events::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Completions(args) => completions::run(args, Cli::command()),
        Command::Install(args) => install::run(args),
        Command::Uninstall(args) => uninstall::run(args),
        Command::Check(args) => check::run(args),
        Command::Bootstrap(args) => bootstrap::run(args),
        Command::Build(args) => build::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Controller(args) => controller::run(args),
        Command::Demo(args) => demo::run(args),
    }
}
