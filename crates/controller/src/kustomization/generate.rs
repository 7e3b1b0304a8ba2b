//! The `kustomization.yaml` a Kustomization's path is built from, as Flux prepares it: generated
//! when the path has none (listing every manifest below it), then given the spec-level
//! overrides (`targetNamespace`, `namePrefix`, `nameSuffix`, `patches`, `components`,
//! `images`, `buildMetadata`).
//!
//! The result is written as JSON, which every YAML parser (ours and kustomize's) reads as
//! YAML, so no formatting of ours leaks into the build.

use ferroflux_api::KustomizationSpec;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// File names kustomize recognises, in its order of preference.
pub const KUSTOMIZATION_FILES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Why the kustomization could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// `spec.path` does not exist in the artifact.
    #[error("kustomization path not found: {0}")]
    PathNotFound(String),
    /// A YAML file of the directory, read to generate a kustomization.yaml, does not parse.
    #[error("failed to decode Kubernetes YAML from {path}: {reason}")]
    Decode {
        /// The file, relative to the artifact's root.
        path: String,
        /// The YAML parser's message.
        reason: String,
    },
    /// The directory's own kustomization file does not parse or is not a map.
    #[error("{file}: {reason}")]
    Kustomization {
        /// The kustomization file, relative to the artifact's root.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `spec.components` entry that points outside the artifact.
    #[error("component path '{0}' must be local and relative")]
    Component(String),
    /// Reading or writing a file of the artifact failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> GenerateError + '_ {
    move |source| GenerateError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Prepares the kustomization at `dir` for `spec` and returns the file it wrote.
///
/// `dir` must exist inside the unpacked artifact; symlinked directories are not followed when
/// scanning for manifests.
pub fn prepare(dir: &Path, spec: &KustomizationSpec) -> Result<PathBuf, GenerateError> {
    if !dir.is_dir() {
        return Err(GenerateError::PathNotFound(dir.display().to_string()));
    }
    let (mut kus, file, existing) = match existing_kustomization(dir) {
        Some(file) => {
            let text = std::fs::read_to_string(&file).map_err(io_err(&file))?;
            let value: Value = if text.trim().is_empty() {
                json!({})
            } else {
                serde_saphyr::from_str(&text).map_err(|e| GenerateError::Kustomization {
                    file: file.display().to_string(),
                    reason: e.to_string(),
                })?
            };
            if !value.is_object() {
                return Err(GenerateError::Kustomization {
                    file: file.display().to_string(),
                    reason: "not a map".into(),
                });
            }
            (value, file, true)
        }
        None => (generated(dir)?, dir.join("kustomization.yaml"), false),
    };
    let Some(obj) = kus.as_object_mut() else {
        return Err(GenerateError::Kustomization {
            file: file.display().to_string(),
            reason: "not a map".into(),
        });
    };
    obj.entry("apiVersion")
        .or_insert_with(|| json!("kustomize.config.k8s.io/v1beta1"));
    obj.entry("kind").or_insert_with(|| json!("Kustomization"));
    let has_resources = obj
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if existing && !has_resources {
        // kustomize refuses an empty kustomization; Flux keeps such paths buildable.
        obj.insert("buildMetadata".into(), json!(["originAnnotations"]));
    }
    apply_overrides(obj, dir, spec)?;
    let text = serde_json::to_string_pretty(&kus).unwrap_or_default();
    std::fs::write(&file, text).map_err(io_err(&file))?;
    Ok(file)
}

fn existing_kustomization(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

fn generated(dir: &Path) -> Result<Value, GenerateError> {
    let mut resources = Vec::new();
    scan(dir, dir, &mut resources)?;
    if resources.is_empty() {
        // An empty kustomization fails to build; Flux gives it a placeholder namespace.
        return Ok(json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": "_placeholder",
        }));
    }
    Ok(json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }))
}

/// Walks `dir` in lexical order: a sub-directory holding a kustomization is one resource and is
/// not descended into; every `.yaml`/`.yml` file must hold Kubernetes objects.
fn scan(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), GenerateError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(io_err(&path))?;
        if file_type.is_symlink() {
            continue;
        }
        let relative = path.strip_prefix(base).unwrap_or(&path);
        let resource = format!("./{}", relative.display());
        if file_type.is_dir() {
            if existing_kustomization(&path).is_some() {
                out.push(resource);
            } else {
                scan(base, &path, out)?;
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str());
        if !matches!(ext, Some("yaml" | "yml")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
        check_manifests(&text).map_err(|reason| GenerateError::Decode {
            path: path.display().to_string(),
            reason,
        })?;
        out.push(resource);
    }
    Ok(())
}

fn check_manifests(text: &str) -> Result<(), String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    for (i, doc) in docs.iter().enumerate() {
        match doc {
            Value::Null => {}
            Value::Object(m) => {
                if !m.contains_key("kind") || !m.contains_key("apiVersion") {
                    return Err(format!("document {} is missing apiVersion or kind", i + 1));
                }
            }
            _ => return Err(format!("document {} is not a Kubernetes object", i + 1)),
        }
    }
    Ok(())
}

fn apply_overrides(
    kus: &mut Map<String, Value>,
    dir: &Path,
    spec: &KustomizationSpec,
) -> Result<(), GenerateError> {
    if let Some(ns) = &spec.target_namespace {
        kus.insert("namespace".into(), json!(ns));
    }
    if let Some(prefix) = &spec.name_prefix {
        kus.insert("namePrefix".into(), json!(prefix));
    }
    if let Some(suffix) = &spec.name_suffix {
        kus.insert("nameSuffix".into(), json!(suffix));
    }
    for patch in spec.patches.iter().flatten() {
        let mut entry = Map::new();
        entry.insert("patch".into(), json!(patch.patch));
        if let Some(target) = &patch.target {
            entry.insert(
                "target".into(),
                serde_json::to_value(target).unwrap_or_default(),
            );
        }
        push(kus, "patches", Value::Object(entry));
    }
    let ignore_missing = spec.ignore_missing_components.unwrap_or(false);
    for component in spec.components.iter().flatten() {
        if !is_local_relative(component) {
            return Err(GenerateError::Component(component.clone()));
        }
        if ignore_missing && !dir.join(component).exists() {
            continue;
        }
        push(kus, "components", json!(component));
    }
    for image in spec.images.iter().flatten() {
        let value = serde_json::to_value(image).unwrap_or_default();
        let images = kus
            .entry("images")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = images.as_array_mut() {
            match list
                .iter_mut()
                .find(|i| i.get("name").and_then(Value::as_str) == Some(&image.name))
            {
                Some(existing) => *existing = value,
                None => list.push(value),
            }
        }
    }
    if let Some(metadata) = &spec.build_metadata
        && !metadata.is_empty()
    {
        kus.insert(
            "buildMetadata".into(),
            serde_json::to_value(metadata).unwrap_or_default(),
        );
    }
    Ok(())
}

fn push(kus: &mut Map<String, Value>, field: &str, value: Value) {
    let list = kus.entry(field).or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut() {
        list.push(value);
    }
}

/// A relative path on disk, not a remote base (`https://`, `git@`, …). `..` is allowed: the
/// build itself refuses anything outside the artifact.
fn is_local_relative(path: &str) -> bool {
    const REMOTE: &[&str] = &["https://", "http://", "ssh://", "git::", "git@"];
    !path.is_empty()
        && !Path::new(path).is_absolute()
        && !REMOTE.iter().any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests;
