//! `ferroflux create kustomization NAME --source [KIND/]NAME[.NAMESPACE] --path ./DIR [...]`: a
//! Kustomization as `flux create kustomization` writes it. `--export` prints it; otherwise it is
//! created (or its labels and spec replaced) and the command waits until the controller reports
//! it ready, then prints the revision it applied.

use super::secret::parse_labels;
use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj;
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_api::Kustomization;
use ferroflux_api::duration::format_duration;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// The source kinds a Kustomization builds from, in flux's order.
const SOURCE_KINDS: &[&str] = &["OCIRepository", "GitRepository", "Bucket"];

/// The kinds flux accepts in `--health-check`.
const HEALTH_CHECK_KINDS: &[&str] = &["Deployment", "DaemonSet", "StatefulSet", "HelmRelease"];

/// `create kustomization`'s flags.
#[derive(Args, Debug)]
pub struct KustomizationArgs {
    /// The Kustomization's name.
    name: String,
    /// The source holding the manifests, as '[<kind>/]<name>.<namespace>', where kind is one of
    /// OCIRepository, GitRepository or Bucket (GitRepository when left out).
    #[arg(long)]
    source: Option<String>,
    /// Path to the directory containing a kustomization.yaml file.
    #[arg(long, default_value = "./")]
    path: String,
    /// Enable garbage collection.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    prune: Option<bool>,
    /// Enable health checking of all the applied resources.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    wait: Option<bool>,
    /// Workload included in the health assessment, as '<kind>/<name>.<namespace>' (repeatable,
    /// or comma-separated).
    #[arg(long = "health-check", value_delimiter = ',')]
    health_checks: Vec<String>,
    /// Timeout of health checking operations.
    #[arg(long, default_value = "2m", value_parser = crate::flags::duration)]
    health_check_timeout: Duration,
    /// Deprecated by flux: every resource is validated with a server-side apply dry-run.
    #[arg(long, hide = true)]
    validation: Option<String>,
    /// Kustomizations that must be ready first, as '<name>' or '<namespace>/<name>'
    /// (repeatable, or comma-separated).
    #[arg(long, value_delimiter = ',')]
    depends_on: Vec<String>,
    /// The service account impersonated when reconciling this Kustomization.
    #[arg(long = "service-account")]
    service_account: Option<String>,
    /// Decryption provider of the manifests: sops.
    #[arg(long)]
    decryption_provider: Option<String>,
    /// The Secret holding the keys used for sops decryption.
    #[arg(long)]
    decryption_secret: Option<String>,
    /// The namespace of every object the Kustomization applies.
    #[arg(long)]
    target_namespace: Option<String>,
    /// The Secret holding the kubeconfig of a remote cluster.
    #[arg(long)]
    kubeconfig_secret_ref: Option<String>,
    /// How soon a failed reconciliation is retried.
    #[arg(long, value_parser = crate::flags::duration)]
    retry_interval: Option<Duration>,
    /// How often the Kustomization is reconciled.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Labels of the Kustomization, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Print the YAML instead of applying it.
    #[arg(long)]
    export: bool,
}

/// `[<kind>/]<name>[.<namespace>]` as flux's source flag reads it: the namespace is what
/// follows the last dot, a missing kind is GitRepository, and the kind is matched ignoring case.
fn source_ref(text: &str) -> anyhow::Result<Map<String, Value>> {
    if text.trim().is_empty() {
        bail!(
            "no Kustomization source given, please specify source that contains the Kubernetes manifests in the format '[<kind>/]<name>.<namespace>', where kind must be one of: ({}), if kind is not specified it defaults to GitRepository",
            SOURCE_KINDS.join(", ")
        );
    }
    let (kind, rest) = kind_and_name(text);
    let (name, namespace) = match rest.rsplit_once('.') {
        Some((n, ns)) => (n, Some(ns)),
        None => (rest, None),
    };
    if name.is_empty() {
        bail!("no name given for source of kind '{kind}'");
    }
    let kind = if kind.is_empty() {
        if SOURCE_KINDS.contains(&name) {
            bail!("no kind specified for source '{name}'");
        }
        "GitRepository"
    } else {
        SOURCE_KINDS
            .iter()
            .find(|k| k.eq_ignore_ascii_case(kind))
            .ok_or_else(|| {
                anyhow!(
                    "source kind '{kind}' is not supported, must be one of: {}",
                    SOURCE_KINDS.join(", ")
                )
            })?
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!(kind));
    out.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        out.insert("namespace".into(), json!(ns));
    }
    Ok(out)
}

/// `<kind>/<name>` split as flux splits it: only with exactly one `/`, else all of it is the
/// name.
pub(crate) fn kind_and_name(text: &str) -> (&str, &str) {
    let parts: Vec<&str> = text.split('/').collect();
    match parts.as_slice() {
        [kind, name] => (kind, name),
        _ => ("", text),
    }
}

/// The path as flux's safe relative path flag cleans it: `./` followed by the path with `.`
/// and `..` resolved inside the source (a `..` above it stops there).
fn safe_relative(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.trim().split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("./{}", parts.join("/"))
}

/// One `--health-check` entry as the object reference flux writes.
fn health_check(text: &str) -> anyhow::Result<Value> {
    let parts: Vec<&str> = text.split('/').collect();
    let [kind, name_ns] = parts.as_slice() else {
        bail!(
            "invalid health check '{text}' must be in the format 'kind/name.namespace' [{}]",
            parts.join(" ")
        );
    };
    if !HEALTH_CHECK_KINDS.contains(kind) {
        bail!(
            "invalid health check kind '{kind}' can be HelmRelease, Deployment, DaemonSet or StatefulSet"
        );
    }
    let Some((name, namespace)) = name_ns.split_once('.').filter(|(_, ns)| !ns.contains('.'))
    else {
        bail!("invalid health check '{text}' must be in the format 'kind/name.namespace'");
    };
    let mut check = json!({"kind": kind, "name": name, "namespace": namespace});
    if *kind == "HelmRelease" {
        check["apiVersion"] = json!("helm.toolkit.fluxcd.io/v2");
    }
    Ok(check)
}

/// The Kustomization the flags describe, keys sorted as flux prints them.
fn kustomization(a: &KustomizationArgs, ns: &str) -> anyhow::Result<Value> {
    let path = safe_relative(&a.path);
    let source = a.source.as_deref().map(source_ref).transpose()?;
    let Some(source) = source else {
        bail!("source is required");
    };
    let mut spec = Map::new();
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    spec.insert("path".into(), json!(path));
    spec.insert("prune".into(), json!(a.prune.unwrap_or(false)));
    spec.insert("sourceRef".into(), Value::Object(source));
    if let Some(t) = a.target_namespace.as_deref().filter(|t| !t.is_empty()) {
        spec.insert("targetNamespace".into(), json!(t));
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
    if let Some(secret) = a.kubeconfig_secret_ref.as_deref().filter(|s| !s.is_empty()) {
        spec.insert("kubeConfig".into(), json!({"secretRef": {"name": secret}}));
    }
    let wait = a.wait.unwrap_or(false);
    let timeout = json!(format_duration(a.health_check_timeout));
    // As flux: explicit health checks only matter when not waiting for everything.
    if !a.health_checks.is_empty() && !wait {
        let checks = a
            .health_checks
            .iter()
            .map(|h| health_check(h))
            .collect::<anyhow::Result<Vec<_>>>()?;
        spec.insert("healthChecks".into(), json!(checks));
        spec.insert("timeout".into(), timeout.clone());
    }
    if wait {
        spec.insert("wait".into(), json!(true));
        spec.insert("timeout".into(), timeout);
    }
    if let Some(sa) = a.service_account.as_deref().filter(|s| !s.is_empty()) {
        spec.insert("serviceAccountName".into(), json!(sa));
    }
    if let Some(provider) = a.decryption_provider.as_deref().filter(|p| !p.is_empty()) {
        if provider != "sops" {
            bail!("unsupported decryption provider '{provider}', must be one of: sops");
        }
        let mut decryption = json!({"provider": provider});
        if let Some(secret) = a.decryption_secret.as_deref().filter(|s| !s.is_empty()) {
            decryption["secretRef"] = json!({"name": secret});
        }
        spec.insert("decryption".into(), decryption);
    }
    if let Some(retry) = a.retry_interval.filter(|d| !d.is_zero()) {
        spec.insert("retryInterval".into(), json!(format_duration(retry)));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(a.name));
    metadata.insert("namespace".into(), json!(ns));
    let labels = parse_labels(&a.labels)?;
    if !labels.is_empty() {
        metadata.insert("labels".into(), json!(labels));
    }
    let object = json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": metadata,
        "spec": spec,
    });
    let _: Kustomization = serde_json::from_value(object.clone())
        .context("the flags make an invalid Kustomization")?;
    Ok(sorted(object))
}

/// Runs `create kustomization`.
pub async fn run(kube: &KubeArgs, a: &KustomizationArgs) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let object = kustomization(a, ns)?;
    if a.export {
        print!("{}", document(&object));
        return Ok(ExitCode::SUCCESS);
    }
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        progress::generate("generating Kustomization");
        super::apply_saying(
            &cluster,
            ns,
            "Kustomization",
            &object,
            "Kustomization",
            "Kustomization",
        )
        .await?;
        progress::waiting("waiting for Kustomization reconciliation");
        let done: Kustomization = fluxobj::wait_ready(&cluster, ns, &a.name, deadline)
            .await
            .map_err(|e| anyhow!("{e}"))?;
        progress::success(format!("Kustomization {} is ready", a.name));
        let revision = done
            .status
            .as_ref()
            .and_then(|s| s.last_applied_revision.clone())
            .unwrap_or_default();
        progress::success(format!("applied revision {revision}"));
        Ok(())
    }
    .await;
    fluxobj::exit_code(result, "the Kustomization stays applied")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_refs_as_flux_reads_them() {
        let r = source_ref("podinfo").unwrap();
        assert_eq!(
            Value::Object(r),
            json!({"kind": "GitRepository", "name": "podinfo"})
        );
        let r = source_ref("ocirepository/podinfo.flux-system").unwrap();
        assert_eq!(
            Value::Object(r),
            json!({"kind": "OCIRepository", "name": "podinfo", "namespace": "flux-system"})
        );
        assert_eq!(
            source_ref("HelmRepository/podinfo")
                .unwrap_err()
                .to_string(),
            "source kind 'HelmRepository' is not supported, must be one of: OCIRepository, GitRepository, Bucket"
        );
        assert_eq!(
            source_ref("GitRepository").unwrap_err().to_string(),
            "no kind specified for source 'GitRepository'"
        );
    }

    #[test]
    fn paths_are_cleaned_inside_the_source() {
        assert_eq!(
            safe_relative("./deploy/overlays/dev"),
            "./deploy/overlays/dev"
        );
        assert_eq!(safe_relative("deploy/../apps/"), "./apps");
        assert_eq!(safe_relative("../../etc"), "./etc");
        assert_eq!(safe_relative(""), "./");
    }

    #[test]
    fn health_checks_as_flux_writes_them() {
        assert_eq!(
            health_check("Deployment/frontend.dev").unwrap(),
            json!({"kind": "Deployment", "name": "frontend", "namespace": "dev"})
        );
        assert_eq!(
            health_check("HelmRelease/podinfo.apps").unwrap()["apiVersion"],
            "helm.toolkit.fluxcd.io/v2"
        );
        assert_eq!(
            health_check("Service/web.dev").unwrap_err().to_string(),
            "invalid health check kind 'Service' can be HelmRelease, Deployment, DaemonSet or StatefulSet"
        );
        assert_eq!(
            health_check("Deployment/frontend").unwrap_err().to_string(),
            "invalid health check 'Deployment/frontend' must be in the format 'kind/name.namespace'"
        );
    }
}
