//! Kubernetes Events about the controllers' objects (`events.k8s.io/v1`), deduplicated the way
//! client-go's event correlator does for Flux: the same object, type, reason *and message*
//! within the cache window make one Event whose series count grows, while a new message is a
//! new Event. kube-runtime's `Recorder` leaves the message out of its key, so a second
//! reconcile with another change set would only bump the count of the first one's Event and
//! `events` would keep showing the old change set.

use crate::notification::{Notifier, flux_event};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use serde_json::json;
use tokio::sync::Mutex;

/// How long an Event stays the one a repeat is counted on (kube-runtime's and client-go's
/// order of magnitude).
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    regarding: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    type_: &'static str,
    reason: String,
    note: Option<String>,
}

struct Published {
    namespace: String,
    name: String,
    count: i32,
    last: Instant,
}

/// Publishes Events for one controller.
pub struct Recorder {
    client: kube::Client,
    reporter: Reporter,
    published: Mutex<HashMap<Key, Published>>,
    /// Where every event also goes as Flux's event JSON (the notification dispatcher).
    notifier: Option<Notifier>,
}

fn type_name(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

impl Recorder {
    /// A recorder that publishes through `client` as `reporter` (the controller's name).
    pub fn new(client: kube::Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            published: Mutex::new(HashMap::new()),
            notifier: None,
        }
    }

    /// Also posts every event to the notification dispatcher, as Flux's controllers post to
    /// notification-controller.
    pub fn notifying(mut self, notifier: Option<Notifier>) -> Recorder {
        self.notifier = notifier;
        self
    }

    /// Posts a notification without a Kubernetes Event: Flux's commit status updates
    /// (`<group>/commit_status: update`) go to commit-status providers only.
    pub async fn notify_only(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        metadata: BTreeMap<String, String>,
    ) {
        if let Some(notifier) = &self.notifier {
            notifier
                .post(flux_event(
                    &self.reporter.controller,
                    event.type_,
                    &event.reason,
                    event.note.as_deref().unwrap_or_default(),
                    regarding,
                    metadata,
                ))
                .await;
        }
    }

    /// [`Recorder::publish`] with metadata for the notification (full keys, e.g.
    /// `kustomize.toolkit.fluxcd.io/revision`); the Kubernetes Event does not carry it.
    pub async fn publish_with(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        metadata: BTreeMap<String, String>,
    ) -> Result<(), kube::Error> {
        if let Some(notifier) = &self.notifier {
            notifier
                .post(flux_event(
                    &self.reporter.controller,
                    event.type_,
                    &event.reason,
                    event.note.as_deref().unwrap_or_default(),
                    regarding,
                    metadata,
                ))
                .await;
        }
        self.publish_event(event, regarding).await
    }

    /// Creates the Event, or counts a repeat of an identical one published within the window;
    /// and posts it to the notifier, if any.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        self.publish_with(event, regarding, BTreeMap::new()).await
    }

    async fn publish_event(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = Key {
            regarding: (
                regarding.kind.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.uid.clone(),
            ),
            type_: type_name(event.type_),
            reason: event.reason.clone(),
            note: event.note.clone(),
        };
        let now = Timestamp::now();
        // The lock is never held across an API call: reconciles publish concurrently.
        let repeat = {
            let mut published = self.published.lock().await;
            published.retain(|_, p| p.last.elapsed() < SERIES_WINDOW);
            published
                .get(&key)
                .map(|p| (p.namespace.clone(), p.name.clone(), p.count + 1))
        };
        if let Some((namespace, name, count)) = repeat {
            let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
            let series = EventSeries {
                count,
                last_observed_time: MicroTime(now),
            };
            let patched = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "series": series })),
                )
                .await;
            match patched {
                Ok(_) => {
                    if let Some(p) = self.published.lock().await.get_mut(&key) {
                        p.count = p.count.max(count);
                        p.last = Instant::now();
                    }
                    return Ok(());
                }
                // Deleted meanwhile (Events expire): start a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            regarding
                .name
                .as_deref()
                .unwrap_or(&self.reporter.controller),
            now.as_nanosecond()
        );
        let k8s_event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            type_: Some(type_name(event.type_).into()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            ..Default::default()
        };
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &k8s_event).await?;
        self.published.lock().await.insert(
            key,
            Published {
                namespace,
                name,
                count: 1,
                last: Instant::now(),
            },
        );
        Ok(())
    }
}
