//! Rust types of the CRDs ferroflux serves, compatible with Flux's APIs.
//!
//! Owns: `GitRepository`, `HelmRepository`, `HelmChart`, `OCIRepository` (`source.toolkit.fluxcd.io/v1`),
//! `Kustomization` (`kustomize.toolkit.fluxcd.io/v1`), `HelmRelease`
//! (`helm.toolkit.fluxcd.io/v2`), `ArtifactGenerator` (`source.extensions.fluxcd.io/v1beta1`),
//! `ExternalArtifact` (`source.toolkit.fluxcd.io/v1`), `Provider` and `Alert`
//! (`notification.toolkit.fluxcd.io/v1beta3`) and `Receiver` (`notification.toolkit.fluxcd.io/v1`)
//! with their specs and statuses, `Bucket` (`source.toolkit.fluxcd.io/v1`), `ImageRepository`,
//! `ImagePolicy` and `ImageUpdateAutomation` (`image.toolkit.fluxcd.io/v1`), the generated CRD
//! manifests,
//! the condition types and reasons tooling matches on (and the one setter that writes them),
//! the [`FluxObject`] trait over every kind, inventory ids, revision strings and Go
//! duration parsing. It holds no behaviour that talks to a cluster or to Git.

pub mod artifactgenerator;
pub mod bucket;
pub mod common;
pub mod conditions;
mod crd;
pub mod duration;
pub mod gitrepository;
pub mod helmchart;
pub mod helmrelease;
pub mod helmrepository;
pub mod image;
pub mod inventory;
pub mod kustomization;
pub mod notification;
pub mod object;
pub mod ocirepository;
pub mod revision;

pub use artifactgenerator::{
    ArtifactGenerator, ArtifactGeneratorSpec, ArtifactGeneratorStatus, ExternalArtifact,
    ExternalArtifactSpec, ExternalArtifactStatus,
};
pub use bucket::{Bucket, BucketProvider, BucketSpec, BucketStatus};
pub use common::{Artifact, HasArtifact, LocalObjectReference, SecretKeyReference, Selector};
pub use gitrepository::{GitRepository, GitRepositoryRef, GitRepositorySpec, GitRepositoryStatus};
pub use helmchart::{HelmChart, HelmChartSpec, HelmChartStatus};
pub use helmrelease::{HelmRelease, HelmReleaseSpec, HelmReleaseStatus};
pub use helmrepository::{HelmRepository, HelmRepositorySpec, HelmRepositoryStatus};
pub use image::{
    ImagePolicy, ImagePolicySpec, ImagePolicyStatus, ImageRepository, ImageRepositorySpec,
    ImageRepositoryStatus, ImageUpdateAutomation, ImageUpdateAutomationSpec,
};
pub use inventory::{ObjectId, ObjectIdError};
pub use kustomization::{Kustomization, KustomizationSpec, KustomizationStatus};
pub use notification::{
    Alert, AlertSpec, Provider, ProviderSpec, Receiver, ReceiverSpec, ReceiverStatus,
};
pub use object::FluxObject;
pub use ocirepository::{OCIRepository, OCIRepositorySpec, OCIRepositoryStatus};
pub use revision::{Revision, short_revision};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The finalizer every Flux object carries while it owns something outside itself.
pub const FINALIZER: &str = "finalizers.fluxcd.io";
/// Any new value asks for an immediate reconciliation.
pub const RECONCILE_REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

/// The CRDs ferroflux serves, in the order they must be applied.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        crd::flux_shaped(GitRepository::crd()),
        crd::flux_shaped(Kustomization::crd()),
        crd::flux_shaped(HelmRepository::crd()),
        crd::flux_shaped(HelmChart::crd()),
        crd::flux_shaped(HelmRelease::crd()),
        crd::flux_shaped(OCIRepository::crd()),
        crd::flux_shaped(ExternalArtifact::crd()),
        crd::flux_shaped(ArtifactGenerator::crd()),
        crd::flux_shaped(Provider::crd()),
        crd::flux_shaped(Alert::crd()),
        crd::flux_shaped(Receiver::crd()),
        crd::flux_shaped(Bucket::crd()),
        crd::flux_shaped(ImageRepository::crd()),
        crd::flux_shaped(ImagePolicy::crd()),
        crd::flux_shaped(ImageUpdateAutomation::crd()),
    ]
}

/// The CRDs as one multi-document YAML stream.
pub fn crds_yaml() -> Result<String, serde_saphyr::ser::Error> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&crd)?);
    }
    Ok(out)
}
