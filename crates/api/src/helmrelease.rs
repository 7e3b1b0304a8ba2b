//! `HelmRelease` of `helm.toolkit.fluxcd.io/v2`: a Helm chart installed and kept up to date in a
//! cluster, with its spec (chart template or reference, values and where they come from, the
//! install/upgrade/test/rollback/uninstall settings, remediation, drift detection, post-renderers)
//! and status (release history, failure counters, what was last attempted).

use crate::common::{DURATION_PATTERN, LocalObjectReference};
use crate::kustomization::{
    CommonMetadata, CustomHealthCheck, DependencyReference, IgnoreRule, Image, KubeConfigReference,
    Patch, ResourceInventory,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Helm release of a chart, reconciled by the helm-controller.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "helm.toolkit.fluxcd.io",
    version = "v2",
    kind = "HelmRelease",
    plural = "helmreleases",
    singular = "helmrelease",
    shortname = "hr",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    namespaced,
    status = "HelmReleaseStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "either chart or chartRef must be set",
    "rule": "(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))"
}]))]
pub struct HelmReleaseSpec {
    /// The HelmChart the controller creates and owns (`<namespace>-<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<HelmChartTemplate>,
    /// A chart source made elsewhere: a HelmChart, OCIRepository or ExternalArtifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_ref: Option<CrossNamespaceSourceReference>,
    /// Labels and annotations added to every object of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// HelmReleases that must be ready before this one is reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<DependencyReference>>,
    /// How changes made to the release's objects in the cluster are found and corrected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_detection: Option<DriftDetection>,
    /// CEL expressions judging the health of custom resources of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_exprs: Option<Vec<CustomHealthCheck>>,
    /// Settings of `helm install`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Install>,
    /// How often the release is reconciled.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// Install into the cluster this kubeconfig names instead of the local one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// Release revisions kept in storage; defaults to 5, 0 keeps them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_integer")]
    pub max_history: Option<i64>,
    /// Keep one Kubernetes client for the whole reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_client: Option<bool>,
    /// Which manifests the post-renderers see: without hooks, with them, or separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_render_strategy: Option<PostRenderStrategy>,
    /// Post-renderers applied to the rendered manifests, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_renderers: Option<Vec<PostRenderer>>,
    /// The Helm release name; defaults to `[<targetNamespace>-]<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 53))]
    pub release_name: Option<String>,
    /// Settings of `helm rollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Rollback>,
    /// ServiceAccount impersonated for every Helm action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub service_account_name: Option<String>,
    /// Namespace of the release's storage Secrets; defaults to the HelmRelease's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub storage_namespace: Option<String>,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Namespace the release is installed into; defaults to the HelmRelease's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub target_namespace: Option<String>,
    /// Settings of `helm test`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Test>,
    /// Timeout of every Helm action; defaults to 5m.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
    /// Settings of `helm uninstall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninstall: Option<Uninstall>,
    /// Settings of `helm upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<Upgrade>,
    /// Inline values, merged over `valuesFrom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_value")]
    pub values: Option<serde_json::Value>,
    /// ConfigMaps and Secrets holding values, merged in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_from: Option<Vec<ValuesReference>>,
    /// How the controller waits for the release's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_strategy: Option<WaitStrategy>,
}

/// Flux's integer fields without a Go-sized format.
fn plain_integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer"})
}

/// Helm values: any YAML, kept as written.
fn any_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// The HelmChart a HelmRelease creates from its `spec.chart`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelmChartTemplate {
    /// Labels and annotations of the HelmChart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<CommonMetadata>,
    /// The HelmChart's spec.
    pub spec: HelmChartTemplateSpec,
}

/// The spec of a templated HelmChart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartTemplateSpec {
    /// Chart name in a HelmRepository, or path of the chart in a Git or Bucket artifact.
    #[schemars(length(min = 1, max = 2048))]
    pub chart: String,
    /// Do not fail when a listed values file is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_values_files: Option<bool>,
    /// How often the HelmChart checks its source; defaults to the HelmRelease's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: Option<String>,
    /// What makes a new chart artifact: a new chart version, or any new source revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ChartVersion"))]
    pub reconcile_strategy: Option<ReconcileStrategy>,
    /// The source holding the chart.
    pub source_ref: CrossNamespaceObjectReference,
    /// Values files of the chart merged over its `values.yaml`, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_files: Option<Vec<String>>,
    /// Signature verification of the chart (OCI charts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<HelmChartTemplateVerification>,
    /// Semver range of the chart version; `*` (the latest) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "*"))]
    pub version: Option<String>,
}

/// When a HelmChart makes a new artifact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReconcileStrategy {
    /// A new chart version.
    #[default]
    ChartVersion,
    /// Any new revision of the source.
    Revision,
}

impl ReconcileStrategy {
    /// The strategy as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileStrategy::ChartVersion => "ChartVersion",
            ReconcileStrategy::Revision => "Revision",
        }
    }
}

/// The source of a templated HelmChart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceObjectReference {
    /// The source's API version; the kind's served version when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The kind of the source.
    pub kind: ChartSourceKind,
    /// The source's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Defaults to the namespace of the HelmRelease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
}

/// Kinds of sources a HelmChart reads charts from.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ChartSourceKind {
    // A Helm repository: the chart is named in its index.
    #[default]
    HelmRepository,
    // A Git repository: the chart is a directory of its artifact.
    GitRepository,
    // A bucket: the chart is a directory of its artifact.
    Bucket,
}

impl ChartSourceKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChartSourceKind::HelmRepository => "HelmRepository",
            ChartSourceKind::GitRepository => "GitRepository",
            ChartSourceKind::Bucket => "Bucket",
        }
    }
}

/// Signature verification settings of a templated HelmChart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartTemplateVerification {
    /// The signing tool whose signatures are checked.
    #[schemars(extend("default" = "cosign"))]
    pub provider: VerificationProvider,
    /// A Secret holding the public keys to verify with; keyless verification without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// Signature verification providers.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationProvider {
    // Sigstore's cosign.
    #[default]
    Cosign,
    // The Notary Project's notation.
    Notation,
}

/// A chart source a HelmRelease refers to (`spec.chartRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceSourceReference {
    /// The source's API version; the kind's served version when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The kind of the chart source.
    pub kind: ChartRefKind,
    /// The source's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Defaults to the namespace of the HelmRelease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
}

/// Kinds a `chartRef` can name.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ChartRefKind {
    // An OCI artifact holding a packaged chart.
    OCIRepository,
    // A HelmChart made elsewhere.
    #[default]
    HelmChart,
    // An artifact published by another controller.
    ExternalArtifact,
}

impl ChartRefKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChartRefKind::OCIRepository => "OCIRepository",
            ChartRefKind::HelmChart => "HelmChart",
            ChartRefKind::ExternalArtifact => "ExternalArtifact",
        }
    }
}

/// Drift detection settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DriftDetection {
    /// Fields left alone when comparing the release with the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<Vec<IgnoreRule>>,
    /// `disabled` (the default), `warn` (report only) or `enabled` (correct the drift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DriftDetectionMode>,
}

/// What drift detection does.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriftDetectionMode {
    // Drift is reported and corrected.
    Enabled,
    // Drift is reported only.
    Warn,
    // The cluster is not compared with the release.
    #[default]
    Disabled,
}

/// What a CRD of the chart's `crds/` directory gets on install or upgrade.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CrdsPolicy {
    // The chart's CRDs are left out.
    Skip,
    // New CRDs are created; existing ones are left as they are.
    Create,
    // New CRDs are created and existing ones replaced.
    CreateReplace,
}

/// Which remediation strategy an action uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    /// Remediate, or retry without remediating.
    pub name: StrategyName,
    /// How long to wait before retrying (RetryOnFailure only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub retry_interval: Option<String>,
}

/// Remediation strategies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StrategyName {
    /// Remediate (uninstall or roll back) a failed action, then retry up to `retries` times.
    #[default]
    RemediateOnFailure,
    /// Retry the failed action after `retryInterval`, without remediating.
    RetryOnFailure,
}

/// Settings of `helm install`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Install {
    /// What the chart's `crds/` get; `Create` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<CrdsPolicy>,
    /// Create the target namespace when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// Skip the chart's install hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Skip validating the rendered manifests against the cluster's OpenAPI schema.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "disableOpenAPIValidation"
    )]
    pub disable_open_api_validation: Option<bool>,
    /// Skip validating the values against the chart's `values.schema.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_schema_validation: Option<bool>,
    /// Do not adopt objects that already exist in the cluster; the install fails on them instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_take_ownership: Option<bool>,
    /// Do not wait for the release's objects to be ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for the release's Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// What happens after a failed install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<InstallRemediation>,
    /// Reuse the name of a release that was uninstalled or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<bool>,
    /// Apply the release's objects with server-side apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<bool>,
    /// Deprecated for `crds: Skip`.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "skipCRDs")]
    pub skip_crds: Option<bool>,
    /// Remediate a failed install, or retry it as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": ".retryInterval cannot be set when .name is 'RemediateOnFailure'",
        "rule": "!has(self.retryInterval) || self.name != 'RemediateOnFailure'"
    }]))]
    pub strategy: Option<Strategy>,
    /// Timeout of the install; the HelmRelease's `timeout` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
}

/// What happens after a failed install.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallRemediation {
    /// Test failures do not count as a failed install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_test_failures: Option<bool>,
    /// Remediate the last failure too, when retries are exhausted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
    /// How many times a failed install is retried; a negative number retries forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_integer")]
    pub retries: Option<i64>,
}

/// Settings of `helm upgrade`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Upgrade {
    /// What happens when the chart's name changes: upgrade in place or reinstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_name_change_strategy: Option<ChartNameChangeStrategy>,
    /// Delete objects the failed upgrade created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// What the chart's `crds/` get; `Skip` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<CrdsPolicy>,
    /// Skip the chart's upgrade hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Skip validating the rendered manifests against the cluster's OpenAPI schema.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "disableOpenAPIValidation"
    )]
    pub disable_open_api_validation: Option<bool>,
    /// Skip validating the values against the chart's `values.schema.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_schema_validation: Option<bool>,
    /// Do not adopt objects that already exist in the cluster; the upgrade fails on them instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_take_ownership: Option<bool>,
    /// Do not wait for the release's objects to be ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for the release's Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// Replace objects that cannot be patched (delete and create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Merge the values over the previous release's instead of the chart's (not declarative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_values: Option<bool>,
    /// What happens after a failed upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<UpgradeRemediation>,
    /// Server-side apply for the upgrade; `auto` follows what the release last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyMode>,
    /// Remediate a failed upgrade, or retry it as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{
        "message": ".retryInterval can only be set when .name is 'RetryOnFailure'",
        "rule": "!has(self.retryInterval) || self.name == 'RetryOnFailure'"
    }]))]
    pub strategy: Option<Strategy>,
    /// Timeout of the upgrade; the HelmRelease's `timeout` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
}

/// What happens when the chart's name changes.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ChartNameChangeStrategy {
    // Upgrade the release to the renamed chart.
    InPlaceUpdate,
    // Uninstall the release and install the renamed chart.
    Reinstall,
}

/// Whether upgrades and rollbacks use server-side apply.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServerSideApplyMode {
    // Always server-side apply.
    Enabled,
    // Always client-side (three-way merge).
    Disabled,
    // Whatever the release being upgraded or rolled back to used.
    Auto,
}

/// What happens after a failed upgrade.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeRemediation {
    /// Test failures do not count as a failed upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_test_failures: Option<bool>,
    /// Remediate the last failure too, when retries are exhausted; on by default when `retries` > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
    /// How many times a failed upgrade is retried; a negative number retries forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_integer")]
    pub retries: Option<i64>,
    /// `rollback` (the default) or `uninstall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RemediationStrategy>,
}

/// How a failed upgrade is remediated.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RemediationStrategy {
    // Roll back to the last successful revision.
    #[default]
    Rollback,
    // Uninstall the release.
    Uninstall,
}

/// Settings of `helm test`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Test {
    /// Run the chart's tests after each install or upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Which of the chart's tests run; all of them by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<TestFilter>>,
    /// A failed test does not fail the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_failures: Option<bool>,
    /// Timeout of the test run; the HelmRelease's `timeout` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
}

/// Which tests run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestFilter {
    /// Leave this test out instead of running only the listed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<bool>,
    /// The test hook's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// Settings of `helm rollback`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// Delete objects the failed rollback created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// Skip the chart's rollback hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Do not wait for the release's objects to be ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for the release's Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// Replace objects that cannot be patched (delete and create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Restart the release's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recreate: Option<bool>,
    /// Server-side apply for the rollback; `auto` follows the revision rolled back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyMode>,
    /// Timeout of the rollback; the HelmRelease's `timeout` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
}

/// Settings of `helm uninstall`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Uninstall {
    /// How the release's objects are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "background"))]
    pub deletion_propagation: Option<DeletionPropagation>,
    /// Skip the chart's delete hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Do not wait for the release's objects to be gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Keep the release's storage, marked uninstalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_history: Option<bool>,
    /// Timeout of the uninstall; the HelmRelease's `timeout` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub timeout: Option<String>,
}

/// How the objects of an uninstalled release are deleted.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeletionPropagation {
    // The owner goes first; the garbage collector deletes dependents after.
    #[default]
    Background,
    // Dependents go first, then the owner.
    Foreground,
    // Dependents are left in place.
    Orphan,
}

/// Which manifests post-renderers see.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostRenderStrategy {
    // Post-renderers see the manifests without hooks.
    Nohooks,
    // Post-renderers see the manifests and hooks together.
    Combined,
    // Post-renderers see the manifests and each hook apart.
    Separate,
}

/// One post-renderer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PostRenderer {
    /// Patches and image overrides applied by kustomize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<KustomizePostRenderer>,
}

/// Kustomize patches and image overrides applied to the rendered manifests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KustomizePostRenderer {
    /// Image names, tags or digests replaced in the manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<Image>>,
    /// Strategic merge or JSON 6902 patches, with optional targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<Patch>>,
}

/// A ConfigMap or Secret key holding values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValuesReference {
    /// The kind of the object holding the values.
    pub kind: ValuesKind,
    /// The value is a string put at `targetPath` as is, not YAML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<bool>,
    /// The object's name, in the HelmRelease's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// A missing object or key is skipped instead of failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// Where in the values the data goes, in `--set` path syntax; the root when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 250),
        regex(pattern = r"^([a-zA-Z0-9_\-.\\\/]|\[[0-9]{1,5}\])+$")
    )]
    pub target_path: Option<String>,
    /// The data key; `values.yaml` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = r"^[\-._a-zA-Z0-9]+$"))]
    pub values_key: Option<String>,
}

/// Kinds that can hold values.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum ValuesKind {
    // A Secret.
    #[default]
    Secret,
    // A ConfigMap.
    ConfigMap,
}

impl ValuesKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ValuesKind::Secret => "Secret",
            ValuesKind::ConfigMap => "ConfigMap",
        }
    }
}

/// How the controller waits for a release's objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WaitStrategy {
    /// The waiter used.
    pub name: WaitStrategyName,
}

/// Wait strategies.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitStrategyName {
    // Poll the objects' status as kstatus reads it.
    #[default]
    Poller,
    // Helm's own waiting.
    Legacy,
}

/// Which action the controller last attempted.
#[allow(missing_docs, reason = "variant docs would change the generated CRD")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReleaseAction {
    // A Helm install.
    Install,
    // A Helm upgrade.
    Upgrade,
}

/// Observed state of a HelmRelease.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct HelmReleaseStatus {
    /// `Ready`, `Released`, `TestSuccess`, `Remediated`, `Drifted`, `Reconciling` and `Stalled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Failures since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<i64>,
    /// `<namespace>/<name>` of the HelmChart the release's chart comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_chart: Option<String>,
    /// The release's revisions, newest first, as the controller saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Snapshot>>,
    /// Failed installs since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_failures: Option<i64>,
    /// Objects of the release (filled by newer controllers; not written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<ResourceInventory>,
    /// Digest of the values of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_config_digest: Option<String>,
    /// Generation of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_generation: Option<i64>,
    /// Install or upgrade: the action the failure counters and remediation refer to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_release_action: Option<ReleaseAction>,
    /// How long the last attempted action took, as a Go duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_release_action_duration: Option<String>,
    /// Chart version of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// Digest of the chart artifact of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision_digest: Option<String>,
    /// Deprecated in Flux for `lastAttemptedConfigDigest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_values_checksum: Option<String>,
    /// The last `reconcile.fluxcd.io/forceAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_force_at: Option<String>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The last `reconcile.fluxcd.io/resetAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reset_at: Option<String>,
    /// Deprecated in Flux for `history`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_integer")]
    pub last_release_revision: Option<i64>,
    /// Digest of the `spec.commonMetadata` last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_common_metadata_digest: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Digest of the `spec.postRenderers` last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_post_renderers_digest: Option<String>,
    /// Namespace of the release's storage, once it has been written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub storage_namespace: Option<String>,
    /// Failed upgrades since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_failures: Option<i64>,
}

/// One revision of a release as the controller recorded it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The action that made the revision: `install` or `upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The version of the snapshot's format, which tells how its digest was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The chart's `appVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// The chart's name.
    pub chart_name: String,
    /// The chart's version.
    pub chart_version: String,
    /// Digest of the values the revision was made with.
    pub config_digest: String,
    /// When the revision was uninstalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub deleted: Option<String>,
    /// Digest of the release as stored (Flux's release digest).
    pub digest: String,
    /// When the release's first revision was deployed.
    #[schemars(extend("format" = "date-time"))]
    pub first_deployed: String,
    /// When this revision was deployed.
    #[schemars(extend("format" = "date-time"))]
    pub last_deployed: String,
    /// The release's name.
    pub name: String,
    /// The release's namespace.
    pub namespace: String,
    /// Digest of the OCI artifact the chart came from, for OCI sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_digest: Option<String>,
    /// Helm's status of the revision (`deployed`, `failed`, `superseded`...).
    pub status: String,
    /// The revision's test hooks by name, when tests ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_hooks: Option<BTreeMap<String, TestHookStatus>>,
    /// Helm's revision number.
    #[schemars(schema_with = "plain_integer")]
    pub version: i64,
}

/// A test hook as the controller saw it run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestHookStatus {
    /// When the hook finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_completed: Option<String>,
    /// When the hook started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_started: Option<String>,
    /// How it ended: `Succeeded`, `Failed`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

impl HelmRelease {
    /// The Helm release name: `spec.releaseName`, else `[<targetNamespace>-]<name>`, shortened
    /// as Flux does when longer than Helm's 53 characters (the first 40 characters, a dash and
    /// the first 12 hex digits of the SHA-256 of the full name).
    pub fn release_name(&self) -> String {
        if let Some(name) = self.spec.release_name.as_deref().filter(|n| !n.is_empty()) {
            return name.to_string();
        }
        let name = self.metadata.name.clone().unwrap_or_default();
        let full = match self.spec.target_namespace.as_deref() {
            Some(ns) if !ns.is_empty() => format!("{ns}-{name}"),
            _ => name,
        };
        shorten_release_name(&full)
    }

    /// The namespace the release is installed into.
    pub fn target_namespace(&self) -> String {
        self.spec
            .target_namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| self.own_namespace())
    }

    /// The namespace of the release's storage Secrets.
    pub fn storage_namespace(&self) -> String {
        self.spec
            .storage_namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| self.own_namespace())
    }

    /// The name of the HelmChart a `spec.chart` template becomes: `<namespace>-<name>`.
    pub fn helm_chart_name(&self) -> String {
        format!(
            "{}-{}",
            self.own_namespace(),
            self.metadata.name.as_deref().unwrap_or_default()
        )
    }

    fn own_namespace(&self) -> String {
        self.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into())
    }
}

/// Helm's longest release name.
pub const MAX_RELEASE_NAME: usize = 53;

/// Flux's shortening of a release name longer than Helm allows: the first 40 characters, `-`,
/// and the first 12 hex digits of the SHA-256 of the whole name (53 characters in all).
pub fn shorten_release_name(name: &str) -> String {
    if name.len() <= MAX_RELEASE_NAME {
        return name.to_string();
    }
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(name.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut cut = 40;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{}", &name[..cut], &digest[..12])
}

/// A value equal to `reconcile.fluxcd.io/requestedAt` forces an upgrade (or an install when out
/// of retries).
pub const FORCE_REQUESTED_AT: &str = "reconcile.fluxcd.io/forceAt";
/// A value equal to `reconcile.fluxcd.io/requestedAt` resets the failure counters.
pub const RESET_REQUESTED_AT: &str = "reconcile.fluxcd.io/resetAt";

/// helm-controller's condition types and reasons beside the `meta` ones in
/// [`crate::conditions`].
pub mod conditions {
    /// The last install or upgrade (and its tests) against the current spec.
    pub const RELEASED: &str = "Released";
    /// The last test run against the current spec.
    pub const TEST_SUCCESS: &str = "TestSuccess";
    /// The last remediation (rollback or uninstall) after a failure.
    pub const REMEDIATED: &str = "Remediated";
    /// Whether the release's objects in the cluster differ from the release (drift detection).
    pub const DRIFTED: &str = "Drifted";

    /// Reasons.
    pub mod reason {
        /// A Helm install succeeded.
        pub const INSTALL_SUCCEEDED: &str = "InstallSucceeded";
        /// A Helm install failed.
        pub const INSTALL_FAILED: &str = "InstallFailed";
        /// A Helm upgrade succeeded.
        pub const UPGRADE_SUCCEEDED: &str = "UpgradeSucceeded";
        /// A Helm upgrade failed.
        pub const UPGRADE_FAILED: &str = "UpgradeFailed";
        /// The release's tests passed.
        pub const TEST_SUCCEEDED: &str = "TestSucceeded";
        /// A test of the release failed.
        pub const TEST_FAILED: &str = "TestFailed";
        /// The remediating rollback succeeded.
        pub const ROLLBACK_SUCCEEDED: &str = "RollbackSucceeded";
        /// The remediating rollback failed.
        pub const ROLLBACK_FAILED: &str = "RollbackFailed";
        /// The remediating uninstall succeeded.
        pub const UNINSTALL_SUCCEEDED: &str = "UninstallSucceeded";
        /// The remediating uninstall failed.
        pub const UNINSTALL_FAILED: &str = "UninstallFailed";
        /// The chart artifact could not be fetched or loaded.
        pub const ARTIFACT_FAILED: &str = "ArtifactFailed";
        /// The release could not be prepared (no client for the target cluster, say).
        pub const INIT_FAILED: &str = "InitFailed";
        /// The release storage could not be read.
        pub const GET_LAST_RELEASE_FAILED: &str = "GetLastReleaseFailed";
        /// An object of `spec.dependsOn` is not ready yet.
        pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
        /// The source (HelmChart) has no artifact for its current spec yet.
        pub const SOURCE_NOT_READY: &str = "SourceNotReady";
        /// A `valuesFrom` reference could not be resolved.
        pub const VALUES_ERROR: &str = "ValuesError";
        /// Remediation retries are exhausted (the Stalled reason).
        pub const RETRIES_EXCEEDED: &str = "RetriesExceeded";
        /// The cluster's objects differ from the release.
        pub const DRIFT_DETECTED: &str = "DriftDetected";
        /// The cluster's objects match the release.
        pub const NO_DRIFT_DETECTED: &str = "NoDriftDetected";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn release(spec: serde_json::Value) -> HelmRelease {
        serde_json::from_value(json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "apps"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn release_names_default_to_target_namespace_and_name_and_are_shortened_as_flux_does() {
        let base = json!({"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"}});
        let hr = release(base.clone());
        assert_eq!(hr.release_name(), "podinfo");
        assert_eq!(hr.target_namespace(), "apps");
        assert_eq!(hr.storage_namespace(), "apps");
        assert_eq!(hr.helm_chart_name(), "apps-podinfo");
        let mut spec = base.clone();
        spec["targetNamespace"] = json!("web");
        spec["storageNamespace"] = json!("store");
        let hr = release(spec);
        assert_eq!(hr.release_name(), "web-podinfo");
        assert_eq!(hr.target_namespace(), "web");
        assert_eq!(hr.storage_namespace(), "store");
        // 66 characters: the first 40, a dash and 12 hex digits of the SHA-256 of the whole.
        let long = format!("team-a-production-{}", "x".repeat(40));
        let mut spec = base;
        spec["targetNamespace"] = json!(long);
        let hr = release(spec);
        assert_eq!(
            hr.release_name(),
            "team-a-production-xxxxxxxxxxxxxxxxxxxxxx-38d451a0b199"
        );
        assert_eq!(hr.release_name().len(), MAX_RELEASE_NAME);
    }
}
