//! Reaching a cluster the way kubectl and flux do: `--kubeconfig`, else `KUBECONFIG` (several
//! files merged), else `~/.kube/config`; `--context`, else the current context.

use anyhow::{Context as _, anyhow};
use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};
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
    #[arg(long, global = true, default_value = "5m")]
    pub timeout: String,
}

impl KubeArgs {
    pub fn timeout(&self) -> anyhow::Result<Duration> {
        ferroflux_api::duration::parse_duration(&self.timeout)
            .map_err(|e| anyhow!("--timeout: {e}"))
    }

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

    /// A client for the selected context, with the context's name.
    pub async fn client(&self) -> anyhow::Result<(kube::Client, String)> {
        let kubeconfig = self.kubeconfig()?;
        self.client_for(&kubeconfig, self.context.as_deref()).await
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

    /// A client for `context` (None: the current context) of `kubeconfig`.
    pub async fn client_for(
        &self,
        kubeconfig: &Kubeconfig,
        context: Option<&str>,
    ) -> anyhow::Result<(kube::Client, String)> {
        let (config, name) = self.config_for(kubeconfig, context).await?;
        let client = ferroflux_kubeclient::client(config)
            .with_context(|| format!("connecting to context \"{name}\""))?;
        Ok((client, name))
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
        if !kubeconfig.contexts.iter().any(|c| c.name == name) {
            let available: Vec<&str> = kubeconfig
                .contexts
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(anyhow!(
                "context \"{name}\" not found in the kubeconfig; available contexts: {}",
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                }
            ));
        }
        let options = KubeConfigOptions {
            context: Some(name.clone()),
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
            .await
            .with_context(|| format!("loading context \"{name}\""))?;
        let timeout = self.timeout()?;
        // Built with ferroflux_kubeclient::client: client-go's retries, not kube-rs's.
        config.default_retry = false;
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        Ok((config, name))
    }
}
