//! `ArtifactGenerator` of `source.extensions.fluxcd.io/v1beta1` (Flux's source-watcher) and
//! the `ExternalArtifact` of `source.toolkit.fluxcd.io/v1` it writes: artifacts composed from
//! the artifacts of several sources by `copy` rules, each published as an ExternalArtifact that a
//! Kustomization or a HelmRelease consumes like any other source.

use crate::common::Artifact;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Annotation that disables an ArtifactGenerator's reconciliation (`Disabled`, any case): the
/// generator's suspend, as source-watcher spells it.
pub const RECONCILE_ANNOTATION: &str = "source.extensions.fluxcd.io/reconcile";
/// The label on each ExternalArtifact naming the UID of the generator that wrote it.
pub const GENERATOR_LABEL: &str = "source.extensions.fluxcd.io/generator";
/// The artifact metadata key holding `originRevision` (the origin's commit or tag).
pub const ORIGIN_REVISION: &str = "org.opencontainers.image.revision";
/// The finalizer source-watcher puts on a generator.
pub const GENERATOR_FINALIZER: &str = "source.extensions.fluxcd.io/finalizer";

const ALIAS_REF_PATTERN: &str = r"^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$";
const ALIAS_PATH_PATTERN: &str = r"^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$";

/// The sources an ArtifactGenerator reads and the artifacts it composes from them.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.extensions.fluxcd.io",
    version = "v1beta1",
    kind = "ArtifactGenerator",
    plural = "artifactgenerators",
    singular = "artifactgenerator",
    shortname = "ag",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "ArtifactGeneratorStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "artifact names must be valid Kubernetes object names when pathPattern is not set",
    "rule": "has(self.pathPattern) && size(self.pathPattern) > 0 || self.artifacts.all(a, a.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))"
}]))]
pub struct ArtifactGeneratorSpec {
    /// The artifacts to generate, one ExternalArtifact each.
    #[serde(rename = "artifacts")]
    #[schemars(length(min = 1, max = 1000))]
    pub output_artifacts: Vec<OutputArtifact>,
    /// Labels and annotations set on every generated ExternalArtifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// `@alias/dir/{capture}`: one set of artifacts per matched directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024), regex(pattern = ALIAS_PATH_PATTERN))]
    pub path_pattern: Option<String>,
    /// The sources read, each under an alias.
    #[schemars(length(min = 1, max = 1000))]
    pub sources: Vec<SourceReference>,
}

/// A source read by the generator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceReference {
    /// The name copy rules use (`@alias/...`).
    #[schemars(length(max = 63), regex(pattern = r"^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$"))]
    pub alias: String,
    /// Kind of the source.
    pub kind: GeneratorSourceKind,
    /// Name of the source.
    #[schemars(length(max = 253), regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))]
    pub name: String,
    /// Namespace of the source; the generator's when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub namespace: Option<String>,
}

/// The kinds a generator reads.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum GeneratorSourceKind {
    Bucket,
    #[default]
    GitRepository,
    OCIRepository,
    HelmChart,
    ExternalArtifact,
}

impl GeneratorSourceKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            GeneratorSourceKind::Bucket => "Bucket",
            GeneratorSourceKind::GitRepository => "GitRepository",
            GeneratorSourceKind::OCIRepository => "OCIRepository",
            GeneratorSourceKind::HelmChart => "HelmChart",
            GeneratorSourceKind::ExternalArtifact => "ExternalArtifact",
        }
    }
}

/// One generated artifact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputArtifact {
    /// The copy operations, applied in order (a later one overwrites an earlier one's files).
    #[schemars(length(min = 1))]
    pub copy: Vec<CopyOperation>,
    /// Name of the ExternalArtifact.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// `@alias`: the source whose (origin) revision is recorded as
    /// `org.opencontainers.image.revision` in the artifact's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), regex(pattern = ALIAS_REF_PATTERN))]
    pub origin_revision: Option<String>,
    /// `@alias`: the source whose revision the artifact takes; `latest@<digest>` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), regex(pattern = ALIAS_REF_PATTERN))]
    pub revision: Option<String>,
}

/// One copy from a source into the artifact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CopyOperation {
    /// Glob patterns of files and directories left out of what `from` selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100))]
    pub exclude: Option<Vec<String>>,
    /// `@alias/<path or glob>`.
    #[schemars(length(min = 1, max = 1024), regex(pattern = ALIAS_PATH_PATTERN))]
    pub from: String,
    /// `Overwrite` (default), `Merge` (YAML, Helm's values merge) or `Extract` (tarballs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<CopyStrategy>,
    /// `@artifact/<path>`; a trailing `/` names a directory.
    #[schemars(length(min = 1, max = 1024), regex(pattern = r"^@(artifact)/(.*)$"))]
    pub to: String,
}

/// How a copy writes into the artifact.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CopyStrategy {
    #[default]
    Overwrite,
    Merge,
    Extract,
}

/// Labels and annotations for the generated objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommonMetadata {
    /// Annotations added to each object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels added to each object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// Observed state of an ArtifactGenerator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactGeneratorStatus {
    /// Ready, Reconciling and Stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The ExternalArtifacts generated by the last successful pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Vec<ExternalArtifactReference>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// A digest over the sources' artifacts the last pass read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_sources_digest: Option<String>,
}

/// A generated ExternalArtifact and the file it points at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalArtifactReference {
    /// Digest of the artifact file.
    pub digest: String,
    /// The artifact's file name in storage.
    pub filename: String,
    /// Name of the ExternalArtifact.
    pub name: String,
    /// Namespace of the ExternalArtifact.
    pub namespace: String,
}

impl ArtifactGenerator {
    /// Whether `source.extensions.fluxcd.io/reconcile: Disabled` stops it.
    pub fn is_disabled(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RECONCILE_ANNOTATION))
            .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
    }
}

/// An artifact produced outside source-controller (by an ArtifactGenerator), consumed as a source.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "ExternalArtifact",
    plural = "externalartifacts",
    singular = "externalartifact",
    shortname = "ea",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "ExternalArtifactStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".spec.sourceRef.name"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ExternalArtifactSpec {
    /// The object the artifact is generated for (its ArtifactGenerator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<NamespacedObjectKindReference>,
}

/// A reference to an object of any kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedObjectKindReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the referent.
    pub kind: String,
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Observed state of an ExternalArtifact.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalArtifactStatus {
    /// The artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}
