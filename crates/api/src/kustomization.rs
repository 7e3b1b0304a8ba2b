//! `Kustomization` of `kustomize.toolkit.fluxcd.io/v1`.

use crate::common::{DURATION_PATTERN, LocalObjectReference, SecretKeyReference, Selector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A path of a source artifact, built with kustomize and applied to a cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kustomize.toolkit.fluxcd.io",
    version = "v1",
    kind = "Kustomization",
    plural = "kustomizations",
    singular = "kustomization",
    shortname = "ks",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    namespaced,
    status = "KustomizationStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpec {
    /// Build metadata kustomize adds to the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_metadata: Option<Vec<BuildMetadata>>,
    /// Labels and annotations added to every applied object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// Kustomize components added to the build, relative to the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<String>>,
    /// How to decrypt SOPS-encrypted objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
    /// What happens to applied objects when the Kustomization is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// Kustomizations that must be ready before this one is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<DependencyReference>>,
    /// Recreate objects whose immutable fields changed.
    #[serde(default = "default_false", skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// CEL expressions judging the health of custom resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_exprs: Option<Vec<CustomHealthCheck>>,
    /// Objects whose health is checked after applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_checks: Option<Vec<NamespacedObjectKindReference>>,
    /// Fields of applied objects that are left alone when detecting drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<Vec<IgnoreRule>>,
    /// Do not fail when a listed component does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_components: Option<bool>,
    /// Image overrides, as in kustomize's `images`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<Image>>,
    /// How often the path is rebuilt and applied.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// Apply to the cluster this kubeconfig names instead of the local one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// Prefix added to the names of every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub name_prefix: Option<String>,
    /// Suffix added to the names of every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub name_suffix: Option<String>,
    /// Strategic merge and JSON 6902 patches applied after the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<Patch>>,
    /// Path in the artifact holding the kustomization; defaults to its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Variable substitution after the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_build: Option<PostBuild>,
    /// Delete objects that left the source.
    pub prune: bool,
    /// How long to wait after a failure; defaults to the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub retry_interval: Option<String>,
    /// ServiceAccount impersonated when applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// The source whose artifact is built.
    pub source_ref: CrossNamespaceSourceReference,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Namespace set on every namespaced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub target_namespace: Option<String>,
    /// Timeout of apply and health checks; defaults to the interval minus 30s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
    /// Wait for every applied object to be healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
}

fn default_false() -> Option<bool> {
    Some(false)
}

/// Build metadata kustomize can add.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BuildMetadata {
    OriginAnnotations,
    TransformerAnnotations,
}

/// Labels and annotations added to every applied object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommonMetadata {
    /// Annotations set on every applied object (they win over the manifests').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels set on every applied object (they win over the manifests').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// SOPS decryption settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decryption {
    /// The decryption provider; only `sops`.
    pub provider: DecryptionProvider,
    /// Secret holding the keys (`*.agekey`, `*.asc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// ServiceAccount used for cloud KMS authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// Decryption providers.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecryptionProvider {
    #[default]
    Sops,
}

/// What happens to applied objects when the Kustomization is deleted.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete the objects when `prune` is true, orphan them otherwise.
    #[default]
    MirrorPrune,
    Delete,
    WaitForTermination,
    Orphan,
}

/// A Kustomization this one depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyReference {
    /// Name of the Kustomization depended on.
    pub name: String,
    /// Defaults to the namespace of the dependent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A CEL expression deciding readiness instead of the Ready condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_expr: Option<String>,
}

/// CEL health expressions for a kind of custom resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomHealthCheck {
    /// `group/version` of the kind the expressions apply to.
    pub api_version: String,
    /// CEL expression true when the object is healthy.
    pub current: String,
    /// CEL expression true when the object has failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// CEL expression true while the object is still progressing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
    /// The kind the expressions apply to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// An object whose health is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedObjectKindReference {
    /// `group/version` of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// Defaults to the namespace of the Kustomization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// JSON pointers ignored on the objects a selector matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IgnoreRule {
    /// RFC 6901 JSON pointers of the fields to ignore.
    pub paths: Vec<String>,
    /// The objects the rule applies to; all when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Selector>,
}

/// An image override.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Digest that replaces the tag (`sha256:...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Image name as written in the manifests.
    pub name: String,
    /// Name that replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// Tag that replaces the original one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
}

/// Where the kubeconfig of a remote cluster is read from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "message": "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
        "rule": "has(self.configMapRef) || has(self.secretRef)"
    },
    {
        "message": "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified",
        "rule": "!has(self.configMapRef) || !has(self.secretRef)"
    }
]))]
pub struct KubeConfigReference {
    /// ConfigMap with the settings of a cloud-provider identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<LocalObjectReference>,
    /// Secret with the kubeconfig, under `key`, else `value`, else `value.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyReference>,
}

/// A patch and the objects it applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Patch {
    /// A strategic merge patch or a JSON 6902 patch, as YAML or JSON.
    pub patch: String,
    /// The objects the patch applies to; for a strategic merge patch, the patch's own kind and name when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Selector>,
}

/// Variable substitution after the build.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostBuild {
    /// Inline variables; they win over `substituteFrom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitute: Option<BTreeMap<String, String>>,
    /// ConfigMaps and Secrets whose data are variables; later entries win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitute_from: Option<Vec<SubstituteReference>>,
    /// Whether to substitute when no variables are defined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitute_strategy: Option<SubstituteStrategy>,
}

/// When substitution runs.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SubstituteStrategy {
    WithVariables,
    Always,
}

/// A ConfigMap or Secret holding substitution variables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubstituteReference {
    /// Secret or ConfigMap.
    pub kind: SubstituteKind,
    /// Name of the object, in the Kustomization's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// A missing optional object is skipped instead of failing.
    #[serde(default = "default_false", skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Kinds that can hold substitution variables.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SubstituteKind {
    #[default]
    Secret,
    ConfigMap,
}

/// The source whose artifact is built.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceSourceReference {
    /// `group/version` of the source kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the source.
    pub kind: SourceKind,
    /// Name of the source.
    pub name: String,
    /// Defaults to the namespace of the Kustomization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Kinds of sources.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SourceKind {
    OCIRepository,
    #[default]
    GitRepository,
    Bucket,
    ExternalArtifact,
}

impl SourceKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::OCIRepository => "OCIRepository",
            SourceKind::GitRepository => "GitRepository",
            SourceKind::Bucket => "Bucket",
            SourceKind::ExternalArtifact => "ExternalArtifact",
        }
    }
}

/// Observed state of a Kustomization.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct KustomizationStatus {
    /// Ready, Reconciling, Stalled and Healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Recent reconciliations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Snapshot>>,
    /// The objects applied by the last successful reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<ResourceInventory>,
    /// The origin revision (from the artifact's metadata) of the last applied revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_origin_revision: Option<String>,
    /// The source revision last applied successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// The source revision last attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One entry of the reconciliation history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Digest of the objects applied, `sha256:<hex>`.
    pub digest: String,
    /// When this digest was first reconciled.
    #[schemars(extend("format" = "date-time"))]
    pub first_reconciled: String,
    /// When it was last reconciled.
    #[schemars(extend("format" = "date-time"))]
    pub last_reconciled: String,
    /// How long the last reconciliation took.
    pub last_reconciled_duration: String,
    /// The Ready reason of the last reconciliation.
    pub last_reconciled_status: String,
    /// The source revision and other facts of the reconciliations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// How many times this digest was reconciled.
    pub total_reconciliations: i64,
}

/// The applied objects, by Flux inventory id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceInventory {
    /// One entry per applied object.
    pub entries: Vec<ResourceRef>,
}

/// One inventory entry: `<namespace>_<name>_<group>_<kind>` and the API version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRef {
    /// `<namespace>_<name>_<group>_<kind>`.
    pub id: String,
    /// The object's API version.
    pub v: String,
}
