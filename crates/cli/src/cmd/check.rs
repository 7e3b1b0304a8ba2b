//! `ferroflux check [--pre]`: the prerequisites and the health of an installation, in the words
//! of `flux check`: the Kubernetes version, the installed version and whether it was
//! bootstrapped, the controller Deployment, and the CRDs with the API versions this CLI needs;
//! beyond flux, the Services `install` makes (artifacts, the events endpoint, the webhook
//! receiver), each reaching a port a ready controller Pod declares.

use anyhow::Result;
use clap::Args;
use ferroflux_apply::applier::Applier;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};

use crate::cluster::{Cluster, KubeArgs};
use crate::cmd::install::{self, FIELD_MANAGER};
use crate::cmd::version::ClusterInfo;
use crate::exit;
use crate::output::progress;
use ferroflux_bootstrap::manifests::{
    self, CONTROLLER, InstallOptions, PART_OF_LABEL, PART_OF_VALUE, VERSION,
};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::process::ExitCode;

/// Oldest Kubernetes the engine supports, in Flux's constraint notation.
const KUBERNETES_CONSTRAINT: &str = ">=1.33.0-0";
const KUBERNETES_MIN: (u64, u64, u64) = (1, 33, 0);

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Only check the prerequisites (the Kubernetes version).
    #[arg(long)]
    pre: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

pub async fn run(args: CheckArgs) -> Result<ExitCode> {
    if check(&args).await? {
        Ok(ExitCode::SUCCESS)
    } else {
        // flux exits 1 after printing; the lines above already say what failed.
        Ok(ExitCode::from(exit::ERROR))
    }
}

fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

async fn check(args: &CheckArgs) -> Result<bool> {
    progress::action(format_args!("checking prerequisites"));
    let client = Cluster::connect(&args.kube).await?.client;
    let mut ok = true;
    match client.apiserver_version().await {
        Ok(info) => match parse_version(&info.git_version) {
            Some(v) if v >= KUBERNETES_MIN => progress::success(format_args!(
                "Kubernetes {}.{}.{} {KUBERNETES_CONSTRAINT}",
                v.0, v.1, v.2
            )),
            Some(_) => {
                ok = false;
                progress::failure(format_args!(
                    "Kubernetes version {} does not match {KUBERNETES_CONSTRAINT}",
                    info.git_version
                ));
            }
            None => {
                ok = false;
                progress::failure(format_args!("Kubernetes version can't be determined"));
            }
        },
        Err(e) => {
            ok = false;
            progress::failure(format_args!("Kubernetes API call failed: {e}"));
        }
    }
    if args.pre {
        if ok {
            progress::success(format_args!("prerequisites checks passed"));
        }
        return Ok(ok);
    }
    if !ok {
        progress::failure(format_args!("check failed"));
        return Ok(false);
    }

    progress::action(format_args!("checking version in cluster"));
    match ClusterInfo::read(&client).await {
        Ok(Some(info)) => {
            let distribution = info.distribution();
            if !distribution.is_empty() {
                progress::success(format_args!("distribution: {distribution}"));
            }
            progress::success(format_args!("bootstrapped: {}", info.bootstrapped));
            if info.part_of.as_deref() == Some(PART_OF_VALUE)
                && !info.version.is_empty()
                && info.version != VERSION
                && info.managed_by.is_none()
            {
                progress::warning(format_args!(
                    "the cluster runs {} and this CLI is {VERSION}: run bootstrap (or \
                     install) again to upgrade",
                    info.version
                ));
            }
        }
        Ok(None) => {
            ok = false;
            progress::failure(format_args!(
                "checking failed: customresourcedefinitions.apiextensions.k8s.io \
                 \"gitrepositories.source.toolkit.fluxcd.io\" not found"
            ));
        }
        Err(e) => {
            ok = false;
            progress::failure(format_args!("checking failed: {e:#}"));
        }
    }

    progress::action(format_args!("checking controllers"));
    let ns = &args.kube.namespace;
    let selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    // ferroflux's own controller (not Flux's): its Services are checked too.
    let mut ours = false;
    match deployments.list(&selector).await {
        Ok(list) if list.items.is_empty() => {
            ok = false;
            progress::failure(format_args!(
                "no controllers found in the '{ns}' namespace with the label selector \
                 '{PART_OF_LABEL}={PART_OF_VALUE}'"
            ));
        }
        Ok(list) => {
            let applier = Applier::new(client.clone(), FIELD_MANAGER);
            for d in &list.items {
                let name = d.metadata.name.clone().unwrap_or_default();
                ours |= name == CONTROLLER;
                let reference = install::object_ref("apps/v1", "Deployment", ns, &name);
                match applier.wait_for(&[reference], args.kube.timeout).await {
                    Ok(()) => progress::success(format_args!("{name}: deployment ready")),
                    Err(e) => {
                        ok = false;
                        progress::failure(format_args!("{name}: {e}"));
                    }
                }
                let containers = d
                    .spec
                    .template
                    .spec
                    .as_ref()
                    .map(|s| s.containers.clone())
                    .unwrap_or_default();
                for c in containers {
                    progress::action(format_args!("{}", c.image.unwrap_or_default()));
                }
            }
        }
        Err(e) => {
            ok = false;
            progress::failure(format_args!("cannot list the controllers: {e}"));
        }
    }

    if ours {
        progress::action(format_args!("checking services"));
        if !check_services(&client, ns, &selector).await {
            ok = false;
        }
    }

    progress::action(format_args!("checking crds"));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.list(&selector).await {
        Ok(list) => {
            if !check_crds(&list.items) {
                ok = false;
            }
        }
        Err(e) => {
            ok = false;
            progress::failure(format_args!("cannot list the crds: {e}"));
        }
    }

    if ok {
        progress::success(format_args!("all checks passed"));
    } else {
        progress::failure(format_args!("check failed"));
    }
    Ok(ok)
}

/// Every CRD labelled as part of Flux, in the API server's order (by name), with its stored
/// version, as flux lists them: ours and those of controllers installed beside them (image
/// automation, Bucket…). Ours must also serve every version this CLI uses; one of ours that is
/// missing fails the check.
fn check_crds(installed: &[CustomResourceDefinition]) -> bool {
    let mut ok = true;
    let wanted = ferroflux_api::crds();
    let served_versions = |crd: &CustomResourceDefinition| -> Vec<String> {
        crd.spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.clone())
            .collect()
    };
    let mut installed: Vec<&CustomResourceDefinition> = installed.iter().collect();
    installed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for found in &installed {
        let name = found.metadata.name.clone().unwrap_or_default();
        if let Some(ours) = wanted
            .iter()
            .find(|w| w.metadata.name.as_deref() == Some(name.as_str()))
        {
            let served = served_versions(found);
            let missing: Vec<String> = served_versions(ours)
                .into_iter()
                .filter(|v| !served.contains(v))
                .collect();
            if !missing.is_empty() {
                ok = false;
                progress::failure(format_args!("{name} does not serve {}", missing.join(", ")));
                continue;
            }
        }
        let stored = found
            .status
            .as_ref()
            .and_then(|s| s.stored_versions.clone())
            .unwrap_or_default();
        match stored.last() {
            Some(v) => progress::success(format_args!("{name}/{v}")),
            None => {
                ok = false;
                progress::failure(format_args!("no stored versions for {name}"));
            }
        }
    }
    for ours in &wanted {
        let name = ours.metadata.name.clone().unwrap_or_default();
        if !installed
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some(name.as_str()))
        {
            ok = false;
            progress::failure(format_args!("{name} is not installed"));
        }
    }
    ok
}

/// The Services `install` makes for the controller: each must exist, select a ready Pod and
/// reach a port that Pod's container declares (by name or number). flux check has no such step;
/// a Service that misses its Pod is what leaves Receivers' webhooks and posted events unanswered.
async fn check_services(client: &kube::Client, ns: &str, selector: &ListParams) -> bool {
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let found = match services.list(selector).await {
        Ok(list) => list.items,
        Err(e) => {
            progress::failure(format_args!("cannot list the services: {e}"));
            return false;
        }
    };
    let expected: Vec<String> = manifests::components(&InstallOptions::default())
        .unwrap_or_default()
        .iter()
        .filter(|o| o["kind"] == "Service")
        .filter_map(|o| o["metadata"]["name"].as_str().map(String::from))
        .collect();
    let mut ok = true;
    for name in &expected {
        if !found
            .iter()
            .any(|s| s.metadata.name.as_deref() == Some(name.as_str()))
        {
            ok = false;
            progress::failure(format_args!(
                "{name}: service not found (install again to add it)"
            ));
        }
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    for svc in &found {
        let name = svc.metadata.name.clone().unwrap_or_default();
        let spec = svc.spec.clone().unwrap_or_default();
        let Some(wanted) = spec.selector.filter(|s| !s.is_empty()) else {
            continue;
        };
        let labels: Vec<String> = wanted.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let ready: Vec<Pod> = match pods
            .list(&ListParams::default().labels(&labels.join(",")))
            .await
        {
            Ok(list) => list.items.into_iter().filter(pod_ready).collect(),
            Err(e) => {
                ok = false;
                progress::failure(format_args!("{name}: cannot list its pods: {e}"));
                continue;
            }
        };
        if ready.is_empty() {
            ok = false;
            progress::failure(format_args!("{name}: no ready pod matches its selector"));
            continue;
        }
        for port in spec.ports.unwrap_or_default() {
            let target = port
                .target_port
                .clone()
                .unwrap_or(IntOrString::Int(port.port));
            match ready.iter().find_map(|p| container_port(p, &target)) {
                Some(number) => progress::success(format_args!(
                    "{name}: service port {} → {number}",
                    port.port
                )),
                None => {
                    ok = false;
                    let target = match &target {
                        IntOrString::Int(n) => n.to_string(),
                        IntOrString::String(s) => format!("'{s}'"),
                    };
                    progress::failure(format_args!(
                        "{name}: service port {} targets {target}, which no ready pod declares",
                        port.port
                    ));
                }
            }
        }
    }
    ok
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The container port of `pod` that `target` names (by name) or is (by number).
fn container_port(pod: &Pod, target: &IntOrString) -> Option<i32> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| match target {
            IntOrString::Int(n) => p.container_port == *n,
            IntOrString::String(s) => p.name.as_deref() == Some(s.as_str()),
        })
        .map(|p| p.container_port)
}
