//! What `ferroflux bootstrap git` does to a Git repository, below the command line; `install`,
//! `check`, `uninstall` and `demo` share its manifests and its `git` driver.
//!
//! Owns: the manifests that install the engine and make a cluster follow a folder of a
//! repository, byte for byte as a second run must see them ([`manifests`]); checking a run's URL,
//! branch, path and credentials into a [`Plan`] before anything is touched ([`plan`]), and its
//! commit-signing flags into the key that signs ([`signing`]); writing the three files into a
//! clone, committing (and signing) them and pushing, fetching again when the remote moved on
//! ([`repo`]); and the `git` program that clones, commits and pushes with credentials kept off
//! command lines and out of messages ([`git`]).
//!
//! Must not touch: the Kubernetes API (the CLI applies the components, creates the Secret and
//! waits for the controllers), the terminal (what happens comes back as [`repo::Step`] values and
//! [`Plan::warnings`] for the CLI to print), and anything outside its private temporary clones.
//!
//! Why a crate of its own rather than a module of `crates/source`: source is the controller's
//! read side (gix, no child processes, never writes to a remote), while bootstrap must push over
//! file://, https:// and ssh://, which gix 0.90 cannot do, so it drives the `git` program. Both
//! the manifests and the pushes serve the CLI only, and neither belongs in the controller's
//! dependency tree.

pub mod git;
pub mod manifests;
pub mod plan;
pub mod repo;
pub mod signing;

pub use git::{Auth, Checkout, Git, GitError, Signature};
pub use manifests::{InstallOptions, ManifestError, SyncOptions};
pub use plan::{Plan, PlanError, Request};
pub use repo::{BootstrapError, CommitOptions, Pushed, Step, push_manifests};
pub use signing::{SigningError, SigningRequest};
