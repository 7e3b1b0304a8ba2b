//! Receivers: the status loop that reads each Receiver's token and publishes its webhook path
//! (`status.webhookPath`, `Ready`), and the webhook server that serves `/hook/<digest>`:
//! the Receiver whose path it is verifies the call by its type (`ferroflux-notification`), and a
//! valid call annotates every resource it names with `reconcile.fluxcd.io/requestedAt`, so the
//! controllers reconcile them at once. Answers: 200 done, 401 bad or missing signature or token
//! (nothing annotated; the log names the Receiver, never the token), 404 unknown path, 413 body
//! over 3 MiB, 503 suspended or not ready (or Google's signing keys out of reach, for a GCR
//! call; the issuer's, for a generic-oidc call), 400 payload or event refused, 500 an
//! annotation failed. A generic-oidc call's token is verified against its issuer's keys
//! (discovery, then `jwks_uri`, cached an hour and read again on an unknown key id) and the
//! provider's CEL validations; its claims are then `claims` in the Receiver's filters.

use crate::events::Recorder;
use crate::step::TERMINAL_ERROR;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use ferroflux_api::RECONCILE_REQUESTED_AT;
use ferroflux_api::conditions::{Conditions, READY, STALLED, reason};
use ferroflux_api::duration::{format_duration, parse_duration};
use ferroflux_api::notification::{
    OidcProvider, Receiver, ReceiverStatus, ReceiverType, webhook_path,
};
use ferroflux_cel::Expression;
use ferroflux_notification::idtoken::fetch_keys;
use ferroflux_notification::receiver::{
    GcrCheck, MAX_BODY_BYTES, Rejected, Verified, verify, verify_gcr,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as KubeEvent, EventType, Reporter};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

const STATUS_MANAGER: &str = "notification-controller";
/// notification-controller's reason for Receiver fields that do not go together.
const VALIDATION_FAILED: &str = "ValidationFailed";
/// How long an OIDC issuer's signing keys are kept before they are read again (sooner when a
/// token names a key the cached set does not have: the issuer rotated its keys).
const OIDC_KEYS_TTL: Duration = Duration::from_secs(3600);

/// Why a Receiver's token could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TokenError(String);

/// The token of a Receiver, from its Secret's `token` key.
pub async fn token(client: &kube::Client, receiver: &Receiver) -> Result<String, TokenError> {
    let ns = receiver.namespace().unwrap_or_default();
    let Some(reference) = &receiver.spec.secret_ref else {
        return Err(TokenError("spec.secretRef is required".into()));
    };
    let name = &reference.name;
    let secret = Api::<Secret>::namespaced(client.clone(), &ns)
        .get(name)
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 => TokenError(format!(
                "unable to read token from secret '{ns}/{name}': secret not found"
            )),
            e => TokenError(format!(
                "unable to read token from secret '{ns}/{name}': {e}"
            )),
        })?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("token"))
        .ok_or_else(|| {
            TokenError(format!(
                "invalid '{ns}/{name}' secret data: required field 'token'"
            ))
        })?;
    Ok(String::from_utf8_lossy(&token.0).to_string())
}

/// The `email` and `audience` a GCR Receiver's Secret names: the service account Pub/Sub pushes
/// as, and the audience of its tokens.
pub async fn gcr_identity(
    client: &kube::Client,
    receiver: &Receiver,
) -> Result<(String, String), TokenError> {
    let ns = receiver.namespace().unwrap_or_default();
    let Some(reference) = &receiver.spec.secret_ref else {
        return Err(TokenError("secretRef is required for GCR receivers".into()));
    };
    let name = &reference.name;
    let secret = Api::<Secret>::namespaced(client.clone(), &ns)
        .get(name)
        .await
        .map_err(|e| TokenError(format!("unable to read secret '{ns}/{name}': {e}")))?;
    let data = secret.data.unwrap_or_default();
    let field = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).trim().to_string())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                TokenError(format!(
                    "invalid '{ns}/{name}' secret data: required field '{key}' for GCR receiver"
                ))
            })
    };
    Ok((field("email")?, field("audience")?))
}

/// What the status loop works with: the API and the Events it records.
struct Context {
    client: kube::Client,
    recorder: Recorder,
}

/// The Receiver status loop: `status.webhookPath` and `Ready`, again every `spec.interval`; each
/// run ends with an Event on the Receiver, as Flux's: Warning with the reason of a failure,
/// Normal `Succeeded` when ready.
pub fn controller(
    client: kube::Client,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    let api = Api::<Receiver>::all(client.clone());
    let reporter = Reporter {
        controller: STATUS_MANAGER.into(),
        instance: None,
    };
    let context = Context {
        recorder: Recorder::new(client.clone(), reporter),
        client,
    };
    let task = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(context))
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, controller = "receiver", "reconcile error");
            }
        });
    Box::pin(task)
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct ReconcileError(#[from] kube::Error);

fn error_policy(_: Arc<Receiver>, _: &ReconcileError, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(10))
}

async fn reconcile(
    receiver: Arc<Receiver>,
    context: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let client = &context.client;
    let ns = receiver.namespace().unwrap_or_default();
    let name = receiver.name_any();
    let interval = receiver
        .spec
        .interval
        .as_deref()
        .and_then(|i| parse_duration(i).ok())
        .unwrap_or(Duration::from_secs(600));
    let mut status = receiver.status.clone().unwrap_or_default();
    let previous = status.clone();
    let generation = receiver.metadata.generation;
    if let Some(requested) = receiver.annotations().get(RECONCILE_REQUESTED_AT) {
        status.last_handled_reconcile_at = Some(requested.clone());
    }
    // A configuration error stays until the Receiver changes: Flux marks it terminal.
    let terminal = configuration_error(&receiver)
        .map(|(reason, message)| (reason, format!("{TERMINAL_ERROR}: {message}")));
    let outcome = match &terminal {
        Some(failure) => Err(failure.clone()),
        None => token_for(client, &receiver).await,
    };
    {
        let mut conditions = Conditions::of(&mut status.conditions, generation, Timestamp::now());
        match &outcome {
            Ok(token) => {
                let path = webhook_path(token, &name, &ns);
                conditions
                    .mark_true(
                        READY,
                        "Succeeded",
                        &format!("Receiver initialized for path: {path}"),
                    )
                    .delete(STALLED);
                status.webhook_path = Some(path);
            }
            Err((reason, message)) => {
                conditions.mark_false(READY, reason, message);
                if terminal.is_some() {
                    conditions.mark_stalled(reason, message);
                } else {
                    conditions.delete(STALLED);
                }
            }
        }
    }
    status.observed_generation = generation;
    if !same_status(&status, &previous) {
        let api = Api::<Receiver>::namespaced(client.clone(), &ns);
        let params = PatchParams {
            field_manager: Some(STATUS_MANAGER.into()),
            ..Default::default()
        };
        api.patch_status(&name, &params, &Patch::Merge(json!({"status": status})))
            .await?;
    }
    let event = match &outcome {
        Ok(_) => KubeEvent {
            type_: EventType::Normal,
            reason: "Succeeded".into(),
            note: Some(format!(
                "Reconciliation finished, next run in {}",
                format_duration(interval)
            )),
            action: "Reconcile".into(),
            secondary: None,
        },
        Err((reason, message)) => KubeEvent {
            type_: EventType::Warning,
            reason: (*reason).into(),
            note: Some(message.clone()),
            action: "Reconcile".into(),
            secondary: None,
        },
    };
    if let Err(e) = context
        .recorder
        .publish(&event, &receiver.object_ref(&()))
        .await
    {
        tracing::debug!(error = %e, "failed to publish event");
    }
    Ok(Action::requeue(interval))
}

/// The Receiver's token once its type's own checks pass, or Flux's reason and message why not.
async fn token_for(
    client: &kube::Client,
    receiver: &Receiver,
) -> Result<String, (&'static str, String)> {
    match receiver.spec.r#type {
        // No Secret: calls carry an OIDC token instead, and the webhook path is derived from
        // the Receiver's name and namespace alone.
        ReceiverType::GenericOidc => Ok(String::new()),
        ReceiverType::Gcr => match gcr_identity(client, receiver).await {
            Ok(_) => token(client, receiver)
                .await
                .map_err(|e| ("TokenNotFound", e.to_string())),
            Err(e) => Err(("TokenNotFound", e.to_string())),
        },
        _ => token(client, receiver)
            .await
            .map_err(|e| ("TokenNotFound", e.to_string())),
    }
}

/// Why the Receiver cannot be used as written, with notification-controller's reason and words,
/// in its order: the CEL filters, the `generic-oidc` fields that go together, the OIDC
/// providers' fields, their CEL expressions.
fn configuration_error(receiver: &Receiver) -> Option<(&'static str, String)> {
    if let Some(message) = filter_error(receiver) {
        return Some((reason::INVALID_CEL_EXPRESSION, message));
    }
    let oidc = receiver.spec.r#type == ReceiverType::GenericOidc;
    let providers = receiver.spec.oidc_providers.as_deref().unwrap_or_default();
    let spec_error = if oidc && providers.is_empty() {
        Some("generic-oidc receiver requires at least one oidcProvider")
    } else if !oidc && !providers.is_empty() {
        Some("oidcProviders can only be set when type is generic-oidc")
    } else if oidc && receiver.spec.secret_ref.is_some() {
        Some("secretRef cannot be set when type is generic-oidc")
    } else if !oidc && receiver.spec.secret_ref.is_none() {
        Some("secretRef is required when type is not generic-oidc")
    } else {
        None
    };
    if let Some(message) = spec_error {
        return Some((VALIDATION_FAILED, message.to_string()));
    }
    if let Err(message) = providers_error(providers) {
        return Some((VALIDATION_FAILED, message));
    }
    for (i, provider) in providers.iter().enumerate() {
        if let Err(e) = ClaimsChecks::compile(provider) {
            return Some((
                reason::INVALID_CEL_EXPRESSION,
                format!(
                    "oidcProviders[{i}] (issuerURL={:?}): {e}",
                    provider.issuer_url
                ),
            ));
        }
    }
    None
}

/// notification-controller's checks of `oidcProviders` beyond the CRD's schema.
fn providers_error(providers: &[OidcProvider]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in providers.iter().enumerate() {
        let issuer = &p.issuer_url;
        if issuer.is_empty() {
            return Err(format!("oidcProviders[{i}]: issuerURL is required"));
        }
        if !issuer.starts_with("http://") && !issuer.starts_with("https://") {
            return Err(format!(
                "oidcProviders[{i}]: issuerURL {issuer:?} must start with http:// or https://"
            ));
        }
        if !seen.insert(issuer.as_str()) {
            return Err(format!(
                "oidcProviders[{i}]: duplicate issuerURL {issuer:?}"
            ));
        }
        if p.validations.is_empty() {
            return Err(format!(
                "oidcProviders[{i}] (issuerURL={issuer:?}): at least one validation is required; without validations any caller able to obtain a token from this issuer can trigger the Receiver"
            ));
        }
        for (j, v) in p.variables.iter().flatten().enumerate() {
            if v.name.is_empty() {
                return Err(format!(
                    "oidcProviders[{i}] (issuerURL={issuer:?}): variables[{j}]: name is required"
                ));
            }
            if v.expression.is_empty() {
                return Err(format!(
                    "oidcProviders[{i}] (issuerURL={issuer:?}): variables[{j}] (name={:?}): expression is required",
                    v.name
                ));
            }
        }
        for (j, v) in p.validations.iter().enumerate() {
            if v.expression.is_empty() {
                return Err(format!(
                    "oidcProviders[{i}] (issuerURL={issuer:?}): validations[{j}]: expression is required"
                ));
            }
            if v.message.is_empty() {
                return Err(format!(
                    "oidcProviders[{i}] (issuerURL={issuer:?}): validations[{j}]: message is required"
                ));
            }
        }
    }
    Ok(())
}

/// An OIDC provider's CEL variables (`vars.<name>`, each seeing `claims` and the variables
/// before it) and validations (all must be true; the message of each false one goes back to
/// the caller).
struct ClaimsChecks {
    variables: Vec<(String, Expression)>,
    validations: Vec<(Expression, String)>,
}

impl ClaimsChecks {
    fn compile(provider: &OidcProvider) -> Result<ClaimsChecks, String> {
        let mut variables = Vec::new();
        for v in provider.variables.iter().flatten() {
            let e = Expression::parse(&v.expression)
                .map_err(|e| format!("invalid expression for variable {:?}: {e}", v.name))?;
            variables.push((v.name.clone(), e));
        }
        let mut validations = Vec::new();
        for v in &provider.validations {
            let e = Expression::parse(&v.expression)
                .map_err(|e| format!("invalid expression for validation {:?}: {e}", v.message))?;
            validations.push((e, v.message.clone()));
        }
        Ok(ClaimsChecks {
            variables,
            validations,
        })
    }

    /// `Ok` when every validation holds for `claims`; Flux's messages otherwise.
    fn evaluate(&self, claims: &serde_json::Value) -> Result<(), String> {
        let mut vars = serde_json::Map::new();
        let mut data = serde_json::Map::new();
        data.insert("claims".into(), claims.clone());
        for (name, e) in &self.variables {
            data.insert("vars".into(), serde_json::Value::Object(vars.clone()));
            let value = e
                .evaluate(&data)
                .map_err(|err| format!("failed to evaluate variable {name:?}: {err}"))?;
            let value = value.to_json().ok_or_else(|| {
                format!("failed to evaluate variable {name:?}: its value has no JSON form")
            })?;
            vars.insert(name.clone(), value);
        }
        data.insert("vars".into(), serde_json::Value::Object(vars));
        let mut failures = Vec::new();
        for (e, message) in &self.validations {
            let ok = e
                .evaluate_bool(&data)
                .map_err(|err| format!("failed to evaluate validation: {err}"))?;
            if !ok {
                failures.push(message.as_str());
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(format!("token validation failed: {}", failures.join("; ")))
        }
    }
}

/// Why the Receiver's CEL filters cannot be used, in notification-controller's words: the
/// top-level `resourceFilter` first, then each resource's `filter`.
fn filter_error(receiver: &Receiver) -> Option<String> {
    if let Some(expr) = receiver
        .spec
        .resource_filter
        .as_deref()
        .filter(|e| !e.is_empty())
        && let Err(e) = Expression::parse(expr)
    {
        return Some(format!("invalid resourceFilter expression: {e}"));
    }
    for (i, resource) in receiver.spec.resources.iter().enumerate() {
        if let Some(expr) = resource.filter.as_deref().filter(|e| !e.is_empty())
            && let Err(e) = Expression::parse(expr)
        {
            return Some(format!(
                "invalid filter expression for resources[{i}] (kind={:?}, name={:?}): {e}",
                resource.kind.as_str(),
                resource.name
            ));
        }
    }
    None
}

/// The CEL filters a webhook call applies to one `spec.resources` entry: the Receiver's
/// `resourceFilter` and the entry's own `filter`, both over `res` (the object's metadata) and
/// `req` (the call's JSON body). An object is annotated only when every filter says true.
struct Filters {
    expressions: Vec<Expression>,
    request: Arc<serde_json::Value>,
    /// A generic-oidc call's verified token claims (`claims`).
    claims: Option<Arc<serde_json::Value>>,
}

impl Filters {
    /// `None` when the entry has no filter at all (everything it names is annotated).
    fn of(
        receiver: &Receiver,
        resource: &ferroflux_api::notification::ReceiverResource,
        request: &Arc<serde_json::Value>,
        claims: Option<&Arc<serde_json::Value>>,
    ) -> Result<Option<Filters>, String> {
        let mut expressions = Vec::new();
        for expr in [
            receiver.spec.resource_filter.as_deref(),
            resource.filter.as_deref(),
        ]
        .into_iter()
        .flatten()
        .filter(|e| !e.is_empty())
        {
            expressions.push(Expression::parse(expr).map_err(|e| e.to_string())?);
        }
        Ok((!expressions.is_empty()).then(|| Filters {
            expressions,
            request: request.clone(),
            claims: claims.cloned(),
        }))
    }

    /// Whether the object (its `apiVersion`, `kind` and `metadata`) passes every filter.
    fn accepts(&self, object: serde_json::Value) -> Result<bool, String> {
        let mut vars = serde_json::Map::new();
        vars.insert("res".into(), object);
        vars.insert("req".into(), (*self.request).clone());
        if let Some(claims) = &self.claims {
            vars.insert("claims".into(), (**claims).clone());
        }
        for e in &self.expressions {
            if !e.evaluate_bool(&vars).map_err(|e| e.to_string())? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The JSON body of a webhook call for the filters: `{}` when the call is not JSON, as in
/// notification-controller.
fn request_body(
    headers: &BTreeMap<String, String>,
    body: &[u8],
) -> Result<serde_json::Value, String> {
    let json = headers.get("content-type").is_some_and(|t| {
        t.split(',')
            .next()
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| format!("failed to parse request body as JSON: {e}"))
}

/// Equal but for condition timestamps (a re-read of the same token changes nothing).
fn same_status(a: &ReceiverStatus, b: &ReceiverStatus) -> bool {
    let strip = |s: &ReceiverStatus| {
        let mut s = s.clone();
        for c in s.conditions.iter_mut().flatten() {
            c.last_transition_time =
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH);
        }
        s
    };
    strip(a) == strip(b)
}

/// How long Google's signing keys are used before they are read again (Google rotates them
/// over days and publishes the next key well before it signs with it).
const GOOGLE_KEYS_TTL: Duration = Duration::from_secs(3600);

/// What the webhook server shares between calls.
struct Server {
    client: kube::Client,
    /// Where Google's signing keys are read (GCR receivers).
    google_keys_url: String,
    google_keys: tokio::sync::Mutex<Option<(std::time::Instant, serde_json::Value)>>,
    /// Each OIDC issuer's signing keys, by issuer URL, with when they were read.
    oidc_keys: tokio::sync::Mutex<BTreeMap<String, (std::time::Instant, serde_json::Value)>>,
}

/// The webhook server's router: `POST /hook/<digest>`. GCR calls are checked against the
/// signing keys at `google_keys_url` (Google's,
/// [`ferroflux_notification::idtoken::GOOGLE_CERTS_URL`], unless configured).
pub fn router(client: kube::Client, google_keys_url: String) -> axum::Router {
    axum::Router::new()
        .route("/hook/{digest}", axum::routing::post(handle))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(Arc::new(Server {
            client,
            google_keys_url,
            google_keys: tokio::sync::Mutex::new(None),
            oidc_keys: tokio::sync::Mutex::new(BTreeMap::new()),
        }))
}

impl Server {
    /// Google's signing keys, read again once an hour old.
    async fn google_keys(&self) -> Result<serde_json::Value, String> {
        let mut cached = self.google_keys.lock().await;
        if let Some((at, keys)) = cached.as_ref()
            && at.elapsed() < GOOGLE_KEYS_TTL
        {
            return Ok(keys.clone());
        }
        let url = self.google_keys_url.clone();
        let keys = tokio::task::spawn_blocking(move || fetch_keys(&url, Duration::from_secs(15)))
            .await
            .map_err(|e| e.to_string())??;
        *cached = Some((std::time::Instant::now(), keys.clone()));
        Ok(keys)
    }

    /// An issuer's signing keys: its discovery document's `jwks_uri`, read and cached; read
    /// again when `fresh` (a token named a key the cached set lacks).
    async fn oidc_keys(&self, issuer: &str, fresh: bool) -> Result<serde_json::Value, String> {
        let mut cached = self.oidc_keys.lock().await;
        if !fresh
            && let Some((at, keys)) = cached.get(issuer)
            && at.elapsed() < OIDC_KEYS_TTL
        {
            return Ok(keys.clone());
        }
        let owned = issuer.to_string();
        let keys = tokio::task::spawn_blocking(move || {
            let timeout = Duration::from_secs(15);
            let discovery = ferroflux_notification::oidc::fetch_discovery(&owned, timeout)?;
            let uri = ferroflux_notification::oidc::jwks_uri(&owned, &discovery)?;
            fetch_keys(&uri, timeout)
        })
        .await
        .map_err(|e| e.to_string())??;
        cached.insert(
            issuer.to_string(),
            (std::time::Instant::now(), keys.clone()),
        );
        Ok(keys)
    }

    /// Verifies a generic-oidc call as notification-controller does: the bearer token's issuer
    /// picks the provider, the token must verify with the issuer's keys for the provider's
    /// audience, then every CEL validation must hold for its claims, which it returns.
    async fn verify_oidc(
        &self,
        receiver: &Receiver,
        headers: &BTreeMap<String, String>,
    ) -> Result<serde_json::Value, Rejected> {
        let refuse = |message: String| Rejected {
            status: 401,
            message,
        };
        let token = headers
            .get("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or_else(|| refuse("the Authorization header is missing or malformed".into()))?
            .trim();
        if token.is_empty() {
            return Err(refuse(
                "the Authorization header is missing a bearer token".into(),
            ));
        }
        let issuer = ferroflux_notification::oidc::unverified_issuer(token)
            .map_err(|e| refuse(format!("failed to parse bearer token: {e}")))?;
        let provider = receiver
            .spec
            .oidc_providers
            .iter()
            .flatten()
            .find(|p| p.issuer_url == issuer)
            .ok_or_else(|| refuse(format!("no oidcProvider configured for issuer {issuer:?}")))?;
        let audience = provider
            .audience
            .as_deref()
            .filter(|a| !a.is_empty())
            .unwrap_or(ferroflux_notification::oidc::DEFAULT_AUDIENCE);
        let unreachable = |e: String| Rejected {
            status: 503,
            message: format!("failed to initialize OIDC provider for issuer {issuer:?}: {e}"),
        };
        let now = Timestamp::now().as_second();
        let keys = self.oidc_keys(&issuer, false).await.map_err(unreachable)?;
        let verified =
            match ferroflux_notification::oidc::verify(token, &keys, &issuer, audience, now) {
                Err(e) if e.0.starts_with("no signing key") => {
                    let keys = self.oidc_keys(&issuer, true).await.map_err(unreachable)?;
                    ferroflux_notification::oidc::verify(token, &keys, &issuer, audience, now)
                }
                other => other,
            };
        let claims = verified.map_err(|e| refuse(format!("failed to verify OIDC token: {e}")))?;
        let checks = ClaimsChecks::compile(provider).map_err(|e| Rejected {
            status: 500,
            message: format!("invalid oidcProvider configuration for issuer {issuer:?}: {e}"),
        })?;
        checks.evaluate(&claims).map_err(refuse)?;
        Ok(claims)
    }

    /// Verifies a GCR call: the Secret's identity, Google's keys, the token and payload.
    async fn verify_gcr(
        &self,
        receiver: &Receiver,
        headers: &BTreeMap<String, String>,
        body: &[u8],
    ) -> Result<Verified, Rejected> {
        let (email, audience) =
            gcr_identity(&self.client, receiver)
                .await
                .map_err(|e| Rejected {
                    status: 503,
                    message: e.to_string(),
                })?;
        let keys = self.google_keys().await.map_err(|e| Rejected {
            status: 503,
            message: format!("cannot authenticate GCR request: {e}"),
        })?;
        let check = GcrCheck {
            email: &email,
            audience: &audience,
            keys: &keys,
            now: Timestamp::now().as_second(),
        };
        verify_gcr(&check, headers, body)
    }
}

async fn handle(
    State(server): State<Arc<Server>>,
    Path(digest): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let client = server.client.clone();
    let path = format!("/hook/{digest}");
    tracing::info!(digest = %digest, "handling request");
    let receivers = match Api::<Receiver>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => list.items,
        Err(e) => {
            tracing::error!(error = %e, "unable to list receivers");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "unable to list receivers\n".into(),
            );
        }
    };
    let Some(receiver) = receivers
        .into_iter()
        .find(|r| r.status.as_ref().and_then(|s| s.webhook_path.as_deref()) == Some(&path))
    else {
        return (StatusCode::NOT_FOUND, "receiver not found\n".into());
    };
    let ns = receiver.namespace().unwrap_or_default();
    let name = receiver.name_any();
    let ready = receiver
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .is_some_and(|c| ferroflux_api::conditions::is_true(c, READY));
    if receiver.spec.suspend.unwrap_or(false) || !ready {
        let why = if receiver.spec.suspend.unwrap_or(false) {
            "receiver is suspended"
        } else {
            "receiver is not ready"
        };
        tracing::error!(receiver = %name, namespace = %ns, "unable to process request: {why}");
        return (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n"));
    }
    let oidc = receiver.spec.r#type == ReceiverType::GenericOidc;
    let token = match if oidc {
        Ok(String::new())
    } else {
        token(&client, &receiver).await
    } {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(receiver = %name, namespace = %ns, error = %e, "unable to validate payload");
            return (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n"));
        }
    };
    // A path computed from an older token is not this Receiver's any more.
    if webhook_path(&token, &name, &ns) != path {
        return (StatusCode::NOT_FOUND, "receiver not found\n".into());
    }
    let lower: BTreeMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.as_str().to_ascii_lowercase(),
                v.to_str().ok()?.to_string(),
            ))
        })
        .collect();
    let events = receiver.spec.events.clone().unwrap_or_default();
    let mut claims = None;
    let verified = match receiver.spec.r#type {
        ReceiverType::Gcr => server.verify_gcr(&receiver, &lower, &body).await,
        ReceiverType::GenericOidc => server.verify_oidc(&receiver, &lower).await.map(|c| {
            claims = Some(Arc::new(c));
            Verified::default()
        }),
        kind => verify(kind, &token, &events, &lower, &body),
    };
    let verified = match verified {
        Ok(v) => v,
        Err(rejected) => {
            tracing::warn!(receiver = %name, namespace = %ns, status = rejected.status,
                error = %rejected.message, "unable to validate payload");
            let status = StatusCode::from_u16(rejected.status).unwrap_or(StatusCode::BAD_REQUEST);
            return (status, format!("{}\n", rejected.message));
        }
    };
    if verified.ping {
        tracing::info!(receiver = %name, namespace = %ns, "answered GitHub ping");
        return (StatusCode::OK, "pong\n".into());
    }
    if let Some(event) = &verified.event {
        tracing::info!(receiver = %name, namespace = %ns, event = %event, "handling event");
    }
    let filtered = receiver
        .spec
        .resources
        .iter()
        .any(|r| r.filter.as_deref().is_some_and(|f| !f.is_empty()))
        || receiver
            .spec
            .resource_filter
            .as_deref()
            .is_some_and(|f| !f.is_empty());
    let request = if filtered {
        match request_body(&lower, &body) {
            Ok(v) => Arc::new(v),
            Err(e) => {
                tracing::error!(receiver = %name, namespace = %ns, error = %e, "unable to create resource filters");
                return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n"));
            }
        }
    } else {
        Arc::new(json!({}))
    };
    let mut failed = Vec::new();
    for resource in &receiver.spec.resources {
        let filters = match Filters::of(&receiver, resource, &request, claims.as_ref()) {
            Ok(f) => f,
            Err(e) => {
                tracing::error!(receiver = %name, namespace = %ns, error = %e, "unable to create resource filters");
                return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n"));
            }
        };
        if let Err(e) = request_reconciliation(&client, &ns, resource, filters.as_ref()).await {
            tracing::error!(receiver = %name, namespace = %ns, error = %e, "unable to request reconciliation");
            failed.push(e);
        }
    }
    if failed.is_empty() {
        (StatusCode::OK, String::new())
    } else {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{}\n", failed.join("\n")),
        )
    }
}

/// Annotates the resource (or every resource with the labels, for `*`).
async fn request_reconciliation(
    client: &kube::Client,
    receiver_ns: &str,
    resource: &ferroflux_api::notification::ReceiverResource,
    filters: Option<&Filters>,
) -> Result<(), String> {
    let kind = resource.kind;
    let api_version = resource
        .api_version
        .clone()
        .unwrap_or_else(|| kind.default_api_version().to_string());
    let (group, version) = api_version
        .split_once('/')
        .map_or((String::new(), api_version.clone()), |(g, v)| {
            (g.to_string(), v.to_string())
        });
    let ar = ApiResource {
        group,
        version,
        api_version: api_version.clone(),
        kind: kind.as_str().into(),
        plural: kind.plural().into(),
    };
    let ns = resource.namespace.as_deref().unwrap_or(receiver_ns);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let names: Vec<(String, Option<DynamicObject>)> = if resource.name == "*" {
        let Some(labels) = &resource.match_labels else {
            return Err("matchLabels field not set when using wildcard '*' as name".into());
        };
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| {
                format!("failed listing resources in namespace {ns:?} by matching labels {selector:?}: {e}")
            })?;
        if list.items.is_empty() {
            tracing::warn!(
                "no {:?} resources found with matching labels {selector:?} in {ns:?} namespace",
                kind.as_str()
            );
        }
        list.items
            .into_iter()
            .map(|o| (o.name_any(), Some(o)))
            .collect()
    } else {
        vec![(resource.name.clone(), None)]
    };
    let now = Timestamp::now().to_string();
    for (name, listed) in names {
        if let Some(filters) = filters {
            let object = match listed {
                Some(o) => o,
                None => api
                    .get_opt(&name)
                    .await
                    .map_err(|e| format!("unable to read {} '{ns}/{name}': {e}", kind.as_str()))?
                    .ok_or_else(|| {
                        format!("unable to read {} '{ns}/{name}': not found", kind.as_str())
                    })?,
            };
            let res = json!({
                "apiVersion": api_version,
                "kind": kind.as_str(),
                "metadata": object.metadata,
            });
            if !filters.accepts(res)? {
                tracing::debug!(
                    "resource '{}/{name}.{ns}' NOT annotated because CEL expression returned false",
                    kind.as_str()
                );
                continue;
            }
        }
        let patch = json!({"metadata": {"annotations": {RECONCILE_REQUESTED_AT: now}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 404 => {
                    format!("unable to read {} '{ns}/{name}': not found", kind.as_str())
                }
                e => format!(
                    "failed to annotate resource: '{}/{name}.{ns}': {e}",
                    kind.as_str()
                ),
            })?;
        tracing::info!("resource '{}/{name}.{ns}' annotated", kind.as_str());
    }
    Ok(())
}
