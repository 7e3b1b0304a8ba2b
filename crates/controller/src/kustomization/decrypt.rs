//! `spec.decryption`: SOPS with the age keys of the Kustomization's key Secret.
//!
//! Before the build, the files kustomize generators and patches read are decrypted in place in
//! the private working copy of the artifact (as Flux does), following only the kustomizations
//! the build reaches, so files encrypted for another cluster are never touched. After the build,
//! objects that are sops documents and sops files inside Secret `data` are decrypted.

use ferroflux_sops::{AgeIdentities, Decryptor, Format};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::generate::KUSTOMIZATION_FILES;

/// Builds the decryptor from the key Secret's entries (`*.agekey`).
pub fn decryptor<'a>(
    secret: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Decryptor, String> {
    let ids = AgeIdentities::from_secret_entries(secret, entries).map_err(|e| e.to_string())?;
    Ok(Decryptor::new(ids).verify_mac(false))
}

/// Decrypts, in place, every sops-encrypted file that the kustomization at `dir` (and the
/// kustomizations it includes) reads through generators and patches. `root` bounds the walk.
pub fn decrypt_sources(decryptor: &Decryptor, root: &Path, dir: &Path) -> Result<(), String> {
    let mut visited = BTreeSet::new();
    walk(decryptor, root, dir, &mut visited)
}

fn walk(
    decryptor: &Decryptor,
    root: &Path,
    dir: &Path,
    visited: &mut BTreeSet<PathBuf>,
) -> Result<(), String> {
    if !visited.insert(dir.to_path_buf()) {
        return Ok(());
    }
    let Some(file) = KUSTOMIZATION_FILES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
    else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", rel(root, &file)))?;
    // A kustomization that does not parse is the build's to report, with its own message.
    let Ok(kus) = serde_saphyr::from_str::<Value>(&text) else {
        return Ok(());
    };
    let strings = |field: &str| -> Vec<String> {
        kus.get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    for generator in ["configMapGenerator", "secretGenerator"] {
        for g in kus
            .get(generator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let list = |f: &str| -> Vec<String> {
                g.get(f)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for entry in list("files") {
                // `key=path` or `path`; the key names the format sops used.
                let (key, path) = entry
                    .split_once('=')
                    .unwrap_or((entry.as_str(), entry.as_str()));
                decrypt_file(decryptor, root, &dir.join(path), Format::from_path(key))?;
            }
            let mut envs = list("envs");
            if let Some(env) = g.get("env").and_then(Value::as_str) {
                envs.push(env.to_string());
            }
            for env in envs {
                let format = match Format::from_path(&env) {
                    Format::Binary => Format::Dotenv,
                    other => other,
                };
                decrypt_file(decryptor, root, &dir.join(env), format)?;
            }
        }
    }
    for patch in kus
        .get("patches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(path) = patch.get("path").and_then(Value::as_str) {
            decrypt_file(decryptor, root, &dir.join(path), Format::from_path(path))?;
        }
    }
    for path in strings("patchesStrategicMerge") {
        if !path.contains('\n') {
            decrypt_file(decryptor, root, &dir.join(&path), Format::from_path(&path))?;
        }
    }
    for field in ["resources", "bases", "components"] {
        for entry in strings(field) {
            let target = dir.join(&entry);
            if let Ok(canonical) = target.canonicalize()
                && canonical.starts_with(root)
                && canonical.is_dir()
            {
                walk(decryptor, root, &canonical, visited)?;
            }
        }
    }
    Ok(())
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn decrypt_file(
    decryptor: &Decryptor,
    root: &Path,
    path: &Path,
    format: Format,
) -> Result<(), String> {
    // Missing files and files outside the artifact are the build's to report.
    let Ok(canonical) = path.canonicalize() else {
        return Ok(());
    };
    if !canonical.starts_with(root) || !canonical.is_file() {
        return Ok(());
    }
    let subject = rel(root, &canonical);
    let data = std::fs::read(&canonical).map_err(|e| format!("{subject}: {e}"))?;
    if let Some(plain) = decryptor
        .decrypt_generator_input(&subject, &data, format)
        .map_err(|e| e.to_string())?
    {
        std::fs::write(&canonical, plain).map_err(|e| format!("{subject}: {e}"))?;
    }
    Ok(())
}

/// Decrypts the objects of a build: whole sops documents and sops files in Secret `data`.
pub fn decrypt_objects(decryptor: &Decryptor, objects: &mut [Value]) -> Result<(), String> {
    for obj in objects {
        decryptor.decrypt_object(obj).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> Vec<u8> {
        let path = format!(
            "{}/../sops/tests/fixtures/{rel}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(path).unwrap()
    }

    fn key_entries(file: &str) -> Vec<(String, Vec<u8>)> {
        vec![(
            format!("{file}.agekey"),
            fixture(&format!("keys/{file}.txt")),
        )]
    }

    fn decryptor_for(file: &str) -> Decryptor {
        let entries = key_entries(file);
        decryptor(
            "Secret flux-system/sops-age",
            entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
        )
        .unwrap()
    }

    /// Files a build reaches are decrypted; a file encrypted for another cluster, next to them
    /// but not used by this build, is left alone.
    #[test]
    fn decrypts_generator_inputs_the_build_reaches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("apps/base")).unwrap();
        std::fs::create_dir_all(root.join("apps/production")).unwrap();
        std::fs::write(root.join("apps/staging.kustomization.yaml"), "not: used").unwrap();
        std::fs::write(
            root.join("apps/base/kustomization.yaml"),
            "secretGenerator:\n- name: env\n  envs:\n  - env.env\n",
        )
        .unwrap();
        std::fs::write(root.join("apps/base/env.env"), fixture("envs/env.env")).unwrap();
        std::fs::write(
            root.join("apps/production/kustomization.yaml"),
            "resources:\n- ../base\n",
        )
        .unwrap();
        std::fs::write(root.join("apps/other.env"), fixture("global/secret.yaml")).unwrap();
        let d = decryptor_for("age");
        decrypt_sources(&d, &root, &root.join("apps/production")).unwrap();
        let plain = std::fs::read_to_string(root.join("apps/base/env.env")).unwrap();
        assert!(!plain.contains("ENC["), "{plain}");
        assert!(plain.starts_with("key="), "{plain}");
        assert_eq!(
            std::fs::read(root.join("apps/other.env")).unwrap(),
            fixture("global/secret.yaml")
        );
    }

    #[test]
    fn wrong_key_names_the_recipients_and_leaves_objects_alone() {
        let text = String::from_utf8(fixture("algorithms/age.yaml")).unwrap();
        let original: Value = serde_saphyr::from_str(&text).unwrap();
        let mut objects = vec![original.clone()];
        let err = decrypt_objects(&decryptor_for("age-global"), &mut objects).unwrap_err();
        assert!(
            err.contains("age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29"),
            "{err}"
        );
        assert_eq!(objects[0], original);
        decrypt_objects(&decryptor_for("age"), &mut objects).unwrap();
        assert!(objects[0].get("sops").is_none());
        assert!(!objects[0].to_string().contains("ENC["));
    }

    #[test]
    fn a_key_secret_without_age_keys_is_refused() {
        let err = decryptor("Secret flux-system/keys", [("token", b"x".as_slice())]).unwrap_err();
        assert!(
            err.contains("the key Secret has no *.agekey entry"),
            "{err}"
        );
    }
}
