//! `ferroflux-kubeclient`: the one place ferroflux turns a `kube::Config` into a `kube::Client`
//! (the CLI's contexts, the controller's own and remote clusters, the devcluster's clients), so
//! every client retries the way client-go's does.
//!
//! kube-rs's default retry layer retries every 429, 503 and 504 fifteen times with an
//! exponential backoff that grows to minutes: a controller talking to an overloaded API server
//! hangs for about three minutes before it can say why. client-go (`rest/with_retry.go`,
//! `rest/request.go`) instead retries a response only when the server asked for it — a 429 or
//! any 5xx that carries an integer `Retry-After` header — waiting the seconds it names, at most
//! ten times; and a GET whose connection was reset or closed before the answer, after a second.
//! Anything else reaches the caller at once, with the server's message.
//!
//! This crate owns client construction and that retry rule only; it must not know any API kind.

use std::error::Error as StdError;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::{Body, ClientBuilder};
use tower::BoxError;
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};

/// client-go's `maxRetries` for every request (`rest.NewRequest`).
pub const MAX_RETRIES: u32 = 10;

/// What client-go waits before retrying a GET whose connection broke (its synthetic
/// `Retry-After: 1`).
const CONNECTION_RETRY: Duration = Duration::from_secs(1);

/// A client for `config`, retrying as client-go does instead of kube-rs's default retry.
/// Must be called inside a Tokio runtime (the client's request queue is a task).
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

/// client-go's retry rule for one request (a fresh copy per request counts its attempts).
#[derive(Clone, Debug, Default)]
pub struct RetryAfter {
    retries: u32,
}

impl RetryAfter {
    /// How long to wait before trying again, if this outcome is one client-go retries.
    fn wait<B>(method: &Method, result: &Result<Response<B>, BoxError>) -> Option<Duration> {
        match result {
            Ok(response) => server_asked_wait(response.status(), response.headers()),
            Err(e) if *method == Method::GET && connection_lost(e.as_ref()) => {
                Some(CONNECTION_RETRY)
            }
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
        if self.retries >= MAX_RETRIES {
            return None;
        }
        let wait = RetryAfter::wait(req.method(), result)?;
        self.retries += 1;
        // client-go logs this at verbosity 4 only: a debug line, never on the terminal.
        tracing::debug!(url = %req.uri(), attempt = self.retries, ?wait, "retrying as the server asked");
        Some(tokio::time::sleep(wait))
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
