//! For tests only (`publish = false`): what the workspace's integration tests and benches share
//! instead of copying it. Always available: [`git`] with a fixed identity, [`eventually`], and
//! [`cases`], the reader of crates/gotemplate's and crates/sprig's template case tables.
//! Feature `git-server`: `git http-backend` behind HTTP(S) ([`GitHttpServer`]), a static file
//! server with the same auth and TLS ([`StaticServer`], a Helm chart repository) and OpenSSH's sshd
//! on a loopback port ([`Sshd`]). Feature `cluster`: devclusters serving Flux's CRDs
//! ([`flux_cluster`]), kubeconfig files ([`Cluster`], [`kubeconfig`]) and the real kubectl
//! ([`Kubectl`]). Feature `webhook`: a recording HTTP endpoint standing in for Slack, GitHub and
//! the other services alerts go to ([`WebhookSink`]). Feature `oci-registry`: Debian's `docker-registry` on a loopback port and
//! `skopeo` ([`Registry`]). Feature `cdp`: headless chromium over the DevTools protocol
//! ([`cdp::Browser`]). Feature `s3`: `s3s-fs`, a real S3 server over a folder ([`S3Server`]).
//!
//! Must not: be a dependency of anything but tests and benches, or mock a part that can run
//! for real. The pure crates (kustomize, schema, sops, envsubst) do not use it, so their tests
//! link neither kube nor the servers.

mod git;
pub use git::git;

/// The reader of the template case tables (`tests/*.txt`).
pub mod cases;

#[cfg(feature = "git-server")]
mod http;
#[cfg(feature = "git-server")]
pub use http::{Auth, GitHttpServer, StaticServer, Tls, make_tls};

#[cfg(feature = "git-server")]
mod proxy;
#[cfg(feature = "git-server")]
pub use proxy::HttpProxy;

#[cfg(feature = "git-server")]
mod ssh;
#[cfg(feature = "git-server")]
pub use ssh::{Sshd, closed_port, keygen};

#[cfg(feature = "oci-registry")]
mod registry;
#[cfg(feature = "oci-registry")]
pub use registry::{ClientCert, Registry, RegistryOptions, client_ca_and_cert};

#[cfg(feature = "cdp")]
pub mod cdp;

#[cfg(feature = "s3")]
mod s3;
#[cfg(all(feature = "s3", feature = "git-server"))]
pub use s3::TlsFront;
#[cfg(feature = "s3")]
pub use s3::{S3Server, s3s_fs_binary};

#[cfg(feature = "webhook")]
mod webhook;
#[cfg(feature = "webhook")]
pub use webhook::{MtlsFiles, Received, WebhookSink};
#[cfg(feature = "webhook")]
mod idtoken;
#[cfg(feature = "webhook")]
pub use idtoken::GoogleSigner;

#[cfg(feature = "cluster")]
mod cluster;
#[cfg(feature = "cluster")]
pub use cluster::{Cluster, Kubectl, create, flux_cluster, kubeconfig};

use std::time::Duration;

/// Polls `f` until it yields something; the bound (30 s) only stops a broken test from hanging.
pub async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}
