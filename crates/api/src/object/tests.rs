//! The kinds' constants agree with their CRDs.

use super::FluxObject;

fn kind_matches_the_crd<K: FluxObject>() {
    assert_eq!(K::KIND, K::kind(&()));
}

#[test]
fn every_kind_names_itself_as_its_crd_does() {
    kind_matches_the_crd::<crate::GitRepository>();
    kind_matches_the_crd::<crate::HelmRepository>();
    kind_matches_the_crd::<crate::HelmChart>();
    kind_matches_the_crd::<crate::OCIRepository>();
    kind_matches_the_crd::<crate::Kustomization>();
    kind_matches_the_crd::<crate::HelmRelease>();
    kind_matches_the_crd::<crate::ExternalArtifact>();
    kind_matches_the_crd::<crate::ArtifactGenerator>();
    kind_matches_the_crd::<crate::Alert>();
    kind_matches_the_crd::<crate::Provider>();
    kind_matches_the_crd::<crate::Receiver>();
    kind_matches_the_crd::<crate::Bucket>();
}

#[test]
fn sources_say_which_revision_they_fetched() {
    let repo: crate::GitRepository = serde_json::from_value(serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {"url": "https://example.com/r", "interval": "1m", "suspend": true},
        "status": {
            "observedGeneration": 3,
            "lastHandledReconcileAt": "now",
            "artifact": {
                "path": "p", "url": "u", "revision": "main@sha1:abc",
                "digest": "sha256:00", "lastUpdateTime": "2026-01-01T00:00:00Z"
            }
        }
    }))
    .unwrap();
    assert_eq!(repo.success_message(), "fetched revision main@sha1:abc");
    assert!(repo.suspended());
    assert_eq!(repo.observed_generation(), Some(3));
    assert_eq!(repo.last_handled_reconcile_at(), Some("now"));
    assert!(repo.conditions().is_empty());
}
