//! What the day-2 commands (suspend, resume, reconcile, fleet status) share: the Flux kinds
//! behind one trait (crates/api's `FluxObject`, re-exported), and waiting for a controller to
//! report an object ready the way the flux CLI decides it.

use crate::cluster::{Cluster, humantime};
use crate::exit;
use crate::output::progress;
use anyhow::anyhow;
use ferroflux_api::conditions::{READY, RECONCILING, STALLED, find_condition};
use ferroflux_api::{HasArtifact, RECONCILE_REQUESTED_AT};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

pub use ferroflux_api::FluxObject;

/// Where a controller stands with an object.
#[derive(Debug, PartialEq)]
pub enum Readiness {
    /// Not reconciled for its current generation yet, or still working.
    Pending(String),
    Ready,
    /// Settled on a failure: the message to show.
    Failed(String),
}

/// Flux's readiness rules: the status must be for the current generation (object's and the
/// Ready condition's `observedGeneration`), not `Reconciling`; `Stalled` or a settled
/// `Ready=False` is a failure.
pub fn readiness<K: FluxObject>(obj: &K) -> Readiness {
    if K::STATIC {
        return Readiness::Ready;
    }
    let generation = obj.meta().generation.unwrap_or(0);
    let observed = obj.observed_generation().unwrap_or(0);
    let conditions = obj.conditions();
    if observed < 1 {
        return Readiness::Pending("waiting to be reconciled".into());
    }
    let Some(ready) = find_condition(conditions, READY) else {
        return Readiness::Pending("waiting to be reconciled".into());
    };
    match ready.observed_generation {
        Some(g) if g != 0 && g != generation => {
            return Readiness::Pending(ready.message.clone());
        }
        Some(g) if g != 0 => {}
        _ if observed != generation => return Readiness::Pending(ready.message.clone()),
        _ => {}
    }
    if observed != generation {
        return Readiness::Pending(ready.message.clone());
    }
    if let Some(stalled) = find_condition(conditions, STALLED)
        && stalled.status == "True"
    {
        return Readiness::Failed(stalled.message.clone());
    }
    if find_condition(conditions, RECONCILING).is_some_and(|c| c.status == "True") {
        return Readiness::Pending(ready.message.clone());
    }
    match ready.status.as_str() {
        "True" => Readiness::Ready,
        "False" => Readiness::Failed(ready.message.clone()),
        _ => Readiness::Pending(ready.message.clone()),
    }
}

/// How often the waits read the object back (flux polls every 2s; a local controller answers
/// faster, and one GET is cheap).
const POLL: Duration = Duration::from_millis(300);

/// Gets an object, with flux's not-found message.
pub async fn get_object<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> anyhow::Result<K> {
    let api: Api<K> = Api::namespaced(cluster.client.clone(), namespace);
    cluster
        .call(&format!("getting {} {name}", K::KIND), api.get_opt(name))
        .await?
        .ok_or_else(|| {
            anyhow!(
                "{} object '{name}' not found in \"{namespace}\" namespace",
                K::KIND
            )
        })
}

/// Polls `name` until `check` settles, bounded by `deadline`; the time-out error carries the
/// last pending message.
async fn poll_until<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    deadline: tokio::time::Instant,
    check: impl Fn(&K) -> Readiness,
) -> anyhow::Result<K> {
    loop {
        let obj: K = get_object(cluster, namespace, name).await?;
        let last = match check(&obj) {
            Readiness::Ready => return Ok(obj),
            Readiness::Failed(message) => {
                return Err(anyhow!("{} reconciliation failed: '{message}'", K::KIND));
            }
            Readiness::Pending(message) => message,
        };
        if tokio::time::Instant::now() + POLL > deadline {
            return Err(anyhow!(
                "timed out after {} waiting for {} {namespace}/{name} to be reconciled; last status: {last}",
                humantime(cluster.timeout),
                K::KIND
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until the controller reports the object ready (resume's wait).
pub async fn wait_ready<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    deadline: tokio::time::Instant,
) -> anyhow::Result<K> {
    poll_until(cluster, namespace, name, deadline, readiness::<K>).await
}

/// How a `create source` command words its wait; flux words each kind differently and its
/// goldens check the words.
pub struct SourceWait<'a> {
    /// `HelmChart source`, `OCIRepository`: "waiting for {label} reconciliation", then
    /// "{label} reconciliation completed".
    pub label: &'a str,
    /// The failure when the ready object names no artifact; `None` where having none is normal
    /// (an OCI HelmRepository keeps no index).
    pub missing_artifact: Option<&'a str>,
}

/// The tail every `create source` command shares: wait until the controller reports the source
/// ready, then name the revision it fetched.
pub async fn wait_for_artifact<K: FluxObject + HasArtifact>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    deadline: tokio::time::Instant,
    words: SourceWait<'_>,
) -> anyhow::Result<()> {
    progress::waiting(format!("waiting for {} reconciliation", words.label));
    let done: K = wait_ready(cluster, namespace, name, deadline)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    progress::success(format!("{} reconciliation completed", words.label));
    match (HasArtifact::artifact(&done), words.missing_artifact) {
        (Some(artifact), _) => {
            progress::success(format!("fetched revision: {}", artifact.revision))
        }
        (None, Some(missing)) => return Err(anyhow!("{missing}")),
        (None, None) => {}
    }
    Ok(())
}

/// Sets `reconcile.fluxcd.io/requestedAt` to a fresh RFC 3339 time (nanoseconds, as flux
/// writes it).
pub async fn request_reconcile<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> anyhow::Result<()> {
    request_reconcile_with::<K>(cluster, namespace, name, &[]).await
}

/// [`request_reconcile`], writing the same token under `also` too (a HelmRelease's
/// `reconcile.fluxcd.io/forceAt` and `resetAt`, which the controller honours only when they
/// equal `requestedAt`).
pub async fn request_reconcile_with<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    also: &[&str],
) -> anyhow::Result<()> {
    let api: Api<K> = Api::namespaced(cluster.client.clone(), namespace);
    let token = k8s_openapi::jiff::Timestamp::now().to_string();
    let mut annotations = serde_json::Map::new();
    annotations.insert(RECONCILE_REQUESTED_AT.into(), token.clone().into());
    for key in also {
        annotations.insert((*key).into(), token.clone().into());
    }
    let patch = serde_json::json!({"metadata": {"annotations": annotations}});
    cluster
        .call(
            &format!("annotating {} {name}", K::KIND),
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
    Ok(())
}

/// Waits until the controller has handled a reconcile request and reports the object ready.
///
/// As the flux CLI does (`reconciliationHandled` in its `reconcile.go`), "handled" means
/// `status.lastHandledReconcileAt` differs from `previous`, its value read before the request
/// was written, not that it equals the value this command wrote: when another client asks
/// again before the controller gets to ours, the controller handles only the newest value,
/// and an exact match would then wait for a request that will never be handled.
pub async fn wait_handled<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    previous: Option<&str>,
    deadline: tokio::time::Instant,
) -> anyhow::Result<K> {
    poll_until(cluster, namespace, name, deadline, |obj: &K| {
        if obj.last_handled_reconcile_at() == previous {
            return Readiness::Pending(
                "the controller has not handled the reconcile request yet".into(),
            );
        }
        readiness(obj)
    })
    .await
}

/// Sets or clears `spec.suspend` with a merge patch, as flux does.
pub async fn set_suspended<K: FluxObject>(
    cluster: &Cluster,
    namespace: &str,
    obj: &K,
    suspend: bool,
) -> anyhow::Result<()> {
    let api: Api<K> = Api::namespaced(cluster.client.clone(), namespace);
    let name = obj.name_any();
    // Flux's Go type omits `suspend: false`, so resuming removes the field.
    let value = if suspend {
        serde_json::Value::Bool(true)
    } else {
        serde_json::Value::Null
    };
    let patch = serde_json::json!({"spec": {"suspend": value}});
    cluster
        .call(
            &format!("patching {} {name}", K::KIND),
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
    Ok(())
}

/// Ctrl-C during a wait. What the command wrote before waiting (one patch) is whole, so it
/// just stops.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Listens for Ctrl-C from now on. Called before a wait prints its `◎` line, so a Ctrl-C that
/// answers the line is never missed (nor left to the default handler). `None` when the signal
/// cannot be listened for; the wait then goes on without it.
pub fn listen_for_interrupt() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok()
}

/// Runs a wait until it ends or `interrupt` fires ([`Interrupted`]).
pub async fn interruptible<T>(
    interrupt: Option<tokio::signal::unix::Signal>,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let Some(mut interrupt) = interrupt else {
        return work.await;
    };
    tokio::select! {
        r = work => r,
        Some(()) = interrupt.recv() => Err(Interrupted.into()),
    }
}

/// After Ctrl-C: flux's `✗` line saying what stays done, and the exit code shells give a
/// SIGINT death. Any other outcome is returned as is.
pub fn exit_code(result: anyhow::Result<()>, what_stays: &str) -> anyhow::Result<ExitCode> {
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.is::<Interrupted>() => {
            progress::failure(format_args!("interrupted: {what_stays}"));
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
        Err(e) => Err(e),
    }
}

/// Keeps the spinner honest: it stops (and clears its line) on every path out of a wait,
/// Ctrl-C included.
pub async fn with_spinner<T>(
    message: &str,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let interrupt = listen_for_interrupt();
    let spinner = progress::Spinner::start(message);
    let result = interruptible(interrupt, work).await;
    spinner.finish().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::Kustomization;
    use serde_json::json;

    fn ks(generation: i64, status: serde_json::Value) -> Kustomization {
        serde_json::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system", "generation": generation},
            "spec": {"interval": "1m", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}},
            "status": status,
        }))
        .unwrap()
    }

    fn cond(type_: &str, status: &str, message: &str, generation: i64) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": "R", "message": message,
               "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn readiness_follows_flux_rules() {
        assert!(matches!(
            readiness(&ks(1, json!({}))),
            Readiness::Pending(_)
        ));
        let ready = ks(
            2,
            json!({"observedGeneration": 2, "conditions": [cond("Ready", "True", "Applied", 2)]}),
        );
        assert_eq!(readiness(&ready), Readiness::Ready);
        let old = ks(
            3,
            json!({"observedGeneration": 2, "conditions": [cond("Ready", "True", "Applied", 2)]}),
        );
        assert!(matches!(readiness(&old), Readiness::Pending(_)));
        let working = ks(
            2,
            json!({"observedGeneration": 2, "conditions": [
                cond("Ready", "Unknown", "working", 2), cond("Reconciling", "True", "working", 2)]}),
        );
        assert!(matches!(readiness(&working), Readiness::Pending(_)));
        let failed = ks(
            2,
            json!({"observedGeneration": 2, "conditions": [cond("Ready", "False", "build failed", 2)]}),
        );
        assert_eq!(readiness(&failed), Readiness::Failed("build failed".into()));
        let stalled = ks(
            2,
            json!({"observedGeneration": 2, "conditions": [
                cond("Ready", "False", "x", 2), cond("Stalled", "True", "bad interval", 2)]}),
        );
        assert_eq!(
            readiness(&stalled),
            Readiness::Failed("bad interval".into())
        );
    }
}
