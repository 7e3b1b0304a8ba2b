//! The Git half of a bootstrap run: clone the branch, write `<path>/<namespace>/`'s three files,
//! commit what changed and push it (fetching again and redoing the commit when the remote moved
//! on, at most three attempts), then build the folder to the objects the cluster must get.
//!
//! The three files go in one commit (Flux makes two, so an interruption between them left a
//! folder without its sync manifests). `kustomization.yaml` is written only when the folder has
//! none, so users' patches survive, and lists what the folder holds as Flux's generator does. A
//! run that changes nothing commits nothing.

use std::path::Path;

use serde_json::Value;

use crate::git::{Checkout, GitError, Signature};
use crate::manifests::{
    self, COMPONENTS_FILE, InstallOptions, KUSTOMIZATION_FILE, ManifestError, SYNC_FILE,
    SyncOptions,
};
use crate::plan::Plan;

/// How many times a push rejected because the remote moved on is redone.
const PUSH_ATTEMPTS: u32 = 3;

/// The names a folder's kustomization file may have, as kustomize looks for them.
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// What [`push_manifests`] is doing, for the caller to report as it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// About to clone `branch` of `url`.
    Cloning {
        /// The branch cloned.
        branch: &'a str,
        /// The URL as the user gave it.
        url: &'a str,
    },
    /// The clone is there.
    Cloned,
    /// About to render `gotk-components.yaml`.
    GeneratingComponents,
    /// `gotk-components.yaml` is rendered.
    GeneratedComponents,
    /// About to render `gotk-sync.yaml`.
    GeneratingSync,
    /// `gotk-sync.yaml` is rendered.
    GeneratedSync,
    /// The branch already holds these files: nothing committed.
    UpToDate,
    /// A commit of the files was made on `branch`.
    Committed {
        /// The branch committed to.
        branch: &'a str,
        /// The new commit's id.
        commit: &'a str,
    },
    /// About to push to `url`.
    Pushing {
        /// The URL as the user gave it.
        url: &'a str,
    },
    /// The remote moved on since the clone: fetching it and committing again.
    Retrying,
}

/// The author and message of the commit a run makes.
#[derive(Clone, Debug)]
pub struct CommitOptions {
    /// Author and committer of the commit.
    pub author: Signature,
    /// Text added to the message after a blank line, e.g. `[ci skip]`.
    pub appendix: Option<String>,
    /// The key the commit is signed with, if any (see [`crate::signing`]).
    pub signer: Option<ferroflux_gitsign::Signer>,
}

impl CommitOptions {
    /// Flux's commit message, with the appendix when there is one.
    pub fn message(&self) -> String {
        let message = format!(
            "Add Flux {} component and sync manifests",
            manifests::VERSION
        );
        match &self.appendix {
            Some(extra) => format!("{message}\n\n{extra}"),
            None => message,
        }
    }
}

/// What the branch holds after a run, and what the cluster must be given from it.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// `<branch>@sha1:<commit>`, the revision the GitRepository and Kustomization will report.
    pub revision: String,
    /// The folder built: everything but the sync objects (the engine, and what the user added).
    pub components: Vec<Value>,
    /// The folder built: the GitRepository and Kustomization that make the cluster follow it.
    pub sync: Vec<Value>,
}

/// Why the Git half of a run stopped; what was pushed before stays pushed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The branch could not be cloned (unreachable, refused credentials, no such branch).
    #[error("failed to clone repository")]
    Clone(#[source] GitError),
    /// The install options are not valid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A git step after the clone failed (commit, fetch, reading HEAD).
    #[error(transparent)]
    Git(#[from] GitError),
    /// The push was refused, or still not a fast-forward after the retries.
    #[error("failed to push manifests")]
    Push(#[source] GitError),
    /// The clone's folder could not be written or read.
    #[error("{message}")]
    Io {
        /// What was being done, naming the file or folder.
        message: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The branch is still unborn after a push (a remote that accepted and dropped it).
    #[error("the branch has no commit after the push")]
    NoHead,
    /// The folder does not build (a user's kustomization.yaml in it, typically).
    #[error("cannot build {dir}/{KUSTOMIZATION_FILE}")]
    Build {
        /// The folder, relative to the repository root.
        dir: String,
        /// The kustomize engine's error.
        #[source]
        source: ferroflux_kustomize::BuildError,
    },
}

fn io(message: String) -> impl FnOnce(std::io::Error) -> BootstrapError {
    move |source| BootstrapError::Io { message, source }
}

/// Clones the plan's branch from `url`, commits the engine's and the sync manifests to
/// [`Plan::manifests_dir`] and pushes them, then builds that folder. `on_step` hears each step
/// as it starts or ends. Dropping the future stops a running git and removes the clone; a push
/// is one ref update, so the remote holds the whole commit or none of it.
pub async fn push_manifests(
    plan: &Plan,
    url: &str,
    install: &InstallOptions,
    commit: &CommitOptions,
    on_step: &mut (dyn FnMut(Step<'_>) + Send),
) -> Result<Pushed, BootstrapError> {
    let branch = plan.sync.branch.as_str();
    on_step(Step::Cloning { branch, url });
    let checkout = Checkout::clone(url, branch, &plan.auth, plan.ca_file.as_deref())
        .await
        .map_err(BootstrapError::Clone)?;
    on_step(Step::Cloned);

    on_step(Step::GeneratingComponents);
    let components = manifests::components_yaml(install)?;
    on_step(Step::GeneratedComponents);
    on_step(Step::GeneratingSync);
    let sync = manifests::sync_yaml(&plan.sync);
    on_step(Step::GeneratedSync);

    let message = commit.message();
    let dir = plan.manifests_dir();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let written = write_files(&checkout.path(), &dir, &components, &sync)?;
        match checkout
            .commit(&written, &message, &commit.author, commit.signer.as_ref())
            .await?
        {
            None => {
                on_step(Step::UpToDate);
                break;
            }
            Some(id) => {
                on_step(Step::Committed {
                    branch,
                    commit: &id,
                });
                on_step(Step::Pushing { url });
                match checkout.push().await {
                    Ok(()) => break,
                    Err(GitError::NonFastForward { .. }) if attempts < PUSH_ATTEMPTS => {
                        on_step(Step::Retrying);
                        checkout.fetch_and_reset().await?;
                    }
                    Err(e) => return Err(BootstrapError::Push(e)),
                }
            }
        }
    }
    let head = checkout.head().await?.ok_or(BootstrapError::NoHead)?;
    let revision = format!("{branch}@sha1:{head}");

    // What the folder builds to: components, the sync objects and any user patches.
    let built = ferroflux_kustomize::Build::new(&checkout.path())
        .and_then(|b| b.build(Path::new(&dir)))
        .map_err(|source| BootstrapError::Build {
            dir: dir.clone(),
            source,
        })?;
    let (sync, components): (Vec<Value>, Vec<Value>) = built
        .into_iter()
        .partition(|o| is_sync_object(o, &plan.sync));
    Ok(Pushed {
        revision,
        components,
        sync,
    })
}

/// Writes the three files (kustomization.yaml only when the folder has none) and returns the
/// paths to stage, relative to the work tree.
fn write_files(
    work: &Path,
    dir: &str,
    components: &str,
    sync: &str,
) -> Result<Vec<String>, BootstrapError> {
    let folder = work.join(dir);
    std::fs::create_dir_all(&folder).map_err(io(format!("cannot create {dir} in the clone")))?;
    std::fs::write(folder.join(COMPONENTS_FILE), components)
        .map_err(io(format!("cannot write {dir}/{COMPONENTS_FILE}")))?;
    std::fs::write(folder.join(SYNC_FILE), sync)
        .map_err(io(format!("cannot write {dir}/{SYNC_FILE}")))?;
    let mut paths = vec![
        format!("{dir}/{COMPONENTS_FILE}"),
        format!("{dir}/{SYNC_FILE}"),
    ];
    let existing = KUSTOMIZATION_FILES.iter().any(|f| folder.join(f).exists());
    if !existing {
        let resources = scan_resources(&folder)?;
        std::fs::write(
            folder.join(KUSTOMIZATION_FILE),
            manifests::kustomization_yaml(&resources),
        )
        .map_err(io(format!("cannot write {dir}/{KUSTOMIZATION_FILE}")))?;
        paths.push(format!("{dir}/{KUSTOMIZATION_FILE}"));
    }
    Ok(paths)
}

/// The files under `folder` holding Kubernetes objects, and the sub-folders holding a
/// kustomization, as Flux lists them in a generated kustomization.yaml (walk order).
fn scan_resources(folder: &Path) -> Result<Vec<String>, BootstrapError> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), BootstrapError> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io(format!("cannot list {}", dir.display())))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path
                .strip_prefix(base)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() {
                let has_kustomization = KUSTOMIZATION_FILES.iter().any(|f| path.join(f).exists());
                if has_kustomization {
                    out.push(rel);
                } else {
                    walk(base, &path, out)?;
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(docs) = ferroflux_kustomize::yaml::parse::parse_documents(&text) else {
                continue;
            };
            let objects: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
            if !objects.is_empty()
                && objects
                    .iter()
                    .all(|d| d.get("kind").is_some() && d.get("apiVersion").is_some())
            {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(folder, folder, &mut out)?;
    Ok(out)
}

/// The GitRepository or Kustomization of `gotk-sync.yaml` (by kind, group, name and namespace).
fn is_sync_object(obj: &Value, sync: &SyncOptions) -> bool {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let api = obj["apiVersion"].as_str().unwrap_or_default();
    ((kind == "GitRepository" && api.starts_with("source.toolkit.fluxcd.io/"))
        || (kind == "Kustomization" && api.starts_with("kustomize.toolkit.fluxcd.io/")))
        && obj["metadata"]["name"] == sync.name.as_str()
        && obj["metadata"]["namespace"] == sync.namespace.as_str()
}

#[cfg(test)]
mod tests;
