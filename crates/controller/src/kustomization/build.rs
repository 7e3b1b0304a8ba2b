//! The build half of a Kustomization's pipeline, shared by the reconciler and the
//! `build`/`diff kustomization` commands: a directory inside an unpacked artifact in, the
//! objects Flux would apply out.
//!
//! kustomization.yaml prepared (generated where missing, spec overrides) → generator and patch
//! inputs decrypted → kustomize build (files anywhere in the artifact, unsorted, as Flux builds)
//! → owner labels and `commonMetadata` → objects decrypted → `postBuild` substitution (with
//! `substituteFrom` read from the cluster).
//!
//! The directory is modified in place (the generated kustomization.yaml, decrypted files): it
//! must be a private copy, never a user's working tree.

use super::decrypt;
use super::generate;
pub use super::postbuild::Strictness;
use super::postbuild::{self, Vars};
use ferroflux_api::Kustomization;
use ferroflux_api::kustomization::{Decryption, PostBuild, SubstituteKind};
pub use ferroflux_kustomize::BuildOutput;
use ferroflux_kustomize::{LoadRestrictions, Reorder};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::Api;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Why a build failed. Messages are the ones Flux puts in the Ready condition.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `spec.path` does not exist in the artifact.
    #[error("kustomization path not found: {0}")]
    PathNotFound(String),
    /// `spec.path` climbs out of the artifact: a configuration error retrying cannot fix.
    #[error("kustomization path not found: {0} leaves the artifact")]
    PathOutside(String),
    /// Generating, building, decrypting or substituting failed.
    #[error("{0}")]
    Build(String),
}

impl BuildError {
    /// The Ready reason Flux reports for this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            BuildError::PathNotFound(_) | BuildError::PathOutside(_) => {
                ferroflux_api::conditions::reason::ARTIFACT_FAILED
            }
            BuildError::Build(_) => ferroflux_api::conditions::reason::BUILD_FAILED,
        }
    }

    /// True for configuration errors that retrying cannot fix.
    pub fn is_stalling(&self) -> bool {
        matches!(self, BuildError::PathOutside(_))
    }
}

impl crate::step::Reasoned for BuildError {
    fn reason(&self) -> &'static str {
        BuildError::reason(self)
    }
    fn is_stalling(&self) -> bool {
        BuildError::is_stalling(self)
    }
}

/// What the build may read from the cluster.
#[derive(Clone, Copy)]
pub enum Cluster<'a> {
    /// The decryption keys and `substituteFrom` objects are read with this client, in the
    /// Kustomization's namespace.
    Client(&'a kube::Client),
    /// No cluster (`build --dry-run`): `substituteFrom` is skipped and nothing is decrypted, as
    /// Flux's dry-run does.
    Offline,
}

/// The directory `spec_path` names inside `root`: missing or leaving the artifact is an error.
pub fn resolve_path(root: &Path, spec_path: Option<&str>) -> Result<PathBuf, BuildError> {
    let spec_path = spec_path.unwrap_or("./");
    let dir =
        confined(root, spec_path).ok_or_else(|| BuildError::PathOutside(spec_path.to_string()))?;
    if !dir.is_dir() {
        return Err(BuildError::PathNotFound(spec_path.to_string()));
    }
    Ok(dir)
}

/// `path` under `root`, or None when it would leave it (`..` never climbs above `root`).
pub fn confined(root: &Path, path: &str) -> Option<PathBuf> {
    let mut out = root.to_path_buf();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir => {
                if out == root {
                    return None;
                }
                out.pop();
            }
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Builds the kustomization at `dir` (inside the writable artifact copy `root`) for `ks`, and
/// returns the objects Flux would apply, in build order. A variable without a value or a
/// default fails the build (strict substitution, the controller's default).
pub async fn build(
    ks: &Kustomization,
    root: &Path,
    dir: &Path,
    cluster: Cluster<'_>,
) -> Result<Vec<Value>, BuildError> {
    build_with(ks, root, dir, cluster, Strictness::Strict).await
}

/// [`build`], choosing what an unset variable does.
///
/// The cluster reads (decryption keys, `substituteFrom`) are awaited here; the file and CPU
/// work between them (generating, decrypting, kustomize, substituting) runs on tokio's blocking
/// pool, in the same order, so a large build does not hold up other reconciles.
pub async fn build_with(
    ks: &Kustomization,
    root: &Path,
    dir: &Path,
    cluster: Cluster<'_>,
    strictness: Strictness,
) -> Result<Vec<Value>, BuildError> {
    let output = build_unsubstituted(ks, root, dir, cluster).await?;
    substitute(ks, output, cluster, strictness).await
}

/// [`build_with`] up to `postBuild` substitution: kustomization.yaml prepared, decrypted,
/// kustomize built, owner labels and `commonMetadata` set. What it returns depends on `ks`'s
/// name, namespace and spec other than `postBuild`, and on the files: `fleet diff` shares it
/// between clusters that build the same path and substitute different variables.
pub async fn build_unsubstituted(
    ks: &Kustomization,
    root: &Path,
    dir: &Path,
    cluster: Cluster<'_>,
) -> Result<BuildOutput, BuildError> {
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let name = ks.name_any();
    let spec = ks.spec.clone();
    let (root, dir) = (root.to_path_buf(), dir.to_path_buf());
    let (root, dir) = off_executor(move || {
        let root = root
            .canonicalize()
            .map_err(|e| failed(format!("{}: {e}", root.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(|_| BuildError::PathNotFound(dir.display().to_string()))?;
        if !dir.starts_with(&root) {
            return Err(BuildError::PathOutside(dir.display().to_string()));
        }
        generate::prepare(&dir, &spec).map_err(|e| failed(e.to_string()))?;
        Ok((root, dir))
    })
    .await?;

    let decryptor = match (&ks.spec.decryption, cluster) {
        (Some(decryption), Cluster::Client(client)) => Some(
            load_decryptor(client, &ns, decryption)
                .await
                .map_err(failed)?,
        ),
        _ => None,
    };
    let common_metadata = ks.spec.common_metadata.clone();
    let (owner, owner_ns, keys) = (name, ns.clone(), decryptor);
    off_executor(move || {
        if let Some(d) = &keys {
            decrypt::decrypt_sources(d, &root, &dir)
                .map_err(|m| failed(format!("decryption failed: {m}")))?;
        }
        let builder = ferroflux_kustomize::Build::new(&root)
            .map_err(|e| failed(e.to_string()))?
            .with_load_restrictions(LoadRestrictions::None)
            .with_reorder(Reorder::None);
        let relative = dir.strip_prefix(&root).unwrap_or(Path::new(""));
        let mut output = builder
            .build_with_warnings(relative)
            .map_err(|e| failed(e.to_string()))?;
        postbuild::set_owner_metadata(
            &mut output.objects,
            &owner,
            &owner_ns,
            common_metadata.as_ref(),
        );
        if let Some(d) = &keys {
            decrypt::decrypt_objects(d, &mut output.objects)
                .map_err(|m| failed(format!("decryption failed: {m}")))?;
        }
        Ok(output)
    })
    .await
}

/// The last step of [`build_with`]: `ks`'s `postBuild` substitution of `output`, its
/// `substituteFrom` read with `cluster` (offline: the inline `substitute` only).
pub async fn substitute(
    ks: &Kustomization,
    output: BuildOutput,
    cluster: Cluster<'_>,
    strictness: Strictness,
) -> Result<Vec<Value>, BuildError> {
    let Some(post) = &ks.spec.post_build else {
        return Ok(output.objects);
    };
    let ns = ks.namespace().unwrap_or_else(|| "default".into());
    let vars = match cluster {
        Cluster::Client(client) => load_vars(client, &ns, post).await.map_err(failed)?,
        Cluster::Offline => inline_vars(post),
    };
    let strategy = post.substitute_strategy;
    off_executor(move || {
        let mut objects = output.objects;
        postbuild::substitute_all(
            &mut objects,
            &output.quoted_placeholders,
            &vars,
            strategy,
            strictness,
        )
        .map_err(failed)?;
        Ok(objects)
    })
    .await
}

/// A build failure with this message.
fn failed(message: String) -> BuildError {
    BuildError::Build(message)
}

/// Runs a blocking part of the build on tokio's blocking pool.
async fn off_executor<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BuildError> + Send + 'static,
) -> Result<T, BuildError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| failed(format!("the build task failed: {e}")))?
}

/// The decryptor of `spec.decryption`: the age keys of its Secret.
async fn load_decryptor(
    client: &kube::Client,
    ns: &str,
    decryption: &Decryption,
) -> Result<ferroflux_sops::Decryptor, String> {
    let Some(secret_ref) = &decryption.secret_ref else {
        return Err("spec.decryption: a secretRef with age keys is required (cloud KMS identities are not supported yet)".into());
    };
    let what = format!("Secret {ns}/{}", secret_ref.name);
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret = api
        .get_opt(&secret_ref.name)
        .await
        .map_err(|e| format!("decryption: unable to read {what}: {e}"))?
        .ok_or_else(|| format!("decryption: {what} not found"))?;
    let data = secret.data.unwrap_or_default();
    decrypt::decryptor(
        &what,
        data.iter().map(|(k, v)| (k.as_str(), v.0.as_slice())),
    )
}

/// The inline `substitute` map alone, newlines removed as Flux does.
fn inline_vars(post: &PostBuild) -> Vars {
    post.substitute
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.replace('\n', "")))
        .collect()
}

/// Variables from `substituteFrom` (later entries win) then the inline `substitute` (which
/// wins over all), newlines removed as Flux does. `debug kustomization --show-vars` shows them.
pub async fn load_vars(client: &kube::Client, ns: &str, post: &PostBuild) -> Result<Vars, String> {
    let mut vars = Vars::new();
    for reference in post.substitute_from.iter().flatten() {
        let optional = reference.optional.unwrap_or(false);
        match reference.kind {
            SubstituteKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
                match api.get_opt(&reference.name).await {
                    Ok(Some(cm)) => {
                        for (k, v) in cm.data.unwrap_or_default() {
                            vars.insert(k, v.replace('\n', ""));
                        }
                    }
                    Ok(None) if optional => {}
                    Ok(None) => {
                        return Err(format!(
                            "substitute from 'ConfigMap/{}' error: configmaps \"{}\" not found",
                            reference.name, reference.name
                        ));
                    }
                    Err(e) => {
                        return Err(format!(
                            "substitute from 'ConfigMap/{}' error: {e}",
                            reference.name
                        ));
                    }
                }
            }
            SubstituteKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), ns);
                match api.get_opt(&reference.name).await {
                    Ok(Some(secret)) => {
                        for (k, v) in secret.data.unwrap_or_default() {
                            let text = String::from_utf8_lossy(&v.0).replace('\n', "");
                            vars.insert(k, text);
                        }
                    }
                    Ok(None) if optional => {}
                    Ok(None) => {
                        return Err(format!(
                            "substitute from 'Secret/{}' error: secrets \"{}\" not found",
                            reference.name, reference.name
                        ));
                    }
                    Err(e) => {
                        return Err(format!(
                            "substitute from 'Secret/{}' error: {e}",
                            reference.name
                        ));
                    }
                }
            }
        }
    }
    vars.extend(inline_vars(post));
    Ok(vars)
}
