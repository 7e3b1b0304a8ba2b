//! `ferroflux uninstall`: removes the engine and its CRDs as `flux uninstall` does, leaving what
//! the Kustomizations applied in place: the controller goes first, then the finalizers of every
//! GitRepository, HelmRepository, HelmChart, Kustomization and HelmRelease (so deleting them
//! prunes and uninstalls nothing), then the CRDs (which takes the Flux objects with them), then
//! the namespace unless `--keep-namespace`.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;

use crate::cluster::{Cluster, KubeArgs};
use crate::output::progress;
use ferroflux_bootstrap::manifests::{PART_OF_LABEL, PART_OF_VALUE};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct UninstallArgs {
    /// Skip namespace deletion.
    #[arg(long)]
    keep_namespace: bool,
    /// Only print the objects that would be deleted.
    #[arg(long)]
    dry_run: bool,
    /// Delete components without asking for confirmation.
    #[arg(short = 's', long)]
    silent: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

pub async fn run(args: UninstallArgs) -> Result<ExitCode> {
    if !args.dry_run && !args.silent && !confirm()? {
        bail!("aborting");
    }
    uninstall(&args).await?;
    Ok(ExitCode::SUCCESS)
}

fn confirm() -> Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("refusing to uninstall without confirmation: pass --silent to skip the prompt");
    }
    eprint!("Are you sure you want to delete Flux and its custom resource definitions? [y/N] ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("cannot read the answer")?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn uninstall(args: &UninstallArgs) -> Result<()> {
    let client = Cluster::connect(&args.kube).await?.client;
    let ns = args.kube.namespace.as_str();
    let dry = if args.dry_run { " (dry run)" } else { "" };
    let mut delete = DeleteParams::default();
    let mut patch = PatchParams::default();
    if args.dry_run {
        delete = delete.dry_run();
        patch = patch.dry_run();
    }
    let selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"));
    let mut failures = 0;

    progress::action(format_args!("deleting components in {ns} namespace"));
    let namespaced = [
        resource("apps", "v1", "Deployment", "deployments"),
        resource("", "v1", "Service", "services"),
        resource(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
        ),
        resource("", "v1", "ServiceAccount", "serviceaccounts"),
    ];
    let cluster = [
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
        ),
    ];
    for ar in namespaced.iter().chain(cluster.iter()) {
        let is_namespaced = namespaced.iter().any(|n| n.kind == ar.kind);
        let api: Api<DynamicObject> = if is_namespaced {
            Api::namespaced_with(client.clone(), ns, ar)
        } else {
            Api::all_with(client.clone(), ar)
        };
        // A kind the cluster does not serve has nothing of ours.
        let Ok(list) = api.list(&selector).await else {
            continue;
        };
        for obj in list.items {
            let name = obj.metadata.name.clone().unwrap_or_default();
            let shown = if is_namespaced {
                format!("{}/{ns}/{name}", ar.kind)
            } else {
                format!("{}/{name}", ar.kind)
            };
            match api.delete(&name, &delete).await {
                Ok(_) => progress::success(format_args!("{shown} deleted{dry}")),
                Err(e) => {
                    failures += 1;
                    progress::failure(format_args!("{shown} deletion failed: {}", message(&e)));
                }
            }
        }
    }

    progress::action(format_args!(
        "deleting toolkit.fluxcd.io finalizers in all namespaces"
    ));
    for ar in [
        resource(
            "source.toolkit.fluxcd.io",
            "v1",
            "GitRepository",
            "gitrepositories",
        ),
        resource(
            "source.toolkit.fluxcd.io",
            "v1",
            "HelmRepository",
            "helmrepositories",
        ),
        resource("source.toolkit.fluxcd.io", "v1", "HelmChart", "helmcharts"),
        resource(
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "Kustomization",
            "kustomizations",
        ),
        // Without its finalizer, deleting the CRD leaves every Helm release installed.
        resource(
            "helm.toolkit.fluxcd.io",
            "v2",
            "HelmRelease",
            "helmreleases",
        ),
    ] {
        let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let Ok(list) = all.list(&ListParams::default()).await else {
            continue;
        };
        for obj in list.items {
            let name = obj.metadata.name.clone().unwrap_or_default();
            let obj_ns = obj.metadata.namespace.clone().unwrap_or_default();
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &obj_ns, &ar);
            let body = serde_json::json!({"metadata": {"finalizers": null}});
            match api.patch(&name, &patch, &Patch::Merge(&body)).await {
                Ok(_) => progress::success(format_args!(
                    "{}/{obj_ns}/{name} finalizers deleted{dry}",
                    ar.kind
                )),
                Err(e) => {
                    failures += 1;
                    progress::failure(format_args!(
                        "{}/{obj_ns}/{name} removing finalizers failed: {}",
                        ar.kind,
                        message(&e)
                    ));
                }
            }
        }
    }

    progress::action(format_args!(
        "deleting toolkit.fluxcd.io custom resource definitions"
    ));
    let crd = resource(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd);
    let list = crds
        .list(&selector)
        .await
        .context("cannot list the custom resource definitions")?;
    for obj in list.items {
        let name = obj.metadata.name.clone().unwrap_or_default();
        match crds.delete(&name, &delete).await {
            Ok(_) => {
                progress::success(format_args!("CustomResourceDefinition/{name} deleted{dry}"))
            }
            Err(e) => {
                failures += 1;
                progress::failure(format_args!(
                    "CustomResourceDefinition/{name} deletion failed: {}",
                    message(&e)
                ));
            }
        }
    }

    if !args.keep_namespace {
        let nsr = resource("", "v1", "Namespace", "namespaces");
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &nsr);
        match api.delete(ns, &delete).await {
            Ok(_) => progress::success(format_args!("Namespace/{ns} deleted{dry}")),
            Err(e) => {
                failures += 1;
                progress::failure(format_args!(
                    "Namespace/{ns} deletion failed: {}",
                    message(&e)
                ));
            }
        }
    }
    if failures > 0 {
        bail!("uninstall failed: {failures} object(s) could not be deleted");
    }
    progress::success(format_args!("uninstall finished"));
    Ok(())
}

fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}
