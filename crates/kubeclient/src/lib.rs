//! `ferroflux-kubeclient`: the one place ferroflux turns a `kube::Config` into a `kube::Client`
//! (the CLI's contexts, the controller's own and remote clusters, the devcluster's clients), so
//! every client retries the same way, and counts its retries.
//!
//! kube-rs's default retry layer retries every 429, 503 and 504 fifteen times with an
//! exponential backoff that grows to minutes: a controller talking to an overloaded API server
//! hangs for about three minutes before it can say why. client-go (`rest/with_retry.go`,
//! `rest/request.go`) instead retries a response only when the server asked for it — a 429 or
//! any 5xx that carries an integer `Retry-After` header — waiting the seconds it names, at most
//! ten times; and a GET whose connection was reset or closed before the answer. We keep that
//! rule for every request, and add one of our own for idempotent requests:
//!
//! - **Server asked** (429 or 5xx with an integer `Retry-After`): any request, waiting what the
//!   server names, at most [`MAX_RETRIES`] times (client-go's rule, unchanged). The server says
//!   it did not process the request, so even a create may be sent again.
//! - **Transient failure** (500, 502, 503, 504 without `Retry-After`, or a connection reset or
//!   closed before the answer): only an idempotent request is sent again, after a jittered
//!   exponential backoff ([`transient_backoff`]: 100 ms doubling, each wait between half and
//!   all of it), at most [`MAX_TRANSIENT_RETRIES`] times. A GitOps reconcile makes hundreds of
//!   requests; without this, a server failing one request in ten never lets one through.
//!   Idempotent, as HTTP (RFC 9110) and the patch formats define it: GET and HEAD (reads,
//!   lists, the start of a watch); PUT (an update: sent twice it stores the same object, and
//!   one that carries a `resourceVersion` meets a `Conflict` rather than overwrite a newer
//!   write); a server-side apply (`application/apply-patch+yaml`: the same configuration
//!   applied twice gives the same object) and a JSON merge patch (RFC 7386: applying it twice
//!   gives what applying it once gives) — the Kustomization controller's applies and status
//!   writes; and any dry-run (`dryRun=All` changes nothing). Not sent again, as in client-go
//!   and controller-runtime: a create (`POST`, which with `generateName` would make a second
//!   object, and otherwise turn a success into `AlreadyExists`), a DELETE (a success would
//!   come back as `NotFound`), a JSON patch (`add` to a list applies twice) and a strategic
//!   merge patch (its `$patch` and list directives are not all idempotent). Those callers see
//!   the error and their reconcile retries from a fresh read.
//!
//! No retry outlasts the caller's deadline: [`within`] sets one for everything a future sends
//! (the Kustomization reconciler passes its `spec.timeout`), and a retry whose wait would end
//! after it is not made; the last answer goes to the caller instead. A refused connection is
//! never retried here (the server is down, not flaky; the reconcile's own retry interval covers
//! it).
//!
//! Every retry is logged at debug level and counted in [`retries`], which the controller serves
//! on `/metrics` as `ferroflux_kube_request_retries_total{verb,code}` (`verb` is the HTTP method,
//! as in client-go's `rest_client_*` metrics; `code` the status, or `<error>` for a broken
//! connection, as client-go labels it).
//!
//! This crate owns client construction, that retry rule and its counter; it must not know any
//! API kind.

use std::error::Error as StdError;
use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::{Body, ClientBuilder};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::time::Instant;
use tower::BoxError;
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};

/// client-go's `maxRetries` for answers carrying `Retry-After` (`rest.NewRequest`).
pub const MAX_RETRIES: u32 = 10;

/// How many times an idempotent request is sent again after a transient failure. With the
/// backoff below the longest series of waits is 3.1 s; at one failure in ten, all six attempts
/// fail once in a million requests.
pub const MAX_TRANSIENT_RETRIES: u32 = 5;

/// The first transient backoff; it doubles at each retry.
const TRANSIENT_BASE: Duration = Duration::from_millis(100);

/// A client for `config`, retrying as described in the crate's documentation instead of
/// kube-rs's default retry. Must be called inside a Tokio runtime (the client's request queue
/// is a task).
pub fn client(mut config: kube::Config) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    let builder = ClientBuilder::try_from(config)?;
    // kube's stack is a boxed, uncloneable service; the retry layer calls it once per attempt,
    // so it goes through a buffer (a handle any number of callers can share).
    Ok(builder
        .with_layer(&BufferLayer::<Request<Body>>::new(1024))
        .with_layer(&RetryLayer::new(RetryAfter::default()))
        .build())
}

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `work` with `deadline` as the bound of every retry its requests make (through any
/// client of this crate, on the task that polls `work`): a retry whose wait would end after
/// the deadline is not made, and the failure is returned at once.
pub async fn within<F: Future>(deadline: Instant, work: F) -> F::Output {
    DEADLINE.scope(deadline, work).await
}

/// The labels of [`retries`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RetryLabels {
    /// The HTTP method (`GET`, `PATCH`, …).
    pub verb: String,
    /// The status code answered, or `<error>` for a broken connection.
    pub code: String,
}

static RETRIES: LazyLock<Family<RetryLabels, Counter>> = LazyLock::new(Family::default);

/// Every retry made by every client of this process, by verb and code. Register it in a
/// Prometheus registry (a clone shares the counts).
pub fn retries() -> &'static Family<RetryLabels, Counter> {
    &RETRIES
}

/// The retry rule for one request (a fresh copy per request counts its attempts).
#[derive(Clone, Debug, Default)]
pub struct RetryAfter {
    /// Retries the server asked for.
    asked: u32,
    /// Retries after transient failures.
    transient: u32,
}

/// Why a request is tried again.
#[derive(Debug, PartialEq, Eq)]
enum Cause {
    /// The server answered with `Retry-After`.
    Asked(Duration),
    /// A transient 5xx or a broken connection on an idempotent request.
    Transient,
}

/// The outcome of one attempt, as the retry rule sees it.
struct Attempt {
    cause: Cause,
    /// The status code, or `<error>`.
    code: String,
}

impl RetryAfter {
    /// Why this outcome may be retried, if it may.
    fn classify<B>(req: &Request<Body>, result: &Result<Response<B>, BoxError>) -> Option<Attempt> {
        match result {
            Ok(response) => {
                let status = response.status();
                let code = status.as_u16().to_string();
                if let Some(wait) = server_asked_wait(status, response.headers()) {
                    return Some(Attempt {
                        cause: Cause::Asked(wait),
                        code,
                    });
                }
                (is_transient(status) && idempotent(req)).then_some(Attempt {
                    cause: Cause::Transient,
                    code,
                })
            }
            Err(e) if connection_lost(e.as_ref()) && idempotent(req) => Some(Attempt {
                cause: Cause::Transient,
                code: "<error>".into(),
            }),
            Err(_) => None,
        }
    }
}

/// client-go's `checkWait`: a 429 or any 5xx with an integer `Retry-After` (seconds).
pub fn server_asked_wait(status: StatusCode, headers: &http::HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: i64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // Go sleeps a negative duration as zero.
    Some(Duration::from_secs(seconds.max(0) as u64))
}

/// The 5xx answers of an API server (or a proxy before it) that a second attempt may not meet:
/// an internal error, a bad or absent upstream, an overloaded server, a timeout. 501 (not
/// implemented) and 505 (HTTP version) would fail the same way again.
fn is_transient(status: StatusCode) -> bool {
    matches!(status.as_u16(), 500 | 502 | 503 | 504)
}

/// Whether sending `req` twice has the effect of sending it once: reads, updates, server-side
/// applies, merge patches and dry-runs (see the crate's documentation for why).
pub fn idempotent<B>(req: &Request<B>) -> bool {
    let method = req.method();
    if *method == Method::GET || *method == Method::HEAD || *method == Method::PUT {
        return true;
    }
    let dry_run = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair == "dryRun=All"));
    let apply = *method == Method::PATCH
        && req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.starts_with("application/apply-patch+yaml")
                    || v.starts_with("application/merge-patch+json")
            });
    dry_run || apply
}

/// The wait before transient retry number `retry` (1-based): `100 ms × 2^(retry-1)`, of which a
/// random half is waited or not ("equal jitter"), so clients that failed together do not come
/// back together.
pub fn transient_backoff(retry: u32) -> Duration {
    let full = TRANSIENT_BASE * 2u32.saturating_pow(retry.saturating_sub(1).min(16));
    let half = full / 2;
    half + half.mul_f64(random_fraction())
}

/// A uniformly spread number in [0, 1): SipHash under std's per-process random keys, over a
/// counter. Jitter needs spread, not secrecy, and this needs no extra crate.
fn random_fraction() -> f64 {
    static KEYS: LazyLock<std::collections::hash_map::RandomState> =
        LazyLock::new(std::collections::hash_map::RandomState::new);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = KEYS.build_hasher();
    h.write_u64(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// A connection reset, or closed before the whole answer came (client-go's
/// `IsConnectionReset` / `IsProbableEOF`); a refused connection is not one.
fn connection_lost(e: &(dyn StdError + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        current = err.source();
    }
    false
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for RetryAfter {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let attempt = RetryAfter::classify(req, result)?;
        let (wait, attempt_no, kind) = match attempt.cause {
            Cause::Asked(wait) => {
                if self.asked >= MAX_RETRIES {
                    return None;
                }
                self.asked += 1;
                (wait, self.asked, "the server asked")
            }
            Cause::Transient => {
                if self.transient >= MAX_TRANSIENT_RETRIES {
                    return None;
                }
                self.transient += 1;
                (
                    transient_backoff(self.transient),
                    self.transient,
                    "transient failure",
                )
            }
        };
        let wake = Instant::now() + wait;
        if DEADLINE.try_with(|d| wake > *d).unwrap_or(false) {
            tracing::debug!(verb = %req.method(), url = %req.uri(), code = %attempt.code,
                "not retrying: the wait would pass the caller's deadline");
            return None;
        }
        RETRIES
            .get_or_create(&RetryLabels {
                verb: req.method().to_string(),
                code: attempt.code.clone(),
            })
            .inc();
        // client-go logs its retries at verbosity 4 only: a debug line, never on the terminal.
        tracing::debug!(verb = %req.method(), url = %req.uri(), code = %attempt.code,
            attempt = attempt_no, ?wait, "retrying: {kind}");
        Some(tokio::time::sleep_until(wake))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        // A streamed body cannot be sent twice: such a request is never retried (client-go
        // does not retry an opaque reader either).
        let body = req.body().try_clone()?;
        let mut clone = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(body)
            .ok()?;
        *clone.headers_mut() = req.headers().clone();
        *clone.extensions_mut() = req.extensions().clone();
        Some(clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, uri: &str, content_type: Option<&str>) -> Request<()> {
        let mut b = Request::builder().method(method).uri(uri);
        if let Some(ct) = content_type {
            b = b.header(http::header::CONTENT_TYPE, ct);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn reads_updates_applies_merges_and_dry_runs_are_idempotent_other_writes_are_not() {
        let ns = "/api/v1/namespaces/a/configmaps";
        assert!(idempotent(&request("GET", ns, None)));
        assert!(idempotent(&request(
            "GET",
            &format!("{ns}?watch=true"),
            None
        )));
        assert!(idempotent(&request(
            "PATCH",
            &format!("{ns}/x?fieldManager=f&force=true"),
            Some("application/apply-patch+yaml")
        )));
        assert!(idempotent(&request(
            "POST",
            &format!("{ns}?dryRun=All"),
            Some("application/json")
        )));
        assert!(idempotent(&request(
            "PUT",
            &format!("{ns}/x"),
            Some("application/json")
        )));
        assert!(idempotent(&request(
            "PATCH",
            &format!("{ns}/x/status"),
            Some("application/merge-patch+json")
        )));
        assert!(idempotent(&request(
            "PATCH",
            &format!("{ns}/x?fieldManager=f&dryRun=All"),
            Some("application/merge-patch+json")
        )));
        for (method, ct) in [
            ("POST", Some("application/json")),
            ("DELETE", None),
            ("PATCH", Some("application/json-patch+json")),
            ("PATCH", Some("application/strategic-merge-patch+json")),
        ] {
            assert!(
                !idempotent(&request(method, &format!("{ns}/x"), ct)),
                "{method} {ct:?}"
            );
        }
        // A name that merely contains the words is no dry-run.
        assert!(!idempotent(&request(
            "DELETE",
            &format!("{ns}/x?propagationPolicy=dryRun%3DAll"),
            None
        )));
    }

    #[test]
    fn transient_backoff_doubles_with_jitter_within_bounds() {
        let mut total_max = Duration::ZERO;
        for retry in 1..=MAX_TRANSIENT_RETRIES {
            let full = TRANSIENT_BASE * 2u32.pow(retry - 1);
            total_max += full;
            let waits: Vec<Duration> = (0..200).map(|_| transient_backoff(retry)).collect();
            assert!(
                waits.iter().all(|w| *w >= full / 2 && *w <= full),
                "{retry}: {waits:?}"
            );
            // The jitter spreads: not every client waits the same.
            let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
            assert!(
                distinct.len() > 100,
                "{retry}: {} distinct waits",
                distinct.len()
            );
        }
        assert_eq!(total_max, Duration::from_millis(3100));
        // Far retry numbers saturate instead of overflowing.
        assert!(transient_backoff(u32::MAX) > Duration::ZERO);
    }

    #[test]
    fn only_transient_server_errors_are_transient() {
        for code in [500, 502, 503, 504] {
            assert!(is_transient(StatusCode::from_u16(code).unwrap()));
        }
        for code in [200, 400, 404, 409, 429, 501, 505] {
            assert!(!is_transient(StatusCode::from_u16(code).unwrap()));
        }
    }
}
