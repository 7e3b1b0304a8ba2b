//! The event JSON of Flux's `event.toolkit.fluxcd.io` API (`eventv1beta1.Event`), which Flux's
//! controllers POST to notification-controller, and the metadata rules notification-controller
//! applies before an event reaches a Provider.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The API group whose annotations (`event.toolkit.fluxcd.io/<key>`) on an object become
/// metadata of its events; the cluster name travels under it too.
pub const EVENT_GROUP: &str = "event.toolkit.fluxcd.io";
/// The metadata key of the cluster's name (after the group prefix is stripped).
pub const CLUSTER_KEY: &str = "cluster";

/// `info`: the controllers' normal events.
pub const SEVERITY_INFO: &str = "info";
/// `error`: the controllers' warnings.
pub const SEVERITY_ERROR: &str = "error";

/// The object an event is about: Kubernetes' `ObjectReference` with Go's field order and
/// empty fields left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvolvedObject {
    /// `Kustomization`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `kustomize.toolkit.fluxcd.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Unused by Flux; kept for round trips.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
}

impl InvolvedObject {
    /// The API group of `apiVersion` (empty for the core group).
    pub fn group(&self) -> &str {
        match self.api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }
}

/// One event, as Flux's controllers post it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The object the event is about.
    pub involved_object: InvolvedObject,
    /// `info`, `error` or `trace`.
    pub severity: String,
    /// RFC 3339, seconds.
    pub timestamp: String,
    /// The human message.
    pub message: String,
    /// The machine reason (`ReconciliationSucceeded`).
    pub reason: String,
    /// Extra information (revision, cluster, annotations).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// `kustomize-controller`.
    #[serde(default)]
    pub reporting_controller: String,
    /// The controller's instance.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reporting_instance: String,
}

/// A metadata key two sources set, and which ones (in the order they were applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataConflict {
    /// The key.
    pub key: String,
    /// Where it came from.
    pub sources: Vec<&'static str>,
}

impl Event {
    /// The current time in the event's format.
    pub fn now() -> String {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    /// The revision this event is about: `commit`, then `originRevision`, then `revision`
    /// (keys as they are once [`Event::combine_metadata`] has stripped their prefix).
    pub fn revision(&self) -> Option<&str> {
        ["commit", "originRevision", "revision"]
            .iter()
            .find_map(|k| self.metadata.get(*k).map(String::as_str))
    }

    /// The cluster the event comes from, when the controller knows its name.
    pub fn cluster(&self) -> Option<&str> {
        self.metadata
            .get(CLUSTER_KEY)
            .map(String::as_str)
            .filter(|c| !c.is_empty())
    }

    /// What notification-controller keeps of posted metadata: keys of the event group and of
    /// the involved object's group, minus the object's checksum and digest.
    pub fn cleanup_metadata(&mut self) {
        let event_prefix = format!("{EVENT_GROUP}/");
        let object_prefix = format!("{}/", self.involved_object.group());
        let excluded = [
            format!("{object_prefix}checksum"),
            format!("{object_prefix}digest"),
        ];
        self.metadata.retain(|k, _| {
            !excluded.iter().any(|e| e.eq_ignore_ascii_case(k))
                && (k.starts_with(&event_prefix) || k.starts_with(&object_prefix))
        });
    }

    /// Drops the object's `token` metadata: it feeds the rate limit only.
    pub fn exclude_internal_metadata(&mut self) {
        let key = format!("{}/token", self.involved_object.group());
        self.metadata.remove(&key);
    }

    /// Flux's `combineEventMetadata`: the event group's keys, then the alert's
    /// `eventMetadata`, then its `summary`, then the object group's keys, each stripped of its
    /// prefix, the later winning. Returns the keys set by more than one source.
    pub fn combine_metadata(
        &mut self,
        alert_metadata: &BTreeMap<String, String>,
        summary: Option<&str>,
    ) -> Vec<MetadataConflict> {
        let event_prefix = format!("{EVENT_GROUP}/");
        let object_prefix = format!("{}/", self.involved_object.group());
        let mut metadata = BTreeMap::new();
        let mut sources: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
        for (k, v) in &self.metadata {
            if let Some(key) = k.strip_prefix(&event_prefix) {
                metadata.insert(key.to_string(), v.clone());
                sources
                    .entry(key.to_string())
                    .or_default()
                    .push("involved object annotations");
            }
        }
        for (k, v) in alert_metadata {
            metadata.insert(k.clone(), v.clone());
            sources
                .entry(k.clone())
                .or_default()
                .push("Alert object .spec.eventMetadata");
        }
        if let Some(summary) = summary.filter(|s| !s.is_empty()) {
            metadata.insert("summary".into(), summary.to_string());
            sources
                .entry("summary".into())
                .or_default()
                .push("Alert object .spec.summary");
        }
        for (k, v) in &self.metadata {
            if let Some(key) = k.strip_prefix(&object_prefix) {
                metadata.insert(key.to_string(), v.clone());
                sources
                    .entry(key.to_string())
                    .or_default()
                    .push("involved object controller metadata");
            }
        }
        if !metadata.is_empty() {
            self.metadata = metadata;
        }
        sources
            .into_iter()
            .filter(|(_, s)| s.len() > 1)
            .map(|(key, sources)| MetadataConflict { key, sources })
            .collect()
    }

    /// `kustomization/apps.flux-system`, as Flux's chat payloads name the object, with the
    /// cluster in front when known: `[production] kustomization/apps.flux-system`.
    pub fn object_title(&self) -> String {
        let o = &self.involved_object;
        let title = format!("{}/{}.{}", o.kind.to_lowercase(), o.name, o.namespace);
        match self.cluster() {
            Some(cluster) => format!("[{cluster}] {title}"),
            None => title,
        }
    }
}
