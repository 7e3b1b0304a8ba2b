//! `ferroflux create source helm NAME --url URL [--secret-ref] [--interval] [--fetch-timeout]
//! [--pass-credentials] [--export]`: write a HelmRepository as `flux create source helm` does:
//! `--export` prints its YAML (flux's golden, byte for byte); otherwise it is applied and the
//! command waits for the controller to report it ready.
//!
//! Not yet: flux's `--username`/`--password`/`--cert-file`/`--key-file`/`--ca-file` (which
//! create a Secret); give `--secret-ref` to an existing one.

use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj;
use crate::output::progress;
use anyhow::bail;
use clap::{Args, Subcommand};
use ferroflux_api::duration::format_duration;
use ferroflux_api::helmrepository::HelmRepositoryType;
use ferroflux_api::{HelmRepository, HelmRepositorySpec, LocalObjectReference};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use std::process::ExitCode;
use std::time::Duration;

/// `create source <kind>`.
// Parsed once per process: the size difference between the flag sets costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum SourceTarget {
    /// A HelmRepository source.
    Helm(HelmArgs),
    /// A GitRepository source.
    Git(super::source_git::GitArgs),
    /// An OCIRepository source.
    Oci(super::source_oci::OciArgs),
    /// A HelmChart source.
    Chart(super::source_chart::ChartArgs),
    /// A Bucket source.
    Bucket(super::source_bucket::BucketArgs),
}

/// `create source helm`'s flags.
#[derive(Args, Debug)]
pub struct HelmArgs {
    /// The source's name.
    name: String,
    /// The Helm repository address (`https://`, `http://` or `oci://`).
    #[arg(long)]
    url: String,
    /// An existing Secret with the credentials (`username`/`password`).
    #[arg(long)]
    secret_ref: Option<String>,
    /// Send the credentials to chart hosts other than the repository's.
    #[arg(long)]
    pass_credentials: bool,
    /// How often the index is fetched.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Timeout of the index download.
    #[arg(long = "fetch-timeout", value_parser = crate::flags::duration)]
    fetch_timeout: Option<Duration>,
    /// Print the YAML instead of applying it.
    #[arg(long)]
    export: bool,
}

/// The HelmRepository the flags describe.
fn helm_repository(args: &HelmArgs, namespace: &str) -> anyhow::Result<HelmRepository> {
    let oci = args.url.starts_with("oci://");
    if !oci && !args.url.starts_with("http://") && !args.url.starts_with("https://") {
        bail!(
            "url must start with http://, https:// or oci://, got '{}'",
            args.url
        );
    }
    Ok(HelmRepository {
        metadata: ObjectMeta {
            name: Some(args.name.clone()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec: HelmRepositorySpec {
            interval: Some(format_duration(args.interval)),
            url: args.url.clone(),
            secret_ref: args
                .secret_ref
                .clone()
                .map(|name| LocalObjectReference { name }),
            pass_credentials: args.pass_credentials.then_some(true),
            timeout: args.fetch_timeout.map(format_duration),
            r#type: oci.then_some(HelmRepositoryType::Oci),
            // Unset as in flux's output: the API server defaults it.
            provider: None,
            ..Default::default()
        },
        status: None,
    })
}

/// `--export`'s text: a document separator, then the object's YAML.
fn export(repo: &HelmRepository) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(repo)?;
    if let Some(obj) = value.as_object_mut() {
        obj.remove("status");
    }
    Ok(format!("---\n{}", serde_saphyr::to_string(&value)?))
}

/// Runs `create source <kind>`.
pub async fn run(kube: &KubeArgs, what: &SourceTarget) -> anyhow::Result<ExitCode> {
    let helm = match what {
        SourceTarget::Helm(helm) => helm,
        SourceTarget::Git(git) => return super::source_git::run(kube, git).await,
        SourceTarget::Oci(oci) => return super::source_oci::run(kube, oci).await,
        SourceTarget::Chart(chart) => return super::source_chart::run(kube, chart).await,
        SourceTarget::Bucket(bucket) => return super::source_bucket::run(kube, bucket).await,
    };
    let repo = helm_repository(helm, &kube.namespace)?;
    if helm.export {
        print!("{}", export(&repo)?);
        return Ok(ExitCode::SUCCESS);
    }
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        let ns = kube.namespace.as_str();
        progress::generate("generating HelmRepository source");
        progress::action("applying HelmRepository source");
        let api: Api<HelmRepository> = Api::namespaced(cluster.client.clone(), ns);
        let params = PatchParams::apply("ferroflux").force();
        cluster
            .call(
                "applying HelmRepository",
                api.patch(&helm.name, &params, &Patch::Apply(&repo)),
            )
            .await?;
        progress::success("source created");
        let words = fluxobj::SourceWait {
            label: "HelmRepository source",
            // An OCI repository keeps no artifact: nothing to name.
            missing_artifact: None,
        };
        fluxobj::wait_for_artifact::<HelmRepository>(&cluster, ns, &helm.name, deadline, words)
            .await
    }
    .await;
    fluxobj::exit_code(result, "the HelmRepository stays applied")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        what: SourceTarget,
    }

    fn exported(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(args).unwrap();
        let SourceTarget::Helm(helm) = &cli.what else {
            panic!("not a helm source")
        };
        export(&helm_repository(helm, "flux-system").unwrap()).unwrap()
    }

    /// flux's goldens (cmd/flux/testdata/create_source_helm), with `{{ .fluxns }}` filled in.
    #[test]
    fn export_matches_flux() {
        let golden = |f: &str| {
            std::fs::read_to_string(format!(
                "{}/tests/fixtures/goldens/create_source_helm/{f}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
            .replace("{{ .fluxns }}", "flux-system")
        };
        assert_eq!(
            exported(&[
                "x",
                "helm",
                "podinfo",
                "--url",
                "https://stefanprodan.github.io/charts/podinfo",
                "--interval",
                "5m"
            ]),
            golden("https.golden")
        );
        assert_eq!(
            exported(&[
                "x",
                "helm",
                "podinfo",
                "--url",
                "oci://ghcr.io/stefanprodan/charts/podinfo",
                "--interval",
                "5m"
            ]),
            golden("oci.golden")
        );
        assert_eq!(
            exported(&[
                "x",
                "helm",
                "podinfo",
                "--url",
                "oci://ghcr.io/stefanprodan/charts/podinfo",
                "--interval",
                "5m",
                "--secret-ref",
                "creds"
            ]),
            golden("oci-with-secret.golden")
        );
    }
}
