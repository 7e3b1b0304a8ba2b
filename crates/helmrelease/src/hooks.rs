//! Running a release's hooks for one event as Helm's `execHook` does: hooks of the event in
//! weight order (then by name), each deleted first by `before-hook-creation` (the default when
//! a hook names no policy), created, waited for (Jobs until complete, Pods until succeeded),
//! its run recorded in the release; on failure it is deleted by `hook-failed` and the hooks
//! that succeeded before it by `hook-succeeded`; after all succeeded, each is deleted by
//! `hook-succeeded`, last first. CRD hooks are never deleted.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::Cluster;
use crate::release::{Hook, Release, now};
use crate::storage::Storage;

const BEFORE_HOOK_CREATION: &str = "before-hook-creation";
const HOOK_SUCCEEDED: &str = "hook-succeeded";
const HOOK_FAILED: &str = "hook-failed";

async fn hook_objects(
    cluster: &Cluster,
    hook: &Hook,
    namespace: &str,
) -> Result<Vec<Value>, String> {
    let mut objects = crate::manifest::objects_of_manifest(&hook.manifest).map_err(|e| {
        format!(
            "unable to build kubernetes object for hook {}: {e}",
            hook.path
        )
    })?;
    cluster.namespaced(&mut objects, namespace).await?;
    Ok(objects)
}

async fn delete_by_policy(
    cluster: &Cluster,
    hook: &Hook,
    policy: &str,
    namespace: &str,
    timeout: Duration,
) -> Result<(), String> {
    if hook.kind == "CustomResourceDefinition" || !hook.delete_policies.iter().any(|p| p == policy)
    {
        return Ok(());
    }
    let objects = hook_objects(cluster, hook, namespace).await?;
    for o in &objects {
        cluster.delete(o).await?;
    }
    cluster.wait_deleted(&objects, timeout).await
}

/// Runs the hooks of `event`, recording each run in `rel` (and in storage, best effort, as Helm
/// does). The error is Helm's text, without the action's prefix.
pub(crate) async fn exec(
    cluster: &Cluster,
    storage: &Storage,
    rel: &mut Release,
    event: &str,
    timeout: Duration,
    select: &(dyn Fn(&Hook) -> bool + Sync),
) -> Result<(), String> {
    let mut order: Vec<usize> = (0..rel.hooks.len())
        .filter(|&i| rel.hooks[i].runs_on(event) && select(&rel.hooks[i]))
        .collect();
    order.sort_by(|&a, &b| {
        let (ha, hb) = (&rel.hooks[a], &rel.hooks[b]);
        ha.weight
            .cmp(&hb.weight)
            .then_with(|| ha.name.cmp(&hb.name))
    });
    let namespace = rel.namespace.clone();
    for (n, &i) in order.iter().enumerate() {
        if rel.hooks[i].delete_policies.is_empty() {
            rel.hooks[i].delete_policies = vec![BEFORE_HOOK_CREATION.to_string()];
        }
        delete_by_policy(
            cluster,
            &rel.hooks[i],
            BEFORE_HOOK_CREATION,
            &namespace,
            timeout,
        )
        .await?;
        let objects = hook_objects(cluster, &rel.hooks[i], &namespace).await?;
        rel.hooks[i].last_run.started_at = now();
        rel.hooks[i].last_run.completed_at.clear();
        rel.hooks[i].last_run.phase = "Running".into();
        // Helm ignores a failure to record the run; so do we (the action records again later).
        let _ = storage.update(rel).await;
        rel.hooks[i].last_run.phase = "Unknown".into();
        let mut created = Ok(());
        for o in &objects {
            if let Err(e) = cluster.apply(o).await {
                created = Err(e);
                break;
            }
        }
        if let Err(e) = created {
            rel.hooks[i].last_run.completed_at = now();
            rel.hooks[i].last_run.phase = "Failed".into();
            return Err(format!(
                "warning: Hook {event} {} failed: {e}",
                rel.hooks[i].path
            ));
        }
        let mut waited = Ok(());
        for o in &objects {
            if let Err(e) = cluster.wait_hook(o, timeout).await {
                waited = Err(e);
                break;
            }
        }
        rel.hooks[i].last_run.completed_at = now();
        if let Err(e) = waited {
            rel.hooks[i].last_run.phase = "Failed".into();
            // Helm only logs a failure to delete the failed hook.
            let _ =
                delete_by_policy(cluster, &rel.hooks[i], HOOK_FAILED, &namespace, timeout).await;
            for &j in &order[..n] {
                delete_by_policy(cluster, &rel.hooks[j], HOOK_SUCCEEDED, &namespace, timeout)
                    .await?;
            }
            return Err(e);
        }
        rel.hooks[i].last_run.phase = "Succeeded".into();
    }
    for &i in order.iter().rev() {
        delete_by_policy(cluster, &rel.hooks[i], HOOK_SUCCEEDED, &namespace, timeout).await?;
    }
    Ok(())
}
