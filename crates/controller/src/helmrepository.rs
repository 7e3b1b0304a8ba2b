//! The `HelmRepository` reconciler: one pass over one object. Fetching and parsing the index
//! and storing it are `ferroflux-helmsource`'s; this module reads the object and its secrets,
//! runs the fetch on a blocking thread under `spec.timeout`, and writes Flux's status,
//! finalizer and events. `type: oci` repositories keep no artifact and are Ready at once, as in
//! Flux (their charts are pulled by HelmCharts).

use std::sync::Arc;
use std::time::Duration;

use crate::finalizer;
use crate::gitrepository::Reconciled;
use crate::metrics::Metrics;
use crate::sourceloop::{self, secret_data};
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::helmrepository::HelmRepositoryType;
use ferroflux_api::{Artifact, HelmRepository, HelmRepositoryStatus};
use ferroflux_helmsource::{FetchedIndex, RepositoryAccess, Stored};
use ferroflux_source::Storage;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::future::Future;
use std::pin::Pin;

/// Settings of the Helm source controllers (source-controller's flags).
#[derive(Clone)]
pub struct Options {
    /// The artifact storage and the address it is served at (shared with GitRepositories).
    pub storage: Storage,
    /// `--helm-index-max-size`.
    pub max_index_size: u64,
    /// The source artifacts HelmCharts are built from, unpacked once per artifact.
    pub source_trees: crate::helmchart::SourceTrees,
}

impl Options {
    /// Flux's defaults over `storage`.
    pub fn new(storage: Storage) -> Self {
        Options {
            storage,
            max_index_size: ferroflux_helmsource::MAX_INDEX_SIZE,
            source_trees: Default::default(),
        }
    }
}

pub(crate) const FIELD_MANAGER: &str = "gotk-source-controller";
const KIND: &str = "HelmRepository";
/// Flux's interval when `spec.interval` is unset (it is optional for `type: oci`).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(600);

impl step::Reasoned for ferroflux_helmsource::Error {
    fn reason(&self) -> &'static str {
        ferroflux_helmsource::Error::reason(self)
    }
    fn is_stalling(&self) -> bool {
        ferroflux_helmsource::Error::is_stalling(self)
    }
}

/// `spec.interval`, or Flux's default.
fn interval_of(interval: Option<&str>) -> Duration {
    interval
        .and_then(|i| ferroflux_api::duration::parse_duration(i).ok())
        .unwrap_or(DEFAULT_INTERVAL)
}

/// The access a HelmRepository gives to its URL: its secrets read, its timeout.
pub async fn access_for(
    client: &kube::Client,
    repo: &HelmRepository,
    ns: &str,
) -> Result<RepositoryAccess, ferroflux_helmsource::Error> {
    let auth = match &repo.spec.secret_ref {
        Some(r) => Some((
            format!("{ns}/{}", r.name),
            secret_data(client, ns, &r.name)
                .await
                .map_err(ferroflux_helmsource::Error::InvalidSecret)?,
        )),
        None => None,
    };
    let certs = match &repo.spec.cert_secret_ref {
        Some(r) => Some((
            format!("{ns}/{}", r.name),
            secret_data(client, ns, &r.name)
                .await
                .map_err(ferroflux_helmsource::Error::InvalidSecret)?,
        )),
        None => None,
    };
    let mut access = RepositoryAccess::anonymous(&repo.spec.url).with_secrets(
        auth.as_ref().map(|(n, d)| (n.as_str(), d)),
        certs.as_ref().map(|(n, d)| (n.as_str(), d)),
    )?;
    access.pass_credentials = repo.spec.pass_credentials.unwrap_or(false);
    access.timeout = Some(timeout_of(repo));
    Ok(access)
}

/// `spec.timeout`, 60s by default.
pub fn timeout_of(repo: &HelmRepository) -> Duration {
    repo.spec
        .timeout
        .as_deref()
        .and_then(|t| ferroflux_api::duration::parse_duration(t).ok())
        .unwrap_or(ferroflux_helmsource::DEFAULT_TIMEOUT)
}

/// The status artifact of a stored file.
pub(crate) fn to_artifact(stored: &Stored, revision: &str, now: Timestamp) -> Artifact {
    Artifact {
        digest: stored.digest.clone(),
        last_update_time: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        metadata: None,
        path: stored.path.clone(),
        revision: revision.to_string(),
        size: Some(stored.size as i64),
        url: stored.url.clone(),
    }
}

/// Sizes as Flux's events print them (`units.HumanSize`: `1.234kB`).
fn human_size(size: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = size as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    let text = format!("{value:.4}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{}", UNITS[unit])
}

/// What a pass of a `type: default` repository produced.
pub enum Fetched {
    /// The index is the stored one: nothing written.
    Unchanged,
    /// A new index was stored.
    Stored(Stored, String, u64),
}

/// Folds the pass into the status as source-controller does. Returns the event to publish.
pub fn apply_result(
    status: &mut HelmRepositoryStatus,
    generation: Option<i64>,
    url: &str,
    result: &Result<(Fetched, String), Failure>,
    now: Timestamp,
) -> Option<(String, String, String)> {
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    status.observed_generation = generation;
    match result {
        Ok((fetched, revision)) => {
            let msg = format!("stored artifact: revision '{revision}'");
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &msg)
                .mark_true(conditions::ARTIFACT_IN_STORAGE, reason::SUCCEEDED, &msg)
                .delete(conditions::FETCH_FAILED)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING)
                .delete(conditions::STORAGE_OPERATION_FAILED);
            match fetched {
                Fetched::Stored(stored, _, size) => {
                    status.artifact = Some(to_artifact(stored, revision, now));
                    status.url = Some(stored.stable_url.clone());
                    Some((
                        "Normal".into(),
                        reason::NEW_ARTIFACT.into(),
                        format!(
                            "stored fetched index of size {} from '{}'",
                            human_size(*size),
                            ferroflux_helmsource::redact(url)
                        ),
                    ))
                }
                Fetched::Unchanged => None,
            }
        }
        Err(f) => {
            let failed_type = if f.reason == ferroflux_helmsource::reason::STORAGE_OPERATION_FAILED
            {
                conditions::STORAGE_OPERATION_FAILED
            } else {
                conditions::FETCH_FAILED
            };
            conds.mark_true(failed_type, f.reason, &f.message);
            f.mark(&mut conds);
            // The last good index stays in status and in storage: HelmCharts keep using it.
            Some(("Warning".into(), f.reason.to_string(), f.message.clone()))
        }
    }
}

/// The status of a `type: oci` repository: Ready, no artifact.
fn apply_oci(status: &mut HelmRepositoryStatus, generation: Option<i64>, now: Timestamp) {
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    conds
        .mark_true(
            conditions::READY,
            reason::SUCCEEDED,
            "Helm repository is Ready",
        )
        .delete(conditions::ARTIFACT_IN_STORAGE)
        .delete(conditions::FETCH_FAILED)
        .delete(conditions::STALLED)
        .delete(conditions::RECONCILING);
    status.artifact = None;
    status.url = None;
    status.observed_generation = generation;
}

async fn fetch(
    client: &kube::Client,
    settings: &Options,
    obj: &HelmRepository,
    ns: &str,
    name: &str,
    interval: Duration,
) -> Result<(Fetched, String), Failure> {
    let access = access_for(client, obj, ns)
        .await
        .map_err(|e| Failure::of(&e, interval))?;
    let timeout = timeout_of(obj);
    let max = settings.max_index_size;
    let task = tokio::task::spawn_blocking(move || ferroflux_helmsource::fetch_index(access, max));
    let index: FetchedIndex = match tokio::time::timeout(timeout, task).await {
        Ok(Ok(r)) => r.map_err(|e| Failure::of(&e, interval))?,
        Ok(Err(join)) => {
            return Err(Failure::retry(
                ferroflux_helmsource::reason::FAILED,
                format!("failed to fetch Helm repository index: {join}"),
                interval,
            ));
        }
        Err(_) => {
            return Err(Failure::retry(
                ferroflux_helmsource::reason::FAILED,
                format!(
                    "failed to fetch Helm repository index: timed out after {}",
                    ferroflux_api::duration::format_duration(timeout)
                ),
                interval,
            ));
        }
    };
    let revision = index.revision.clone();
    let previous = obj.status.as_ref().and_then(|s| s.artifact.as_ref());
    if let Some(prev) = previous
        && prev.revision == revision
        && settings.storage.exists(&prev.path)
    {
        return Ok((Fetched::Unchanged, revision));
    }
    let storage = settings.storage.clone();
    let (ns2, name2) = (ns.to_string(), name.to_string());
    let size = index.data.len() as u64;
    let stored = tokio::task::spawn_blocking(move || {
        ferroflux_helmsource::store_index(&storage, &ns2, &name2, &index)
    })
    .await
    .map_err(|e| {
        Failure::retry(
            ferroflux_helmsource::reason::STORAGE_OPERATION_FAILED,
            e.to_string(),
            interval,
        )
    })?
    .map_err(|e| Failure::of(&e, interval))?;
    Ok((Fetched::Stored(stored, revision.clone(), size), revision))
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, kube::Error> {
    let api: Api<HelmRepository> = Api::namespaced(client.clone(), ns);
    let Some(obj) = finalizer::begin(&api, name, |_| async {
        if let Err(e) = ferroflux_helmsource::remove_artifacts(&settings.storage, KIND, ns, name) {
            tracing::warn!(error = %e, "failed to remove the artifacts of {KIND} {ns}/{name}");
        }
        Ok::<(), kube::Error>(())
    })
    .await?
    else {
        return Ok(Reconciled::default());
    };
    let interval = interval_of(obj.spec.interval.as_deref());
    let mut status = obj.status.clone().unwrap_or_default();
    let now = Timestamp::now();
    let generation = obj.metadata.generation;
    let event = if obj.repository_type() == HelmRepositoryType::Oci {
        if status.artifact.is_some() {
            let _ = ferroflux_helmsource::remove_artifacts(&settings.storage, KIND, ns, name);
        }
        apply_oci(&mut status, generation, now);
        step::log_success(KIND, ns, name, "", "oci repository");
        None
    } else {
        let result = fetch(client, settings, &obj, ns, name, interval).await;
        match &result {
            Ok((f, revision)) => step::log_success(
                KIND,
                ns,
                name,
                revision,
                match f {
                    Fetched::Stored(..) => "new artifact stored",
                    Fetched::Unchanged => "artifact up to date",
                },
            ),
            Err(f) => step::log_failure(KIND, ns, name, f),
        }
        let event = apply_result(&mut status, generation, &obj.spec.url, &result, now);
        // The storage address may differ from the last run's (a restarted local cluster picks
        // a new port): serve the same file under today's URL.
        if let Some(a) = status.artifact.as_mut() {
            a.url = settings.storage.url_for(&a.path);
            status.url = Some(settings.storage.url_for(&format!(
                "{}/index.yaml",
                a.path.rsplit_once('/').map_or("", |(d, _)| d)
            )));
        }
        event
    };
    sourceloop::write_status(&api, &obj, &status, &["artifact", "url"], FIELD_MANAGER).await?;
    Ok(Reconciled {
        requeue_after: Some(interval),
        event,
    })
}

/// The HelmRepository controller: its cache and the future that runs [`reconcile`] until
/// `shutdown` resolves.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<HelmRepository>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    sourceloop::controller::<HelmRepository>(
        client,
        "helmrepository",
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

    #[test]
    fn sizes_print_like_go_units() {
        assert_eq!(human_size(532), "532B");
        assert_eq!(human_size(1234), "1.234kB");
        assert_eq!(human_size(2_000_000), "2MB");
    }

    #[test]
    fn failure_keeps_the_artifact_and_oci_is_ready() {
        let mut st = HelmRepositoryStatus {
            artifact: Some(Artifact {
                revision: "sha256:aa".into(),
                path: "helmrepository/ns/r/index-aa.yaml".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let failed = Err(Failure::retry(
            "Failed",
            "failed to fetch Helm repository index: failed to fetch https://h/index.yaml : 401 Unauthorized",
            Duration::from_secs(60),
        ));
        let ev = apply_result(
            &mut st,
            Some(2),
            "https://h",
            &failed,
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(ev.0, "Warning");
        let conds = st.conditions.clone().unwrap();
        let ready = conditions::find_condition(&conds, "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "Failed")
        );
        assert!(conditions::is_true(&conds, "FetchFailed"));
        assert_eq!(st.artifact.as_ref().unwrap().revision, "sha256:aa");
        apply_oci(&mut st, Some(3), Timestamp::UNIX_EPOCH);
        let conds = st.conditions.clone().unwrap();
        let ready = conditions::find_condition(&conds, "Ready").unwrap();
        assert_eq!(ready.message, "Helm repository is Ready");
        assert!(conditions::find_condition(&conds, "FetchFailed").is_none());
        assert!(st.artifact.is_none());
    }
}
