//! The dispatcher: every event from the channel is matched against the Alerts (from a watch
//! cache), rate limited as Flux does (the same event for the same object once per interval),
//! combined with the alert's metadata and sent to the alert's Provider. Each Provider has its
//! own bounded queue and worker (up to 16 sends in flight), so a provider that is down (retried
//! with backoff) delays only its own notifications; when its queue is full further events for it are dropped with a
//! Warning Event on the Alert, never blocking the others. Secrets are read at send time, as
//! Flux does, so a rotated token applies to the next event.

use crate::events::Recorder;
use ferroflux_api::notification::{Alert, FluxKind, Provider, ProviderType};
use ferroflux_notification::Event;
use ferroflux_notification::alert::{RATE_LIMIT_INTERVAL, RateLimiter, matches};
use ferroflux_notification::config;
use ferroflux_notification::payload::{self, ProviderConfig};
use ferroflux_notification::send::{Retry, Sender};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::events::{Event as KubeEvent, EventType, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How the dispatcher behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// Flux's `--rate-limit-interval` (5 minutes); zero lets every event through.
    pub rate_limit: Duration,
    /// Retries of a failed send (Flux's: 4 retries, 2 s to 30 s).
    pub retry: Retry,
    /// Notifications waiting per Provider before further ones are dropped.
    pub provider_queue: usize,
    /// Where the receiver server reads Google's signing keys for GCR receivers (Google's
    /// own unless a mirror is configured).
    pub google_keys_url: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rate_limit: RATE_LIMIT_INTERVAL,
            retry: Retry::default(),
            provider_queue: 10_000,
            google_keys_url: ferroflux_notification::idtoken::GOOGLE_CERTS_URL.into(),
        }
    }
}

/// Sends to one provider at once; a provider that is down holds at most these.
const SENDS_IN_FLIGHT: usize = 16;

/// One notification for one provider.
struct Job {
    config: ProviderConfig,
    event: Event,
    alert: Arc<Alert>,
}

struct Dispatcher {
    client: kube::Client,
    alerts: Store<Alert>,
    providers: Store<Provider>,
    recorder: Arc<Recorder>,
    options: Options,
    workers: HashMap<(String, String), mpsc::Sender<Job>>,
}

/// Starts the dispatcher on `rx`; it ends when every [`super::Notifier`] is dropped.
pub fn spawn(
    client: kube::Client,
    mut rx: mpsc::Receiver<Event>,
    options: Options,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (alerts, alert_writer) = reflector::store::<Alert>();
        let (providers, provider_writer) = reflector::store::<Provider>();
        let watches = [
            tokio::spawn(
                reflector::reflector(
                    alert_writer,
                    watcher(
                        Api::<Alert>::all(client.clone()),
                        watcher::Config::default(),
                    ),
                )
                .default_backoff()
                .applied_objects()
                .for_each(|_| futures::future::ready(())),
            ),
            tokio::spawn(
                reflector::reflector(
                    provider_writer,
                    watcher(
                        Api::<Provider>::all(client.clone()),
                        watcher::Config::default(),
                    ),
                )
                .default_backoff()
                .applied_objects()
                .for_each(|_| futures::future::ready(())),
            ),
        ];
        // Events posted before the caches are filled would find no alert. Without the CRDs the
        // caches never fill: after a while events are matched against what is there.
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            let _ = alerts.wait_until_ready().await;
            let _ = providers.wait_until_ready().await;
        })
        .await;
        let reporter = Reporter {
            controller: "notification-controller".into(),
            instance: None,
        };
        let mut dispatcher = Dispatcher {
            recorder: Arc::new(Recorder::new(client.clone(), reporter)),
            client,
            alerts,
            providers,
            options: options.clone(),
            workers: HashMap::new(),
        };
        let mut limiter = RateLimiter::new(options.rate_limit);
        while let Some(mut event) = rx.recv().await {
            event.cleanup_metadata();
            if !limiter.allow(&event, Instant::now()) {
                tracing::debug!(
                    kind = %event.involved_object.kind,
                    name = %event.involved_object.name,
                    "discarding event, rate limiting duplicate events"
                );
                continue;
            }
            event.exclude_internal_metadata();
            dispatcher.dispatch(event).await;
        }
        for w in watches {
            w.abort();
        }
    })
}

impl Dispatcher {
    async fn dispatch(&mut self, event: Event) {
        let alerts = self.alerts.state();
        let needs_labels = alerts.iter().any(|a| {
            a.spec
                .event_sources
                .iter()
                .any(|s| s.match_labels.is_some() && s.kind.as_str() == event.involved_object.kind)
        });
        let labels = if needs_labels {
            self.labels_of(&event).await
        } else {
            None
        };
        let mut matched = Vec::new();
        for alert in alerts {
            let m = matches(&alert, &event, &mut || labels.clone());
            for problem in &m.problems {
                self.warn(&alert, "InvalidConfig", problem.clone()).await;
            }
            if m.matched {
                matched.push(alert);
            }
        }
        if matched.is_empty() {
            tracing::trace!("discarding event, no alerts found for the involved object");
            return;
        }
        for alert in matched {
            if let Err(message) = self.dispatch_to(&alert, &event).await {
                tracing::warn!(alert = %alert.name_any(), error = %message, "failed to dispatch notification");
                let text = format!(
                    "failed to dispatch notification for {}: {message}",
                    object_string(&event)
                );
                self.warn(&alert, "NotificationDispatchFailed", text).await;
            }
        }
    }

    async fn dispatch_to(&mut self, alert: &Arc<Alert>, event: &Event) -> Result<(), String> {
        let ns = alert.namespace().unwrap_or_default();
        let name = &alert.spec.provider_ref.name;
        let provider = self
            .providers
            .get(&ObjectRef::new(name).within(&ns))
            .ok_or_else(|| format!("failed to read provider: provider '{ns}/{name}' not found"))?;
        if provider.spec.suspend.unwrap_or(false) {
            return Ok(());
        }
        let kind = provider.spec.r#type;
        let severity_error = event.severity == ferroflux_notification::event::SEVERITY_ERROR;
        let group = event.involved_object.group().to_string();
        let commit_status_update = event
            .metadata
            .get(&format!("{group}/commit_status"))
            .is_some_and(|v| v == "update");
        let is_generic = matches!(kind, ProviderType::Generic | ProviderType::GenericHmac);
        if !kind.is_commit_status() && !is_generic && commit_status_update {
            return Ok(());
        }
        let has_commit = event
            .metadata
            .get("event.toolkit.fluxcd.io/commit")
            .is_some_and(|c| !c.is_empty());
        if kind.is_commit_status() && !has_commit && !commit_status_update && !severity_error {
            tracing::debug!(alert = %alert.name_any(), "event dropped for commit status provider: no commit metadata");
            return Ok(());
        }
        // Comment types comment on the change request the event names (an annotation
        // `event.toolkit.fluxcd.io/change_request` on the object); others are not theirs.
        let comments = matches!(
            kind,
            ProviderType::Githubpullrequestcomment
                | ProviderType::Gitlabmergerequestcomment
                | ProviderType::Giteapullrequestcomment
        );
        let has_change_request = event
            .metadata
            .get("event.toolkit.fluxcd.io/change_request")
            .is_some_and(|c| !c.is_empty());
        if comments && !has_change_request {
            tracing::debug!(alert = %alert.name_any(), "event dropped for change request provider: no change_request metadata");
            return Ok(());
        }
        let mut notification = event.clone();
        let conflicts = notification.combine_metadata(
            &alert.spec.event_metadata.clone().unwrap_or_default(),
            alert.spec.summary.as_deref(),
        );
        if !conflicts.is_empty() {
            self.warn(
                alert,
                "MetadataAppendFailed",
                "metadata key conflicts detected (please refer to the Alert API docs and Flux RFC 0008 for more information)".into(),
            )
            .await;
        }
        let mut config = self.provider_config(&provider).await.map_err(|e| {
            format!(
                "failed to initialize notifier for provider '{}': {e}",
                provider.name_any()
            )
        })?;
        if kind.is_commit_status()
            && let Some(expr) = provider
                .spec
                .commit_status_expr
                .as_deref()
                .filter(|e| !e.is_empty())
        {
            config.commit_status_id = Some(
                commit_status_id(expr, &notification, &provider, alert).map_err(|e| {
                    format!(
                        "failed to initialize notifier for provider '{}': {e}",
                        provider.name_any()
                    )
                })?,
            );
        }
        // Refuse what cannot be sent before it is queued, naming the problem on the Alert.
        payload::plan(&config, &notification).map_err(|e| e.to_string())?;
        let key = (ns.clone(), name.clone());
        let job = Job {
            config,
            event: notification,
            alert: alert.clone(),
        };
        let worker = self.worker(key);
        match worker.try_send(job) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(format!(
                "provider '{ns}/{name}' has {} notifications waiting; this one is dropped",
                self.options.provider_queue
            )),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                Err(format!("the sender of provider '{ns}/{name}' has stopped"))
            }
        }
    }

    fn worker(&mut self, key: (String, String)) -> mpsc::Sender<Job> {
        if let Some(w) = self.workers.get(&key)
            && !w.is_closed()
        {
            return w.clone();
        }
        let (tx, mut rx) = mpsc::channel::<Job>(self.options.provider_queue.max(1));
        let recorder = self.recorder.clone();
        let retry = self.options.retry;
        tokio::spawn(async move {
            // The client is kept while the provider's settings stay the same (keep-alive).
            let mut cached: Option<(String, Arc<Sender>)> = None;
            // Up to SENDS_IN_FLIGHT sends at once, as Flux sends each notification on its own
            // goroutine: a burst drains at the service's pace, not one round trip at a time.
            let slots = Arc::new(tokio::sync::Semaphore::new(SENDS_IN_FLIGHT));
            while let Some(job) = rx.recv().await {
                let fingerprint = format!(
                    "{:?}|{:?}|{:?}|{:?}|{:?}",
                    job.config.proxy,
                    job.config.ca_pem,
                    job.config.client_pem,
                    job.config.timeout,
                    job.config.kind
                );
                let sender = match &cached {
                    Some((f, s)) if *f == fingerprint => Ok(s.clone()),
                    _ => Sender::new(&job.config, retry).map(Arc::new),
                };
                let sender = match sender {
                    Ok(s) => {
                        cached = Some((fingerprint, s.clone()));
                        s
                    }
                    Err(e) => {
                        let text = format!(
                            "failed to send notification for {}: {e}",
                            object_string(&job.event)
                        );
                        warn_on(&recorder, &job.alert, "NotificationDispatchFailed", text).await;
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let recorder = recorder.clone();
                tokio::spawn(async move {
                    let object = object_string(&job.event);
                    let Job {
                        config,
                        event,
                        alert,
                    } = job;
                    let sent = tokio::task::spawn_blocking(move || {
                        payload::plan(&config, &event)
                            .map_err(|e| e.to_string())
                            .and_then(|plan| sender.send(&plan).map_err(|e| e.to_string()))
                    })
                    .await;
                    drop(slot);
                    let error = match sent {
                        Ok(Ok(_)) => return,
                        Ok(Err(e)) => e,
                        Err(e) => e.to_string(),
                    };
                    tracing::warn!(alert = %alert.name_any(), error = %error, "failed to send notification");
                    let text = format!("failed to send notification for {object}: {error}");
                    warn_on(&recorder, &alert, "NotificationDispatchFailed", text).await;
                });
            }
        });
        self.workers.insert(key, tx.clone());
        tx
    }

    async fn warn(&self, alert: &Alert, reason: &str, note: String) {
        warn_on(&self.recorder, alert, reason, note).await;
    }

    /// The labels of the event's object, for `matchLabels`.
    async fn labels_of(&self, event: &Event) -> Option<BTreeMap<String, String>> {
        let o = &event.involved_object;
        let kind = FluxKind::parse(&o.kind)?;
        let api_version = if o.api_version.is_empty() {
            kind.default_api_version().to_string()
        } else {
            o.api_version.clone()
        };
        let (group, version) = api_version
            .split_once('/')
            .map_or((String::new(), api_version.clone()), |(g, v)| {
                (g.to_string(), v.to_string())
            });
        let resource = ApiResource {
            group,
            version,
            api_version,
            kind: o.kind.clone(),
            plural: kind.plural().into(),
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &o.namespace, &resource);
        match api.get(&o.name).await {
            Ok(obj) => Some(obj.labels().clone()),
            Err(e) => {
                tracing::warn!(error = %e, "error getting the involved object");
                None
            }
        }
    }

    /// The provider with its Secrets read: address, token, headers, credentials, proxy, CA and
    /// client certificate; or the problem, naming the Secret and key.
    async fn provider_config(&self, provider: &Provider) -> Result<ProviderConfig, String> {
        let ns = provider.namespace().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let mut found = BTreeMap::new();
        for name in config::secret_names(provider) {
            match secrets.get_opt(&name).await {
                Ok(Some(secret)) => {
                    let data = secret.data.unwrap_or_default();
                    found.insert(name, data.into_iter().map(|(k, v)| (k, v.0)).collect());
                }
                // Named by the pure check, where the Secret is needed.
                Ok(None) => {}
                Err(e) => return Err(format!("failed to get secret '{ns}/{name}': {e}")),
            }
        }
        config::provider_config(provider, &ns, &provider.uid().unwrap_or_default(), &found)
    }
}

/// `Kustomization/flux-system/apps`, as Flux's messages name the object.
fn object_string(event: &Event) -> String {
    let o = &event.involved_object;
    format!("{}/{}/{}", o.kind, o.namespace, o.name)
}

async fn warn_on(recorder: &Recorder, alert: &Alert, reason: &str, note: String) {
    let event = KubeEvent {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some(note),
        action: "Dispatch".into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &alert.object_ref(&())).await {
        tracing::debug!(error = %e, "failed to publish event");
    }
}

/// The commit status ID a Provider's `commitStatusExpr` gives for `event`: the expression over
/// `event`, `provider` and `alert` (the objects as JSON), which must make a string.
fn commit_status_id(
    expr: &str,
    event: &Event,
    provider: &Provider,
    alert: &Alert,
) -> Result<String, String> {
    let expression = ferroflux_cel::Expression::parse(expr)
        .map_err(|e| format!("invalid commitStatusExpr: {e}"))?;
    let mut vars = serde_json::Map::new();
    for (name, value) in [
        ("event", serde_json::to_value(event)),
        ("provider", serde_json::to_value(provider)),
        ("alert", serde_json::to_value(alert)),
    ] {
        vars.insert(name.into(), value.map_err(|e| e.to_string())?);
    }
    let value = expression
        .evaluate(&vars)
        .map_err(|e| format!("commitStatusExpr: {e}"))?;
    match value.to_json() {
        Some(serde_json::Value::String(id)) => Ok(id),
        other => Err(format!(
            "commitStatusExpr must evaluate to a string, got {}",
            other.map_or_else(
                || "a value with no JSON form".to_string(),
                |v| v.to_string()
            )
        )),
    }
}
