//! What every Flux kind ferroflux serves has in common, behind one trait: its kind, whether it is
//! suspended, its conditions and the status fields that say which request and generation the
//! controller last handled. Callers (the day-2 commands, the reconcilers) write their rules once
//! over [`FluxObject`] instead of once per kind, as fluxcd/pkg's `runtime/conditions` getter
//! does over `meta.ObjectWithConditions`.

use crate::{Artifact, Kustomization};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A namespaced Flux object with Flux's status conventions.
pub trait FluxObject:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// `Kustomization`, `GitRepository`.
    const KIND: &'static str;
    /// How flux's suspend/resume messages name the kind: `kustomization`, `source git`.
    const HUMAN_KIND: &'static str;
    /// `spec.suspend`.
    fn suspended(&self) -> bool;
    /// `status.conditions`, empty when there is no status yet.
    fn conditions(&self) -> &[Condition];
    /// `status.observedGeneration`.
    fn observed_generation(&self) -> Option<i64>;
    /// `status.lastHandledReconcileAt`: the last `reconcile.fluxcd.io/requestedAt` handled.
    fn last_handled_reconcile_at(&self) -> Option<&str>;
    /// What flux prints once the object is ready.
    fn success_message(&self) -> String;
    /// An object no controller reconciles (Alert and Provider since notification v1beta3):
    /// it has no status, so it is ready as soon as it exists, as flux's `isStatic` objects are.
    const STATIC: bool = false;
}

/// The four accessors of a kind whose spec has `suspend` and whose status has `conditions`,
/// `observedGeneration` and `lastHandledReconcileAt`, as most of Flux's kinds do.
macro_rules! status_accessors {
    () => {
        fn suspended(&self) -> bool {
            self.spec.suspend.unwrap_or(false)
        }
        fn conditions(&self) -> &[Condition] {
            self.status
                .as_ref()
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or(&[])
        }
        fn observed_generation(&self) -> Option<i64> {
            self.status.as_ref().and_then(|s| s.observed_generation)
        }
        fn last_handled_reconcile_at(&self) -> Option<&str> {
            self.status
                .as_ref()
                .and_then(|s| s.last_handled_reconcile_at.as_deref())
        }
    };
}

/// What flux prints once a source is ready: `fetched revision <artifact's revision>`.
fn fetched(artifact: Option<&Artifact>) -> String {
    let revision = artifact.map(|a| a.revision.as_str()).unwrap_or_default();
    format!("fetched revision {revision}")
}

impl FluxObject for Kustomization {
    const KIND: &'static str = "Kustomization";
    const HUMAN_KIND: &'static str = "kustomization";
    status_accessors!();
    fn success_message(&self) -> String {
        let revision = self
            .status
            .as_ref()
            .and_then(|s| s.last_applied_revision.as_deref())
            .unwrap_or_default();
        format!("applied revision {revision}")
    }
}

/// A source kind: the usual status accessors, and `fetched revision <artifact's revision>` once
/// ready.
macro_rules! source_object {
    ($kind:ident, $human:literal) => {
        impl FluxObject for crate::$kind {
            const KIND: &'static str = stringify!($kind);
            const HUMAN_KIND: &'static str = $human;
            status_accessors!();
            fn success_message(&self) -> String {
                fetched(self.status.as_ref().and_then(|s| s.artifact.as_ref()))
            }
        }
    };
}

source_object!(GitRepository, "source git");
source_object!(HelmRepository, "source helm");
source_object!(HelmChart, "source chart");
source_object!(OCIRepository, "source oci");
source_object!(Bucket, "source bucket");

impl FluxObject for crate::HelmRelease {
    const KIND: &'static str = "HelmRelease";
    const HUMAN_KIND: &'static str = "helmrelease";
    status_accessors!();
    /// flux prints the chart version of the newest release (`applied revision 6.3.5`).
    fn success_message(&self) -> String {
        let revision = self
            .status
            .as_ref()
            .and_then(|s| s.history.as_ref())
            .and_then(|h| h.first())
            .map(|s| s.chart_version.clone())
            .or_else(|| {
                self.status
                    .as_ref()
                    .and_then(|s| s.last_attempted_revision.clone())
            })
            .unwrap_or_default();
        format!("applied revision {revision}")
    }
}

impl FluxObject for crate::ExternalArtifact {
    const KIND: &'static str = "ExternalArtifact";
    const HUMAN_KIND: &'static str = "externalartifact";
    /// An ExternalArtifact has no `suspend`: its generator is suspended instead.
    fn suspended(&self) -> bool {
        false
    }
    fn conditions(&self) -> &[Condition] {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or(&[])
    }
    /// Its status has no `observedGeneration`.
    fn observed_generation(&self) -> Option<i64> {
        None
    }
    fn last_handled_reconcile_at(&self) -> Option<&str> {
        None
    }
    fn success_message(&self) -> String {
        fetched(self.status.as_ref().and_then(|s| s.artifact.as_ref()))
    }
}

impl FluxObject for crate::ArtifactGenerator {
    const KIND: &'static str = "ArtifactGenerator";
    const HUMAN_KIND: &'static str = "artifactgenerator";
    /// Suspended by the `source.extensions.fluxcd.io/reconcile: Disabled` annotation.
    fn suspended(&self) -> bool {
        self.is_disabled()
    }
    fn conditions(&self) -> &[Condition] {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or(&[])
    }
    /// Its status has no `observedGeneration`; the Ready condition carries it.
    fn observed_generation(&self) -> Option<i64> {
        self.conditions()
            .iter()
            .find(|c| c.type_ == crate::conditions::READY)
            .and_then(|c| c.observed_generation)
    }
    fn last_handled_reconcile_at(&self) -> Option<&str> {
        self.status
            .as_ref()
            .and_then(|s| s.last_handled_reconcile_at.as_deref())
    }
    fn success_message(&self) -> String {
        let n = self
            .status
            .as_ref()
            .and_then(|s| s.inventory.as_ref())
            .map_or(0, Vec::len);
        format!("generated {n} artifact(s)")
    }
}

impl FluxObject for crate::Receiver {
    const KIND: &'static str = "Receiver";
    const HUMAN_KIND: &'static str = "receiver";
    status_accessors!();
    fn success_message(&self) -> String {
        "Receiver reconciliation completed".into()
    }
}

/// Alert and Provider: a spec with `suspend`, no status.
macro_rules! static_object {
    ($kind:ident, $human:literal) => {
        impl FluxObject for crate::$kind {
            const KIND: &'static str = stringify!($kind);
            const HUMAN_KIND: &'static str = $human;
            const STATIC: bool = true;
            fn suspended(&self) -> bool {
                self.spec.suspend.unwrap_or(false)
            }
            fn conditions(&self) -> &[Condition] {
                &[]
            }
            fn observed_generation(&self) -> Option<i64> {
                None
            }
            fn last_handled_reconcile_at(&self) -> Option<&str> {
                None
            }
            fn success_message(&self) -> String {
                concat!(stringify!($kind), " reconciliation completed").into()
            }
        }
    };
}

impl FluxObject for crate::ImageRepository {
    const KIND: &'static str = "ImageRepository";
    const HUMAN_KIND: &'static str = "image repository";
    status_accessors!();
    fn success_message(&self) -> String {
        let tags = self
            .status
            .as_ref()
            .and_then(|s| s.last_scan_result.as_ref())
            .map_or(0, |r| r.tag_count);
        format!("scan fetched {tags} tags")
    }
}

impl FluxObject for crate::ImagePolicy {
    const KIND: &'static str = "ImagePolicy";
    const HUMAN_KIND: &'static str = "image policy";
    status_accessors!();
    fn success_message(&self) -> String {
        let latest = self
            .status
            .as_ref()
            .and_then(|s| s.latest_ref.as_ref())
            .map(ToString::to_string)
            .unwrap_or_default();
        format!("selected ref {latest}")
    }
}

impl FluxObject for crate::ImageUpdateAutomation {
    const KIND: &'static str = "ImageUpdateAutomation";
    const HUMAN_KIND: &'static str = "image update automation";
    status_accessors!();
    /// flux prints the Ready message, else when the automation last ran.
    fn success_message(&self) -> String {
        if let Some(ready) = self
            .conditions()
            .iter()
            .find(|c| c.type_ == crate::conditions::READY)
        {
            return ready.message.clone();
        }
        match self
            .status
            .as_ref()
            .and_then(|s| s.last_automation_run_time.as_deref())
        {
            Some(time) => format!("last run {time}"),
            None => "automation not yet run".into(),
        }
    }
}

static_object!(Alert, "alert");
static_object!(Provider, "alert provider");

#[cfg(test)]
mod tests;
