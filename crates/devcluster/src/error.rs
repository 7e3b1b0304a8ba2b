//! API errors as Kubernetes `Status` objects, and the crate's own start-up errors.

use serde_json::{Value, json};

/// Errors from starting or stopping a cluster (not request errors: those are [`ApiError`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite could not open or write the database file.
    #[error("cannot open the cluster database {path}: {source}")]
    Database {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database opened but what it holds cannot be read back.
    #[error("the cluster database {path} is unreadable: {message}")]
    Corrupt {
        /// The database file.
        path: String,
        /// What could not be read.
        message: String,
    },
    /// rcgen could not make the CA or the serving certificate.
    #[error("cannot generate the cluster's TLS certificate: {0}")]
    Certificate(String),
    /// The listening address is taken or not ours.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A kubeconfig or identity file could not be written, or the database's writer thread
    /// could not start.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The [`crate::Config`] given cannot be used.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// A kube client for the cluster could not be built.
    #[error("cannot build a Kubernetes client for cluster {cluster}: {message}")]
    Client {
        /// The cluster's name.
        cluster: String,
        /// What kube said.
        message: String,
    },
}

/// A failed request: the HTTP code, the `reason` machine word and a human message, rendered as the
/// `Status` object kubectl and kube-rs parse.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// Seconds sent in a `Retry-After` header: the server asks the client to try again.
    pub retry_after: Option<u64>,
    /// `metadata.continue` of the Status: where an expired list may go on from.
    pub continue_token: Option<String>,
}

/// Identifies the object an error is about, for `Status.details`.
pub struct Target<'a> {
    pub group: &'a str,
    /// The resource's plural name (Kubernetes puts it in `details.kind`).
    pub plural: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

impl Target<'_> {
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
    fn details(&self) -> Value {
        let mut d = json!({ "name": self.name, "kind": self.plural });
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d
    }
}

/// One field error of an `Invalid` response.
pub struct Cause {
    pub field: String,
    pub reason: &'static str,
    pub message: String,
}

impl Cause {
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Cause {
        Cause {
            field: field.into(),
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: {detail}", json!(value)),
        }
    }
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
        Cause {
            field: field.into(),
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
        }
    }
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Cause {
        let supported: Vec<String> = supported.iter().map(|s| json!(s).to_string()).collect();
        Cause {
            field: field.into(),
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: {}",
                json!(value),
                supported.join(", ")
            ),
        }
    }
    pub fn required(field: impl Into<String>, detail: &str) -> Cause {
        Cause {
            field: field.into(),
            reason: "FieldValueRequired",
            message: format!("Required value: {detail}"),
        }
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
            continue_token: None,
        }
    }

    /// Asks the client to retry after `seconds`, as the API server does: the `Retry-After`
    /// header, and `details.retryAfterSeconds` when it is positive (the server writes the header
    /// from that field, so it never says 0 itself; a fault may).
    pub fn with_retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after = Some(seconds);
        if seconds > 0 {
            let details = self.details.get_or_insert_with(|| json!({}));
            details["retryAfterSeconds"] = json!(seconds);
        }
        self
    }

    pub fn not_found(t: &Target) -> ApiError {
        let mut e = ApiError::new(
            404,
            "NotFound",
            format!("{} {:?} not found", t.qualified(), t.name),
        );
        e.details = Some(t.details());
        e
    }
    pub fn already_exists(t: &Target) -> ApiError {
        let mut e = ApiError::new(
            409,
            "AlreadyExists",
            format!("{} {:?} already exists", t.qualified(), t.name),
        );
        e.details = Some(t.details());
        e
    }
    pub fn conflict(t: &Target, why: &str) -> ApiError {
        let mut e = ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {:?}: {why}",
                t.qualified(),
                t.name
            ),
        );
        e.details = Some(t.details());
        e
    }
    pub fn stale(t: &Target) -> ApiError {
        ApiError::conflict(
            t,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }
    /// 422 naming every invalid field, worded like the API server.
    pub fn invalid(t: &Target, causes: Vec<Cause>) -> ApiError {
        let summary: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let summary = if summary.len() == 1 {
            summary[0].clone()
        } else {
            format!("[{}]", summary.join(", "))
        };
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!("{} {:?} is invalid: {summary}", t.kind, t.name),
        );
        let mut d = json!({ "name": t.name, "kind": t.kind });
        if !t.group.is_empty() {
            d["group"] = json!(t.group);
        }
        d["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
                .collect(),
        );
        e.details = Some(d);
        e
    }
    /// 422 for request options (`ListOptions.meta.k8s.io "" is invalid: …`), as the API server
    /// answers options that fail `ValidateListOptions`.
    pub fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
        let target = Target {
            group: "meta.k8s.io",
            plural: "",
            kind,
            name: "",
        };
        let mut e = ApiError::invalid(&target, causes);
        // The API server names the options' kind with its group here (`ListOptions.meta.k8s.io
        // "" is invalid`), where an object's message names the kind alone.
        if let Some(rest) = e.message.strip_prefix(kind) {
            e.message = format!("{kind}.meta.k8s.io{rest}");
        }
        e
    }
    /// 504 for a read at a resourceVersion the server has not reached, with the one-second
    /// `Retry-After` the API server suggests.
    pub fn too_large_rv(requested: u64, current: u64) -> ApiError {
        let mut e = ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        );
        e.details = Some(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        }));
        e.with_retry_after(1)
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }
    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }
    pub fn forbidden(t: &Target, why: &str) -> ApiError {
        let mut e = ApiError::new(
            403,
            "Forbidden",
            format!("{} {:?} is forbidden: {why}", t.qualified(), t.name),
        );
        e.details = Some(t.details());
        e
    }
    /// 403 for a request the authorizer denied; `name` is empty for collections.
    pub fn forbidden_request(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        let message = if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {name:?} is forbidden: {why}")
        };
        let mut e = ApiError::new(403, "Forbidden", message);
        let mut d = json!({ "name": name, "kind": resource });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        e.details = Some(d);
        e
    }
    /// 429 of a request the server refuses for now (not a rate limit: an eviction a disruption
    /// budget holds back), with the details the API server attaches.
    pub fn too_many_requests(message: impl Into<String>, details: Value) -> ApiError {
        let mut e = ApiError::new(429, "TooManyRequests", message);
        e.details = Some(details);
        e
    }
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", message)
    }
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }
    pub fn unsupported_media_type(message: impl Into<String>) -> ApiError {
        ApiError::new(415, "UnsupportedMediaType", message)
    }

    pub fn gone(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }
    pub fn page_not_found() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }
    pub fn injected(code: u16) -> ApiError {
        match code {
            429 => ApiError::new(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later (injected fault)",
            ),
            503 => ApiError::new(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request (injected fault)",
            ),
            // What a write meets when the object changed since it was read.
            409 => ApiError::new(
                409,
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected fault)",
            ),
            _ => ApiError::new(
                code,
                "InternalError",
                "an error on the server (\"injected fault\") has prevented the request from succeeding",
            ),
        }
    }

    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        if let Some(c) = &self.continue_token {
            s["metadata"]["continue"] = json!(c);
        }
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}
