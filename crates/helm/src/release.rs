//! One release rendered as Helm's install action renders it (`action.Install.RunWithContext`
//! and `renderResources`), in the same order of checks: chart type, dependencies present,
//! release name, dependency processing, values coalescing and schema validation, the chart's
//! `kubeVersion`, the templates, NOTES.txt, then the manifest split, hooks and kind sort.

use std::sync::Arc;

use ferroflux_gotemplate::FuncMap;
use serde_json::{Map, Value};

use crate::chart::Chart;
use crate::coalesce::coalesce_root;
use crate::error::Error;
use crate::manifest::{Hook, Manifest, sort_manifests};
use crate::objects::Capabilities;
use crate::render::{LookupFn, ReleaseInfo, RenderContext, func_map, render};
use crate::tree::{Node, is_compatible_range, process_dependencies};

/// Who the release is and what it does (`.Release`).
#[derive(Debug, Clone)]
pub struct ReleaseOptions {
    /// `.Release.Name` (validated as Helm validates release names).
    pub name: String,
    /// `.Release.Namespace`
    pub namespace: String,
    /// `.Release.Revision` (1 for an install).
    pub revision: i64,
    /// An upgrade (`.Release.IsUpgrade`) rather than an install.
    pub is_upgrade: bool,
}

impl Default for ReleaseOptions {
    /// `helm template`'s release: `release-name` in `default`, revision 1, an install.
    fn default() -> Self {
        ReleaseOptions {
            name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_upgrade: false,
        }
    }
}

/// How to render: the release, the cluster's capabilities and its `lookup`.
#[derive(Clone, Default)]
pub struct RenderOptions {
    /// The release's name, namespace, revision and kind.
    pub release: ReleaseOptions,
    /// `.Capabilities`: the cluster's Kubernetes version and API versions.
    pub capabilities: Capabilities,
    /// Answers the `lookup` function; `None` answers every lookup with an empty map, as
    /// `helm template` does.
    pub lookup: Option<Arc<LookupFn>>,
    /// Skips `values.schema.json` validation (`--skip-schema-validation`).
    pub skip_schema_validation: bool,
}

/// A CRD file from a `crds/` directory (never templated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crd {
    /// `mychart/charts/sub/crds/x.yaml`.
    pub filename: String,
    /// The file's text.
    pub content: String,
}

/// What a render produces, kept apart as a controller needs it.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Non-hook documents, in install order.
    pub manifests: Vec<Manifest>,
    /// Hook documents, sorted by kind as Helm lists them (run order is by weight, then kind).
    pub hooks: Vec<Hook>,
    /// The chart's rendered NOTES.txt (empty when it has none).
    pub notes: String,
    /// The CRDs of `crds/` directories of the chart and its enabled subcharts.
    pub crds: Vec<Crd>,
    /// Warnings Helm would log (values that could not be coalesced...).
    pub warnings: Vec<String>,
}

/// Helm's release-name rule.
pub fn validate_release_name(name: &str) -> Result<(), Error> {
    const REGEX: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
    let err = |m: &str| {
        Err(Error::Install(format!(
            "release name check failed: release name {}: {m}",
            crate::util::go_quote(name)
        )))
    };
    if name.is_empty() {
        return err("no name provided");
    }
    // REGEX by hand (compiling it cost more than the check, once per render): dot-separated
    // labels of [-a-z0-9], each non-empty and neither starting nor ending with '-'.
    let valid = name.split('.').all(|label| {
        !label.is_empty()
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if name.len() > 53 || !valid {
        return err(&format!(
            "invalid release name, must match regex {REGEX} and the length must not be longer than 53"
        ));
    }
    Ok(())
}

/// Renders charts; holds the function library, built once.
pub struct Engine {
    /// Helm's functions over Sprig's with `lookup` answering empty maps (most renders), shared
    /// by every template set the engine parses.
    default_funcs: Arc<FuncMap>,
    /// Sprig's functions, copied under each render that has its own `lookup`; built on the
    /// first such render (`helm template` never needs it).
    base: std::sync::OnceLock<FuncMap>,
    cache: crate::render::ParseCache,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    /// An engine with Sprig's functions under Helm's.
    pub fn new() -> Engine {
        Engine {
            default_funcs: Arc::new(func_map(crate::sprig_funcs(), None, false)),
            base: std::sync::OnceLock::new(),
            cache: crate::render::ParseCache::default(),
        }
    }

    /// Renders `chart` with the user-supplied `values` as `helm install --dry-run` (and so
    /// `helm template`) does.
    pub fn render(
        &self,
        chart: &Chart,
        values: &Map<String, Value>,
        opts: &RenderOptions,
    ) -> Result<Rendered, Error> {
        crate::util::deep(|| self.render_on_deep_stack(chart, values, opts))
    }

    fn render_on_deep_stack(
        &self,
        chart: &Chart,
        values: &Map<String, Value>,
        opts: &RenderOptions,
    ) -> Result<Rendered, Error> {
        if !matches!(chart.metadata.chart_type.as_str(), "" | "application") {
            return Err(Error::Install(format!(
                "{} charts are not installable",
                chart.metadata.chart_type
            )));
        }
        check_dependencies(chart)?;
        validate_release_name(&opts.release.name)?;
        let mut warnings = Vec::new();
        let mut root = Node::new(chart);
        process_dependencies(&mut root, values, &mut warnings)
            .map_err(|e| Error::Install(format!("chart dependencies processing failed: {e}")))?;
        let vals = coalesce_root(&root, values, false, &mut warnings).map_err(Error::Values)?;
        if !opts.skip_schema_validation {
            let mut report = String::new();
            validate_schemas(&root, &vals, &mut report)?;
            if !report.is_empty() {
                return Err(Error::Schema(format!(
                    "values don't meet the specifications of the schema(s) in the following chart(s):\n{report}"
                )));
            }
        }
        let kube = &opts.capabilities.kube_version;
        if !chart.metadata.kube_version.is_empty()
            && !is_compatible_range(&chart.metadata.kube_version, &kube.normalized)
        {
            return Err(Error::Render(format!(
                "chart requires kubeVersion: {} which is incompatible with Kubernetes {}",
                chart.metadata.kube_version, kube.version
            )));
        }
        let custom;
        let funcs = match &opts.lookup {
            None => &self.default_funcs,
            Some(l) => {
                let base = self.base.get_or_init(crate::sprig_funcs).clone();
                custom = Arc::new(func_map(base, Some(l.clone()), false));
                &custom
            }
        };
        let release = ReleaseInfo {
            name: opts.release.name.clone(),
            namespace: opts.release.namespace.clone(),
            revision: opts.release.revision,
            is_upgrade: opts.release.is_upgrade,
            is_install: !opts.release.is_upgrade,
        };
        let ctx = RenderContext {
            release: &release,
            capabilities: &opts.capabilities,
            values: &vals,
            funcs,
            cache: &self.cache,
        };
        let files = render(&root, &ctx).map_err(Error::Render)?;
        let notes_path = format!("{}/templates/NOTES.txt", root.name());
        let mut notes = String::new();
        let mut rest = Vec::with_capacity(files.len());
        for (path, text) in files {
            if path.ends_with("NOTES.txt") {
                if path == notes_path {
                    // Plain text for the caller: a byte that is not UTF-8 shows as U+FFFD, as
                    // in a release's JSON.
                    notes = ferroflux_gotemplate::gostr::lossy(&text).into_owned();
                }
                continue;
            }
            rest.push((path, text));
        }
        let (hooks, manifests) = sort_manifests(&rest).map_err(Error::Render)?;
        let mut crds = Vec::new();
        collect_crds(&root, "", &mut crds);
        Ok(Rendered {
            manifests,
            hooks,
            notes,
            crds,
            warnings,
        })
    }
}

/// Helm's `CheckDependencies`: every Chart.yaml dependency must be loaded (by chart name).
fn check_dependencies(chart: &Chart) -> Result<(), Error> {
    let missing: Vec<&str> = chart
        .metadata
        .dependencies
        .iter()
        .flatten()
        .filter(|d| !chart.dependencies.iter().any(|c| c.name() == d.name))
        .map(|d| d.name.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Install(format!(
        "an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        missing.join(", ")
    )))
}

/// Helm's `ValidateAgainstSchema` over the chart and (by name) its subcharts.
fn validate_schemas(
    node: &Node<'_>,
    vals: &Map<String, Value>,
    report: &mut String,
) -> Result<(), Error> {
    if let Some(schema) = &node.chart.schema {
        match crate::schema::validate(schema, vals) {
            Ok(None) => {}
            Ok(Some(text)) => {
                report.push_str(&format!("{}:\n{text}", node.name()));
            }
            Err(e) => {
                report.push_str(&format!("{}:\n{e}", node.name()));
            }
        }
    }
    for sub in &node.deps {
        match vals.get(sub.name()) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => validate_schemas(sub, m, report)?,
            Some(other) => report.push_str(&format!(
                "{}:\ninvalid type for values: expected object (map), got {}\n",
                sub.name(),
                crate::gofmt::go_type_name(other)
            )),
        }
    }
    Ok(())
}

fn collect_crds(node: &Node<'_>, parent: &str, out: &mut Vec<Crd>) {
    let path = if parent.is_empty() {
        node.name().to_string()
    } else {
        format!("{parent}/charts/{}", node.name())
    };
    for f in node.chart.own_crds() {
        out.push(Crd {
            filename: format!("{path}/{}", f.name),
            content: String::from_utf8_lossy(&f.data).into_owned(),
        });
    }
    for d in &node.deps {
        collect_crds(d, &path, out);
    }
}
