//! `ferroflux install [--export]`: the engine's manifests, printed or server-side applied, as
//! `flux install` does; and the steps `bootstrap` shares with it (applying the components,
//! waiting for the controller).

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use ferroflux_apply::applier::{Applier, ApplyOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use serde_json::{Value, json};

use crate::cluster::{Cluster, KubeArgs};
use crate::output::progress;
use ferroflux_bootstrap::manifests::{self, InstallOptions};
use std::process::ExitCode;

/// Field manager of what the CLI applies (Flux's CLI uses its own too, apart from the
/// controller's).
pub const FIELD_MANAGER: &str = "ferroflux";

/// Engine options shared by `install` and `bootstrap`.
#[derive(Args, Clone, Debug)]
pub struct EngineArgs {
    /// Container registry the controller image is pulled from (`<registry>/ferroflux:<version>`),
    /// as flux's `--registry`.
    #[arg(long, default_value = manifests::DEFAULT_REGISTRY)]
    pub registry: String,
    /// Tag of the controller image, as flux's `--version`.
    #[arg(short = 'v', long, default_value = manifests::VERSION)]
    pub version: String,
    /// The whole controller image reference; overrides --registry and --version.
    #[arg(long, conflicts_with_all = ["registry", "version"])]
    pub image: Option<String>,
    /// Log level of the controller: debug, info or error.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Internal cluster domain (used in the artifact server's advertised address).
    #[arg(long, default_value = "cluster.local")]
    pub cluster_domain: String,
}

impl EngineArgs {
    pub fn options(&self, namespace: &str) -> Result<InstallOptions> {
        let opts = InstallOptions {
            namespace: namespace.to_string(),
            image: match &self.image {
                Some(image) => image.clone(),
                None => manifests::image_for(&self.registry, &self.version)?,
            },
            log_level: self.log_level.clone(),
            cluster_domain: self.cluster_domain.clone(),
            cluster_name: None,
        };
        opts.validate()?;
        Ok(opts)
    }
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Print the manifests on stdout instead of applying them.
    #[arg(long)]
    export: bool,
    #[command(flatten)]
    engine: EngineArgs,
    #[command(flatten)]
    kube: KubeArgs,
}

pub async fn run(args: InstallArgs) -> Result<ExitCode> {
    let opts = args.engine.options(&args.kube.namespace)?;
    if args.export {
        print!("{}", manifests::components_yaml(&opts)?);
    } else {
        install(&args.kube, &opts).await?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn install(kube: &KubeArgs, opts: &InstallOptions) -> Result<()> {
    let timeout = kube.timeout;
    progress::generate(format_args!("generating manifests"));
    let objects = manifests::components(opts)?;
    progress::success(format_args!("manifests build completed"));
    progress::action(format_args!(
        "installing components in {} namespace",
        opts.namespace
    ));
    let client = Cluster::connect(kube).await?.client;
    if let Some(version) = bootstrapped_version(&client).await? {
        bail!(
            "this cluster has already been bootstrapped with ferroflux {version}! \
             Please use 'ferroflux bootstrap' to upgrade"
        );
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let applier = Applier::new(client.clone(), FIELD_MANAGER);
    let changes = apply(&applier, objects.clone(), timeout)
        .await
        .context("install failed")?;
    for c in &changes.entries {
        eprintln!("{c}");
    }
    progress::waiting(format_args!("verifying installation"));
    wait_controller(&applier, &objects, remaining(deadline))
        .await
        .context("install failed")?;
    progress::success(format_args!("install finished"));
    Ok(())
}

pub fn remaining(deadline: tokio::time::Instant) -> Duration {
    deadline.saturating_duration_since(tokio::time::Instant::now())
}

/// Server-side applies `objects` in stages (CRDs and the namespace first, each stage ready
/// before the next).
pub async fn apply(
    applier: &Applier,
    objects: Vec<Value>,
    timeout: Duration,
) -> Result<ferroflux_apply::changeset::ChangeSet> {
    let opts = ApplyOptions {
        stage_timeout: timeout,
        ..ApplyOptions::default()
    };
    Ok(applier.apply_staged(objects, &opts).await?)
}

/// Waits until the controller Deployment among `objects` is ready, printing flux's line.
pub async fn wait_controller(
    applier: &Applier,
    objects: &[Value],
    timeout: Duration,
) -> Result<()> {
    let deployments: Vec<Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" && o["apiVersion"] == "apps/v1")
        .cloned()
        .collect();
    if deployments.is_empty() {
        return Err(anyhow!("the manifests hold no controller Deployment"));
    }
    applier.wait_for(&deployments, timeout).await?;
    for d in &deployments {
        progress::success(format_args!(
            "{}: deployment ready",
            d["metadata"]["name"].as_str().unwrap_or_default()
        ));
    }
    Ok(())
}

/// The ferroflux version of a bootstrapped installation: the GitRepository CRD carries the
/// labels the Kustomization controller stamps on what it applies (Flux checks the same).
pub async fn bootstrapped_version(client: &kube::Client) -> Result<Option<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Some(crd) = crds
        .get_opt("gitrepositories.source.toolkit.fluxcd.io")
        .await
        .context("cluster info unavailable")?
    else {
        return Ok(None);
    };
    let labels = crd.metadata.labels.unwrap_or_default();
    if labels.contains_key("kustomize.toolkit.fluxcd.io/name")
        && labels.contains_key("kustomize.toolkit.fluxcd.io/namespace")
    {
        return Ok(Some(
            labels
                .get(manifests::VERSION_LABEL)
                .cloned()
                .unwrap_or_else(|| "(unknown version)".into()),
        ));
    }
    Ok(None)
}

/// `{"kind": ..., "metadata": {"name": ..., "namespace": ...}}` for health checks by id.
pub fn object_ref(api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    })
}
