//! `ferroflux export <kind> [NAME | --all] [-A] [--with-credentials]`: Flux objects as YAML to
//! commit back to Git, as `flux export` prints them: `apiVersion`, `kind`, the name, namespace,
//! labels and annotations, and the spec as the API server holds it (defaults filled in), keys
//! sorted and durations in Go's form (`5m` becomes `5m0s`), each document after `---`. Status and
//! the server's bookkeeping are left out. `--with-credentials` also prints the Secret a source's
//! `secretRef` names.
//!
//! Durations are found through the kind's own CRD schema (crates/api): every string field whose
//! schema carries the duration pattern, wherever it is nested.

use crate::cluster::{Cluster, KubeArgs};
use crate::output::document::{document, sorted};
use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::duration::{format_duration, parse_duration};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::{Map, Value, json};
use std::process::ExitCode;

/// How the pattern of every `metav1.Duration` field in Flux's CRDs begins (timeouts leave out
/// hours, intervals do not).
const DURATION_PATTERN_START: &str = "^([0-9]+(\\.[0-9]+)?(ms|s|m";

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(subcommand)]
    what: ExportWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

/// Which objects are exported and how they are selected.
#[derive(Args, Debug)]
struct Selection {
    /// The object's name.
    name: Option<String>,
    /// Every object of the kind in the namespace.
    #[arg(long)]
    all: bool,
    /// With --all: in every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

#[derive(Args, Debug)]
struct SourceSelection {
    #[command(flatten)]
    selection: Selection,
    /// Also print the Secret the source's secretRef names.
    #[arg(long)]
    with_credentials: bool,
}

#[derive(Subcommand, Debug)]
enum ExportWhat {
    /// Export Kustomizations.
    #[command(visible_alias = "ks")]
    Kustomization(Selection),
    /// Export HelmReleases.
    #[command(visible_alias = "hr")]
    Helmrelease(Selection),
    /// Export sources.
    #[command(subcommand)]
    Source(SourceKind),
    /// Export Alerts.
    Alert(Selection),
    /// Export alert Providers.
    #[command(name = "alert-provider")]
    AlertProvider(Selection),
    /// Export Receivers.
    Receiver(Selection),
    /// Export artifact generators.
    #[command(subcommand)]
    Artifact(ArtifactKind),
    /// Export image automation objects (their CRDs must be installed).
    #[command(subcommand)]
    Image(ImageKind),
}

#[derive(Subcommand, Debug)]
enum ImageKind {
    /// Export ImageRepositories.
    Repository(Selection),
    /// Export ImagePolicies.
    Policy(Selection),
    /// Export ImageUpdateAutomations.
    Update(Selection),
}

#[derive(Subcommand, Debug)]
enum SourceKind {
    /// Export GitRepositories.
    Git(SourceSelection),
    /// Export HelmRepositories.
    Helm(SourceSelection),
    /// Export HelmCharts.
    Chart(Selection),
    /// Export OCIRepositories.
    Oci(SourceSelection),
    /// Export Buckets.
    Bucket(SourceSelection),
    /// Export ExternalArtifacts.
    External(Selection),
}

#[derive(Subcommand, Debug)]
enum ArtifactKind {
    /// Export ArtifactGenerators.
    #[command(visible_alias = "generators")]
    Generator(Selection),
}

/// The API resource of a Flux kind served by ferroflux, and the JSON schema of its storage
/// version, from crates/api's CRDs.
pub(crate) fn resource_of(kind: &str) -> anyhow::Result<(ApiResource, Value)> {
    let crd = ferroflux_api::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .ok_or_else(|| anyhow!("no CRD for {kind}"))?;
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .ok_or_else(|| anyhow!("the {kind} CRD has no storage version"))?;
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: kind.to_string(),
        plural: crd.spec.names.plural.clone(),
    };
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .map(|s| serde_json::to_value(s).unwrap_or(Value::Null))
        .unwrap_or(Value::Null);
    Ok((resource, schema))
}

/// Runs `export`.
pub async fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let (kind, selection, with_credentials) = match &args.what {
        ExportWhat::Kustomization(s) => ("Kustomization", s, false),
        ExportWhat::Helmrelease(s) => ("HelmRelease", s, false),
        ExportWhat::Alert(s) => ("Alert", s, false),
        ExportWhat::AlertProvider(s) => ("Provider", s, false),
        ExportWhat::Receiver(s) => ("Receiver", s, false),
        ExportWhat::Artifact(ArtifactKind::Generator(s)) => ("ArtifactGenerator", s, false),
        ExportWhat::Source(SourceKind::Git(s)) => {
            ("GitRepository", &s.selection, s.with_credentials)
        }
        ExportWhat::Source(SourceKind::Helm(s)) => {
            ("HelmRepository", &s.selection, s.with_credentials)
        }
        ExportWhat::Source(SourceKind::Oci(s)) => {
            ("OCIRepository", &s.selection, s.with_credentials)
        }
        ExportWhat::Source(SourceKind::Bucket(s)) => ("Bucket", &s.selection, s.with_credentials),
        ExportWhat::Source(SourceKind::Chart(s)) => ("HelmChart", s, false),
        ExportWhat::Source(SourceKind::External(s)) => ("ExternalArtifact", s, false),
        ExportWhat::Image(ImageKind::Repository(s)) => ("ImageRepository", s, false),
        ExportWhat::Image(ImageKind::Policy(s)) => ("ImagePolicy", s, false),
        ExportWhat::Image(ImageKind::Update(s)) => ("ImageUpdateAutomation", s, false),
    };
    if !selection.all && selection.name.is_none() {
        bail!("name is required");
    }
    let cluster = Cluster::connect(&args.kube).await?;
    let (mut resource, schema) = resource_of(kind)?;
    if matches!(args.what, ExportWhat::Image(_)) {
        // The image CRDs may be left out of an install: say so plainly rather than with the API
        // server's 404.
        resource = super::create::image::image_resource(&cluster, kind).await?;
    }
    let ns = args.kube.namespace.as_str();
    let objects: Vec<DynamicObject> = if selection.all {
        let api: Api<DynamicObject> = if selection.all_namespaces {
            Api::all_with(cluster.client.clone(), &resource)
        } else {
            Api::namespaced_with(cluster.client.clone(), ns, &resource)
        };
        let list = cluster
            .call(
                &format!("listing {}", resource.plural),
                api.list(&ListParams::default()),
            )
            .await?;
        if list.items.is_empty() {
            bail!("no objects found in {ns} namespace");
        }
        list.items
    } else {
        let name = selection.name.as_deref().unwrap_or_default();
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &resource);
        vec![
            cluster
                .get_named(&api, name, &format!("reading {kind} {ns}/{name}"))
                .await?,
        ]
    };
    let mut text = String::new();
    for object in &objects {
        let value = serde_json::to_value(object)?;
        text.push_str(&document(&exported(&value, &resource, &schema)));
        if with_credentials && let Some(secret) = value["spec"]["secretRef"]["name"].as_str() {
            let secret_ns = value["metadata"]["namespace"].as_str().unwrap_or(ns);
            text.push_str(&document(&credentials(&cluster, secret_ns, secret).await?));
        }
    }
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The object as flux exports it.
fn exported(object: &Value, resource: &ApiResource, schema: &Value) -> Value {
    let mut metadata = Map::new();
    for key in ["annotations", "labels", "name", "namespace"] {
        if let Some(v) = object["metadata"].get(key)
            && !v.is_null()
            && v.as_object().is_none_or(|m| !m.is_empty())
        {
            metadata.insert(key.into(), v.clone());
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(resource.api_version));
    out.insert("kind".into(), json!(resource.kind));
    out.insert("metadata".into(), Value::Object(metadata));
    if let Some(spec) = object.get("spec") {
        let mut spec = spec.clone();
        if resource.group == super::create::image::GROUP {
            drop_empty_strings(&mut spec);
        }
        normalize_durations(&mut spec, &schema["properties"]["spec"]);
        out.insert("spec".into(), spec);
    }
    sorted(Value::Object(out))
}

/// Removes `""` values: the image API's Go types mark their optional strings `omitempty`
/// (`messageTemplate`), so flux never prints an empty one, while the API server keeps what was
/// written.
fn drop_empty_strings(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| v.as_str() != Some(""));
            map.values_mut().for_each(drop_empty_strings);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_empty_strings),
        _ => {}
    }
}

/// Rewrites every duration the schema marks into Go's `time.Duration` form, and drops the
/// defaulted `false`s flux's types omit.
fn normalize_durations(value: &mut Value, schema: &Value) {
    match value {
        Value::String(s)
            if schema["pattern"]
                .as_str()
                .is_some_and(|p| p.starts_with(DURATION_PATTERN_START)) =>
        {
            if let Ok(d) = parse_duration(s) {
                *s = format_duration(d);
            }
        }
        Value::Object(map) => {
            // A `false` the API server filled from a `default: false` is dropped: Flux's Go
            // types mark those fields omitempty (Kustomization's `force`), so flux never prints
            // them.
            map.retain(|key, v| {
                !(*v == Value::Bool(false)
                    && schema["properties"][key]["default"] == Value::Bool(false))
            });
            for (key, v) in map.iter_mut() {
                let sub = schema["properties"]
                    .get(key)
                    .unwrap_or(&schema["additionalProperties"]);
                normalize_durations(v, sub);
            }
        }
        Value::Array(items) => {
            for item in items {
                normalize_durations(item, &schema["items"]);
            }
        }
        _ => {}
    }
}

/// The Secret a source names, as flux exports it: name, namespace, data and type.
async fn credentials(cluster: &Cluster, ns: &str, name: &str) -> anyhow::Result<Value> {
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), ns);
    let secret = match api.get(name).await {
        Ok(s) => s,
        Err(kube::Error::Api(status)) => {
            bail!(
                "failed to retrieve secret {name}, error: {}",
                status.message
            )
        }
        Err(e) => bail!("failed to retrieve secret {name}, error: {e}"),
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("v1"));
    if let Some(data) = &secret.data {
        out.insert("data".into(), serde_json::to_value(data)?);
    }
    out.insert("kind".into(), json!("Secret"));
    out.insert("metadata".into(), json!({"name": name, "namespace": ns}));
    if let Some(t) = &secret.type_ {
        out.insert("type".into(), json!(t));
    }
    Ok(sorted(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    #[test]
    fn durations_are_found_through_the_schema_and_written_as_go_does() {
        let crd: CustomResourceDefinition = ferroflux_api::crds()
            .into_iter()
            .find(|c| c.spec.names.kind == "HelmRelease")
            .unwrap();
        let schema = serde_json::to_value(
            crd.spec.versions[0]
                .schema
                .as_ref()
                .unwrap()
                .open_api_v3_schema
                .as_ref()
                .unwrap(),
        )
        .unwrap();
        let mut spec = json!({"interval": "5m", "timeout": "90s", "releaseName": "5m",
                              "chart": {"spec": {"interval": "1h", "chart": "1m"}}});
        normalize_durations(&mut spec, &schema["properties"]["spec"]);
        assert_eq!(
            spec,
            json!({"interval": "5m0s", "timeout": "1m30s", "releaseName": "5m",
                   "chart": {"spec": {"interval": "1h0m0s", "chart": "1m"}}})
        );
    }
}
