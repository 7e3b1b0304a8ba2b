//! The image automation kinds of `image.toolkit.fluxcd.io/v1`: `ImageRepository` (a registry
//! repository whose tags are scanned), `ImagePolicy` (which of those tags is the latest by a
//! semver range, alphabetical or numerical order) and `ImageUpdateAutomation` (writing the
//! selected tags back to Git), with Flux's spec and status fields so that objects written for
//! Flux round-trip unchanged. ferroflux's controller reconciles all three.

use crate::common::{DURATION_PATTERN, LocalObjectReference};
use crate::helmrepository::AccessFrom;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The tags excluded from a scan when `spec.exclusionList` is empty: cosign signatures.
pub const DEFAULT_EXCLUSION: &str = r"^.*\.sig$";

/// How many tags `status.lastScanResult.latestTags` keeps.
pub const LATEST_TAGS: usize = 10;

/// A registry repository whose tags are scanned every `interval`.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "image.toolkit.fluxcd.io",
    version = "v1",
    kind = "ImageRepository",
    plural = "imagerepositories",
    singular = "imagerepository",
    shortname = "imgrepo",
    shortname = "imagerepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-images",
    namespaced,
    status = "ImageRepositoryStatus",
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Tags","type":"string","jsonPath":".status.lastScanResult.tagCount"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Last scan","type":"string","priority":1,"jsonPath":".status.lastScanResult.scanTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ImageRepositorySpec {
    /// Namespaces whose ImagePolicies may refer to this repository (besides its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<AccessFrom>,
    /// Secret with `ca.crt` (and `tls.crt`/`tls.key` for mutual TLS) for the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Regular expressions of tags left out of the scan; `^.*\.sig$` when empty.
    #[serde(
        default = "default_exclusion_list",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = [DEFAULT_EXCLUSION], "maxItems" = 25))]
    pub exclusion_list: Option<Vec<String>>,
    /// The image repository, e.g. `ghcr.io/stefanprodan/podinfo` or `alpine`.
    pub image: String,
    /// Plain HTTP to the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often the repository is scanned.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// The cloud provider for authentication; only `generic` is supported by ferroflux.
    #[serde(default = "default_provider", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "generic"))]
    pub provider: Option<ImageProvider>,
    /// Secret with the proxy settings (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// Secret of type `kubernetes.io/dockerconfigjson` with the registry's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// ServiceAccount whose image pull secrets are used (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub service_account_name: Option<String>,
    /// Stops scanning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Timeout of a scan; the interval when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
}

fn default_exclusion_list() -> Option<Vec<String>> {
    Some(vec![DEFAULT_EXCLUSION.to_string()])
}

fn default_provider() -> Option<ImageProvider> {
    Some(ImageProvider::Generic)
}

/// The authentication provider of an ImageRepository.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageProvider {
    /// Credentials from `secretRef`, or anonymous.
    Generic,
    /// Amazon ECR.
    Aws,
    /// Azure Container Registry.
    Azure,
    /// Google Artifact Registry.
    Gcp,
}

impl ImageProvider {
    /// The value as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageProvider::Generic => "generic",
            ImageProvider::Aws => "aws",
            ImageProvider::Azure => "azure",
            ImageProvider::Gcp => "gcp",
        }
    }
}

impl ImageRepository {
    /// `spec.exclusionList`, or Flux's default when it is empty.
    pub fn exclusion_list(&self) -> Vec<String> {
        match &self.spec.exclusion_list {
            Some(list) if !list.is_empty() => list.clone(),
            _ => vec![DEFAULT_EXCLUSION.to_string()],
        }
    }

    /// `spec.provider`, `generic` when unset.
    pub fn provider(&self) -> ImageProvider {
        self.spec.provider.unwrap_or(ImageProvider::Generic)
    }
}

/// What the last successful scan found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanResult {
    /// The first [`LATEST_TAGS`] tags in descending alphabetical order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_tags: Option<Vec<String>>,
    /// A digest of the scanned tag list (`sha256:…`); it changes when the tags do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// When the scan ran (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub scan_time: Option<String>,
    /// How many tags the scan kept (after the exclusion list).
    #[schemars(schema_with = "go_int")]
    pub tag_count: i64,
}

/// A Go `int`: an integer without a format, as controller-gen writes it.
fn go_int(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer"})
}

/// Observed state of an ImageRepository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct ImageRepositoryStatus {
    /// The image with its implied parts made explicit, e.g. `docker.io/library/alpine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_image_name: Option<String>,
    /// Conditions of the last reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// What the last successful scan found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_result: Option<ScanResult>,
    /// The exclusion list the last scan applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_exclusion_list: Option<Vec<String>>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Which tag of an ImageRepository is the latest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "image.toolkit.fluxcd.io",
    version = "v1",
    kind = "ImagePolicy",
    plural = "imagepolicies",
    singular = "imagepolicy",
    shortname = "imgpol",
    shortname = "imagepol",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-images",
    namespaced,
    status = "ImagePolicyStatus",
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".status.latestRef.name"}"#,
    printcolumn = r#"{"name":"Tag","type":"string","jsonPath":".status.latestRef.tag"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "message": "spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'",
        "rule": "!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')"
    },
    {
        "message": "spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'",
        "rule": "has(self.interval) || !has(self.digestReflectionPolicy) || self.digestReflectionPolicy != 'Always'"
    }
]))]
pub struct ImagePolicySpec {
    /// When the selected tag's digest is written to `status.latestRef.digest`.
    #[serde(
        default = "default_reflection",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("default" = "Never"))]
    pub digest_reflection_policy: Option<ReflectionPolicy>,
    /// Which tags take part, and what of each is compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_tags: Option<TagFilter>,
    /// The ImageRepository whose tags are chosen from.
    pub image_repository_ref: NamespacedObjectReference,
    /// How often the digest is checked again with `digestReflectionPolicy: Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: Option<String>,
    /// How the latest tag is chosen.
    pub policy: ImagePolicyChoice,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

fn default_reflection() -> Option<ReflectionPolicy> {
    Some(ReflectionPolicy::Never)
}

/// A reference to an object, in this namespace unless `namespace` says otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacedObjectReference {
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent; the referring object's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// When the digest of the selected tag is reflected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReflectionPolicy {
    /// Looked up again every `interval`.
    Always,
    /// Looked up when the selected tag changes.
    IfNotPresent,
    /// Never: `latestRef.digest` stays empty.
    #[default]
    Never,
}

impl ImagePolicy {
    /// `spec.digestReflectionPolicy`, `Never` when unset.
    pub fn reflection(&self) -> ReflectionPolicy {
        self.spec.digest_reflection_policy.unwrap_or_default()
    }

    /// The namespace of the ImageRepository: `imageRepositoryRef.namespace` or the policy's.
    pub fn repository_namespace(&self) -> Option<String> {
        self.spec
            .image_repository_ref
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .or_else(|| self.metadata.namespace.clone())
    }
}

/// One way of choosing the latest tag; exactly one is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePolicyChoice {
    /// Tags ordered as strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alphabetical: Option<OrderPolicy>,
    /// Tags ordered as numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numerical: Option<OrderPolicy>,
    /// The highest tag within a semver range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<SemVerPolicy>,
}

/// A semver range, e.g. `5.0.x` or `>=1.0.0 <2.0.0`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SemVerPolicy {
    /// The range.
    pub range: String,
}

/// The order of an alphabetical or numerical policy: `asc` selects the last, `desc` the first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OrderPolicy {
    /// `asc` (default) or `desc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "asc"))]
    pub order: Option<SortOrder>,
}

/// An order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Ascending: the last tag is the latest.
    #[default]
    Asc,
    /// Descending: the first tag is the latest.
    Desc,
}

/// A regular expression tags must match, and what of the match is compared.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TagFilter {
    /// A template of capture groups (`$ts`, `${1}`) whose expansion is compared instead of the
    /// tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<String>,
    /// The regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// An image reference: repository, tag and, when reflected, digest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImageRef {
    /// The digest of the tag's manifest (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The image repository.
    pub name: String,
    /// The tag.
    pub tag: String,
}

impl std::fmt::Display for ImageRef {
    /// `NAME:TAG`, then `@DIGEST` when there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)?;
        match self.digest.as_deref() {
            Some(d) if !d.is_empty() => write!(f, "@{d}"),
            _ => Ok(()),
        }
    }
}

/// Observed state of an ImagePolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct ImagePolicyStatus {
    /// Conditions of the last reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The selected image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_ref: Option<ImageRef>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The image selected before the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_previous_ref: Option<ImageRef>,
}

/// Writing the tags ImagePolicies select back to a Git repository (crates/controller's
/// `imageupdateautomation`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "image.toolkit.fluxcd.io",
    version = "v1",
    kind = "ImageUpdateAutomation",
    plural = "imageupdateautomations",
    singular = "imageupdateautomation",
    shortname = "iua",
    shortname = "imgupd",
    shortname = "imgauto",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-images",
    namespaced,
    status = "ImageUpdateAutomationStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Last run","type":"string","priority":1,"jsonPath":".status.lastAutomationRunTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ImageUpdateAutomationSpec {
    /// How to check out, commit and push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSpec>,
    /// How often the automation runs.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// Which ImagePolicies are applied; all of the namespace when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_selector: Option<LabelSelector>,
    /// The GitRepository written to.
    pub source_ref: CrossNamespaceSourceReference,
    /// Stops the automation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Where and how the manifests are updated.
    #[serde(default = "default_update", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"strategy": "Setters"}))]
    pub update: Option<UpdateStrategy>,
}

fn default_update() -> Option<UpdateStrategy> {
    Some(UpdateStrategy {
        path: None,
        strategy: Some("Setters".into()),
    })
}

/// The Git source of an ImageUpdateAutomation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceSourceReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `GitRepository`.
    #[schemars(extend("default" = "GitRepository", "enum" = ["GitRepository"]))]
    pub kind: String,
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent; the automation's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The Git side of an automation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitSpec {
    /// What is checked out; the GitRepository's ref when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<GitCheckoutSpec>,
    /// How commits are made.
    pub commit: CommitSpec,
    /// Where commits are pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushSpec>,
}

/// The ref an automation checks out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitCheckoutSpec {
    /// The ref.
    pub r#ref: GitRef,
}

/// A Git reference, as a GitRepository's `spec.ref`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitRef {
    /// A branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A commit SHA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// A full ref name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A semver range over tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// How an automation commits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitSpec {
    /// The commit author.
    pub author: CommitUser,
    /// A Go template of the commit message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_template: Option<String>,
    /// Values the template may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_template_values: Option<BTreeMap<String, String>>,
    /// The key commits are signed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_key: Option<SigningKey>,
}

/// A commit author.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommitUser {
    /// Email.
    pub email: String,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A commit signing key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningKey {
    /// The Secret holding the key.
    pub secret_ref: LocalObjectReference,
    /// `gpg` or `ssh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["gpg", "ssh"]))]
    pub r#type: Option<String>,
}

/// Where an automation pushes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PushSpec {
    /// A branch; the checked-out one when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Push options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<BTreeMap<String, String>>,
    /// A refspec pushed besides the branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refspec: Option<String>,
}

/// Where manifests are updated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UpdateStrategy {
    /// The directory, relative to the repository's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `Setters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Setters", "enum" = ["Setters"]))]
    pub strategy: Option<String>,
}

/// Observed state of an ImageUpdateAutomation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct ImageUpdateAutomationStatus {
    /// Conditions of the last run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// When the automation last ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_automation_run_time: Option<String>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The last commit pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_push_commit: Option<String>,
    /// When it was pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_push_time: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The policies applied, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_policies: Option<BTreeMap<String, ImageRef>>,
    /// The source revision the automation last saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_source_revision: Option<String>,
}
