//! Reaching a cluster the way kubectl and flux do: `--kubeconfig`, else `KUBECONFIG` (several
//! files merged), else `~/.kube/config`; `--context`, else the current context. The one way a
//! command connects: [`KubeArgs`] are the flags, [`Cluster`] the connection, whose errors name
//! the context and server (never the credentials).

use anyhow::{Context as _, anyhow};
use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// Flags every cluster-facing command shares, as in flux.
#[derive(Args, Clone, Debug)]
pub struct KubeArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The namespace of the Flux objects.
    #[arg(short = 'n', long, global = true, default_value = "flux-system")]
    pub namespace: String,
    /// How long to wait for the cluster (Go duration: 30s, 1m, 5m).
    #[arg(long, global = true, default_value = "5m", value_parser = crate::flags::duration)]
    pub timeout: Duration,
}

impl KubeArgs {
    /// The merged kubeconfig these flags point at.
    pub fn kubeconfig(&self) -> anyhow::Result<Kubeconfig> {
        match &self.kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display())),
            None => {
                Kubeconfig::read().context("reading kubeconfig ($KUBECONFIG or ~/.kube/config)")
            }
        }
    }

    /// The client configuration of the selected context for a long-running controller, with
    /// the context's name.
    pub async fn config(&self) -> anyhow::Result<(kube::Config, String)> {
        let kubeconfig = self.kubeconfig()?;
        let (mut config, name) = self
            .config_for(&kubeconfig, self.context.as_deref())
            .await?;
        // Watches stay open for minutes: kube's own read timeout, not --timeout.
        config.read_timeout = Some(Duration::from_secs(295));
        Ok((config, name))
    }

    /// The client configuration of `context` (None: the current context), with --timeout
    /// applied to connecting and reading, and the context's name.
    pub async fn config_for(
        &self,
        kubeconfig: &Kubeconfig,
        context: Option<&str>,
    ) -> anyhow::Result<(kube::Config, String)> {
        let name = match context {
            Some(c) => c.to_string(),
            None => kubeconfig
                .current_context
                .clone()
                .ok_or_else(|| anyhow!("the kubeconfig has no current context; pass --context"))?,
        };
        known_context(kubeconfig, &name)?;
        let options = KubeConfigOptions {
            context: Some(name.clone()),
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
            .await
            .with_context(|| format!("loading context \"{name}\""))?;
        let timeout = self.timeout;
        // Built with ferroflux_kubeclient::client: client-go's retries, not kube-rs's.
        config.default_retry = false;
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        Ok((config, name))
    }
}

/// Fails, naming the contexts there are, when `kubeconfig` has no context `name`.
pub fn known_context(kubeconfig: &Kubeconfig, name: &str) -> anyhow::Result<()> {
    if kubeconfig.contexts.iter().any(|c| c.name == name) {
        return Ok(());
    }
    let available: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    Err(anyhow!(
        "context \"{name}\" not found in the kubeconfig; available contexts: {}",
        if available.is_empty() {
            "none".to_string()
        } else {
            available.join(", ")
        }
    ))
}

/// A connected cluster and how to name it in messages.
#[derive(Clone)]
pub struct Cluster {
    pub client: kube::Client,
    pub context: String,
    pub url: String,
    pub timeout: Duration,
}

impl Cluster {
    /// The cluster of `--context` (else the current context).
    pub async fn connect(kube: &KubeArgs) -> anyhow::Result<Cluster> {
        let kubeconfig = kube.kubeconfig()?;
        Cluster::connect_to(kube, &kubeconfig, kube.context.as_deref()).await
    }

    /// The cluster of `--context` for a command that holds a watch open until `--timeout`:
    /// no read timeout on the connection, since a quiet watch is not a dead one. Connecting
    /// and each request made through [`Cluster::call`] stay bounded by `--timeout`.
    pub async fn connect_watching(kube: &KubeArgs) -> anyhow::Result<Cluster> {
        let kubeconfig = kube.kubeconfig()?;
        let (mut config, name) = kube
            .config_for(&kubeconfig, kube.context.as_deref())
            .await?;
        config.read_timeout = None;
        Cluster::from_config(kube, config, name)
    }

    /// The cluster of `context` for a command that watches it for as long as it runs: no
    /// read timeout on the connection (as [`Cluster::connect_watching`]).
    pub async fn connect_watching_to(
        kube: &KubeArgs,
        kubeconfig: &kube::config::Kubeconfig,
        context: &str,
    ) -> anyhow::Result<Cluster> {
        let (mut config, name) = kube.config_for(kubeconfig, Some(context)).await?;
        config.read_timeout = None;
        Cluster::from_config(kube, config, name)
    }

    pub async fn connect_to(
        kube: &KubeArgs,
        kubeconfig: &kube::config::Kubeconfig,
        context: Option<&str>,
    ) -> anyhow::Result<Cluster> {
        let (config, name) = kube.config_for(kubeconfig, context).await?;
        Cluster::from_config(kube, config, name)
    }

    fn from_config(kube: &KubeArgs, config: kube::Config, name: String) -> anyhow::Result<Cluster> {
        let url = config.cluster_url.to_string();
        let url = url.trim_end_matches('/').to_string();
        let client = ferroflux_kubeclient::client(config)
            .with_context(|| format!("connecting to context \"{name}\""))?;
        Ok(Cluster {
            client,
            context: name,
            url,
            timeout: kube.timeout,
        })
    }

    /// Runs one request against the cluster, bounded by --timeout; a failure names the
    /// context and server and keeps the causes (never the credentials).
    pub async fn call<T, F>(&self, what: &str, request: F) -> anyhow::Result<T>
    where
        F: Future<Output = Result<T, kube::Error>>,
    {
        let silent = || {
            anyhow!(
                "{what}: the cluster of context \"{}\" ({}) did not answer within {}",
                self.context,
                self.url,
                humantime(self.timeout)
            )
        };
        match tokio::time::timeout(self.timeout, request).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                // The client's own connect and read timeouts are --timeout too; whichever
                // fires first, the user reads the same message.
                if error_chain(&e).contains("deadline has elapsed") {
                    return Err(silent());
                }
                Err(self.explain(what, e))
            }
            Err(_) => Err(silent()),
        }
    }

    /// Reads object `name`. A refusal of the API server (not found, forbidden) is its message
    /// alone, as flux prints it; any other failure names `what` (e.g. "reading Kustomization
    /// ns/name").
    pub async fn get_named<K>(
        &self,
        api: &kube::Api<K>,
        name: &str,
        what: &str,
    ) -> anyhow::Result<K>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        match api.get(name).await {
            Ok(object) => Ok(object),
            Err(kube::Error::Api(status)) => Err(anyhow!("{}", status.message)),
            Err(e) => Err(anyhow!("{what}: {}", error_chain(&e))),
        }
    }

    fn explain(&self, what: &str, e: kube::Error) -> anyhow::Error {
        if let kube::Error::Api(status) = &e {
            return anyhow!("{what}: {}", status.message);
        }
        anyhow!(
            "{what}: cannot reach the cluster of context \"{}\" ({}): {}",
            self.context,
            self.url,
            error_chain(&e)
        )
    }
}

/// An error and its causes on one line, repeated messages dropped.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}

/// A duration as the user wrote it with --timeout (`5s`, `2m`, `1m30s`).
pub fn humantime(d: Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    let (m, s) = (secs / 60, secs % 60);
    match (m, s) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_flag() {
        assert_eq!(humantime(Duration::from_secs(5)), "5s");
        assert_eq!(humantime(Duration::from_secs(120)), "2m");
        assert_eq!(humantime(Duration::from_secs(90)), "1m30s");
        assert_eq!(humantime(Duration::from_millis(500)), "500ms");
    }
}
