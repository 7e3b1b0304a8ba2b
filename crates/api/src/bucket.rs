//! `Bucket` of `source.toolkit.fluxcd.io/v1`: the objects of an object storage bucket (S3 API or
//! a cloud provider's), optionally under a prefix, packed into an artifact.

use crate::common::{Artifact, DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which bucket is followed, where it is and how it is reached.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "Bucket",
    plural = "buckets",
    singular = "bucket",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "BucketStatus",
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "message": "STS configuration is only supported for the 'aws' and 'generic' Bucket providers",
        "rule": "self.provider == 'aws' || self.provider == 'generic' || !has(self.sts)"
    },
    {
        "message": "'aws' is the only supported STS provider for the 'aws' Bucket provider",
        "rule": "self.provider != 'aws' || !has(self.sts) || self.sts.provider == 'aws'"
    },
    {
        "message": "'ldap' is the only supported STS provider for the 'generic' Bucket provider",
        "rule": "self.provider != 'generic' || !has(self.sts) || self.sts.provider == 'ldap'"
    },
    {
        "message": "spec.sts.secretRef is not required for the 'aws' STS provider",
        "rule": "!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.secretRef)"
    },
    {
        "message": "spec.sts.certSecretRef is not required for the 'aws' STS provider",
        "rule": "!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.certSecretRef)"
    },
    {
        "message": "ServiceAccountName is not supported for the 'generic' Bucket provider",
        "rule": "self.provider != 'generic' || !has(self.serviceAccountName)"
    },
    {
        "message": "cannot set both .spec.secretRef and .spec.serviceAccountName",
        "rule": "!has(self.secretRef) || !has(self.serviceAccountName)"
    }
]))]
pub struct BucketSpec {
    /// The name of the bucket.
    pub bucket_name: String,
    /// Secret with `ca.crt` (and `tls.crt`/`tls.key` for mutual TLS) for the endpoint; `generic`
    /// provider only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// The object storage endpoint: `host[:port]`, or a URL with its scheme.
    pub endpoint: String,
    /// Paths to exclude from the artifact, in .gitignore syntax; replaces the default exclusions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Plain HTTP to the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often the bucket is checked for changes.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// Only objects whose keys start with this prefix are fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// `generic` (any S3 API, static keys), `aws`, `gcp` or `azure`.
    #[serde(default = "default_provider", skip_serializing_if = "Option::is_none")]
    pub provider: Option<BucketProvider>,
    /// Secret with the proxy settings (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// The bucket's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Secret with the credentials (`accesskey` and `secretkey` for `generic` and `aws`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// ServiceAccount for workload identity (`gcp`, `aws`; not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Security Token Service settings (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sts: Option<BucketSTSSpec>,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Timeout of the fetch operations; defaults to 60s.
    #[serde(default = "default_timeout", skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
}

fn default_timeout() -> Option<String> {
    Some("60s".to_string())
}

fn default_provider() -> Option<BucketProvider> {
    Some(BucketProvider::Generic)
}

/// Who provides the bucket, which decides how it is authenticated.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BucketProvider {
    #[default]
    Generic,
    Aws,
    Gcp,
    Azure,
}

impl BucketProvider {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            BucketProvider::Generic => "generic",
            BucketProvider::Aws => "aws",
            BucketProvider::Gcp => "gcp",
            BucketProvider::Azure => "azure",
        }
    }
}

/// Where temporary credentials come from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketSTSSpec {
    /// Secret with `ca.crt` (and `tls.crt`/`tls.key`) for the STS endpoint; `ldap` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// The STS endpoint's URL.
    #[schemars(regex(pattern = r"^(http|https)://.*$"))]
    pub endpoint: String,
    /// `aws` or `ldap`.
    pub provider: BucketSTSProvider,
    /// Secret with `username` and `password`; `ldap` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// The kind of Security Token Service.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BucketSTSProvider {
    #[default]
    Aws,
    Ldap,
}

/// Observed state of a Bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct BucketStatus {
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
    /// The address the artifact can be fetched from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
