//! `ferroflux delete <kind> NAME [--silent]`: deletes one Flux object as `flux delete` does:
//! the object must exist, the user confirms (`Are you sure you want to delete this <kind>`)
//! unless `--silent`, and nothing is deleted without one or the other. What the object applied
//! is then the controllers' business: a Kustomization with `prune` removes what it applied, a
//! HelmRelease uninstalls its release (their finalizers). The image automation kinds are found by
//! discovery: ferroflux ships no CRD for them.

use crate::cluster::{Cluster, KubeArgs};
use crate::cmd::create::image::image_resource;
use crate::cmd::export::resource_of;
use crate::output::progress;
use anyhow::bail;
use clap::{Args, Subcommand};
use kube::api::{Api, DeleteParams, DynamicObject};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(subcommand)]
    what: DeleteWhat,
    /// Delete without asking for confirmation.
    #[arg(short, long, global = true)]
    silent: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

/// The object's name.
#[derive(Args, Debug)]
struct Name {
    name: Option<String>,
}

#[derive(Subcommand, Debug)]
enum DeleteWhat {
    /// Delete a Kustomization (what it applied is pruned when prune is enabled).
    #[command(visible_alias = "ks")]
    Kustomization(Name),
    /// Delete a HelmRelease (its Helm release is uninstalled).
    #[command(visible_alias = "hr")]
    Helmrelease(Name),
    /// Delete a source.
    #[command(subcommand)]
    Source(SourceKind),
    /// Delete an Alert.
    Alert(Name),
    /// Delete an alert Provider.
    #[command(name = "alert-provider")]
    AlertProvider(Name),
    /// Delete a Receiver.
    Receiver(Name),
    /// Delete an artifact generator.
    #[command(subcommand)]
    Artifact(ArtifactKind),
    /// Delete image automation objects (their CRDs come from outside ferroflux).
    #[command(subcommand)]
    Image(ImageKind),
}

#[derive(Subcommand, Debug)]
enum ImageKind {
    /// Delete an ImageRepository.
    Repository(Name),
    /// Delete an ImagePolicy.
    Policy(Name),
    /// Delete an ImageUpdateAutomation.
    Update(Name),
}

#[derive(Subcommand, Debug)]
enum SourceKind {
    /// Delete a GitRepository.
    Git(Name),
    /// Delete a HelmRepository.
    Helm(Name),
    /// Delete a HelmChart.
    Chart(Name),
    /// Delete an OCIRepository.
    Oci(Name),
    /// Delete a Bucket.
    Bucket(Name),
    /// Delete an ExternalArtifact.
    #[command(name = "external-artifact", visible_alias = "external")]
    External(Name),
}

#[derive(Subcommand, Debug)]
enum ArtifactKind {
    /// Delete an ArtifactGenerator.
    Generator(Name),
}

/// Runs `delete`.
pub async fn run(args: DeleteArgs) -> anyhow::Result<ExitCode> {
    // The kind and flux's word for it in messages.
    let (kind, human, name) = match &args.what {
        DeleteWhat::Kustomization(n) => ("Kustomization", "kustomization", n),
        DeleteWhat::Helmrelease(n) => ("HelmRelease", "helmrelease", n),
        DeleteWhat::Alert(n) => ("Alert", "alert", n),
        DeleteWhat::AlertProvider(n) => ("Provider", "alert provider", n),
        DeleteWhat::Receiver(n) => ("Receiver", "receiver", n),
        DeleteWhat::Artifact(ArtifactKind::Generator(n)) => {
            ("ArtifactGenerator", "artifactgenerator", n)
        }
        DeleteWhat::Source(SourceKind::Git(n)) => ("GitRepository", "source git", n),
        DeleteWhat::Source(SourceKind::Helm(n)) => ("HelmRepository", "source helm", n),
        DeleteWhat::Source(SourceKind::Chart(n)) => ("HelmChart", "source chart", n),
        DeleteWhat::Source(SourceKind::Oci(n)) => ("OCIRepository", "source oci", n),
        DeleteWhat::Source(SourceKind::Bucket(n)) => ("Bucket", "source bucket", n),
        DeleteWhat::Source(SourceKind::External(n)) => {
            ("ExternalArtifact", "source external-artifact", n)
        }
        DeleteWhat::Image(ImageKind::Repository(n)) => ("ImageRepository", "image repository", n),
        DeleteWhat::Image(ImageKind::Policy(n)) => ("ImagePolicy", "image policy", n),
        DeleteWhat::Image(ImageKind::Update(n)) => {
            ("ImageUpdateAutomation", "image update automation", n)
        }
    };
    let Some(name) = name.name.as_deref().filter(|n| !n.is_empty()) else {
        bail!("{human} name is required");
    };
    let image = matches!(args.what, DeleteWhat::Image(_));
    let known = if image {
        None
    } else {
        Some(resource_of(kind)?.0)
    };
    let cluster = Cluster::connect(&args.kube).await?;
    // The image kinds are found by discovery: a cluster installed before ferroflux shipped
    // their CRDs does not serve them.
    let resource = match known {
        Some(resource) => resource,
        None => image_resource(&cluster, kind).await?,
    };
    let ns = args.kube.namespace.as_str();
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), ns, &resource);
    // It must exist before anyone is asked anything.
    cluster
        .get_named(&api, name, &format!("reading {kind} {ns}/{name}"))
        .await?;
    if !args.silent && !progress::confirm(&format!("Are you sure you want to delete this {human}"))?
    {
        bail!("aborting");
    }
    progress::action(format!("deleting {human} {name} in {ns} namespace"));
    cluster
        .call(
            &format!("deleting {kind} {ns}/{name}"),
            api.delete(name, &DeleteParams::default()),
        )
        .await?;
    progress::success(format!("{human} deleted"));
    Ok(ExitCode::SUCCESS)
}
