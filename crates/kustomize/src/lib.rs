//! The kustomize build engine of ferroflux.
//!
//! Owns: reading a kustomization tree from a filesystem root, building it with kustomize v5
//! semantics, and rendering the result as a YAML stream. It is pure: no network, no processes,
//! no Kubernetes client, no global mutable state. It must not touch Kubernetes clusters, Git or
//! anything outside the repository root it is given.
//!
//! ```no_run
//! use ferroflux_kustomize::{Build, render_yaml};
//! let objects = Build::new("/srv/repo".as_ref())?.build("apps/prod".as_ref())?;
//! print!("{}", render_yaml(&objects));
//! # Ok::<(), ferroflux_kustomize::BuildError>(())
//! ```

mod build;
mod config;
mod error;
mod fieldspec;
mod fsys;
mod kustomization;
mod origin;
mod resource;
mod smp;
mod transform;
pub mod yaml;

pub use build::{Build, BuildOutput, Reorder};
pub use error::BuildError;
pub use fsys::{Limits, LoadRestrictions};
pub use yaml::emit::render_yaml;
