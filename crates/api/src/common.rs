//! Small types shared by several CRDs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pattern Flux's CRDs put on every Go duration field.
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";

/// A reference to an object in the same namespace (`{name}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalObjectReference {
    /// Name of the referent.
    pub name: String,
}

/// A reference to a key of a Secret in the same namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyReference {
    /// Name of the Secret.
    pub name: String,
    /// Key in the Secret; when empty the conventional keys are tried in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A produced artifact: a tarball served over HTTP by the source controller.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Digest of the file, in the form `<algorithm>:<checksum>`.
    #[schemars(regex(pattern = r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"))]
    pub digest: String,
    /// When the artifact was last updated (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_update_time: String,
    /// Extra metadata of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
    /// Path of the file relative to the storage root.
    pub path: String,
    /// Human-readable identifier of the revision (`main@sha1:<hex>`).
    pub revision: String,
    /// Size of the file in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// HTTP address the artifact can be downloaded from.
    pub url: String,
}

/// A source whose status names the artifact it produced, for what waits on or reacts to a new
/// artifact whatever the source's kind.
pub trait HasArtifact {
    /// The artifact of the last successful reconcile, if any.
    fn artifact(&self) -> Option<&Artifact>;
}

macro_rules! has_artifact {
    ($($kind:ty),*) => {$(
        impl HasArtifact for $kind {
            fn artifact(&self) -> Option<&Artifact> {
                self.status.as_ref().and_then(|s| s.artifact.as_ref())
            }
        }
    )*};
}

has_artifact!(
    crate::GitRepository,
    crate::OCIRepository,
    crate::Bucket,
    crate::HelmRepository,
    crate::HelmChart,
    crate::ExternalArtifact
);

/// A Kubernetes selector for objects the way Flux's patch and ignore targets spell it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// Objects whose annotations match this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
    /// API group of the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind of the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Objects whose labels match this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Name of the objects (a regular expression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the objects (a regular expression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// API version of the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
