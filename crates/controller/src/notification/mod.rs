//! Notifications in and out of the controller process, Flux's notification-controller in one:
//!
//! - [`Notifier`]: the in-process channel every controller's [`crate::events::Recorder`] posts
//!   its events to (beside the Kubernetes Event), stamped with the cluster's name;
//! - [`dispatch`]: reads Alerts and Providers from watch caches, matches each event, applies
//!   Flux's rate limit and sends through `ferroflux-notification`, one queue per Provider so a
//!   provider that is down delays only its own alerts; failures become Events on the Alert;
//! - [`server::events_router`]: `--events-addr`, the HTTP endpoint Flux's controllers post the
//!   same event JSON to;
//! - [`receiver`]: Receivers' status (`webhookPath`) and the webhook server that verifies a
//!   call and annotates the resources with `reconcile.fluxcd.io/requestedAt`.

pub mod dispatch;
pub mod receiver;
pub mod server;

use ferroflux_notification::event::EVENT_GROUP;
use ferroflux_notification::{Event, InvolvedObject};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// How many events wait for the dispatcher before publishers wait in turn.
pub const QUEUE: usize = 4096;

/// Where a controller's events go besides the Kubernetes API. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Notifier {
    tx: mpsc::Sender<Event>,
    cluster: Option<String>,
}

impl Notifier {
    /// A notifier and the receiving end the dispatcher reads.
    pub fn channel(cluster: Option<String>) -> (Notifier, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let cluster = cluster.filter(|c| !c.is_empty());
        (Notifier { tx, cluster }, rx)
    }

    /// The cluster's name, when the controller was given one.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// Queues an event for the dispatcher (waiting while the queue is full: nothing is
    /// dropped), with the cluster's name as `event.toolkit.fluxcd.io/cluster` metadata unless
    /// the event already names one.
    pub async fn post(&self, mut event: Event) {
        if let Some(cluster) = &self.cluster {
            event
                .metadata
                .entry(format!("{EVENT_GROUP}/cluster"))
                .or_insert_with(|| cluster.clone());
        }
        if self.tx.send(event).await.is_err() {
            tracing::debug!("the notification dispatcher has stopped; event not sent");
        }
    }
}

/// The event JSON for a Kubernetes Event a controller publishes: `Warning` is `error`,
/// `Normal` is `info`; `metadata` keys are given in full (`kustomize.toolkit.fluxcd.io/revision`).
pub fn flux_event(
    reporting_controller: &str,
    type_: EventType,
    reason: &str,
    message: &str,
    regarding: &ObjectReference,
    metadata: BTreeMap<String, String>,
) -> Event {
    Event {
        involved_object: InvolvedObject {
            kind: regarding.kind.clone().unwrap_or_default(),
            namespace: regarding.namespace.clone().unwrap_or_default(),
            name: regarding.name.clone().unwrap_or_default(),
            uid: regarding.uid.clone().unwrap_or_default(),
            api_version: regarding.api_version.clone().unwrap_or_default(),
            resource_version: regarding.resource_version.clone().unwrap_or_default(),
            field_path: String::new(),
        },
        severity: match type_ {
            EventType::Warning => ferroflux_notification::event::SEVERITY_ERROR.into(),
            EventType::Normal => ferroflux_notification::event::SEVERITY_INFO.into(),
        },
        timestamp: Event::now(),
        message: message.to_string(),
        reason: reason.to_string(),
        metadata,
        reporting_controller: reporting_controller.to_string(),
        reporting_instance: String::new(),
    }
}
