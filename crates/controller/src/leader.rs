//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules, so that of two
//! replicas only one reconciles.
//!
//! A candidate takes the Lease when it is free (no holder) or when its holder has not renewed it
//! for a whole lease duration. Expiry is judged by the local clock from the moment this process
//! last saw the Lease record change, never by comparing the holder's timestamps with our clock,
//! so clock skew between nodes cannot make two replicas leaders. Every write carries the
//! resourceVersion that was read, so two candidates racing for a free Lease cannot both win.
//! A leader that cannot renew within the renew deadline reports leadership lost and must stop
//! reconciling; on a clean shutdown it releases the Lease so a standby takes over at once.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Where the Lease lives and how long leadership lasts (controller-runtime's defaults).
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// The namespace of the Lease (the controller's own).
    pub namespace: String,
    /// The Lease's name, shared by every replica of the controller.
    pub name: String,
    /// This replica's identity, written as the Lease's `holderIdentity`.
    pub identity: String,
    /// How long a Lease not renewed stays another replica's before it may be taken.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives leadership up.
    pub renew_deadline: Duration,
    /// The pause between attempts to take or renew the Lease.
    pub retry_period: Duration,
}

impl LeaderElection {
    /// The Lease Flux's controllers would use, held under `identity`.
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        LeaderElection {
            namespace: namespace.into(),
            name: "ferroflux-controller-leader-election".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// What one attempt found.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    Held,
    HeldByOther(String),
}

/// A candidate's view of the Lease between attempts.
struct Candidate {
    api: Api<Lease>,
    config: LeaderElection,
    /// The holder and renew time last seen, and when we saw them change.
    observed: Option<(Option<String>, Option<MicroTime>, Instant)>,
}

impl Candidate {
    fn new(client: kube::Client, config: LeaderElection) -> Self {
        Candidate {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    fn spec(&self, now: Timestamp, acquire: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_duration.as_secs().max(1) as i32),
            acquire_time: acquire,
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let now = Timestamp::now();
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(now, Some(MicroTime(now)), 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    Ok(Attempt::HeldByOther("another candidate".into()))
                }
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let seen = (holder.clone(), spec.renew_time.clone());
        let changed = match &self.observed {
            Some((h, r, _)) => (h, r) != (&seen.0, &seen.1),
            None => true,
        };
        if changed {
            self.observed = Some((seen.0, seen.1, Instant::now()));
        }
        let observed_at = self
            .observed
            .as_ref()
            .map(|o| o.2)
            .unwrap_or_else(Instant::now);
        let duration = spec
            .lease_duration_seconds
            .map(|s| Duration::from_secs(s.max(1) as u64))
            .unwrap_or(self.config.lease_duration);
        let ours = holder.as_deref() == Some(self.config.identity.as_str());
        if let Some(other) = holder.as_ref().filter(|_| !ours)
            && observed_at.elapsed() < duration
        {
            return Ok(Attempt::HeldByOther(other.clone()));
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        let new_spec = if ours {
            self.spec(now, spec.acquire_time.clone(), transitions)
        } else {
            self.spec(now, Some(MicroTime(now)), transitions + 1)
        };
        lease.spec = Some(new_spec);
        // `replace` sends the resourceVersion we read: a concurrent writer makes this a 409.
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Attempt::Held),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::HeldByOther(
                holder.unwrap_or_else(|| "another candidate".into()),
            )),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up with client-go's release record: no holder, a one-second duration.
    async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(());
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        let now = Timestamp::now();
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(now));
        spec.acquire_time = Some(MicroTime(now));
        lease.spec = Some(spec);
        self.api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
    }
}

/// Leadership held: renewed in the background until released or lost.
pub struct Leadership {
    lost: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    renewer: tokio::task::JoinHandle<Candidate>,
}

/// Blocks until this candidate holds the Lease, or returns `None` when `cancel` fires first.
/// API errors are retried (logged), as a standby must survive an API server restart.
pub async fn acquire(
    client: kube::Client,
    config: LeaderElection,
    mut cancel: watch::Receiver<bool>,
) -> Option<Leadership> {
    let retry = config.retry_period;
    let mut candidate = Candidate::new(client, config);
    loop {
        match candidate.try_acquire_or_renew().await {
            Ok(Attempt::Held) => break,
            Ok(Attempt::HeldByOther(holder)) => {
                tracing::debug!(%holder, "lease held by another replica; standing by")
            }
            Err(e) => tracing::warn!(error = %e, "cannot read or write the leader Lease"),
        }
        if *cancel.borrow() {
            return None;
        }
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = cancel.changed() => return None,
        }
    }
    tracing::info!(
        lease = %format!("{}/{}", candidate.config.namespace, candidate.config.name),
        identity = %candidate.config.identity,
        "acquired leadership"
    );
    let (lost_tx, lost) = watch::channel(false);
    let (stop, mut stop_rx) = watch::channel(false);
    let renewer = tokio::spawn(async move {
        let mut last_renew = Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(candidate.config.retry_period) => {}
                _ = stop_rx.changed() => return candidate,
            }
            match candidate.try_acquire_or_renew().await {
                Ok(Attempt::Held) => last_renew = Instant::now(),
                Ok(Attempt::HeldByOther(holder)) => {
                    tracing::error!(%holder, "leadership taken by another replica");
                    let _ = lost_tx.send(true);
                    return candidate;
                }
                Err(e) => tracing::warn!(error = %e, "cannot renew the leader Lease"),
            }
            if last_renew.elapsed() > candidate.config.renew_deadline {
                tracing::error!("leadership lost: the Lease was not renewed within the deadline");
                let _ = lost_tx.send(true);
                return candidate;
            }
        }
    });
    Some(Leadership {
        lost,
        stop,
        renewer,
    })
}

impl Leadership {
    /// Resolves when leadership is lost; reconciling must stop then.
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        while !*lost.borrow_and_update() {
            if lost.changed().await.is_err() {
                // The renewer ended without reporting a loss: it was stopped by `release`.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Stops renewing and frees the Lease so a standby can take over without waiting.
    pub async fn release(self) {
        let _ = self.stop.send(true);
        let was_lost = *self.lost.borrow();
        if let Ok(candidate) = self.renewer.await
            && !was_lost
            && let Err(e) = candidate.release().await
        {
            tracing::warn!(error = %e, "cannot release the leader Lease");
        }
    }
}
