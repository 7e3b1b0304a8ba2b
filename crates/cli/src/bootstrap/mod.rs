//! What `bootstrap` (and `install`, `check`, `uninstall`, `demo`) build on: the manifests that
//! install the engine and make a cluster follow its folder ([`manifests`]), and the Git writes
//! of bootstrap through the `git` program ([`git`]).

pub mod git;
pub mod manifests;
