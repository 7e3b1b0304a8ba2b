//! `ferroflux trace <kind>/<name> | <kind> <name> | <name> --kind K --api-version V`: which Flux
//! object applied a cluster object, and from what source at which revision, as `flux trace`
//! prints it. The object's `kustomize.toolkit.fluxcd.io/name|namespace` labels lead to its
//! Kustomization and that one's source; `helm.toolkit.fluxcd.io/name|namespace` to its
//! HelmRelease, the HelmChart it made and the chart's source (or its chartRef).
//!
//! Times are written as Go's `time.Time` prints them in UTC (`2021-07-16 15:42:20 +0000 UTC`),
//! which is what flux shows on a machine whose local zone is UTC.

use crate::cluster::{Cluster, KubeArgs, error_chain};
use crate::cmd::export::resource_of;
use anyhow::{anyhow, bail};
use clap::Args;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::Discovery;
use serde_json::Value;
use std::fmt::Write as _;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// `<kind>/<name>`, `<kind> <name>`, or the name with --kind and --api-version.
    args: Vec<String>,
    /// The object's kind (with --api-version: no discovery needed).
    #[arg(long)]
    kind: Option<String>,
    /// The object's API version, e.g. apps/v1.
    #[arg(long)]
    api_version: Option<String>,
    #[command(flatten)]
    kube: KubeArgs,
}

/// Runs `trace`.
pub async fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let ns = args.kube.namespace.clone();
    let (kind_text, name, api_version) = if args.kind.is_some() || args.api_version.is_some() {
        let name = args
            .args
            .first()
            .ok_or_else(|| anyhow!("object name is required"))?;
        let kind = args
            .kind
            .clone()
            .ok_or_else(|| anyhow!("object kind is required (--kind)"))?;
        let api_version = args
            .api_version
            .clone()
            .ok_or_else(|| anyhow!("object apiVersion is required (--api-version)"))?;
        (kind, name.clone(), Some(api_version))
    } else {
        let (kind, name) = match args.args.as_slice() {
            [one] if one.contains('/') => {
                let (k, n) = one.split_once('/').unwrap_or_default();
                (k.to_string(), n.to_string())
            }
            [kind, name] => (kind.clone(), name.clone()),
            _ => bail!(
                "either `<resource>/<name>` or `<resource> <name>` is required as an argument"
            ),
        };
        (kind, name, None)
    };
    let cluster = Cluster::connect(&args.kube).await?;
    let (resource, namespaced) = find_resource(&cluster, &kind_text, api_version).await?;
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(cluster.client.clone(), &ns, &resource)
    } else {
        Api::all_with(cluster.client.clone(), &resource)
    };
    let object = match api.get(&name).await {
        Ok(o) => serde_json::to_value(o)?,
        Err(kube::Error::Api(status)) => bail!("failed to find object: {}", status.message),
        Err(e) => bail!("failed to find object: {}", error_chain(&e)),
    };
    let tracer = Tracer { cluster: &cluster };
    match tracer.trace(&object, &kind_text).await {
        Ok(report) => print!("{report}"),
        // Once the object is found, flux reports a failed trace (an object no Flux object
        // manages among them) on stderr without its `✗` and still exits 0: a script tracing
        // many objects goes on. Unlike flux, the line ends with a newline.
        Err(e) => eprintln!(
            "failed to trace {}/{} in namespace {}: {e:#}",
            s(&object, &["kind"]),
            s(&object, &["metadata", "name"]),
            s(&object, &["metadata", "namespace"])
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The API resource for what the user typed (a kind, its plural or singular, any case), and
/// whether it is namespaced. With an API version the kind is looked up in that group version
/// only.
async fn find_resource(
    cluster: &Cluster,
    typed: &str,
    api_version: Option<String>,
) -> anyhow::Result<(ApiResource, bool)> {
    let discovery = cluster
        .call(
            "discovering the cluster's API",
            Discovery::new(cluster.client.clone()).run(),
        )
        .await?;
    let wanted = typed.to_ascii_lowercase();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if api_version
                .as_deref()
                .is_some_and(|v| v != resource.api_version)
            {
                continue;
            }
            let singular = resource.kind.to_ascii_lowercase();
            if wanted == singular || wanted == resource.plural {
                let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                return Ok((resource, namespaced));
            }
        }
    }
    match api_version {
        Some(v) => {
            bail!("failed to find object: no matches for kind \"{typed}\" in version \"{v}\"")
        }
        None => bail!("the server doesn't have a resource type \"{typed}\""),
    }
}

struct Tracer<'a> {
    cluster: &'a Cluster,
}

fn s<'v>(v: &'v Value, path: &[&str]) -> &'v str {
    let mut at = v;
    for p in path {
        at = &at[*p];
    }
    at.as_str().unwrap_or("")
}

/// The Ready condition of an object's status.
fn ready(object: &Value) -> Option<&Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// An RFC 3339 time as Go's `time.Time.String()` writes it in UTC.
fn go_time(rfc3339: &str) -> String {
    match rfc3339.parse::<k8s_openapi::jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

/// Flux's Status/Message lines of a source or release, `width` the label column.
fn status_lines(out: &mut String, object: &Value, width: usize, failed_wording: bool) {
    match ready(object) {
        Some(c) => {
            let verb = if failed_wording && c["status"] == "False" {
                "Last reconciliation failed at"
            } else {
                "Last reconciled at"
            };
            let _ = writeln!(
                out,
                "{:width$}{verb} {}",
                "Status:",
                go_time(s(c, &["lastTransitionTime"]))
            );
            let _ = writeln!(out, "{:width$}{}", "Message:", s(c, &["message"]));
        }
        None => {
            let _ = writeln!(out, "{:width$}Unknown", "Status:");
        }
    }
}

impl Tracer<'_> {
    async fn get(&self, kind: &str, ns: &str, name: &str) -> anyhow::Result<Value> {
        let (resource, _) = resource_of(kind)?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.cluster.client.clone(), ns, &resource);
        match api.get(name).await {
            Ok(o) => Ok(serde_json::to_value(o)?),
            Err(kube::Error::Api(status)) => bail!("failed to find {kind}: {}", status.message),
            Err(e) => bail!("failed to find {kind}: {}", error_chain(&e)),
        }
    }

    async fn trace(&self, object: &Value, kind_text: &str) -> anyhow::Result<String> {
        let labels = &object["metadata"]["labels"];
        let owner = |group: &str| {
            let name = labels[format!("{group}/name")].as_str()?;
            let ns = labels[format!("{group}/namespace")].as_str()?;
            Some((ns.to_string(), name.to_string()))
        };
        let header = |width: usize| {
            let mut out = String::from("\n");
            let _ = writeln!(
                out,
                "{:width$}{kind_text}/{}",
                "Object:",
                s(object, &["metadata", "name"])
            );
            let ns = s(object, &["metadata", "namespace"]);
            if !ns.is_empty() {
                let _ = writeln!(out, "{:width$}{ns}", "Namespace:");
            }
            let _ = writeln!(out, "{:width$}Managed by Flux", "Status:");
            out
        };
        if let Some((ns, name)) = owner("kustomize.toolkit.fluxcd.io") {
            let ks = self.get("Kustomization", &ns, &name).await?;
            return self.trace_kustomization(header(17), &ks).await;
        }
        if let Some((ns, name)) = owner("helm.toolkit.fluxcd.io") {
            let hr = self.get("HelmRelease", &ns, &name).await?;
            return self.trace_helm(header(16), &hr).await;
        }
        bail!("object not managed by Flux")
    }

    async fn source_of(&self, owner: &Value, reference: &Value) -> anyhow::Result<(String, Value)> {
        let kind = s(reference, &["kind"]).to_string();
        let ns = match s(reference, &["namespace"]) {
            "" => s(owner, &["metadata", "namespace"]),
            n => n,
        };
        let source = self.get(&kind, ns, s(reference, &["name"])).await?;
        if kind == "ExternalArtifact" && source["spec"]["sourceRef"].is_null() {
            bail!(
                "ExternalArtifact {ns}/{} is missing spec.sourceRef",
                s(&source, &["metadata", "name"])
            );
        }
        Ok((kind, source))
    }

    async fn trace_kustomization(&self, mut out: String, ks: &Value) -> anyhow::Result<String> {
        const W: usize = 17;
        out.push_str("---\n");
        let _ = writeln!(
            out,
            "{:W$}{}",
            "Kustomization:",
            s(ks, &["metadata", "name"])
        );
        let _ = writeln!(
            out,
            "{:W$}{}",
            "Namespace:",
            s(ks, &["metadata", "namespace"])
        );
        let target = s(ks, &["spec", "targetNamespace"]);
        if !target.is_empty() {
            let _ = writeln!(out, "{:W$}{target}", "Target:");
        }
        let _ = writeln!(out, "{:W$}{}", "Path:", s(ks, &["spec", "path"]));
        let _ = writeln!(
            out,
            "{:W$}{}",
            "Revision:",
            s(ks, &["status", "lastAppliedRevision"])
        );
        status_lines(&mut out, ks, W, false);
        // flux's report has no section for a Bucket source: the Kustomization's ends it.
        if s(ks, &["spec", "sourceRef", "kind"]) == "Bucket" {
            return Ok(out);
        }
        let (kind, source) = self.source_of(ks, &ks["spec"]["sourceRef"]).await?;
        source_block(&mut out, &kind, &source, W, true);
        Ok(out)
    }

    async fn trace_helm(&self, mut out: String, hr: &Value) -> anyhow::Result<String> {
        const W: usize = 16;
        out.push_str("---\n");
        let _ = writeln!(out, "{:W$}{}", "HelmRelease:", s(hr, &["metadata", "name"]));
        let _ = writeln!(
            out,
            "{:W$}{}",
            "Namespace:",
            s(hr, &["metadata", "namespace"])
        );
        let target = s(hr, &["spec", "targetNamespace"]);
        if !target.is_empty() {
            let _ = writeln!(out, "{:W$}{target}", "Target:");
        }
        let _ = writeln!(
            out,
            "{:W$}{}",
            "Revision:",
            s(hr, &["status", "lastAttemptedRevision"])
        );
        status_lines(&mut out, hr, W, false);
        if let Some((ns, name)) = s(hr, &["status", "helmChart"]).split_once('/') {
            let chart = self.get("HelmChart", ns, name).await?;
            out.push_str("---\n");
            let _ = writeln!(out, "{:W$}{name}", "HelmChart:");
            let _ = writeln!(out, "{:W$}{ns}", "Namespace:");
            let _ = writeln!(out, "{:W$}{}", "Chart:", s(&chart, &["spec", "chart"]));
            let _ = writeln!(out, "{:W$}{}", "Version:", s(&chart, &["spec", "version"]));
            if chart["status"]["artifact"].is_object() {
                let _ = writeln!(
                    out,
                    "{:W$}{}",
                    "Revision:",
                    s(&chart, &["status", "artifact", "revision"])
                );
            }
            status_lines(&mut out, &chart, W, false);
        }
        let chart_spec = &hr["spec"]["chart"]["spec"];
        let (kind, source) = if chart_spec.is_object() {
            let kind = s(chart_spec, &["sourceRef", "kind"]);
            if kind != "GitRepository" && kind != "HelmRepository" {
                return Ok(out);
            }
            self.source_of(hr, &chart_spec["sourceRef"]).await?
        } else if matches!(
            s(hr, &["spec", "chartRef", "kind"]),
            "OCIRepository" | "ExternalArtifact"
        ) {
            self.source_of(hr, &hr["spec"]["chartRef"]).await?
        } else {
            return Ok(out);
        };
        // flux's Helm report aligns the Helm kinds at 16 and the Git one at 15; the OCI and
        // external ones keep the Kustomization report's 17.
        let width = match kind.as_str() {
            "HelmRepository" => 16,
            "GitRepository" => 15,
            _ => 17,
        };
        source_block(&mut out, &kind, &source, width, false);
        Ok(out)
    }
}

/// The source section of a report.
fn source_block(out: &mut String, kind: &str, source: &Value, w: usize, with_metadata: bool) {
    out.push_str("---\n");
    let label = format!("{kind}:");
    if kind == "ExternalArtifact" {
        // flux's template has no space after this label: it is as wide as the column.
        let _ = writeln!(out, "{label}{}", s(source, &["metadata", "name"]));
    } else {
        let _ = writeln!(out, "{label:w$}{}", s(source, &["metadata", "name"]));
    }
    let _ = writeln!(
        out,
        "{:w$}{}",
        "Namespace:",
        s(source, &["metadata", "namespace"])
    );
    match kind {
        "ExternalArtifact" => {
            let r = &source["spec"]["sourceRef"];
            let _ = writeln!(
                out,
                "{:w$}{}/{}/{}",
                "Source:",
                s(r, &["kind"]),
                s(r, &["namespace"]),
                s(r, &["name"])
            );
        }
        _ => {
            let _ = writeln!(out, "{:w$}{}", "URL:", s(source, &["spec", "url"]));
        }
    }
    let reference = &source["spec"]["ref"];
    match kind {
        "GitRepository" => {
            if let Some(t) = [s(reference, &["tag"]), s(reference, &["semver"])]
                .into_iter()
                .find(|t| !t.is_empty())
            {
                let _ = writeln!(out, "{:w$}{t}", "Tag:");
            } else if !s(reference, &["branch"]).is_empty() {
                let _ = writeln!(out, "{:w$}{}", "Branch:", s(reference, &["branch"]));
            }
        }
        "OCIRepository" => {
            if let Some(t) = [s(reference, &["tag"]), s(reference, &["semver"])]
                .into_iter()
                .find(|t| !t.is_empty())
            {
                let _ = writeln!(out, "{:w$}{t}", "Tag:");
            } else if !s(reference, &["digest"]).is_empty() {
                let _ = writeln!(out, "{:w$}{}", "Digest:", s(reference, &["digest"]));
            }
        }
        _ => {}
    }
    let artifact = &source["status"]["artifact"];
    if artifact.is_object() {
        let _ = writeln!(out, "{:w$}{}", "Revision:", s(artifact, &["revision"]));
        if with_metadata
            && matches!(kind, "OCIRepository" | "ExternalArtifact")
            && let Some(metadata) = artifact["metadata"].as_object()
        {
            // flux ranges over its two labels in their sorted order and prints an empty line
            // for one the artifact does not carry.
            for (label, key) in [
                ("Origin Revision: ", "org.opencontainers.image.revision"),
                ("Origin Source:   ", "org.opencontainers.image.source"),
            ] {
                match metadata.get(key).and_then(Value::as_str) {
                    Some(v) => {
                        let _ = writeln!(out, "{label}{v}");
                    }
                    None => out.push('\n'),
                }
            }
        }
    }
    // flux words a failed HelmRepository like a good one.
    status_lines(out, source, w, kind != "HelmRepository");
}
