//! `OCIRepository` of `source.toolkit.fluxcd.io/v1`: an artifact in an OCI registry (a Flux
//! artifact pushed with `push artifact`, or a Helm chart) followed by tag, semver range or
//! digest.

use crate::common::{Artifact, DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which artifact of which OCI repository is followed, and how it is fetched.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "OCIRepository",
    plural = "ocirepositories",
    singular = "ocirepository",
    shortname = "ocirepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "OCIRepositoryStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OCIRepositorySpec {
    /// Secret with `ca.crt` (and `tls.crt`/`tls.key` for mutual TLS) for the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Paths to exclude from the artifact, in .gitignore syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Plain HTTP to the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often the registry is checked for a new artifact.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// Which layer is used and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_selector: Option<OCILayerSelector>,
    /// The cloud provider for authentication; only `generic` is supported by ferroflux.
    #[serde(default = "default_provider", skip_serializing_if = "Option::is_none")]
    pub provider: Option<OCIProvider>,
    /// Secret with the proxy settings (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// Which artifact to follow; defaults to the `latest` tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<OCIRepositoryRef>,
    /// Secret of type `kubernetes.io/dockerconfigjson` with the registry's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// ServiceAccount whose image pull secrets are used (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Timeout of the registry operations; defaults to 60s.
    #[serde(default = "default_timeout", skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
    /// The repository: `oci://HOST/REPO`.
    #[schemars(regex(pattern = r"^oci://.*$"))]
    pub url: String,
    /// Signature verification (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<OCIRepositoryVerification>,
}

fn default_timeout() -> Option<String> {
    Some("60s".to_string())
}

fn default_provider() -> Option<OCIProvider> {
    Some(OCIProvider::Generic)
}

/// The authentication provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OCIProvider {
    /// Credentials from `secretRef`, or anonymous.
    Generic,
    /// Amazon ECR.
    Aws,
    /// Azure Container Registry.
    Azure,
    /// Google Artifact Registry.
    Gcp,
}

impl OCIProvider {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            OCIProvider::Generic => "generic",
            OCIProvider::Aws => "aws",
            OCIProvider::Azure => "azure",
            OCIProvider::Gcp => "gcp",
        }
    }
}

/// Which artifact to follow. Precedence: digest, semver, tag.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OCIRepositoryRef {
    /// An exact manifest digest (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A semver range; the highest matching tag is followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// A regular expression the tags must match before the semver range applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver_filter: Option<String>,
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Which layer becomes the artifact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OCILayerSelector {
    /// The media type of the layer; the first layer when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// `extract` (default): the layer's tarball is unpacked and packed again as the artifact;
    /// `copy`: the layer is stored as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<OCILayerOperation>,
}

/// What is done with the selected layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OCILayerOperation {
    /// Unpack the tarball and pack it again (with `ignore` applied).
    Extract,
    /// Keep the layer's bytes.
    Copy,
}

/// Signature verification settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OCIRepositoryVerification {
    /// Identities keyless signatures must match.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    pub match_oidc_identity: Option<Vec<OIDCIdentityMatch>>,
    /// `cosign` or `notation` (required, defaulted by the API server as in Flux's CRD).
    #[schemars(extend("default" = "cosign"))]
    pub provider: VerificationProvider,
    /// Secret with the public keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Secret with a trusted root (Sigstore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root_secret_ref: Option<LocalObjectReference>,
}

/// A signature verification provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationProvider {
    /// Sigstore cosign.
    #[default]
    Cosign,
    /// Notary project notation.
    Notation,
}

/// An OIDC identity a keyless signature must match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OIDCIdentityMatch {
    /// Regular expression of the issuer.
    pub issuer: String,
    /// Regular expression of the subject.
    pub subject: String,
}

/// Observed state of an OCIRepository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct OCIRepositoryStatus {
    /// The last successfully produced artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// Conditions of the last reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The `spec.ignore` the artifact was packed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// The `spec.layerSelector` the artifact was made with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_layer_selector: Option<OCILayerSelector>,
    /// The URL the artifact was pulled from (`oci://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
