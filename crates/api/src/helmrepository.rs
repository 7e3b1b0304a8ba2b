//! `HelmRepository` of `source.toolkit.fluxcd.io/v1`: a Helm chart repository (an `index.yaml`
//! over HTTP(S), or an OCI registry) that `HelmChart`s pull charts from.

use crate::common::{Artifact, DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a Helm repository is and how to reach it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "HelmRepository",
    plural = "helmrepositories",
    singular = "helmrepository",
    shortname = "helmrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "HelmRepositoryStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HelmRepositorySpec {
    /// Which other namespaces may refer to this repository (not enforced by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<AccessFrom>,
    /// Secret with `ca.crt`, `tls.crt` and `tls.key` for TLS to the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Plain HTTP to an OCI registry; Flux only reads it for `type: oci`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often the index is fetched again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: Option<String>,
    /// Send the credentials to chart URLs on other hosts than `url`'s as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_credentials: Option<bool>,
    /// The OIDC provider for OCI registries; `generic` reads `secretRef`.
    #[serde(default = "default_provider", skip_serializing_if = "Option::is_none")]
    pub provider: Option<HelmRepositoryProvider>,
    /// Secret with `username` and `password` for basic auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Timeout of the index download (and of chart downloads); defaults to 60s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
    /// `default` (an `index.yaml` over HTTP(S)) or `oci`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<HelmRepositoryType>,
    /// Repository address: `http://`, `https://` or `oci://`.
    #[schemars(regex(pattern = r"^(http|https|oci)://.*$"))]
    pub url: String,
}

fn default_provider() -> Option<HelmRepositoryProvider> {
    Some(HelmRepositoryProvider::Generic)
}

/// The OIDC provider of an OCI Helm repository.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HelmRepositoryProvider {
    Generic,
    Aws,
    Azure,
    Gcp,
}

/// The protocol of a Helm repository.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HelmRepositoryType {
    // An `index.yaml` and chart archives over HTTP(S). (Plain comments: doc comments on the
    // variants would turn the schema's `enum` into a `oneOf`.)
    #[default]
    Default,
    // An OCI registry.
    Oci,
}

/// Flux's `acl.AccessFrom`: the namespaces allowed to refer to an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessFrom {
    /// Namespaces whose labels match any of these selectors.
    pub namespace_selectors: Vec<NamespaceSelector>,
}

/// Labels a namespace must carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Label keys and values that must all match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

impl HelmRepository {
    /// `spec.type`, `default` when unset.
    pub fn repository_type(&self) -> HelmRepositoryType {
        self.spec.r#type.unwrap_or_default()
    }
}

/// Observed state of a HelmRepository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct HelmRepositoryStatus {
    /// The last fetched index (`type: default` only), revision `sha256:<hex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// Ready, Reconciling, Stalled, FetchFailed and ArtifactInStorage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A stable address of the last index (`.../index.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
