//! Artifacts as the Kustomization controller consumes them: downloaded over HTTP from the
//! source controller, checked against the digest in the source's status, and unpacked into a
//! private directory without letting any entry escape it.

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The most an artifact may weigh, compressed or unpacked, unless the caller says otherwise.
/// Flux's own default for unpacking is 100 MiB.
pub const DEFAULT_MAX_SIZE: u64 = 100 << 20;

/// Why an artifact could not be used. Every message names the artifact's URL or entry.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The URL is not `http://`, the source server could not be reached, or it answered with an
    /// error status.
    #[error("failed to download artifact from {url}: {reason}")]
    Download {
        /// The artifact's URL, as the source's status gives it.
        url: String,
        /// The HTTP status or the connection error.
        reason: String,
    },
    /// The download went past the size limit; it is stopped there rather than read to the end.
    #[error("artifact from {url} is larger than {limit} bytes")]
    TooLarge {
        /// The artifact's URL.
        url: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes received are not the ones the source's status announced.
    #[error(
        "failed to verify artifact: computed digest doesn't match '{expected}' (got 'sha256:{actual}')"
    )]
    DigestMismatch {
        /// The digest from the source's status, as written there.
        expected: String,
        /// The hex SHA-256 of what was downloaded.
        actual: String,
    },
    /// The status names a digest algorithm other than sha256.
    #[error("unsupported artifact digest '{0}': expected sha256:<hex>")]
    UnsupportedDigest(String),
    /// A tarball entry that would land outside the directory (`..`, an absolute path, a link).
    #[error("failed to untar artifact: entry '{0}' escapes the target directory")]
    EscapingEntry(String),
    /// The unpacked files outweigh the limit (a small tarball may expand a lot).
    #[error("failed to untar artifact: unpacked size exceeds {0} bytes")]
    UnpackedTooLarge(u64),
    /// The gzip or tar stream is broken, an entry is longer than its header says, or a file
    /// could not be written.
    #[error("failed to untar artifact: {0}")]
    Untar(String),
}

/// Downloads an artifact over plain HTTP, refusing more than `limit` bytes.
pub async fn download(url: &str, limit: u64) -> Result<Vec<u8>, ArtifactError> {
    let fail = |reason: String| ArtifactError::Download {
        url: url.to_string(),
        reason,
    };
    let uri: hyper::Uri = url.parse().map_err(|e| fail(format!("invalid URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(fail(
            "only http:// artifact URLs are served by the source controller".into(),
        ));
    }
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let response = client.get(uri).await.map_err(|e| fail(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP status {}", response.status())));
    }
    let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
    let body = Limited::new(response.into_body(), limit_usize)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                ArtifactError::TooLarge {
                    url: url.to_string(),
                    limit,
                }
            } else {
                fail(e.to_string())
            }
        })?;
    Ok(body.to_bytes().to_vec())
}

/// Checks `data` against a digest of the form `sha256:<hex>`.
pub fn verify_digest(data: &[u8], expected: &str) -> Result<(), ArtifactError> {
    let Some(hex) = expected.strip_prefix("sha256:") else {
        return Err(ArtifactError::UnsupportedDigest(expected.to_string()));
    };
    let actual = hex_string(&Sha256::digest(data));
    if !actual.eq_ignore_ascii_case(hex) {
        return Err(ArtifactError::DigestMismatch {
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Unpacks a gzipped tarball into `dest`. Entries with absolute paths or `..` are refused;
/// symlinks, hard links and special files are skipped, so nothing outside `dest` can be reached
/// through the unpacked tree; at most `max_size` bytes are written.
pub fn untar(data: &[u8], dest: &Path, max_size: u64) -> Result<(), ArtifactError> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut archive = tar::Archive::new(gz);
    let entries = archive
        .entries()
        .map_err(|e| ArtifactError::Untar(e.to_string()))?;
    let mut written: u64 = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| ArtifactError::Untar(e.to_string()))?;
        let raw = entry
            .path()
            .map_err(|e| ArtifactError::Untar(e.to_string()))?
            .into_owned();
        let relative = safe_relative(&raw)?;
        let kind = entry.header().entry_type();
        let target = dest.join(&relative);
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| untar_io(&raw, e))?;
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        let size = entry.header().size().unwrap_or(0);
        written = written.saturating_add(size);
        if written > max_size {
            return Err(ArtifactError::UnpackedTooLarge(max_size));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| untar_io(&raw, e))?;
        }
        let mut contents = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        // The header's size can lie; never read more than the budget that remains.
        (&mut entry)
            .take(max_size - (written - size) + 1)
            .read_to_end(&mut contents)
            .map_err(|e| untar_io(&raw, e))?;
        if contents.len() as u64 > size {
            return Err(ArtifactError::Untar(format!(
                "entry '{}' is longer than its header says",
                raw.display()
            )));
        }
        std::fs::write(&target, &contents).map_err(|e| untar_io(&raw, e))?;
    }
    Ok(())
}

fn untar_io(entry: &Path, e: std::io::Error) -> ArtifactError {
    ArtifactError::Untar(format!("{}: {e}", entry.display()))
}

fn safe_relative(path: &Path) -> Result<PathBuf, ArtifactError> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ArtifactError::EscapingEntry(path.display().to_string()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Write the name into the raw header so `..` survives (set_path refuses it).
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn unpacks_and_verifies() {
        let data = tarball(&[
            ("apps/deploy.yaml", b"kind: Deployment\n"),
            ("./README", b"hi"),
        ]);
        let digest = format!("sha256:{}", hex_string(&Sha256::digest(&data)));
        verify_digest(&data, &digest).unwrap();
        let dir = tempfile::tempdir().unwrap();
        untar(&data, dir.path(), DEFAULT_MAX_SIZE).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("apps/deploy.yaml")).unwrap(),
            "kind: Deployment\n"
        );
    }

    #[test]
    fn refuses_a_digest_mismatch() {
        let data = tarball(&[("a", b"1")]);
        let err = verify_digest(&data, "sha256:0000").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "failed to verify artifact: computed digest doesn't match 'sha256:0000'"
            ),
            "{err}"
        );
        assert!(matches!(
            verify_digest(&data, "md5:abc"),
            Err(ArtifactError::UnsupportedDigest(_))
        ));
    }

    #[test]
    fn refuses_entries_escaping_the_directory() {
        let outer = tempfile::tempdir().unwrap();
        let dest = outer.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let data = tarball(&[("ok.yaml", b"a: 1"), ("../escaped.yaml", b"evil")]);
        let err = untar(&data, &dest, DEFAULT_MAX_SIZE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to untar artifact: entry '../escaped.yaml' escapes the target directory"
        );
        assert!(!outer.path().join("escaped.yaml").exists());
        let absolute = tarball(&[("/tmp/abs.yaml", b"evil")]);
        assert!(matches!(
            untar(&absolute, &dest, DEFAULT_MAX_SIZE),
            Err(ArtifactError::EscapingEntry(_))
        ));
    }

    #[test]
    fn refuses_oversized_content() {
        let data = tarball(&[("big", &[b'x'; 2048])]);
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            untar(&data, dir.path(), 1024),
            Err(ArtifactError::UnpackedTooLarge(1024))
        ));
    }

    #[tokio::test]
    async fn downloads_over_http_and_reports_failures() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            for status in ["200 OK", "404 Not Found"] {
                let (mut sock, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = sock.read(&mut buf).await.unwrap();
                let body = "artifact-bytes";
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                sock.write_all(reply.as_bytes()).await.unwrap();
            }
        });
        let url = format!("http://{addr}/gitrepository/ns/name/abc.tar.gz");
        assert_eq!(download(&url, 1024).await.unwrap(), b"artifact-bytes");
        let err = download(&url, 1024).await.unwrap_err();
        assert!(
            err.to_string().contains("HTTP status 404 Not Found"),
            "{err}"
        );
        server.await.unwrap();
        let err = download("https://example.invalid/x", 10).await.unwrap_err();
        assert!(err.to_string().contains("only http://"), "{err}");
    }
}
