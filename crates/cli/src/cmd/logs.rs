//! `ferroflux logs`: the controllers' log lines, read from their Pods through the API's
//! `pods/log` endpoint and printed as `flux logs` prints them.
//!
//! The Pods are found as flux finds them: the Deployments labelled
//! `app.kubernetes.io/part-of=flux` in `--flux-namespace`, and for each one Pod matching its
//! template's labels (a running, ready one first). Only the JSON lines are read (flux's
//! controllers and ours, `--log-encoding=json`), each filtered by `--level`, `--kind`,
//! `--name` and the namespace of the object it is about (`-n`, or any with `-A`), and printed
//! as `<ts> <level> <Kind>/<name>.<namespace> - <msg> <error>`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use ferroflux_bootstrap::manifests::{PART_OF_LABEL, PART_OF_VALUE};
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use serde::Deserialize;

use crate::cluster::{Cluster, KubeArgs};
use crate::output::progress;

/// The container of a controller Pod that holds its logs when there are several.
const CONTROLLER_CONTAINER: &str = "manager";
/// The levels flux's controllers log at.
const LEVELS: &[&str] = &["debug", "info", "error"];

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Only lines of this level: debug, info or error.
    #[arg(long, value_parser = parse_level)]
    level: Option<String>,
    /// Only lines about objects of this kind, e.g. GitRepository (any case).
    #[arg(long)]
    kind: Option<String>,
    /// Only lines about objects of this name (any case).
    #[arg(long)]
    name: Option<String>,
    /// Stream the logs as they are written.
    #[arg(short = 'f', long)]
    follow: bool,
    /// Only the last lines of each controller's log (-1: all).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    tail: i64,
    /// The namespace the controllers run in.
    #[arg(long, default_value = "flux-system")]
    flux_namespace: String,
    /// Lines about objects of every namespace (else of -n).
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Only lines newer than this (Go duration: 5s, 2m, 3h).
    #[arg(long, value_parser = crate::flags::duration)]
    since: Option<Duration>,
    /// Only lines after this time (RFC 3339).
    #[arg(long)]
    since_time: Option<String>,
    /// No argument is taken; one given gets flux's message.
    #[arg(hide = true)]
    extra: Vec<String>,
    #[command(flatten)]
    kube: KubeArgs,
}

fn parse_level(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(format!(
            "no log level given, must be one of: {}",
            LEVELS.join(", ")
        ));
    }
    if !LEVELS.contains(&s) {
        return Err(format!(
            "unsupported log level '{s}', must be one of: {}",
            LEVELS.join(", ")
        ));
    }
    Ok(s.to_string())
}

/// What a line must match to be printed.
#[derive(Debug, Default)]
pub struct Filter {
    pub level: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    /// `None`: every namespace.
    pub namespace: Option<String>,
}

/// The fields of a controller's JSON log line that `logs` reads: controller-runtime's names,
/// which flux's controllers and ours write.
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    ts: serde_json::Value,
    #[serde(default)]
    level: String,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(rename = "reconciler kind", default)]
    kind: Option<String>,
    #[serde(rename = "controllerKind", default)]
    controller_kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

impl Filter {
    fn keeps(&self, e: &Entry) -> bool {
        let eq = |want: &Option<String>, got: Option<&str>| {
            want.as_ref()
                .is_none_or(|w| got.is_some_and(|g| w.eq_ignore_ascii_case(g)))
        };
        self.level.as_ref().is_none_or(|l| *l == e.level)
            && (eq(&self.kind, e.kind.as_deref()) || eq(&self.kind, e.controller_kind.as_deref()))
            && eq(&self.name, e.name.as_deref())
            && eq(&self.namespace, e.namespace.as_deref())
    }
}

/// One line of a controller's log as flux prints it, `None` when the filter drops it or it is
/// not a JSON line; a JSON line that does not parse is an error (flux stops reading that log).
pub fn format_line(line: &str, filter: &Filter) -> Result<Option<String>, String> {
    if !line.starts_with('{') {
        return Ok(None);
    }
    let e: Entry = serde_json::from_str(line).map_err(|e| format!("parse error: {e}"))?;
    if !filter.keeps(&e) {
        return Ok(None);
    }
    let ts = match &e.ts {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    let kind = e
        .kind
        .as_deref()
        .filter(|k| !k.is_empty())
        .or(e.controller_kind.as_deref())
        .unwrap_or_default();
    let object = match e.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => format!("/{name}.{}", e.namespace.as_deref().unwrap_or_default()),
        None => String::new(),
    };
    Ok(Some(format!(
        "{ts} {} {kind}{object} - {} {}\n",
        e.level,
        e.msg,
        e.error.as_deref().unwrap_or_default()
    )))
}

pub async fn run(args: LogsArgs) -> anyhow::Result<ExitCode> {
    if !args.extra.is_empty() {
        bail!("no argument required");
    }
    if args.since.is_some() && args.since_time.is_some() {
        bail!("at most one of `sinceTime` or `sinceDuration` may be specified");
    }
    let mut params = LogParams {
        follow: args.follow,
        ..LogParams::default()
    };
    if args.tail > -1 {
        params.tail_lines = Some(args.tail);
    }
    if let Some(t) = &args.since_time {
        params.since_time = Some(
            t.parse::<k8s_openapi::jiff::Timestamp>()
                .map_err(|_| anyhow!("{t} is not a valid (RFC3339) time"))?,
        );
    }
    if let Some(d) = args.since {
        // Rounded to the nearest second, as flux does.
        params.since_seconds = Some((d.as_millis() as i64 + 500) / 1000);
    }
    let filter = Filter {
        level: args.level.clone(),
        kind: args.kind.clone(),
        name: args.name.clone(),
        namespace: (!args.all_namespaces).then(|| args.kube.namespace.clone()),
    };
    // A follow runs until Ctrl-C: no read timeout on it.
    let cluster = if args.follow {
        Cluster::connect_watching(&args.kube).await?
    } else {
        Cluster::connect(&args.kube).await?
    };
    let ns = &args.flux_namespace;
    let pods = controller_pods(&cluster.client, ns).await?;
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let requests: Vec<(String, LogParams)> = pods
        .iter()
        .map(|pod| {
            let mut p = params.clone();
            let containers = pod.spec.as_ref().map_or(0, |s| s.containers.len());
            if containers > 1 {
                p.container = Some(CONTROLLER_CONTAINER.to_string());
            }
            (pod.metadata.name.clone().unwrap_or_default(), p)
        })
        .collect();
    let filter = &filter;
    let api = &api;
    if args.follow && requests.len() > 1 {
        // Every Pod at once, lines interleaved as they come.
        let results = futures::future::join_all(
            requests
                .iter()
                .map(|(pod, p)| async move { (pod, print_log(api, pod, p, filter).await) }),
        )
        .await;
        let mut failed = false;
        for (pod, r) in results {
            if let Err(e) = r {
                failed = true;
                eprintln!("failed getting logs: {pod}: {e:#}");
            }
        }
        if failed {
            bail!("failed to collect logs from all Flux pods");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for (pod, p) in &requests {
        if let Err(e) = print_log(api, pod, p, filter).await {
            eprintln!("failed getting logs: {e:#}");
            failed = true;
        }
    }
    if failed {
        bail!("failed to collect logs from all Flux pods");
    }
    Ok(ExitCode::SUCCESS)
}

/// One Pod per controller Deployment, as flux picks it.
async fn controller_pods(client: &kube::Client, ns: &str) -> anyhow::Result<Vec<Pod>> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"));
    let list = deployments
        .list(&selector)
        .await
        .with_context(|| format!("listing the deployments of namespace {ns}"))?;
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut out = Vec::new();
    for d in &list.items {
        let labels = d
            .spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut pods = pods_api
            .list(&ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("listing the pods of namespace {ns}"))?
            .items;
        pods.sort_by_key(|p| std::cmp::Reverse(log_rank(p)));
        if let Some(p) = pods.into_iter().next() {
            out.push(p);
        }
    }
    if out.is_empty() {
        bail!("no Flux pods found in namespace {ns:?}");
    }
    Ok(out)
}

/// Which Pod's log is worth reading: a running and ready one, then a running one, then one
/// scheduled; among equals the newest.
fn log_rank(p: &Pod) -> (u8, u8, u8, Option<k8s_openapi::jiff::Timestamp>) {
    let status = p.status.as_ref();
    let running = status.and_then(|s| s.phase.as_deref()) == Some("Running");
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let scheduled = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
    (
        u8::from(running && ready),
        u8::from(running),
        u8::from(scheduled),
        p.metadata.creation_timestamp.as_ref().map(|t| t.0),
    )
}

/// Streams one Pod's log to stdout, line by line as flux prints them.
async fn print_log(
    api: &Api<Pod>,
    pod: &str,
    params: &LogParams,
    filter: &Filter,
) -> anyhow::Result<()> {
    let stream = api.log_stream(pod, params).await?;
    let mut lines = stream.lines();
    while let Some(line) = lines.next().await {
        let line = line.with_context(|| format!("reading the log of pod {pod}"))?;
        match format_line(&line, filter) {
            Ok(Some(text)) => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
            }
            Ok(None) => {}
            Err(e) => {
                progress::failure(format_args!("{e}"));
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Log lines as flux's controllers write them (controller-runtime's field names, both the
    /// `controllerKind` of newer versions and the `reconciler kind` of older ones), the input
    /// of the goldens in `tests/fixtures/goldens/logs/`.
    const LOG: &str = r#"{"ts":"2022-08-02T12:55:34.419Z","level":"info","msg":"no changes since last reconcilation: observed revision","controllerKind":"GitRepository","name":"podinfo","namespace":"default","controller":"gitrepository"}
{"ts":"2022-08-02T12:56:04.679Z","level":"error","logger":"controller.gitrepository","msg":"no changes since last reconcilation: observed revision","controllerKind":"GitRepository","namespace":"flux-system","name":"flux-system"}
not JSON: skipped
{"ts":"2022-08-02T12:56:34.961Z","level":"error","logger":"controller.kustomization","msg":"no changes since last reconcilation: observed revision","reconciler kind":"Kustomization","namespace":"flux-system","name":"flux-system"}
{"ts":"2022-08-02T12:56:34.961Z","level":"info","logger":"controller.kustomization","msg":"no changes since last reconcilation: observed revision","reconciler kind":"Kustomization","namespace":"default","name":"podinfo"}
{"ts":"2022-08-02T12:56:34.961Z","level":"info","logger":"controller.gitrepository","msg":"no changes since last reconcilation: observed revision","reconciler kind":"GitRepository","namespace":"default","name":"podinfo"}
{"ts":"2022-08-02T12:56:34.961Z","level":"error","logger":"controller.kustomization","msg":"no changes since last reconcilation: observed revision","reconciler kind":"Kustomization","namespace":"flux-system","name":"podinfo"}
"#;

    fn golden(file: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/goldens/logs")
                .join(file),
        )
        .unwrap()
    }

    fn print(filter: &Filter) -> String {
        LOG.lines()
            .filter_map(|l| format_line(l, filter).unwrap())
            .collect()
    }

    #[test]
    fn filters_and_prints_as_flux_goldens() {
        let ns = |n: &str| Some(n.to_string());
        let s = |v: &str| Some(v.to_string());
        // flux's five cases; -n defaults to flux-system.
        let cases = [
            (Filter::default(), "all-logs.txt"),
            (
                Filter {
                    namespace: ns("default"),
                    ..Filter::default()
                },
                "namespace.txt",
            ),
            (
                Filter {
                    kind: s("Kustomization"),
                    namespace: ns("flux-system"),
                    ..Filter::default()
                },
                "kind.txt",
            ),
            (
                Filter {
                    level: s("error"),
                    ..Filter::default()
                },
                "log-level.txt",
            ),
            (
                Filter {
                    level: s("error"),
                    kind: s("kustomization"),
                    name: s("PODINFO"),
                    namespace: ns("flux-system"),
                },
                "multiple-filters.txt",
            ),
        ];
        for (filter, file) in cases {
            assert_eq!(print(&filter), golden(file), "{file}");
        }
    }

    #[test]
    fn lines_without_an_object_or_an_error() {
        let f = Filter::default();
        assert_eq!(
            format_line(
                r#"{"ts":"t","level":"info","msg":"starting","controllerKind":"GitRepository"}"#,
                &f
            )
            .unwrap()
            .unwrap(),
            "t info GitRepository - starting \n"
        );
        assert_eq!(
            format_line(r#"{"ts":"t","level":"error","msg":"m","error":"boom","controllerKind":"Kustomization","name":"a","namespace":"b"}"#, &f)
                .unwrap()
                .unwrap(),
            "t error Kustomization/a.b - m boom\n"
        );
        assert!(
            format_line("{not json", &f)
                .unwrap_err()
                .starts_with("parse error: ")
        );
        assert_eq!(
            parse_level("warn").unwrap_err(),
            "unsupported log level 'warn', must be one of: debug, info, error"
        );
    }
}
