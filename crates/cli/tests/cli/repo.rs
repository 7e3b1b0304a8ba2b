//! A Git repository for the bootstrap, install and day-2 tests: a bare `fleet.git` and a work
//! tree pushing to it, made with the `git` program.

use std::path::PathBuf;
use std::process::Command;

use ferroflux_testkit::git;

/// A bare repository `<root>/fleet.git` and a work tree `<root>/work` pushing to it.
pub struct Repo {
    pub root: tempfile::TempDir,
}

impl Repo {
    /// An empty bare repository (no commit, no branch).
    pub fn empty() -> Self {
        let root = tempfile::tempdir().unwrap();
        git(root.path(), &["init", "-q", "--bare", "fleet.git"]);
        Repo { root }
    }

    /// A repository whose `main` has one commit with `files`.
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let repo = Repo::empty();
        git(repo.root.path(), &["clone", "-q", "fleet.git", "work"]);
        for (path, text) in files {
            repo.write(path, text);
        }
        repo.commit_and_push("initial");
        repo
    }

    pub fn bare(&self) -> PathBuf {
        self.root.path().join("fleet.git")
    }
    pub fn url(&self) -> String {
        format!("file://{}", self.bare().display())
    }
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn commit_and_push(&self, msg: &str) -> String {
        git(&self.work(), &["add", "-A"]);
        git(&self.work(), &["commit", "-q", "-m", msg]);
        git(
            &self.work(),
            &["push", "-q", "origin", "HEAD:refs/heads/main"],
        );
        git(&self.work(), &["rev-parse", "HEAD"])
    }
    /// The commit `main` points at in the bare repository, `None` when there is none.
    pub fn head(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["rev-parse", "-q", "--verify", "refs/heads/main"])
            .current_dir(self.bare())
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
    /// Number of commits on `main`.
    pub fn count(&self) -> usize {
        if self.head().is_none() {
            return 0;
        }
        git(&self.bare(), &["rev-list", "--count", "refs/heads/main"])
            .parse()
            .unwrap()
    }
    /// A file of `main`'s tip.
    pub fn show(&self, path: &str) -> String {
        git(&self.bare(), &["show", &format!("refs/heads/main:{path}")])
    }
    pub fn files(&self) -> Vec<String> {
        git(
            &self.bare(),
            &["ls-tree", "-r", "--name-only", "refs/heads/main"],
        )
        .lines()
        .map(String::from)
        .collect()
    }
}

/// A cluster folder's `flux-system/gotk-sync.yaml` as `bootstrap` writes it (the fleet
/// repository's GitRepository and the Kustomization of `./clusters/<cluster>`), plus, with
/// `apps`, a Kustomization `apps` of that path: the layout `fleet diff` reads.
pub fn fleet_sync(cluster: &str, apps: Option<&str>) -> String {
    let mut sync = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: https://git.example.invalid/fleet.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/{cluster}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"
    );
    if let Some(path) = apps {
        sync.push_str(&format!(
            "---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: {path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"
        ));
    }
    sync
}
