//! Helm's Secret storage driver (`pkg/storage/driver/secrets.go` and `storage.go`): one Secret
//! `sh.helm.release.v1.<name>.v<version>` of type `helm.sh/release.v1` per revision, labelled
//! `name`, `owner=helm`, `status`, `version` (plus `createdAt` / `modifiedAt`), holding
//! `release` = base64(gzip(JSON)). History pruning keeps the last deployed revision, as
//! Helm's `removeLeastRecent` does; a release left in a pending state is unlocked as
//! helm-controller does.
//!
//! Unlike Helm, which silently skips a Secret it cannot decode when it lists a history (and
//! then may write a revision number that is taken), every read here fails with an error
//! naming the Secret: nothing is written over a history that cannot be read.

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine as _;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use crate::release::{Release, Status};

/// The Secret type Helm gives release records.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";
/// The labels Helm sets itself (a user's release labels may not use them).
pub const SYSTEM_LABELS: &[&str] = &[
    "name",
    "owner",
    "status",
    "version",
    "createdAt",
    "modifiedAt",
];
/// Decompressed records larger than this are refused (a Secret holds at most 1 MiB, so only a
/// corrupted or hostile record is ever near it).
pub const MAX_RECORD_SIZE: u64 = 64 << 20;

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// Why reading or writing release storage failed. Every message names the Secret (or the
/// release and namespace) involved.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A storage Secret cannot be decoded; nothing was changed.
    #[error(
        "release storage Secret {namespace}/{secret} is corrupted: {reason}; delete or repair it (nothing was changed)"
    )]
    Corrupt {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        secret: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The revision to create exists already (Helm's `release: already exists`).
    #[error("release: already exists (Secret {namespace}/{secret})")]
    Exists {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        secret: String,
    },
    /// The API server refused or could not be reached.
    #[error("{op} release storage in namespace {namespace}: {message}")]
    Api {
        /// What was being done (`list`, `create sh.helm.release.v1.web.v2`, ...).
        op: String,
        /// The storage namespace.
        namespace: String,
        /// The API server's message.
        message: String,
    },
    /// The record cannot be encoded (never expected: it is plain JSON).
    #[error("encode release {name}.v{version}: {reason}")]
    Encode {
        /// The release name.
        name: String,
        /// The revision.
        version: i64,
        /// Why.
        reason: String,
    },
}

/// The storage key of a revision (Helm's `makeKey`).
pub fn secret_name(release: &str, version: i64) -> String {
    format!("sh.helm.release.v1.{release}.v{version}")
}

/// JSON, gzip (best compression) and base64, as Helm's `encodeRelease`.
pub fn encode_release(rel: &Release) -> Result<String, StorageError> {
    let encode_err = |reason: String| StorageError::Encode {
        name: rel.name.clone(),
        version: rel.version,
        reason,
    };
    let json = serde_json::to_vec(rel).map_err(|e| encode_err(e.to_string()))?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    std::io::Write::write_all(&mut gz, &json).map_err(|e| encode_err(e.to_string()))?;
    let bytes = gz.finish().map_err(|e| encode_err(e.to_string()))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The inverse of [`encode_release`]; like Helm it also reads records stored before
/// compression was introduced (no gzip header). The error says what is wrong, without the
/// Secret's name (the caller adds it).
pub fn decode_release(data: &[u8]) -> Result<Release, String> {
    let text: Vec<u8> = data
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| format!("data.release is not base64: {e}"))?;
    let json = if raw.len() > 3 && raw[..3] == GZIP_MAGIC {
        let mut out = Vec::new();
        GzDecoder::new(raw.as_slice())
            .take(MAX_RECORD_SIZE + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("data.release is not valid gzip: {e}"))?;
        if out.len() as u64 > MAX_RECORD_SIZE {
            return Err(format!(
                "data.release decompresses to more than {MAX_RECORD_SIZE} bytes"
            ));
        }
        out
    } else {
        raw
    };
    serde_json::from_slice(&json).map_err(|e| format!("data.release is not a Helm release: {e}"))
}

/// The release records of one storage namespace (Helm's `--namespace` / Flux's
/// `storageNamespace`).
#[derive(Clone)]
pub struct Storage {
    secrets: Api<Secret>,
    namespace: String,
}

fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

impl Storage {
    /// The records in `namespace`.
    pub fn new(client: kube::Client, namespace: &str) -> Storage {
        Storage {
            secrets: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
        }
    }

    /// The storage namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn api_err(&self, op: String, e: &kube::Error) -> StorageError {
        StorageError::Api {
            op,
            namespace: self.namespace.clone(),
            message: api_message(e),
        }
    }

    fn decode_secret(&self, s: &Secret) -> Result<Release, StorageError> {
        let name = s.metadata.name.clone().unwrap_or_default();
        let corrupt = |reason: String| StorageError::Corrupt {
            namespace: self.namespace.clone(),
            secret: name.clone(),
            reason,
        };
        let data = s
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .ok_or_else(|| corrupt("it has no data.release".into()))?;
        let mut rel = decode_release(&data.0).map_err(corrupt)?;
        rel.labels = s.metadata.labels.clone().unwrap_or_default();
        Ok(rel)
    }

    /// One revision, `None` when it does not exist.
    pub async fn get(&self, name: &str, version: i64) -> Result<Option<Release>, StorageError> {
        let key = secret_name(name, version);
        let found = self
            .secrets
            .get_opt(&key)
            .await
            .map_err(|e| self.api_err(format!("get {key} from"), &e))?;
        found.map(|s| self.decode_secret(&s)).transpose()
    }

    async fn query(&self, selector: &str) -> Result<Vec<Release>, StorageError> {
        let list = self
            .secrets
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| self.api_err(format!("list ({selector})"), &e))?;
        let mut out = list
            .items
            .iter()
            .map(|s| self.decode_secret(s))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by_key(|r| r.version);
        Ok(out)
    }

    /// Every revision of `name`, oldest first (empty when the release does not exist).
    pub async fn history(&self, name: &str) -> Result<Vec<Release>, StorageError> {
        self.query(&format!("owner=helm,name={name}")).await
    }

    /// The latest revision of every release of the namespace (what `helm list --all` shows),
    /// by name.
    pub async fn list(&self) -> Result<Vec<Release>, StorageError> {
        let all = self.query("owner=helm").await?;
        let mut latest: BTreeMap<String, Release> = BTreeMap::new();
        for r in all {
            match latest.get(&r.name) {
                Some(cur) if cur.version >= r.version => {}
                _ => {
                    latest.insert(r.name.clone(), r);
                }
            }
        }
        Ok(latest.into_values().collect())
    }

    /// The latest revision (Helm's `Last`).
    pub async fn last(&self, name: &str) -> Result<Option<Release>, StorageError> {
        Ok(self.history(name).await?.pop())
    }

    /// The latest revision whose status is `deployed` (Helm's `Deployed`).
    pub async fn deployed(&self, name: &str) -> Result<Option<Release>, StorageError> {
        Ok(self
            .history(name)
            .await?
            .into_iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed))
    }

    fn secret_of(&self, rel: &Release, time_label: &str) -> Result<Secret, StorageError> {
        let mut labels = rel.labels.clone();
        labels.insert(
            time_label.to_string(),
            jiff::Timestamp::now().as_second().to_string(),
        );
        labels.insert("name".into(), rel.name.clone());
        labels.insert("owner".into(), "helm".into());
        labels.insert("status".into(), rel.info.status.as_str().into());
        labels.insert("version".into(), rel.version.to_string());
        let data = encode_release(rel)?;
        Ok(Secret {
            metadata: ObjectMeta {
                name: Some(rel.key()),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(BTreeMap::from([(
                "release".to_string(),
                ByteString(data.into_bytes()),
            )])),
            ..Default::default()
        })
    }

    /// Stores a new revision. With `max_history` > 0 the oldest revisions are deleted first so
    /// that at most `max_history` remain with the new one, never the last deployed one
    /// (Helm's `Storage.Create` with `MaxHistory`).
    pub async fn create(&self, rel: &Release, max_history: usize) -> Result<(), StorageError> {
        if max_history > 0 {
            self.remove_least_recent(&rel.name, max_history - 1).await?;
        }
        let secret = self.secret_of(rel, "createdAt")?;
        match self.secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Err(StorageError::Exists {
                namespace: self.namespace.clone(),
                secret: rel.key(),
            }),
            Err(e) => Err(self.api_err(format!("create {}", rel.key()), &e)),
        }
    }

    /// Writes a revision over its stored record (Helm's `Update`: an unconditional replace).
    pub async fn update(&self, rel: &Release) -> Result<(), StorageError> {
        let secret = self.secret_of(rel, "modifiedAt")?;
        let key = rel.key();
        self.secrets
            .replace(&key, &PostParams::default(), &secret)
            .await
            .map(|_| ())
            .map_err(|e| self.api_err(format!("update {key} in"), &e))
    }

    /// Deletes one revision (gone already is fine).
    pub async fn delete(&self, name: &str, version: i64) -> Result<(), StorageError> {
        let key = secret_name(name, version);
        match self.secrets.delete(&key, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(self.api_err(format!("delete {key} from"), &e)),
        }
    }

    /// Deletes the oldest revisions until `keep` remain, sparing the last deployed one.
    async fn remove_least_recent(&self, name: &str, keep: usize) -> Result<(), StorageError> {
        let history = self.history(name).await?;
        if history.len() <= keep {
            return Ok(());
        }
        let last_deployed = history
            .iter()
            .rev()
            .find(|r| r.info.status == Status::Deployed)
            .map(|r| r.version);
        let mut remaining = history.len();
        for r in &history {
            if remaining == keep {
                break;
            }
            if Some(r.version) == last_deployed {
                continue;
            }
            self.delete(name, r.version).await?;
            remaining -= 1;
        }
        Ok(())
    }

    /// Unlocks a release whose latest revision is stuck in a pending state (an operation that
    /// was killed or timed out), as helm-controller does: that revision becomes `failed` with
    /// the description `Release unlocked from stale '<status>' state`. Returns the revision
    /// it unlocked, `None` when nothing was pending.
    pub async fn unlock(&self, name: &str) -> Result<Option<Release>, StorageError> {
        let Some(mut last) = self.last(name).await? else {
            return Ok(None);
        };
        let status = last.info.status;
        if !status.is_pending() {
            return Ok(None);
        }
        last.info.status = Status::Failed;
        last.info.description = format!("Release unlocked from stale '{status}' state");
        self.update(&last).await?;
        Ok(Some(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_and_uncompressed_records() {
        let rel = Release {
            name: "web".into(),
            version: 2,
            namespace: "apps".into(),
            manifest: "---\n# Source: c/templates/a.yaml\nkind: A\n".into(),
            ..Default::default()
        };
        let enc = encode_release(&rel).unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&enc)
            .unwrap();
        assert_eq!(&raw[..3], &GZIP_MAGIC);
        assert_eq!(decode_release(enc.as_bytes()).unwrap(), rel);
        // Records written before Helm compressed them: base64 of the JSON alone.
        let plain =
            base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&rel).unwrap());
        assert_eq!(decode_release(plain.as_bytes()).unwrap(), rel);
    }

    #[test]
    fn corrupt_records_say_what_is_wrong() {
        assert!(
            decode_release(b"%%%")
                .unwrap_err()
                .starts_with("data.release is not base64")
        );
        let b64 = base64::engine::general_purpose::STANDARD;
        let bad_gzip = b64.encode([0x1f, 0x8b, 0x08, 0, 1, 2, 3]);
        assert!(
            decode_release(bad_gzip.as_bytes())
                .unwrap_err()
                .starts_with("data.release is not valid gzip")
        );
        let not_json = b64.encode(b"hello");
        assert!(
            decode_release(not_json.as_bytes())
                .unwrap_err()
                .starts_with("data.release is not a Helm release")
        );
    }

    #[test]
    fn keys_are_helms() {
        assert_eq!(secret_name("web", 12), "sh.helm.release.v1.web.v12");
    }
}
