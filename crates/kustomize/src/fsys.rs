//! Confined file access: every path is resolved inside the repository root, symlinks included,
//! and files are size-limited before they are read.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::{BuildError, Result};

/// Where the files a kustomization names (resource files, patches, generator inputs) may live,
/// as kustomize's `--load-restrictor` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LoadRestrictions {
    /// Only under the kustomization's own directory (`LoadRestrictionsRootOnly`, kustomize's
    /// default).
    #[default]
    RootOnly,
    /// Anywhere inside the repository root (`LoadRestrictionsNone`, what Flux builds with). The
    /// repository root still bounds every read, symlinks included.
    None,
}

/// Limits applied while reading a repository.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest single file read, in bytes.
    pub max_file_bytes: u64,
    /// Most bytes read over the whole build.
    pub max_total_bytes: u64,
    /// Deepest chain of nested kustomizations.
    pub max_kustomization_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 8 * 1024 * 1024,
            max_total_bytes: 512 * 1024 * 1024,
            max_kustomization_depth: 64,
        }
    }
}

pub(crate) struct Fs {
    root: PathBuf,
    limits: Limits,
    restrictions: LoadRestrictions,
    read_total: std::cell::Cell<u64>,
}

impl Fs {
    pub fn new(root: &Path, limits: Limits) -> Result<Fs> {
        let root = root.canonicalize().map_err(|e| BuildError::Io {
            path: root.to_path_buf(),
            message: format!("repository root: {e}"),
        })?;
        Ok(Fs {
            root,
            limits,
            restrictions: LoadRestrictions::default(),
            read_total: std::cell::Cell::new(0),
        })
    }

    pub fn set_restrictions(&mut self, restrictions: LoadRestrictions) {
        self.restrictions = restrictions;
    }

    /// Confines a file a kustomization at `dir` names: to `dir` under the root-only rule, to
    /// the repository otherwise.
    pub fn confine_loaded(&self, p: &Path, dir: &Path, what: &str) -> Result<PathBuf> {
        match self.restrictions {
            LoadRestrictions::RootOnly => self.confine(p, dir, what),
            LoadRestrictions::None => self.confine(p, &self.root, what),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The path shown to users: relative to the repository root.
    pub fn display(&self, p: &Path) -> PathBuf {
        p.strip_prefix(&self.root)
            .map(|r| {
                if r.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    r.to_path_buf()
                }
            })
            .unwrap_or_else(|_| p.to_path_buf())
    }

    /// Joins `rel` onto `base` lexically (no filesystem access), refusing absolute paths.
    pub fn join(&self, base: &Path, rel: &str) -> Result<PathBuf> {
        let relp = Path::new(rel);
        if relp.is_absolute() {
            return Err(BuildError::Refused {
                path: self.display(base),
                message: format!("absolute path {rel:?} is not allowed"),
            });
        }
        let mut out = base.to_path_buf();
        for c in relp.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                _ => {
                    return Err(BuildError::Refused {
                        path: self.display(base),
                        message: format!("path {rel:?} is not allowed"),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Resolves symlinks and checks the result stays inside `within` (itself inside the
    /// repository root).
    pub fn confine(&self, p: &Path, within: &Path, what: &str) -> Result<PathBuf> {
        if !p.starts_with(&self.root) {
            return Err(self.outside(p, &self.root, what));
        }
        let lexical_inside = p.starts_with(within);
        let real = match p.canonicalize() {
            Ok(r) => r,
            Err(e) => {
                if !lexical_inside {
                    return Err(self.outside(p, within, what));
                }
                return Err(BuildError::Io {
                    path: self.display(p),
                    message: format!("{what}: {}", describe_io(&e)),
                });
            }
        };
        if !real.starts_with(&self.root) {
            return Err(BuildError::Refused {
                path: self.display(p),
                message: format!("{what} resolves (through a symlink) outside the repository"),
            });
        }
        if !real.starts_with(within) {
            return Err(self.outside(p, within, what));
        }
        Ok(real)
    }

    fn outside(&self, p: &Path, within: &Path, what: &str) -> BuildError {
        if within == self.root {
            return BuildError::Refused {
                path: self.display(p),
                message: format!("{what} is outside the repository root"),
            };
        }
        BuildError::Refused {
            path: self.display(p),
            message: format!(
                "{what} is outside the kustomization root {} (files may only be loaded from the kustomization's own directory tree)",
                self.display(within).display()
            ),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads a file already confined by [`Fs::confine`].
    pub fn read(&self, real: &Path) -> Result<Vec<u8>> {
        let f = std::fs::File::open(real).map_err(|e| BuildError::Io {
            path: self.display(real),
            message: describe_io(&e),
        })?;
        let meta = f.metadata().map_err(|e| BuildError::Io {
            path: self.display(real),
            message: describe_io(&e),
        })?;
        if meta.is_dir() {
            return Err(BuildError::Io {
                path: self.display(real),
                message: "is a directory, expected a file".into(),
            });
        }
        let max = self.limits.max_file_bytes;
        if meta.len() > max {
            return Err(BuildError::Refused {
                path: self.display(real),
                message: format!(
                    "file is {} bytes, larger than the limit of {} bytes",
                    meta.len(),
                    max
                ),
            });
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        f.take(max + 1)
            .read_to_end(&mut buf)
            .map_err(|e| BuildError::Io {
                path: self.display(real),
                message: describe_io(&e),
            })?;
        if buf.len() as u64 > max {
            return Err(BuildError::Refused {
                path: self.display(real),
                message: format!("file is larger than the limit of {max} bytes"),
            });
        }
        let total = self.read_total.get() + buf.len() as u64;
        if total > self.limits.max_total_bytes {
            return Err(BuildError::Refused {
                path: self.display(real),
                message: format!(
                    "build reads more than {} bytes in total",
                    self.limits.max_total_bytes
                ),
            });
        }
        self.read_total.set(total);
        Ok(buf)
    }

    pub fn read_text(&self, real: &Path) -> Result<String> {
        let bytes = self.read(real)?;
        String::from_utf8(bytes).map_err(|_| BuildError::Invalid {
            path: self.display(real),
            message: "file is not valid UTF-8".into(),
        })
    }
}

pub(crate) fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
