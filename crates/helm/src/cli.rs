//! `helm template [NAME] CHART [flags]` from its arguments to its stdout, as Helm's CLI runs
//! it (`pkg/cmd/template.go`, `pkg/cmd/install.go`): flag parsing with pflag's forms
//! (`--flag value`, `--flag=value`, `-n value`, `-nvalue`; `-f` and `-a` split on commas),
//! the release name and chart, values merged, the chart loaded and rendered, and the output
//! printed. The binary prints an `Err` as `Error: MESSAGE` and exits 1.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::objects::{Capabilities, KubeVersion};
use crate::release::{Engine, ReleaseOptions, RenderOptions};
use crate::template::{TemplateOptions, template_output};
use crate::values::ValueOptions;

/// The parsed arguments of `helm template`.
#[derive(Debug, Clone, Default)]
pub struct TemplateArgs {
    /// `[NAME] CHART`
    pub positional: Vec<String>,
    /// `-n/--namespace`
    pub namespace: Option<String>,
    /// `-f`, `--set` and friends.
    pub values: ValueOptions,
    /// `--kube-version`
    pub kube_version: Option<String>,
    /// `-a/--api-versions`
    pub api_versions: Vec<String>,
    /// What is printed and how (`--include-crds`, `-s`, `--output-dir`…).
    pub output: TemplateOptions,
    /// `--is-upgrade`
    pub is_upgrade: bool,
    /// `--generate-name`
    pub generate_name: bool,
    /// `--name-template`: a Go template (with Sprig's functions) whose output is the release
    /// name, when no NAME is given.
    pub name_template: Option<String>,
    /// `--skip-schema-validation`
    pub skip_schema_validation: bool,
}

const BOOL_FLAGS: &[&str] = &[
    "include-crds",
    "skip-tests",
    "is-upgrade",
    "no-hooks",
    "generate-name",
    "release-name",
    "skip-schema-validation",
    "skip-crds",
    "disable-openapi-validation",
    "dependency-update",
    "devel",
    "atomic",
    "wait",
    "create-namespace",
    "debug",
    "replace",
    "render-subchart-notes",
];

const VALUE_FLAGS: &[&str] = &[
    "namespace",
    "values",
    "set",
    "set-string",
    "set-json",
    "set-file",
    "set-literal",
    "kube-version",
    "api-versions",
    "show-only",
    "output-dir",
    "name-template",
    "version",
    "description",
    "timeout",
    "post-renderer",
];

fn long_name(short: char) -> Option<&'static str> {
    Some(match short {
        'n' => "namespace",
        'f' => "values",
        'a' => "api-versions",
        's' => "show-only",
        'g' => "generate-name",
        _ => return None,
    })
}

impl TemplateArgs {
    /// Parses the arguments that follow `helm template`.
    pub fn parse(args: &[String]) -> Result<TemplateArgs, Error> {
        let mut out = TemplateArgs::default();
        let mut i = 0;
        let bad = |m: String| Err(Error::Install(m));
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            if arg == "--" {
                out.positional.extend(args[i..].iter().cloned());
                break;
            }
            let (name, inline): (String, Option<String>) =
                if let Some(long) = arg.strip_prefix("--") {
                    match long.split_once('=') {
                        Some((n, v)) => (n.to_string(), Some(v.to_string())),
                        None => (long.to_string(), None),
                    }
                } else if arg.len() > 1 && arg.starts_with('-') {
                    let mut chars = arg[1..].chars();
                    let c = chars.next().unwrap_or('-');
                    let Some(n) = long_name(c) else {
                        return bad(format!("unknown shorthand flag: '{c}' in {arg}"));
                    };
                    let rest: String = chars.collect();
                    let rest = rest.strip_prefix('=').map(str::to_string).unwrap_or(rest);
                    (n.to_string(), (!rest.is_empty()).then_some(rest))
                } else {
                    out.positional.push(arg.clone());
                    continue;
                };
            if BOOL_FLAGS.contains(&name.as_str()) {
                let on = match inline.as_deref() {
                    None | Some("true") => true,
                    Some("false") => false,
                    Some(v) => {
                        return bad(format!(
                            "invalid argument {v:?} for \"--{name}\" flag: strconv.ParseBool: parsing {v:?}: invalid syntax"
                        ));
                    }
                };
                match name.as_str() {
                    "include-crds" => out.output.include_crds = on,
                    "skip-tests" => out.output.skip_tests = on,
                    "is-upgrade" => out.is_upgrade = on,
                    "no-hooks" => out.output.no_hooks = on,
                    "generate-name" => out.generate_name = on,
                    "release-name" => out.output.use_release_name = on,
                    "skip-schema-validation" => out.skip_schema_validation = on,
                    _ => {}
                }
                continue;
            }
            if !VALUE_FLAGS.contains(&name.as_str()) {
                return bad(format!("unknown flag: --{name}"));
            }
            let value = match inline {
                Some(v) => v,
                None => {
                    if i >= args.len() {
                        return bad(format!("flag needs an argument: --{name}"));
                    }
                    i += 1;
                    args[i - 1].clone()
                }
            };
            let split = |v: &str| -> Vec<String> {
                if v.is_empty() {
                    Vec::new()
                } else {
                    v.split(',').map(str::to_string).collect()
                }
            };
            match name.as_str() {
                "namespace" => out.namespace = Some(value),
                "values" => out.values.value_files.extend(split(&value)),
                "set" => out.values.values.push(value),
                "set-string" => out.values.string_values.push(value),
                "set-json" => out.values.json_values.push(value),
                "set-file" => out.values.file_values.push(value),
                "set-literal" => out.values.literal_values.push(value),
                "kube-version" => out.kube_version = Some(value),
                "api-versions" => out.api_versions.extend(split(&value)),
                "show-only" => out.output.show_only.push(value),
                "output-dir" => out.output.output_dir = Some(value),
                "name-template" => out.name_template = Some(value),
                _ => {}
            }
        }
        Ok(out)
    }
}

/// Runs `helm template` with `args`; relative paths (chart, values files, `--set-file`) are
/// read from `base`. Returns what Helm prints on stdout.
pub fn run_template(args: &[String], base: &Path) -> Result<String, Error> {
    let parsed = TemplateArgs::parse(args)?;
    crate::util::deep(|| run_parsed(parsed, base))
}

fn run_parsed(mut a: TemplateArgs, base: &Path) -> Result<String, Error> {
    let caps_version = match &a.kube_version {
        Some(v) => Some(
            KubeVersion::parse(v)
                .map_err(|e| Error::Install(format!("invalid kube version '{v}': {e}")))?,
        ),
        None => None,
    };
    let (name, chart_ref) = match a.positional.len() {
        0 => {
            return Err(Error::Install(
                "\"helm template\" requires at least 1 argument\n\nUsage:  helm template [NAME] [CHART] [flags]"
                    .into(),
            ));
        }
        // `helm template` presets the release name "release-name"; Helm's `NameAndChart` lets a
        // name template win over it (and over `--generate-name`).
        1 => match a.name_template.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => (name_from_template(t)?, a.positional[0].clone()),
            None => ("release-name".to_string(), a.positional[0].clone()),
        },
        2 => {
            if a.generate_name {
                return Err(Error::Install(
                    "cannot set --generate-name and also specify a name".into(),
                ));
            }
            if a.name_template.as_deref().is_some_and(|t| !t.is_empty()) {
                return Err(Error::Install(
                    "cannot set --name-template and also specify a name".into(),
                ));
            }
            (a.positional[0].clone(), a.positional[1].clone())
        }
        _ => {
            return Err(Error::Install(format!(
                "expected at most two arguments, unexpected arguments: {}",
                a.positional[2..].join(", ")
            )));
        }
    };
    let chart_ref = chart_ref.trim().to_string();
    let chart_path = resolve(base, &chart_ref);
    if !chart_path.exists() {
        if Path::new(&chart_ref).is_absolute() || chart_ref.starts_with('.') {
            return Err(Error::Install(format!("path {chart_ref:?} not found")));
        }
        return Err(Error::Install(format!(
            "non-absolute URLs should be in form of repo_name/path_to_chart, got: {chart_ref}"
        )));
    }
    a.values.base_dir = Some(base.to_path_buf());
    let vals = a.values.merge().map_err(Error::Values)?;
    let chart = crate::loader::load(&chart_path)?;
    let mut capabilities = Capabilities::default();
    if let Some(k) = caps_version {
        capabilities.kube_version = k;
    }
    capabilities
        .api_versions
        .extend(a.api_versions.iter().cloned());
    let opts = RenderOptions {
        release: ReleaseOptions {
            name: name.clone(),
            namespace: a.namespace.clone().unwrap_or_else(|| "default".into()),
            revision: 1,
            is_upgrade: a.is_upgrade,
        },
        capabilities,
        lookup: None,
        skip_schema_validation: a.skip_schema_validation,
    };
    let rendered = Engine::new().render(&chart, &vals, &opts)?;
    let mut out_opts = a.output.clone();
    out_opts.release_name = name;
    if let Some(dir) = &out_opts.output_dir {
        out_opts.output_dir = Some(dir.clone());
    }
    template_output(&rendered, &out_opts)
}

/// Helm's `action.TemplateName`: the name template parsed as `name-template` with Sprig's
/// functions and executed with nil data; Go's own error text when it fails. (Helm's map there
/// is Sprig's whole `TxtFuncMap`, so it also has `env` and `expandenv`, which ours lacks.)
fn name_from_template(text: &str) -> Result<String, Error> {
    use ferroflux_gotemplate::{Template, Value};
    let mut t = Template::named("name-template").with_funcs(crate::sprig_funcs());
    t.parse("name-template", text)
        .map_err(|e| Error::Install(e.to_string()))?;
    t.execute("name-template", &Value::Nil)
        .map_err(|e| Error::Install(e.to_string()))
}

fn resolve(base: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The message `helm template` prints after `Error: ` for `e` (render failures get Helm's
/// `--debug` hint, as the CLI adds it when a release was created).
pub fn error_message(e: &Error) -> String {
    match e {
        Error::Render(m) => format!("{m}\n\nUse --debug flag to render out invalid YAML"),
        other => other.to_string(),
    }
}
