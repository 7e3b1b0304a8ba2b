//! The build: load a kustomization tree, run its generators and transformers in kustomize's
//! order, then fix name references, resolve vars and order the output.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::TransformerConfig;
use crate::error::{BuildError, Result};
use crate::fsys::{Fs, Limits, LoadRestrictions};
use crate::kustomization::{Kustomization, VarArgs};
use crate::origin::{self, BuildMetadata};
use crate::resource::Res;
use crate::transform;
use crate::yaml::parse::{parse_documents, parse_documents_with_raw};

const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// A kustomize build over one repository checkout.
///
/// ```no_run
/// let build = ferroflux_kustomize::Build::new(std::path::Path::new("/repo")).unwrap();
/// let objects = build.build(std::path::Path::new("clusters/prod")).unwrap();
/// print!("{}", ferroflux_kustomize::render_yaml(&objects));
/// ```
///
/// Everything it reads stays inside the repository root given to [`Build::new`]: files named by a
/// kustomization must lie under that kustomization's directory (kustomize's root-only rule,
/// unless [`Build::with_load_restrictions`] lifts it), directories anywhere inside the repository, and symlinks that lead outside are refused.
/// Remote bases, Helm charts and plugin functions are refused with a "not supported" error.
pub struct Build {
    fs: Fs,
    reorder: Reorder,
}

/// How the output is ordered when the top kustomization has no `sortOptions` (kustomize's
/// `--reorder`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reorder {
    /// kustomize's legacy order by kind (what `kubectl kustomize` prints).
    #[default]
    Legacy,
    /// The order objects were listed and generated in (what Flux builds, since it leaves the
    /// reorder option unset).
    None,
}

/// The objects of a build and the warnings kustomize would print to stderr.
#[derive(Debug, Clone)]
pub struct BuildOutput {
    /// The objects, in the build's output order.
    pub objects: Vec<Value>,
    /// kustomize's stderr warnings (deprecated fields and the like), in the order met.
    pub warnings: Vec<String>,
    /// For each object, the JSON pointers of its string values that were written quoted (or
    /// as block scalars) in the source and still hold `${` where the build left them. kyaml
    /// keeps such a node's style through the build, so Flux's postBuild substitution leaves
    /// it a string. A value a strategic-merge patch writes carries the patch's quoting; a
    /// JSON 6902 patch loses every style of its object, as in kustomize.
    pub quoted_placeholders: Vec<Vec<String>>,
}

pub(crate) struct Ctx<'a> {
    pub fs: &'a Fs,
    stack: RefCell<Vec<PathBuf>>,
    pub warnings: RefCell<Vec<String>>,
    /// With `buildMetadata: [originAnnotations]`: the path, relative to the directory being
    /// built, of the kustomization being accumulated (kustomize's `kt.origin`).
    pub origin: RefCell<Option<String>>,
}

#[derive(Default)]
pub(crate) struct Acc {
    pub resources: Vec<Res>,
    pub vars: Vec<VarArgs>,
    /// Custom transformer configurations of this kustomization and those it includes.
    pub config: TransformerConfig,
}

impl Build {
    /// A build confined to `repo_root` with the default [`Limits`].
    pub fn new(repo_root: &Path) -> Result<Build> {
        Build::with_limits(repo_root, Limits::default())
    }

    /// A build confined to `repo_root` with the given size and count limits.
    pub fn with_limits(repo_root: &Path, limits: Limits) -> Result<Build> {
        Ok(Build {
            fs: Fs::new(repo_root, limits)?,
            reorder: Reorder::default(),
        })
    }

    /// Where files named by a kustomization may live (default: its own directory tree).
    pub fn with_load_restrictions(mut self, restrictions: LoadRestrictions) -> Build {
        self.fs.set_restrictions(restrictions);
        self
    }

    /// How the output is ordered when the kustomization has no `sortOptions`.
    pub fn with_reorder(mut self, reorder: Reorder) -> Build {
        self.reorder = reorder;
        self
    }

    /// Builds the kustomization at `path` (relative to the repository root, or absolute inside
    /// it) and returns its objects in `kubectl kustomize` order.
    pub fn build(&self, path: &Path) -> Result<Vec<Value>> {
        Ok(self.build_with_warnings(path)?.objects)
    }

    /// Like [`Build::build`], with the warnings kustomize would print.
    pub fn build_with_warnings(&self, path: &Path) -> Result<BuildOutput> {
        let ctx = Ctx {
            fs: &self.fs,
            stack: RefCell::new(Vec::new()),
            warnings: RefCell::new(Vec::new()),
            origin: RefCell::new(None),
        };
        let start = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.fs.join(self.fs.root(), &path.to_string_lossy())?
        };
        let dir = self
            .fs
            .confine(&start, self.fs.root(), "kustomization directory")?;
        let (kust, kfile) = load_kustomization(&ctx, &dir)?;
        let build_metadata = BuildMetadata::parse(kust.build_metadata.as_ref()).map_err(|why| {
            BuildError::Unsupported {
                path: ctx.fs.display(&kfile),
                field: "buildMetadata".into(),
                why,
            }
        })?;
        if build_metadata.origin_annotations {
            *ctx.origin.borrow_mut() = Some(String::new());
        }
        let acc = ctx.accumulate(&dir, &kfile, &kust, Acc::default(), false)?;
        let mut resources = acc.resources;
        transform::hash::add_hashes(&mut resources, &kfile, ctx.fs)?;
        transform::nameref::fix_back_references(&mut resources, &acc.config.name_refs)?;
        transform::vars::resolve(
            &mut resources,
            &acc.vars,
            &acc.config.var_refs,
            &ctx.fs.display(&kfile),
        )?;
        resources.retain(|r| {
            !r.annotations()
                .iter()
                .any(|(k, v)| k == "config.kubernetes.io/local-config" && v == "true")
        });
        for r in &mut resources {
            stringify_annotations(r);
        }
        if kust.sort_options.is_some() || self.reorder == Reorder::Legacy {
            transform::sort::sort(&mut resources, kust.sort_options.as_ref())
                .map_err(|m| BuildError::invalid(ctx.fs.display(&kfile), m))?;
        }
        origin::finish(&mut resources, build_metadata);
        let warnings = ctx.warnings.into_inner();
        let quoted_placeholders = resources.iter_mut().map(still_quoted).collect();
        Ok(BuildOutput {
            objects: resources.into_iter().map(|r| r.obj).collect(),
            warnings,
            quoted_placeholders,
        })
    }
}

/// The recorded quoted placeholders the build left in place.
fn still_quoted(r: &mut Res) -> Vec<String> {
    let recorded = std::mem::take(&mut r.quoted_placeholders);
    if r.json_roundtripped {
        return Vec::new();
    }
    recorded
        .into_iter()
        .filter(|p| {
            r.obj
                .pointer(p)
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains("${"))
        })
        .collect()
}

/// kustomize rewrites every object's (non-empty) annotations as a string map before printing;
/// values that patches set as numbers or booleans come out as strings.
fn stringify_annotations(r: &mut Res) {
    let raw = std::mem::take(&mut r.raw_annotations);
    let roundtripped = r.json_roundtripped;
    let Some(Value::Object(a)) = r
        .obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    else {
        return;
    };
    for (k, v) in a.iter_mut() {
        if v.is_string() {
            continue;
        }
        // Untouched since it was read: kustomize prints the source text.
        if !roundtripped
            && let Some((_, text, _)) = raw.iter().find(|(rk, _, typed)| rk == k && typed == v)
        {
            *v = Value::String(text.clone());
            continue;
        }
        *v = match v {
            Value::Number(n) => Value::String(crate::yaml::emit::format_number(n)),
            Value::Bool(b) => Value::String(b.to_string()),
            Value::Null => Value::String("null".into()),
            _ => continue,
        };
    }
}

/// Reads and checks the kustomization file of `dir`.
pub(crate) fn load_kustomization(ctx: &Ctx, dir: &Path) -> Result<(Kustomization, PathBuf)> {
    let mut found = Vec::new();
    for name in KUSTOMIZATION_FILES {
        let p = dir.join(name);
        if p.is_file() {
            found.push(p);
        }
    }
    let kfile = match found.len() {
        0 => {
            return Err(BuildError::Io {
                path: ctx.fs.display(dir),
                message:
                    "no kustomization.yaml, kustomization.yml or Kustomization in this directory"
                        .into(),
            });
        }
        1 => found.remove(0),
        _ => {
            return Err(BuildError::invalid(
                ctx.fs.display(dir),
                "found multiple kustomization files",
            ));
        }
    };
    let real = ctx
        .fs
        .confine(&kfile, ctx.fs.root(), "kustomization file")?;
    let text = ctx.fs.read_text(&real)?;
    let shown = ctx.fs.display(&kfile);
    let docs = parse_documents(&text).map_err(|error| BuildError::Yaml {
        path: shown.clone(),
        error,
    })?;
    let doc = match docs.len() {
        0 => Value::Object(Default::default()),
        1 => docs.into_iter().next().unwrap_or_default(),
        _ => {
            return Err(BuildError::invalid(
                shown,
                "a kustomization file holds exactly one YAML document",
            ));
        }
    };
    if !doc.is_object() {
        return Err(BuildError::invalid(
            shown,
            "kustomization must be a YAML mapping",
        ));
    }
    let kust: Kustomization = serde_json::from_value(doc)
        .map_err(|e| BuildError::invalid(shown.clone(), format!("invalid kustomization: {e}")))?;
    check_unsupported(&kust, &shown)?;
    let mut warnings = Vec::new();
    if !kust.bases.is_empty() {
        warnings.push("# Warning: 'bases' is deprecated. Please use 'resources' instead. Run 'kustomize edit fix' to update your Kustomization automatically.");
    }
    if kust.common_labels.is_some() {
        warnings.push("# Warning: 'commonLabels' is deprecated. Please use 'labels' instead. Run 'kustomize edit fix' to update your Kustomization automatically.");
    }
    if !kust.patches_json6902.is_empty() {
        warnings.push("# Warning: 'patchesJson6902' is deprecated. Please use 'patches' instead. Run 'kustomize edit fix' to update your Kustomization automatically.");
    }
    if !kust.patches_strategic_merge.is_empty() {
        warnings.push("# Warning: 'patchesStrategicMerge' is deprecated. Please use 'patches' instead. Run 'kustomize edit fix' to update your Kustomization automatically.");
    }
    if !kust.vars.is_empty() {
        warnings.push("# Warning: 'vars' is deprecated. Please use 'replacements' instead. [EXPERIMENTAL] Run 'kustomize edit fix' to update your Kustomization automatically.");
    }
    ctx.warnings
        .borrow_mut()
        .extend(warnings.into_iter().map(String::from));
    Ok((kust, kfile))
}

fn check_unsupported(k: &Kustomization, path: &Path) -> Result<()> {
    let unsupported = |field: &str, why: &str| BuildError::Unsupported {
        path: path.to_path_buf(),
        field: field.into(),
        why: why.into(),
    };
    let fields: [(&str, bool, &str); 8] = [
        (
            "helmCharts",
            k.helm_charts.is_some(),
            "Helm chart inflation runs an external program",
        ),
        (
            "helmGlobals",
            k.helm_globals.is_some(),
            "Helm chart inflation runs an external program",
        ),
        (
            "helmChartInflationGenerator",
            k.helm_chart_inflation_generator.is_some(),
            "Helm chart inflation runs an external program",
        ),
        (
            "generators",
            k.generators.is_some(),
            "generator plugins and KRM functions run external programs",
        ),
        (
            "transformers",
            k.transformers.is_some(),
            "transformer plugins and KRM functions run external programs",
        ),
        (
            "validators",
            k.validators.is_some(),
            "validator plugins and KRM functions run external programs",
        ),
        (
            "crds",
            k.crds.is_some(),
            "CRD-derived transformer configurations are not implemented",
        ),
        (
            "openapi",
            k.openapi.is_some(),
            "custom OpenAPI schemas are not implemented",
        ),
    ];
    for (f, set, why) in fields {
        if set {
            return Err(unsupported(f, why));
        }
    }
    Ok(())
}

fn is_remote(p: &str) -> bool {
    p.contains("://")
        || p.starts_with("git@")
        || p.starts_with("github.com/")
        || p.starts_with("gitlab.com/")
        || p.starts_with("bitbucket.org/")
        || p.contains("?ref=")
}

impl Ctx<'_> {
    /// Accumulates one kustomization (or component, which adds to `acc` in place).
    pub fn accumulate(
        &self,
        dir: &Path,
        kfile: &Path,
        kust: &Kustomization,
        mut acc: Acc,
        is_component: bool,
    ) -> Result<Acc> {
        let shown = self.fs.display(kfile);
        let kind = kust.kind.as_deref().unwrap_or("Kustomization");
        if is_component && kind != "Component" {
            return Err(BuildError::invalid(
                shown,
                format!("expected kind 'Component' for a component but got '{kind}'"),
            ));
        }
        // kustomize checks the kind of directories it reaches through `resources` only: a
        // Component given to `kustomize build` itself builds like a Kustomization.
        if !is_component && kind == "Component" && !self.stack.borrow().is_empty() {
            return Err(BuildError::invalid(
                shown,
                "expected kind != 'Component' for a resource directory (list it under components)",
            ));
        }
        {
            let mut st = self.stack.borrow_mut();
            if let Some(pos) = st.iter().position(|d| d == dir) {
                let mut chain: Vec<String> = st[pos..]
                    .iter()
                    .map(|d| self.fs.display(d).display().to_string())
                    .collect();
                chain.push(self.fs.display(dir).display().to_string());
                return Err(BuildError::Cycle {
                    chain: chain.join(" -> "),
                });
            }
            if st.len() >= self.fs.limits().max_kustomization_depth {
                return Err(BuildError::Refused {
                    path: shown,
                    message: "kustomizations nested too deeply".into(),
                });
            }
            st.push(dir.to_path_buf());
        }
        let r = self.accumulate_inner(dir, kfile, kust, &mut acc);
        self.stack.borrow_mut().pop();
        r?;
        Ok(acc)
    }

    fn accumulate_inner(
        &self,
        dir: &Path,
        kfile: &Path,
        kust: &Kustomization,
        acc: &mut Acc,
    ) -> Result<()> {
        let shown = self.fs.display(kfile);
        // Collected first and appended once: the duplicate check then costs one index build per
        // kustomization instead of one per file.
        let mut pending: Vec<Res> = Vec::new();
        for entry in kust.resources.iter().chain(kust.bases.iter()) {
            if is_remote(entry) {
                return Err(BuildError::Unsupported {
                    path: shown.clone(),
                    field: format!("remote resource {entry:?}"),
                    why: "remote bases and URLs are not fetched; vendor them into the repository"
                        .into(),
                });
            }
            let p = self.fs.join(dir, entry)?;
            let real = self.fs.confine(&p, self.fs.root(), "resource")?;
            if real.is_dir() {
                let (child, child_file) = load_kustomization(self, &real)?;
                let saved = self.enter_origin(entry);
                let sub = self.accumulate(&real, &child_file, &child, Acc::default(), false);
                *self.origin.borrow_mut() = saved;
                let sub = sub?;
                pending.extend(sub.resources);
                acc.config.merge(&sub.config);
                for v in sub.vars {
                    if acc.vars.iter().any(|k| k.name == v.name) {
                        return Err(BuildError::invalid(
                            shown.clone(),
                            format!("var '{}' already encountered", v.name),
                        ));
                    }
                    acc.vars.push(v);
                }
            } else {
                let real = self.fs.confine_loaded(&p, dir, "resource file")?;
                let mut loaded = self.load_resources(&real)?;
                if let Some(base) = self.origin.borrow().as_deref() {
                    let annotation = origin::of_file(&origin::join(base, entry));
                    for r in &mut loaded {
                        origin::annotate(r, &annotation);
                    }
                }
                pending.extend(loaded);
            }
        }
        append_all(&mut acc.resources, pending, self.fs)?;
        transform::generators::run(self, dir, kfile, kust, &mut acc.resources)?;
        for entry in &kust.components {
            if is_remote(entry) {
                return Err(BuildError::Unsupported {
                    path: shown.clone(),
                    field: format!("remote component {entry:?}"),
                    why: "remote components are not fetched".into(),
                });
            }
            let p = self.fs.join(dir, entry)?;
            let real = self.fs.confine(&p, self.fs.root(), "component")?;
            let (child, child_file) = load_kustomization(self, &real)?;
            let taken = std::mem::take(acc);
            let saved = self.enter_origin(entry);
            let accumulated = self.accumulate(&real, &child_file, &child, taken, true);
            *self.origin.borrow_mut() = saved;
            *acc = accumulated?;
        }
        for entry in &kust.configurations {
            let p = self.fs.join(dir, entry)?;
            let real = self.fs.confine_loaded(&p, dir, "configuration file")?;
            let text = self.fs.read_text(&real)?;
            let config = TransformerConfig::parse(&text, &self.fs.display(&real))?;
            acc.config.merge(&config);
        }
        transform::run_all(self, dir, kfile, kust, &acc.config, &mut acc.resources)?;
        transform::vars::merge(&mut acc.resources, &kust.vars, &mut acc.vars, &shown)?;
        Ok(())
    }

    /// Moves the origin into the directory `entry` (when origins are recorded) and returns the
    /// one to restore afterwards.
    fn enter_origin(&self, entry: &str) -> Option<String> {
        let mut origin = self.origin.borrow_mut();
        let saved = origin.clone();
        if let Some(o) = origin.as_mut() {
            *o = origin::join(o, entry);
        }
        saved
    }

    /// Loads the objects of one manifest file (`kind: List` objects are expanded).
    pub fn load_resources(&self, real: &Path) -> Result<Vec<Res>> {
        let shown = self.fs.display(real);
        let text = self.fs.read_text(real)?;
        let docs = parse_documents_with_raw(&text).map_err(|error| BuildError::Yaml {
            path: shown.clone(),
            error,
        })?;
        let mut out = Vec::new();
        for d in docs {
            let first = out.len();
            expand_doc(d.value, &shown, &mut out)?;
            if out.len() == first + 1 {
                out[first].raw_annotations = d.raw_annotations;
                out[first].quoted_placeholders = d.quoted_placeholders;
            }
        }
        Ok(out)
    }

    /// Reads a file that a kustomization names (patch, generator source): it must lie under
    /// the kustomization's own directory.
    pub fn read_local(&self, dir: &Path, rel: &str) -> Result<(Vec<u8>, PathBuf)> {
        let p = self.fs.join(dir, rel)?;
        let real = self.fs.confine_loaded(&p, dir, "file")?;
        Ok((self.fs.read(&real)?, real))
    }
}

fn expand_doc(d: Value, shown: &Path, out: &mut Vec<Res>) -> Result<()> {
    let Value::Object(map) = &d else {
        return Err(BuildError::invalid(
            shown,
            format!(
                "expected a YAML mapping for a Kubernetes object, got {}",
                type_name(&d)
            ),
        ));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List") && map.contains_key("items") {
        if let Some(Value::Array(items)) = map.get("items") {
            for it in items.clone() {
                expand_doc(it, shown, out)?;
            }
        }
        return Ok(());
    }
    if kind.is_empty() {
        return Err(BuildError::invalid(shown, "object has no 'kind' field"));
    }
    let name = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return Err(BuildError::invalid(
            shown,
            format!("{kind} object has no metadata.name"),
        ));
    }
    out.push(Res::new(d, shown.to_path_buf()));
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Appends, refusing a second object with the same id.
pub(crate) fn append_all(dst: &mut Vec<Res>, src: Vec<Res>, fs: &Fs) -> Result<()> {
    let mut seen: std::collections::HashMap<String, usize> = dst
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id_key(), i))
        .collect();
    for r in src {
        let key = r.id_key();
        if let Some(&i) = seen.get(&key) {
            return Err(BuildError::invalid(
                fs.display(&r.source),
                format!(
                    "duplicate object id {}: already defined in {}",
                    r.id_string(),
                    dst[i].source.display()
                ),
            ));
        }
        seen.insert(key, dst.len());
        dst.push(r);
    }
    Ok(())
}
