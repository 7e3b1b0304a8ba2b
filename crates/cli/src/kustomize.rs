//! `ferroflux kustomize build DIR`: the native kustomize build, printed like `kubectl kustomize`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct KustomizeArgs {
    #[command(subcommand)]
    command: KustomizeCommand,
}

#[derive(Subcommand)]
enum KustomizeCommand {
    /// Build a kustomization directory and print the YAML stream (same objects, order and
    /// formatting as `kubectl kustomize DIR`).
    Build {
        /// Directory holding kustomization.yaml.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Repository root: nothing outside it is read (default: the current directory if it
        /// contains DIR, else DIR itself).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

pub fn run(args: KustomizeArgs) -> anyhow::Result<()> {
    let result = match args.command {
        KustomizeCommand::Build { dir, root } => build(&dir, root.as_deref()),
    };
    if let Err(e) = result {
        // The message names the file and the cause; a backtrace would only bury it.
        eprintln!("Error: {e:#}");
        std::process::exit(1);
    }
    Ok(())
}

fn build(dir: &Path, root: Option<&Path>) -> anyhow::Result<()> {
    let dir_abs = dir
        .canonicalize()
        .with_context(|| format!("{}: cannot open directory", dir.display()))?;
    let root = match root {
        Some(r) => r
            .canonicalize()
            .with_context(|| format!("{}: cannot open repository root", r.display()))?,
        None => {
            let cwd = std::env::current_dir()?.canonicalize()?;
            if dir_abs.starts_with(&cwd) {
                cwd
            } else {
                dir_abs.clone()
            }
        }
    };
    let build = ferroflux_kustomize::Build::new(&root)?;
    let out = build.build_with_warnings(&dir_abs)?;
    for w in &out.warnings {
        eprintln!("{w}");
    }
    let text = ferroflux_kustomize::render_yaml(&out.objects);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
