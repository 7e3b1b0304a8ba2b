//! What `helm template` prints (Helm's `pkg/cmd/template.go` over `renderResources`): CRDs from
//! `crds/` first with `--include-crds`, the manifests in install order, then the hooks (unless
//! `--no-hooks`; test hooks dropped by `--skip-tests`), each as `---\n# Source: PATH\n…`;
//! `--show-only` filters the documents by template path (Go's `filepath.Match`); `--output-dir`
//! writes the files instead and prints one `wrote PATH` line each.

use std::path::Path;

use crate::error::Error;
use crate::manifest::{HookEvent, split_manifests};
use crate::release::Rendered;

/// The output flags of `helm template`.
#[derive(Debug, Clone, Default)]
pub struct TemplateOptions {
    /// `--include-crds`
    pub include_crds: bool,
    /// `--skip-tests`
    pub skip_tests: bool,
    /// `--no-hooks`
    pub no_hooks: bool,
    /// `-s/--show-only`: template paths (or globs) to print alone.
    pub show_only: Vec<String>,
    /// `--output-dir`.
    pub output_dir: Option<String>,
    /// `--release-name`: write under `OUTPUT_DIR/RELEASE`.
    pub use_release_name: bool,
    /// The release name (for `--release-name`).
    pub release_name: String,
}

/// The text `helm template` prints on stdout for `rendered`, writing files when
/// `--output-dir` is given.
pub fn template_output(rendered: &Rendered, opts: &TemplateOptions) -> Result<String, Error> {
    let mut stdout = String::new();
    let mut manifest = String::new();
    let mut writer = opts.output_dir.as_ref().map(|d| Writer {
        dir: if opts.use_release_name {
            format!("{d}/{}", opts.release_name)
        } else {
            d.clone()
        },
        written: Vec::new(),
    });
    if opts.include_crds {
        for crd in &rendered.crds {
            match &mut writer {
                // Helm writes CRDs under the output dir itself, even with --release-name.
                Some(w) => {
                    let base = opts.output_dir.clone().unwrap_or_default();
                    let append = w.written.contains(&crd.filename);
                    write_file(&base, &crd.filename, &crd.content, append, &mut stdout)?;
                    w.written.push(crd.filename.clone());
                }
                None => manifest.push_str(&format!(
                    "---\n# Source: {}\n{}\n",
                    crd.filename, crd.content
                )),
            }
        }
    }
    for m in &rendered.manifests {
        match &mut writer {
            Some(w) => {
                let append = w.written.contains(&m.path);
                write_file(&w.dir, &m.path, &m.content, append, &mut stdout)?;
                w.written.push(m.path.clone());
            }
            None => manifest.push_str(&format!("---\n# Source: {}\n{}\n", m.path, m.content)),
        }
    }
    let mut manifests = format!("{}\n", manifest.trim());
    if !opts.no_hooks {
        for h in &rendered.hooks {
            if opts.skip_tests && h.events.contains(&HookEvent::Test) {
                continue;
            }
            match &writer {
                None => manifests.push_str(&format!("---\n# Source: {}\n{}\n", h.path, h.manifest)),
                Some(w) => {
                    // template.go appends when the file exists already (a manifest went there).
                    let exists = Path::new(&format!("{}/{}", w.dir, h.path)).exists();
                    write_file(&w.dir, &h.path, &h.manifest, exists, &mut stdout)?;
                }
            }
        }
    }
    if !opts.show_only.is_empty() {
        let docs = split_manifests(&manifests);
        let source =
            regex::Regex::new("# Source: [^/]+/(.+)").map_err(|e| Error::Render(e.to_string()))?;
        let mut selected = Vec::new();
        for f in &opts.show_only {
            let f = f.replace('\\', "/");
            let mut missing = true;
            for doc in &docs {
                let Some(c) = source.captures(doc) else {
                    continue;
                };
                let path = c.get(1).map_or("", |m| m.as_str());
                if !crate::glob::path_match(&f, path).unwrap_or(false) {
                    continue;
                }
                selected.push(doc.clone());
                missing = false;
            }
            if missing {
                return Err(Error::Install(format!(
                    "could not find template {f} in chart"
                )));
            }
        }
        for d in selected {
            stdout.push_str(&format!("---\n{d}\n"));
        }
        return Ok(stdout);
    }
    stdout.push_str(&manifests);
    // The rendered documents are plain UTF-8; what this returns is in gotemplate's `gostr` form
    // (see `output_bytes`), which differs only for characters U+10FE80..=U+10FEFF.
    Ok(ferroflux_gotemplate::gostr::from_text(stdout))
}

struct Writer {
    dir: String,
    written: Vec<String>,
}

/// Helm's `writeToFile`: `DIR/NAME`, created or appended, with the `---` and `# Source:` lines,
/// and `wrote DIR/NAME` on stdout.
fn write_file(
    dir: &str,
    name: &str,
    data: &str,
    append: bool,
    stdout: &mut String,
) -> Result<(), Error> {
    use std::io::Write;
    let path = format!("{dir}/{name}");
    let io = |e: std::io::Error| Error::Io {
        context: format!("open {path}"),
        source: e,
    };
    if let Some(parent) = Path::new(&path).parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut f = if append {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io)?
    } else {
        std::fs::File::create(&path).map_err(io)?
    };
    write!(f, "---\n# Source: {name}\n{data}\n").map_err(io)?;
    stdout.push_str(&format!("wrote {path}\n"));
    Ok(())
}
