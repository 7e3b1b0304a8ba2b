//! `HelmChart` of `source.toolkit.fluxcd.io/v1`: one chart, pulled from a `HelmRepository` or
//! packaged from a path in a `GitRepository` (or `Bucket`) artifact, served as `<name>-<version>.tgz`.

use crate::common::{Artifact, DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which chart to produce and from where.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "HelmChart",
    plural = "helmcharts",
    singular = "helmchart",
    shortname = "hc",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    namespaced,
    status = "HelmChartStatus",
    printcolumn = r#"{"name":"Chart","type":"string","jsonPath":".spec.chart"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version"}"#,
    printcolumn = r#"{"name":"Source Kind","type":"string","jsonPath":".spec.sourceRef.kind"}"#,
    printcolumn = r#"{"name":"Source Name","type":"string","jsonPath":".spec.sourceRef.name"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "spec.verify is only supported when spec.sourceRef.kind is 'HelmRepository'",
    "rule": "!has(self.verify) || self.sourceRef.kind == 'HelmRepository'"
}]))]
pub struct HelmChartSpec {
    /// The chart's name in a HelmRepository, or its path in a GitRepository or Bucket artifact.
    pub chart: String,
    /// Skip `valuesFiles` entries that do not exist instead of failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_values_files: Option<bool>,
    /// How often the source is checked for a new chart.
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: String,
    /// When a new artifact is produced: `ChartVersion` (the chart's version changed) or
    /// `Revision` (the source's revision changed; Git and Bucket sources only).
    #[serde(default = "default_strategy", skip_serializing_if = "Option::is_none")]
    pub reconcile_strategy: Option<ReconcileStrategy>,
    /// The source of the chart.
    pub source_ref: LocalHelmChartSourceReference,
    /// Stops reconciliation of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Values files merged in order and packaged as the chart's `values.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_files: Option<Vec<String>>,
    /// Signature verification of OCI charts (not supported by ferroflux yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<OciRepositoryVerification>,
    /// Semver range of the chart version (HelmRepository sources only); `*` is the latest.
    #[serde(default = "default_version", skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

fn default_strategy() -> Option<ReconcileStrategy> {
    Some(ReconcileStrategy::ChartVersion)
}

fn default_version() -> Option<String> {
    Some("*".to_string())
}

/// When a HelmChart produces a new artifact.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReconcileStrategy {
    // A new chart version. (Plain comments: doc comments on the variants would turn the
    // schema's `enum` into a `oneOf`.)
    #[default]
    ChartVersion,
    // A new source revision (the version gets `+<revision>` build metadata).
    Revision,
}

/// The kinds a HelmChart can take its chart from.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HelmChartSourceKind {
    HelmRepository,
    GitRepository,
    Bucket,
}

impl HelmChartSourceKind {
    /// The kind as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            HelmChartSourceKind::HelmRepository => "HelmRepository",
            HelmChartSourceKind::GitRepository => "GitRepository",
            HelmChartSourceKind::Bucket => "Bucket",
        }
    }
}

/// A source in the HelmChart's namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalHelmChartSourceReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the referent.
    pub kind: HelmChartSourceKind,
    /// Name of the referent.
    pub name: String,
}

impl Default for LocalHelmChartSourceReference {
    fn default() -> Self {
        LocalHelmChartSourceReference {
            api_version: None,
            kind: HelmChartSourceKind::HelmRepository,
            name: String::new(),
        }
    }
}

/// Flux's `OCIRepositoryVerification`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciRepositoryVerification {
    /// Keyless identities (cosign) that may have signed the chart.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    pub match_oidc_identity: Option<Vec<OidcIdentityMatch>>,
    /// `cosign` or `notation` (required, defaulted to `cosign` by the API server).
    #[schemars(extend("default" = "cosign"))]
    pub provider: VerificationProvider,
    /// Secret with the trusted public keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// A signature verification tool.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerificationProvider {
    Cosign,
    Notation,
}

/// An OIDC issuer and subject, as regular expressions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OidcIdentityMatch {
    /// Regular expression of the issuer.
    pub issuer: String,
    /// Regular expression of the subject.
    pub subject: String,
}

impl HelmChart {
    /// `spec.reconcileStrategy`, `ChartVersion` when unset.
    pub fn reconcile_strategy(&self) -> ReconcileStrategy {
        self.spec.reconcile_strategy.unwrap_or_default()
    }

    /// `spec.version`, `*` when unset or empty.
    pub fn version_range(&self) -> &str {
        match self.spec.version.as_deref() {
            Some(v) if !v.trim().is_empty() => v,
            _ => "*",
        }
    }

    /// The artifact of the last chart built, if any.
    pub fn artifact(&self) -> Option<&Artifact> {
        self.status.as_ref().and_then(|s| s.artifact.as_ref())
    }
}

/// Observed state of a HelmChart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct HelmChartStatus {
    /// The last chart built: `<name>-<version>.tgz`, revision = the chart's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// Ready, Reconciling, Stalled, FetchFailed, BuildFailed and ArtifactInStorage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The name of the chart in the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_chart_name: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The source revision the last artifact was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_source_artifact_revision: Option<String>,
    /// The values files merged into the last artifact (with `ignoreMissingValuesFiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_values_files: Option<Vec<String>>,
    /// A stable address of the last chart (`.../latest.tar.gz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
