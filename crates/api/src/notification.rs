//! The `notification.toolkit.fluxcd.io` kinds: `Provider` and `Alert` (`v1beta3`), which send the
//! controllers' events out to chat, webhooks and commit statuses, and `Receiver` (`v1`), which lets
//! a webhook call from a Git host or registry request an immediate reconciliation.
//!
//! As in Flux, `Provider` and `Alert` have no status: they are read when an event is dispatched.
//! A `Receiver` has a status with its `webhookPath`.

use crate::common::{DURATION_PATTERN, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Where and how alerts are sent.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "notification.toolkit.fluxcd.io",
    version = "v1beta3",
    kind = "Provider",
    plural = "providers",
    singular = "provider",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-notifications",
    namespaced,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "spec.commitStatusExpr is only supported for the 'github', 'gitlab', 'gitea', 'bitbucketserver', 'bitbucket', 'azuredevops' provider types",
    "rule": "self.type == 'github' || self.type == 'gitlab' || self.type == 'gitea' || self.type == 'bitbucketserver' || self.type == 'bitbucket' || self.type == 'azuredevops' || !has(self.commitStatusExpr)"
}]))]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    /// The endpoint alerts go to: a URL for most types, a project for some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub address: Option<String>,
    /// Secret with `ca.crt` (and `tls.crt`/`tls.key` for mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// The channel to post to (Slack, Rocket, Telegram chat id, Matrix room, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub channel: Option<String>,
    /// A CEL expression over `event`, `provider` and `alert` naming the commit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_status_expr: Option<String>,
    /// Deprecated and unused in v1beta3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: Option<String>,
    /// An HTTP(S) proxy (deprecated in Flux in favour of `proxySecretRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048), regex(pattern = r"^(http|https)://.*$"))]
    pub proxy: Option<String>,
    /// Secret with the proxy's `address` (and `username`/`password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// Secret with `address`, `token`, `headers`, `username`/`password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Workload identity for cloud providers (not supported by ferroflux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Stops sending to this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// How long one send may take; defaults to 15s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$"))]
    pub timeout: Option<String>,
    /// Which service the alerts go to.
    pub r#type: ProviderType,
    /// The name alerts are posted under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub username: Option<String>,
}

/// The service a Provider sends to.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderType {
    Slack,
    Discord,
    Msteams,
    Rocket,
    #[default]
    Generic,
    #[serde(rename = "generic-hmac")]
    GenericHmac,
    Github,
    Gitlab,
    Gitea,
    Giteapullrequestcomment,
    Bitbucketserver,
    Bitbucket,
    Azuredevops,
    Googlechat,
    Googlepubsub,
    Webex,
    Sentry,
    Azureeventhub,
    Telegram,
    Lark,
    Matrix,
    Opsgenie,
    Alertmanager,
    Grafana,
    Githubdispatch,
    Githubpullrequestcomment,
    Gitlabmergerequestcomment,
    Pagerduty,
    Datadog,
    Nats,
    Zulip,
    Otel,
    Zoom,
    #[serde(rename = "incident.io")]
    IncidentIo,
}

impl ProviderType {
    /// The word in `spec.type`.
    pub fn as_str(self) -> &'static str {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => {
                match ALL_PROVIDER_TYPES.iter().find(|t| **t == s) {
                    Some(t) => t,
                    None => "generic",
                }
            }
            _ => "generic",
        }
    }

    /// Types that set a commit status on the revision's commit rather than post a message.
    pub fn is_commit_status(self) -> bool {
        matches!(
            self,
            ProviderType::Github
                | ProviderType::Gitlab
                | ProviderType::Gitea
                | ProviderType::Bitbucketserver
                | ProviderType::Bitbucket
                | ProviderType::Azuredevops
        )
    }
}

/// Every `spec.type` a Provider may have, as Flux spells them.
pub const ALL_PROVIDER_TYPES: &[&str] = &[
    "slack",
    "discord",
    "msteams",
    "rocket",
    "generic",
    "generic-hmac",
    "github",
    "gitlab",
    "gitea",
    "giteapullrequestcomment",
    "bitbucketserver",
    "bitbucket",
    "azuredevops",
    "googlechat",
    "googlepubsub",
    "webex",
    "sentry",
    "azureeventhub",
    "telegram",
    "lark",
    "matrix",
    "opsgenie",
    "alertmanager",
    "grafana",
    "githubdispatch",
    "githubpullrequestcomment",
    "gitlabmergerequestcomment",
    "pagerduty",
    "datadog",
    "nats",
    "zulip",
    "otel",
    "zoom",
    "incident.io",
];

/// Which events go to which Provider.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "notification.toolkit.fluxcd.io",
    version = "v1beta3",
    kind = "Alert",
    plural = "alerts",
    singular = "alert",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-notifications",
    namespaced,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AlertSpec {
    /// Extra metadata added to every event this alert sends (an event's own keys win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_metadata: Option<BTreeMap<String, String>>,
    /// `info` sends every event, `error` only errors.
    #[serde(default = "default_severity", skip_serializing_if = "Option::is_none")]
    pub event_severity: Option<EventSeverity>,
    /// The objects whose events this alert sends.
    pub event_sources: Vec<CrossNamespaceObjectReference>,
    /// Regular expressions; a message matching any is not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusion_list: Option<Vec<String>>,
    /// Regular expressions; when set, only a message matching one is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusion_list: Option<Vec<String>>,
    /// The Provider in the alert's namespace.
    pub provider_ref: LocalObjectReference,
    /// A short description (deprecated in Flux for `eventMetadata.summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 255))]
    pub summary: Option<String>,
    /// Stops sending this alert's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

fn default_severity() -> Option<EventSeverity> {
    Some(EventSeverity::Info)
}

/// The severity an alert filters on.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventSeverity {
    #[default]
    Info,
    Error,
}

impl AlertSpec {
    /// `spec.eventSeverity`, `info` when unset.
    pub fn severity(&self) -> EventSeverity {
        self.event_severity.unwrap_or_default()
    }
}

/// An object or a set of objects (`name: "*"` with `matchLabels`) of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceObjectReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the referent.
    pub kind: FluxKind,
    /// Labels the objects must carry (with `name: "*"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Name of the referent, or `*` for every object of the kind.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Namespace of the referent; the referring object's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub namespace: Option<String>,
}

/// A Flux kind an Alert or Receiver can refer to.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FluxKind {
    Bucket,
    GitRepository,
    #[default]
    Kustomization,
    HelmRelease,
    HelmChart,
    HelmRepository,
    ImageRepository,
    ImagePolicy,
    ImageUpdateAutomation,
    OCIRepository,
    ArtifactGenerator,
    ExternalArtifact,
}

impl FluxKind {
    /// The kind's name, as in `kind:`.
    pub fn as_str(self) -> &'static str {
        match self {
            FluxKind::Bucket => "Bucket",
            FluxKind::GitRepository => "GitRepository",
            FluxKind::Kustomization => "Kustomization",
            FluxKind::HelmRelease => "HelmRelease",
            FluxKind::HelmChart => "HelmChart",
            FluxKind::HelmRepository => "HelmRepository",
            FluxKind::ImageRepository => "ImageRepository",
            FluxKind::ImagePolicy => "ImagePolicy",
            FluxKind::ImageUpdateAutomation => "ImageUpdateAutomation",
            FluxKind::OCIRepository => "OCIRepository",
            FluxKind::ArtifactGenerator => "ArtifactGenerator",
            FluxKind::ExternalArtifact => "ExternalArtifact",
        }
    }

    /// The kind's `apiVersion` when a reference leaves it out.
    pub fn default_api_version(self) -> &'static str {
        match self {
            FluxKind::Kustomization => "kustomize.toolkit.fluxcd.io/v1",
            FluxKind::HelmRelease => "helm.toolkit.fluxcd.io/v2",
            FluxKind::ImageRepository | FluxKind::ImagePolicy => "image.toolkit.fluxcd.io/v1",
            FluxKind::ImageUpdateAutomation => "image.toolkit.fluxcd.io/v1",
            FluxKind::ArtifactGenerator => "source.extensions.fluxcd.io/v1beta1",
            _ => "source.toolkit.fluxcd.io/v1",
        }
    }

    /// The plural resource name.
    pub fn plural(self) -> &'static str {
        match self {
            FluxKind::Bucket => "buckets",
            FluxKind::GitRepository => "gitrepositories",
            FluxKind::Kustomization => "kustomizations",
            FluxKind::HelmRelease => "helmreleases",
            FluxKind::HelmChart => "helmcharts",
            FluxKind::HelmRepository => "helmrepositories",
            FluxKind::ImageRepository => "imagerepositories",
            FluxKind::ImagePolicy => "imagepolicies",
            FluxKind::ImageUpdateAutomation => "imageupdateautomations",
            FluxKind::OCIRepository => "ocirepositories",
            FluxKind::ArtifactGenerator => "artifactgenerators",
            FluxKind::ExternalArtifact => "externalartifacts",
        }
    }

    /// The kind named `name` (as written in `kind:`).
    pub fn parse(name: &str) -> Option<FluxKind> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }
}

/// A webhook endpoint that requests reconciliations.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "notification.toolkit.fluxcd.io",
    version = "v1",
    kind = "Receiver",
    plural = "receivers",
    singular = "receiver",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-notifications",
    namespaced,
    status = "ReceiverStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[schemars(extend("x-kubernetes-validations" = [
    {"message": "generic-oidc receivers must define at least one oidcProvider",
     "rule": "self.type != 'generic-oidc' || (has(self.oidcProviders) && size(self.oidcProviders) > 0)"},
    {"message": "oidcProviders can only be set when type is generic-oidc",
     "rule": "self.type == 'generic-oidc' || !has(self.oidcProviders) || size(self.oidcProviders) == 0"},
    {"message": "secretRef cannot be set when type is generic-oidc",
     "rule": "self.type != 'generic-oidc' || !has(self.secretRef)"},
    {"message": "secretRef is required when type is not generic-oidc",
     "rule": "self.type == 'generic-oidc' || has(self.secretRef)"}
]))]
#[serde(rename_all = "camelCase")]
pub struct ReceiverSpec {
    /// Event types to accept (`push` for GitHub, `Push Hook` for GitLab); all when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// How often the Secret is read again.
    #[serde(
        default = "default_receiver_interval",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(regex(pattern = DURATION_PATTERN))]
    pub interval: Option<String>,
    /// OIDC issuers for `generic-oidc`: the one whose URL is the token's `iss` verifies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["issuerURL"], "x-kubernetes-list-type" = "map"))]
    pub oidc_providers: Option<Vec<OidcProvider>>,
    /// A CEL expression over `res` (each object's metadata) and `req` (the call's JSON body):
    /// only the objects it accepts are reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_filter: Option<String>,
    /// The objects a valid call requests a reconciliation of.
    pub resources: Vec<ReceiverResource>,
    /// Secret with the `token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Stops handling calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Who calls and so how the call is verified.
    pub r#type: ReceiverType,
}

fn default_receiver_interval() -> Option<String> {
    Some("10m".into())
}

/// Who calls a Receiver.
#[allow(missing_docs)] // Flux's API words; a doc comment on a variant would make the CRD's `enum` a `oneOf`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReceiverType {
    #[default]
    Generic,
    #[serde(rename = "generic-hmac")]
    GenericHmac,
    #[serde(rename = "generic-oidc")]
    GenericOidc,
    Github,
    Gitlab,
    Bitbucket,
    Harbor,
    Dockerhub,
    Quay,
    Gcr,
    Nexus,
    Acr,
    Cdevents,
}

impl ReceiverType {
    /// The word in `spec.type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiverType::Generic => "generic",
            ReceiverType::GenericHmac => "generic-hmac",
            ReceiverType::GenericOidc => "generic-oidc",
            ReceiverType::Github => "github",
            ReceiverType::Gitlab => "gitlab",
            ReceiverType::Bitbucket => "bitbucket",
            ReceiverType::Harbor => "harbor",
            ReceiverType::Dockerhub => "dockerhub",
            ReceiverType::Quay => "quay",
            ReceiverType::Gcr => "gcr",
            ReceiverType::Nexus => "nexus",
            ReceiverType::Acr => "acr",
            ReceiverType::Cdevents => "cdevents",
        }
    }
}

/// An object (or objects) a Receiver requests reconciliations of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReceiverResource {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// A CEL expression, as `resourceFilter`, for this entry's objects only (both must accept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Kind of the referent.
    pub kind: FluxKind,
    /// Labels the objects must carry (with `name: "*"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Name of the referent, or `*`.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Namespace of the referent; the Receiver's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub namespace: Option<String>,
}

/// An OIDC issuer of a `generic-oidc` Receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcProvider {
    /// The expected `aud` claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// The issuer; must match the token's `iss`.
    #[serde(rename = "issuerURL")]
    #[schemars(regex(pattern = r"^https?://"))]
    pub issuer_url: String,
    /// CEL checks over the claims.
    #[schemars(length(min = 1))]
    pub validations: Vec<OidcValidation>,
    /// Named CEL expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Vec<OidcVariable>>,
}

/// A CEL check of a `generic-oidc` Receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OidcValidation {
    /// The boolean expression.
    pub expression: String,
    /// What the caller is told when it is false.
    pub message: String,
}

/// A named CEL expression of a `generic-oidc` Receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OidcVariable {
    /// The expression.
    pub expression: String,
    /// Its name.
    pub name: String,
}

/// Observed state of a Receiver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct ReceiverStatus {
    /// Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The last `reconcile.fluxcd.io/requestedAt` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `/hook/<sha256 of token+name+namespace>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
}

/// The path Flux serves a Receiver on: `/hook/` and the hex SHA-256 of token, name and
/// namespace, so the path itself is a secret that changes with the token.
pub fn webhook_path(token: &str, name: &str, namespace: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(token.as_bytes());
    hasher.update(name.as_bytes());
    hasher.update(namespace.as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    format!("/hook/{hex}")
}
