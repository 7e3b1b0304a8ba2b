//! Helm's release record (`helm.sh/helm/v4/pkg/release/v1.Release`) as Helm writes it to JSON:
//! the same keys, the same omitted-when-empty rules, so a record written here is read by Helm
//! and a record Helm wrote is read here. Fields this crate does not interpret (`info.resources`,
//! keys a later Helm adds) are kept as they were read and written back unchanged.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// Where a release stands (`common.Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Status {
    /// `unknown`: an uncertain state (also what an empty or unrecognised status reads as).
    #[default]
    Unknown,
    /// `deployed`.
    Deployed,
    /// `uninstalled`: kept in history by `keepHistory`.
    Uninstalled,
    /// `superseded`: a newer revision was deployed.
    Superseded,
    /// `failed`.
    Failed,
    /// `uninstalling`: an uninstall is under way.
    Uninstalling,
    /// `pending-install`: an install is under way (the release is locked).
    PendingInstall,
    /// `pending-upgrade`: an upgrade is under way (the release is locked).
    PendingUpgrade,
    /// `pending-rollback`: a rollback is under way (the release is locked).
    PendingRollback,
}

impl Status {
    /// The word Helm stores (`pending-install`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    /// Reads Helm's word; anything else is `Unknown`, as Helm treats it.
    pub fn parse(s: &str) -> Status {
        match s {
            "deployed" => Status::Deployed,
            "uninstalled" => Status::Uninstalled,
            "superseded" => Status::Superseded,
            "failed" => Status::Failed,
            "uninstalling" => Status::Uninstalling,
            "pending-install" => Status::PendingInstall,
            "pending-upgrade" => Status::PendingUpgrade,
            "pending-rollback" => Status::PendingRollback,
            _ => Status::Unknown,
        }
    }

    /// An operation holds the release (Helm's `IsPending`).
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Status::parse(&s))
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Helm's `Info`: times are RFC 3339 strings, empty when unset (Helm omits them then).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Info {
    /// When the release was first deployed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_deployed: String,
    /// When this revision was deployed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_deployed: String,
    /// When the release was uninstalled.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deleted: String,
    /// The human log line of this revision ("Install complete", "Upgrade \"x\" failed: ...").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The revision's status.
    #[serde(default)]
    pub status: Status,
    /// The revision a rollback went back to (0: not a rollback).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rollback_revision: i64,
    /// The chart's rendered NOTES.txt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// What this crate does not interpret (`resources`, later keys), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// When a hook last ran (`HookExecution`); `phase` is always written, even empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookExecution {
    /// When the hook was started.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_at: String,
    /// When the hook completed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completed_at: String,
    /// `Unknown`, `Running`, `Succeeded` or `Failed` (empty: never ran).
    #[serde(default)]
    pub phase: String,
}

/// A hook of the release (`release.Hook`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    /// `metadata.name` of the hook object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The template it came from (`mychart/templates/job.yaml`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The rendered document.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// The events it runs on (`pre-install`, `test`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// When it last ran.
    #[serde(default)]
    pub last_run: HookExecution,
    /// `helm.sh/hook-weight`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
    /// `helm.sh/hook-output-log-policy` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_log_policies: Vec<String>,
}

impl Hook {
    /// The stored form of a hook the engine rendered.
    pub fn from_rendered(h: &ferroflux_helm::Hook) -> Hook {
        Hook {
            name: h.name.clone(),
            kind: h.kind.clone(),
            path: h.path.clone(),
            manifest: h.manifest.clone(),
            events: h.events.iter().map(|e| e.as_str().to_string()).collect(),
            last_run: HookExecution::default(),
            weight: h.weight,
            delete_policies: h.delete_policies.clone(),
            output_log_policies: h.output_log_policies.clone(),
        }
    }

    /// Whether the hook runs on `event`.
    pub fn runs_on(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }
}

fn is_null(v: &Value) -> bool {
    v.is_null()
}

/// One revision of a release, as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Release {
    /// The release name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Status, times, description and notes.
    #[serde(default)]
    pub info: Info,
    /// The chart as Helm stores it (`chart/v2.Chart` JSON; see [`chart_record`]).
    #[serde(default, skip_serializing_if = "is_null")]
    pub chart: Value,
    /// The values the user supplied (not the chart's defaults).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub config: Map<String, Value>,
    /// The rendered non-hook manifests, each framed `---\n# Source: <path>\n<doc>\n`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// The hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    /// The revision (1 for the first install).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: i64,
    /// The namespace the release's objects go to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `ssa` or `csa` (empty: client-side apply, for releases older than Helm 4).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub apply_method: String,
    /// Labels of the storage Secret (not part of the JSON, as in Helm).
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
    /// Keys this crate does not know, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Release {
    /// `chart.metadata.<key>` as text ("" when absent).
    fn chart_field(&self, key: &str) -> &str {
        self.chart
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The chart's name.
    pub fn chart_name(&self) -> &str {
        self.chart_field("name")
    }

    /// The chart's version.
    pub fn chart_version(&self) -> &str {
        self.chart_field("version")
    }

    /// The chart's appVersion.
    pub fn app_version(&self) -> &str {
        self.chart_field("appVersion")
    }

    /// The storage key, `sh.helm.release.v1.<name>.v<version>`.
    pub fn key(&self) -> String {
        crate::storage::secret_name(&self.name, self.version)
    }
}

/// The time now as Helm writes it (RFC 3339 with nanoseconds, UTC).
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn files_json(files: &[ferroflux_helm::File]) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    Value::Array(
        files
            .iter()
            .map(|f| json!({"name": f.name, "data": b64.encode(&f.data)}))
            .collect(),
    )
}

fn put_str(m: &mut Map<String, Value>, key: &str, v: &str) {
    if !v.is_empty() {
        m.insert(key.into(), Value::String(v.into()));
    }
}

fn put_strs(m: &mut Map<String, Value>, key: &str, v: &[String]) {
    if !v.is_empty() {
        m.insert(key.into(), json!(v));
    }
}

fn metadata_json(md: &ferroflux_helm::Metadata) -> Value {
    let mut m = Map::new();
    put_str(&mut m, "name", &md.name);
    put_str(&mut m, "home", &md.home);
    put_strs(&mut m, "sources", &md.sources);
    put_str(&mut m, "version", &md.version);
    put_str(&mut m, "description", &md.description);
    put_strs(&mut m, "keywords", &md.keywords);
    let maintainers: Vec<Value> = md
        .maintainers
        .iter()
        .map(|mt| match mt {
            None => Value::Null,
            Some(mt) => {
                let mut o = Map::new();
                put_str(&mut o, "name", &mt.name);
                put_str(&mut o, "email", &mt.email);
                put_str(&mut o, "url", &mt.url);
                Value::Object(o)
            }
        })
        .collect();
    if !maintainers.is_empty() {
        m.insert("maintainers".into(), Value::Array(maintainers));
    }
    put_str(&mut m, "icon", &md.icon);
    put_str(&mut m, "apiVersion", &md.api_version);
    put_str(&mut m, "condition", &md.condition);
    put_str(&mut m, "tags", &md.tags);
    put_str(&mut m, "appVersion", &md.app_version);
    if md.deprecated {
        m.insert("deprecated".into(), Value::Bool(true));
    }
    if let Some(a) = md.annotations.as_ref().filter(|a| !a.is_empty()) {
        let o: Map<String, Value> = a
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        m.insert("annotations".into(), Value::Object(o));
    }
    put_str(&mut m, "kubeVersion", &md.kube_version);
    let deps: Vec<Value> = md
        .dependencies
        .iter()
        .map(|d| match d {
            None => Value::Null,
            Some(d) => {
                let mut o = Map::new();
                o.insert("name".into(), Value::String(d.name.clone()));
                put_str(&mut o, "version", &d.version);
                o.insert("repository".into(), Value::String(d.repository.clone()));
                put_str(&mut o, "condition", &d.condition);
                put_strs(&mut o, "tags", &d.tags);
                if d.enabled {
                    o.insert("enabled".into(), Value::Bool(true));
                }
                if !d.import_values.is_empty() {
                    o.insert(
                        "import-values".into(),
                        Value::Array(d.import_values.clone()),
                    );
                }
                put_str(&mut o, "alias", &d.alias);
                Value::Object(o)
            }
        })
        .collect();
    if !deps.is_empty() {
        m.insert("dependencies".into(), Value::Array(deps));
    }
    put_str(&mut m, "type", &md.chart_type);
    Value::Object(m)
}

/// The chart as Helm stores it in a release (`chart/v2.Chart`'s JSON): metadata, lock,
/// templates and files with base64 data, default values and schema. Subcharts are not part of
/// it (Helm's JSON leaves them out too): rollback re-applies the stored manifest, never the
/// chart.
pub fn chart_record(chart: &ferroflux_helm::Chart) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    json!({
        "metadata": metadata_json(&chart.metadata),
        "lock": Value::Null,
        "templates": files_json(&chart.templates),
        "values": Value::Object(chart.values.clone()),
        "schema": chart.schema.as_ref().map(|s| Value::String(b64.encode(s))).unwrap_or(Value::Null),
        "schemamodtime": "0001-01-01T00:00:00Z",
        "files": files_json(&chart.files),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_json_round_trips_and_keeps_unknown_keys() {
        let text = r#"{"name":"web","info":{"first_deployed":"2024-05-01T10:00:00.5+02:00","last_deployed":"","deleted":"","description":"Install complete","status":"deployed","resources":{"v1/Pod":[]}},"chart":{"metadata":{"name":"podinfo","version":"6.5.0","appVersion":"6.5.0"}},"config":{"replicaCount":2},"manifest":"---\n# Source: a\nkind: A\n","hooks":[{"name":"h","kind":"Job","events":["pre-install"],"last_run":{"started_at":"","completed_at":"","phase":""},"weight":-1}],"version":3,"namespace":"apps","apply_method":"ssa","future":1}"#;
        let r: Release = serde_json::from_str(text).unwrap();
        assert_eq!(r.info.status, Status::Deployed);
        assert_eq!(r.info.last_deployed, "");
        assert_eq!(r.chart_name(), "podinfo");
        assert_eq!(r.chart_version(), "6.5.0");
        assert_eq!(r.hooks[0].weight, -1);
        assert_eq!(r.version, 3);
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["future"], 1);
        assert_eq!(back["info"]["resources"], json!({"v1/Pod": []}));
        assert!(back["info"].get("last_deployed").is_none());
        assert_eq!(back["hooks"][0]["last_run"], json!({"phase": ""}));
    }

    #[test]
    fn unknown_status_reads_as_unknown() {
        let r: Release = serde_json::from_str(r#"{"info":{"status":"weird"}}"#).unwrap();
        assert_eq!(r.info.status, Status::Unknown);
        assert!(Status::PendingUpgrade.is_pending());
        assert!(!Status::Failed.is_pending());
    }
}
