//! OCI artifacts for ferroflux: a client of the OCI distribution API (Docker registry v2) and
//! Flux's artifact format on top of it.
//!
//! Owns: references (`oci://HOST/REPO:TAG@DIGEST`), credentials (anonymous, Basic, the bearer
//! token flow announced by `WWW-Authenticate`, Docker config JSON), the choice of scheme (HTTPS
//! first, plain HTTP for local registries or when allowed, as go-containerregistry does), TLS
//! with a private CA or a client certificate, manifests and indexes, digest-checked blobs,
//! monolithic uploads, tags and their lists; Flux's artifact (config
//! `application/vnd.cncf.flux.config.v1+json`, one `application/vnd.cncf.flux.content.v1.tar+gzip`
//! layer, `org.opencontainers.image.{created,source,revision}` annotations): reproducible
//! packing, push, resolve, layer selection, and extraction that refuses to write outside its
//! directory or past a size limit; semver tag selection.
//!
//! Must not touch: Kubernetes (no client, no CRD types: the OCIRepository reconciler in
//! `crates/controller` maps [`Error`] onto conditions), artifact storage (crates/source), or
//! any file outside the directories and temporary files it is handed.
//!
//! Why our own client on ureq instead of a crate such as `oci-client`: the workspace already
//! builds ureq on rustls + ring for the Git transport, while `oci-client` brings reqwest and a
//! second async HTTP/TLS stack (aws-lc by default) into a controller whose OCI traffic is a
//! handful of requests per reconcile; the protocol subset Flux needs (ping, token, manifest,
//! blob, upload, tag list) is small and is tested here against the real registry (Debian's
//! `docker-registry`, CNCF distribution) and skopeo. The client is blocking: async callers run it
//! on `spawn_blocking`, like the Git fetch.
//!
//! ```no_run
//! use ferroflux_oci::{Client, ClientOptions, Reference, artifact};
//! let r = Reference::parse("oci://localhost:5000/apps/podinfo:6.5.0")?;
//! let client = Client::for_reference(&r, ClientOptions::default())?;
//! let pulled = artifact::pull(&client, &r, None, "/tmp/out".as_ref(),
//!     artifact::DEFAULT_MAX_LAYER_SIZE, ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE)?;
//! println!("{}", pulled.resolved.digest);
//! # Ok::<(), ferroflux_oci::Error>(())
//! ```

pub mod artifact;
mod auth;
mod client;
mod error;
pub mod extract;
pub mod manifest;
mod reference;
pub mod tags;

pub use auth::{Auth, DockerConfig};
pub use client::{BlobReader, Client, ClientOptions, MAX_MANIFEST_SIZE, ManifestHead, RawManifest};
pub use error::{Error, Result};
pub use reference::{Reference, valid_digest, valid_tag};
