//! Where a HelmRelease's chart comes from: the HelmChart its `spec.chart` template becomes
//! (helm-controller's `HelmChartTemplate`: named `<namespace>-<name>`, in the source's namespace,
//! with the owner labels, applied server-side), or the HelmChart or OCIRepository
//! `spec.chartRef` names; whether that source is ready, with Flux's messages; and, for an
//! OCIRepository, helm-controller's chart version rule (`<version>+<first 12 hex of the
//! digest>`, the tag checked against the chart's version).
//!
//! Sources are read and written as plain JSON (`DynamicObject`): this module needs their
//! `status.artifact` and conditions only, and stays independent of the source types' owners.

use ferroflux_api::conditions::{READY, STALLED};
use ferroflux_api::helmrelease::{ChartRefKind, HelmChartTemplate};
use ferroflux_api::{Artifact, HelmRelease};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// The owner labels helm-controller puts on what it creates (the HelmChart, the release's
/// objects).
pub const OWNER_NAME_LABEL: &str = "helm.toolkit.fluxcd.io/name";
/// See [`OWNER_NAME_LABEL`].
pub const OWNER_NAMESPACE_LABEL: &str = "helm.toolkit.fluxcd.io/namespace";

/// `source.toolkit.fluxcd.io/v1` HelmChart, for the dynamic API.
pub fn helm_chart_resource() -> ApiResource {
    ApiResource {
        group: "source.toolkit.fluxcd.io".into(),
        version: "v1".into(),
        api_version: "source.toolkit.fluxcd.io/v1".into(),
        kind: "HelmChart".into(),
        plural: "helmcharts".into(),
    }
}

/// `source.toolkit.fluxcd.io/v1` OCIRepository, for the dynamic API.
pub fn oci_repository_resource() -> ApiResource {
    ApiResource {
        group: "source.toolkit.fluxcd.io".into(),
        version: "v1".into(),
        api_version: "source.toolkit.fluxcd.io/v1".into(),
        kind: "OCIRepository".into(),
        plural: "ocirepositories".into(),
    }
}

/// The source a release reads its chart from: its API resource, namespace and name (the
/// HelmChart of [`chart_location`], or an OCIRepository `chartRef`).
pub fn source_location(hr: &HelmRelease) -> Result<(ApiResource, String, String), String> {
    if hr.spec.chart.is_none()
        && let Some(r) = &hr.spec.chart_ref
        && r.kind == ChartRefKind::OCIRepository
    {
        let ns = r
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| hr.namespace().unwrap_or_else(|| "default".into()));
        return Ok((oci_repository_resource(), ns, r.name.clone()));
    }
    let (ns, name) = chart_location(hr)?;
    Ok((helm_chart_resource(), ns, name))
}

/// helm-controller's `mutateChartWithSourceRevision` for an OCIRepository's artifact revision
/// (`<tag>@sha256:<hex>` or `sha256:<hex>`): the chart version with the digest's first 12 hex
/// as build metadata, and the digest (`status.lastAttemptedRevisionDigest`). A semver tag must
/// be the chart's version.
pub fn version_with_digest(version: &str, revision: &str) -> Result<(String, String), String> {
    let parsed = ferroflux_semver::Version::parse_loose(version)
        .map_err(|_| format!("invalid chart version {version}"))?;
    // As helm-controller: a semver tag is checked and its digest recorded; any other revision
    // (a digest, or a tag such as `latest@sha256:...`) is recorded whole.
    let semver_tag = revision.split_once('@').and_then(|(tag, digest)| {
        ferroflux_semver::Version::parse_loose(&tag.replace('_', "+"))
            .ok()
            .map(|v| (tag, v, digest))
    });
    let digest = match semver_tag {
        Some((tag, tag_version, digest)) => {
            if tag_version.compare(&parsed) != std::cmp::Ordering::Equal {
                return Err(format!(
                    "artifact revision {tag} does not match chart version {version}"
                ));
            }
            digest
        }
        None => revision,
    };
    let hex = match digest.split_once(':') {
        Some((_, hex)) if hex.len() >= 12 => &hex[..12],
        _ => return Err(format!("invalid artifact revision {revision}")),
    };
    let core = version.split_once('+').map_or(version, |(core, _)| core);
    Ok((format!("{core}+{hex}"), digest.to_string()))
}

/// `(namespace, name)` of the HelmChart a release reads its chart from: the template's
/// (`<ns>-<name>` in the source's namespace) or `chartRef`'s. `Err` for a `chartRef` kind that
/// is not supported yet.
pub fn chart_location(hr: &HelmRelease) -> Result<(String, String), String> {
    let own_ns = hr.namespace().unwrap_or_else(|| "default".into());
    if let Some(template) = &hr.spec.chart {
        let ns = template
            .spec
            .source_ref
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or(own_ns);
        return Ok((ns, hr.helm_chart_name()));
    }
    match &hr.spec.chart_ref {
        Some(r) if r.kind == ChartRefKind::HelmChart => Ok((
            r.namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or(own_ns),
            r.name.clone(),
        )),
        Some(r) if r.kind == ChartRefKind::OCIRepository => Err(format!(
            "chartRef of kind OCIRepository '{}' names no HelmChart",
            r.name
        )),
        Some(r) => Err(format!(
            "chartRef of kind {} is not supported yet: only HelmChart and OCIRepository chartRefs and chart templates are",
            r.kind.as_str()
        )),
        None => Err("either chart or chartRef must be set".into()),
    }
}

/// The HelmChart a template becomes, as helm-controller builds it.
pub fn helm_chart_object(hr: &HelmRelease, template: &HelmChartTemplate) -> Value {
    let (namespace, name) = match chart_location(hr) {
        Ok(location) => location,
        Err(_) => (String::new(), hr.helm_chart_name()),
    };
    let spec = &template.spec;
    let mut chart_spec = json!({
        "chart": spec.chart,
        "version": spec.version.clone().filter(|v| !v.is_empty()).unwrap_or_else(|| "*".into()),
        "sourceRef": {"kind": spec.source_ref.kind.as_str(), "name": spec.source_ref.name},
        "interval": spec.interval.clone().unwrap_or_else(|| hr.spec.interval.clone()),
        "reconcileStrategy": spec.reconcile_strategy.unwrap_or_default().as_str(),
    });
    if let Some(files) = &spec.values_files {
        chart_spec["valuesFiles"] = json!(files);
    }
    if let Some(ignore) = spec.ignore_missing_values_files {
        chart_spec["ignoreMissingValuesFiles"] = json!(ignore);
    }
    if let Some(verify) = &spec.verify {
        chart_spec["verify"] = json!(verify);
    }
    let mut labels = serde_json::Map::new();
    let mut annotations = serde_json::Map::new();
    if let Some(meta) = &template.metadata {
        for (k, v) in meta.labels.iter().flatten() {
            labels.insert(k.clone(), json!(v));
        }
        for (k, v) in meta.annotations.iter().flatten() {
            annotations.insert(k.clone(), json!(v));
        }
    }
    labels.insert(OWNER_NAME_LABEL.into(), json!(hr.name_any()));
    labels.insert(
        OWNER_NAMESPACE_LABEL.into(),
        json!(hr.namespace().unwrap_or_else(|| "default".into())),
    );
    let mut metadata = json!({"name": name, "namespace": namespace, "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": metadata,
        "spec": chart_spec,
    })
}

/// Applies the templated HelmChart server-side under `field_manager`; returns its
/// `namespace/name` (the value of `status.helmChart`) and the HelmChart as the API server
/// answered the apply (status included: what the release's source step reads, so it needs no
/// second request).
pub async fn apply_template(
    client: &kube::Client,
    hr: &HelmRelease,
    template: &HelmChartTemplate,
    field_manager: &str,
) -> Result<(String, DynamicObject), String> {
    let object = helm_chart_object(hr, template);
    let (namespace, name) = chart_location(hr)?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &helm_chart_resource());
    let params = PatchParams::apply(field_manager).force();
    let applied = api
        .patch(&name, &params, &Patch::Apply(&object))
        .await
        .map_err(|e| format!("failed to run server-side apply: {e}"))?;
    Ok((format!("{namespace}/{name}"), applied))
}

/// Deletes the HelmChart `status.helmChart` names (`namespace/name`), if it still exists.
pub async fn delete(client: &kube::Client, helm_chart: &str) -> Result<bool, String> {
    let Some((namespace, name)) = helm_chart.split_once('/') else {
        return Ok(false);
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &helm_chart_resource());
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(format!("failed to delete HelmChart '{helm_chart}': {e}")),
    }
}

/// A source (HelmChart or OCIRepository, `resource`) as read back.
pub async fn get_source(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: &str,
    name: &str,
) -> Result<Option<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    api.get_opt(name).await
}

/// helm-controller's `isSourceReady`: the source (HelmChart or OCIRepository) has reconciled its current generation, is not
/// stalled and has an artifact. The artifact, or the message Flux writes (`HelmChart
/// 'apps/apps-podinfo' is not ready: does not have an artifact`).
pub fn ready_artifact(source: &DynamicObject) -> Result<Artifact, String> {
    let namespace = source.namespace().unwrap_or_default();
    let name = source.name_any();
    let kind = source
        .types
        .as_ref()
        .map_or("HelmChart", |t| t.kind.as_str());
    let not_ready = |why: &str| format!("{kind} '{namespace}/{name}' is not ready: {why}");
    let status = source.data.get("status").cloned().unwrap_or(Value::Null);
    let conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let condition = |type_: &str| {
        conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    };
    let text = |c: Option<&Value>, key: &str| {
        c.and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let observed = status.get("observedGeneration").and_then(Value::as_i64);
    if source.metadata.generation != observed {
        let ready = condition(READY);
        let message = if text(ready, "status") == "False" {
            text(ready, "message")
        } else {
            "latest generation of object has not been reconciled".into()
        };
        return Err(not_ready(&message));
    }
    let stalled = condition(STALLED);
    if text(stalled, "status") == "True" {
        return Err(not_ready(&text(stalled, "message")));
    }
    match status.get("artifact") {
        Some(a) if !a.is_null() => serde_json::from_value(a.clone())
            .map_err(|e| not_ready(&format!("invalid artifact in status: {e}"))),
        _ => Err(not_ready("does not have an artifact")),
    }
}

#[cfg(test)]
mod tests;
