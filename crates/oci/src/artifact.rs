//! Flux's OCI artifact: an OCI image manifest whose config is `{}` typed
//! `application/vnd.cncf.flux.config.v1+json` and whose one layer is the tar+gzip of a
//! directory (or one file) typed `application/vnd.cncf.flux.content.v1.tar+gzip`, annotated
//! with `org.opencontainers.image.{created,source,revision}`. This module packs and pushes such
//! artifacts, resolves a reference to its manifest (following an index), and pulls a layer.
//!
//! Packing is reproducible: entries sorted by name, depth first, mtime 0, uid/gid 0, modes
//! 0644/0755, a gzip header without a timestamp; so the same tree gives the same layer digest
//! and pushing it again uploads nothing. Symlinks are left out (as flux's `build artifact`
//! keeps regular files only) and reported.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::manifest::{
    ANNOTATION_CREATED, ANNOTATION_REVISION, ANNOTATION_SOURCE, DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST, Descriptor, FLUX_CONFIG, FLUX_CONTENT, Index, Manifest, OCI_INDEX,
    OCI_MANIFEST, hex_digest,
};
use crate::reference::Reference;

/// Default bound on a downloaded layer (the same as the Git source's artifact bound).
pub const DEFAULT_MAX_LAYER_SIZE: u64 = 1024 * 1024 * 1024;

/// What [`pack_dir`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Regular files packed.
    pub files: usize,
    /// Their total size.
    pub bytes: u64,
    /// Symlinks and special files left out (relative paths).
    pub skipped: Vec<String>,
}

/// Decides which paths are left out: `(relative path, is_dir) -> excluded`.
pub type Exclude<'a> = &'a dyn Fn(&Path, bool) -> bool;

/// Packs `path` (a directory: its content; a file: that file alone) as a reproducible tar+gzip
/// into `out`.
pub fn pack_dir(path: &Path, exclude: Exclude<'_>, out: impl Write) -> Result<PackStats> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(out, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut stats = PackStats::default();
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() {
        let name = path
            .file_name()
            .map(PathBuf::from)
            .ok_or_else(|| Error::io(path, std::io::ErrorKind::InvalidInput.into()))?;
        append_file(&mut tar, path, &name, &meta, &mut stats)?;
    } else {
        walk(&mut tar, path, Path::new(""), exclude, &mut stats)?;
    }
    let gz = tar.into_inner().map_err(|e| Error::io(path, e))?;
    let mut out = gz.finish().map_err(|e| Error::io(path, e))?;
    out.flush().map_err(|e| Error::io(path, e))?;
    Ok(stats)
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &Path,
    rel: &Path,
    meta: &std::fs::Metadata,
    stats: &mut PackStats,
) -> Result<()> {
    #[cfg(unix)]
    let exec = {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    };
    #[cfg(not(unix))]
    let exec = false;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = header(
        tar::EntryType::Regular,
        if exec { 0o755 } else { 0o644 },
        meta.len(),
    );
    tar.append_data(&mut h, rel, file)
        .map_err(|e| Error::io(path, e))?;
    stats.files += 1;
    stats.bytes += meta.len();
    Ok(())
}

fn walk<W: Write>(
    tar: &mut tar::Builder<W>,
    root: &Path,
    rel: &Path,
    exclude: Exclude<'_>,
    stats: &mut PackStats,
) -> Result<()> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(&dir, e))?;
    entries.sort();
    for name in entries {
        let child_rel = rel.join(&name);
        let child = root.join(&child_rel);
        let meta = std::fs::symlink_metadata(&child).map_err(|e| Error::io(&child, e))?;
        let is_dir = meta.is_dir();
        if exclude(&child_rel, is_dir) {
            continue;
        }
        if is_dir {
            let mut h = header(tar::EntryType::Directory, 0o755, 0);
            tar.append_data(&mut h, &child_rel, std::io::empty())
                .map_err(|e| Error::io(&child, e))?;
            walk(tar, root, &child_rel, exclude, stats)?;
        } else if meta.is_file() {
            append_file(tar, &child, &child_rel, &meta, stats)?;
        } else {
            stats.skipped.push(child_rel.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Flux's metadata of an artifact (its manifest annotations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    /// `org.opencontainers.image.source`.
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`.
    pub revision: Option<String>,
    /// `org.opencontainers.image.created` (RFC 3339); `None` means now.
    pub created: Option<String>,
    /// Further annotations (`--annotations k=v`).
    pub annotations: BTreeMap<String, String>,
}

impl Metadata {
    fn to_annotations(&self) -> BTreeMap<String, String> {
        let mut a = self.annotations.clone();
        let created = self.created.clone().unwrap_or_else(|| {
            jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .map(|t| t.to_string())
                .unwrap_or_else(|_| jiff::Timestamp::now().to_string())
        });
        a.insert(ANNOTATION_CREATED.into(), created);
        if let Some(s) = &self.source {
            a.insert(ANNOTATION_SOURCE.into(), s.clone());
        }
        if let Some(r) = &self.revision {
            a.insert(ANNOTATION_REVISION.into(), r.clone());
        }
        a
    }

    /// Reads Flux's annotations back from a manifest.
    pub fn from_annotations(a: &BTreeMap<String, String>) -> Self {
        let mut rest = a.clone();
        Metadata {
            source: rest.remove(ANNOTATION_SOURCE),
            revision: rest.remove(ANNOTATION_REVISION),
            created: rest.remove(ANNOTATION_CREATED),
            annotations: rest,
        }
    }
}

/// A pushed artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest's digest.
    pub digest: String,
    /// The layer's descriptor.
    pub layer: Descriptor,
    /// What packing wrote.
    pub stats: PackStats,
}

/// Writes `w` and keeps the sha256 and count of what went through.
struct Hashing<W> {
    inner: W,
    hasher: sha2::Sha256,
    written: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Packs `path` into a temporary file; returns it with its digest and size.
pub fn pack_to_temp(
    path: &Path,
    exclude: Exclude<'_>,
) -> Result<(tempfile::NamedTempFile, String, u64, PackStats)> {
    let tmp = tempfile::NamedTempFile::new().map_err(|e| Error::io("a temporary file", e))?;
    let mut w = Hashing {
        inner: std::io::BufWriter::new(tmp.reopen().map_err(|e| Error::io(tmp.path(), e))?),
        hasher: sha2::Sha256::new(),
        written: 0,
    };
    let stats = pack_dir(path, exclude, &mut w)?;
    w.flush().map_err(|e| Error::io(tmp.path(), e))?;
    let digest = hex_digest(w.hasher.finalize().as_slice());
    Ok((tmp, digest, w.written, stats))
}

/// Packs `path` and pushes it to `reference` (which must carry a tag) as a Flux artifact.
pub fn push(
    client: &Client,
    reference: &Reference,
    path: &Path,
    meta: &Metadata,
    exclude: Exclude<'_>,
) -> Result<Pushed> {
    if reference.tag.is_none() || reference.digest.is_some() {
        return Err(Error::InvalidReference {
            reference: reference.to_string(),
            why: "pushing needs a tag and no digest".into(),
        });
    }
    let (tmp, digest, size, stats) = pack_to_temp(path, exclude)?;
    let repo = &reference.repository;
    let config = client.push_blob_bytes(repo, FLUX_CONFIG, b"{}")?;
    let layer = client.push_blob_file(repo, FLUX_CONTENT, tmp.path(), &digest, size)?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.into()),
        artifact_type: None,
        config,
        layers: vec![layer.clone()],
        annotations: meta.to_annotations(),
    };
    let bytes = serde_json::to_vec(&manifest).map_err(|e| Error::Protocol {
        registry: client.registry().into(),
        detail: format!("cannot serialise the manifest: {e}"),
    })?;
    let digest = client.put_manifest(reference, OCI_MANIFEST, &bytes)?;
    Ok(Pushed {
        digest,
        layer,
        stats,
    })
}

/// A reference resolved to an image manifest.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The digest of the manifest the reference names (an index's, when it names an index:
    /// that is what the tag points to and what a HEAD returns).
    pub digest: String,
    /// The image manifest (the index entry picked, when the reference named an index).
    pub manifest: Manifest,
}

/// Fetches the manifest `reference` names, following an index to its `linux/amd64` (or
/// first) entry; refuses other media types.
pub fn resolve(client: &Client, reference: &Reference) -> Result<Resolved> {
    let raw = client.get_manifest(reference)?;
    let parse_err = |e: serde_json::Error| Error::Protocol {
        registry: client.registry().into(),
        detail: format!("manifest of {reference} does not parse: {e}"),
    };
    let expected = format!("{OCI_MANIFEST} or {OCI_INDEX}");
    match raw.media_type.as_str() {
        OCI_MANIFEST | DOCKER_MANIFEST => Ok(Resolved {
            digest: raw.digest,
            manifest: serde_json::from_slice(&raw.bytes).map_err(parse_err)?,
        }),
        OCI_INDEX | DOCKER_MANIFEST_LIST => {
            let index: Index = serde_json::from_slice(&raw.bytes).map_err(parse_err)?;
            let entry = index.pick().ok_or_else(|| Error::Protocol {
                registry: client.registry().into(),
                detail: format!("the index of {reference} lists no manifest"),
            })?;
            let inner = client.get_manifest(&reference.with_digest(&entry.digest))?;
            if inner.media_type != OCI_MANIFEST && inner.media_type != DOCKER_MANIFEST {
                return Err(Error::WrongMediaType {
                    reference: format!("{reference} (index entry {})", entry.digest),
                    media_type: inner.media_type,
                    expected: OCI_MANIFEST.into(),
                });
            }
            Ok(Resolved {
                digest: raw.digest,
                manifest: serde_json::from_slice(&inner.bytes).map_err(parse_err)?,
            })
        }
        other => Err(Error::WrongMediaType {
            reference: reference.to_string(),
            media_type: other.to_string(),
            expected,
        }),
    }
}

/// Picks the layer of `mediaType` (the first such layer), or the first layer without one.
pub fn select_layer<'a>(
    reference: &Reference,
    manifest: &'a Manifest,
    media_type: Option<&str>,
) -> Result<&'a Descriptor> {
    let found = || {
        manifest
            .layers
            .iter()
            .map(|l| l.media_type.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match media_type {
        Some(mt) => manifest
            .layers
            .iter()
            .find(|l| l.media_type == mt)
            .ok_or_else(|| Error::LayerNotFound {
                reference: reference.to_string(),
                media_type: mt.to_string(),
                found: found(),
            }),
        None => manifest.layers.first().ok_or_else(|| Error::LayerNotFound {
            reference: reference.to_string(),
            media_type: "(any)".into(),
            found: "none".into(),
        }),
    }
}

/// Downloads `layer` into a temporary file (digest- and size-checked), rewound for reading.
pub fn fetch_layer(
    client: &Client,
    reference: &Reference,
    layer: &Descriptor,
    max_size: u64,
) -> Result<std::fs::File> {
    let mut file = tempfile::tempfile().map_err(|e| Error::io("a temporary file", e))?;
    {
        let mut w = std::io::BufWriter::with_capacity(256 * 1024, &mut file);
        client.get_blob(&reference.repository, layer, max_size, &mut w)?;
        w.flush().map_err(|e| Error::io("a temporary file", e))?;
    }
    file.rewind()
        .map_err(|e| Error::io("a temporary file", e))?;
    Ok(file)
}

/// Downloads `layer` and unpacks it into `dest` as it arrives (no temporary copy), hashing the
/// compressed bytes on the way. When the whole blob has been read its digest and size are
/// checked; if they do not match, or the extraction is refused, what the extraction created is
/// removed again (`dest` itself when it did not exist before, else the entries it added at its
/// top level; files it overwrote in folders that were already there stay overwritten) and the
/// error says why, the digest mismatch first: a tampered layer is reported as tampered even
/// when it also fails to decompress.
pub fn extract_layer(
    client: &Client,
    reference: &Reference,
    layer: &Descriptor,
    dest: &Path,
    max_layer_size: u64,
    max_extract_size: u64,
) -> Result<crate::extract::ExtractStats> {
    let before = Before::record(dest)?;
    let mut blob = client.open_blob(&reference.repository, layer, max_layer_size)?;
    let extracted = crate::extract::extract_tar_gz(
        std::io::BufReader::with_capacity(256 * 1024, &mut blob),
        dest,
        max_extract_size,
    );
    let err = match (extracted, blob.finish()) {
        (Ok(stats), Ok(())) => return Ok(stats),
        (_, Err(e)) | (Err(e), Ok(())) => e,
    };
    before.restore(dest);
    Err(err)
}

/// What existed at an extraction's destination before it, to undo a refused extraction.
enum Before {
    /// `dest` did not exist: remove it whole.
    Absent,
    /// `dest` existed with these top-level names.
    Names(std::collections::HashSet<std::ffi::OsString>),
}

impl Before {
    fn record(dest: &Path) -> Result<Self> {
        match std::fs::read_dir(dest) {
            Ok(entries) => Ok(Before::Names(
                entries
                    .map(|e| e.map(|e| e.file_name()))
                    .collect::<std::io::Result<_>>()
                    .map_err(|e| Error::io(dest, e))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Before::Absent),
            Err(e) => Err(Error::io(dest, e)),
        }
    }

    /// Best effort: the error being returned matters more than a leftover that cannot be removed.
    fn restore(self, dest: &Path) {
        match self {
            Before::Absent => {
                let _ = std::fs::remove_dir_all(dest);
            }
            Before::Names(names) => {
                let Ok(entries) = std::fs::read_dir(dest) else {
                    return;
                };
                for entry in entries.flatten() {
                    if names.contains(&entry.file_name()) {
                        continue;
                    }
                    let path = entry.path();
                    let _ = match entry.file_type() {
                        Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                        _ => std::fs::remove_file(&path),
                    };
                }
            }
        }
    }
}

/// What [`pull`] got.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The resolved manifest and its digest.
    pub resolved: Resolved,
    /// Flux's metadata from the annotations.
    pub metadata: Metadata,
    /// The layer extracted.
    pub layer: Descriptor,
    /// What was written.
    pub stats: crate::extract::ExtractStats,
}

/// Pulls `reference` and extracts its layer (`layer_media_type`, or the first) into `dest`.
pub fn pull(
    client: &Client,
    reference: &Reference,
    layer_media_type: Option<&str>,
    dest: &Path,
    max_layer_size: u64,
    max_extract_size: u64,
) -> Result<Pulled> {
    let resolved = resolve(client, reference)?;
    let layer = select_layer(reference, &resolved.manifest, layer_media_type)?.clone();
    let stats = extract_layer(
        client,
        &reference.with_digest(&resolved.digest),
        &layer,
        dest,
        max_layer_size,
        max_extract_size,
    )?;
    Ok(Pulled {
        metadata: Metadata::from_annotations(&resolved.manifest.annotations),
        resolved,
        layer,
        stats,
    })
}
