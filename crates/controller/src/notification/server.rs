//! `--events-addr`: the HTTP endpoint Flux's controllers POST their event JSON to
//! (notification-controller's event server), feeding the same dispatcher as the in-process
//! channel. Answers as Flux does: 202 accepted, 400 for a body that is not an event, 413 for a
//! body over 3 MiB.

use super::Notifier;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use ferroflux_notification::Event;
use ferroflux_notification::receiver::MAX_BODY_BYTES;

/// The router of the events endpoint: `POST /` (any path, as Flux's mux serves `/`).
pub fn events_router(notifier: Notifier) -> axum::Router {
    axum::Router::new()
        .fallback(axum::routing::post(accept))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(notifier)
}

async fn accept(State(notifier): State<Notifier>, body: Bytes) -> (StatusCode, String) {
    match serde_json::from_slice::<Event>(&body) {
        Ok(event) => {
            notifier.post(event).await;
            (StatusCode::ACCEPTED, String::new())
        }
        Err(e) => {
            tracing::warn!(error = %e, "decoding the request body failed");
            (
                StatusCode::BAD_REQUEST,
                format!("decoding the request body failed: {e}\n"),
            )
        }
    }
}
