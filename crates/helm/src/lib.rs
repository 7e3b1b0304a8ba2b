//! Helm v4 charts rendered as Helm renders them.
//!
//! Owns: loading charts (directories and `.tgz`, with Helm's size limits and stricter path
//! rules: links, absolute paths and `..` in an archive are refused),
//! values (files, `--set` and friends, coalescing with chart defaults, `values.schema.json`),
//! dependencies (`condition`, `tags`, `alias`, `import-values`), rendering with Helm's template
//! objects and functions, and the output of `helm template`. Must not touch: Kubernetes clusters
//! (a `lookup` is answered by a callback the caller supplies), the network (no chart
//! repositories, no remote schema references), or anything outside the chart and values files
//! it is given.
//!
//! Go's text/template is crates/gotemplate; Sprig's functions are crates/sprig; Helm's YAML
//! (sigs.k8s.io/yaml over go-yaml v2) reuses crates/kustomize's reader and emitter.
//!
//! Load once, render many: a [`Chart`] is never changed by rendering; each render works on its
//! own tree of what Helm's dependency processing changes.
//!
//! ```no_run
//! use ferroflux_helm::{Engine, RenderOptions, ReleaseOptions, load};
//! let chart = load("charts/podinfo".as_ref())?;
//! let engine = Engine::new();
//! let values = ferroflux_helm::load_values("replicaCount: 2\n").map_err(ferroflux_helm::Error::Values)?;
//! let opts = RenderOptions {
//!     release: ReleaseOptions { name: "web".into(), namespace: "apps".into(), ..Default::default() },
//!     ..Default::default()
//! };
//! let out = engine.render(&chart, &values, &opts)?;
//! for m in &out.manifests {
//!     println!("{} {} from {}", m.kind, m.name, m.path);
//! }
//! for h in &out.hooks {
//!     println!("hook {:?} weight {} {:?}", h.events, h.weight, h.delete_policies);
//! }
//! # Ok::<(), ferroflux_helm::Error>(())
//! ```

mod chart;
mod cli;
mod coalesce;
mod error;
mod glob;
mod gofmt;
mod gojson;
mod goyamlerr;
mod ignore;
mod loader;
mod manifest;
mod objects;
mod release;
mod render;
mod schema;
mod strvals;
mod template;
mod toml;
mod tomlerr;
mod tree;
mod util;
mod values;
mod yaml;

pub use chart::{Chart, Dependency, File, Maintainer, Metadata};
pub use cli::{TemplateArgs, error_message, run_template};
pub use coalesce::{Warnings, coalesce_tables};
pub use error::Error;
pub use loader::{
    MAX_DECOMPRESSED_CHART_SIZE, MAX_DECOMPRESSED_FILE_SIZE, load, load_archive, load_dir,
};
/// What packaging a chart needs (crates/helmsource): the files of a directory or an archive.
pub use loader::{archive_files, dir_files, load_files};
pub use manifest::{Hook, HookEvent, INSTALL_ORDER, Manifest, sort_manifests, split_manifests};
pub use objects::{Capabilities, DEFAULT_API_VERSIONS, DEFAULT_KUBE_VERSION, KubeVersion};
pub use release::{Crd, Engine, ReleaseOptions, RenderOptions, Rendered, validate_release_name};
pub use render::LookupFn;
pub use template::{TemplateOptions, template_output};
pub use values::{ValueOptions, load_values, merge_maps};

/// The bytes to write for text this crate returns (the output of [`run_template`], an
/// [`error_message`]): UTF-8, except where a template printed a Go
/// string that is not (`.Files.Get` of a binary file), which the text carries in gotemplate's
/// `gostr` form. (A [`Rendered`]'s manifests and hooks are plain UTF-8, as Helm refuses any other
/// document; its notes show such bytes as U+FFFD.)
pub fn output_bytes(text: &str) -> std::borrow::Cow<'_, [u8]> {
    ferroflux_gotemplate::gostr::to_bytes(text)
}

/// Sprig's function library (without `env` and `expandenv`), under Helm's own functions.
fn sprig_funcs() -> ferroflux_gotemplate::FuncMap {
    ferroflux_sprig::funcs()
}
