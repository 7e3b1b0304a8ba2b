//! Reading a fleet repository: its tree at a revision (`git archive`) or as the work tree
//! holds it, its `clusters/<name>/` folders, and for each cluster what Flux would apply —
//! the cluster folder built as the `flux-system` Kustomization does, then every Kustomization
//! of that output whose source is the repository itself, built in turn (the controller's own
//! build: generated kustomization.yaml, patches, `postBuild` substitution with the cluster's
//! variables). Secret values are never kept in clear: they are compared through
//! [`crate::diff`]'s mask.

use ferroflux_api::Kustomization;
use ferroflux_controller::kustomization::build::BuildOutput;
use ferroflux_controller::kustomization::build::{self as ks_build, Cluster};
use ferroflux_controller::kustomization::generate::KUSTOMIZATION_FILES;
use kube::ResourceExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// What reading a fleet repository can fail on.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// `git` failed (not a repository, unknown revision).
    #[error("git {args}: {message}")]
    Git {
        /// The arguments given.
        args: String,
        /// What git said.
        message: String,
    },
    /// Reading or copying files.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// The error.
        message: String,
    },
    /// The repository has no `clusters/<name>/` folders.
    #[error(
        "{0} has no clusters/<name>/ layout: expected one folder per cluster under clusters/ (clusters/staging/, clusters/production/, …), each holding that cluster's Flux manifests (flux-system/gotk-sync.yaml and the Kustomizations it applies)"
    )]
    NoLayout(String),
    /// A build failed.
    #[error("cluster {cluster}: {what}: {message}")]
    Build {
        /// The cluster folder.
        cluster: String,
        /// The Kustomization (`Kustomization/ns/name`).
        what: String,
        /// The build's error.
        message: String,
    },
}

fn io(path: &Path, e: impl std::fmt::Display) -> RepoError {
    RepoError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Runs `git -C dir args`, returning stdout.
pub fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, RepoError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RepoError::Git {
            args: args.join(" "),
            message: format!("cannot run git: {e}"),
        })?;
    if !out.status.success() {
        return Err(RepoError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// A private copy of the repository's files, at a revision or as the work tree holds them,
/// and the kustomize builds made from it so far.
pub struct Tree {
    dir: tempfile::TempDir,
    /// What it is: `REV (sha)` or `work tree`.
    pub label: String,
    /// The commit's full hash; None for the work tree.
    pub commit: Option<String>,
    /// Builds before substitution, by [`shared_key`]: clusters applying the same overlay with
    /// different variables build it once.
    builds: Mutex<HashMap<String, SharedBuild>>,
    /// Writable copies of the files not in use by a build (a build writes its kustomization
    /// file, put back after it), and how many builds may run at once: as many copies are made
    /// as builds run at once, not one per cluster.
    copies: Mutex<Vec<tempfile::TempDir>>,
    builders: tokio::sync::Semaphore,
}

/// How many kustomize builds of one tree run at once: one per core (each copy of the files
/// costs creating and deleting them, slow on a disk that discards).
fn builders() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// One build shared between the clusters of a tree: made by the first that needs it, awaited by
/// the others. The error is the build's message.
type SharedBuild = Arc<tokio::sync::OnceCell<Result<BuildOutput, String>>>;

impl Tree {
    /// The files of `rev` in the repository `repo` (any revision git understands).
    pub fn at(repo: &Path, rev: &str) -> Result<Tree, RepoError> {
        let sha = git(
            repo,
            &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
        )?;
        let sha = String::from_utf8_lossy(&sha).trim().to_string();
        let archive = git(repo, &["archive", "--format=tar", &sha])?;
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-fleet-")
            .tempdir()
            .map_err(|e| io(Path::new("temporary directory"), e))?;
        tar::Archive::new(archive.as_slice())
            .unpack(dir.path())
            .map_err(|e| io(dir.path(), e))?;
        Ok(Tree {
            dir,
            label: format!("{rev} ({})", &sha[..sha.len().min(12)]),
            commit: Some(sha.clone()),
            builds: Mutex::default(),
            copies: Mutex::default(),
            builders: tokio::sync::Semaphore::new(builders()),
        })
    }

    /// The work tree at `repo` as it is, uncommitted changes included (without `.git`).
    pub fn work_tree(repo: &Path) -> Result<Tree, RepoError> {
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-fleet-")
            .tempdir()
            .map_err(|e| io(Path::new("temporary directory"), e))?;
        copy_tree(repo, dir.path())?;
        Ok(Tree {
            dir,
            label: "work tree".to_string(),
            commit: None,
            builds: Mutex::default(),
            copies: Mutex::default(),
            builders: tokio::sync::Semaphore::new(builders()),
        })
    }

    /// The shared build of `key`, made or being made by another cluster, or an empty cell to
    /// fill.
    fn shared_build(&self, key: String) -> SharedBuild {
        let mut builds = match self.builds.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        builds.entry(key).or_default().clone()
    }

    /// Builds `ks` at `path` before substitution in one of the tree's writable copies (made
    /// when none is free).
    async fn build_in_copy(
        &self,
        ks: &Kustomization,
        path: &str,
        cluster: Cluster<'_>,
    ) -> Result<BuildOutput, String> {
        let _turn = self
            .builders
            .acquire()
            .await
            .map_err(|e| format!("waiting for a build: {e}"))?;
        let free = match self.copies.lock() {
            Ok(mut c) => c.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        let copy = match free {
            Some(c) => c,
            None => writable_copy(self.path())
                .await
                .map_err(|e| e.to_string())?,
        };
        let built = build_in(ks, copy.path(), &copy.path().join(path), cluster).await;
        // A copy whose files could not be put back is dropped, not used again.
        let built = built?;
        match self.copies.lock() {
            Ok(mut c) => c.push(copy),
            Err(poisoned) => poisoned.into_inner().push(copy),
        }
        built
    }

    /// How many distinct builds (before substitution) were made from this tree so far.
    pub fn builds_made(&self) -> usize {
        match self.builds.lock() {
            Ok(b) => b.len(),
            Err(poisoned) => poisoned.into_inner().len(),
        }
    }

    /// Where the files are.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The cluster folders: `clusters/<name>/`, sorted.
    pub fn clusters(&self) -> Result<Vec<String>, RepoError> {
        let dir = self.path().join("clusters");
        let entries = std::fs::read_dir(&dir)
            .map_err(|_| RepoError::NoLayout(format!("the repository ({})", self.label)))?;
        let mut names = Vec::new();
        for e in entries {
            let e = e.map_err(|e| io(&dir, e))?;
            if e.file_type().map_err(|err| io(&e.path(), err))?.is_dir() {
                names.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        if names.is_empty() {
            return Err(RepoError::NoLayout(format!(
                "the repository ({})",
                self.label
            )));
        }
        names.sort();
        Ok(names)
    }
}

/// Copies `from` into `to`, without `.git`.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), RepoError> {
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    for e in std::fs::read_dir(from).map_err(|e| io(from, e))? {
        let e = e.map_err(|e| io(from, e))?;
        let name = e.file_name();
        if name == ".git" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        let kind = e.file_type().map_err(|err| io(&src, err))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(|err| io(&src, err))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|err| io(&dst, err))?;
        } else {
            std::fs::copy(&src, &dst).map_err(|err| io(&src, err))?;
        }
    }
    Ok(())
}

/// A writable copy of `from` in a new temporary directory, made off the async executor (a
/// repository of thousands of files takes a while).
async fn writable_copy(from: &Path) -> Result<tempfile::TempDir, RepoError> {
    let from = from.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let work = tempfile::Builder::new()
            .prefix("ferroflux-fleet-build-")
            .tempdir()
            .map_err(|e| io(Path::new("temporary directory"), e))?;
        copy_tree(&from, work.path())?;
        Ok(work)
    })
    .await
    .map_err(|e| io(Path::new("temporary directory"), e))?
}

/// The kustomization files of a folder as they were before a build, to put back after it.
struct KeptFiles {
    /// Each name kustomize recognises, and its content when the file exists.
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl KeptFiles {
    fn take(dir: &Path) -> Result<KeptFiles, RepoError> {
        let mut files = Vec::new();
        for name in KUSTOMIZATION_FILES {
            let path = dir.join(name);
            // `Kustomization` may be a folder of that name: never the build's file then.
            if path.is_dir() {
                continue;
            }
            let content = read_if_any(&path)?;
            files.push((path, content));
        }
        Ok(KeptFiles { files })
    }

    /// Writes back what changed and removes what the build created.
    fn restore(self) -> Result<(), RepoError> {
        for (path, before) in self.files {
            match (before, read_if_any(&path)?) {
                (Some(b), Some(n)) if b == n => {}
                (Some(b), _) => std::fs::write(&path, b).map_err(|e| io(&path, e))?,
                (None, Some(_)) => std::fs::remove_file(&path).map_err(|e| io(&path, e))?,
                (None, None) => {}
            }
        }
        Ok(())
    }
}

/// A file's content, or None when it (or its folder) does not exist.
fn read_if_any(path: &Path) -> Result<Option<Vec<u8>>, RepoError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(io(path, e)),
    }
}

/// One object a cluster would hold, and the Kustomization that applies it.
#[derive(Clone, Debug)]
pub struct Built {
    /// `Kustomization/ns/name` that applies it.
    pub by: String,
    /// The object as built.
    pub object: Value,
}

/// What one cluster would apply.
#[derive(Clone, Debug, Default)]
pub struct ClusterBuild {
    /// Objects by `Kind/namespace/name` (group-qualified when the kind alone is ambiguous is
    /// not needed: Flux names them so too).
    pub objects: BTreeMap<String, Built>,
    /// Kustomizations built, in order.
    pub kustomizations: Vec<String>,
    /// What was not built and why (a Kustomization of another source).
    pub notes: Vec<String>,
}

/// `Kind/namespace/name` (no namespace: `Kind/name`), as flux names objects.
pub fn object_id(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let name = obj["metadata"]["name"].as_str().unwrap_or("?");
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{kind}/{ns}/{name}"),
        _ => format!("{kind}/{name}"),
    }
}

fn normal(path: &str) -> String {
    let p = path.trim_start_matches("./").trim_end_matches('/');
    if p == "." {
        String::new()
    } else {
        p.to_string()
    }
}

/// What makes a build before substitution: the folder, and the Kustomization's name, namespace
/// (its owner labels) and spec other than `postBuild`.
fn shared_key(ks: &Kustomization, path: &str) -> String {
    let mut spec = ks.spec.clone();
    spec.post_build = None;
    format!(
        "{path}\n{}\n{}\n{}",
        ks.namespace().unwrap_or_default(),
        ks.name_any(),
        serde_json::to_string(&spec).unwrap_or_default()
    )
}

/// One kustomize build of `ks` at `dir` (inside the writable copy `root`), before
/// substitution; the kustomization files of `dir` put back after it, so that the next build in
/// the copy sees the repository's own. The outer error: the files could not be put back (the
/// copy is not to be used again).
async fn build_in(
    ks: &Kustomization,
    root: &Path,
    dir: &Path,
    cluster: Cluster<'_>,
) -> Result<Result<BuildOutput, String>, String> {
    let kept = KeptFiles::take(dir).map_err(|e| e.to_string())?;
    let built = ks_build::build_unsubstituted(ks, root, dir, cluster).await;
    kept.restore().map_err(|e| e.to_string())?;
    Ok(built.map_err(|e| e.to_string()))
}

/// Builds what cluster `name` would apply from `tree`: the folder `clusters/<name>` as the
/// `flux-system` Kustomization, then every Kustomization of the output whose source is the
/// cluster's `flux-system` GitRepository (the repository itself). `cluster` gives the builds
/// their `substituteFrom` objects and decryption keys; offline they use `substitute` only.
pub async fn build_cluster(
    tree: &Tree,
    name: &str,
    cluster: Cluster<'_>,
) -> Result<ClusterBuild, RepoError> {
    let root: Kustomization = serde_json::from_value(serde_json::json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": format!("./clusters/{name}"), "prune": true,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    }))
    .map_err(|e| RepoError::Build {
        cluster: name.to_string(),
        what: "Kustomization/flux-system/flux-system".into(),
        message: e.to_string(),
    })?;
    let mut out = ClusterBuild::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue = VecDeque::from([root]);
    while let Some(ks) = queue.pop_front() {
        let ns = ks.namespace().unwrap_or_else(|| "flux-system".into());
        let what = format!("Kustomization/{ns}/{}", ks.name_any());
        let path = normal(ks.spec.path.as_deref().unwrap_or("./"));
        // One build per path and substitution: the root and its own gotk-sync entry are one.
        let key = format!(
            "{path}\n{}",
            serde_json::to_string(&ks.spec.post_build).unwrap_or_default()
        );
        if !seen.insert(key) {
            continue;
        }
        // A build writes into its tree: the kustomization file of its own folder (generated,
        // or with the Kustomization's overrides), and with decryption the decrypted files
        // wherever they are. The first is put back after each build, so that builds share the
        // tree's few copies; a decrypting build (with this cluster's keys: never shared) gets a
        // copy of its own.
        let decrypts = ks.spec.decryption.is_some() && matches!(cluster, Cluster::Client(_));
        let unsubstituted = if decrypts {
            let private = writable_copy(tree.path()).await?;
            build_in(&ks, private.path(), &private.path().join(&path), cluster)
                .await
                .and_then(|built| built)
        } else {
            let cell = tree.shared_build(shared_key(&ks, &path));
            cell.get_or_init(|| tree.build_in_copy(&ks, &path, cluster))
                .await
                .clone()
        };
        let built = match unsubstituted {
            Ok(output) => ks_build::substitute(&ks, output, cluster, ks_build::Strictness::Lenient)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        let objects = built.map_err(|message| RepoError::Build {
            cluster: name.to_string(),
            what: what.clone(),
            message,
        })?;
        out.kustomizations.push(what.clone());
        for obj in objects {
            let is_ks = obj["kind"] == "Kustomization"
                && obj["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("kustomize.toolkit.fluxcd.io/"));
            if is_ks {
                match serde_json::from_value::<Kustomization>(obj.clone()) {
                    Ok(child) => {
                        let child_ns = child.namespace().unwrap_or_else(|| ns.clone());
                        let src = &child.spec.source_ref;
                        let src_ns = src.namespace.clone().unwrap_or(child_ns.clone());
                        let own = src.kind.as_str() == "GitRepository"
                            && src.name == "flux-system"
                            && src_ns == "flux-system";
                        if own {
                            queue.push_back(child);
                        } else {
                            out.notes.push(format!(
                                "Kustomization/{child_ns}/{} not built: its source {}/{src_ns}/{} is not this repository",
                                child.name_any(),
                                src.kind.as_str(),
                                src.name
                            ));
                        }
                    }
                    Err(e) => out
                        .notes
                        .push(format!("{} not built: {e}", object_id(&obj))),
                }
            }
            out.objects.insert(
                object_id(&obj),
                Built {
                    by: what.clone(),
                    object: obj,
                },
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn ks(name: &str, path: &str, extra: &str) -> String {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}"
        )
    }

    /// The cluster's builds share one copy of the tree: what one build writes into a folder
    /// (its Kustomization's overrides, a generated kustomization.yaml) must not leak into the
    /// next build that reads that folder.
    #[tokio::test]
    async fn builds_of_one_cluster_do_not_see_each_others_overrides() {
        let src = tempfile::tempdir().unwrap();
        let root = src.path();
        let cm = |name: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n")
        };
        write(
            root,
            "apps/base/kustomization.yaml",
            "resources:\n- cm.yaml\n",
        );
        write(root, "apps/base/cm.yaml", &cm("app"));
        write(
            root,
            "apps/overlay/kustomization.yaml",
            "resources:\n- ../base\n",
        );
        // No kustomization file: the build generates one, twice, for two Kustomizations.
        write(root, "apps/plain/cm.yaml", &cm("plain"));
        let docs = [
            ks("a-base", "./apps/base", "  targetNamespace: one\n"),
            ks("b-overlay", "./apps/overlay", "  targetNamespace: two\n"),
            ks("c-plain", "./apps/plain", "  targetNamespace: three\n"),
            // (A substitution of their own: one build per path and substitution.)
            ks(
                "d-plain",
                "./apps/plain",
                "  namePrefix: again-\n  postBuild:\n    substitute:\n      x: d\n",
            ),
            ks(
                "e-base",
                "./apps/base",
                "  postBuild:\n    substitute:\n      x: e\n",
            ),
        ];
        write(root, "clusters/one/apps.yaml", &docs.join("---\n"));
        let tree = Tree::work_tree(root).unwrap();
        let built = build_cluster(&tree, "one", Cluster::Offline).await.unwrap();
        let ids: Vec<(&str, &str)> = built
            .objects
            .iter()
            .filter(|(id, _)| id.starts_with("ConfigMap/"))
            .map(|(id, b)| (id.as_str(), b.by.as_str()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("ConfigMap/again-plain", "Kustomization/flux-system/d-plain"),
                ("ConfigMap/app", "Kustomization/flux-system/e-base"),
                ("ConfigMap/one/app", "Kustomization/flux-system/a-base"),
                ("ConfigMap/three/plain", "Kustomization/flux-system/c-plain"),
                ("ConfigMap/two/app", "Kustomization/flux-system/b-overlay"),
            ]
        );
        // The tree the builds came from is as it was.
        assert!(!tree.path().join("apps/plain/kustomization.yaml").exists());
        assert_eq!(
            std::fs::read_to_string(tree.path().join("apps/base/kustomization.yaml")).unwrap(),
            "resources:\n- cm.yaml\n"
        );
    }

    /// Clusters applying the same overlay with their own variables build it once: each still
    /// gets its own substitution, and a Kustomization that differs in anything but `postBuild`
    /// (here its `targetNamespace`) is a build of its own.
    #[tokio::test]
    async fn clusters_share_a_build_and_substitute_their_own_variables() {
        let src = tempfile::tempdir().unwrap();
        let root = src.path();
        write(
            root,
            "apps/web/kustomization.yaml",
            "resources:\n- cm.yaml\n",
        );
        write(
            root,
            "apps/web/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\ndata:\n  cluster: ${cluster_name}\n",
        );
        let web = |cluster: &str, extra: &str| {
            ks(
                "web",
                "./apps/web",
                &format!("  postBuild:\n    substitute:\n      cluster_name: {cluster}\n{extra}"),
            )
        };
        write(root, "clusters/one/web.yaml", &web("one", ""));
        write(root, "clusters/two/web.yaml", &web("two", ""));
        write(
            root,
            "clusters/three/web.yaml",
            &web("three", "  targetNamespace: other\n"),
        );
        let tree = Tree::work_tree(root).unwrap();
        let (one, two, three) = tokio::join!(
            build_cluster(&tree, "one", Cluster::Offline),
            build_cluster(&tree, "two", Cluster::Offline),
            build_cluster(&tree, "three", Cluster::Offline),
        );
        let value = |b: &ClusterBuild, id: &str| b.objects[id].object["data"]["cluster"].clone();
        assert_eq!(value(&one.unwrap(), "ConfigMap/web/web"), "one");
        assert_eq!(value(&two.unwrap(), "ConfigMap/web/web"), "two");
        assert_eq!(value(&three.unwrap(), "ConfigMap/other/web"), "three");
        // Three cluster folders, and apps/web twice (the third cluster's targetNamespace).
        assert_eq!(tree.builds_made(), 5);
    }
}
