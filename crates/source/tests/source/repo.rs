//! A repository for the source tests: a bare `<name>.git` the test servers serve, and a work
//! tree that pushes to it, made with the `git` program.

use std::path::PathBuf;

use ferroflux_testkit::git;

/// A bare repository served by the test servers, and a work tree that pushes to it.
pub struct Repo {
    pub root: tempfile::TempDir,
    pub name: String,
}

impl Repo {
    /// `<root>/<name>.git` (bare) and `<root>/work` (clone).
    pub fn new(name: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        git(
            root.path(),
            &["init", "--bare", "-q", &format!("{name}.git")],
        );
        git(root.path(), &["init", "-q", "work"]);
        let r = Repo {
            root,
            name: name.to_string(),
        };
        git(
            &r.work(),
            &["remote", "add", "origin", r.bare().to_str().unwrap()],
        );
        r
    }
    pub fn bare(&self) -> PathBuf {
        self.root.path().join(format!("{}.git", self.name))
    }
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }
    pub fn write(&self, rel: &str, content: &[u8]) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    pub fn symlink(&self, rel: &str, target: &str) {
        let p = self.work().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }
    /// Commits everything on the current branch; returns the commit id.
    pub fn commit(&self, msg: &str) -> String {
        git(&self.work(), &["add", "-A"]);
        git(&self.work(), &["commit", "-q", "--allow-empty", "-m", msg]);
        git(&self.work(), &["rev-parse", "HEAD"])
    }
    pub fn push(&self, args: &[&str]) {
        let mut a = vec!["push", "-q", "origin"];
        a.extend_from_slice(args);
        git(&self.work(), &a);
    }
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.work(), args)
    }
}
