//! Manifests and descriptors (OCI image spec v1.1, with Docker's v2 schema 2 equivalents) and
//! the media types Flux and Helm give their artifacts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker v2 schema 2 manifest.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker manifest list.
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Flux's artifact config (an empty JSON object).
pub const FLUX_CONFIG: &str = "application/vnd.cncf.flux.config.v1+json";
/// Flux's artifact content: one tar+gzip layer.
pub const FLUX_CONTENT: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";
/// Helm chart config (Chart.yaml as JSON).
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// Helm chart content (the chart's .tgz).
pub const HELM_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Helm chart provenance file.
pub const HELM_PROVENANCE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";
/// A generic OCI tar+gzip layer (images, `layerSelector` default of other tools).
pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// Docker's tar+gzip layer.
pub const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";

/// `org.opencontainers.image.created`: when the artifact was built (RFC 3339).
pub const ANNOTATION_CREATED: &str = "org.opencontainers.image.created";
/// `org.opencontainers.image.source`: where its content came from (a Git URL).
pub const ANNOTATION_SOURCE: &str = "org.opencontainers.image.source";
/// `org.opencontainers.image.revision`: the source revision (`main@sha1:…`).
pub const ANNOTATION_REVISION: &str = "org.opencontainers.image.revision";

/// What every `Accept` of a manifest request lists.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type of the referenced content.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Size in bytes.
    pub size: u64,
    /// Annotations, when any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Platform of an index entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// The platform of an index entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `amd64`, `arm64`, …
    pub architecture: String,
    /// `linux`, …
    pub os: String,
}

/// An image manifest (OCI or Docker v2 schema 2: the same fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// The manifest's own media type (optional in the OCI spec, set by every writer we know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// `artifactType`, OCI 1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers, in order.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// Manifest annotations (Flux's source, revision and creation time).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An image index (or Docker manifest list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// Always 2.
    pub schema_version: u32,
    /// The index's own media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The manifests it lists.
    pub manifests: Vec<Descriptor>,
}

impl Index {
    /// The entry to follow: `linux/amd64` when platforms are given (what go-containerregistry
    /// picks by default), else the first.
    pub fn pick(&self) -> Option<&Descriptor> {
        self.manifests
            .iter()
            .find(|d| {
                d.platform
                    .as_ref()
                    .is_some_and(|p| p.os == "linux" && p.architecture == "amd64")
            })
            .or_else(|| self.manifests.first())
    }
}

/// sha256 of `bytes` as `sha256:<hex>`.
pub fn digest_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex_digest(sha2::Sha256::digest(bytes).as_slice())
}

pub(crate) fn hex_digest(raw: &[u8]) -> String {
    let mut s = String::with_capacity(7 + raw.len() * 2);
    s.push_str("sha256:");
    for b in raw {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
