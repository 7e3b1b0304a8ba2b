//! Fault injection for tests of clients: answer a fraction of requests with an error, or delay
//! every answer ([`FaultConfig`]); and, through [`FaultRule`]s aimed at some requests (writes,
//! one resource, one namespace, real or dry-run), answer them with an error or break their
//! connection: the server closes the TCP connection without answering, before serving the
//! request or after (so the write happened but the client never heard of it); and drop every
//! open connection at once, long-running watches included, as a restarted load balancer or a
//! network blip does. Health and version endpoints are never affected by error faults, so
//! readiness checks still work.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::Method;
use axum::response::Response;
use tokio::sync::{Notify, watch};

use crate::error::ApiError;
use crate::server::Req;

/// The faults in force; all off by default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Fraction (0.0–1.0) of API requests answered with `error_code` instead of being served.
    pub error_rate: f64,
    /// 500, 503 or 429.
    pub error_code: u16,
    /// Added before every API response.
    pub delay: Duration,
}

#[derive(Debug, Default)]
pub struct Faults {
    config: Mutex<FaultConfig>,
    /// Deterministic sequence so a given rate yields exactly that share of failures.
    counter: Mutex<f64>,
    /// Faults aimed at some requests.
    pub rules: Rules,
    /// Bumped to drop every open connection at once (watches included).
    pub resets: ConnectionResets,
}

/// The signal that drops every open connection: each connection holds a receiver.
#[derive(Debug)]
pub struct ConnectionResets(watch::Sender<u64>);

impl Default for ConnectionResets {
    fn default() -> Self {
        ConnectionResets(watch::channel(0).0)
    }
}

impl ConnectionResets {
    /// Drops every connection open now; later ones are not affected.
    pub fn reset_all(&self) {
        self.0.send_modify(|n| *n += 1);
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

impl Faults {
    pub fn set(&self, c: FaultConfig) -> Result<(), String> {
        if !(0.0..=1.0).contains(&c.error_rate) {
            return Err(format!(
                "error rate {} is not between 0 and 1",
                c.error_rate
            ));
        }
        if c.error_rate > 0.0 && !matches!(c.error_code, 429 | 500 | 503) {
            return Err(format!(
                "error code {} is not one of 500, 503, 429",
                c.error_code
            ));
        }
        *self.config.lock().unwrap_or_else(|p| p.into_inner()) = c;
        Ok(())
    }

    pub fn get(&self) -> FaultConfig {
        self.config
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) async fn before(&self, path: &str) -> Option<Response> {
        if matches!(path, "/healthz" | "/readyz" | "/livez" | "/version") {
            return None;
        }
        let c = self.get();
        if !c.delay.is_zero() {
            tokio::time::sleep(c.delay).await;
        }
        if c.error_rate <= 0.0 {
            return None;
        }
        let fail = {
            let mut acc = self.counter.lock().unwrap_or_else(|p| p.into_inner());
            *acc += c.error_rate;
            if *acc >= 1.0 {
                *acc -= 1.0;
                true
            } else {
                false
            }
        };
        fail.then(|| crate::server::err_resp(&ApiError::injected(c.error_code)))
    }
}

/// Which requests a [`FaultRule`] acts on: every field that is set must match.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMatch {
    /// HTTP methods (`PATCH`, `POST`, …); empty matches any.
    pub methods: Vec<String>,
    /// A resource's plural (`configmaps`), or plural and group (`deployments.apps`).
    pub resource: Option<String>,
    /// Only requests in this namespace.
    pub namespace: Option<String>,
    /// Only requests for the object of this name.
    pub name: Option<String>,
    /// `Some(true)`: only dry-run requests (`dryRun=All`); `Some(false)`: only real ones.
    pub dry_run: Option<bool>,
    /// `Some(true)`: only watches (`watch=true`); `Some(false)`: everything but watches.
    pub watch: Option<bool>,
}

impl RequestMatch {
    fn matches(&self, method: &Method, r: &Req, dry_run: bool, watch: bool) -> bool {
        let resource = match &self.resource {
            None => true,
            Some(want) => match want.split_once('.') {
                Some((plural, group)) => r.res.plural == plural && r.res.group == group,
                None => r.res.plural == *want,
            },
        };
        (self.methods.is_empty()
            || self
                .methods
                .iter()
                .any(|m| m.eq_ignore_ascii_case(method.as_str())))
            && resource
            && self
                .namespace
                .as_ref()
                .is_none_or(|n| r.ns.as_deref() == Some(n.as_str()))
            && self
                .name
                .as_ref()
                .is_none_or(|n| r.name.as_deref() == Some(n.as_str()))
            && self.dry_run.is_none_or(|d| d == dry_run)
            && self.watch.is_none_or(|w| w == watch)
    }
}

/// What a [`FaultRule`] does to a request it acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// Close the connection without answering; the request is not served.
    Drop,
    /// Serve the request (a write takes effect), then close the connection without answering.
    DropAfterServing,
    /// Answer with this status (500, 503, 429, or 409 Conflict) instead of serving.
    Error(u16),
}

/// A fault aimed at some requests. Built with [`FaultRule::new`] and narrowed with the
/// builder methods: `FaultRule::new(FaultAction::Drop).writes().resource("configmaps")`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// The requests acted on.
    pub matches: RequestMatch,
    /// What is done to them.
    pub action: FaultAction,
    /// Share (0.0–1.0) of the matching requests acted on, spread evenly (deterministic).
    pub rate: f64,
    /// Acts on at most this many requests, then lets everything through; `None`: no limit.
    pub limit: Option<u64>,
    /// With [`FaultAction::Error`]: the seconds of the `Retry-After` header the answer carries
    /// (the API server sends one with a 429 from its priority and fairness, and with a
    /// `retryAfterSeconds` in the Status); `None`: no header.
    pub retry_after: Option<u64>,
}

impl FaultRule {
    /// Acts on every API request until narrowed.
    pub fn new(action: FaultAction) -> FaultRule {
        FaultRule {
            matches: RequestMatch::default(),
            action,
            rate: 1.0,
            limit: None,
            retry_after: None,
        }
    }
    /// Only writes: POST, PUT, PATCH and DELETE.
    pub fn writes(mut self) -> FaultRule {
        self.matches.methods = ["POST", "PUT", "PATCH", "DELETE"]
            .map(String::from)
            .to_vec();
        self
    }
    /// Only these HTTP methods.
    pub fn methods(mut self, methods: &[&str]) -> FaultRule {
        self.matches.methods = methods.iter().map(|m| m.to_string()).collect();
        self
    }
    /// Only this resource: its plural, or `plural.group`.
    pub fn resource(mut self, resource: &str) -> FaultRule {
        self.matches.resource = Some(resource.to_string());
        self
    }
    /// Only requests in this namespace.
    pub fn namespace(mut self, namespace: &str) -> FaultRule {
        self.matches.namespace = Some(namespace.to_string());
        self
    }
    /// Only requests for the object of this name.
    pub fn name(mut self, name: &str) -> FaultRule {
        self.matches.name = Some(name.to_string());
        self
    }
    /// Only dry-run requests (`true`) or only real ones (`false`).
    pub fn dry_run(mut self, dry_run: bool) -> FaultRule {
        self.matches.dry_run = Some(dry_run);
        self
    }
    /// Acts on this share (0.0–1.0) of the matching requests.
    pub fn rate(mut self, rate: f64) -> FaultRule {
        self.rate = rate;
        self
    }
    /// Only watch requests (a GET with `watch=true`): a rule that drops them breaks every new
    /// watch while leaving lists and reads alone.
    pub fn watches(mut self) -> FaultRule {
        self.matches.watch = Some(true);
        self
    }
    /// The error answer carries `Retry-After: <seconds>`.
    pub fn retry_after(mut self, seconds: u64) -> FaultRule {
        self.retry_after = Some(seconds);
        self
    }
    /// Acts on the next `n` matching requests only.
    pub fn times(mut self, n: u64) -> FaultRule {
        self.limit = Some(n);
        self
    }

    fn check(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.rate) {
            return Err(format!("fault rate {} is not between 0 and 1", self.rate));
        }
        if let FaultAction::Error(code) = self.action
            && !matches!(code, 409 | 429 | 500 | 503)
        {
            return Err(format!(
                "error code {code} is not one of 500, 503, 429, 409"
            ));
        }
        if self.retry_after.is_some() && !matches!(self.action, FaultAction::Error(_)) {
            return Err("Retry-After goes with an error answer, not a broken connection".into());
        }
        Ok(())
    }
}

#[derive(Debug)]
struct ActiveRule {
    rule: FaultRule,
    acc: f64,
    acted: u64,
}

/// What a rule does to one request.
pub(crate) struct Decision {
    pub action: FaultAction,
    pub retry_after: Option<u64>,
}

/// The rules in force and how often they acted.
#[derive(Debug, Default)]
pub struct Rules {
    active: Mutex<Vec<ActiveRule>>,
    injected: AtomicU64,
}

impl Rules {
    pub fn set(&self, rules: Vec<FaultRule>) -> Result<(), String> {
        for r in &rules {
            r.check()?;
        }
        *self.active.lock().unwrap_or_else(|p| p.into_inner()) = rules
            .into_iter()
            .map(|rule| ActiveRule {
                rule,
                acc: 0.0,
                acted: 0,
            })
            .collect();
        Ok(())
    }

    /// How many requests the rules have acted on since the cluster started.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// What the first rule that matches and acts on this request does to it.
    pub(crate) fn decide(
        &self,
        method: &Method,
        r: &Req,
        dry_run: bool,
        watch: bool,
    ) -> Option<Decision> {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        for a in active.iter_mut() {
            if a.rule.limit.is_some_and(|l| a.acted >= l)
                || !a.rule.matches.matches(method, r, dry_run, watch)
            {
                continue;
            }
            a.acc += a.rule.rate;
            if a.acc < 1.0 {
                continue;
            }
            a.acc -= 1.0;
            a.acted += 1;
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Some(Decision {
                action: a.rule.action,
                retry_after: a.rule.retry_after,
            });
        }
        None
    }
}

/// One client connection's kill switch, handed to every request on it, so a handler can
/// break the connection instead of answering.
#[derive(Clone, Debug)]
pub struct Connection {
    kill: Arc<Notify>,
    closed: watch::Receiver<bool>,
}

/// The connection's side of [`Connection`].
pub struct ConnectionControl {
    pub kill: Arc<Notify>,
    pub closed: watch::Sender<bool>,
}

pub fn connection() -> (Connection, ConnectionControl) {
    let kill = Arc::new(Notify::new());
    let (closed, rx) = watch::channel(false);
    (
        Connection {
            kill: kill.clone(),
            closed: rx,
        },
        ConnectionControl { kill, closed },
    )
}

impl Connection {
    /// Closes the connection and waits until it is gone. The response returned goes nowhere: it
    /// only ends handlers that run apart from the connection (HTTP/2 streams).
    pub async fn break_now(mut self) -> Response {
        self.kill.notify_one();
        let _ = self.closed.wait_for(|c| *c).await;
        Response::new(Body::empty())
    }
}
