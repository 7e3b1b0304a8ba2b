//! `ferroflux create alert-provider|alert|receiver NAME`: the notification kinds from flux's
//! flags, printed with `--export` (`---`, keys sorted, the fields flux's Go types keep) or
//! applied and waited for, with flux's lines (`✚ generating Provider`, `► applying Provider`,
//! `✔ Provider created`, `◎ waiting for Provider reconciliation`, `✔ Provider slack is ready`;
//! a Receiver also prints its `generated webhook URL /hook/...`).
//!
//! Alerts and Providers have no controller status (notification v1beta3): they are ready once
//! they exist, as flux's static objects are. A Receiver is ready when the controller has
//! computed its webhook path from the token Secret.
//!
//! One deliberate difference: flux leaves an unknown `--type`, `--event-severity` or source
//! kind to the API server's schema validation; ferroflux's local clusters do not validate a
//! custom resource's enums, so the same refusal, in the API server's words, is given here
//! before anything is written or printed.

use crate::cluster::{Cluster, KubeArgs};
use crate::cmd::create::secret::{RECEIVER_TYPES, parse_labels};
use crate::fluxobj::{self, FluxObject};
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_api::notification::{ALL_PROVIDER_TYPES, FluxKind};
use ferroflux_api::{Alert, Provider, Receiver};
use kube::ResourceExt;
use serde_json::{Map, Value, json};
use std::process::ExitCode;

/// The flags every `create` subcommand shares in flux.
#[derive(Args, Debug)]
pub struct CommonFlags {
    /// Print the object as YAML instead of applying it.
    #[arg(long)]
    export: bool,
    /// Labels of the object, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Accepted as flux accepts it for every `create`; these kinds have no interval.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: std::time::Duration,
}

#[derive(Args, Debug)]
pub struct ProviderArgs {
    /// The Provider's name.
    name: Option<String>,
    /// Type of provider (slack, msteams, generic, github, ...).
    #[arg(long = "type", default_value = "")]
    provider_type: String,
    /// Channel to send messages to in the case of a chat provider.
    #[arg(long, default_value = "")]
    channel: String,
    /// Bot username used by the provider.
    #[arg(long, default_value = "")]
    username: String,
    /// Path to either the git repository, chat provider or webhook.
    #[arg(long, default_value = "")]
    address: String,
    /// Name of the Secret containing the authentication token.
    #[arg(long, default_value = "")]
    secret_ref: String,
    #[command(flatten)]
    common: CommonFlags,
}

#[derive(Args, Debug)]
pub struct AlertArgs {
    /// The Alert's name.
    name: Option<String>,
    /// The Provider the alerts go to.
    #[arg(long, default_value = "")]
    provider_ref: String,
    /// Severity of events to send alerts for (info, error).
    #[arg(long, default_value = "")]
    event_severity: String,
    /// Sources that should generate alerts (<kind>/<name>[.<namespace>]), also accepts
    /// comma-separated values.
    #[arg(long = "event-source", value_delimiter = ',')]
    event_sources: Vec<String>,
    #[command(flatten)]
    common: CommonFlags,
}

#[derive(Args, Debug)]
pub struct ReceiverArgs {
    /// The Receiver's name.
    name: Option<String>,
    /// The receiver type.
    #[arg(long = "type")]
    receiver_type: Option<String>,
    /// Name of the Secret holding the token.
    #[arg(long, default_value = "")]
    secret_ref: String,
    /// Event types to accept (`push`, `ping`), also accepts comma-separated values.
    #[arg(long = "event", value_delimiter = ',')]
    events: Vec<String>,
    /// Objects to reconcile on a valid call (<kind>/<name>), also accepts comma-separated
    /// values.
    #[arg(long = "resource", value_delimiter = ',')]
    resources: Vec<String>,
    #[command(flatten)]
    common: CommonFlags,
}

const GROUP: &str = "notification.toolkit.fluxcd.io";

fn name_of(name: &Option<String>) -> anyhow::Result<&str> {
    name.as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow!("name is required"))
}

/// The API server's refusal of a value outside a CRD enum, word for word.
fn unsupported(
    kind: &str,
    name: &str,
    field: &str,
    value: &str,
    allowed: &[&str],
) -> anyhow::Error {
    let allowed: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
    anyhow!(
        "{kind}.{GROUP} {name:?} is invalid: {field}: Unsupported value: {value:?}: supported values: {}",
        allowed.join(", ")
    )
}

/// The kinds an Alert's or Receiver's reference may name (the CRD's enum).
const FLUX_KINDS: &[&str] = &[
    "Bucket",
    "GitRepository",
    "Kustomization",
    "HelmRelease",
    "HelmChart",
    "HelmRepository",
    "ImageRepository",
    "ImagePolicy",
    "ImageUpdateAutomation",
    "OCIRepository",
    "ArtifactGenerator",
    "ExternalArtifact",
];

fn metadata(name: &str, ns: &str, labels: &[String]) -> anyhow::Result<Value> {
    let labels = parse_labels(labels)?;
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(ns));
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    Ok(Value::Object(meta))
}

/// The Provider the flags describe, as flux's Go type writes it (empty strings left out).
fn provider(a: &ProviderArgs, ns: &str) -> anyhow::Result<Value> {
    let name = name_of(&a.name)?;
    if a.provider_type.is_empty() {
        bail!("Provider type is required");
    }
    let mut spec = Map::new();
    spec.insert("type".into(), json!(a.provider_type));
    for (key, value) in [
        ("channel", &a.channel),
        ("username", &a.username),
        ("address", &a.address),
    ] {
        if !value.is_empty() {
            spec.insert(key.into(), json!(value));
        }
    }
    if !a.secret_ref.is_empty() {
        spec.insert("secretRef".into(), json!({"name": a.secret_ref}));
    }
    let object = json!({
        "apiVersion": format!("{GROUP}/v1beta3"),
        "kind": "Provider",
        "metadata": metadata(name, ns, &a.common.labels)?,
        "spec": spec,
    });
    if !ALL_PROVIDER_TYPES.contains(&a.provider_type.as_str()) {
        return Err(unsupported(
            "Provider",
            name,
            "spec.type",
            &a.provider_type,
            ALL_PROVIDER_TYPES,
        ));
    }
    Ok(sorted(object))
}

/// `<kind>/<name>`: flux's split (no `/`, or more than one, leaves the kind empty).
fn kind_name(input: &str) -> (&str, &str) {
    let parts: Vec<&str> = input.split('/').collect();
    match parts.as_slice() {
        [kind, name] => (kind, name),
        _ => ("", input),
    }
}

/// The Alert the flags describe.
fn alert(a: &AlertArgs, ns: &str) -> anyhow::Result<Value> {
    let name = name_of(&a.name)?;
    if a.provider_ref.is_empty() {
        bail!("provider ref is required");
    }
    let mut sources = Vec::new();
    for source in &a.event_sources {
        let (kind, rest) = kind_name(source);
        if kind.is_empty() {
            bail!("invalid event source '{source}', must be in format <kind>/<name>");
        }
        // `<name>.<namespace>`: the last dot splits, as flux's parser does.
        let mut reference = Map::new();
        reference.insert("kind".into(), json!(kind));
        match rest.rsplit_once('.') {
            Some((n, namespace)) => {
                reference.insert("name".into(), json!(n));
                reference.insert("namespace".into(), json!(namespace));
            }
            None => {
                reference.insert("name".into(), json!(rest));
            }
        }
        sources.push(Value::Object(reference));
    }
    if sources.is_empty() {
        bail!("at least one event source is required");
    }
    let mut spec = Map::new();
    spec.insert("providerRef".into(), json!({"name": a.provider_ref}));
    spec.insert("eventSources".into(), Value::Array(sources.clone()));
    if !a.event_severity.is_empty() {
        spec.insert("eventSeverity".into(), json!(a.event_severity));
    }
    let object = json!({
        "apiVersion": format!("{GROUP}/v1beta3"),
        "kind": "Alert",
        "metadata": metadata(name, ns, &a.common.labels)?,
        "spec": spec,
    });
    if !a.event_severity.is_empty() && !["info", "error"].contains(&a.event_severity.as_str()) {
        return Err(unsupported(
            "Alert",
            name,
            "spec.eventSeverity",
            &a.event_severity,
            &["info", "error"],
        ));
    }
    check_kinds("Alert", name, "spec.eventSources", &sources)?;
    Ok(sorted(object))
}

/// Every reference's kind is one the CRD allows.
fn check_kinds(kind: &str, name: &str, field: &str, refs: &[Value]) -> anyhow::Result<()> {
    for (i, r) in refs.iter().enumerate() {
        let k = r["kind"].as_str().unwrap_or_default();
        if FluxKind::parse(k).is_none() {
            return Err(unsupported(
                kind,
                name,
                &format!("{field}[{i}].kind"),
                k,
                FLUX_KINDS,
            ));
        }
    }
    Ok(())
}

/// The Receiver the flags describe.
fn receiver(a: &ReceiverArgs, ns: &str) -> anyhow::Result<Value> {
    // clap reads the flag first; flux's flag type refuses a bad value before anything else.
    if let Some(t) = &a.receiver_type {
        if t.trim().is_empty() {
            bail!(
                "invalid argument {t:?} for \"--type\" flag: no receiver type given, please specify the receiver type"
            );
        }
        if !RECEIVER_TYPES.contains(&t.as_str()) {
            bail!(
                "invalid argument {t:?} for \"--type\" flag: receiver type '{t}' is not supported, must be one of: {}",
                RECEIVER_TYPES.join(", ")
            );
        }
    }
    let name = name_of(&a.name)?;
    let Some(receiver_type) = a.receiver_type.as_deref() else {
        bail!("Receiver type is required");
    };
    if a.secret_ref.is_empty() {
        bail!("secret ref is required");
    }
    let mut resources = Vec::new();
    for resource in &a.resources {
        let (kind, n) = kind_name(resource);
        if kind.is_empty() {
            bail!("invalid event source '{resource}', must be in format <kind>/<name>");
        }
        resources.push(json!({"kind": kind, "name": n}));
    }
    if resources.is_empty() {
        bail!("atleast one resource is required");
    }
    let mut spec = Map::new();
    spec.insert("type".into(), json!(receiver_type));
    spec.insert("resources".into(), Value::Array(resources.clone()));
    spec.insert("secretRef".into(), json!({"name": a.secret_ref}));
    if !a.events.is_empty() {
        spec.insert("events".into(), json!(a.events));
    }
    let object = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "Receiver",
        "metadata": metadata(name, ns, &a.common.labels)?,
        "spec": spec,
    });
    check_kinds("Receiver", name, "spec.resources", &resources)?;
    Ok(sorted(object))
}

/// Runs `create alert-provider`.
pub async fn run_provider(kube: &KubeArgs, a: &ProviderArgs) -> anyhow::Result<ExitCode> {
    let object = provider(a, &kube.namespace)?;
    create::<Provider>(kube, &object, a.common.export).await
}

/// Runs `create alert`.
pub async fn run_alert(kube: &KubeArgs, a: &AlertArgs) -> anyhow::Result<ExitCode> {
    let object = alert(a, &kube.namespace)?;
    create::<Alert>(kube, &object, a.common.export).await
}

/// Runs `create receiver`.
pub async fn run_receiver(kube: &KubeArgs, a: &ReceiverArgs) -> anyhow::Result<ExitCode> {
    let object = receiver(a, &kube.namespace)?;
    create::<Receiver>(kube, &object, a.common.export).await
}

/// Prints `object` (`--export`), or creates or updates it (labels and spec, as flux's upsert)
/// and waits until it is ready.
async fn create<K: FluxObject>(
    kube: &KubeArgs,
    object: &Value,
    export: bool,
) -> anyhow::Result<ExitCode> {
    // The type checks what the CRD would: a wrong field is an error here, not in the cluster.
    let wanted: K = serde_json::from_value(object.clone())
        .with_context(|| format!("the flags make an invalid {}", K::KIND))?;
    if export {
        print!("{}", document(object));
        return Ok(ExitCode::SUCCESS);
    }
    let kind = K::KIND;
    let name = wanted.name_any();
    let ns = kube.namespace.as_str();
    progress::generate(format!("generating {kind}"));
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        super::apply_saying(&cluster, ns, kind, object, kind, kind).await?;
        progress::waiting(format!("waiting for {kind} reconciliation"));
        let done: K = fluxobj::interruptible(
            fluxobj::listen_for_interrupt(),
            fluxobj::wait_ready::<K>(&cluster, ns, &name, deadline),
        )
        .await?;
        progress::success(format!("{kind} {name} is ready"));
        if let Some(path) = serde_json::to_value(&done)?["status"]["webhookPath"].as_str() {
            progress::success(format!("generated webhook URL {path}"));
        }
        Ok(())
    }
    .await;
    fluxobj::exit_code(result, &format!("the {kind} stays applied"))
}
