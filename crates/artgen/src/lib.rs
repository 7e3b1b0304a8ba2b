//! An ArtifactGenerator's artifacts, below Kubernetes: the tree of one output artifact composed
//! from the unpacked trees of its sources by its `copy` operations (source-watcher's `cp`
//! semantics, Go's and doublestar's globs, the `Overwrite`, `Merge` and `Extract` strategies),
//! the expansion of `spec.pathPattern` into one set of artifacts per matched directory,
//! the content hash that names its file (source-watcher's Adler-32 directory hash, so an
//! unchanged tree keeps its file name), and reproducible packing.
//!
//! Must not touch: Kubernetes (no client; the reconciler in `crates/controller` reads the
//! sources, stores the packed artifact and writes the ExternalArtifacts), the artifact storage
//! (`crates/source`), or any file outside the source trees it reads and the staging directory
//! it writes.

pub mod copy;
pub mod glob;
pub mod merge;
pub mod pattern;

use std::io::Write;
use std::path::Path;

pub use copy::apply_all;

/// Why an artifact could not be composed; every message names the operation and the path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A copy operation failed (source-watcher's wording).
    #[error("failed to apply copy operation from '{from}' to '{to}': {reason}")]
    Copy {
        /// `from` as written.
        from: String,
        /// `to` as written.
        to: String,
        /// What went wrong.
        reason: String,
    },
    /// Reading or packing the staged tree failed.
    #[error("{0}")]
    Io(String),
}

/// A Kubernetes object name (a lowercase RFC 1123 subdomain): what an ExternalArtifact is
/// called.
pub fn is_object_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Adler-32 of `data`.
fn adler32(data: &[u8], (mut a, mut b): (u32, u32)) -> (u32, u32) {
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (a, b)
}

fn adler_sum((a, b): (u32, u32)) -> u32 {
    (b << 16) | a
}

/// source-watcher's content hash of a staged tree: the Adler-32 over the lines
/// `<adler32 of file>  <prefix>/<path>` of every file in path order, in decimal. It names the
/// artifact file, so the same content keeps the same file.
pub fn content_hash(dir: &Path, prefix: &str) -> Result<String, Error> {
    let mut files = Vec::new();
    glob::walk(dir, "", &mut |rel| {
        if dir.join(rel).is_file() {
            files.push(rel.to_string());
        }
    });
    let mut lines: Vec<String> = Vec::with_capacity(files.len());
    for rel in files {
        let data = std::fs::read(dir.join(&rel)).map_err(|e| Error::Io(format!("{rel}: {e}")))?;
        lines.push(format!(
            "{:x}  {prefix}/{rel}",
            adler_sum(adler32(&data, (1, 0)))
        ));
    }
    // Go sorts the full names before hashing.
    lines.sort_by(|a, b| {
        let name = |l: &str| l.split_once("  ").map(|(_, n)| n.to_string());
        name(a).cmp(&name(b))
    });
    let mut state = (1, 0);
    for line in lines {
        state = adler32(line.as_bytes(), state);
        state = adler32(b"\n", state);
    }
    Ok(adler_sum(state).to_string())
}

/// Packs the staged tree as a reproducible tar.gz into `out`.
pub fn pack(dir: &Path, out: impl Write) -> Result<(), Error> {
    ferroflux_oci::artifact::pack_dir(dir, &|_, _| false, out)
        .map(|_| ())
        .map_err(|e| Error::Io(format!("failed to pack the artifact: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adler32_matches_the_reference_value() {
        // zlib's adler32("Wikipedia") = 0x11E60398.
        assert_eq!(adler_sum(adler32(b"Wikipedia", (1, 0))), 0x11E6_0398);
    }
}
