//! Which Alerts an event goes to (Flux's `filterAlertsForEvent`) and Flux's rate limit of
//! identical events.

use crate::event::Event;
use ferroflux_api::notification::{Alert, EventSeverity};
use regex::Regex;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Flux's default `--rate-limit-interval`.
pub const RATE_LIMIT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// What matching an alert found besides the answer: configuration problems Flux reports as
/// `InvalidConfig` events on the Alert.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matched {
    /// Whether the event goes to the alert's provider.
    pub matched: bool,
    /// Problems of the alert's configuration (an invalid regular expression).
    pub problems: Vec<String>,
}

/// Whether `event` goes to `alert`: not suspended, one of its `eventSources` matches (kind,
/// namespace, name or `*`, `matchLabels` against the object's labels, which `labels` looks up
/// only when needed), the severity filter, then the inclusion and exclusion lists.
pub fn matches(
    alert: &Alert,
    event: &Event,
    labels: &mut dyn FnMut() -> Option<BTreeMap<String, String>>,
) -> Matched {
    let mut result = Matched::default();
    if alert.spec.suspend.unwrap_or(false) {
        return result;
    }
    let alert_ns = alert.metadata.namespace.as_deref().unwrap_or("default");
    let o = &event.involved_object;
    let severity_ok = match alert.spec.severity() {
        EventSeverity::Info => true,
        EventSeverity::Error => event.severity == crate::event::SEVERITY_ERROR,
    };
    let mut cached_labels: Option<Option<BTreeMap<String, String>>> = None;
    let source_matches = alert.spec.event_sources.iter().any(|source| {
        let ns = source.namespace.as_deref().unwrap_or(alert_ns);
        if o.namespace != ns || o.kind != source.kind.as_str() || !severity_ok {
            return false;
        }
        if source.name != "*" && source.name != o.name {
            return false;
        }
        let Some(wanted) = &source.match_labels else {
            return true;
        };
        let have = cached_labels.get_or_insert_with(&mut *labels);
        match have {
            Some(have) => wanted.iter().all(|(k, v)| have.get(k) == Some(v)),
            None => false,
        }
    });
    if !source_matches {
        return result;
    }
    let compile = |exp: &String, what: &str, problems: &mut Vec<String>| match Regex::new(exp) {
        Ok(r) => Some(r),
        Err(_) => {
            problems.push(format!("failed to compile {what} regex: {exp}"));
            None
        }
    };
    if let Some(list) = alert.spec.inclusion_list.as_ref().filter(|l| !l.is_empty()) {
        let included = list.iter().any(|exp| {
            compile(exp, "inclusion", &mut result.problems)
                .is_some_and(|r| r.is_match(&event.message))
        });
        if !included {
            return result;
        }
    }
    if let Some(list) = alert.spec.exclusion_list.as_ref() {
        let excluded = list.iter().any(|exp| {
            compile(exp, "exclusion", &mut result.problems)
                .is_some_and(|r| r.is_match(&event.message))
        });
        if excluded {
            return result;
        }
    }
    result.matched = true;
    result
}

/// Flux's key of "the same event": object, message, and the revision, origin revision and
/// token metadata of the object's group.
pub fn rate_limit_key(event: &Event) -> String {
    let o = &event.involved_object;
    let mut parts = vec![
        "event".to_string(),
        format!("name={}", o.name),
        format!("namespace={}", o.namespace),
        format!("kind={}", o.kind),
        format!("message={}", event.message),
    ];
    let group = o.group();
    for key in ["originRevision", "revision", "token"] {
        if let Some(v) = event.metadata.get(&format!("{group}/{key}")) {
            parts.push(format!("{key}={v}"));
        }
    }
    crate::payload::hex(&Sha256::digest(parts.join("/").as_bytes()))
}

/// Lets the same event for the same object through once per interval; memory is bounded by
/// the distinct events of one interval (older keys are dropped).
pub struct RateLimiter {
    interval: Duration,
    seen: HashMap<String, Instant>,
    last_prune: Instant,
}

impl RateLimiter {
    /// A limiter with the given interval (Flux: 5 minutes).
    pub fn new(interval: Duration) -> RateLimiter {
        RateLimiter {
            interval,
            seen: HashMap::new(),
            last_prune: Instant::now(),
        }
    }

    /// Whether `event` may go out now; records it when it may.
    pub fn allow(&mut self, event: &Event, now: Instant) -> bool {
        if self.interval.is_zero() {
            return true;
        }
        if now.duration_since(self.last_prune) >= self.interval {
            let interval = self.interval;
            self.seen.retain(|_, at| now.duration_since(*at) < interval);
            self.last_prune = now;
        }
        let key = rate_limit_key(event);
        match self.seen.get(&key) {
            Some(at) if now.duration_since(*at) < self.interval => false,
            _ => {
                self.seen.insert(key, now);
                true
            }
        }
    }

    /// How many distinct events are remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}
