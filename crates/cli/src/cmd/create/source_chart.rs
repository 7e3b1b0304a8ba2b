//! `ferroflux create source chart NAME --source KIND/NAME --chart CHART [--chart-version RANGE]
//! [--reconcile-strategy] [--verify-*] [--export]`: a HelmChart as `flux create source chart`
//! writes it. `--export` prints it; otherwise it is created (or its labels and spec replaced)
//! and the command waits until the controller reports it ready with an artifact.

use super::kustomization::kind_and_name;
use super::secret::parse_labels;
use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj;
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_api::HelmChart;
use ferroflux_api::duration::format_duration;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// The kinds a HelmChart takes its chart from, in flux's order.
const SOURCE_KINDS: &[&str] = &["HelmRepository", "GitRepository", "Bucket"];

/// `create source chart`'s flags.
#[derive(Args, Debug)]
pub struct ChartArgs {
    /// The source's name.
    name: Option<String>,
    /// The source holding the chart, as '<kind>/<name>', where kind is one of HelmRepository,
    /// GitRepository or Bucket.
    #[arg(long)]
    source: Option<String>,
    /// Helm chart name or path.
    #[arg(long)]
    chart: Option<String>,
    /// Helm chart version, a semver range (ignored for charts from GitRepository sources).
    #[arg(long)]
    chart_version: Option<String>,
    /// The reconcile strategy of the chart: ChartVersion or Revision.
    #[arg(long, default_value = "ChartVersion")]
    reconcile_strategy: String,
    /// The signature verification provider: cosign.
    #[arg(long)]
    verify_provider: Option<String>,
    /// A Secret with the public keys for signature verification.
    #[arg(long)]
    verify_secret_ref: Option<String>,
    /// Regular expression of the OIDC subject accepted by signature verification.
    #[arg(long)]
    verify_subject: Option<String>,
    /// Regular expression of the OIDC issuer accepted by signature verification.
    #[arg(long = "verify-issuer")]
    verify_oidc_issuer: Option<String>,
    /// How often the chart is checked.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Labels of the source, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Print the YAML instead of applying it.
    #[arg(long)]
    export: bool,
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// `--source` as flux's flag reads it, its errors in cobra's words for a bad flag value.
fn source_ref(text: &str) -> anyhow::Result<Value> {
    let invalid = |why: String| anyhow!("invalid argument {text:?} for \"--source\" flag: {why}");
    if text.trim().is_empty() {
        return Err(invalid(format!(
            "no helm chart source given, please specify source that contains the chart in the format '<kind>/<name>', where kind must be one of: ({})",
            SOURCE_KINDS.join(", ")
        )));
    }
    let (kind, name) = kind_and_name(text);
    if kind.is_empty() || name.is_empty() {
        return Err(invalid(format!(
            "invalid helm chart source '{text}', must be in format <kind>/<name>"
        )));
    }
    let kind = SOURCE_KINDS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(kind))
        .ok_or_else(|| {
            invalid(format!(
                "source kind '{kind}' is not supported, must be one of: {}",
                SOURCE_KINDS.join(", ")
            ))
        })?;
    Ok(json!({"kind": kind, "name": name}))
}

/// The HelmChart the flags describe, keys sorted as flux prints them.
fn helm_chart(a: &ChartArgs, ns: &str) -> anyhow::Result<Value> {
    let name = non_empty(&a.name).ok_or_else(|| anyhow!("name is required"))?;
    let source = match non_empty(&a.source) {
        Some(s) => source_ref(s)?,
        None => bail!("chart source is required"),
    };
    let chart = non_empty(&a.chart).ok_or_else(|| anyhow!("chart name or path is required"))?;
    let mut spec = Map::new();
    spec.insert("chart".into(), json!(chart));
    if let Some(v) = non_empty(&a.chart_version) {
        spec.insert("version".into(), json!(v));
    }
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    spec.insert("reconcileStrategy".into(), json!(a.reconcile_strategy));
    spec.insert("sourceRef".into(), source);
    match non_empty(&a.verify_provider) {
        Some(provider) => {
            if provider != "cosign" {
                bail!(
                    "invalid argument {provider:?} for \"--verify-provider\" flag: source OCI verify provider '{provider}' is not supported, must be one of: cosign"
                );
            }
            let mut verify = json!({"provider": provider});
            if let Some(secret) = non_empty(&a.verify_secret_ref) {
                verify["secretRef"] = json!({"name": secret});
            }
            let (issuer, subject) = (
                non_empty(&a.verify_oidc_issuer),
                non_empty(&a.verify_subject),
            );
            if issuer.is_some() || subject.is_some() {
                verify["matchOIDCIdentity"] = json!([{
                    "issuer": issuer.unwrap_or(""),
                    "subject": subject.unwrap_or(""),
                }]);
            }
            spec.insert("verify".into(), verify);
        }
        None if non_empty(&a.verify_secret_ref).is_some() => {
            bail!("a verification provider must be specified when a secret is specified")
        }
        None if non_empty(&a.verify_oidc_issuer).is_some()
            || non_empty(&a.verify_subject).is_some() =>
        {
            bail!("a verification provider must be specified when OIDC issuer/subject is specified")
        }
        None => {}
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(ns));
    let labels = parse_labels(&a.labels)?;
    if !labels.is_empty() {
        metadata.insert("labels".into(), json!(labels));
    }
    let object = json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmChart",
        "metadata": metadata,
        "spec": spec,
    });
    let _: HelmChart =
        serde_json::from_value(object.clone()).context("the flags make an invalid HelmChart")?;
    Ok(sorted(object))
}

/// Runs `create source chart`.
pub async fn run(kube: &KubeArgs, a: &ChartArgs) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let object = helm_chart(a, ns)?;
    // flux says it before printing the export too.
    progress::generate("generating HelmChart source");
    if a.export {
        print!("{}", document(&object));
        return Ok(ExitCode::SUCCESS);
    }
    let name = non_empty(&a.name).unwrap_or_default().to_string();
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        super::apply_saying(
            &cluster,
            ns,
            "HelmChart",
            &object,
            "HelmChart source",
            "source",
        )
        .await?;
        let words = fluxobj::SourceWait {
            label: "HelmChart source",
            missing_artifact: Some(
                "HelmChart source reconciliation completed but no artifact was found",
            ),
        };
        fluxobj::wait_for_artifact::<HelmChart>(&cluster, ns, &name, deadline, words).await
    }
    .await;
    fluxobj::exit_code(result, "the HelmChart stays applied")
}
