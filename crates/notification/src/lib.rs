//! Flux's notifications, as notification-controller does them, without a cluster.
//!
//! Owns: the event JSON Flux's controllers post (`event`), a Provider with its Secrets made into
//! what a sender needs, or the problem a user must fix (`config`), the metadata rules applied to it on
//! the way to a Provider (`event`), each Provider type's HTTP payload and the keys it needs (`payload`), sending with
//! Flux's retries and timeouts (`send`), which Alerts an event matches and Flux's rate limit of
//! identical events (`alert`), how each Receiver type verifies a webhook call (`receiver`), the check of a Google ID
//! token against Google's signing keys (`idtoken`) and of an OIDC token against its issuer's
//! (`oidc`), and the TLS keys of a Provider's
//! `certSecretRef` (`tls`).
//!
//! Why a crate of its own: these are pure rules over JSON and HTTP that are tested against a
//! local HTTP server without a cluster; the controller only wires them to the API server
//! (reading Alerts, Providers, Secrets, annotating objects). Sending is blocking (`ureq`, as the
//! source crates fetch): the dispatcher calls it off the async executor.
//!
//! Must not touch: the Kubernetes API (the controller reads objects and passes them in), or the
//! controllers' reconcile logic.

pub mod alert;
pub mod config;
pub mod event;
pub mod idtoken;
pub mod oidc;
pub mod payload;
pub mod receiver;
pub mod send;
pub mod sha1;
pub mod tls;

pub use alert::{RateLimiter, matches};
pub use event::{Event, InvolvedObject};
pub use payload::{ProviderConfig, Request};
pub use send::{Retry, SendError, Sender};
