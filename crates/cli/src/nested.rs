//! What `build kustomization --recursive` and `diff kustomization --recursive` share: the
//! `--local-sources` map, the Flux Kustomizations found in a build's output, the directory each
//! of them is built from, and the guard that stops a cycle of Kustomizations from recursing
//! forever.
//!
//! A nested Kustomization is built from its source's local directory when `--local-sources`
//! names that source (as flux does), else from the artifact the cluster's source controller
//! serves for it (flux stops with an error there). Its spec is the one in the build output —
//! what the cluster would hold once the parent is applied — and its status (the inventory diff
//! prunes against) is the live one.

use anyhow::{Context as _, anyhow, bail};
use ferroflux_api::kustomization::SourceKind;
use ferroflux_api::{GitRepository, Kustomization};
use ferroflux_controller::artifact;
use ferroflux_controller::kustomization::build::confined;
use kube::ResourceExt as _;
use kube::api::Api;
use serde::Deserialize as _;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The example every `--local-sources` error shows.
const EXAMPLE: &str = "GitRepository/flux-system/flux-system=./";

/// `--local-sources`: the local directory standing for each named source, by
/// `Kind/namespace/name`.
#[derive(Debug, Default)]
pub struct LocalSources(BTreeMap<String, PathBuf>);

impl LocalSources {
    /// Parses `Kind/namespace/name=path` entries; every path must be a directory.
    pub fn parse(entries: &[String]) -> anyhow::Result<LocalSources> {
        let mut map = BTreeMap::new();
        for entry in entries.iter().filter(|e| !e.trim().is_empty()) {
            let malformed = |why: &str| {
                anyhow!(
                    "invalid --local-sources entry {entry:?}: {why}; expected Kind/namespace/name=path, e.g. {EXAMPLE}"
                )
            };
            let (key, path) = entry.split_once('=').ok_or_else(|| malformed("no '='"))?;
            let parts: Vec<&str> = key.split('/').collect();
            if parts.len() != 3 || parts.iter().any(|p| p.trim().is_empty()) {
                return Err(malformed("the source must be Kind/namespace/name"));
            }
            if !["GitRepository", "OCIRepository", "Bucket"].contains(&parts[0]) {
                return Err(malformed(&format!(
                    "unknown source kind {:?} (GitRepository, OCIRepository or Bucket)",
                    parts[0]
                )));
            }
            if path.is_empty() {
                return Err(malformed("the path is empty"));
            }
            let dir = PathBuf::from(path);
            if !dir.is_dir() {
                bail!("invalid --local-sources entry {entry:?}: {path:?} is not a directory");
            }
            let dir = dir
                .canonicalize()
                .with_context(|| format!("resolving --local-sources path {path:?}"))?;
            if map.get(key).is_some_and(|previous| previous != &dir) {
                bail!("invalid --local-sources: {key} is given two different paths");
            }
            map.insert(key.to_string(), dir);
        }
        Ok(LocalSources(map))
    }
}

/// True for a Flux Kustomization (not a kustomize one).
pub fn is_kustomization(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Kustomization")
        && obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("kustomize.toolkit.fluxcd.io/"))
}

/// `Kustomization/<namespace>/<name>`, as flux names a nested Kustomization.
pub fn display(ks: &Kustomization) -> String {
    format!(
        "Kustomization/{}/{}",
        ks.namespace().unwrap_or_default(),
        ks.name_any()
    )
}

/// The `Kind/namespace/name` of a Kustomization's source, its namespace defaulted.
pub fn source_key(ks: &Kustomization) -> String {
    let source = &ks.spec.source_ref;
    let ns = source
        .namespace
        .clone()
        .or_else(|| ks.namespace())
        .unwrap_or_default();
    format!("{}/{ns}/{}", source.kind.as_str(), source.name)
}

/// One Kustomization being built, and the directory it is built from.
struct Frame {
    name: String,
    location: String,
}

/// A nested Kustomization, ready to build: its spec, the source tree the build may read and
/// the directory of its `spec.path` in that tree.
pub struct Nested {
    pub ks: Kustomization,
    pub root: PathBuf,
    pub dir: PathBuf,
    location: String,
}

/// The state of one recursive build or diff: where sources are, artifacts downloaded so far,
/// and the chain of Kustomizations being built.
pub struct Recursion<'a> {
    local: LocalSources,
    client: Option<&'a kube::Client>,
    /// Unpacked artifacts by source key: read-only trees, each build copies what it needs.
    artifacts: BTreeMap<String, (tempfile::TempDir, PathBuf)>,
    stack: Vec<Frame>,
}

impl<'a> Recursion<'a> {
    /// Starts at the Kustomization `top` built from the local directory `dir`.
    pub fn new(
        local: LocalSources,
        client: Option<&'a kube::Client>,
        top: &Kustomization,
        dir: &Path,
    ) -> Recursion<'a> {
        Recursion {
            local,
            client,
            artifacts: BTreeMap::new(),
            stack: vec![Frame {
                name: display(top),
                location: location_of_dir(dir),
            }],
        }
    }

    /// The built object `obj` as a nested Kustomization of `parent`: None when it is no Flux
    /// Kustomization or is the parent itself (a Kustomization that applies its own definition,
    /// as `flux-system` does, is not built twice). A Kustomization already being built, or one
    /// building a directory already being built, is a cycle: an error naming the chain.
    pub async fn nested(
        &mut self,
        obj: &Value,
        parent: &Kustomization,
    ) -> anyhow::Result<Option<Nested>> {
        if !is_kustomization(obj) {
            return Ok(None);
        }
        let mut ks = self.to_kustomization(obj)?;
        let name = display(&ks);
        if name == display(parent) {
            return Ok(None);
        }
        if self.stack.iter().any(|f| f.name == name) {
            bail!("{}", self.cycle(&name, None));
        }
        let key = source_key(&ks);
        let spec_path = ks.spec.path.clone().unwrap_or_else(|| "./".into());
        let (root, dir, location) = match self.local.0.get(&key) {
            Some(local) => {
                let place = format!("the local source {key}={}", local.display());
                let dir = spec_dir(&name, local, &spec_path, &place)?;
                let root = crate::cmd::build::source_root(local)?;
                let location = location_of_dir(&dir);
                (root, dir, location)
            }
            None => {
                let root = self.artifact(&key, &ks).await?;
                let place = format!("the artifact of {key}");
                let dir = spec_dir(&name, &root, &spec_path, &place)?;
                let location = format!("{key}:{}", normalized(&spec_path));
                (root, dir, location)
            }
        };
        if let Some(f) = self.stack.iter().find(|f| f.location == location) {
            let also = format!("{} builds the same directory as {}", name, f.name);
            bail!("{}", self.cycle(&name, Some(&also)));
        }
        if let Some(client) = self.client {
            let ns = ks.namespace().unwrap_or_default();
            let api: Api<Kustomization> = Api::namespaced(client.clone(), &ns);
            let live = api
                .get_opt(&ks.name_any())
                .await
                .with_context(|| format!("failed to get kustomization object {name}"))?;
            ks.status = live.and_then(|l| l.status);
        }
        Ok(Some(Nested {
            ks,
            root,
            dir,
            location,
        }))
    }

    /// `Kustomization/ns/name` when `obj` is a Flux Kustomization other than `parent` that
    /// applies to a remote cluster (`spec.kubeConfig`), which diff cannot dry-run against.
    pub fn remote(&self, obj: &Value, parent: &Kustomization) -> Option<String> {
        if !is_kustomization(obj) || obj.pointer("/spec/kubeConfig").is_none() {
            return None;
        }
        let ks = self.to_kustomization(obj).ok()?;
        let name = display(&ks);
        (name != display(parent)).then_some(name)
    }

    /// Marks `nested` as being built, until [`Recursion::leave`].
    pub fn enter(&mut self, nested: &Nested) {
        self.stack.push(Frame {
            name: display(&nested.ks),
            location: nested.location.clone(),
        });
    }

    pub fn leave(&mut self) {
        self.stack.pop();
    }

    fn cycle(&self, name: &str, why: Option<&str>) -> String {
        let chain: Vec<&str> = self
            .stack
            .iter()
            .map(|f| f.name.as_str())
            .chain([name])
            .collect();
        let mut message = format!(
            "Kustomization cycle, not built again: {}",
            chain.join(" → ")
        );
        if let Some(why) = why {
            message.push_str(&format!(" ({why})"));
        }
        message
    }

    fn to_kustomization(&self, obj: &Value) -> anyhow::Result<Kustomization> {
        let mut ks = Kustomization::deserialize(obj).map_err(|e| {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            anyhow!("failed to convert Kustomization {name:?} of the build output: {e}")
        })?;
        if ks.metadata.namespace.as_deref().is_none_or(str::is_empty) {
            // Where applying it would put it.
            let ns = self.client.map_or("default", |c| c.default_namespace());
            ks.metadata.namespace = Some(ns.to_string());
        }
        Ok(ks)
    }

    /// The unpacked artifact of source `key`, downloaded from the cluster's source controller
    /// the first time it is needed.
    async fn artifact(&mut self, key: &str, ks: &Kustomization) -> anyhow::Result<PathBuf> {
        if let Some((_, root)) = self.artifacts.get(key) {
            return Ok(root.clone());
        }
        let unresolved = |why: String| {
            anyhow!(
                "cannot get local path for {key} of kustomization {}: {why}; pass its local directory with --local-sources {key}=DIR",
                ks.name_any()
            )
        };
        let Some(client) = self.client else {
            return Err(unresolved(
                "it is not in --local-sources, and a --dry-run build does not read the cluster's artifacts".into(),
            ));
        };
        if ks.spec.source_ref.kind != SourceKind::GitRepository {
            return Err(unresolved(format!(
                "it is not in --local-sources, and reading {} artifacts from the cluster is not supported",
                ks.spec.source_ref.kind.as_str()
            )));
        }
        let (_, ns_name) = key.split_once('/').unwrap_or(("", key));
        let (ns, name) = ns_name.split_once('/').unwrap_or(("", ns_name));
        let api: Api<GitRepository> = Api::namespaced(client.clone(), ns);
        let repo = api
            .get_opt(name)
            .await
            .map_err(|e| unresolved(format!("reading GitRepository {ns}/{name}: {e}")))?
            .ok_or_else(|| {
                unresolved(format!(
                    "it is not in --local-sources and GitRepository {ns}/{name} is not in the cluster"
                ))
            })?;
        let art = repo.status.and_then(|s| s.artifact).ok_or_else(|| {
            unresolved(format!(
                "it is not in --local-sources and GitRepository {ns}/{name} has no artifact yet"
            ))
        })?;
        let unreadable = |e: artifact::ArtifactError| {
            unresolved(format!(
                "it is not in --local-sources and its artifact cannot be read: {e}"
            ))
        };
        let data = artifact::download(&art.url, artifact::DEFAULT_MAX_SIZE)
            .await
            .map_err(unreadable)?;
        artifact::verify_digest(&data, &art.digest).map_err(unreadable)?;
        let dir = tempfile::Builder::new()
            .prefix("ferroflux-artifact-")
            .tempdir()
            .context("creating a directory for the artifact")?;
        artifact::untar(&data, dir.path(), artifact::DEFAULT_MAX_SIZE).map_err(unreadable)?;
        let root = dir
            .path()
            .canonicalize()
            .context("resolving the artifact's directory")?;
        crate::output::progress::action(format_args!(
            "building Kustomizations of {key} from the cluster's artifact {} (not in --local-sources)",
            art.revision
        ));
        self.artifacts.insert(key.to_string(), (dir, root.clone()));
        Ok(root)
    }
}

/// The existing directory `spec_path` names under `root` (the Kustomization `name`'s
/// `spec.path` in its source, which `place` names in errors).
fn spec_dir(name: &str, root: &Path, spec_path: &str, place: &str) -> anyhow::Result<PathBuf> {
    let dir = confined(root, spec_path)
        .ok_or_else(|| anyhow!("{name}: path {spec_path:?} leaves {place}"))?;
    if !dir.is_dir() {
        bail!("{name}: kustomization path not found: {spec_path:?} in {place}");
    }
    Ok(dir)
}

/// A local directory as a cycle key.
fn location_of_dir(dir: &Path) -> String {
    dir.canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// `./apps/` and `apps` alike, for comparing paths inside one artifact.
fn normalized(path: &str) -> String {
    confined(Path::new("/"), path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_sources_are_kind_namespace_name_and_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let ok = LocalSources::parse(&[format!("GitRepository/flux-system/fleet={path}")]).unwrap();
        assert_eq!(
            ok.0.get("GitRepository/flux-system/fleet"),
            Some(&dir.path().canonicalize().unwrap())
        );
        for (entry, why) in [
            ("GitRepository/flux-system/fleet".to_string(), "no '='"),
            (format!("GitRepository/fleet={path}"), "Kind/namespace/name"),
            (
                format!("GitRepository//fleet={path}"),
                "Kind/namespace/name",
            ),
            (format!("HelmChart/ns/x={path}"), "unknown source kind"),
            ("GitRepository/ns/x=".to_string(), "the path is empty"),
        ] {
            let e = LocalSources::parse(std::slice::from_ref(&entry))
                .unwrap_err()
                .to_string();
            assert!(e.contains(why) && e.contains(EXAMPLE), "{entry}: {e}");
        }
        let e = LocalSources::parse(&[format!("GitRepository/ns/x={path}/missing")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a directory"), "{e}");
    }

    #[test]
    fn only_flux_kustomizations_are_nested() {
        assert!(is_kustomization(&serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization"})));
        assert!(!is_kustomization(&serde_json::json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"})));
        assert!(!is_kustomization(&serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "ConfigMap"})));
    }

    #[test]
    fn paths_stay_inside_the_source() {
        let root = Path::new("/src");
        assert_eq!(
            confined(root, "./apps/staging"),
            Some(PathBuf::from("/src/apps/staging"))
        );
        assert_eq!(confined(root, "../elsewhere"), None);
        assert_eq!(normalized("./apps/"), normalized("apps"));
    }
}
