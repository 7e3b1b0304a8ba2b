//! `ferroflux build kustomization NAME --path DIR`: the objects the controller would apply for
//! a Kustomization if its source held the local directory DIR, as flux's command of the same
//! name prints them, with every Secret value masked.
//!
//! The local tree is never modified: it is copied (without `.git` and without what
//! `.sourceignore` files and `--ignore-paths` exclude under DIR) into a private directory, and
//! the controller's own build runs there (generated kustomization.yaml, spec overrides,
//! decryption with the cluster's key Secret, owner labels, `postBuild` substitution).
//! With `--recursive`, the Flux Kustomizations of the output are built too (see `nested`).

use crate::cluster::{KubeArgs, humantime};
use crate::nested::{self, LocalSources, Recursion};
use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::Kustomization;
use ferroflux_controller::kustomization::build::{self as ks_build, Cluster};
use ferroflux_source::sourceignore::Rules;
use kube::api::Api;
use serde_json::Value;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(subcommand)]
    what: BuildWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum BuildWhat {
    /// Build a Kustomization from a local directory, as the controller would.
    #[command(visible_alias = "ks")]
    Kustomization(BuildKsArgs),
    /// Render a local chart as a HelmRelease of the cluster would release it (beyond flux).
    #[command(visible_alias = "hr")]
    Helmrelease(super::helmrelease_local::LocalChartArgs),
    /// Pack a local directory as the tar.gz `push artifact` would upload.
    Artifact(super::artifact::BuildArtifactArgs),
}

#[derive(Args, Debug)]
struct BuildKsArgs {
    #[command(flatten)]
    local: LocalArgs,
    /// Build without a cluster (needs --kustomization-file): substituteFrom and decryption
    /// are skipped.
    #[arg(long)]
    dry_run: bool,
}

/// What `build` and `diff` share: which Kustomization, built from which local directory.
#[derive(Args, Debug, Clone)]
pub struct LocalArgs {
    /// The Kustomization's name.
    pub name: String,
    /// Path to the local directory that stands for the Kustomization's spec.path.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Path to a Flux Kustomization YAML file, used instead of the one in the cluster.
    #[arg(long)]
    pub kustomization_file: Option<PathBuf>,
    /// Paths to ignore under --path, in .gitignore format (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub ignore_paths: Vec<String>,
    /// Fail when a substitution variable has no value and no default, instead of leaving it
    /// empty (the controller's StrictPostBuildSubstitutions feature gate).
    #[arg(long)]
    pub strict_substitute: bool,
    /// Also build every Flux Kustomization found in the output, recursively.
    #[arg(short = 'r', long)]
    pub recursive: bool,
    /// Local directories of the sources of nested Kustomizations, comma separated:
    /// Kind/namespace/name=path (e.g. GitRepository/flux-system/flux-system=./). Sources not
    /// listed are read from the cluster's artifacts.
    #[arg(long, value_delimiter = ',')]
    pub local_sources: Vec<String>,
    /// Build in memory instead of on disk. Accepted for flux's command lines: ferroflux always
    /// builds a private copy and never writes to --path, whichever the value.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub in_memory_build: Option<bool>,
}

/// Flux's mask for Secret values (`**SOPS**`); in `data` it is base64-encoded.
pub const MASK: &str = "**SOPS**";
const DOCKERCONFIGJSON: &str = "kubernetes.io/dockerconfigjson";

pub async fn run(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let ks_args = match args.what {
        BuildWhat::Kustomization(ks_args) => ks_args,
        BuildWhat::Artifact(a) => return super::artifact::build(a).await,
        BuildWhat::Helmrelease(hr) => {
            let timeout = args.kube.timeout;
            let out =
                tokio::time::timeout(timeout, super::helmrelease_local::build(&hr, &args.kube))
                    .await
                    .map_err(|_| anyhow!("build timed out after {}", humantime(timeout)))??;
            print!("{out}");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let objects = {
        let timeout = args.kube.timeout;
        let work = async {
            let client = if ks_args.dry_run {
                None
            } else {
                Some(crate::cluster::Cluster::connect(&args.kube).await?.client)
            };
            let local = &ks_args.local;
            let sources = LocalSources::parse(&local.local_sources)?;
            let lookup = if ks_args.dry_run {
                Lookup::Offline
            } else {
                Lookup::InCluster
            };
            let (ks, objects, dir) =
                build_local(local, &args.kube, client.as_ref(), lookup).await?;
            if !local.recursive {
                return Ok(objects);
            }
            let mut recursion = Recursion::new(sources, client.as_ref(), &ks, &dir);
            with_nested(&mut recursion, &ks, objects, local, client.as_ref()).await
        };
        // Ctrl-C drops the build, and with it the private copy holding decrypted files.
        tokio::select! {
            done = tokio::time::timeout(timeout, work) => {
                done.map_err(|_| anyhow!("build timed out after {}", humantime(timeout)))?
            }
            _ = tokio::signal::ctrl_c() => Err(anyhow!("build cancelled")),
        }
    }?;
    print!("{}", render(&objects));
    Ok(ExitCode::SUCCESS)
}

/// `objects`, then what each Flux Kustomization among them builds, each followed by what its
/// own nested Kustomizations build (depth first), as flux's `--recursive` lists them.
fn with_nested<'r, 'c: 'r>(
    recursion: &'r mut Recursion<'c>,
    parent: &'r Kustomization,
    objects: Vec<Value>,
    local: &'r LocalArgs,
    client: Option<&'c kube::Client>,
) -> Pin<Box<dyn Future<Output = anyhow::Result<Vec<Value>>> + 'r>> {
    Box::pin(async move {
        let mut nested_objects = Vec::new();
        for obj in &objects {
            let Some(nested) = recursion.nested(obj, parent).await? else {
                continue;
            };
            let built = build_nested(&nested, local, client).await?;
            recursion.enter(&nested);
            let all = with_nested(recursion, &nested.ks, built, local, client).await;
            recursion.leave();
            nested_objects.extend(all?);
        }
        let mut objects = objects;
        objects.extend(nested_objects);
        Ok(objects)
    })
}

/// The build output as flux prints it: each object followed by a `---` line, Secret values
/// masked.
pub fn render(objects: &[Value]) -> String {
    let mut masked = objects.to_vec();
    mask_secrets(&mut masked);
    let mut out = String::new();
    for obj in &masked {
        out.push_str(&ferroflux_kustomize::yaml::emit::render_document(obj));
        out.push_str("---\n");
    }
    out
}

/// Replaces every value of every Secret's `data` and `stringData` with flux's mask (a JSON
/// object holding it for docker config Secrets, so the shape stays valid), and drops sops
/// metadata, so no plaintext or ciphertext reaches the terminal.
pub fn mask_secrets(objects: &mut [Value]) {
    mask(objects, Masking::Every);
}

/// Masks what sops encrypted in Secrets, as flux's build does before a diff: a Secret that
/// carries sops metadata loses it and every value (a JSON object holding the mask for docker
/// config Secrets, so the shape stays valid); in other Secrets, the values that hold a sops
/// document. Secrets sops did not touch keep their values: the diff compares them, and its
/// report masks them.
pub fn mask_sops(objects: &mut [Value]) {
    mask(objects, Masking::Encrypted);
}

/// Which Secret values [`mask`] replaces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Masking {
    /// All of them, in every Secret.
    Every,
    /// Those sops encrypted: all of a Secret carrying sops metadata, else each value holding a
    /// sops document.
    Encrypted,
}

fn mask(objects: &mut [Value], which: Masking) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let encrypted = |text: &[u8]| {
        let text = String::from_utf8_lossy(text);
        text.contains("sops") && text.contains("ENC[")
    };
    for obj in objects {
        if obj.get("kind").and_then(Value::as_str) != Some("Secret") {
            continue;
        }
        let whole = which == Masking::Every
            || obj
                .get("sops")
                .and_then(|s| s.get("mac"))
                .and_then(Value::as_str)
                .is_some_and(|mac| mac.starts_with("ENC["));
        let docker = obj.get("type").and_then(Value::as_str) == Some(DOCKERCONFIGJSON);
        let Some(map) = obj.as_object_mut() else {
            continue;
        };
        if whole {
            map.remove("sops");
        }
        let plain = if whole && docker {
            serde_json::json!({ "mask": MASK }).to_string()
        } else {
            MASK.to_string()
        };
        for field in ["data", "stringData"] {
            let Some(entries) = map.get_mut(field).and_then(Value::as_object_mut) else {
                continue;
            };
            for v in entries.values_mut() {
                let hit = whole
                    || v.as_str().is_some_and(|text| match field {
                        "data" => decode_base64(text).is_some_and(|d| encrypted(&d)),
                        _ => encrypted(text.as_bytes()),
                    });
                if !hit {
                    continue;
                }
                *v = Value::String(match field {
                    "data" => b64.encode(&plain),
                    // flux writes the base64 form into stringData of a value it masks alone.
                    _ if !whole => b64.encode(MASK),
                    _ => plain.clone(),
                });
            }
        }
    }
}

/// A Secret value's bytes: base64 that may be wrapped over lines, as kustomize's generators
/// write it (Go's decoder skips the line breaks too).
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let joined: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(joined)
        .ok()
}

/// Checks the flags, finds the Kustomization (cluster and/or file) and builds the local
/// directory for it the way the controller would: the Kustomization, its objects and the
/// directory built. Errors read like flux's.
pub async fn build_local(
    local: &LocalArgs,
    kube_args: &KubeArgs,
    client: Option<&kube::Client>,
    mode: Lookup,
) -> anyhow::Result<(Kustomization, Vec<Value>, PathBuf)> {
    let dry_run = mode == Lookup::Offline;
    let path = match &local.path {
        None => bail!("invalid resource path \"\": pass the local directory with --path"),
        Some(p) => p.clone(),
    };
    if !path.is_dir() {
        bail!(
            "invalid resource path {:?}: not a directory",
            path.display().to_string()
        );
    }
    if let Some(file) = &local.kustomization_file
        && !file.is_file()
    {
        bail!(
            "invalid kustomization file {:?}",
            file.display().to_string()
        );
    }
    if dry_run && local.kustomization_file.is_none() {
        bail!("dry-run mode requires a kustomization file (--kustomization-file)");
    }
    if mode == Lookup::MayBeNew && local.kustomization_file.is_none() {
        bail!("kustomization file is required when assuming new kustomizations");
    }
    let ns = kube_args.namespace.as_str();
    let live = match client {
        Some(client) => {
            let api: Api<Kustomization> = Api::namespaced(client.clone(), ns);
            api.get_opt(&local.name).await.with_context(|| {
                format!("failed to get kustomization object {ns}/{}", local.name)
            })?
        }
        None => None,
    };
    // As flux: the Kustomization must be in the cluster (its inventory says what a diff would
    // delete) unless this is a dry run or the user says it is new (--ignore-not-found).
    let not_found = || {
        anyhow!(
            "failed to get kustomization object: kustomizations.kustomize.toolkit.fluxcd.io \"{}\" not found",
            local.name
        )
    };
    if live.is_none() && mode == Lookup::InCluster {
        return Err(not_found());
    }
    let mut ks = match (&local.kustomization_file, live) {
        (Some(file), live) => {
            let mut from_file = kustomization_from_file(file, &local.name, ns)?;
            if let Some(live) = live {
                // The live inventory tells diff what the cluster holds.
                from_file.status = live.status;
            }
            from_file
        }
        (None, Some(live)) => live,
        (None, None) => return Err(not_found()),
    };
    if ks.metadata.namespace.is_none() {
        ks.metadata.namespace = Some(ns.to_string());
    }

    let source = path
        .canonicalize()
        .with_context(|| format!("resolving {}", path.display()))?;
    let root = source_root(&source)?;
    let objects = build_dir(&ks, &root, &source, local, client).await?;
    Ok((ks, objects, source))
}

/// Where the Kustomization a local build stands for must be found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lookup {
    /// In the cluster (with --kustomization-file, the file's spec and the cluster's status).
    InCluster,
    /// In the cluster if it is there, else only in --kustomization-file (`--ignore-not-found`).
    MayBeNew,
    /// Only in --kustomization-file, no cluster at all (`build --dry-run`).
    Offline,
}

/// Builds a nested Kustomization from the directory found for it, errors naming it
/// (`Kustomization/ns/name: …`).
pub async fn build_nested(
    nested: &nested::Nested,
    local: &LocalArgs,
    client: Option<&kube::Client>,
) -> anyhow::Result<Vec<Value>> {
    build_dir(&nested.ks, &nested.root, &nested.dir, local, client)
        .await
        .map_err(|e| anyhow!("{}: {e:#}", nested::display(&nested.ks)))
}

/// Builds `ks` from the directory `source`, the build reading files anywhere under `root`:
/// both are copied (without `.git` and what `.sourceignore` and `--ignore-paths` exclude under
/// `source`) into a private directory first, so the build can modify its copy.
pub async fn build_dir(
    ks: &Kustomization,
    root: &Path,
    source: &Path,
    local: &LocalArgs,
    client: Option<&kube::Client>,
) -> anyhow::Result<Vec<Value>> {
    let work = tempfile::Builder::new()
        .prefix("ferroflux-build-")
        .tempdir()
        .context("creating a private build directory")?;
    let ignore = Rules::load_dir(source, &local.ignore_paths)?;
    copy_tree(root, work.path(), source, &ignore)
        .with_context(|| format!("copying {} for the build", root.display()))?;
    let relative = source.strip_prefix(root).unwrap_or(Path::new(""));
    let dir = work.path().join(relative);
    let cluster = match client {
        Some(c) => Cluster::Client(c),
        None => Cluster::Offline,
    };
    let strictness = if local.strict_substitute {
        ks_build::Strictness::Strict
    } else {
        ks_build::Strictness::Lenient
    };
    ks_build::build_with(ks, work.path(), &dir, cluster, strictness)
        .await
        .map_err(|e| anyhow!("kustomize build failed: {e}"))
}

/// The Kustomization named `name` (in `ns`, or without a namespace) from a YAML file that may
/// hold several documents.
fn kustomization_from_file(file: &Path, name: &str, ns: &str) -> anyhow::Result<Kustomization> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("failed to read kustomization file {}", file.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| {
        anyhow!(
            "failed to unmarshall kustomization file {}: {e}",
            file.display()
        )
    })?;
    for doc in docs {
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        let meta = |f: &str| {
            doc.get("metadata")
                .and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        if api_version.starts_with("kustomize.toolkit.fluxcd.io/")
            && kind == "Kustomization"
            && meta("name").as_deref() == Some(name)
            && meta("namespace").is_none_or(|n| n == ns)
        {
            return serde_json::from_value(doc).map_err(|e| {
                anyhow!(
                    "failed to unmarshall kustomization file {}: {e}",
                    file.display()
                )
            });
        }
    }
    bail!(
        "failed find kustomization with name '{name}' and namespace '{ns}' in file '{}'",
        file.display()
    )
}

/// What the build may read besides DIR: the Git work tree DIR belongs to, else the current
/// directory when DIR is inside it, else DIR alone.
pub fn source_root(dir: &Path) -> anyhow::Result<PathBuf> {
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.join(".git").exists() {
            return Ok(d.to_path_buf());
        }
        at = d.parent();
    }
    if let Ok(cwd) = std::env::current_dir().and_then(|c| c.canonicalize())
        && dir.starts_with(&cwd)
    {
        return Ok(cwd);
    }
    Ok(dir.to_path_buf())
}

/// Copies `from` into `to`, symlinks as symlinks (the build refuses those leading out of the
/// copy), skipping `.git` and, under `source`, what `ignore` excludes.
fn copy_tree(from: &Path, to: &Path, source: &Path, ignore: &Rules) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let target = to.join(&name);
        let file_type = entry.file_type()?;
        if let Ok(relative) = path.strip_prefix(source)
            && ignore.excluded_path(relative, file_type.is_dir())
        {
            continue;
        }
        if file_type.is_symlink() {
            let link = std::fs::read_link(&path)?;
            std::os::unix::fs::symlink(&link, &target)
                .with_context(|| format!("linking {}", target.display()))?;
        } else if file_type.is_dir() {
            std::fs::create_dir(&target)
                .with_context(|| format!("creating {}", target.display()))?;
            copy_tree(&path, &target, source, ignore)?;
        } else if file_type.is_file() {
            std::fs::copy(&path, &target).with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_secret_value_is_masked_as_flux_does() {
        let mut objects = vec![
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"},
                   "data": {"password": "c2VjcmV0"}, "stringData": {"user": "admin"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "d"},
                   "type": "kubernetes.io/dockerconfigjson",
                   "data": {".dockerconfigjson": "e30="}, "sops": {"mac": "ENC[x]"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"kept": "visible"}}),
        ];
        mask_secrets(&mut objects);
        assert_eq!(objects[0]["data"]["password"], "KipTT1BTKio=");
        assert_eq!(objects[0]["stringData"]["user"], "**SOPS**");
        // flux's golden for a docker config Secret.
        assert_eq!(
            objects[1]["data"][".dockerconfigjson"],
            "eyJtYXNrIjoiKipTT1BTKioifQ=="
        );
        assert!(objects[1].get("sops").is_none());
        assert_eq!(objects[2]["data"]["kept"], "visible");
    }
}
