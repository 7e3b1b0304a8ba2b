//! A HelmRelease rendered from a chart at hand, as this controller would release it, without
//! installing anything: its values composed from `valuesFrom` and inline values in Flux's
//! order, the chart rendered (against a cluster: its Capabilities, `lookup` and the release's
//! next revision; offline: `helm template`'s defaults), then its post-renderers, owner labels
//! and `commonMetadata`. What `build`/`diff helmrelease` print and what `fleet diff` compares.

use crate::helmrelease::postrender::{self, post_render};
use crate::helmrelease::reconciler::FIELD_MANAGER;
use crate::helmrelease::values::{self, Fetched, ValuesError};
use ferroflux_api::HelmRelease;
use ferroflux_api::helmrelease::ValuesKind;
use ferroflux_helm::{Chart, Engine, ReleaseOptions, RenderOptions};
use ferroflux_helmrelease::{Actions, ReleaseRef, objects_of_manifest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a HelmRelease could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// A `valuesFrom` reference could not be resolved.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// The chart did not render, or the cluster could not be asked.
    #[error(transparent)]
    Release(#[from] ferroflux_helmrelease::Error),
    /// The release history could not be read.
    #[error(transparent)]
    Storage(#[from] ferroflux_helmrelease::StorageError),
    /// The chart did not render (offline).
    #[error(transparent)]
    Chart(#[from] ferroflux_helm::Error),
    /// The rendered manifest or a post-renderer failed.
    #[error("{0}")]
    Manifest(String),
}

/// What the chart is rendered against.
pub enum Against<'a> {
    /// A cluster: Capabilities from its discovery, `lookup` answered by it, and the release's
    /// stored history (an upgrade of its last revision).
    Cluster(&'a kube::Client),
    /// No cluster: `helm template`'s Capabilities, every `lookup` empty, a first install.
    Offline,
}

/// The objects the release would hold, and (against a cluster with a release stored) those
/// its current revision holds. Objects without a namespace get the release's.
pub struct Templated {
    /// The new release's objects.
    pub objects: Vec<Value>,
    /// The current release's objects, when there is one.
    pub current: Option<Vec<Value>>,
}

/// Renders `hr` from `chart`, its `valuesFrom` looked up in `fetched` (see
/// [`values::fetch`], or objects built from a repository).
pub async fn template(
    hr: &HelmRelease,
    chart: Chart,
    fetched: &BTreeMap<(ValuesKind, String), Fetched>,
    against: Against<'_>,
) -> Result<Templated, TemplateError> {
    let ns = hr.metadata.namespace.clone().unwrap_or_default();
    let refs = hr.spec.values_from.clone().unwrap_or_default();
    let composed = values::compose(&ns, &refs, fetched, hr.spec.values.as_ref())?;
    let target = ReleaseRef::new(
        &hr.release_name(),
        &hr.target_namespace(),
        &hr.storage_namespace(),
    );
    let (manifest, current) = match against {
        Against::Cluster(client) => {
            let actions = Actions::new(client.clone(), FIELD_MANAGER);
            let last = actions
                .storage(&target.storage_namespace)
                .last(&target.name)
                .await?;
            let revision = last.as_ref().map(|r| r.version + 1).unwrap_or(1);
            let renderer = postrender::for_release(hr);
            let release = actions
                .template(
                    &target,
                    Arc::new(chart),
                    composed,
                    revision,
                    last.is_some(),
                    Some(renderer),
                )
                .await?;
            (release.manifest, last.map(|r| r.manifest))
        }
        Against::Offline => {
            let opts = RenderOptions {
                release: ReleaseOptions {
                    name: target.name.clone(),
                    namespace: target.namespace.clone(),
                    revision: 1,
                    is_upgrade: false,
                },
                ..Default::default()
            };
            let out = Engine::new().render(&chart, &composed, &opts)?;
            let objects =
                objects_of_manifest(&ferroflux_helmrelease::release_manifest(&out.manifests))
                    .map_err(TemplateError::Manifest)?;
            let objects = post_render(hr, objects).map_err(|e| {
                TemplateError::Manifest(format!("error while running post render on files: {e}"))
            })?;
            (ferroflux_kustomize::render_yaml(&objects), None)
        }
    };
    let namespaced = |manifest: &str| -> Result<Vec<Value>, TemplateError> {
        Ok(objects_of_manifest(manifest)
            .map_err(TemplateError::Manifest)?
            .into_iter()
            .map(|mut o| {
                if o.pointer("/metadata/namespace").is_none()
                    && let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.insert("namespace".into(), Value::String(target.namespace.clone()));
                }
                o
            })
            .collect())
    };
    Ok(Templated {
        objects: namespaced(&manifest)?,
        current: current.as_deref().map(namespaced).transpose()?,
    })
}
