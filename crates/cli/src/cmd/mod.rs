//! The commands, one file each: a command's flags and its orchestration (parse, call the
//! libraries, print). What several commands share lives beside `cmd` ([`crate::cluster`],
//! [`crate::output`], [`crate::bootstrap`], [`crate::nested`], [`crate::fluxobj`]).

use std::process::ExitCode;

use clap::{CommandFactory, Subcommand};

use crate::logging::Logging;

pub mod artifact;
pub mod bootstrap;
pub mod build;
pub mod check;
pub mod completions;
pub mod controller;
pub mod create;
pub mod debug;
pub mod delete;
pub mod demo;
pub mod dev;
pub mod diff;
pub mod envsubst;
pub mod events;
pub mod export;
pub mod fleet;
pub mod get;
pub mod helm;
pub mod helmrelease_local;
pub mod install;
pub mod kustomize;
pub mod logs;
pub mod reconcile;
pub mod sops;
pub mod stats;
pub mod suspend;
pub mod trace;
pub mod tree;
pub mod uninstall;
pub mod version;

// Parsed once per process: the size difference between the commands' flag sets costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Command {
    /// Print this binary's version and the versions of the controllers the cluster runs, as
    /// `flux version` does.
    Version(version::VersionArgs),
    /// Show Flux objects and their status, as `flux get` does.
    Get(get::GetArgs),
    /// Show what a Kustomization applied, as `flux tree` does.
    Tree(tree::TreeArgs),
    /// Encrypt and decrypt sops files with age keys.
    Sops(sops::SopsArgs),
    /// Build kustomizations natively (`kustomize build DIR`).
    Kustomize(kustomize::KustomizeArgs),
    /// Render Helm charts natively (`helm template [NAME] CHART [flags]`).
    Helm(helm::HelmArgs),
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
    /// Shell completion scripts (bash, zsh, fish, powershell).
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
    /// Run the GitRepository, HelmRepository, HelmChart and Kustomization controllers for one
    /// cluster.
    Controller(controller::ControllerArgs),
    /// The main job end to end: two local clusters bootstrapped from one repository, then a
    /// promotion from staging to production by commits.
    Demo(demo::DemoArgs),
    /// Create or update Flux objects, or print them (`--export`), as `flux create` does.
    Create(create::CreateArgs),
    /// Substitute `${VAR}` expansions of stdin from the environment, as `flux envsubst` does.
    Envsubst(envsubst::EnvsubstArgs),
    /// Push a directory as an OCI artifact, as `flux push artifact` does.
    Push(artifact::PushArgs),
    /// Pull an OCI artifact and extract it, as `flux pull artifact` does.
    Pull(artifact::PullArgs),
    /// Tag an OCI artifact, as `flux tag artifact` does.
    Tag(artifact::TagArgs),
    /// List the artifacts of an OCI repository, as `flux list artifacts` does.
    List(artifact::ListArgs),
    /// Print Flux objects as YAML to commit to Git, as `flux export` does.
    Export(export::ExportArgs),
    /// Delete Flux objects, after a confirmation unless `--silent`, as `flux delete` does.
    Delete(delete::DeleteArgs),
    /// Show which Flux object applied a cluster object, from which source and revision, as
    /// `flux trace` does.
    Trace(trace::TraceArgs),
    /// Show what a controller sees of an object (status, variables, history), as `flux debug`
    /// does.
    Debug(debug::DebugArgs),
    /// The controllers' logs, read from their Pods and formatted, as `flux logs` prints them.
    Logs(logs::LogsArgs),
}

impl Command {
    /// The logging this command asks for (`main` installs it before running the command).
    pub fn logging(&self, verbose: bool) -> Logging {
        match self {
            Command::Controller(args) => args.logging(),
            Command::Dev(args) => args.logging(),
            _ => Logging::quiet(verbose),
        }
    }
}

/// Runs one command on `main`'s runtime.
pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Version(args) => version::run(args).await,
        Command::Get(args) => get::run(args).await,
        Command::Sops(args) => sops::run(args),
        Command::Tree(args) => tree::run(args).await,
        Command::Kustomize(args) => kustomize::run(args),
        Command::Helm(args) => helm::run(args),
        Command::Dev(args) => dev::run(args).await,
        Command::Fleet(args) => fleet::run(args).await,
        Command::Suspend(args) => suspend::run(args, suspend::Mode::Suspend).await,
        Command::Resume(args) => suspend::run(args, suspend::Mode::Resume).await,
        Command::Reconcile(args) => reconcile::run(args).await,
        Command::Events(args) => events::run(args).await,
        Command::Stats(args) => stats::run(args).await,
        Command::Completions(args) => completions::run(args, crate::Cli::command()),
        Command::Install(args) => install::run(args).await,
        Command::Uninstall(args) => uninstall::run(args).await,
        Command::Check(args) => check::run(args).await,
        Command::Bootstrap(args) => bootstrap::run(args).await,
        Command::Build(args) => build::run(args).await,
        Command::Diff(args) => diff::run(args).await,
        Command::Controller(args) => controller::run(args).await,
        Command::Demo(args) => demo::run(args).await,
        Command::Create(args) => create::run(args).await,
        Command::Envsubst(args) => envsubst::run(args),
        Command::Push(args) => artifact::push(args).await,
        Command::Pull(args) => artifact::pull(args).await,
        Command::Tag(args) => artifact::tag(args).await,
        Command::List(args) => artifact::list(args).await,
        Command::Export(args) => export::run(args).await,
        Command::Delete(args) => delete::run(args).await,
        Command::Trace(args) => trace::run(args).await,
        Command::Debug(args) => debug::run(args).await,
        Command::Logs(args) => logs::run(args).await,
    }
}
