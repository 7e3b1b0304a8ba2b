//! `ferroflux create helmrelease NAME`: a HelmRelease from flux's `create hr` flags, printed as
//! YAML with `--export` (flux's output: `---`, keys sorted, `interval: 1m0s`) or applied and
//! waited for (`✚ generating HelmRelease` ... `✔ applied revision 6.3.5`). `create source helm`
//! is in `create/source.rs`.

use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj::{self, FluxObject};
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::HelmRelease;
use ferroflux_api::duration::format_duration;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Map, Value, json};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CreateArgs {
    #[command(subcommand)]
    what: CreateWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

// Parsed once per process: the size difference between the flag sets costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum CreateWhat {
    /// Create or update a HelmRelease.
    #[command(visible_alias = "hr")]
    Helmrelease(HelmReleaseArgs),
    /// Create or update a source.
    #[command(subcommand)]
    Source(source::SourceTarget),
    /// Create or update a Secret for Flux's sources, providers and receivers.
    #[command(subcommand)]
    Secret(secret::SecretTarget),
    /// Create or update a tenant: namespaces, a service account and role bindings.
    Tenant(tenant::TenantArgs),
    /// Create or update a Provider resource.
    #[command(name = "alert-provider")]
    AlertProvider(notification::ProviderArgs),
    /// Create or update an Alert resource.
    Alert(notification::AlertArgs),
    /// Create or update a Receiver resource.
    Receiver(notification::ReceiverArgs),
    /// Create or update a Kustomization resource.
    #[command(visible_alias = "ks")]
    Kustomization(kustomization::KustomizationArgs),
    /// Create or update image automation objects (stored only: no controller here runs them).
    #[command(subcommand)]
    Image(image::ImageTarget),
}

#[derive(Args, Debug)]
struct HelmReleaseArgs {
    /// The HelmRelease's name.
    name: Option<String>,
    /// Print the object as YAML instead of applying it.
    #[arg(long)]
    export: bool,
    /// How often the release is reconciled.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: std::time::Duration,
    /// Labels of the HelmRelease, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// The chart's source as <kind>/<name>[.<namespace>]; kind HelmRepository, GitRepository or
    /// Bucket.
    #[arg(long)]
    source: Option<String>,
    /// The chart's name (HelmRepository) or path (GitRepository, Bucket).
    #[arg(long)]
    chart: Option<String>,
    /// Semver range of the chart version.
    #[arg(long)]
    chart_version: Option<String>,
    /// A chart made elsewhere as <kind>/<name>[.<namespace>]; kind OCIRepository or HelmChart.
    #[arg(long)]
    chart_ref: Option<String>,
    /// How often the generated HelmChart checks its source.
    #[arg(long, value_parser = crate::flags::duration)]
    chart_interval: Option<std::time::Duration>,
    /// The Helm release name.
    #[arg(long)]
    release_name: Option<String>,
    /// Namespace the release is installed into.
    #[arg(long)]
    target_namespace: Option<String>,
    /// Create the target namespace when it does not exist.
    #[arg(long)]
    create_target_namespace: bool,
    /// Namespace of the release's storage.
    #[arg(long)]
    storage_namespace: Option<String>,
    /// HelmReleases that must be ready first, as <name> or <namespace>/<name>.
    #[arg(long, value_delimiter = ',')]
    depends_on: Vec<String>,
    /// Local values files merged in order into spec.values.
    #[arg(long = "values", value_delimiter = ',')]
    values: Vec<std::path::PathBuf>,
    /// A ConfigMap or Secret holding values.yaml, as <kind>/<name>.
    #[arg(long)]
    values_from: Vec<String>,
    /// ServiceAccount impersonated for the Helm actions.
    #[arg(long)]
    service_account: Option<String>,
    /// ChartVersion or Revision.
    #[arg(long, default_value = "ChartVersion")]
    reconcile_strategy: String,
    /// What install and upgrade do with the chart's CRDs: Skip, Create or CreateReplace.
    #[arg(long)]
    crds: Option<String>,
    /// Secret holding the kubeconfig of the target cluster.
    #[arg(long)]
    kubeconfig_secret_ref: Option<String>,
}

pub async fn run(args: CreateArgs) -> anyhow::Result<ExitCode> {
    match &args.what {
        CreateWhat::Helmrelease(hr) => helmrelease(&args.kube, hr).await,
        CreateWhat::Source(what) => source::run(&args.kube, what).await,
        CreateWhat::Secret(what) => secret::run(&args.kube, what).await,
        CreateWhat::Tenant(what) => tenant::run(&args.kube, what).await,
        CreateWhat::AlertProvider(a) => notification::run_provider(&args.kube, a).await,
        CreateWhat::Alert(a) => notification::run_alert(&args.kube, a).await,
        CreateWhat::Receiver(a) => notification::run_receiver(&args.kube, a).await,
        CreateWhat::Kustomization(a) => kustomization::run(&args.kube, a).await,
        CreateWhat::Image(what) => image::run(&args.kube, what).await,
    }
}

/// `<kind>/<name>[.<namespace>]`, the kind checked against `kinds`.
fn parse_ref(flag: &str, text: &str, kinds: &[&str]) -> anyhow::Result<Map<String, Value>> {
    let (kind, rest) = text
        .split_once('/')
        .ok_or_else(|| anyhow!("invalid --{flag} '{text}': expected <kind>/<name>"))?;
    if !kinds.contains(&kind) {
        bail!(
            "invalid --{flag} kind '{kind}', must be one of: {}",
            kinds.join(", ")
        );
    }
    let (name, namespace) = match rest.split_once('.') {
        Some((name, ns)) => (name, Some(ns)),
        None => (rest, None),
    };
    if name.is_empty() {
        bail!("invalid --{flag} '{text}': the name is empty");
    }
    let mut out = Map::new();
    out.insert("kind".into(), json!(kind));
    out.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        out.insert("namespace".into(), json!(ns));
    }
    Ok(out)
}

/// The HelmRelease the flags describe, as JSON.
fn build(namespace: &str, a: &HelmReleaseArgs) -> anyhow::Result<Value> {
    let name = release_name(a)?;
    // flux's checks, in flux's order and words.
    let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
    match (given(&a.chart), given(&a.chart_ref)) {
        (false, false) => bail!("chart or chart-ref is required"),
        (true, true) => bail!("cannot use --chart in combination with --chart-ref"),
        _ => {}
    }
    let mut spec = Map::new();
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    match (&a.chart_ref, &a.source) {
        (Some(_), Some(_)) => bail!("cannot use --chart-ref with --source"),
        (Some(chart_ref), None) => {
            let kind = chart_ref.split_once('/').map_or("", |(k, _)| k);
            if kind != "OCIRepository" && kind != "HelmChart" {
                bail!(
                    "chart reference kind '{kind}' is not supported, must be one of: OCIRepository, HelmChart"
                );
            }
            let r = parse_ref("chart-ref", chart_ref, &["OCIRepository", "HelmChart"])?;
            spec.insert("chartRef".into(), Value::Object(r));
        }
        (None, Some(source)) => {
            let chart = a
                .chart
                .as_deref()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| anyhow!("chart name or path is required"))?;
            // As flux's --source flag: the kind in any case, written as the API spells it.
            const KINDS: [&str; 3] = ["HelmRepository", "GitRepository", "Bucket"];
            let (kind, rest) = source.split_once('/').unwrap_or(("", source));
            let Some(kind) = KINDS.iter().find(|k| k.eq_ignore_ascii_case(kind)) else {
                bail!(
                    "invalid argument \"{source}\" for \"--source\" flag: source kind '{kind}' is not supported, must be one of: {}",
                    KINDS.join(", ")
                );
            };
            let source_ref = parse_ref("source", &format!("{kind}/{rest}"), &KINDS)?;
            if !["ChartVersion", "Revision"].contains(&a.reconcile_strategy.as_str()) {
                bail!(
                    "'{}' is an invalid reconcile strategy(valid: ChartVersion, Revision)",
                    a.reconcile_strategy
                );
            }
            let mut chart_spec = Map::new();
            chart_spec.insert("chart".into(), json!(chart));
            chart_spec.insert("reconcileStrategy".into(), json!(a.reconcile_strategy));
            chart_spec.insert("sourceRef".into(), Value::Object(source_ref));
            if let Some(version) = &a.chart_version {
                chart_spec.insert("version".into(), json!(version));
            }
            if let Some(d) = a.chart_interval {
                chart_spec.insert("interval".into(), json!(format_duration(d)));
            }
            spec.insert("chart".into(), json!({"spec": chart_spec}));
        }
        (None, None) => bail!("either --source and --chart or --chart-ref is required"),
    }
    if let Some(v) = &a.release_name {
        spec.insert("releaseName".into(), json!(v));
    }
    if let Some(v) = &a.target_namespace {
        spec.insert("targetNamespace".into(), json!(v));
    }
    if let Some(v) = &a.storage_namespace {
        spec.insert("storageNamespace".into(), json!(v));
    }
    if let Some(v) = &a.service_account {
        spec.insert("serviceAccountName".into(), json!(v));
    }
    if let Some(v) = &a.kubeconfig_secret_ref {
        spec.insert("kubeConfig".into(), json!({"secretRef": {"name": v}}));
    }
    let mut install = Map::new();
    if a.create_target_namespace {
        install.insert("createNamespace".into(), json!(true));
    }
    if let Some(crds) = &a.crds {
        if !["Skip", "Create", "CreateReplace"].contains(&crds.as_str()) {
            bail!("'{crds}' is an invalid CRDs policy(valid: Skip, Create, CreateReplace)");
        }
        install.insert("crds".into(), json!(crds));
        spec.insert("upgrade".into(), json!({"crds": crds}));
    }
    if !install.is_empty() {
        spec.insert("install".into(), Value::Object(install));
    }
    if !a.depends_on.is_empty() {
        let deps: Vec<Value> = a
            .depends_on
            .iter()
            .map(|d| match d.split_once('/') {
                Some((ns, name)) => json!({"name": name, "namespace": ns}),
                None => json!({"name": d}),
            })
            .collect();
        spec.insert("dependsOn".into(), json!(deps));
    }
    if !a.values_from.is_empty() {
        let mut refs = Vec::new();
        for v in &a.values_from {
            refs.push(Value::Object(parse_ref(
                "values-from",
                v,
                &["Secret", "ConfigMap"],
            )?));
        }
        spec.insert("valuesFrom".into(), json!(refs));
    }
    if !a.values.is_empty() {
        let mut merged = Map::new();
        for path in &a.values {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading values from {}", path.display()))?;
            let values = ferroflux_helm::load_values(&text)
                .map_err(|e| anyhow!("reading values from {}: {e}", path.display()))?;
            merged = ferroflux_helm::merge_maps(merged, values);
        }
        spec.insert("values".into(), Value::Object(merged));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    if !a.labels.is_empty() {
        let mut labels = Map::new();
        for l in &a.labels {
            let (k, v) = l
                .split_once('=')
                .ok_or_else(|| anyhow!("invalid label format '{l}', must be key=value"))?;
            labels.insert(k.into(), json!(v));
        }
        metadata.insert("labels".into(), Value::Object(labels));
    }
    let object = json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": metadata,
        "spec": spec,
    });
    // The type checks what the CRD would: a wrong field is an error here, not in the cluster.
    let _: HelmRelease = serde_json::from_value(object.clone())
        .with_context(|| "the flags make an invalid HelmRelease")?;
    Ok(sorted(object))
}

/// The HelmRelease's name, required as flux requires it.
fn release_name(a: &HelmReleaseArgs) -> anyhow::Result<&str> {
    a.name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow!("name is required"))
}

async fn helmrelease(kube: &KubeArgs, a: &HelmReleaseArgs) -> anyhow::Result<ExitCode> {
    let object = build(&kube.namespace, a)?;
    let name = release_name(a)?;
    if a.export {
        print!("{}", document(&object));
        return Ok(ExitCode::SUCCESS);
    }
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        let ns = kube.namespace.as_str();
        progress::generate("generating HelmRelease");
        progress::action("applying HelmRelease");
        let api: Api<HelmRelease> = Api::namespaced(cluster.client.clone(), ns);
        let params = PatchParams::apply("flux-client-side-apply").force();
        cluster
            .call(
                &format!("applying HelmRelease {name}"),
                api.patch(name, &params, &Patch::Apply(&object)),
            )
            .await?;
        progress::success("HelmRelease created");
        let done: HelmRelease = fluxobj::with_spinner(
            "waiting for HelmRelease reconciliation",
            fluxobj::wait_ready::<HelmRelease>(&cluster, ns, name, deadline),
        )
        .await?;
        progress::success(format!("HelmRelease {name} is ready"));
        progress::success(done.success_message());
        Ok(())
    }
    .await;
    fluxobj::exit_code(result, "the HelmRelease stays applied")
}

/// Applies the Flux object `object` (JSON of kind `kind`) between flux's two lines:
/// `► applying {applying}`, then `✔ {done} created` or `✔ {done} updated` (flux names some
/// kinds differently in the two lines: "applying HelmChart source", "source created").
async fn apply_saying(
    cluster: &Cluster,
    ns: &str,
    kind: &str,
    object: &Value,
    applying: &str,
    done: &str,
) -> anyhow::Result<()> {
    let (resource, _) = crate::cmd::export::resource_of(kind)?;
    apply_saying_at(cluster, ns, &resource, object, applying, done).await
}

/// [`apply_saying`] for a kind found by discovery rather than among ferroflux's CRDs.
async fn apply_saying_at(
    cluster: &Cluster,
    ns: &str,
    resource: &kube::api::ApiResource,
    object: &Value,
    applying: &str,
    done: &str,
) -> anyhow::Result<()> {
    progress::action(format!("applying {applying}"));
    let created = create_or_update(cluster, ns, resource, object).await?;
    progress::success(format!(
        "{done} {}",
        if created { "created" } else { "updated" }
    ));
    Ok(())
}

/// Creates the object `object` of `resource`, or, when one of its name exists, replaces its
/// labels and spec with the flags' and keeps everything else, as flux's create commands do
/// (`existing.Labels = ...; existing.Spec = ...`). Read and written as plain JSON, so the spec
/// is exactly the flags' fields. Says whether it was created.
async fn create_or_update(
    cluster: &Cluster,
    ns: &str,
    resource: &kube::api::ApiResource,
    object: &Value,
) -> anyhow::Result<bool> {
    let kind = resource.kind.as_str();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, resource);
    let existing = cluster
        .call(&format!("reading {kind} {name}"), api.get_opt(name))
        .await?;
    match existing {
        None => {
            let wanted: DynamicObject = serde_json::from_value(object.clone())?;
            cluster
                .call(
                    &format!("creating {kind} {name}"),
                    api.create(&PostParams::default(), &wanted),
                )
                .await?;
            Ok(true)
        }
        Some(mut current) => {
            current.metadata.labels = serde_json::from_value(object["metadata"]["labels"].clone())?;
            current.data["spec"] = object["spec"].clone();
            cluster
                .call(
                    &format!("updating {kind} {name}"),
                    api.replace(name, &PostParams::default(), &current),
                )
                .await?;
            Ok(false)
        }
    }
}

pub(crate) mod image;
mod kustomization;
mod notification;
pub(crate) mod secret;
mod source;
mod source_bucket;
mod source_chart;
mod source_git;
mod source_oci;
mod tenant;

#[cfg(test)]
mod tests;
