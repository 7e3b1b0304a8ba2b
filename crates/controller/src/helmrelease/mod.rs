//! The HelmRelease reconciler's parts (helm-controller's pipeline): where the chart comes from
//! (`chart`: the HelmChart template or `chartRef`, and the source's readiness), the values
//! (`values`: `valuesFrom` and inline values in Flux's order, their digest) and what is done to
//! the rendered manifests before they are applied (`postrender`: kustomize post-renderers,
//! owner labels, `commonMetadata`), helm-controller's release state machine (`state`), drift
//! detection (`drift`), the metadata of its events (`eventmeta`) and the reconciler that runs
//! them (`reconciler`); a release rendered without installing it (`template`: what
//! `build`/`diff helmrelease` and `fleet diff` show).

pub mod chart;
pub mod drift;
pub mod eventmeta;
pub mod postrender;
pub mod reconciler;
pub mod state;
pub mod template;
pub mod values;
