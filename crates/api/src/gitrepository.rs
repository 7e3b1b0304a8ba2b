//! `GitRepository` of `source.toolkit.fluxcd.io/v1`.

use crate::common::{Artifact, DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a Git repository is fetched and which commit is followed.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "GitRepository",
    plural = "gitrepositories",
    singular = "gitrepository",
    shortname = "gitrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "GitRepositoryStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "serviceAccountName can only be set when provider is 'azure' or 'aws'",
    "rule": "!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' || self.provider == 'aws'))"
}]))]
pub struct GitRepositorySpec {
    /// Paths to exclude from the artifact, in .gitignore syntax; replaces the default exclusions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Other GitRepositories whose artifacts are included in this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<GitRepositoryInclude>>,
    /// How often the repository is checked for new commits.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// The OIDC provider used for authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<GitProvider>,
    /// Secret with the proxy settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// Whether submodules are cloned too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse_submodules: Option<bool>,
    /// Which commit to follow; defaults to the `master` branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<GitRepositoryRef>,
    /// Secret with the credentials: `username`/`password`, `bearerToken`,
    /// `identity`/`known_hosts`, `ca.crt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// ServiceAccount used for cloud-provider authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Directories to check out, when only part of the repository is wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_checkout: Option<Vec<String>>,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Timeout of Git operations; defaults to 60s.
    #[serde(
        default = "default_git_timeout",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
    /// Repository address: `http://`, `https://` or `ssh://`.
    #[schemars(regex(pattern = r"^(http|https|ssh)://.*$"))]
    pub url: String,
    /// Verification of commit or tag signatures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<GitRepositoryVerification>,
}

fn default_git_timeout() -> Option<String> {
    Some("60s".to_string())
}

/// The OIDC provider used for authentication.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitProvider {
    Generic,
    Aws,
    Azure,
    Github,
}

/// Which commit of the repository to follow. Precedence: commit, name, semver, tag, branch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitRepositoryRef {
    /// Branch to follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Commit SHA to check out; with a branch, it must be on that branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Full reference name (`refs/heads/main`, `refs/tags/v1`, `refs/pull/1/head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Semver range of tags to follow; the highest match wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// Tag to check out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Another GitRepository whose artifact is copied into this one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositoryInclude {
    /// Path in the included artifact to copy from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_path: Option<String>,
    /// The GitRepository to include.
    pub repository: LocalObjectReference,
    /// Path in this artifact to copy to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_path: Option<String>,
}

/// Signature verification settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositoryVerification {
    /// What to verify: `HEAD` (`head` is its legacy spelling), `Tag` or `TagAndHEAD`.
    #[serde(
        default = "default_verify_mode",
        skip_serializing_if = "Option::is_none"
    )]
    pub mode: Option<GitVerificationMode>,
    /// Secret with the trusted public keys.
    pub secret_ref: LocalObjectReference,
}

fn default_verify_mode() -> Option<GitVerificationMode> {
    Some(GitVerificationMode::HEAD)
}

/// What signature verification covers.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[allow(clippy::upper_case_acronyms)]
pub enum GitVerificationMode {
    #[serde(rename = "head")]
    LegacyHead,
    HEAD,
    Tag,
    TagAndHEAD,
}

/// Observed state of a GitRepository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct GitRepositoryStatus {
    /// The last successfully produced artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// Ready, Reconciling, Stalled, FetchFailed, ArtifactInStorage and the verification conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Artifacts of the included repositories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_artifacts: Option<Vec<Artifact>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `spec.ignore` as of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// `spec.include` as of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_include: Option<Vec<GitRepositoryInclude>>,
    /// `spec.recurseSubmodules` as of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_recurse_submodules: Option<bool>,
    /// `spec.sparseCheckout` as of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_sparse_checkout: Option<Vec<String>>,
    /// The verification mode used for the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_verification_mode: Option<String>,
}
