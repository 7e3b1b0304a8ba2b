//! `ferroflux create source bucket NAME --bucket-name B --endpoint HOST[:PORT] [--provider]
//! [--region] [--insecure] [--access-key --secret-key | --secret-ref] [--proxy-secret-ref]
//! [--ignore-paths] [--interval] [--fetch-timeout] [--label] [--export]`: a Bucket as `flux create
//! source bucket` writes it. `--export` prints it; otherwise the keys (when both are given and
//! no `--secret-ref`) are applied as Secret `bucket-NAME`, the Bucket is created or updated, and
//! the command waits until the controller reports it ready with an artifact, naming the revision.

use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj;
use crate::output::progress;
use anyhow::{anyhow, bail};
use clap::Args;
use ferroflux_api::bucket::BucketProvider;
use ferroflux_api::duration::format_duration;
use ferroflux_api::{Bucket, BucketSpec, LocalObjectReference};
use kube::api::ObjectMeta;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// `create source bucket`'s flags (flux's names).
#[derive(Args, Debug)]
pub struct BucketArgs {
    /// The source's name.
    name: Option<String>,
    /// The S3 compatible storage provider name: generic, aws, azure or gcp.
    #[arg(long, default_value = "generic")]
    provider: String,
    /// The bucket name.
    #[arg(long = "bucket-name")]
    bucket_name: Option<String>,
    /// The bucket endpoint address.
    #[arg(long)]
    endpoint: Option<String>,
    /// The bucket access key.
    #[arg(long)]
    access_key: Option<String>,
    /// The bucket secret key.
    #[arg(long)]
    secret_key: Option<String>,
    /// The bucket region.
    #[arg(long)]
    region: Option<String>,
    /// For when connecting to a non-TLS S3 HTTP endpoint.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    insecure: Option<bool>,
    /// The name of an existing secret containing credentials.
    #[arg(long)]
    secret_ref: Option<String>,
    /// The name of an existing secret containing the proxy address and credentials.
    #[arg(long)]
    proxy_secret_ref: Option<String>,
    /// Paths to ignore in the bucket (comma-separated).
    #[arg(long, value_delimiter = ',')]
    ignore_paths: Vec<String>,
    /// How often the bucket is checked for changes.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
    /// Timeout of the fetch operations.
    #[arg(long = "fetch-timeout", value_parser = crate::flags::duration)]
    fetch_timeout: Option<Duration>,
    /// Labels of the object, `key=value` (comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Print the YAML instead of applying it.
    #[arg(long)]
    export: bool,
}

fn non_empty(v: &Option<String>) -> Option<String> {
    v.clone().filter(|s| !s.is_empty())
}

/// The Bucket the flags describe, with flux's checks and messages.
fn bucket(a: &BucketArgs, namespace: &str) -> anyhow::Result<Bucket> {
    let Some(name) = non_empty(&a.name) else {
        bail!("name is required");
    };
    let provider = match a.provider.trim() {
        "" => bail!(
            "no source bucket provider given, please specify the S3 compatible storage provider name"
        ),
        "generic" => BucketProvider::Generic,
        "aws" => BucketProvider::Aws,
        "azure" => BucketProvider::Azure,
        "gcp" => BucketProvider::Gcp,
        other => bail!(
            "source bucket provider '{other}' is not supported, must be one of: generic, aws, azure, gcp"
        ),
    };
    let Some(bucket_name) = non_empty(&a.bucket_name) else {
        bail!("bucket-name is required");
    };
    let Some(endpoint) = non_empty(&a.endpoint) else {
        bail!("endpoint is required");
    };
    let mut labels = std::collections::BTreeMap::new();
    for l in &a.labels {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid label format '{l}', must be key=value"))?;
        labels.insert(k.to_string(), v.to_string());
    }
    let reference = |n: Option<String>| n.map(|name| LocalObjectReference { name });
    Ok(Bucket {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_string()),
            labels: (!labels.is_empty()).then_some(labels),
            ..Default::default()
        },
        spec: BucketSpec {
            bucket_name,
            endpoint,
            // flux always writes the provider (`generic` included).
            provider: Some(provider),
            insecure: a.insecure.filter(|i| *i),
            region: non_empty(&a.region),
            interval: format_duration(a.interval),
            ignore: (!a.ignore_paths.is_empty()).then(|| a.ignore_paths.join("\n")),
            timeout: a.fetch_timeout.map(format_duration),
            secret_ref: reference(non_empty(&a.secret_ref)),
            proxy_secret_ref: reference(non_empty(&a.proxy_secret_ref)),
            ..Default::default()
        },
        status: None,
    })
}

/// `--export`'s text: a document separator, then the object's YAML.
fn export(bucket: &Bucket) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(bucket)?;
    if let Some(obj) = value.as_object_mut() {
        obj.remove("status");
    }
    Ok(format!(
        "---\n{}",
        ferroflux_kustomize::render_yaml(std::slice::from_ref(&value))
    ))
}

/// Runs `create source bucket`.
pub async fn run(kube: &KubeArgs, a: &BucketArgs) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let mut wanted = bucket(a, ns)?;
    if a.export {
        print!("{}", export(&wanted)?);
        return Ok(ExitCode::SUCCESS);
    }
    let name = wanted.metadata.name.clone().unwrap_or_default();
    let result = async {
        let cluster = Cluster::connect(kube).await?;
        let deadline = tokio::time::Instant::now() + cluster.timeout;
        progress::generate("generating Bucket source");
        if wanted.spec.secret_ref.is_none()
            && let (Some(ak), Some(sk)) = (non_empty(&a.access_key), non_empty(&a.secret_key))
        {
            let secret_name = format!("bucket-{name}");
            progress::action("applying secret with the bucket credentials");
            let labels: Map<String, Value> = wanted
                .metadata
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            let mut data = Map::new();
            data.insert("accesskey".into(), json!(ak));
            data.insert("secretkey".into(), json!(sk));
            super::secret::upsert(
                &cluster,
                ns,
                super::secret::secret_object(&secret_name, ns, labels, None, data, None),
            )
            .await?;
            wanted.spec.secret_ref = Some(LocalObjectReference { name: secret_name });
            progress::success("authentication configured");
        }
        let object = serde_json::to_value(&wanted)?;
        super::apply_saying(
            &cluster,
            ns,
            "Bucket",
            &object,
            "Bucket source",
            "Bucket source",
        )
        .await?;
        let words = fluxobj::SourceWait {
            label: "Bucket source",
            missing_artifact: Some("Bucket source reconciliation but no artifact was found"),
        };
        fluxobj::wait_for_artifact::<Bucket>(&cluster, ns, &name, deadline, words).await
    }
    .await;
    fluxobj::exit_code(result, "the Bucket stays applied")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BucketArgs,
    }

    fn exported(args: &str) -> anyhow::Result<String> {
        let argv = std::iter::once("bucket").chain(args.split_whitespace());
        let cli = Cli::try_parse_from(argv)?;
        export(&bucket(&cli.args, "flux-system")?)
    }

    #[test]
    fn export_writes_what_flux_writes() {
        assert_eq!(
            exported(
                "podinfo --bucket-name=podinfo --endpoint=minio.minio.svc.cluster.local:9000 --insecure=true --secret-ref=creds --interval=10m --ignore-paths=a/,*.txt --export"
            )
            .unwrap(),
            "---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: podinfo
  namespace: flux-system
spec:
  bucketName: podinfo
  endpoint: minio.minio.svc.cluster.local:9000
  ignore: |-
    a/
    *.txt
  insecure: true
  interval: 10m0s
  provider: generic
  secretRef:
    name: creds
"
        );
        assert_eq!(
            exported(
                "podinfo --bucket-name=podinfo --provider=aws --endpoint=s3.amazonaws.com --region=us-east-1 --interval=5m --fetch-timeout=30s --export"
            )
            .unwrap(),
            "---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: podinfo
  namespace: flux-system
spec:
  bucketName: podinfo
  endpoint: s3.amazonaws.com
  interval: 5m0s
  provider: aws
  region: us-east-1
  timeout: 30s
"
        );
    }

    /// flux's messages for the bad flags.
    #[test]
    fn bad_flags_give_flux_messages() {
        let err = |args: &str| exported(args).unwrap_err().to_string();
        assert_eq!(err(""), "name is required");
        assert_eq!(err("podinfo --endpoint=e"), "bucket-name is required");
        assert_eq!(err("podinfo --bucket-name=b"), "endpoint is required");
        assert_eq!(
            err("podinfo --bucket-name=b --endpoint=e --provider=s3"),
            "source bucket provider 's3' is not supported, must be one of: generic, aws, azure, gcp"
        );
        assert_eq!(
            err("podinfo --bucket-name=b --endpoint=e --provider="),
            "no source bucket provider given, please specify the S3 compatible storage provider name"
        );
        assert!(
            err("podinfo --bucket-name=b --endpoint=e --interval=often")
                .contains("invalid value 'often' for '--interval"),
        );
    }
}
