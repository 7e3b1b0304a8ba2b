//! The `GitRepository` reconciler: one pass over one object. Fetching, packing and storing are
//! `ferroflux-source`'s; this module reads the object and its secret, runs the source on a
//! blocking thread under `spec.timeout`, and writes Flux's status, finalizer and events.
//!
//! [`controller`] runs [`reconcile`] on the source loop ([`crate::sourceloop`]), which publishes
//! the pass's event.

use std::sync::Arc;
use std::time::Duration;

use crate::metrics::{Metrics, SOURCE_CONTROLLER};
use crate::sourcefetch;
use crate::sourceloop;
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::gitrepository::GitVerificationMode;
use ferroflux_api::{Artifact, FluxObject, GitRepository, GitRepositoryStatus};
use ferroflux_source::{
    Credentials, FetchOptions, GitRef, GitSource, ObjectKey, Outcome, PackOptions, Previous,
    Storage,
};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::future::Future;
use std::pin::Pin;

/// Settings of the GitRepository controller (source-controller's flags): where artifacts go and
/// what the controller allows.
#[derive(Clone)]
pub struct Options {
    /// The artifact storage and the address it is served at.
    pub storage: Storage,
    /// `--allow-file-urls`.
    pub allow_file_urls: bool,
}

/// What one pass did; the default is a pass with nothing to do (the object gone, being
/// deleted or suspended).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// When to look again (`spec.interval`); `None` when the object is gone or suspended.
    pub requeue_after: Option<Duration>,
    /// The event emitted, if any: `(type, reason, message)`.
    pub event: Option<(String, String, String)>,
}

/// An error the controller loop reports and retries; a failed fetch is written to the
/// object's status instead.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A status write or a read of the API server failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The artifact storage could not store or serve the artifact.
    #[error("storage: {0}")]
    Source(#[from] ferroflux_source::Error),
}

const FIELD_MANAGER: &str = "gotk-source-controller";
/// The kind this reconciler owns, as its log lines name it.
const KIND: &str = "GitRepository";

fn source_error_message(e: &ferroflux_source::Error) -> String {
    e.to_string()
}

/// A spec field ferroflux does not honour yet, refused rather than ignored: Flux's reason and
/// the message the status carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `UnsupportedFeature`.
    pub reason: &'static str,
    /// What is not supported, and what becomes of the artifact.
    pub message: String,
}

/// Flux's reason for a spec field ferroflux does not do.
pub const UNSUPPORTED_FEATURE: &str = "UnsupportedFeature";
/// The condition source-controller sets on the outcome of `spec.verify`.
pub const SOURCE_VERIFIED: &str = "SourceVerified";

/// The first field of `spec` that ferroflux does not honour yet. Each would change what the
/// artifact holds, so the object stalls instead of serving something Flux would not.
pub fn refusal(spec: &ferroflux_api::gitrepository::GitRepositorySpec) -> Option<Refusal> {
    use ferroflux_api::gitrepository::GitProvider;
    let unsupported = |what: &str| {
        Some(Refusal {
            reason: UNSUPPORTED_FEATURE,
            message: format!("not supported yet: {what}"),
        })
    };
    if spec.recurse_submodules == Some(true) {
        return unsupported("recurseSubmodules");
    }
    match spec.provider {
        None | Some(GitProvider::Generic) => {}
        Some(GitProvider::Aws) => return unsupported("provider 'aws' (only 'generic')"),
        Some(GitProvider::Azure) => return unsupported("provider 'azure' (only 'generic')"),
        Some(GitProvider::Github) => return unsupported("provider 'github' (only 'generic')"),
    }
    if spec.service_account_name.is_some() {
        return unsupported("serviceAccountName (use secretRef)");
    }
    None
}

/// The status of a refused spec: Ready False and Stalled with the refusal's reason; the last
/// artifact is kept, as a stalled fetch keeps it. Returns the Warning event.
pub fn refuse(
    status: &mut GitRepositoryStatus,
    generation: Option<i64>,
    refusal: &Refusal,
    now: Timestamp,
) -> (String, String, String) {
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    conds
        .mark_false(conditions::READY, refusal.reason, &refusal.message)
        .mark_stalled(refusal.reason, &refusal.message)
        .delete(conditions::RECONCILING)
        .delete(conditions::FETCH_FAILED);
    status.observed_generation = generation;
    (
        "Warning".to_string(),
        refusal.reason.to_string(),
        refusal.message.clone(),
    )
}

/// Maps `status.artifact` to the source crate's record of it.
fn previous(status: Option<&GitRepositoryStatus>) -> Option<Previous> {
    let status = status?;
    let a = status.artifact.as_ref()?;
    Some(Previous {
        artifact: ferroflux_source::Artifact {
            path: a.path.clone(),
            url: a.url.clone(),
            revision: a.revision.clone(),
            digest: a.digest.clone(),
            size: a.size.unwrap_or_default().max(0) as u64,
            // Only compared for equality with itself on a no-op; the status keeps its own text.
            last_update_time: std::time::SystemTime::UNIX_EPOCH,
        },
        observed_ignore: status.observed_ignore.clone(),
        observed_sparse: status.observed_sparse_checkout.clone().unwrap_or_default(),
        observed_includes: status
            .observed_include
            .iter()
            .flatten()
            .zip(status.included_artifacts.iter().flatten())
            .map(|(incl, artifact)| {
                let (from, to) = include_paths(incl);
                ferroflux_source::include_fingerprint(
                    &incl.repository.name,
                    &from,
                    &to,
                    &artifact.digest,
                )
            })
            .collect(),
    })
}

fn to_status_artifact(a: &ferroflux_source::Artifact, now: Timestamp) -> Artifact {
    Artifact {
        digest: a.digest.clone(),
        last_update_time: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        metadata: None,
        path: a.path.clone(),
        revision: a.revision.clone(),
        size: Some(a.size as i64),
        url: a.url.clone(),
    }
}

/// The result of running the source, folded into the status the way source-controller does.
/// Pure, so the condition rules are tested without a cluster.
pub fn apply_result(
    status: &mut GitRepositoryStatus,
    generation: Option<i64>,
    result: &Result<Outcome, ferroflux_source::Error>,
    ignore: Option<&str>,
    now: Timestamp,
) -> Option<(String, String, String)> {
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    let event;
    match result {
        Ok(outcome) => {
            let a = outcome.artifact();
            let msg = format!("stored artifact for revision '{}'", a.revision);
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &msg)
                .mark_true(conditions::ARTIFACT_IN_STORAGE, reason::SUCCEEDED, &msg)
                .delete(conditions::FETCH_FAILED)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING)
                .delete(conditions::STORAGE_OPERATION_FAILED);
            match outcome {
                Outcome::Stored { artifact, .. } => {
                    status.artifact = Some(to_status_artifact(artifact, now));
                    event = Some(("Normal".to_string(), reason::NEW_ARTIFACT.to_string(), msg));
                }
                Outcome::Unchanged { artifact } => {
                    // The storage address may differ from the last run's (a restarted local
                    // cluster picks a new port): serve the same file under today's URL.
                    if let Some(current) = status.artifact.as_mut() {
                        current.url = artifact.url.clone();
                    }
                    event = None
                }
            }
            status.observed_ignore = ignore.map(str::to_string);
        }
        Err(e) => {
            let msg = source_error_message(e);
            // The last good artifact stays in status (and in storage): consumers keep using it.
            event = Some(sourcefetch::mark_fetch_failure(
                &mut conds,
                e.reason(),
                &msg,
                e.is_stalling(),
            ));
        }
    }
    status.observed_generation = generation;
    event
}

/// source-controller's condition while an included repository has no artifact.
pub const INCLUDE_UNAVAILABLE: &str = "IncludeUnavailable";
/// How soon a GitRepository waiting for an included one looks again (Flux's
/// `--requeue-dependency` default).
const INCLUDE_REQUEUE: std::time::Duration = std::time::Duration::from_secs(30);

/// An include's `fromPath` and `toPath` with Flux's defaults: all of the included artifact, to
/// a directory named after the included repository.
fn include_paths(incl: &ferroflux_api::gitrepository::GitRepositoryInclude) -> (String, String) {
    let to = incl
        .to_path
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| incl.repository.name.clone());
    (incl.from_path.clone().unwrap_or_default(), to)
}

/// What `spec.include` names, each with its artifact in storage, and those artifacts as the
/// status records them; or Flux's reason and message when one is missing or has none yet.
async fn includes(
    client: &kube::Client,
    ns: &str,
    obj: &GitRepository,
    storage: &Storage,
) -> Result<(Vec<ferroflux_source::Include>, Vec<Artifact>), (&'static str, String)> {
    let api: Api<GitRepository> = Api::namespaced(client.clone(), ns);
    let mut includes = Vec::new();
    let mut artifacts = Vec::new();
    for incl in obj.spec.include.iter().flatten() {
        let name = &incl.repository.name;
        let dep = match api.get_opt(name).await {
            Ok(Some(dep)) => dep,
            Ok(None) => {
                return Err((
                    "NotFound",
                    format!(
                        "could not get resource for include '{name}': gitrepositories.source.toolkit.fluxcd.io \"{name}\" not found"
                    ),
                ));
            }
            Err(e) => {
                return Err((
                    "NotFound",
                    format!("could not get resource for include '{name}': {e}"),
                ));
            }
        };
        let Some(artifact) = dep.status.and_then(|s| s.artifact) else {
            return Err((
                "NoArtifact",
                format!("no artifact available for include '{name}'"),
            ));
        };
        let (from_path, to_path) = include_paths(incl);
        includes.push(ferroflux_source::Include {
            name: name.clone(),
            from_path,
            to_path,
            archive: storage.local_path(&artifact.path),
            digest: artifact.digest.clone(),
        });
        artifacts.push(artifact);
    }
    Ok((includes, artifacts))
}

async fn read_secret(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Credentials, ferroflux_source::Error> {
    let data = sourceloop::secret_data(client, ns, name)
        .await
        .map_err(ferroflux_source::Error::InvalidSecret)?;
    Credentials::from_secret_data(&data)
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<GitRepository> = Api::namespaced(client.clone(), ns);
    let key = ObjectKey::new(ns, name);
    let Some(obj) =
        sourceloop::begin_stored::<_, ReconcileError>(&api, name, &settings.storage, &key).await?
    else {
        return Ok(Reconciled::default());
    };
    let (interval, timeout) =
        sourceloop::interval_and_timeout(&obj.spec.interval, obj.spec.timeout.as_deref());
    if let Some(refused) = refusal(&obj.spec) {
        let mut status = obj.status.clone().unwrap_or_default();
        let event = refuse(
            &mut status,
            obj.metadata.generation,
            &refused,
            Timestamp::now(),
        );
        let failure = Failure::stalled(refused.reason, refused.message, interval);
        step::log_failure(KIND, ns, name, &failure);
        sourceloop::write_status(&api, &obj, &status, &["artifact"], FIELD_MANAGER).await?;
        return Ok(Reconciled {
            requeue_after: Some(interval),
            event: Some(event),
        });
    }

    let (includes, included_artifacts) = match includes(client, ns, &obj, &settings.storage).await {
        Ok(found) => found,
        Err((reason, message)) => {
            // Flux waits for the included repositories; the last artifact stays served.
            let mut status = obj.status.clone().unwrap_or_default();
            let now = Timestamp::now();
            let mut conds = Conditions::of(&mut status.conditions, obj.metadata.generation, now);
            conds
                .mark_true(INCLUDE_UNAVAILABLE, reason, &message)
                .mark_false(conditions::READY, reason, &message)
                .mark_reconciling(reason::PROGRESSING_WITH_RETRY, &message)
                .delete(conditions::STALLED);
            let failure = Failure::retry(reason, message.clone(), INCLUDE_REQUEUE);
            step::log_failure(KIND, ns, name, &failure);
            sourceloop::write_status(&api, &obj, &status, &[], FIELD_MANAGER).await?;
            return Ok(Reconciled {
                requeue_after: Some(INCLUDE_REQUEUE.min(interval)),
                event: Some(("Warning".into(), reason.into(), message)),
            });
        }
    };

    let verify = obj.spec.verify.as_ref().map(|v| {
        (
            v.mode.unwrap_or(GitVerificationMode::HEAD),
            v.secret_ref.name.clone(),
        )
    });
    let verified_message = Arc::new(std::sync::Mutex::new(None::<String>));
    let result: Result<Outcome, ferroflux_source::Error> = async {
        let keys = match &verify {
            Some((mode, secret)) => {
                let data = sourceloop::secret_data(client, ns, secret)
                    .await
                    .map_err(|e| ferroflux_source::Error::Verification {
                        reason: crate::gitverify::VERIFICATION_ERROR,
                        message: format!("public keys secret error: {e}"),
                        stalling: false,
                    })?;
                Some((*mode, crate::gitverify::keys_of(data)))
            }
            None => None,
        };
        let creds = match &obj.spec.secret_ref {
            Some(r) => read_secret(client, ns, &r.name).await?,
            None => Credentials::default(),
        };
        let creds = match &obj.spec.proxy_secret_ref {
            Some(r) => creds.with_proxy(
                sourceloop::proxy(client, ns, &r.name)
                    .await
                    .map_err(ferroflux_source::Error::InvalidSecret)?,
            ),
            None => creds,
        };
        let r = obj.spec.r#ref.clone().unwrap_or_default();
        let git_ref = GitRef {
            branch: r.branch,
            tag: r.tag,
            semver: r.semver,
            name: r.name,
            commit: r.commit,
        };
        let source = Arc::new(GitSource::new(
            &obj.spec.url,
            &git_ref,
            creds,
            FetchOptions {
                allow_file_urls: settings.allow_file_urls,
                timeout,
            },
        )?);
        let storage = settings.storage.clone();
        let pack = PackOptions {
            ignore: obj.spec.ignore.clone(),
            sparse: obj.spec.sparse_checkout.clone().unwrap_or_default(),
            includes,
            ..Default::default()
        };
        // A commit stored before verification was asked for (or under another mode) is
        // fetched and verified again, as source-controller does.
        let verified_as_asked = keys.as_ref().is_none_or(|(mode, _)| {
            obj.status.as_ref().is_some_and(|s| {
                s.source_verification_mode.as_deref() == Some(crate::gitverify::mode_name(*mode))
                    && conditions::is_true(obj.conditions(), SOURCE_VERIFIED)
            })
        });
        let prev = previous(obj.status.as_ref()).filter(|_| verified_as_asked);
        let src = source.clone();
        let message_slot = verified_message.clone();
        let task = tokio::task::spawn_blocking(move || {
            ferroflux_source::reconcile_checked(&src, &storage, &key, &pack, prev.as_ref(), |f| {
                if let Some((mode, keys)) = &keys {
                    let message = crate::gitverify::check(f, *mode, keys)?;
                    if let Ok(mut slot) = message_slot.lock() {
                        *slot = Some(message);
                    }
                }
                Ok(())
            })
        });
        match tokio::time::timeout(timeout, task).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(ferroflux_source::Error::Git {
                url: source.display_url().to_string(),
                detail: format!("the fetch task failed: {join}"),
            }),
            Err(_) => Err(ferroflux_source::Error::Git {
                url: source.display_url().to_string(),
                detail: format!(
                    "timed out after {}",
                    ferroflux_api::duration::format_duration(timeout)
                ),
            }),
        }
    }
    .await;

    match &result {
        Ok(outcome) => {
            let changes = match outcome {
                Outcome::Stored { .. } => "new artifact stored",
                Outcome::Unchanged { .. } => "artifact up to date",
            };
            step::log_success(KIND, ns, name, &outcome.artifact().revision, changes);
        }
        Err(e) => step::log_failure(KIND, ns, name, &Failure::of(e, interval)),
    }
    let mut status = obj.status.clone().unwrap_or_default();
    let now = Timestamp::now();
    let event = apply_result(
        &mut status,
        obj.metadata.generation,
        &result,
        obj.spec.ignore.as_deref(),
        now,
    );
    let mut conds = Conditions::of(&mut status.conditions, obj.metadata.generation, now);
    match (&verify, &result) {
        (None, _) => {
            conds.delete(SOURCE_VERIFIED);
            status.source_verification_mode = None;
        }
        (
            Some(_),
            Err(ferroflux_source::Error::Verification {
                reason, message, ..
            }),
        ) => {
            conds
                .mark_false(SOURCE_VERIFIED, reason, message)
                .delete(conditions::FETCH_FAILED);
        }
        (Some((mode, _)), Ok(_)) => {
            let message = verified_message.lock().ok().and_then(|mut m| m.take());
            // An unchanged commit keeps the condition of the pass that verified it.
            if let Some(message) = message {
                conds.mark_true(SOURCE_VERIFIED, reason::SUCCEEDED, &message);
            }
            status.source_verification_mode = Some(crate::gitverify::mode_name(*mode).into());
        }
        (Some(_), Err(_)) => {}
    }
    if result.is_ok() {
        status.observed_sparse_checkout = obj
            .spec
            .sparse_checkout
            .clone()
            .filter(|dirs| !dirs.is_empty());
        let spec_includes = obj.spec.include.clone().unwrap_or_default();
        status.observed_include = (!spec_includes.is_empty()).then_some(spec_includes);
        status.included_artifacts = (!included_artifacts.is_empty()).then_some(included_artifacts);
        Conditions::of(&mut status.conditions, obj.metadata.generation, now)
            .delete(INCLUDE_UNAVAILABLE);
    }
    sourceloop::write_status(
        &api,
        &obj,
        &status,
        &[
            "observedSparseCheckout",
            "observedInclude",
            "includedArtifacts",
        ],
        FIELD_MANAGER,
    )
    .await?;
    Ok(Reconciled {
        requeue_after: Some(interval),
        event,
    })
}

/// The GitRepository controller: its cache (for metrics and readiness) and the future that runs
/// [`reconcile`] for every object on its interval, on changes and on
/// `reconcile.fluxcd.io/requestedAt`, until `shutdown` resolves; the loop is the one every
/// source kind shares ([`crate::sourceloop`]).
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<GitRepository>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    sourceloop::controller::<GitRepository>(
        client,
        SOURCE_CONTROLLER,
        run,
        concurrency,
        metrics,
        shutdown,
        |c| c,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(rev: &str) -> ferroflux_source::Artifact {
        ferroflux_source::Artifact {
            path: "gitrepository/ns/r/abc.tar.gz".into(),
            url: "http://h/gitrepository/ns/r/abc.tar.gz".into(),
            revision: rev.into(),
            digest: "sha256:00".into(),
            size: 10,
            last_update_time: std::time::SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn refusals_name_the_first_field_ferroflux_does_not_do() {
        let spec = |extra: serde_json::Value| -> ferroflux_api::gitrepository::GitRepositorySpec {
            let mut s = serde_json::json!({"url": "https://example.com/r.git", "interval": "1m"});
            if let (Some(s), Some(e)) = (s.as_object_mut(), extra.as_object()) {
                s.extend(e.clone());
            }
            serde_json::from_value(s).unwrap()
        };
        assert_eq!(refusal(&spec(serde_json::json!({}))), None);
        assert_eq!(
            refusal(&spec(
                serde_json::json!({"provider": "generic", "recurseSubmodules": false})
            )),
            None
        );
        let message = |extra| refusal(&spec(extra)).map(|r| (r.reason, r.message));
        // include and sparseCheckout are done now.
        assert_eq!(
            message(
                serde_json::json!({"include": [{"repository": {"name": "other"}}],
                                       "sparseCheckout": ["apps"]})
            ),
            None
        );
        assert_eq!(
            message(serde_json::json!({"provider": "github", "recurseSubmodules": true})),
            Some((
                UNSUPPORTED_FEATURE,
                "not supported yet: recurseSubmodules".into()
            ))
        );
        assert_eq!(
            message(serde_json::json!({"provider": "azure"})),
            Some((
                UNSUPPORTED_FEATURE,
                "not supported yet: provider 'azure' (only 'generic')".into()
            ))
        );
        // verify is done now too.
        assert_eq!(
            message(serde_json::json!({"verify": {"secretRef": {"name": "k"}}})),
            None
        );
    }

    #[test]
    fn a_refusal_keeps_the_artifact() {
        let with_artifact = || GitRepositoryStatus {
            artifact: Some(to_status_artifact(
                &artifact("main@sha1:aa"),
                Timestamp::UNIX_EPOCH,
            )),
            ..Default::default()
        };
        let refused = |reason| Refusal {
            reason,
            message: "m".into(),
        };
        let mut st = with_artifact();
        refuse(
            &mut st,
            Some(2),
            &refused(UNSUPPORTED_FEATURE),
            Timestamp::UNIX_EPOCH,
        );
        assert!(st.artifact.is_some());
        assert_eq!(st.observed_generation, Some(2));
    }

    #[test]
    fn success_then_failure_keeps_the_artifact_and_says_why() {
        let mut st = GitRepositoryStatus::default();
        let rev = format!("main@sha1:{}", "a".repeat(40));
        let stored = Ok(Outcome::Stored {
            artifact: artifact(&rev),
            stats: Default::default(),
            removed: vec![],
        });
        let ev = apply_result(&mut st, Some(3), &stored, None, Timestamp::UNIX_EPOCH).unwrap();
        assert_eq!(ev.1, "NewArtifact");
        let conds = st.conditions.clone().unwrap();
        let ready = conditions::find_condition(&conds, "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", "Succeeded")
        );
        assert_eq!(
            ready.message,
            format!("stored artifact for revision '{rev}'")
        );
        assert_eq!(st.observed_generation, Some(3));
        assert_eq!(st.artifact.as_ref().unwrap().revision, rev);

        let failed: Result<Outcome, _> = Err(ferroflux_source::Error::Authentication {
            url: "https://h/r".into(),
            detail: "the server refused the credentials (HTTP 401)".into(),
        });
        let ev = apply_result(&mut st, Some(3), &failed, None, Timestamp::UNIX_EPOCH).unwrap();
        assert_eq!(
            (ev.0.as_str(), ev.1.as_str()),
            ("Warning", "AuthenticationFailed")
        );
        let conds = st.conditions.clone().unwrap();
        let ready = conditions::find_condition(&conds, "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "AuthenticationFailed")
        );
        assert!(conditions::is_true(&conds, "FetchFailed"));
        assert!(conditions::is_true(&conds, "ArtifactInStorage"));
        assert_eq!(
            st.artifact.as_ref().unwrap().revision,
            rev,
            "last good artifact still named"
        );

        let unchanged = Ok(Outcome::Unchanged {
            artifact: artifact(&rev),
        });
        assert!(apply_result(&mut st, Some(4), &unchanged, None, Timestamp::UNIX_EPOCH).is_none());
        let conds = st.conditions.clone().unwrap();
        assert!(conditions::find_condition(&conds, "FetchFailed").is_none());
        assert!(conditions::is_true(&conds, "Ready"));
    }

    #[test]
    fn invalid_urls_stall() {
        let mut st = GitRepositoryStatus::default();
        let err = GitSource::new(
            "git@h:o/r",
            &GitRef::default(),
            Credentials::default(),
            FetchOptions::default(),
        )
        .unwrap_err();
        apply_result(&mut st, Some(1), &Err(err), None, Timestamp::UNIX_EPOCH);
        let conds = st.conditions.unwrap();
        let stalled = conditions::find_condition(&conds, "Stalled").unwrap();
        assert_eq!(stalled.reason, "URLInvalid");
        assert!(stalled.message.contains("ssh://git@h/o/r"));
    }
}
