//! Flux's finalizer (`finalizers.fluxcd.io`) on the objects the reconcilers own: added before
//! the first reconcile does anything outside the object, removed once deletion has cleaned up.
//!
//! Both edits are JSON Patches that `test` the list they change, as kube-runtime's
//! `finalizer.rs` does: a merge patch would replace the whole list and drop a finalizer another
//! controller added in between, while a failed `test` makes the API server refuse the patch and
//! the reconcile is retried against the object as it is now.
//!
//! Unlike kube-runtime's helper, adding the finalizer does not end the reconcile to wait for
//! the change: the reconcilers' triggers ignore metadata-only changes, so that wait would last
//! until the next interval.

use ferroflux_api::FINALIZER;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use kube_json_patch::{
    AddOperation, Patch as JsonPatch, PatchOperation, RemoveOperation, TestOperation,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// True when `obj` carries Flux's finalizer.
pub fn has<K: Resource>(obj: &K) -> bool {
    obj.finalizers().iter().any(|f| f == FINALIZER)
}

/// The patch that adds Flux's finalizer to `obj`'s finalizers as they are in `obj`, or `None`
/// when it is there already.
pub fn add_patch<K: Resource>(obj: &K) -> Option<JsonPatch> {
    if has(obj) {
        return None;
    }
    let path = |p: &str| p.parse().ok();
    let ops = match &obj.meta().finalizers {
        // No list yet: create it, unless someone else did meanwhile (a missing field tests as
        // null, as the API server's JSON Patch does).
        None => vec![
            PatchOperation::Test(TestOperation {
                path: path("/metadata/finalizers")?,
                value: Value::Null,
            }),
            PatchOperation::Add(AddOperation {
                path: path("/metadata/finalizers")?,
                value: Value::from(vec![FINALIZER]),
            }),
        ],
        Some(list) => vec![
            PatchOperation::Test(TestOperation {
                path: path("/metadata/finalizers")?,
                value: Value::from(list.clone()),
            }),
            PatchOperation::Add(AddOperation {
                path: path("/metadata/finalizers/-")?,
                value: Value::from(FINALIZER),
            }),
        ],
    };
    Some(JsonPatch(ops))
}

/// The patch that removes Flux's finalizer from `obj`, or `None` when it carries none.
pub fn remove_patch<K: Resource>(obj: &K) -> Option<JsonPatch> {
    let index = obj.finalizers().iter().position(|f| f == FINALIZER)?;
    let path = format!("/metadata/finalizers/{index}").parse().ok()?;
    Some(JsonPatch(vec![
        // The index is only right if nobody changed the list since `obj` was read.
        PatchOperation::Test(TestOperation {
            path: format!("/metadata/finalizers/{index}").parse().ok()?,
            value: Value::from(FINALIZER),
        }),
        PatchOperation::Remove(RemoveOperation { path }),
    ]))
}

/// Adds Flux's finalizer to `obj` unless it has it.
pub async fn ensure<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    match add_patch(obj) {
        Some(patch) => send(api, obj, patch).await,
        None => Ok(()),
    }
}

/// How the source reconcilers start: the object as it is now, or `None` when there is nothing
/// to fetch because it is gone, being deleted (`cleanup` runs, then the finalizer is released),
/// or suspended. An object returned carries the finalizer, so that nothing the reconcile leaves
/// outside the object (stored artifacts) can outlive it.
pub async fn begin<K, E, Fut>(
    api: &Api<K>,
    name: &str,
    cleanup: impl FnOnce(&K) -> Fut,
) -> Result<Option<K>, E>
where
    K: ferroflux_api::FluxObject,
    E: From<kube::Error>,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    let Some(obj) = api.get_opt(name).await? else {
        return Ok(None);
    };
    if obj.meta().deletion_timestamp.is_some() {
        cleanup(&obj).await?;
        remove(api, &obj).await?;
        return Ok(None);
    }
    ensure(api, &obj).await?;
    Ok((!obj.suspended()).then_some(obj))
}

/// Removes Flux's finalizer from `obj`, letting the API server delete it.
pub async fn remove<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    match remove_patch(obj) {
        Some(patch) => send(api, obj, patch).await,
        None => Ok(()),
    }
}

async fn send<K>(api: &Api<K>, obj: &K, patch: JsonPatch) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    api.patch::<K>(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Json(patch),
    )
    .await
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::GitRepository;
    use serde_json::json;

    fn repo(finalizers: Option<Vec<&str>>) -> GitRepository {
        let mut repo: GitRepository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system"},
            "spec": {"url": "https://example.com/fleet.git", "interval": "1m"},
        }))
        .unwrap();
        repo.metadata.finalizers = finalizers.map(|l| l.into_iter().map(String::from).collect());
        repo
    }

    fn patched(
        obj: &GitRepository,
        patch: &JsonPatch,
    ) -> Result<Value, kube_json_patch::PatchError> {
        let mut doc = serde_json::to_value(obj).unwrap();
        kube_json_patch::patch(&mut doc, &patch.0)?;
        Ok(doc["metadata"]["finalizers"].clone())
    }

    #[test]
    fn adding_keeps_other_finalizers_and_fails_when_the_list_moved() {
        let mine = repo(Some(vec!["other.io/keep"]));
        let patch = add_patch(&mine).unwrap();
        assert_eq!(
            patched(&mine, &patch).unwrap(),
            json!(["other.io/keep", FINALIZER])
        );
        // Someone added a finalizer since we read the object: the test op refuses the patch.
        let moved = repo(Some(vec!["other.io/keep", "third.io/new"]));
        assert!(patched(&moved, &patch).is_err());
        assert!(add_patch(&repo(Some(vec![FINALIZER]))).is_none());

        let patch = add_patch(&repo(None)).unwrap();
        let ops = serde_json::to_value(&patch).unwrap();
        assert_eq!(
            ops[0],
            json!({"op": "test", "path": "/metadata/finalizers", "value": null})
        );
        assert_eq!(ops[1]["value"], json!([FINALIZER]));
    }

    #[test]
    fn removing_takes_only_ours_and_fails_when_the_list_moved() {
        let mine = repo(Some(vec!["other.io/keep", FINALIZER, "third.io/x"]));
        let patch = remove_patch(&mine).unwrap();
        assert_eq!(
            patched(&mine, &patch).unwrap(),
            json!(["other.io/keep", "third.io/x"])
        );
        let moved = repo(Some(vec![FINALIZER, "other.io/keep", "third.io/x"]));
        assert!(patched(&moved, &patch).is_err());
        assert!(remove_patch(&repo(None)).is_none());
    }
}
