//! The notification crate's tests, one binary: each provider type's payload as a local HTTP
//! server receives it, sending with retries, Alert matching and the rate limit, and Receiver
//! verification.

mod alerts;
mod chat;
mod commit_status;
mod incident;
mod providers;
mod receivers;
mod tls;

use ferroflux_notification::{Event, InvolvedObject};
use std::collections::BTreeMap;

/// Flux's notifier tests' event: a GitRepository `webapp` in `gitops-system`.
pub fn test_event() -> Event {
    Event {
        involved_object: InvolvedObject {
            kind: "GitRepository".into(),
            namespace: "gitops-system".into(),
            name: "webapp".into(),
            api_version: "source.toolkit.fluxcd.io/v1".into(),
            ..Default::default()
        },
        severity: "info".into(),
        timestamp: "2026-01-02T03:04:05Z".into(),
        message: "message".into(),
        reason: "reason".into(),
        metadata: BTreeMap::from([("test".to_string(), "metadata".to_string())]),
        reporting_controller: "source-controller".into(),
        reporting_instance: "source-controller-xyz".into(),
    }
}
