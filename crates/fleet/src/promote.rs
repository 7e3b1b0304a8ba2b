//! `fleet promote`: moving a commit through the plan's waves. For each wave in order: the ref
//! its clusters follow is pushed to the commit (a fast-forward for a branch, a forced push for a
//! tag; the ref's previous value is kept as `refs/ferroflux/previous/<wave>` for a rollback),
//! each cluster's `flux-system` GitRepository is asked to reconcile, and the wave is watched
//! until every Kustomization of that GitRepository applied the commit and is Ready, with every
//! HelmRelease Ready, and stays so for the plan's soak time. The first failure — a Kustomization
//! failing at the commit, a cluster unreachable, the wave's timeout, health lost while soaking —
//! stops the promotion: later waves are not touched.
//!
//! Git is the record: a wave is promoted when its ref is at the commit, so running the same
//! promotion again resumes (waves already there are only checked). Two promotions at once are
//! refused by a lock ref, `refs/ferroflux/promotion-lock`, created with a push that fails when
//! it exists (`--force-with-lease=<ref>:`), deleted at the end.

use crate::live::{Live, Target};
use crate::plan::{FollowedRef, Plan, Wave};
use crate::repo::{RepoError, git};
use crate::report::ClusterReport;
use ferroflux_api::GitRepository;
use kube::api::{Api, Patch, PatchParams};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::time::Instant;

/// The lock ref.
pub const LOCK: &str = "refs/ferroflux/promotion-lock";

/// Why a promotion stopped.
#[derive(Debug, thiserror::Error)]
pub enum PromoteError {
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] RepoError),
    /// Another promotion holds the lock.
    #[error(
        "another promotion is running on this repository: {LOCK} exists (at {0}); wait for it to end, or remove a stale lock with `fleet promote --unlock`"
    )]
    Locked(String),
    /// A wave failed; nothing after it was promoted.
    #[error("wave {wave} failed, nothing after it was promoted:\n  {}", reasons.join("\n  "))]
    WaveFailed {
        /// The wave.
        wave: String,
        /// Why, one line per cause.
        reasons: Vec<String>,
    },
    /// A cluster of the plan has no kubeconfig context.
    #[error("wave {wave}: cluster {cluster} has no kubeconfig context of that name")]
    NoContext {
        /// The wave.
        wave: String,
        /// The cluster.
        cluster: String,
    },
    /// `--rollback` of a wave never promoted.
    #[error("wave {0} has no previous revision to roll back to (refs/ferroflux/previous/{0})")]
    NothingToRollBack(String),
    /// An unknown wave.
    #[error("no wave named {0:?} in the plan")]
    UnknownWave(String),
}

/// A promotion over one repository work tree and its remote.
pub struct Promotion<'a> {
    /// The work tree (its remote is pushed to).
    pub repo: PathBuf,
    /// The remote's name.
    pub remote: String,
    /// The checked plan.
    pub plan: Plan,
    /// Each cluster's connection, by cluster name.
    pub targets: BTreeMap<String, Target>,
    /// Progress lines.
    pub say: &'a mut (dyn FnMut(String) + Send),
}

fn text(out: Vec<u8>) -> String {
    String::from_utf8_lossy(&out).trim().to_string()
}

impl Promotion<'_> {
    fn git(&self, args: &[&str]) -> Result<String, RepoError> {
        git(&self.repo, args).map(text)
    }

    /// The remote's value of `full` (None: no such ref).
    fn remote_ref(&self, full: &str) -> Result<Option<String>, RepoError> {
        let out = self.git(&["ls-remote", &self.remote, full])?;
        Ok(out
            .lines()
            .find(|l| l.ends_with(&format!("\t{full}")))
            .and_then(|l| l.split('\t').next())
            .map(str::to_string))
    }

    /// Takes the lock: a commit of its own (so no two promotions push the same value, which
    /// git would accept as a no-op) pushed only if the lock ref does not exist. Returns it.
    fn lock(&self, sha: &str) -> Result<String, PromoteError> {
        let stamp = format!(
            "ferroflux fleet promote: lock for {sha} (pid {}, {})",
            std::process::id(),
            jiff::Timestamp::now()
        );
        // The lock commit is on no branch: a fixed identity, so a machine without one works.
        let lock = self.git(&[
            "-c",
            "user.name=ferroflux",
            "-c",
            "user.email=ferroflux@localhost",
            "commit-tree",
            &format!("{sha}^{{tree}}"),
            "-p",
            sha,
            "-m",
            &stamp,
        ])?;
        let lease = format!("--force-with-lease={LOCK}:");
        match self.git(&[
            "push",
            "-q",
            &lease,
            &self.remote,
            &format!("{lock}:{LOCK}"),
        ]) {
            Ok(_) => Ok(lock),
            Err(e) => match self.remote_ref(LOCK)? {
                Some(held) => Err(PromoteError::Locked(held)),
                None => Err(e.into()),
            },
        }
    }

    fn unlock_at(&self, sha: &str) -> Result<(), RepoError> {
        let lease = format!("--force-with-lease={LOCK}:{sha}");
        self.git(&["push", "-q", &lease, &self.remote, &format!(":{LOCK}")])
            .map(|_| ())
    }

    /// Removes a lock left by a promotion that did not end (killed).
    pub fn unlock(&self) -> Result<bool, PromoteError> {
        match self.remote_ref(LOCK)? {
            Some(held) => {
                self.unlock_at(&held)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Promotes `to` (a revision; default the plan's source on the remote) through every wave.
    /// Returns the commit promoted.
    pub async fn promote(&mut self, to: Option<&str>) -> Result<String, PromoteError> {
        self.git(&["fetch", "-q", &self.remote.clone()])?;
        let rev = match to {
            Some(r) => r.to_string(),
            None => format!("{}/{}", self.remote, self.plan.source),
        };
        let sha = self.git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
        self.check_contexts()?;
        let lock = self.lock(&sha)?;
        let outcome = self.waves(&sha).await;
        let released = self.unlock_at(&lock);
        outcome?;
        released?;
        Ok(sha)
    }

    fn check_contexts(&self) -> Result<(), PromoteError> {
        for w in &self.plan.waves {
            for c in &w.clusters {
                if !self.targets.contains_key(c) {
                    return Err(PromoteError::NoContext {
                        wave: w.name.clone(),
                        cluster: c.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    async fn waves(&mut self, sha: &str) -> Result<(), PromoteError> {
        let short = &sha[..sha.len().min(12)];
        for wave in self.plan.waves.clone() {
            let full = wave.follows.full();
            let current = self.remote_ref(&full)?;
            if current.as_deref() == Some(sha) {
                (self.say)(format!(
                    "wave {}: {full} already at {short}, checking its clusters",
                    wave.name
                ));
            } else {
                if let Some(old) = &current {
                    let keep = format!("refs/ferroflux/previous/{}", wave.name);
                    self.git(&[
                        "push",
                        "-q",
                        "--force",
                        &self.remote,
                        &format!("{old}:{keep}"),
                    ])?;
                }
                self.move_ref(&wave.follows, sha, current.as_deref())?;
                (self.say)(format!(
                    "wave {}: moved {full} {} -> {short}",
                    wave.name,
                    current
                        .as_deref()
                        .map_or("(new)", |c| &c[..c.len().min(12)])
                ));
            }
            self.wait(&wave, sha).await?;
        }
        Ok(())
    }

    fn move_ref(
        &self,
        follows: &FollowedRef,
        sha: &str,
        current: Option<&str>,
    ) -> Result<(), RepoError> {
        let full = follows.full();
        let spec = format!("{sha}:{full}");
        match follows {
            // A branch only moves forward: git refuses anything else.
            FollowedRef::Branch(_) => self.git(&["push", "-q", &self.remote, &spec]),
            FollowedRef::Tag(_) => {
                let lease = format!("--force-with-lease={full}:{}", current.unwrap_or(""));
                self.git(&["push", "-q", &lease, &self.remote, &spec])
            }
        }
        .map(|_| ())
    }

    /// Rolls `wave` back to the ref's value before its last promotion, and waits for it.
    pub async fn rollback(&mut self, name: &str) -> Result<String, PromoteError> {
        let wave = self
            .plan
            .waves
            .iter()
            .find(|w| w.name == name)
            .cloned()
            .ok_or_else(|| PromoteError::UnknownWave(name.to_string()))?;
        self.git(&["fetch", "-q", &self.remote.clone()])?;
        let previous = self
            .remote_ref(&format!("refs/ferroflux/previous/{name}"))?
            .ok_or_else(|| PromoteError::NothingToRollBack(name.to_string()))?;
        self.check_contexts()?;
        let lock = self.lock(&previous)?;
        let outcome = async {
            let full = wave.follows.full();
            let current = self.remote_ref(&full)?;
            // Backwards on purpose: forced, but only from the value just read.
            let lease = format!(
                "--force-with-lease={full}:{}",
                current.as_deref().unwrap_or("")
            );
            self.git(&[
                "push",
                "-q",
                &lease,
                &self.remote,
                &format!("{previous}:{full}"),
            ])?;
            (self.say)(format!(
                "wave {name}: rolled {full} back to {}",
                &previous[..previous.len().min(12)]
            ));
            self.wait(&wave, &previous).await
        }
        .await;
        let released = self.unlock_at(&lock);
        outcome?;
        released?;
        Ok(previous)
    }

    /// Asks each cluster to fetch now, then watches the wave until it is Ready at `sha` and
    /// stays so for the soak time, or fails.
    async fn wait(&mut self, wave: &Wave, sha: &str) -> Result<(), PromoteError> {
        let targets: Vec<Target> = wave
            .clusters
            .iter()
            .filter_map(|c| self.targets.get(c).cloned())
            .collect();
        let failed = |reasons: Vec<String>| PromoteError::WaveFailed {
            wave: wave.name.clone(),
            reasons,
        };
        for t in &targets {
            let api: Api<GitRepository> = Api::namespaced(t.client.clone(), "flux-system");
            let at = jiff::Timestamp::now().to_string();
            let patch = serde_json::json!({"metadata": {"annotations": {
                ferroflux_api::RECONCILE_REQUESTED_AT: at}}});
            if let Err(e) = api
                .patch(
                    "flux-system",
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                return Err(failed(vec![format!(
                    "cluster {}: cannot ask GitRepository flux-system/flux-system to reconcile ({}): {e}",
                    t.context, t.server
                )]));
            }
        }
        let live = Live::start(targets);
        let mut changes = live.subscribe();
        let deadline = Instant::now() + self.plan.timeout;
        let mut healthy_since: Option<Instant> = None;
        loop {
            let reports = live.reports();
            match judge(&reports, sha) {
                Verdict::Failed(r) => return Err(failed(r)),
                Verdict::Ready => {
                    if healthy_since.is_none() {
                        healthy_since = Some(Instant::now());
                        (self.say)(format!(
                            "wave {}: Ready at {} on {}; soaking {}",
                            wave.name,
                            &sha[..sha.len().min(12)],
                            wave.clusters.join(", "),
                            ferroflux_api::duration::format_duration(self.plan.soak)
                        ));
                    }
                }
                Verdict::Pending(r) => {
                    if healthy_since.is_some() {
                        let mut r = r;
                        r.insert(0, "became unhealthy while soaking".into());
                        return Err(failed(r));
                    }
                    if Instant::now() >= deadline {
                        let mut r = r;
                        r.insert(
                            0,
                            format!(
                                "not Ready at {} within {}",
                                &sha[..sha.len().min(12)],
                                ferroflux_api::duration::format_duration(self.plan.timeout)
                            ),
                        );
                        return Err(failed(r));
                    }
                }
            }
            if let Some(since) = healthy_since
                && since.elapsed() >= self.plan.soak
            {
                (self.say)(format!("wave {}: healthy", wave.name));
                return Ok(());
            }
            let soak_end = healthy_since.map(|s| s + self.plan.soak);
            tokio::select! {
                c = changes.changed() => if c.is_err() { return Err(failed(vec!["the watches ended".into()])) },
                _ = tokio::time::sleep_until(deadline), if healthy_since.is_none() => {}
                _ = tokio::time::sleep_until(soak_end.unwrap_or(deadline)), if soak_end.is_some() => {}
            }
        }
    }
}

enum Verdict {
    Ready,
    Pending(Vec<String>),
    Failed(Vec<String>),
}

/// Whether every cluster applied `sha` from its flux-system GitRepository and is Ready.
fn judge(reports: &[ClusterReport], sha: &str) -> Verdict {
    let mut pending = Vec::new();
    let mut failed = Vec::new();
    const OWN: &str = "GitRepository/flux-system/flux-system";
    for r in reports {
        match r.status.as_str() {
            "unreachable" | "error" => {
                failed.push(format!(
                    "cluster {} unreachable: {}",
                    r.context,
                    r.error.as_deref().unwrap_or("")
                ));
                continue;
            }
            "connecting" => {
                pending.push(format!("cluster {}: connecting", r.context));
                continue;
            }
            _ => {}
        }
        let at = |rev: &Option<String>| rev.as_deref().is_some_and(|v| v.ends_with(sha));
        let own: Vec<_> = r
            .kustomizations
            .iter()
            .filter(|k| k.source == OWN && !k.suspended)
            .collect();
        if own.is_empty() {
            failed.push(format!("cluster {}: no Kustomization of {OWN}", r.context));
        }
        for k in own {
            let id = format!(
                "cluster {}: Kustomization {}/{}",
                r.context, k.namespace, k.name
            );
            // Waiting for a dependency to apply the same commit is a step of the wave, not
            // a failure: the controller retries it.
            let waiting = k.reason == ferroflux_api::conditions::reason::DEPENDENCY_NOT_READY;
            if k.ready == "False" && at(&k.attempted_revision) && !waiting {
                failed.push(format!("{id} failed at the commit: {}", k.message));
            } else if !(k.ready == "True" && at(&k.applied_revision)) {
                pending.push(format!(
                    "{id} not yet Ready at the commit (applied {}): {}",
                    k.applied_revision.as_deref().unwrap_or("nothing"),
                    k.message
                ));
            }
        }
        for h in r.helm_releases.iter().filter(|h| !h.suspended) {
            if h.ready != "True" {
                pending.push(format!(
                    "cluster {}: HelmRelease {}/{} not Ready: {}",
                    r.context, h.namespace, h.name, h.message
                ));
            }
        }
    }
    if !failed.is_empty() {
        Verdict::Failed(failed)
    } else if !pending.is_empty() {
        Verdict::Pending(pending)
    } else {
        Verdict::Ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::KustomizationReport;

    fn cluster(ready: &str, reason: &str, attempted: &str) -> ClusterReport {
        let mut r = ClusterReport::unreachable("staging", "https://x", "failing", String::new());
        r.error = None;
        r.kustomizations.push(KustomizationReport {
            namespace: "flux-system".into(),
            name: "apps".into(),
            applied_revision: Some("staging@sha1:old".into()),
            attempted_revision: Some(attempted.into()),
            source: "GitRepository/flux-system/flux-system".into(),
            source_revision: Some("staging@sha1:new".into()),
            behind: true,
            ready: ready.into(),
            reason: reason.into(),
            suspended: false,
            message: "m".into(),
            depends_on: vec!["flux-system/infrastructure".into()],
        });
        r
    }

    /// A Kustomization waiting for its dependency to apply the commit is pending (the wave
    /// goes on waiting); one whose own build failed at the commit fails the wave.
    #[test]
    fn a_dependency_not_ready_yet_is_pending_not_failed() {
        let waiting = cluster("False", "DependencyNotReady", "staging@sha1:new");
        assert!(matches!(judge(&[waiting], "new"), Verdict::Pending(_)));
        let failed = cluster("False", "BuildFailed", "staging@sha1:new");
        assert!(matches!(judge(&[failed], "new"), Verdict::Failed(_)));
    }
}
