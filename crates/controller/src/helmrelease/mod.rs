//! The HelmRelease reconciler's parts (helm-controller's pipeline): where the chart comes from
//! (`chart`: the HelmChart template or `chartRef`, and the source's readiness), the values
//! (`values`: `valuesFrom` and inline values in Flux's order, their digest) and what is done to
//! the rendered manifests before they are applied (`postrender`: kustomize post-renderers,
//! owner labels, `commonMetadata`).

pub mod chart;
pub mod drift;
pub mod postrender;
pub mod state;
pub mod values;
