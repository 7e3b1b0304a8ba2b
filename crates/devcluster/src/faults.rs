//! Fault injection for tests of clients: answer a fraction of requests with an error, or delay
//! every answer. Health and version endpoints are never affected, so readiness checks still work.

use std::sync::Mutex;
use std::time::Duration;

use axum::response::Response;

use crate::error::ApiError;

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
